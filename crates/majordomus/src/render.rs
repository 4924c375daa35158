//! Plain-text tables for the CLI's answers to people.

use std::borrow::Cow;

use majordomus_domain::text::for_terminal;

/// Lays rows out under headers in left-aligned columns, two spaces apart.
///
/// ```
/// let text = majordomus::render::table(&["A", "BB"], &[vec!["xyz".into(), "1".into()]]);
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
///     at: "2026-11-30T02:26:47Z".into(),
/// };
/// assert_eq!(majordomus::render::claim(&claim), "[parser] port the parser (src/parser, tests)");
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
            at: "2026-11-30T02:26:47Z".into(),
        };
        assert_eq!(
            super::claim(&claim),
            "[n\\u{202e}] fix\\x07 (src/\\x00x, docs)"
        );
    }
}
