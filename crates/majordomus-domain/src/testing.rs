//! What the domain's tests share: random-ish but repeatable inputs for the tests that compare
//! a fast rule with its simple definition, and the fixtures several modules' tests build.

/// A claim as a listed peer carries it, announced at a fixed time and resolved by its text.
pub(crate) fn claim(
    name: Option<&str>,
    intent: &str,
    scope: &[&str],
) -> crate::peers::Announcement {
    crate::peers::Announcement {
        name: name.map(str::to_owned),
        intent: intent.into(),
        scope: scope.iter().map(|s| (*s).to_owned()).collect(),
        at: "2026-11-30T02:26:47Z".parse().unwrap(),
        resolved: Vec::new(),
        compared: Default::default(),
    }
}

/// A linear congruential generator: the same seed, the same sequence.
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }

    /// A scope path from a small alphabet, so that paths often meet, repeat or almost meet
    /// (`a` and `ab`): sometimes the whole repository, sometimes a glob, sometimes spelled
    /// loosely.
    pub(crate) fn path(&mut self) -> String {
        const PARTS: [&str; 5] = ["a", "b", "ab", "c", "a.rs"];
        let depth = self.below(5);
        let mut path: Vec<&str> = (0..depth).map(|_| PARTS[self.below(PARTS.len())]).collect();
        match self.below(8) {
            0 => path.push("*.rs"),
            1 => path.insert(0, "."),
            _ => {}
        }
        if path.is_empty() {
            ".".to_owned()
        } else {
            path.join("/")
        }
    }

    pub(crate) fn scope(&mut self, max: usize) -> Vec<String> {
        (0..self.below(max + 1)).map(|_| self.path()).collect()
    }
}
