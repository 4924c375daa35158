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
//! let mut met = Vec::new();
//! index.for_each_meeting(&["apps", "cli"], |value| met.push(*value));
//! met.sort();
//! assert_eq!(met, ["apps", "cli sources", "whole repository"]);
//! ```

use std::collections::BTreeMap;
use std::fmt;

/// Values keyed by path components. A query returns every value whose key meets the queried
/// path: the keys on the way down to it (its ancestors and itself) and every key below it.
///
/// Every walk is a loop, never a recursion, and so is dropping the trie: a key as deep as
/// memory allows costs no stack.
pub struct PathIndex<T> {
    root: Node<T>,
    len: usize,
}

/// A node of the trie. Every node but the root has a value in its subtree: removal prunes
/// the branches it leaves empty.
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
}

impl<T> Drop for Node<T> {
    /// Takes the subtree apart node by node: the derived drop would recurse once per level.
    fn drop(&mut self) {
        let mut pending: Vec<Node<T>> = std::mem::take(&mut self.children).into_values().collect();
        while let Some(mut node) = pending.pop() {
            pending.extend(std::mem::take(&mut node.children).into_values());
        }
    }
}

impl<T> fmt::Debug for PathIndex<T> {
    /// The size only: the trie itself may be deeper than any formatter should walk.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PathIndex").field("len", &self.len).finish()
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

    /// Files `value` under `key`; a key may hold any number of values. A component is
    /// copied only where the trie has no node for it yet: most keys a board files share
    /// their directories with keys already there.
    pub fn insert<S: AsRef<str>>(&mut self, key: &[S], value: T) {
        let mut node = &mut self.root;
        for component in key {
            let component = component.as_ref();
            if !node.children.contains_key(component) {
                node.children.insert(component.to_owned(), Node::new());
            }
            node = node
                .children
                .get_mut(component)
                .expect("the node is there or was just made");
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
        // A first walk, reading only: is the value there, and from which node down does the
        // branch hold nothing else (no value on the way, no other child)?
        let mut node = &self.root;
        let mut kept_depth = 0;
        for (depth, component) in key.iter().enumerate() {
            if depth == 0 || !node.values.is_empty() || node.children.len() > 1 {
                kept_depth = depth;
            }
            match node.children.get(component.as_ref()) {
                Some(child) => node = child,
                None => return false,
            }
        }
        let Some(at) = node.values.iter().position(|v| v == value) else {
            return false;
        };
        let empties = node.values.len() == 1 && node.children.is_empty();

        // A second walk changes the trie: either the value goes, or the whole branch that
        // held only it.
        let mut node = &mut self.root;
        if empties && !key.is_empty() {
            for component in &key[..kept_depth] {
                node = node
                    .children
                    .get_mut(component.as_ref())
                    .expect("the first walk went this way");
            }
            node.children.remove(key[kept_depth].as_ref());
        } else {
            for component in key {
                node = node
                    .children
                    .get_mut(component.as_ref())
                    .expect("the first walk went this way");
            }
            node.values.remove(at);
        }
        self.len -= 1;
        true
    }

    /// Calls `visit` with every value whose key meets `key`: filed at an ancestor of it, at
    /// it, or below it. Values on the way down come first, root first, then the subtree
    /// depth first in component order.
    pub fn for_each_meeting<'a, S: AsRef<str>>(&'a self, key: &[S], mut visit: impl FnMut(&'a T)) {
        let mut node = &self.root;
        for component in key {
            node.values.iter().for_each(&mut visit);
            match node.children.get(component.as_ref()) {
                Some(child) => node = child,
                None => return,
            }
        }
        let mut pending = vec![node];
        while let Some(node) = pending.pop() {
            node.values.iter().for_each(&mut visit);
            pending.extend(node.children.values().rev());
        }
    }

    /// Whether any value's key meets `key`, in one walk down it: no subtree is visited,
    /// because every branch of the trie holds a value.
    pub fn meets_any<S: AsRef<str>>(&self, key: &[S]) -> bool {
        let mut node = &self.root;
        for component in key {
            if !node.values.is_empty() {
                return true;
            }
            match node.children.get(component.as_ref()) {
                Some(child) => node = child,
                None => return false,
            }
        }
        !node.is_empty()
    }
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

    /// Every value meeting `key`, in the order they are visited.
    fn meeting<'a, T, S: AsRef<str>>(index: &'a PathIndex<T>, key: &[S]) -> Vec<&'a T> {
        let mut found = Vec::new();
        index.for_each_meeting(key, |value| found.push(value));
        found
    }

    fn met(index: &PathIndex<&'static str>, path: &str) -> Vec<&'static str> {
        let mut found: Vec<&str> = meeting(index, &key(path)).into_iter().copied().collect();
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
    #[test]
    fn meets_any_agrees_with_meeting() {
        let index = sample();
        for path in [
            "", "a", "a/b", "a/b/c/d", "a/bc/x", "ab", "abc", "d", "d/e", "d/e/f", "d/f", "x",
        ] {
            let mut without_root = PathIndex::new();
            for kept in ["a", "a/b", "a/b/c", "a/bc", "ab", "d/e"] {
                without_root.insert(&key(kept), kept);
            }
            assert_eq!(
                without_root.meets_any(&key(path)),
                !meeting(&without_root, &key(path)).is_empty(),
                "{path}"
            );
            assert!(index.meets_any(&key(path)), "the root value meets {path}");
        }
        assert!(!PathIndex::<u8>::new().meets_any::<&str>(&[]));
    }

    #[test]
    fn a_hundred_thousand_components_deep_key_costs_no_stack() {
        let deep: Vec<String> = (0..100_000).map(|n| format!("c{n}")).collect();
        let mut index = PathIndex::new();
        index.insert(&deep, 1u32);
        index.insert(&deep[..50_000], 2);
        index.insert(&deep[..1], 3);
        index.insert::<String>(&[], 4);
        let mut met: Vec<u32> = meeting(&index, &deep[..10]).into_iter().copied().collect();
        met.sort_unstable();
        assert_eq!(met, [1, 2, 3, 4]);
        assert_eq!(meeting(&index, &deep).len(), 4);
        assert!(index.meets_any(&deep));
        let mut seen = 0;
        index.for_each_meeting::<String>(&[], |_| seen += 1);
        assert_eq!(seen, 4);
        assert!(format!("{index:?}").contains("len: 4"));

        // removing the deepest value prunes 50,000 levels; the rest is dropped with the index
        assert!(index.remove(&deep, &1));
        assert_eq!(meeting(&index, &deep[..10]).len(), 3);
        assert!(!index.remove(&deep, &1));
        index.insert(&deep, 5);
        drop(index);
    }
}
