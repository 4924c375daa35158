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

use std::collections::HashSet;

use crate::limits;
use crate::text::{RefusedChar, find_refused, for_terminal};

/// A path a peer claimed, normalised for comparison but remembered as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaimPath {
    written: String,
    components: Vec<String>,
    /// Whether the file system named it other than its text does: a symbolic link followed,
    /// or a glob-looking name that exists and so is a literal path.
    on_disk: bool,
}

/// A scope path checked and split into every component it names, wildcards included, before
/// anyone decides what it means: its text alone ([`SplitPath::lexical`]) or what the file
/// system has there ([`ClaimPath::resolved`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitPath {
    written: String,
    components: Vec<String>,
}

impl SplitPath {
    /// The path as the peer wrote it, less surrounding whitespace.
    pub fn as_written(&self) -> &str {
        &self.written
    }

    /// Every component below the repository root, glob ones included.
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// The path as its text says: the components before the first one holding a glob
    /// character.
    pub fn lexical(self) -> ClaimPath {
        self.existing(0)
    }

    /// The path as the file system has it when no symbolic link is on the way and its first
    /// `existing` components exist (at most all of them): those are taken literally,
    /// glob-looking or not, and the rest as the text says, up to the first glob. It is what
    /// [`ClaimPath::resolved`] makes of those components, without its checks: they are the
    /// written path's own, which [`split`] checked.
    pub fn existing(self, existing: usize) -> ClaimPath {
        let existing = existing.min(self.components.len());
        let kept = existing + literal_prefix(&self.components[existing..]);
        let on_disk = kept != literal_prefix(&self.components);
        let mut components = self.components;
        components.truncate(kept);
        ClaimPath {
            written: self.written,
            components,
            on_disk,
        }
    }
}

impl ClaimPath {
    /// The path `split` names on disk: `components` are its place below the repository
    /// root once symbolic links are followed, with glob-looking names that exist taken
    /// literally. Only the file system can say that, so the caller (the checkout crate)
    /// resolves it, once, when the claim is made; this checks the result by the same
    /// bounds as a written path.
    pub fn resolved(split: &SplitPath, components: Vec<String>) -> Result<ClaimPath, PathError> {
        check_resolved(&components)?;
        let literal = literal_prefix(&split.components);
        let on_disk = components != split.components[..literal];
        Ok(ClaimPath {
            written: split.written.clone(),
            components,
            on_disk,
        })
    }

    /// A path another server resolved: the text its peer wrote and the [`ClaimPath::key`]
    /// it resolved to, taken literally (a `[slug]` in a key is a directory name, not a
    /// glob).
    pub fn from_key(written: &str, key: &str) -> Result<ClaimPath, PathError> {
        check_written(key)?;
        if key.starts_with('/') {
            return Err(PathError::Absolute { path: excerpt(key) });
        }
        let components: Vec<String> = literal_components(key)
            .into_iter()
            .map(str::to_owned)
            .collect();
        check_resolved(&components)?;
        Ok(ClaimPath {
            written: written.trim().to_owned(),
            components,
            on_disk: true,
        })
    }

    /// The components joined by `/`, or `.` for the whole repository: how a resolved path
    /// travels to other servers.
    pub fn key(&self) -> String {
        if self.components.is_empty() {
            ".".to_owned()
        } else {
            self.components.join("/")
        }
    }

