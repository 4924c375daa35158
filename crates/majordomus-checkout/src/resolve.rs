//! Claimed paths as the file system has them.
//!
//! A claim's text is not always what it names: `alias/a.rs` is `src/a.rs` when `alias` is a
//! symbolic link to `src`, and `app/[slug]/page.tsx` is one file (a Next.js route), not a
//! glob, when it exists. Each scope path is resolved once, when it is claimed: the longest
//! part of it that exists is canonicalised and made relative to the checkout root again,
//! and the rest is kept as written (cut at its first glob component, since only there is a
//! wildcard still a wildcard). A path that leads out of the checkout through a link is
//! refused.

use std::collections::HashMap;
use std::ffi::OsString;
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
/// whole scope: the paths of a scope mostly share their first components (`crates/a/src`,
/// `crates/b/src`), and a missing `crates` is then one `lstat`, not one per path.
pub fn resolve_scope(root: &Path, scope: &[String]) -> Result<Vec<ClaimPath>, ResolveError> {
    let root_text = root.display().to_string();
    let mut looked = Looked::default();
    scope
        .iter()
        .map(|raw| {
            let split = paths::split(raw, &root_text)?;
            resolve(root, split, &mut looked)
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

/// The places a scope's resolution has looked at, and what it found: at most every component
/// of the scope's paths, which the scope's own bounds cap. Kept by the path's text rather
/// than as a [`Path`], whose hash walks its components one by one: every place here is
/// written the same way (the root, then checked components), so equal text is the same place.
#[derive(Default)]
struct Looked(HashMap<OsString, Found>);

impl Looked {
    fn at(&mut self, path: &Path) -> Found {
        if let Some(&found) = self.0.get(path.as_os_str()) {
            return found;
        }
        let found = match fs::symlink_metadata(path) {
            Ok(metadata) if metadata.file_type().is_symlink() => Found::Link,
            Ok(_) => Found::Other,
            Err(_) => Found::Missing,
        };
        self.0.insert(path.as_os_str().to_owned(), found);
        found
    }
}

/// Where `split` (a path checked and split against `root`) leads on disk, as a
/// [`ClaimPath`] compared on its place in the checkout.
///
/// Most claimed paths have no link on the way, and then the path itself is canonical as far
/// as it exists: each component is looked at once (`lstat`), from the root down, until one
/// is missing, and the path keeps the components it was written with. Only where a
/// component is a link is the path canonicalised ([`resolve_through_links`]), since only
/// the system's resolution says where a link leads.
fn resolve(root: &Path, split: SplitPath, looked: &mut Looked) -> Result<ClaimPath, ResolveError> {
    let mut path = root.to_path_buf();
    for (existing, component) in split.components().iter().enumerate() {
        path.push(component);
        match looked.at(&path) {
            Found::Link => return resolve_through_links(root, &split),
            Found::Other => {}
            Found::Missing => return Ok(split.existing(existing)),
        }
    }
    let existing = split.components().len();
    Ok(split.existing(existing))
}

/// [`resolve`] where a link is on the way: the existing part of the path canonicalised, made
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
        let mut looked = Looked::default();
        for raw in &scope[..2] {
            resolve(
                &root,
                paths::split(raw, &root.display().to_string()).unwrap(),
                &mut looked,
            )
            .unwrap();
        }
        assert_eq!(looked.0.len(), 1, "the missing `crates`, looked at once");
    }

    #[test]
    fn a_link_loop_or_a_file_in_the_way_reads_as_the_text() {
        let (_dir, root) = checkout();
        symlink("loop", root.join("loop")).unwrap();
        assert_eq!(components(&root, "loop/x"), ["loop", "x"]);
        assert_eq!(components(&root, "src/a.rs/x"), ["src", "a.rs", "x"]);
    }
}
