//! A trie of claimed paths, so that finding the claims a path meets costs its depth plus the
//! matches rather than a comparison with every claim on the board.
//!
//! ```
//! use majordomus_domain::index::PathIndex;
//!
//! let mut index = PathIndex::new();
//! index.insert(&["apps"], "apps");
//! index.insert(&["apps", "cli", "src"], "cli sources");
//! index.insert(&["apps", "web"], "web");
//! index.insert::<&str>(&[], "whole repository");
//!
//! let mut met = index.meeting(&["apps", "cli"]);
//! met.sort();
//! assert_eq!(met, [&"apps", &"cli sources", &"whole repository"]);
//! ```

use std::collections::BTreeMap;

/// Values keyed by path components. A query returns every value whose key meets the queried
/// path: the keys on the way down to it (its ancestors and itself) and every key below it.
#[derive(Debug, Clone)]
pub struct PathIndex<T> {
    root: Node<T>,
    len: usize,
}

#[derive(Debug, Clone)]
struct Node<T> {
    values: Vec<T>,
    children: BTreeMap<String, Node<T>>,
}

impl<T> Node<T> {
    fn new() -> Self {
        Node {
            values: Vec::new(),
            children: BTreeMap::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.values.is_empty() && self.children.is_empty()
    }

    fn collect_subtree<'a>(&'a self, out: &mut Vec<&'a T>) {
        out.extend(self.values.iter());
        for child in self.children.values() {
            child.collect_subtree(out);
        }
    }
}

impl<T> Default for PathIndex<T> {
    fn default() -> Self {
        PathIndex::new()
    }
}

impl<T> PathIndex<T> {
    /// An empty index.
    pub fn new() -> Self {
        PathIndex {
            root: Node::new(),
            len: 0,
        }
    }

    /// How many values the index holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the index holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Files `value` under `key`; a key may hold any number of values.
    pub fn insert<S: AsRef<str>>(&mut self, key: &[S], value: T) {
        let mut node = &mut self.root;
        for component in key {
            node = node
                .children
                .entry(component.as_ref().to_owned())
                .or_insert_with(Node::new);
        }
        node.values.push(value);
        self.len += 1;
    }

    /// Removes one value equal to `value` filed under exactly `key`, pruning the branches
    /// it leaves empty. Returns whether one was there.
    pub fn remove<S: AsRef<str>>(&mut self, key: &[S], value: &T) -> bool
    where
        T: PartialEq,
    {
        let removed = remove_from(&mut self.root, key, value);
        if removed {
            self.len -= 1;
        }
        removed
    }

    /// Every value whose key meets `key`: filed at an ancestor of it, at it, or below it.
    /// Values on the way down come first, root first, then the subtree in component order.
    pub fn meeting<S: AsRef<str>>(&self, key: &[S]) -> Vec<&T> {
        let mut out = Vec::new();
        let mut node = &self.root;
        for component in key {
            out.extend(node.values.iter());
            match node.children.get(component.as_ref()) {
                Some(child) => node = child,
                None => return out,
            }
        }
        node.collect_subtree(&mut out);
        out
    }
}

fn remove_from<T: PartialEq, S: AsRef<str>>(node: &mut Node<T>, key: &[S], value: &T) -> bool {
    let Some((first, rest)) = key.split_first() else {
        return match node.values.iter().position(|v| v == value) {
            Some(at) => {
                node.values.remove(at);
                true
            }
            None => false,
        };
    };
    let Some(child) = node.children.get_mut(first.as_ref()) else {
        return false;
    };
    let removed = remove_from(child, rest, value);
    if child.is_empty() {
        node.children.remove(first.as_ref());
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str) -> Vec<&str> {
        path.split('/').filter(|c| !c.is_empty()).collect()
    }

    fn sample() -> PathIndex<&'static str> {
        let mut index = PathIndex::new();
        for path in ["", "a", "a/b", "a/b/c", "a/bc", "ab", "d/e"] {
            index.insert(&key(path), path);
        }
        index
    }

    fn met(index: &PathIndex<&'static str>, path: &str) -> Vec<&'static str> {
        let mut found: Vec<&str> = index.meeting(&key(path)).into_iter().copied().collect();
        found.sort_unstable();
        found
    }

    #[test]
    fn a_query_finds_ancestors_itself_and_descendants() {
        let index = sample();
        assert_eq!(met(&index, "a/b"), ["", "a", "a/b", "a/b/c"]);
        assert_eq!(met(&index, "a"), ["", "a", "a/b", "a/b/c", "a/bc"]);
        assert_eq!(met(&index, "a/b/c/d"), ["", "a", "a/b", "a/b/c"]);
        assert_eq!(met(&index, "x/y"), [""]);
        assert_eq!(met(&index, "d"), ["", "d/e"]);
        assert_eq!(met(&index, "").len(), 7);
    }

    #[test]
    fn removal_takes_one_value_and_prunes_empty_branches() {
        let mut index = sample();
        index.insert(&key("a/b"), "a/b");
        assert_eq!(index.len(), 8);
        assert!(index.remove(&key("a/b"), &"a/b"));
        assert_eq!(met(&index, "a/b"), ["", "a", "a/b", "a/b/c"]);
        assert!(index.remove(&key("a/b"), &"a/b"));
        assert!(!index.remove(&key("a/b"), &"a/b"));
        assert!(!index.remove(&key("nowhere/at/all"), &"a/b"));
        assert!(index.remove(&key("d/e"), &"d/e"));
        assert!(
            !index.root.children.contains_key("d"),
            "empty branch pruned"
        );
        assert!(
            index.root.children.contains_key("a"),
            "a/b/c keeps its branch"
        );
        assert_eq!(index.len(), 5);
        for path in ["", "a", "a/b/c", "a/bc", "ab"] {
            assert!(index.remove(&key(path), &path));
        }
        assert!(index.is_empty());
        assert!(index.root.is_empty());
    }
}
