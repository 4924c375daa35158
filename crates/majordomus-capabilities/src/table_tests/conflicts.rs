//! `conflicts.predict`: the merges between the repository's worktrees, each worktree's work
//! taken as it stands on disk, uncommitted included.

use serde_json::json;

use super::{Case, Expect, check};
use crate::testing::{Caller, SERVED_WORKTREE};
use majordomus_core::api::ErrorKind;

/// The text of the repository's first commit, which both sides of a conflict change.
const README: &str = "a repository for a test\n";

#[test]
fn conflicts_predict() {
    check(
        "conflicts.predict",
        vec![
            Case::new(
                "a worktree without changes has nothing to merge",
                Caller::Observer,
                json!({}),
                Expect::Answer(json!({
                    "reason": null,
                    "worktrees": [{
                        "worktree": "<worktree>",
                        "branch": "main",
                        "checkout_id": "<checkout>",
                        "changed": 0,
                        "uncommitted": false,
                        "snapshot": null,
                        "reason": null,
                    }],
                    "pairs": 0,
                    "conflicts": [],
                    "complete": true,
                })),
            ),
            Case::new(
                "uncommitted work is read as it stands",
                Caller::Sessionless,
                json!({}),
                Expect::Answer(json!({
                    "worktrees": [{ "worktree": "<worktree>", "changed": 1, "uncommitted": true }],
                    "pairs": 0,
                    "conflicts": [],
                })),
            )
            .write(SERVED_WORKTREE, "README", format!("{README}more\n")),
            Case::new(
                "every worktree is read, this one first",
                Caller::Peer,
                json!({}),
                Expect::Answer(json!({
                    "worktrees": [
                        { "worktree": "<worktree>", "branch": "main", "changed": 0 },
                        { "worktree": "<dir>/beta", "branch": "beta", "changed": 0 },
                    ],
                    "pairs": 0,
                    "complete": true,
                })),
            )
            .worktree("beta"),
            Case::new(
                "work on different files merges cleanly",
                Caller::Observer,
                json!({}),
                Expect::Answer(json!({
                    "worktrees": [
                        { "changed": 1, "uncommitted": true },
                        { "changed": 1, "uncommitted": true },
                    ],
                    "pairs": 1,
                    "conflicts": [],
                    "complete": true,
                })),
            )
            .worktree("beta")
            .write(SERVED_WORKTREE, "README", format!("{README}from alpha\n"))
            .write("beta", "NOTES", "from beta\n"),
            Case::new(
                "the same line changed two ways would conflict",
                Caller::Observer,
                json!({}),
                Expect::Answer(json!({
                    "pairs": 1,
                    "conflicts": [{
                        "ours": { "worktree": "<worktree>", "branch": "main", "checkout_id": "<checkout>" },
                        "theirs": { "worktree": "<dir>/beta", "branch": "beta" },
                        "paths": ["README"],
                        "more_paths": null,
                    }],
                    "complete": true,
                })),
            )
            .worktree("beta")
            .write(SERVED_WORKTREE, "README", "the lexer first\n")
            .write("beta", "README", "the parser first\n"),
            Case::new(
                "the same new file added two ways would conflict",
                Caller::Observer,
                json!({}),
                Expect::Answer(json!({
                    "conflicts": [{ "paths": ["src/lexer.rs"] }],
                })),
            )
            .worktree("beta")
            .write(SERVED_WORKTREE, "src/lexer.rs", "fn alpha() {}\n")
            .write("beta", "src/lexer.rs", "fn beta() {}\n"),
            Case::new(
                "an untracked file over 1 MiB is named and left out",
                Caller::Observer,
                json!({}),
                Expect::Answer(json!({
                    "worktrees": [
                        { "not_hashed": ["big.bin"], "more_not_hashed": null },
                        { "not_hashed": ["big.bin"] },
                    ],
                    "pairs": 1,
                    "conflicts": [],
                })),
            )
            .worktree("beta")
            .write(SERVED_WORKTREE, "big.bin", "a".repeat(1024 * 1024 + 1))
            .write("beta", "big.bin", "b".repeat(1024 * 1024 + 1)),
            Case::new(
                "it takes no field",
                Caller::Observer,
                json!({ "checkouts": "this" }),
                Expect::Refusal(ErrorKind::InvalidInput, &["unknown field `checkouts`"]),
            ),
        ],
    );
}
