//! The reference pages: one per registered capability plus an index, every section on every
//! page, and the pages committed in `docs/reference/` exactly what the code generates.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use majordomus_dev::bench;
use majordomus_dev::docs::{self, INDEX, MARKER, SECTIONS};

/// The pages committed in the repository.
fn committed() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference")
}

fn majordomus_dev(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_majordomus-dev"))
        .args(args)
        .output()
        .expect("majordomus-dev runs")
}

#[test]
fn every_capability_page_has_every_section() {
    let registry = majordomus_capabilities::registry();
    for capability in registry.iter() {
        let d = &capability.declaration;
        let text = docs::page(capability);
        let id = d.id;
        assert!(
            text.starts_with(MARKER),
            "{id}: the page says it is generated"
        );
        assert!(
            text.contains(&format!("# `{id}` — {}", d.title)),
            "{id}: title"
        );
        let description_start: String = d
            .description
            .split_whitespace()
            .take(6)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(text.contains(&description_start), "{id}: description");
        for field in [
            "- **kind:** ",
            "- **stability:** ",
            "- **module:** ",
            "- **tags:** ",
        ] {
            assert!(text.contains(field), "{id}: {field}");
        }
        assert!(text.contains(&format!("- **kind:** {}", d.kind.as_str())));
        assert!(text.contains(&format!("- **stability:** {}", d.stability.as_str())));
        assert!(text.contains(&format!("- **module:** `{}`", d.module())));
        for tag in d.tags {
            assert!(text.contains(&format!("`#{tag}`")), "{id}: tag {tag}");
        }

        // Every section, in order.
        let mut from = 0;
        for section in SECTIONS {
            let at = text[from..]
                .find(&format!("\n{section}"))
                .unwrap_or_else(|| panic!("{id}: no `{section}` after byte {from}"));
            from += at + 1;
        }

        // Exposure: every surface, with "—" where absent.
        let mcp = d
            .exposure
            .mcp_tool
            .map_or("| MCP | — |".to_string(), |tool| {
                format!("| MCP | tool `{tool}` |")
            });
        assert!(text.contains(&mcp), "{id}: {mcp}");
        let http = d
            .exposure
            .http
            .map_or("| HTTP | — |".to_string(), |(method, path)| {
                format!(
                    "| HTTP | `{} {path}` · operationId `{id}` |",
                    method.as_str()
                )
            });
        assert!(text.contains(&http), "{id}: {http}");
        let cli = d.exposure.cli.map_or("| CLI | — |".to_string(), |words| {
            format!("| CLI | `majordomus {}` |", words.join(" "))
        });
        assert!(text.contains(&cli), "{id}: {cli}");

        // Schemas: a property table (or the empty object) and the JSON Schema, both sides.
        for (side, schema) in [
            ("Input", capability.input_schema()),
            ("Output", capability.output_schema()),
        ] {
            let title = schema["title"].as_str().expect("schemas have titles");
            assert!(
                text.contains(&format!("### {side} · `{title}`")),
                "{id}: {side}"
            );
            if let Some(properties) = schema["properties"].as_object() {
                for name in properties.keys() {
                    assert!(
                        text.contains(&format!("| `{name}` |")),
                        "{id}: {side} property {name}"
                    );
                }
            }
        }
        assert!(
            text.contains("| property | type | required | description |")
                || text.contains("No properties"),
            "{id}: property table"
        );
        assert_eq!(
            text.matches("JSON Schema:").count(),
            2,
            "{id}: both JSON Schemas"
        );

        // Policies.
        assert!(
            text.contains("| benchmark | required |"),
            "{id}: benchmark policy"
        );
        assert!(text.contains("| cache | off |"), "{id}: cache policy");

        // Benchmark targets: one line per transport × case, the rows the bench measures.
        let rows = bench::rows_of(capability);
        assert!(!rows.is_empty(), "{id}: benchmark rows");
        for row in &rows {
            let line = format!("| {} | `{}` |", row.transport.title(), row.case);
            assert_eq!(text.matches(&line).count(), 1, "{id}: target line {line}");
        }

        // Moments: declared ones, or the page says there are none yet.
        if d.moments.is_empty() {
            assert!(
                text.contains("_None declared yet._"),
                "{id}: no moments yet"
            );
        }
        for moment in d.moments {
            let headline: String = moment
                .headline
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            assert!(
                text.contains(&headline.trim_end_matches('.').to_string()),
                "{id}: moment {headline}"
            );
        }
    }
}

#[test]
fn the_index_lists_every_capability_and_links_its_page() {
    let registry = majordomus_capabilities::registry();
    let index = docs::index(registry);
    assert!(index.starts_with(MARKER));
    for capability in registry.iter() {
        let link = format!("[`{}`]({})", capability.id(), docs::file_name(capability));
        assert!(index.contains(&link), "{link}");
    }
}

#[test]
fn the_committed_pages_are_what_the_code_generates() {
    let pages = docs::pages(majordomus_capabilities::registry());
    let problems = docs::check(&committed(), &pages);
    assert!(
        problems.is_empty(),
        "the reference pages in docs/reference/ are not what the code generates; run \
         `cargo xtask docs` and commit the result:\n{}",
        problems.join("\n")
    );
    // And nothing else lives there unnoticed.
    let files: BTreeSet<String> = std::fs::read_dir(committed())
        .expect("docs/reference exists")
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    let generated: BTreeSet<String> = pages.into_iter().map(|page| page.file).collect();
    assert_eq!(files, generated);
}

#[test]
fn the_command_writes_one_page_per_capability_plus_the_index_and_checks_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reference");
    let out_arg = out.to_str().unwrap();
    let written = majordomus_dev(&["docs", "--out", out_arg]);
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );

    let files: BTreeSet<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    let mut expected: BTreeSet<String> = majordomus_capabilities::registry()
        .iter()
        .map(docs::file_name)
        .collect();
    expected.insert(INDEX.to_string());
    assert_eq!(files, expected);

    let again = majordomus_dev(&["docs", "--out", out_arg, "--check"]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // A page edited by hand, and a page left over from a capability that is gone.
    let edited = out.join("peers.list.md");
    let text = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, text.replace("## Policies", "## Policy")).unwrap();
    std::fs::write(
        out.join("gone.capability.md"),
        format!("{MARKER}\n\n# gone\n"),
    )
    .unwrap();
    let check = majordomus_dev(&["docs", "--out", out_arg, "--check"]);
    assert!(!check.status.success(), "--check fails on a difference");
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(said.contains("peers.list.md differs"), "{said}");
    assert!(said.contains("gone.capability.md"), "{said}");

    // Writing again repairs both.
    assert!(majordomus_dev(&["docs", "--out", out_arg]).status.success());
    assert!(!out.join("gone.capability.md").exists());
    assert!(
        majordomus_dev(&["docs", "--out", out_arg, "--check"])
            .status
            .success()
    );
}

#[test]
fn generation_is_deterministic() {
    let first = docs::pages(majordomus_capabilities::registry());
    let second = docs::pages(majordomus_capabilities::registry());
    assert_eq!(first, second);
}