    /// Whether the file system named this path other than its text does, so that a reader
    /// of the text alone would compare it wrongly.
    pub fn resolved_differently(&self) -> bool {
        self.on_disk
    }

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

/// Why a claimed path was refused. Each message names the path (escaped, and cut when
/// long) and says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path was empty or only whitespace.
    #[error(
        "a scope path is empty: name a repository-relative path such as `src/parser`, or `.` \
         for the whole repository"
    )]
    Empty,
    /// The path is longer than [`limits::PATH_BYTES`].
    #[error(
        "a scope path holds at most {} bytes; the one starting `{start}` has {bytes}: claim a \
         directory that contains it instead",
        limits::PATH_BYTES
    )]
    TooLong {
        /// The beginning of the path, escaped.
        start: String,
        /// Its length in bytes.
        bytes: usize,
    },
    /// The path has more than [`limits::PATH_COMPONENTS`] components.
    #[error(
        "a scope path holds at most {} components; `{path}` has {components}: claim a \
         directory higher up instead",
        limits::PATH_COMPONENTS
    )]
    TooDeep {
        /// The path as written, cut when long.
        path: String,
        /// How many components it has below the repository root.
        components: usize,
    },
    /// The path holds a line break, a control or a bidirectional formatting character.
    #[error(
        "the scope path `{path}` contains {found}, which would reach other agents and \
         terminals as is: write the path in plain text"
    )]
    Unprintable {
        /// The path, escaped and cut when long.
        path: String,
        /// The first such character.
        found: RefusedChar,
    },
    /// The path has a `..` component. Claims name ground inside the repository, and a
    /// strict refusal is clearer than guessing what a `..` was meant to reach.
    #[error(
        "the scope path `{path}` contains `..`: scope paths stay inside the repository, so \
         write it relative to the repository root without `..`"
    )]
    ParentComponent {
        /// The path as written.
        path: String,
    },
    /// The path is absolute and not inside the checkout.
    #[error(
        "the scope path `{path}` is outside this checkout (`{root}`): write a path relative \
         to the repository root, or an absolute path under `{root}`"
    )]
    OutsideCheckout {
        /// The path as written.
        path: String,
        /// The checkout root it was expected under.
        root: String,
    },
    /// The path is absolute but there is no checkout root to make it relative to.
    #[error(
        "the scope path `{path}` is absolute and there is no checkout to resolve it against: \
         write it relative to the repository root"
    )]
    Absolute {
        /// The path as written.
        path: String,
    },
}

/// Normalises a path a peer claimed in the checkout rooted at `checkout_root` (given
/// canonical, absolute).
///
/// Surrounding whitespace, empty components (`//`, a trailing `/`) and `.` components are
/// dropped; an absolute path under the root becomes relative to it; `.` or the root itself
/// is the whole repository. A `..` anywhere, an absolute path outside the root, and an
/// empty path are refused, and so is a path over [`limits::PATH_BYTES`] bytes, with more
/// than [`limits::PATH_COMPONENTS`] components below the root, or holding a character
/// [`crate::text::classify`] refuses. A component with a glob character (`*`, `?`, `[`,
/// `{`) ends the comparable part: `src/**/*.rs` meets as `src`, and `*.rs` as the whole
/// repository.
pub fn normalize(raw: &str, checkout_root: &str) -> Result<ClaimPath, PathError> {
    normalize_under(raw, Some(checkout_root))
}

/// Normalises a path by the rules of [`normalize`] when no checkout root is known: an
/// absolute path is refused, because there is nothing to make it relative to.
pub fn normalize_relative(raw: &str) -> Result<ClaimPath, PathError> {
    normalize_under(raw, None)
}

/// The checks of [`normalize`] that need no checkout root and no splitting: not empty, not
/// too long, no refused character. Cheap enough to run on every path of a scope before any
/// is normalised.
pub fn check_written(raw: &str) -> Result<(), PathError> {
    let written = raw.trim();
    if written.is_empty() {
        return Err(PathError::Empty);
    }
    if written.len() > limits::PATH_BYTES {
        return Err(PathError::TooLong {
            start: excerpt(written),
            bytes: written.len(),
        });
    }
    if let Some(found) = find_refused(written) {
        return Err(PathError::Unprintable {
            path: excerpt(written),
            found,
        });
    }
    Ok(())
}

/// Checks and splits a path a peer claimed in the checkout rooted at `checkout_root`
/// (canonical, absolute), by the rules of [`normalize`] but keeping every component: what
/// a glob or a symbolic link in it means is decided afterwards.
pub fn split(raw: &str, checkout_root: &str) -> Result<SplitPath, PathError> {
    split_under(raw, Some(checkout_root))
}

fn normalize_under(raw: &str, checkout_root: Option<&str>) -> Result<ClaimPath, PathError> {
    split_under(raw, checkout_root).map(SplitPath::lexical)
}

