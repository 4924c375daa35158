//! Plain-text tables for the CLI's answers to people.

use std::borrow::Cow;

use majordomus_domain::text::for_terminal;

/// Lays rows out under headers in left-aligned columns, two spaces apart.
///
/// ```
/// let text = majordomus_core::render::table(&["A", "BB"], &[vec!["xyz".into(), "1".into()]]);
/// assert_eq!(text, "A    BB\nxyz  1");
/// ```
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    // Cells often hold what peers wrote: escaped, no cell acts on the terminal or breaks the
    // table's lines.
    let rows: Vec<Vec<Cow<str>>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| for_terminal(cell)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let mut lines = vec![line(headers.to_vec())];
    lines.extend(
        rows.iter()
            .map(|row| line(row.iter().map(AsRef::as_ref).collect())),
    );
    lines.join("\n")
}

/// One claim in one line, as every listing for people shows it: `[name] intent (paths)`,
/// each part escaped for the terminal.
///
/// ```
/// use majordomus_domain::peers::Announcement;
/// let claim = Announcement {
///     name: Some("parser".into()),
///     intent: "port the parser".into(),
///     scope: vec!["src/parser".into(), "tests".into()],
///     at: "2026-11-30T02:26:47Z".parse().unwrap(),
///     resolved: vec![],
///     compared: Default::default(),
/// };
/// assert_eq!(majordomus_core::render::claim(&claim), "[parser] port the parser (src/parser, tests)");
/// ```
pub fn claim(claim: &majordomus_domain::peers::Announcement) -> String {
    let name = claim
        .name
        .as_deref()
        .map(|name| format!("[{}] ", for_terminal(name)))
        .unwrap_or_default();
    let scope: Vec<Cow<str>> = claim.scope.iter().map(|path| for_terminal(path)).collect();
    format!(
        "{name}{} ({})",
        for_terminal(&claim.intent),
        scope.join(", ")
    )
}

/// How long ago a departed peer left, in the words people read a board in.
///
/// ```
/// use majordomus_core::render::left_ago;
/// assert_eq!(left_ago(12), "left 12 s ago");
/// assert_eq!(left_ago(4 * 60 + 59), "left 4 min ago");
/// assert_eq!(left_ago(3 * 3600), "left 3 h ago");
/// assert_eq!(left_ago(2 * 86_400 + 5), "left 2 d ago");
/// ```
pub fn left_ago(seconds: u64) -> String {
    match seconds {
        0..60 => format!("left {seconds} s ago"),
        60..3_600 => format!("left {} min ago", seconds / 60),
        3_600..86_400 => format!("left {} h ago", seconds / 3_600),
        _ => format!("left {} d ago", seconds / 86_400),
    }
}

/// A checkout as people read it: where it is, and its branch when known, escaped.
///
/// ```
/// use majordomus_domain::peers::PeerCheckout;
/// let beta = PeerCheckout {
///     id: "b".into(),
///     worktree: "/src/beta".into(),
///     branch: Some("feature/beta".into()),
///     this_checkout: false,
///     machine: None,
/// };
/// assert_eq!(majordomus_core::render::checkout(&beta), "worktree /src/beta (branch feature/beta)");
/// ```
pub fn checkout(checkout: &majordomus_domain::peers::PeerCheckout) -> String {
    match &checkout.branch {
        Some(branch) => format!(
            "worktree {} (branch {})",
            for_terminal(&checkout.worktree),
            for_terminal(branch)
        ),
        None => format!("worktree {}", for_terminal(&checkout.worktree)),
    }
}

/// What a worktree did to some paths, in words: `uncommitted changes` while any of it is
/// not committed, `committed changes` otherwise, each path with the ways it was changed.
///
/// ```
/// use majordomus_domain::changes::ChangeKind::{Committed, Unstaged};
/// use majordomus_core::render::changes_to;
/// assert_eq!(
///     changes_to(&[("src/a.rs", &[Committed, Unstaged]), ("src/b.rs", &[Committed])]),
///     "uncommitted changes to src/a.rs (committed, unstaged), src/b.rs (committed)"
/// );
/// assert_eq!(changes_to(&[("b", &[Committed])]), "committed changes to b (committed)");
/// ```
pub fn changes_to(paths: &[(&str, &[majordomus_domain::changes::ChangeKind])]) -> String {
    use majordomus_domain::changes::ChangeKind;
    let uncommitted = paths
        .iter()
        .any(|(_, kinds)| kinds.iter().any(|kind| *kind != ChangeKind::Committed));
    let listed: Vec<String> = paths
        .iter()
        .map(|(path, kinds)| {
            let ways: Vec<&str> = kinds.iter().map(|kind| kind.as_str()).collect();
            format!("{} ({})", for_terminal(path), ways.join(", "))
        })
        .collect();
    format!(
        "{} changes to {}",
        if uncommitted {
            "uncommitted"
        } else {
            "committed"
        },
        listed.join(", ")
    )
}

/// Writes what a command prints for a person to standard output, as `print!` does, but a
/// reader that went away (`majordomus peers | head -1`) ends the command quietly with success
/// instead of a panic, and any other failure to write ends it with the reason on stderr.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("majordomus: cannot write to standard output: {error}");
        std::process::exit(1);
    }
}

/// `println!` for a person's terminal or pipe, through [`write_stdout`].
#[macro_export]
macro_rules! say {
    () => {
        $crate::render::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::render::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub use say;

/// `print!` for a person's terminal or pipe, through [`write_stdout`].
#[macro_export]
macro_rules! say_part {
    ($($arg:tt)*) => {
        $crate::render::write_stdout(format_args!($($arg)*))
    };
}
pub use say_part;

#[cfg(test)]
mod tests {
    use majordomus_domain::peers::Announcement;

    #[test]
    fn what_peers_wrote_reaches_the_terminal_escaped() {
        let text = super::table(
            &["CLIENT", "X"],
            &[vec!["evil\n  overlap: fake".into(), "\u{1b}[2J".into()]],
        );
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.contains("evil\\n  overlap: fake  \\x1b[2J"), "{text}");
        let claim = Announcement {
            name: Some("n\u{202e}".into()),
            intent: "fix\u{7}".into(),
            scope: vec!["src/\u{0}x".into(), "docs".into()],
            at: "2026-11-30T02:26:47Z".parse().unwrap(),
            resolved: vec![],
            compared: Default::default(),
        };
        assert_eq!(
            super::claim(&claim),
            "[n\\u{202e}] fix\\x07 (src/\\x00x, docs)"
        );
    }
}
