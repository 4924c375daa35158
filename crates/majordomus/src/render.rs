//! Plain-text tables for the CLI's answers to people.

/// Lays rows out under headers in left-aligned columns, two spaces apart.
///
/// ```
/// let text = majordomus::render::table(&["A", "BB"], &[vec!["xyz".into(), "1".into()]]);
/// assert_eq!(text, "A    BB\nxyz  1");
/// ```
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
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
            .map(|row| line(row.iter().map(String::as_str).collect())),
    );
    lines.join("\n")
}

/// One claim in one line, as every listing for people shows it: `[name] intent (paths)`.
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
        .map(|name| format!("[{name}] "))
        .unwrap_or_default();
    format!("{name}{} ({})", claim.intent, claim.scope.join(", "))
}