fn split_under(raw: &str, checkout_root: Option<&str>) -> Result<SplitPath, PathError> {
    check_written(raw)?;
    let written = raw.trim();
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
    if components.len() > limits::PATH_COMPONENTS {
        return Err(PathError::TooDeep {
            path: excerpt(written),
            components: components.len(),
        });
    }
    Ok(SplitPath {
        written: written.to_owned(),
        components: components.into_iter().map(str::to_owned).collect(),
    })
}

/// How many leading components hold no glob character.
fn literal_prefix(components: &[String]) -> usize {
    components.iter().take_while(|c| !is_glob(c)).count()
}

/// The bounds of a written path, applied to components the file system gave: no `..`, no
/// refused character, at most [`limits::PATH_COMPONENTS`] of them and
/// [`limits::PATH_BYTES`] bytes in all.
fn check_resolved(components: &[String]) -> Result<(), PathError> {
    let key = components.join("/");
    if key.len() > limits::PATH_BYTES {
        return Err(PathError::TooLong {
            start: excerpt(&key),
            bytes: key.len(),
        });
    }
    if let Some(found) = find_refused(&key) {
        return Err(PathError::Unprintable {
            path: excerpt(&key),
            found,
        });
    }
    if components
        .iter()
        .any(|c| c.is_empty() || c == "." || c == ".." || c.contains('/'))
    {
        return Err(PathError::ParentComponent {
            path: excerpt(&key),
        });
    }
    if components.len() > limits::PATH_COMPONENTS {
        return Err(PathError::TooDeep {
            path: excerpt(&key),
            components: components.len(),
        });
    }
    Ok(())
}

/// The paths without repeats: of paths with the same components (`src`, `./src/`), only
/// the first is kept, as written. A scope is a set of places; a repeat would only multiply
/// the work of every comparison with it.
pub fn without_repeats(mut paths: Vec<ClaimPath>) -> Vec<ClaimPath> {
    let mut seen = HashSet::with_capacity(paths.len());
    let first: Vec<bool> = paths.iter().map(|p| seen.insert(p.components())).collect();
    let mut first = first.into_iter();
    paths.retain(|_| first.next().unwrap_or(false));
    paths
}

/// Whether two lists of paths name the same places in the same order, however written: a
/// claim announced again over the same ground, which the indexes holding the claim need not
/// file again.
pub fn same_places(these: &[ClaimPath], those: &[ClaimPath]) -> bool {
    these.len() == those.len()
        && these
            .iter()
            .zip(those)
            .all(|(this, that)| this.components == that.components)
}

/// How many characters of a refused path its message shows.
const EXCERPT_CHARS: usize = 64;

/// The beginning of a path for a message: escaped, and cut with an ellipsis when long.
fn excerpt(path: &str) -> String {
    let mut shown: String = path.chars().take(EXCERPT_CHARS).collect();
    if shown.len() < path.len() {
        shown.push('…');
    }
    for_terminal(&shown).into_owned()
}

