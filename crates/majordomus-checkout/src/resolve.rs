//! Claimed paths as the file system has them.
//!
//! A claim's text is not always what it names: `alias/a.rs` is `src/a.rs` when `alias` is a
//! symbolic link to `src`, and `app/[slug]/page.tsx` is one file (a Next.js route), not a
//! glob, when it exists. Each scope path is resolved once, when it is claimed: the longest
//! part of it that exists is canonicalised and made relative to the checkout root again,
//! and the rest is kept as written (cut at its first glob component, since only there is a
//! wildcard still a wildcard). A path that leads out of the checkout through a link is
//! refused.

use std::fs;
use std::path::{Path, PathBuf};

use majordomus_domain::paths::{self, ClaimPath, PathError, SplitPath, is_glob};

/// Why a scope path cannot be claimed as the file system has it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The path as written is malformed or over a bound.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A symbolic link on the way leads outside the checkout.
    #[error(
        "the scope path `{written}` leads through a symbolic link to `{target}`, outside this \
         checkout (`{root}`): claim paths inside the repository"
    )]
    Escapes {
        /// The path as written.
        written: String,
        /// Where the existing part of it leads.
        target: String,
        /// The checkout root.
        root: String,
    },
    /// What the path leads to on disk is over a bound or holds a refused character.
    #[error("the scope path `{written}` leads on disk to a path that cannot be claimed: {problem}")]
    Target {
        /// The path as written.
        written: String,
        /// What is wrong with where it leads.
        problem: PathError,
    },
}

/// Resolves every path of a scope claimed in the checkout at `root` (canonical, absolute, as
/// every [`crate::Checkout`]'s root is): one [`ClaimPath`] per path, in order, or the first
/// path's refusal.
///
/// It reads the file system (an `lstat` per component, more where a link is on the way), so
/// async callers run a wide scope on a blocking thread. Each place is looked at once for the
/// whole scope ([`look_along`]): the paths of a scope mostly share their first components
/// (`crates/a/src`, `crates/b/src`), and a missing `crates` is then one `lstat`, not one per
/// path.
///
/// Most claimed paths have no link on the way, and then the path itself is canonical as far
/// as it exists, and keeps the components it was written with. Only where a component is a
/// link is the path canonicalised ([`resolve_through_links`]), since only the system's
/// resolution says where a link leads.
pub fn resolve_scope(root: &Path, scope: &[String]) -> Result<Vec<ClaimPath>, ResolveError> {
    let root_text = root.display().to_string();
    let splits: Vec<Result<SplitPath, PathError>> = scope
        .iter()
        .map(|raw| paths::split(raw, &root_text))
        .collect();
    let along = look_along(root, &splits, look_at);
    splits
        .into_iter()
        .zip(along)
        .map(|(split, along)| {
            let split = split?;
            match along {
                Along::Existing(existing) => Ok(split.existing(existing)),
                Along::Link => resolve_through_links(root, &split),
            }
        })
        .collect()
}

/// What an `lstat` found at one place below the root.
#[derive(Clone, Copy)]
enum Found {
    Missing,
    Link,
    Other,
}

/// What the file system has along one scope path, from the root down.
#[derive(Clone, Copy)]
enum Along {
    /// No link on the way, and this many of its first components exist.
    Existing(usize),
    /// A link on the way.
    Link,
}

/// What lies along each well-formed path of a scope (the rest are answered
/// `Existing(0)` and refused by the caller): each component looked at with `look` (an
/// `lstat`), from the root down, until one is missing or a link.
///
/// The paths are walked in the order of their components, keeping only the places the path
/// walked just before passed through. Every path sorted between two that share a place shares
/// it too, so each place is still looked at once for the whole scope, with no map of the
/// places seen.
fn look_along(
    root: &Path,
    splits: &[Result<SplitPath, PathError>],
    mut look: impl FnMut(&Path) -> Found,
) -> Vec<Along> {
    let mut order: Vec<(usize, &[String])> = splits
        .iter()
        .enumerate()
        .filter_map(|(at, split)| Some((at, split.as_ref().ok()?.components())))
        .collect();
    order.sort_unstable_by(|a, b| a.1.cmp(b.1));
    let mut along = vec![Along::Existing(0); splits.len()];
    // The places the previous path passed through, and `place`, the last of them on disk.
    let mut walked: Vec<(&str, Found)> = Vec::new();
    let mut place = root.to_path_buf();
    for (at, components) in order {
        let shared = walked
            .iter()
            .zip(components)
            .take_while(|((walked, _), component)| *walked == component.as_str())
            .count();
        for _ in shared..walked.len() {
            place.pop();
        }
        walked.truncate(shared);
        along[at] = Along::Existing(components.len());
        for (depth, component) in components.iter().enumerate() {
            let found = match walked.get(depth) {
                Some(&(_, found)) => found,
                None => {
                    place.push(component);
                    let found = look(&place);
                    walked.push((component, found));
                    found
                }
            };
            match found {
                Found::Other => {}
                Found::Missing => {
                    along[at] = Along::Existing(depth);
                    break;
                }
                Found::Link => {
                    along[at] = Along::Link;
                    break;
                }
            }
        }
    }
    along
}

