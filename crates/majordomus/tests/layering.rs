//! The modules of the app crate form layers, bottom to top, and a module uses only modules of
//! the layers below its own: no cycle between modules can form, and each layer can be read,
//! tested and changed knowing only what lies beneath it. Two modules of one layer do not use
//! each other either; within one module its submodules use one another freely.
//!
//! This test reads every `.rs` file under `crates/majordomus/src`, takes its module from its
//! path (`capabilities/hooks/facts.rs` is in `capabilities`), and collects every path it
//! names into another module: `crate::<module>` in `use` lines, groups and inline paths
//! alike, and `super::` chains that climb out of the module. A use of a module at the same
//! layer or above fails, naming the file, the line and both modules. A back-import such as
//! this line in `capabilities/peers.rs`
//!
//! ```text
//! use crate::cli;
//! ```
//!
//! fails with
//!
//! ```text
//! crates/majordomus/src/capabilities/peers.rs:38: `capabilities` (layer 7) uses `cli` (layer 12): a module uses only the layers below its own
//! ```
//!
//! The table is [`LAYERS`]; `ARCHITECTURE.md` says the same, with why each layer sits where
//! it does. A new module needs a place in both.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers, bottom to top.
const LAYERS: &[&[&str]] = &[
    // Words and shapes every surface shares, and each client's contract; they use nothing
    // of the crate.
    &["render", "stdio_front", "api", "clients"],
    // Other machines' boards, and the link that publishes any board to them.
    &["federation"],
    // What a capability needs of this checkout's serving process.
    &["port"],
    // The site (checkout, configuration, what is kept of its reading) and a call's context.
    &["context"],
    // Declarations and the erased capability; knows no capability.
    &["registry"],
    // Reading other checkouts' servers; the episode driver and its journal.
    &["survey", "episodes"],
    // The capabilities, the boards they read, and the registry of the build.
    &["capabilities"],
    // Projections of the capabilities that need no server, and the hook command.
    &["resources", "openapi", "hooks"],
    // The serving process: it implements the port and dispatches to the capabilities.
    &["server"],
    // What runs over a server: the stdio bridge, the live board for people.
    &["bridge", "watch"],
    // Wiring clients, and the fixed commands.
    &["install", "commands"],
    // The command line.
    &["cli"],
    // The executable.
    &["main"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .map(|at| at + 1)
}

/// One module that a file names, and where.
#[derive(Debug, PartialEq, Eq)]
struct Use {
    line: usize,
    module: String,
}

/// A token of Rust source, with its line; comments, strings and characters are dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Other,
}