/// The components of `path` that name something: empty ones and `.` say nothing.
fn literal_components(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

/// Whether a component holds a glob character (`*`, `?`, `[`, `{`): unless the file system
/// has a file of that very name, it stands for many names and meets as its parent.
pub fn is_glob(component: &str) -> bool {
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
    #[test]
    fn a_path_is_refused_just_over_its_byte_limit_before_it_is_split() {
        let at_limit = "a/".repeat(limits::PATH_BYTES / 2 - 1) + "bc";
        assert_eq!(at_limit.len(), limits::PATH_BYTES);
        let err = normalize(&at_limit, ROOT).unwrap_err();
        assert!(
            matches!(err, PathError::TooDeep { .. }),
            "within the bytes, over the depth: {err}"
        );
        let wide_at_limit = "x".repeat(limits::PATH_BYTES);
        assert_eq!(path(&wide_at_limit).components().len(), 1);

        let over = "x".repeat(limits::PATH_BYTES + 1);
        let err = normalize(&over, ROOT).unwrap_err();
        assert_eq!(
            err,
            PathError::TooLong {
                start: format!("{}…", "x".repeat(64)),
                bytes: limits::PATH_BYTES + 1
            }
        );
        let message = err.to_string();
        assert!(message.contains("at most 1024 bytes"), "{message}");
        assert!(message.contains("has 1025"), "{message}");
        assert!(
            message.len() < 300,
            "the message does not echo the whole path"
        );
        // surrounding whitespace is not counted
        assert!(normalize(&format!("  {wide_at_limit}  "), ROOT).is_ok());
    }

    #[test]
    fn a_path_is_refused_just_over_its_depth_below_the_root() {
        let deepest = vec!["d"; limits::PATH_COMPONENTS].join("/");
        assert_eq!(path(&deepest).components().len(), limits::PATH_COMPONENTS);
        // the root's own components do not count, nor do empty and `.` ones
        assert!(normalize(&format!("/srv/repo/{deepest}"), ROOT).is_ok());
        assert!(normalize(&format!("./{}", deepest.replace('/', "//./")), ROOT).is_ok());
        let deeper = format!("{deepest}/e");
        let err = normalize(&deeper, ROOT).unwrap_err();
        assert!(
            matches!(err, PathError::TooDeep { components: 65, .. }),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("at most 64 components"), "{message}");
        assert!(message.contains("has 65"), "{message}");
        // globs count too: the limit is on what was written
        assert!(normalize(&format!("{deepest}/*.rs"), ROOT).is_err());
    }

    #[test]
    fn control_line_break_and_bidi_characters_are_refused_and_shown_escaped() {
        for (raw, code) in [
            ("src/x\n  overlap: p7 (rm -rf) and p8", "U+000A"),
            ("src/\x1b[31mred", "U+001B"),
            ("src/a\0b", "U+0000"),
            ("src/\u{202e}txt.rs", "U+202E"),
            ("src/\u{2066}x", "U+2066"),
            ("src/\u{9b}x", "U+009B"),
            ("src/\u{7f}", "U+007F"),
        ] {
            let err = normalize(raw, ROOT).unwrap_err();
            assert!(
                matches!(err, PathError::Unprintable { .. }),
                "{raw:?}: {err:?}"
            );
            let message = err.to_string();
            assert!(message.contains(code), "{message}");
            assert!(
                message.chars().all(|c| crate::text::classify(c).is_none()),
                "nothing raw in {message:?}"
            );
            assert!(message.contains("`src/"), "the path is named: {message}");
            assert!(normalize_relative(raw).is_err());
            assert!(check_written(raw).is_err());
        }
        // trailing whitespace, a line break included, is trimmed like any other
        assert_eq!(path("src/x\n").components(), ["src", "x"]);
    }

    #[test]
    fn repeats_are_dropped_by_components_keeping_the_first_as_written() {
        let paths: Vec<ClaimPath> = ["./src/", "docs", "src", "src/a", "/srv/repo/src", "docs/"]
            .into_iter()
            .map(path)
            .collect();
        let kept = without_repeats(paths);
        let kept: Vec<&str> = kept.iter().map(ClaimPath::as_written).collect();
        assert_eq!(kept, ["./src/", "docs", "src/a"]);
        let many = vec![path("a"); 200_000];
        assert_eq!(without_repeats(many).len(), 1);
        // globs with the same literal prefix are repeats of it
        assert_eq!(
            without_repeats(vec![path("src/*.rs"), path("src")]).len(),
            1
        );
    }

    #[test]
    fn the_same_places_are_the_same_components_in_the_same_order() {
        let these = [path("./src/"), path("docs/**/*.md")];
        assert!(same_places(&these, &[path("src"), path("docs")]));
        assert!(!same_places(&these, &[path("docs"), path("src")]));
        assert!(!same_places(&these, &[path("src")]));
        assert!(!same_places(&these, &[path("src"), path("docs/a.md")]));
        assert!(same_places(&[], &[]));
    }

    #[test]
    fn a_split_path_keeps_every_component_and_lexical_cuts_at_the_first_glob() {
        let split = split("./app/[slug]//page.tsx", ROOT).unwrap();
        assert_eq!(split.as_written(), "./app/[slug]//page.tsx");
        assert_eq!(split.components(), ["app", "[slug]", "page.tsx"]);
        let lexical = split.lexical();
        assert_eq!(lexical.components(), ["app"]);
        assert!(!lexical.resolved_differently());
        assert_eq!(
            super::split("/srv/repo/a/b", ROOT).unwrap().components(),
            ["a", "b"]
        );
        assert!(super::split("a/../b", ROOT).is_err());
        assert!(super::split("/elsewhere", ROOT).is_err());
    }

    #[test]
    fn an_existing_prefix_is_literal_and_the_rest_read_as_written() {
        let split = split("./app/[slug]//page.tsx", ROOT).unwrap();
        for existing in [0, 1] {
            let path = split.clone().existing(existing);
            assert_eq!(path.components(), ["app"]);
            assert!(!path.resolved_differently());
            assert_eq!(path.as_written(), "./app/[slug]//page.tsx");
        }
        for existing in [2, 3, 9] {
            let path = split.clone().existing(existing);
            assert_eq!(path.components(), ["app", "[slug]", "page.tsx"]);
            assert!(path.resolved_differently());
            // what the file system's own components make of it
            let resolved = ClaimPath::resolved(&split, path.components().to_vec()).unwrap();
            assert_eq!(resolved, path);
        }
        let plain = super::split("src/a.rs", ROOT).unwrap();
        assert_eq!(plain.clone().existing(1), plain.lexical());
    }

    #[test]
    fn a_resolved_path_compares_on_what_the_file_system_named() {
        // `alias` is a link to `src`: the claim meets `src/a.rs` and echoes what was written
        let alias = split("alias/a.rs", ROOT).unwrap();
        let resolved = ClaimPath::resolved(&alias, vec!["src".into(), "a.rs".into()]).unwrap();
        assert_eq!(resolved.as_written(), "alias/a.rs");
        assert!(resolved.meets(&path("src/a.rs")));
        assert!(!resolved.meets(&path("alias")));
        assert!(resolved.resolved_differently());
        assert_eq!(resolved.key(), "src/a.rs");

        // a bracketed name that exists is a literal path
        let slug = split("app/[slug]/page.tsx", ROOT).unwrap();
        let components: Vec<String> = slug.components().to_vec();
        let literal = ClaimPath::resolved(&slug, components).unwrap();
        assert!(literal.resolved_differently());
        assert!(!literal.meets(&path("app/other.ts")));
        assert!(literal.meets(&path("app")));

        // resolved as written: nothing differs
        let plain = split("src/x", ROOT).unwrap();
        let same = ClaimPath::resolved(&plain, vec!["src".into(), "x".into()]).unwrap();
        assert!(!same.resolved_differently());
        assert_eq!(same, path("src/x"));

        // the bounds hold on what the file system gave
        let deep = vec!["d".to_owned(); limits::PATH_COMPONENTS + 1];
        assert!(matches!(
            ClaimPath::resolved(&plain, deep),
            Err(PathError::TooDeep { .. })
        ));
        let hostile = vec!["src".to_owned(), "x\x1b[2J".to_owned()];
        assert!(matches!(
            ClaimPath::resolved(&plain, hostile),
            Err(PathError::Unprintable { .. })
        ));
        let whole = ClaimPath::resolved(&split(".", ROOT).unwrap(), Vec::new()).unwrap();
        assert_eq!(whole.key(), ".");
    }

    #[test]
    fn a_key_travels_and_is_read_back_literally() {
        let slug = split("app/[slug]/page.tsx", ROOT).unwrap();
        let components: Vec<String> = slug.components().to_vec();
        let sent = ClaimPath::resolved(&slug, components).unwrap();
        let read = ClaimPath::from_key(sent.as_written(), &sent.key()).unwrap();
        assert_eq!(read.components(), sent.components());
        assert_eq!(read.as_written(), "app/[slug]/page.tsx");
        assert!(
            ClaimPath::from_key("x", ".")
                .unwrap()
                .components()
                .is_empty()
        );
        for bad in ["../up", "a/../b", "/abs", "", "a\nb"] {
            assert!(ClaimPath::from_key("x", bad).is_err(), "{bad:?}");
        }
    }
}
