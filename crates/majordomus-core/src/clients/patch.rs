//! The files a Codex `apply_patch` touches, read from the patch itself.
//!
//! Codex hands its hooks the raw patch in `tool_input.command`:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: docs/new.md
//! +text
//! *** Update File: src/lib.rs
//! *** Move to: src/main.rs
//! @@
//! -old
//! +new
//! *** Delete File: src/old.rs
//! *** End Patch
//! ```
//!
//! A file header is a line that begins with `*** ` and names an operation; every line of a
//! file's body begins with `+`, `-`, a space or `@@`, so a header can never hide in a body.

use std::collections::HashSet;

use majordomus_domain::limits;

/// The most files of one patch the hook checks: sixteen of the server's requests of
/// [`limits::SCOPE_PATHS`] files, asked at once, which answer within a hook's budget. A patch
/// touching more (the whole tree reformatted, say) is checked for its first files, in the
/// patch's order, as an input over the hook's byte limit is not checked at all.
pub const PATCH_FILES: usize = 16 * limits::SCOPE_PATHS;

/// The headers that name a file, and what each does to it.
const FILE_HEADERS: [&str; 4] = [
    "*** Add File: ",
    "*** Update File: ",
    "*** Delete File: ",
    "*** Move to: ",
];

/// Every file the patch adds, updates, deletes, or moves a file to, as the patch writes it,
/// in order, each once; at most [`PATCH_FILES`] of them.
///
/// ```
/// let patch = "*** Begin Patch\n*** Update File: a.rs\n*** Move to: b.rs\n@@\n-x\n+y\n*** End Patch\n";
/// assert_eq!(majordomus_core::clients::patch::touched_files(patch), ["a.rs", "b.rs"]);
/// ```
pub fn touched_files(patch: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    let mut known: HashSet<&str> = HashSet::new();
    for line in patch.lines() {
        let line = line.trim_end();
        let Some(path) = FILE_HEADERS
            .iter()
            .find_map(|header| line.strip_prefix(header))
            .map(str::trim)
            .filter(|path| !path.is_empty())
        else {
            continue;
        };
        if known.insert(path) {
            files.push(path.to_owned());
            if files.len() == PATCH_FILES {
                break;
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_names_every_file_it_adds_updates_deletes_and_moves() {
        let patch = "*** Begin Patch\r\n\
            *** Add File: docs/new file.md\r\n\
            +# a title\r\n\
            +*** Update File: not/a/header.rs\r\n\
            *** Update File: src/parser/lexer.rs\r\n\
            @@ fn lex\r\n\
            -    old();\r\n\
            +    new();\r\n\
            *** Update File: src/lib.rs\r\n\
            *** Move to: src/core/lib.rs\r\n\
            @@\r\n\
             context\r\n\
            *** Delete File: src/old.rs\r\n\
            *** Update File: src/parser/lexer.rs\r\n\
            *** End Patch\r\n";
        assert_eq!(
            touched_files(patch),
            [
                "docs/new file.md",
                "src/parser/lexer.rs",
                "src/lib.rs",
                "src/core/lib.rs",
                "src/old.rs"
            ]
        );
    }

    #[test]
    fn text_that_is_not_a_patch_names_nothing() {
        assert!(touched_files("").is_empty());
        assert!(touched_files("ls -la\n*** Add File:\n***Update File: x").is_empty());
    }

    #[test]
    fn a_patch_of_thousands_of_files_names_the_first_ones_up_to_the_bound() {
        let patch: String = (0..10_000)
            .map(|n| format!("*** Add File: f{n}.txt\n+x\n*** Update File: f0.txt\n"))
            .collect();
        let files = touched_files(&patch);
        assert_eq!(files.len(), PATCH_FILES);
        assert_eq!(files[0], "f0.txt");
        assert_eq!(files[PATCH_FILES - 1], format!("f{}.txt", PATCH_FILES - 1));
    }
}
