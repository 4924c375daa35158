//! What a shell command given to a client's shell tool does that the guard cares about, read
//! from its words as the shell splits them: the files it writes in the common shapes
//! (`sed -i`, `>`, `>>`, `tee`, `cp`/`mv` onto, `mv`/`rm` of), and the git verbs that discard
//! or rewrite uncommitted work (`reset --hard`, `checkout -- …`, `checkout .`, `checkout
//! <branch>`, `switch`, `restore`, `clean -f`, `stash`, `rebase`).
//!
//! Each simple command is also kept as its words, program first (assignments, `sudo`,
//! `command`, `exec` and redirections left out), for the commands a repository declares as
//! needing a lease (`[leases.commands]`) to be matched against.
//!
//! Nothing beyond those shapes is guessed: a script, a variable, a subshell or any other
//! program is not looked into, and `cargo test` or `git status` write nothing.

/// The longest command read; a longer one is not looked into (the hook fails open).
pub const COMMAND_BYTES: usize = 16 * 1024;

/// The most words of one command read; beyond it the command is not looked into.
pub const COMMAND_WORDS: usize = 1_024;

/// What one shell command does that the guard cares about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellEffects {
    /// The files it writes, removes or moves, as the command names them, each once.
    pub writes: Vec<String>,
    /// The first git command in it that discards or rewrites uncommitted work, as words.
    pub discards: Option<String>,
    /// Each simple command's program and arguments, in order.
    pub commands: Vec<Vec<String>>,
}

impl ShellEffects {
    /// Whether it neither writes a file nor discards work.
    pub fn changes_nothing(&self) -> bool {
        self.writes.is_empty() && self.discards.is_none()
    }
}

/// The words that end one simple command and start the next.
const SEPARATORS: [&str; 5] = ["&&", "||", ";", "|", "&"];

/// Reads `command`; `None` when it is over [`COMMAND_BYTES`] or [`COMMAND_WORDS`] or not
/// shell words at all (an unclosed quote).
pub fn effects(command: &str) -> Option<ShellEffects> {
    if command.len() > COMMAND_BYTES {
        return None;
    }
    let words = shlex::split(command)?;
    if words.len() > COMMAND_WORDS {
        return None;
    }
    let mut effects = ShellEffects::default();
    let mut simple: Vec<String> = Vec::new();
    for word in words {
        if let Some(stripped) = word.strip_suffix(';').filter(|_| word != ";") {
            simple.push(stripped.to_owned());
            read_simple(&simple, &mut effects);
            simple.clear();
        } else if SEPARATORS.contains(&word.as_str()) {
            read_simple(&simple, &mut effects);
            simple.clear();
        } else {
            simple.push(word);
        }
    }
    read_simple(&simple, &mut effects);
    let mut seen = std::collections::HashSet::new();
    effects.writes.retain(|path| seen.insert(path.clone()));
    Some(effects)
}

/// One simple command: its redirections, then its program and arguments.
fn read_simple(words: &[String], effects: &mut ShellEffects) {
    let mut arguments: Vec<&str> = Vec::new();
    let mut words = words.iter().map(String::as_str).peekable();
    while let Some(word) = words.next() {
        let redirected = word.trim_start_matches(['1', '2', '&']);
        if let Some(target) = redirected
            .strip_prefix(">>")
            .or_else(|| redirected.strip_prefix('>'))
            .filter(|_| redirected.starts_with('>'))
        {
            let target = target.trim_start_matches(['|', '>']);
            let target = if target.is_empty() {
                words.next().unwrap_or_default()
            } else {
                target
            };
            if !target.is_empty() && !target.starts_with('&') && target != "/dev/null" {
                effects.writes.push(target.to_owned());
            }
        } else {
            arguments.push(word);
        }
    }
    // Assignments before the program (`LANG=C sed -i …`) and `sudo`/`command` are not the
    // program.
    let start = arguments
        .iter()
        .position(|word| !word.contains('=') || word.starts_with('-'))
        .unwrap_or(arguments.len());
    let mut arguments = &arguments[start..];
    while let Some((first, rest)) = arguments.split_first() {
        if matches!(*first, "sudo" | "command" | "exec") {
            arguments = rest;
        } else {
            break;
        }
    }
    let Some((program, rest)) = arguments.split_first() else {
        return;
    };
    effects
        .commands
        .push(arguments.iter().map(|word| (*word).to_owned()).collect());
    let program = program.rsplit('/').next().unwrap_or(program);
    match program {
        "sed" => effects.writes.extend(sed_in_place(rest)),
        "tee" => effects.writes.extend(operands(rest).map(str::to_owned)),
        "rm" => effects.writes.extend(operands(rest).map(str::to_owned)),
        "cp" => effects
            .writes
            .extend(operands(rest).last().map(str::to_owned)),
        "mv" => effects.writes.extend(operands(rest).map(str::to_owned)),
        "git" if effects.discards.is_none() && git_discards(rest) => {
            effects.discards = Some(format!("git {}", rest.join(" ")));
        }
        _ => {}
    }
}

/// The arguments that are not options, all of them after a `--`.
fn operands<'a>(arguments: &'a [&'a str]) -> impl Iterator<Item = &'a str> + 'a {
    let mut options_done = false;
    arguments.iter().copied().filter(move |word| {
        if options_done {
            return true;
        }
        if *word == "--" {
            options_done = true;
            return false;
        }
        !word.starts_with('-') || *word == "-"
    })
}

