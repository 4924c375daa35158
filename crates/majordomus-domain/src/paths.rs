//! Claim paths: how a path a peer wrote is normalised, and when two paths meet.
//!
//! Peers write paths loosely (`./apps/cli/`, `apps//cli`, an absolute path in their own
//! checkout, a glob), so paths are compared on normalised whole components while answers
//! keep echoing what the peer wrote.
//!
//! ```
//! use majordomus_domain::paths::normalize;
//!
//! let root = "/home/me/repo";
//! let cli = normalize("./apps//cli/", root).unwrap();
//! assert_eq!(cli.as_written(), "./apps//cli/");
//! assert_eq!(cli.components(), ["apps", "cli"]);
//! assert!(cli.meets(&normalize("apps", root).unwrap()));
//! assert!(!cli.meets(&normalize("apps/web", root).unwrap()));
//! assert!(!normalize("app", root).unwrap().meets(&normalize("apps", root).unwrap()));
//! assert!(normalize("/home/me/repo/apps/cli/src/**/*.rs", root).unwrap().meets(&cli));
//! assert!(normalize("../elsewhere", root).is_err());
//! ```

use std::fmt;

/// A path a peer claimed, normalised for comparison but remembered as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaimPath {
    written: String,
    components: Vec<String>,
}

impl ClaimPath {
    /// The path as the peer wrote it, less surrounding whitespace: what answers echo.
    pub fn as_written(&self) -> &str {
        &self.written
    }

    /// The repository-relative literal components the path is compared on. Empty for the
    /// whole repository; a glob contributes only the literal directories before its first
    /// wildcard.
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// Whether the two paths meet: equal, or one an ancestor of the other on whole
    /// components (`apps` meets `apps/cli`; `app` does not meet `apps`).
    pub fn meets(&self, other: &ClaimPath) -> bool {
        let (shorter, longer) = if self.components.len() <= other.components.len() {
            (&self.components, &other.components)
        } else {
            (&other.components, &self.components)
        };
        longer.starts_with(shorter)
    }
}

/// Why a claimed path was refused. Each message names the path and says what to write
/// instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// The path was empty or only whitespace.
    Empty,
    /// The path has a `..` component. Claims name ground inside the repository, and a
    /// strict refusal is clearer than guessing what a `..` was meant to reach.
    ParentComponent {
        /// The path as written.
        path: String,
    },
    /// The path is absolute and not inside the checkout.
    OutsideCheckout {
        /// The path as written.
        path: String,
        /// The checkout root it was expected under.
        root: String,
    },
    /// The path is absolute but there is no checkout root to make it relative to.
    Absolute {
        /// The path as written.
        path: String,
    },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Empty => f.write_str(
                "a scope path is empty: name a repository-relative path such as `src/parser`, \
                 or `.` for the whole repository",
            ),
            PathError::ParentComponent { path } => write!(
                f,
                "the scope path `{path}` contains `..`: scope paths stay inside the repository, \
                 so write it relative to the repository root without `..`"
            ),
            PathError::OutsideCheckout { path, root } => write!(
                f,
                "the scope path `{path}` is outside this checkout (`{root}`): write a path \
                 relative to the repository root, or an absolute path under `{root}`"
            ),
            PathError::Absolute { path } => write!(
                f,
                "the scope path `{path}` is absolute and there is no checkout to resolve it \
                 against: write it relative to the repository root"
            ),
        }
    }
}

impl std::error::Error for PathError {}

/// Normalises a path a peer claimed in the checkout rooted at `checkout_root` (given
/// canonical, absolute).
///
/// Surrounding whitespace, empty components (`//`, a trailing `/`) and `.` components are
/// dropped; an absolute path under the root becomes relative to it; `.` or the root itself
/// is the whole repository. A `..` anywhere, an absolute path outside the root, and an
/// empty path are refused. A component with a glob character (`*`, `?`, `[`, `{`) ends the
/// comparable part: `src/**/*.rs` meets as `src`, and `*.rs` as the whole repository.
pub fn normalize(raw: &str, checkout_root: &str) -> Result<ClaimPath, PathError> {
    normalize_under(raw, Some(checkout_root))
}

/// Normalises a path by the rules of [`normalize`] when no checkout root is known: an
/// absolute path is refused, because there is nothing to make it relative to.
pub fn normalize_relative(raw: &str) -> Result<ClaimPath, PathError> {
    normalize_under(raw, None)
}

fn normalize_under(raw: &str, checkout_root: Option<&str>) -> Result<ClaimPath, PathError> {
    let written = raw.trim();
    if written.is_empty() {
        return Err(PathError::Empty);
    }
    let mut components = literal_components(written);
    if components.contains(&"..") {
        return Err(PathError::ParentComponent {
            path: written.to_owned(),
        });
    }
    if written.starts_with('/') {
        let Some(root) = checkout_root else {
            return Err(PathError::Absolute {
                path: written.to_owned(),
            });
        };
        let root_components = literal_components(root);
        if !components.starts_with(&root_components) {
            return Err(PathError::OutsideCheckout {
                path: written.to_owned(),
                root: root.to_owned(),
            });
        }
        components.drain(..root_components.len());
    }
    let literal = components.iter().take_while(|c| !is_glob(c)).count();
    Ok(ClaimPath {
        written: written.to_owned(),
        components: components[..literal]
            .iter()
            .map(|c| (*c).to_owned())
            .collect(),
    })
}