/// Splits Rust source into the tokens a path is made of. Comments and literals go, so a path
/// written in a doc comment or a message is not a use, and braces inside a string never
/// unbalance the nesting of modules.
fn tokens(source: &str) -> Vec<(usize, Token)> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    // Skips a string body from after its opening quote, with `hashes` closing hashes.
    let skip_string = |i: &mut usize, line: &mut usize, raw: bool, hashes: usize| {
        while *i < chars.len() {
            let c = chars[*i];
            if c == '\n' {
                *line += 1;
            }
            if c == '\\' && !raw {
                if chars.get(*i + 1) == Some(&'\n') {
                    *line += 1;
                }
                *i += 2;
                continue;
            }
            *i += 1;
            if c == '"'
                && chars[*i..]
                    .iter()
                    .take(hashes)
                    .filter(|&&h| h == '#')
                    .count()
                    == hashes
            {
                *i += hashes;
                return;
            }
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if chars[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            '"' => {
                i += 1;
                skip_string(&mut i, &mut line, false, 0);
                out.push((line, Token::Other));
            }
            '\'' => {
                // A character literal ('x', '\n', '\u{1b}') or a lifetime ('a).
                if next == Some('\\') {
                    // The quote, the backslash and the escaped character, then to the close.
                    i += 3;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
                out.push((line, Token::Other));
            }
            ':' if next == Some(':') => {
                out.push((line, Token::PathSep));
                i += 2;
            }
            '{' => {
                out.push((line, Token::Open));
                i += 1;
            }
            '}' => {
                out.push((line, Token::Close));
                i += 1;
            }
            ',' => {
                out.push((line, Token::Comma));
                i += 1;
            }
            ';' => {
                out.push((line, Token::Semi));
                i += 1;
            }
            c if is_ident(c) => {
                let start = i;
                while i < chars.len() && is_ident(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let prefix = matches!(word.as_str(), "r" | "b" | "br" | "c" | "cr");
                let raw = word.ends_with('r');
                if prefix && chars.get(i) == Some(&'"') {
                    i += 1;
                    skip_string(&mut i, &mut line, raw, 0);
                    out.push((line, Token::Other));
                } else if prefix && raw && chars.get(i) == Some(&'#') {
                    let hashes = chars[i..].iter().take_while(|&&h| h == '#').count();
                    if chars.get(i + hashes) == Some(&'"') {
                        i += hashes + 1;
                        skip_string(&mut i, &mut line, true, hashes);
                        out.push((line, Token::Other));
                    } else {
                        // A raw identifier, `r#type`.
                        i += 1;
                    }
                } else if word == "b" && chars.get(i) == Some(&'\'') {
                    // A byte literal: its quote is read as a character literal next.
                } else {
                    out.push((line, Token::Ident(word)));
                }
            }
            _ => {
                out.push((line, Token::Other));
                i += 1;
            }
        }
    }
    out
}

/// The first segment of each path of a `{…}` group that starts at `tokens[open]`.
fn group_heads(tokens: &[(usize, Token)], open: usize) -> Vec<(usize, String)> {
    let mut heads = Vec::new();
    let mut depth = 0;
    for at in open..tokens.len() {
        match &tokens[at].1 {
            Token::Open => depth += 1,
            Token::Close => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            Token::Ident(word)
                if depth == 1
                    && word != "self"
                    && matches!(tokens[at - 1].1, Token::Open | Token::Comma) =>
            {
                heads.push((tokens[at].0, word.clone()));
            }
            _ => {}
        }
    }
    heads
}

/// The modules of the crate a file at `module` names outside `module[0]` itself: through
/// `crate::`, or through `super::` chains that climb to the crate's root. Inline modules
/// (`mod tests { … }`) count, so `super::` inside one is read from where it stands.
fn uses(module: &[String], source: &str) -> Vec<Use> {
    let tokens = tokens(source);
    let mut found = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut pending_mod: Option<String> = None;
    let is = |at: usize, token: &Token| tokens.get(at).is_some_and(|(_, t)| t == token);
    let starts_path = |at: usize| at == 0 || !is(at - 1, &Token::PathSep);
    let named = |line: usize, at: usize, found: &mut Vec<Use>| match tokens.get(at) {
        Some((_, Token::Ident(word))) => found.push(Use {
            line,
            module: word.clone(),
        }),
        Some((_, Token::Open)) => {
            for (line, word) in group_heads(&tokens, at) {
                found.push(Use { line, module: word });
            }
        }
        _ => {}
    };
    for at in 0..tokens.len() {
        let (line, token) = &tokens[at];
        match token {
            Token::Open => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
            }
            Token::Close => {
                if inline
                    .last()
                    .is_some_and(|(_, at_depth)| *at_depth == depth)
                {
                    inline.pop();
                }
                depth -= 1;
            }
            Token::Semi => pending_mod = None,
            Token::Ident(word) if word == "mod" => {
                if let Some((_, Token::Ident(name))) = tokens.get(at + 1) {
                    pending_mod = Some(name.clone());
                }
            }
            Token::Ident(word)
                if word == "crate" && starts_path(at) && is(at + 1, &Token::PathSep) =>
            {
                named(*line, at + 2, &mut found);
            }
            Token::Ident(word)
                if word == "super" && starts_path(at) && is(at + 1, &Token::PathSep) =>
            {
                let mut climbs = 0;
                let mut next = at;
                while matches!(&tokens.get(next), Some((_, Token::Ident(w))) if w == "super")
                    && is(next + 1, &Token::PathSep)
                {
                    climbs += 1;
                    next += 2;
                }
                let here: Vec<&String> = module
                    .iter()
                    .chain(inline.iter().map(|(name, _)| name))
                    .collect();
                if climbs >= here.len() {
                    named(*line, next, &mut found);
                }
            }
            _ => {}
        }
    }
    found
}

/// The module path of a file under `src`: `capabilities/hooks/mod.rs` is
/// `capabilities::hooks`, `cli.rs` is `cli`, the library's root is empty.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().expect("a file has a name");
    match file.as_str() {
        "mod.rs" | "lib.rs" => {}
        _ => parts.push(file.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// Every back-import among `files` (each a path under `src` and its text), as messages.
fn violations(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (relative, source) in files {
        let module = module_of(relative);
        let Some(from) = module.first() else {
            continue;
        };
        let shown = Path::new("crates/majordomus/src").join(relative);
        let Some(from_layer) = layer_of(from) else {
            found.push(format!(
                "{}: `{from}` has no layer: give it one in LAYERS and in ARCHITECTURE.md",
                shown.display()
            ));
            continue;
        };
        for Use { line, module: to } in uses(&module, source) {
            if &to == from {
                continue;
            }
            match layer_of(&to) {
                None => found.push(format!(
                    "{}:{line}: `{from}` uses `{to}`, which has no layer",
                    shown.display()
                )),
                Some(to_layer) if to_layer >= from_layer => found.push(format!(
                    "{}:{line}: `{from}` (layer {from_layer}) uses `{to}` (layer {to_layer}): \
                     a module uses only the layers below its own",
                    shown.display()
                )),
                Some(_) => {}
            }
        }
    }
    found
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src`, by its path under `src`, with its text.
fn sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, root: &Path, into: &mut Vec<(PathBuf, String)>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, root, into);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                into.push((path.strip_prefix(root).unwrap().to_path_buf(), text));
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &src(), &mut files);
    files
}

#[test]
fn every_module_uses_only_the_layers_below_its_own() {
    let found = violations(&sources());
    assert!(
        found.is_empty(),
        "{} back-import(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_table_names_every_module_once_and_no_other() {
    let modules: BTreeSet<String> = sources()
        .iter()
        .filter_map(|(relative, _)| module_of(relative).into_iter().next())
        .collect();
    let listed: Vec<&str> = LAYERS
        .iter()
        .flat_map(|layer| layer.iter().copied())
        .collect();
    let unique: BTreeSet<String> = listed.iter().map(|m| m.to_string()).collect();
    assert_eq!(listed.len(), unique.len(), "a module is listed twice");
    assert_eq!(unique, modules, "LAYERS and the modules under src differ");
}

#[test]
fn a_back_import_fails_naming_the_file_the_line_and_both_modules() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let found = violations(&[file(
        "capabilities/peers.rs",
        "//! `peers.list`\n\nuse crate::registry::Operation;\nuse crate::cli;\n",
    )]);
    assert_eq!(
        found,
        [
            "crates/majordomus/src/capabilities/peers.rs:4: `capabilities` (layer 7) uses `cli` \
          (layer 12): a module uses only the layers below its own"
        ]
    );
}

#[test]
fn groups_inline_paths_and_climbing_supers_count_and_the_rest_does_not() {
    let module = |path: &str| module_of(Path::new(path));
    let named = |path: &str, text: &str| -> Vec<(usize, String)> {
        uses(&module(path), text)
            .into_iter()
            .map(|found| (found.line, found.module))
            .collect()
    };
    let text = "use crate::{context::Site,\n    server::{self, run}};\n\
                fn f() { crate::watch::peers(); }\n\
                // crate::cli in a comment\n\
                const S: &str = \"crate::cli { in a string\";\n\
                const C: char = '{';\n\
                fn g<'a>(x: &'a str) {}\n\
                pub(crate) fn h() {}\n";
    assert_eq!(
        named("capabilities/peers.rs", text),
        [
            (1, "context".to_string()),
            (2, "server".to_string()),
            (3, "watch".to_string())
        ]
    );
    // `super` inside the file's own module, or an inline one, stays in the module.
    let tests = "mod tests {\n    use super::*;\n    use super::super::board::Board;\n}\n";
    assert_eq!(named("capabilities/peers.rs", tests), []);
    // From a module's root file, `super` is the crate: it names another module.
    assert_eq!(
        named("federation/mod.rs", "use super::server::ServerState;\n"),
        [(1, "server".to_string())]
    );
    assert_eq!(
        named(
            "capabilities/hooks/facts.rs",
            "use super::super::super::cli;\n"
        ),
        [(1, "cli".to_string())]
    );
}