/// The files `sed` edits in place: none without `-i`; with it, every operand after the
/// script (every operand when the script came with `-e` or `-f`).
fn sed_in_place(arguments: &[&str]) -> Vec<String> {
    let mut in_place = false;
    let mut script_given = false;
    let mut operands = Vec::new();
    let mut words = arguments.iter().copied();
    while let Some(word) = words.next() {
        if word == "-e" || word == "-f" || word == "--expression" || word == "--file" {
            script_given = true;
            words.next();
        } else if word.starts_with("--in-place") {
            in_place = true;
        } else if word.starts_with("--") {
        } else if let Some(flags) = word.strip_prefix('-').filter(|flags| !flags.is_empty()) {
            // `-i`, `-i.bak`, `-Ei`, `-ni`: the in-place flag, whose suffix ends the word.
            let before_suffix = flags.split('.').next().unwrap_or(flags);
            if before_suffix.contains('i') {
                in_place = true;
            }
            if flags.ends_with('e') || flags.ends_with('f') {
                script_given = true;
                words.next();
            }
        } else {
            operands.push(word.to_owned());
        }
    }
    if !in_place {
        return Vec::new();
    }
    if !script_given && !operands.is_empty() {
        operands.remove(0);
    }
    operands
}

/// Whether `git <arguments>` discards or rewrites uncommitted work or the branch under it.
fn git_discards(arguments: &[&str]) -> bool {
    // Global options before the verb (`-C dir`, `-c key=value`, `--no-pager`).
    let mut words = arguments.iter().copied();
    let verb = loop {
        match words.next() {
            Some("-C" | "-c" | "--git-dir" | "--work-tree") => {
                words.next();
            }
            Some(word) if word.starts_with('-') => {}
            Some(verb) => break verb,
            None => return false,
        }
    };
    let rest: Vec<&str> = words.collect();
    let has = |flag: &str| rest.contains(&flag);
    match verb {
        "reset" => has("--hard") || has("--merge") || has("--keep"),
        "checkout" => !(has("-b") || has("-B") || rest.is_empty()),
        "switch" => !(has("-c") || has("-C") || has("--create")),
        "restore" | "rebase" => true,
        "clean" => rest.iter().any(|word| {
            *word == "--force"
                || (word.starts_with('-') && !word.starts_with("--") && word.contains('f'))
        }),
        "stash" => !matches!(rest.first(), Some(&("list" | "show"))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(command: &str) -> Vec<Vec<String>> {
        effects(command).unwrap().commands
    }

    fn writes(command: &str) -> Vec<String> {
        effects(command).unwrap().writes
    }

    fn discards(command: &str) -> bool {
        effects(command).unwrap().discards.is_some()
    }

    #[test]
    fn the_common_shapes_of_a_write_name_their_files() {
        assert_eq!(writes("sed -i 's/a/b/' src/lib.rs"), ["src/lib.rs"]);
        assert_eq!(writes("sed -i.bak -e s/a/b/ a.rs b.rs"), ["a.rs", "b.rs"]);
        assert_eq!(
            writes("LANG=C sed -Ei 's/x/y/g' src/lib.rs"),
            ["src/lib.rs"]
        );
        assert_eq!(writes("echo hi > src/lib.rs"), ["src/lib.rs"]);
        assert_eq!(writes("echo hi >>src/lib.rs"), ["src/lib.rs"]);
        assert_eq!(writes("make 2> build.log"), ["build.log"]);
        assert_eq!(writes("cat a | tee -a x.txt y.txt"), ["x.txt", "y.txt"]);
        assert_eq!(writes("cp -r a b dest/"), ["dest/"]);
        assert_eq!(writes("mv old.rs new.rs"), ["old.rs", "new.rs"]);
        assert_eq!(
            writes("rm -rf -- target src/lib.rs"),
            ["target", "src/lib.rs"]
        );
        assert_eq!(writes("cd x && sed -i s/a/b/ y.rs; rm z"), ["y.rs", "z"]);
        assert_eq!(writes("sudo rm a; rm a"), ["a"]);
    }

    #[test]
    fn commands_that_write_nothing_name_nothing() {
        for command in [
            "cargo test",
            "git status",
            "git diff -- src/lib.rs",
            "sed 's/a/b/' src/lib.rs",
            "grep -rn x src > /dev/null",
            "cat src/lib.rs 2>&1",
            "ls -la",
            "git checkout -b feature",
            "git stash list",
            "git clean -n",
            "git reset --soft HEAD~1",
        ] {
            assert!(effects(command).unwrap().changes_nothing(), "{command}");
        }
    }

    #[test]
    fn git_verbs_that_discard_or_rewrite_work_are_named() {
        for command in [
            "git reset --hard",
            "git checkout -- .",
            "git checkout .",
            "git checkout main",
            "git -C ../other switch main",
            "git restore src/lib.rs",
            "git clean -fd",
            "git stash",
            "git rebase main",
            "cargo fmt && git stash push -m x",
        ] {
            assert!(discards(command), "{command}");
        }
    }

    #[test]
    fn each_simple_command_is_kept_program_first() {
        let words = |text: &str| shlex::split(text).unwrap();
        assert_eq!(
            commands("cargo test --workspace"),
            [words("cargo test --workspace")]
        );
        assert_eq!(
            commands("cd x && FOO=1 LANG=C cargo test 2>&1 | tee log; sudo npm test > out"),
            [
                words("cd x"),
                words("cargo test"),
                words("tee log"),
                words("npm test")
            ]
        );
        assert_eq!(commands("FOO=1"), Vec::<Vec<String>>::new());
        assert_eq!(commands("./run 'all tests'"), [words("./run 'all tests'")]);
    }

    #[test]
    fn what_is_beyond_the_bounds_is_not_read() {
        assert_eq!(effects(&"x".repeat(COMMAND_BYTES + 1)), None);
        assert_eq!(effects(&"a ".repeat(COMMAND_WORDS + 1)), None);
        assert_eq!(effects("echo 'unclosed"), None);
    }
}