/// The components of `path` that name something: empty ones and `.` say nothing.
fn literal_components(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

fn is_glob(component: &str) -> bool {
    component.contains(['*', '?', '[', '{'])
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/srv/repo";

    fn path(raw: &str) -> ClaimPath {
        normalize(raw, ROOT).unwrap_or_else(|e| panic!("{raw}: {e}"))
    }

    #[test]
    fn meeting_is_on_whole_components() {
        assert!(path("apps").meets(&path("apps/cli")));
        assert!(path("apps/cli").meets(&path("apps")));
        assert!(path("apps/cli").meets(&path("apps/cli")));
        assert!(!path("app").meets(&path("apps")));
        assert!(!path("apps/cli").meets(&path("apps/web")));
        assert!(!path("apps/cli").meets(&path("apps/cli-old")));
    }

    #[test]
    fn spelling_does_not_matter_but_is_remembered() {
        let loose = path("  ./a//b/ ");
        assert_eq!(loose.components(), ["a", "b"]);
        assert_eq!(loose.as_written(), "./a//b/");
        assert!(loose.meets(&path("a/b")));
        assert_eq!(path("a/./b").components(), ["a", "b"]);
        assert_eq!(path("a/b/.").components(), ["a", "b"]);
    }

    #[test]
    fn parent_components_are_refused() {
        for raw in ["..", "../x", "a/../b", "a/..", "./a/../../x"] {
            let err = normalize(raw, ROOT).unwrap_err();
            assert_eq!(
                err,
                PathError::ParentComponent {
                    path: raw.to_owned()
                }
            );
            assert!(err.to_string().contains(&format!("`{raw}`")), "{err}");
        }
        assert!(normalize("/srv/repo/../repo/x", ROOT).is_err());
    }

    #[test]
    fn an_empty_path_is_refused() {
        assert_eq!(normalize("", ROOT), Err(PathError::Empty));
        assert_eq!(normalize(" \t", ROOT), Err(PathError::Empty));
        assert!(PathError::Empty.to_string().contains("`.`"));
    }

    #[test]
    fn the_whole_repository_meets_everything() {
        for whole in [".", "./", "/srv/repo", "/srv/repo/", "*.rs", "**"] {
            let whole = path(whole);
            assert!(whole.components().is_empty());
            for other in ["a", "a/b/c", ".", "x/*.md"] {
                assert!(whole.meets(&path(other)), "{whole:?} vs {other}");
                assert!(path(other).meets(&whole));
            }
        }
    }

    #[test]
    fn a_glob_is_kept_and_meets_as_its_literal_prefix() {
        let glob = path("src/**/*.rs");
        assert_eq!(glob.as_written(), "src/**/*.rs");
        assert_eq!(glob.components(), ["src"]);
        assert!(glob.meets(&path("src/board/mod.rs")));
        assert!(glob.meets(&path("src")));
        assert!(glob.meets(&path("src/*.md")));
        assert!(!glob.meets(&path("docs")));
        assert!(!glob.meets(&path("srcs")));
        assert_eq!(path("src/lib?.rs").components(), ["src"]);
        assert_eq!(path("a/[bc]/d").components(), ["a"]);
        assert_eq!(path("a/{b,c}").components(), ["a"]);
    }

    #[test]
    fn absolute_paths_inside_the_root_become_relative() {
        let inside = path("/srv/repo/src/lib.rs");
        assert_eq!(inside.components(), ["src", "lib.rs"]);
        assert_eq!(inside.as_written(), "/srv/repo/src/lib.rs");
        assert!(inside.meets(&path("src")));
        assert_eq!(path("//srv/./repo//src/").components(), ["src"]);
        assert_eq!(path("/srv/repo/src/*.rs").components(), ["src"]);
    }

    #[test]
    fn absolute_paths_outside_the_root_are_refused() {
        for raw in ["/srv/other/x", "/srv/repository/x", "/srv", "/"] {
            let err = normalize(raw, ROOT).unwrap_err();
            assert_eq!(
                err,
                PathError::OutsideCheckout {
                    path: raw.to_owned(),
                    root: ROOT.to_owned()
                }
            );
            assert!(err.to_string().contains(&format!("`{raw}`")));
        }
    }

    #[test]
    fn a_filesystem_root_checkout_contains_every_absolute_path() {
        assert_eq!(normalize("/etc/x", "/").unwrap().components(), ["etc", "x"]);
    }

    #[test]
    fn without_a_root_only_relative_paths_are_accepted() {
        assert_eq!(
            normalize_relative("./a/b/").unwrap().components(),
            ["a", "b"]
        );
        let err = normalize_relative("/srv/repo/a").unwrap_err();
        assert!(matches!(err, PathError::Absolute { .. }));
        assert!(err.to_string().contains("`/srv/repo/a`"));
        assert!(normalize_relative("../a").is_err());
    }
}