fn look_at(place: &Path) -> Found {
    match fs::symlink_metadata(place) {
        Ok(metadata) if metadata.file_type().is_symlink() => Found::Link,
        Ok(_) => Found::Other,
        Err(_) => Found::Missing,
    }
}

/// A path with a link on the way: the existing part of the path canonicalised, made
/// relative to the checkout root again, and refused when it leads out of it.
fn resolve_through_links(root: &Path, split: &SplitPath) -> Result<ClaimPath, ResolveError> {
    let components = split.components();
    let (existing, canonical) = longest_existing_through_links(root, components);
    let Ok(inside) = canonical.strip_prefix(root) else {
        return Err(ResolveError::Escapes {
            written: split.as_written().to_owned(),
            target: canonical.display().to_string(),
            root: root.display().to_string(),
        });
    };
    let mut resolved: Vec<String> = inside
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let rest = &components[existing..];
    resolved.extend(rest.iter().take_while(|c| !is_glob(c)).cloned());
    ClaimPath::resolved(split, resolved).map_err(|problem| ResolveError::Target {
        written: split.as_written().to_owned(),
        problem,
    })
}

/// How many leading components of `components` exist below `root` where a link is on the
/// way, and the canonical path they lead to. Existence is monotone (a path exists
/// only if its parent does), so the whole path is tried first, as it mostly exists or is one
/// new file, and then the length is found by halving: a handful of `canonicalize` calls
/// however deep the path.
fn longest_existing_through_links(root: &Path, components: &[String]) -> (usize, PathBuf) {
    let canonical = |length: usize| {
        let path: PathBuf = components[..length].iter().collect();
        fs::canonicalize(root.join(path)).ok()
    };
    if let Some(found) = canonical(components.len()) {
        return (components.len(), found);
    }
    // `low` exists (the root always does), `high` does not.
    let (mut low, mut high) = (0, components.len());
    let mut found = root.to_path_buf();
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        match canonical(middle) {
            Some(path) => {
                low = middle;
                found = path;
            }
            None => high = middle,
        }
    }
    (low, found)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn checkout() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("repo");
        fs::create_dir_all(root.join("src/parser")).unwrap();
        fs::write(root.join("src/a.rs"), "").unwrap();
        fs::create_dir_all(root.join("app/[slug]")).unwrap();
        fs::write(root.join("app/[slug]/page.tsx"), "").unwrap();
        symlink("src", root.join("alias")).unwrap();
        symlink("../outside", root.join("out")).unwrap();
        fs::create_dir_all(dir.path().join("outside")).unwrap();
        (dir, root)
    }

    fn components(root: &Path, raw: &str) -> Vec<String> {
        resolve_scope(root, &[raw.to_owned()])
            .unwrap_or_else(|e| panic!("{raw}: {e}"))
            .remove(0)
            .components()
            .to_vec()
    }

    #[test]
    fn a_path_through_a_link_inside_the_checkout_is_its_target() {
        let (_dir, root) = checkout();
        assert_eq!(components(&root, "alias/a.rs"), ["src", "a.rs"]);
        // a file not written yet, below a link
        assert_eq!(components(&root, "alias/new/b.rs"), ["src", "new", "b.rs"]);
        assert_eq!(components(&root, "alias"), ["src"]);
        let absolute = format!("{}/alias/parser", root.display());
        assert_eq!(components(&root, &absolute), ["src", "parser"]);
        let resolved = resolve_scope(&root, &["alias/a.rs".to_owned()]).unwrap();
        assert_eq!(resolved[0].as_written(), "alias/a.rs");
        assert!(resolved[0].resolved_differently());
    }

    #[test]
    fn a_glob_looking_name_that_exists_is_literal_and_one_that_does_not_is_a_glob() {
        let (_dir, root) = checkout();
        assert_eq!(
            components(&root, "app/[slug]/page.tsx"),
            ["app", "[slug]", "page.tsx"]
        );
        assert_eq!(components(&root, "app/[other]/page.tsx"), ["app"]);
        assert_eq!(components(&root, "src/**/*.rs"), ["src"]);
        assert_eq!(components(&root, "alias/**/*.rs"), ["src"]);
        assert_eq!(components(&root, "."), Vec::<String>::new());
        // a new file: the text, as it is
        let plain = resolve_scope(&root, &["src/parser/new.rs".to_owned()]).unwrap();
        assert_eq!(plain[0].components(), ["src", "parser", "new.rs"]);
        assert!(!plain[0].resolved_differently());
    }

    #[test]
    fn a_link_out_of_the_checkout_is_refused_naming_the_path() {
        let (_dir, root) = checkout();
        for raw in ["out", "out/x.rs", "./out/deeper/still"] {
            let error = resolve_scope(&root, &["src".to_owned(), raw.to_owned()]).unwrap_err();
            assert!(
                matches!(error, ResolveError::Escapes { .. }),
                "{raw}: {error:?}"
            );
            let message = error.to_string();
            assert!(message.contains(&format!("`{raw}`")), "{message}");
            assert!(message.contains("outside this checkout"), "{message}");
        }
        // what the text alone refuses is refused as before
        let error = resolve_scope(&root, &["../x".to_owned()]).unwrap_err();
        assert!(matches!(
            error,
            ResolveError::Path(PathError::ParentComponent { .. })
        ));
    }

    #[test]
    fn a_scope_resolves_each_path_as_it_would_alone_though_its_places_are_looked_at_once() {
        let (_dir, root) = checkout();
        let scope: Vec<String> = [
            "crates/one/src",
            "crates/two/src",
            "alias/a.rs",
            "alias/new/b.rs",
            "src/parser/new.rs",
            "src/a.rs/x",
            "app/[other]/page.tsx",
            "app/[slug]/page.tsx",
        ]
        .map(str::to_owned)
        .to_vec();
        let together: Vec<Vec<String>> = resolve_scope(&root, &scope)
            .unwrap()
            .iter()
            .map(|path| path.components().to_vec())
            .collect();
        let alone: Vec<Vec<String>> = scope.iter().map(|raw| components(&root, raw)).collect();
        assert_eq!(together, alone);
        assert_eq!(together[1], ["crates", "two", "src"]);
        assert_eq!(together[3], ["src", "new", "b.rs"]);
        let splits: Vec<_> = scope
            .iter()
            .map(|raw| paths::split(raw, &root.display().to_string()))
            .collect();
        let mut looked = Vec::new();
        look_along(&root, &splits, |place| {
            looked.push(place.strip_prefix(&root).unwrap().to_path_buf());
            look_at(place)
        });
        let mut once = looked.clone();
        once.sort();
        once.dedup();
        assert_eq!(looked.len(), once.len(), "each place once: {looked:?}");
        // `crates` missing, `alias` a link, `src`, `src/parser`, `src/parser/new.rs`,
        // `src/a.rs`, `src/a.rs/x`, `app`, `app/[other]`, `app/[slug]`, `app/[slug]/page.tsx`
        assert_eq!(looked.len(), 11, "{looked:?}");
    }

    #[test]
    fn the_first_refusal_in_the_scope_is_the_one_answered() {
        let (_dir, root) = checkout();
        let scope = ["src", "out/x.rs", "../x"].map(str::to_owned);
        let error = resolve_scope(&root, &scope).unwrap_err();
        assert!(matches!(error, ResolveError::Escapes { .. }), "{error:?}");
        let scope = ["src", "../x", "out/x.rs"].map(str::to_owned);
        let error = resolve_scope(&root, &scope).unwrap_err();
        assert!(matches!(error, ResolveError::Path(_)), "{error:?}");
    }

    #[test]
    fn a_link_loop_or_a_file_in_the_way_reads_as_the_text() {
        let (_dir, root) = checkout();
        symlink("loop", root.join("loop")).unwrap();
        assert_eq!(components(&root, "loop/x"), ["loop", "x"]);
        assert_eq!(components(&root, "src/a.rs/x"), ["src", "a.rs", "x"]);
    }
}
