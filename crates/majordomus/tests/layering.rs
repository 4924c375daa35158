//! Cargo keeps the crates in their layers: a crate depends only on crates below it, so none
//! can import one above. Inside a crate of several modules this test does the same for its
//! modules: they form layers, bottom to top, and a module uses only modules of the layers
//! below its own, so no cycle between them can form and each layer can be read, tested and
//! changed knowing only what lies beneath it. Two modules of one layer do not use each other
//! either; within one module its submodules use one another freely.
//!
//! For each crate of [`CRATES`] it reads every `.rs` file under its `src`, takes its module
//! from its path (`context/testing.rs` is in `context`), and collects every path it names
//! into another module: `crate::<module>` in `use` lines, groups and inline paths alike, and
//! `super::` chains that climb out of the module. A use of a module at the same layer or
//! above fails, naming the file, the line and both modules. A back-import such as this line
//! in `majordomus-core`'s `registry.rs`
//!
//! ```text
//! use crate::episodes;
//! ```
//!
//! fails with
//!
//! ```text
//! crates/majordomus-core/src/registry.rs:38: `registry` (layer 4) uses `episodes` (layer 5): a module uses only the layers below its own
//! ```
//!
//! In the capabilities, the server and the domain crates, the parts of the crate (its root
//! file, and each module with all under it) use one another in one direction only: a
//! circle between them fails, naming every use that closes it. Tests are not read for it:
//! they use what they test. An alias (`use crate as c`) is seen through, and a glob of the
//! crate's root fails.
//!
//! No file of the app's crates (`crates/majordomus*/src`) holds more than [`FILE_LINES`]
//! lines before its tests.
//!
//! `ARCHITECTURE.md` says the same as [`CRATES`], with why each layer sits where it does. A
//! new module needs a place in both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's modules in layers, bottom to top.
type Layers = &'static [&'static [&'static str]];

/// The crates of several modules, each with its layers.
const CRATES: &[(&str, Layers)] = &[
    (
        "majordomus-core",
        &[
            // Words and shapes every surface shares, and each client's contract.
            &["render", "stdio_front", "api", "clients"],
            // What a capability needs of this checkout's serving process.
            &["port"],
            // The site (checkout, configuration, what is kept of its reading) and a call's
            // context.
            &["context"],
            // Declarations and the erased capability; knows no capability.
            &["registry"],
            // Reading other checkouts' servers; the episode driver and its journal.
            &["survey", "episodes"],
        ],
    ),
    (
        "majordomus",
        &[
            // What runs over a server (the stdio bridge, the live board), the hook command,
            // and wiring clients.
            &["bridge", "watch", "hooks", "install"],
            // The fixed commands.
            &["commands"],
            // The command line.
            &["cli"],
            // The executable.
            &["main"],
        ],
    ),
];

/// The layer of `module` among `layers`, counted from 1.
fn layer_of(layers: Layers, module: &str) -> Option<usize> {
    layers
        .iter()
        .position(|layer| layer.contains(&module))
        .map(|at| at + 1)
}

/// One path of the crate that a file names, and where: from the crate's root,
/// `["capabilities", "board", "Board"]` for `crate::capabilities::board::Board`.
#[derive(Debug, PartialEq, Eq)]
struct Use {
    line: usize,
    path: Vec<String>,
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
    Star,
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
            '*' => {
                out.push((line, Token::Star));
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

/// The paths the use tree at `tokens[at]` names, each after `prefix`: `a::b`, `a::{b, c::d}`,
/// `a::{self, b}`, `a::*` (named as `a`); an inline path such as `a::b::f()` is a tree of one
/// path. `a as x` and `self as x` in a group also make `x` an alias of what they name.
/// Answers where the tree ends.
fn tree(
    tokens: &[(usize, Token)],
    mut at: usize,
    mut path: Vec<String>,
    found: &mut Vec<Use>,
    aliases: &mut Vec<(String, Vec<String>)>,
) -> usize {
    let is = |at: usize, token: &Token| tokens.get(at).is_some_and(|(_, t)| t == token);
    loop {
        match tokens.get(at) {
            Some((line, Token::Ident(word))) => {
                if word != "self" {
                    path.push(word.clone());
                }
                at += 1;
                if is(at, &Token::Ident("as".into()))
                    && let Some((_, Token::Ident(alias))) = tokens.get(at + 1)
                {
                    aliases.push((alias.clone(), path.clone()));
                    at += 2;
                } else if is(at, &Token::PathSep) {
                    at += 1;
                    continue;
                }
                found.push(Use { line: *line, path });
                return at;
            }
            Some((line, Token::Star)) => {
                found.push(Use { line: *line, path });
                return at + 1;
            }
            Some((_, Token::Open)) => {
                let mut depth = 0;
                let mut inner = at;
                while inner < tokens.len() {
                    match &tokens[inner].1 {
                        Token::Open => depth += 1,
                        Token::Close => {
                            depth -= 1;
                            if depth == 0 {
                                return inner + 1;
                            }
                        }
                        _ if depth == 1
                            && matches!(tokens[inner - 1].1, Token::Open | Token::Comma) =>
                        {
                            inner = tree(tokens, inner, path.clone(), found, aliases);
                            continue;
                        }
                        _ => {}
                    }
                    inner += 1;
                }
                return inner;
            }
            _ => return at,
        }
    }
}

/// Every path of the crate that a file at `module` names, from the crate's root: through
/// `crate::`, `super::` and `self::`, through an alias of any of them (`use crate as c`,
/// `extern crate self as c`, `use crate::server as s`), and, as the compiler resolves them,
/// through the name of one of the file's own submodules (`peers::PeersList` in
/// `capabilities/mod.rs`), which `modules` lists. Inline modules (`mod tests { … }`) count,
/// so `super::` inside one is read from where it stands.
fn uses(module: &[String], source: &str, modules: &BTreeSet<Vec<String>>) -> Vec<Use> {
    let tokens = tokens(source);
    let is = |at: usize, token: &Token| tokens.get(at).is_some_and(|(_, t)| t == token);
    let ident = |at: usize| match tokens.get(at) {
        Some((_, Token::Ident(word))) => Some(word.as_str()),
        _ => None,
    };
    let starts_path = |at: usize| at == 0 || !is(at - 1, &Token::PathSep);
    let mut aliases: Vec<(String, Vec<String>)> = Vec::new();
    // An alias may be used above the line that makes it: the first pass finds them all.
    for _pass in 0..2 {
        let known = std::mem::take(&mut aliases);
        let mut found = Vec::new();
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0;
        let mut pending_mod: Option<String> = None;
        let mut at = 0;
        while at < tokens.len() {
            let here: Vec<String> = module
                .iter()
                .cloned()
                .chain(inline.iter().map(|(name, _)| name.clone()))
                .collect();
            let base = match ident(at) {
                _ if !starts_path(at) => None,
                // `use crate as c;`, `extern crate self as c;`
                Some("crate") if ident(at + 1) == Some("as") => {
                    if let Some(alias) = ident(at + 2) {
                        aliases.push((alias.to_string(), Vec::new()));
                    }
                    None
                }
                Some("crate") if ident(at + 1) == Some("self") && ident(at + 2) == Some("as") => {
                    if let Some(alias) = ident(at + 3) {
                        aliases.push((alias.to_string(), Vec::new()));
                    }
                    None
                }
                _ if !is(at + 1, &Token::PathSep) => None,
                Some("crate") => Some((at + 2, Vec::new())),
                Some("self") => Some((at + 2, here.clone())),
                Some("super") => {
                    let mut climbs = 0;
                    let mut next = at;
                    while ident(next) == Some("super") && is(next + 1, &Token::PathSep) {
                        climbs += 1;
                        next += 2;
                    }
                    (climbs <= here.len()).then(|| (next, here[..here.len() - climbs].to_vec()))
                }
                Some(name) => match known.iter().find(|(alias, _)| alias == name) {
                    Some((_, path)) => Some((at + 2, path.clone())),
                    None if inline.is_empty()
                        && modules.contains(&[module, &[name.to_string()]].concat()) =>
                    {
                        Some((at, module.to_vec()))
                    }
                    None => None,
                },
                None => None,
            };
            if let Some((start, prefix)) = base {
                at = tree(&tokens, start, prefix, &mut found, &mut aliases).max(at + 1);
                continue;
            }
            match &tokens[at].1 {
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
                    if let Some(name) = ident(at + 1) {
                        pending_mod = Some(name.to_string());
                    }
                }
                _ => {}
            }
            at += 1;
        }
        if aliases.len() == known.len() {
            return found;
        }
    }
    unreachable!("the second pass knows every alias")
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

/// Every module path of `files`: each file's, and each folder's on the way to it.
fn modules_of(files: &[(PathBuf, String)]) -> BTreeSet<Vec<String>> {
    let mut modules = BTreeSet::new();
    for (relative, _) in files {
        let module = module_of(relative);
        for end in 0..=module.len() {
            modules.insert(module[..end].to_vec());
        }
    }
    modules
}

/// Every back-import among `files` (each a path under the `src` of `crate_name`, whose
/// modules lie in `layers`, and its text), as messages.
fn violations(crate_name: &str, layers: Layers, files: &[(PathBuf, String)]) -> Vec<String> {
    let modules = modules_of(files);
    let mut found = Vec::new();
    for (relative, source) in files {
        let module = module_of(relative);
        let Some(from) = module.first() else {
            continue;
        };
        let shown = Path::new("crates")
            .join(crate_name)
            .join("src")
            .join(relative);
        let Some(from_layer) = layer_of(layers, from) else {
            found.push(format!(
                "{}: `{from}` has no layer: give it one in CRATES and in ARCHITECTURE.md",
                shown.display()
            ));
            continue;
        };
        for Use { line, path } in uses(&module, source, &modules) {
            let Some(to) = path.first() else {
                found.push(format!(
                    "{}:{line}: `{from}` imports everything of the crate's root, which hides \
                     the modules it uses: name them",
                    shown.display()
                ));
                continue;
            };
            if to == from {
                continue;
            }
            match layer_of(layers, to) {
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

/// A file's text before its tests (`#[cfg(test)]` on a `mod … {`).
fn non_test(source: &str) -> &str {
    let mut offset = 0;
    let mut lines = source.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim_end() == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| is_inline_module(next))
        {
            return &source[..offset];
        }
        offset += line.len();
    }
    source
}

/// Whether `line` opens a module written inline, whatever its visibility (a test module
/// other files' tests borrow from is `pub(crate)`).
fn is_inline_module(line: &str) -> bool {
    let declared = line
        .strip_prefix("pub(crate) ")
        .or_else(|| line.strip_prefix("pub(super) "))
        .or_else(|| line.strip_prefix("pub "))
        .unwrap_or(line);
    declared.starts_with("mod ") && declared.trim_end().ends_with('{')
}

/// One file's use of another part of the module both are in.
struct Edge {
    to: String,
    at: String,
}

/// Every circle between the parts of one module under `roots` (the module's own file, and
/// each submodule with whatever lies under it), each as what it is and the uses that close
/// it: within such a module the parts use one another in one direction only, so each can be
/// read knowing only those it uses. `shown` is where `files` are (their paths are under it).
fn circles(files: &[(PathBuf, String)], shown: &str, roots: &[&[&str]]) -> Vec<String> {
    const OWN_FILE: &str = "(its own file)";
    let modules = modules_of(files);
    // Tests use what they test: only the code that is built is read.
    let test_only: BTreeSet<Vec<String>> = files
        .iter()
        .flat_map(|(relative, source)| {
            let module = module_of(relative);
            let lines: Vec<&str> = source.lines().collect();
            lines
                .windows(2)
                .filter(|pair| pair[0] == "#[cfg(test)]")
                .filter_map(|pair| pair[1].strip_prefix("mod ")?.strip_suffix(';'))
                .map(|name| [module.clone(), vec![name.to_string()]].concat())
                .collect::<Vec<_>>()
        })
        .collect();
    let checked = |module: &[String]| {
        roots
            .iter()
            .any(|root| module.len() >= root.len() && module[..root.len()] == root[..])
    };
    // For each module checked, its parts and who uses whom.
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeMap<String, Edge>>> =
        BTreeMap::new();
    for (relative, source) in files {
        let module = module_of(relative);
        if test_only.contains(&module) {
            continue;
        }
        for Use { line, path } in uses(&module, non_test(source), &modules) {
            for depth in 0..=module.len() {
                let parent = &module[..depth];
                if !checked(parent) || path.len() < depth || path[..depth] != *parent {
                    continue;
                }
                let part_of = |full: &[String]| match full.get(depth) {
                    Some(name)
                        if modules.contains(&[parent, std::slice::from_ref(name)].concat()) =>
                    {
                        name.clone()
                    }
                    _ => OWN_FILE.to_string(),
                };
                let (from, to) = (part_of(&module), part_of(&path));
                if from != to {
                    let at = format!("{shown}/{}:{line}", relative.display());
                    graphs
                        .entry(parent.to_vec())
                        .or_default()
                        .entry(from)
                        .or_default()
                        .entry(to.clone())
                        .or_insert(Edge { to, at });
                }
            }
        }
    }
    let mut found = Vec::new();
    for (parent, graph) in &graphs {
        let reaches = |start: &str| {
            let mut seen = BTreeSet::from([start.to_string()]);
            let mut queue = vec![start.to_string()];
            while let Some(part) = queue.pop() {
                for next in graph.get(&part).into_iter().flat_map(|edges| edges.keys()) {
                    if seen.insert(next.clone()) {
                        queue.push(next.clone());
                    }
                }
            }
            seen
        };
        let mut reported = BTreeSet::new();
        for part in graph.keys() {
            let circle: BTreeSet<String> = reaches(part)
                .into_iter()
                .filter(|other| reaches(other).contains(part))
                .collect();
            if circle.len() < 2 || !reported.insert(circle.clone()) {
                continue;
            }
            let uses: Vec<String> = circle
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .values()
                        .filter(|edge| circle.contains(&edge.to))
                        .map(move |edge| format!("{}: `{from}` uses `{}`", edge.at, edge.to))
                })
                .collect();
            let name = if parent.is_empty() {
                "the crate's root".to_string()
            } else {
                format!("`{}`", parent.join("::"))
            };
            found.push(format!(
                "in {name}, {} use one another in a circle: move what both need below them\n  {}",
                circle
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                uses.join("\n  ")
            ));
        }
    }
    found
}

/// Where the sources of the crate `name` are.
fn src_of(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

/// Every `.rs` file under `root`, by its path under `root`, with its text.
fn sources_under(root: &Path) -> Vec<(PathBuf, String)> {
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
    walk(root, root, &mut files);
    files
}

#[test]
fn no_two_files_of_one_module_use_each_other_in_a_circle() {
    const WHOLE_CRATE: &[&str] = &[];
    let mut found = Vec::new();
    for name in [
        "majordomus-capabilities",
        "majordomus-server",
        "majordomus-domain",
    ] {
        found.extend(circles(
            &sources_under(&src_of(name)),
            &format!("crates/{name}/src"),
            &[WHOLE_CRATE],
        ));
    }
    assert!(
        found.is_empty(),
        "{} circle(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn a_circle_fails_naming_its_parts_and_every_use_that_closes_it() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let files = [
        file(
            "server/mod.rs",
            "mod http;\nmod mcp;\npub use mcp::Worker;\n",
        ),
        file("server/http.rs", "use crate::server::mcp::Session;\n"),
        // An alias of the crate is seen through.
        file(
            "server/mcp.rs",
            "use crate as c;\nfn f() { c::server::http::route(); }\n",
        ),
        file("capabilities/board.rs", "use super::peers::PeerList;\n"),
        file("capabilities/peers.rs", "use super::board::Board;\n"),
    ];
    let messages = |files: &[(PathBuf, String)]| circles(files, "src", &[&["server"]]);
    assert_eq!(
        messages(&files),
        [
            "in `server`, `http`, `mcp` use one another in a circle: move what both need below \
          them\n  src/server/http.rs:1: `http` uses `mcp`\n  src/server/mcp.rs:2: `mcp` uses \
          `http`"
        ]
    );
    // A file that uses its module's own file, which uses it back, is in a circle too.
    let files = [
        file(
            "server/mod.rs",
            "mod http;\npub fn serve() { http::route(); }\n",
        ),
        file("server/http.rs", "use super::serve;\n"),
    ];
    assert_eq!(
        messages(&files),
        [
            "in `server`, `(its own file)`, `http` use one another in a circle: move what both \
          need below them\n  src/server/mod.rs:2: `(its own file)` uses `http`\n  \
          src/server/http.rs:1: `http` uses `(its own file)`"
        ]
    );
}

#[test]
fn an_alias_or_a_glob_of_the_crate_does_not_hide_a_back_import() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let (name, layers) = CRATES[0];
    let found = violations(
        name,
        layers,
        &[
            file(
                "render.rs",
                "use crate as c;\nfn f() { c::episodes::run(); }\n",
            ),
            file(
                "api.rs",
                "extern crate self as me;\nuse me::{port::BoardPort};\n",
            ),
            file("port.rs", "use crate::*;\n"),
        ],
    );
    assert_eq!(
        found,
        [
            "crates/majordomus-core/src/render.rs:2: `render` (layer 1) uses `episodes` (layer \
             5): a module uses only the layers below its own",
            "crates/majordomus-core/src/api.rs:2: `api` (layer 1) uses `port` (layer 2): a \
             module uses only the layers below its own",
            "crates/majordomus-core/src/port.rs:1: `port` imports everything of the crate's \
             root, which hides the modules it uses: name them",
        ]
    );
}

/// The most lines a file of the app's crates holds before its tests: past it a file holds
/// more than one concept, and is split by concept.
const FILE_LINES: usize = 800;

#[test]
fn no_file_of_the_app_crates_holds_more_than_800_lines_before_its_tests() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names: Vec<String> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("majordomus"))
        .collect();
    names.sort();
    let mut long = Vec::new();
    for name in &names {
        for (relative, source) in sources_under(&crates.join(name).join("src")) {
            let lines = non_test(&source).lines().count();
            if lines > FILE_LINES {
                long.push(format!(
                    "crates/{name}/src/{}: {lines} lines before its tests",
                    relative.display()
                ));
            }
        }
    }
    assert!(
        names.len() >= 4,
        "the app's crates were not found: {names:?}"
    );
    assert!(
        long.is_empty(),
        "over {FILE_LINES} lines: split by concept\n{}",
        long.join("\n")
    );
}

#[test]
fn a_file_is_counted_up_to_its_tests() {
    let source = "fn a() {}\n\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    assert_eq!(non_test(source).lines().count(), 2);
    let item_only = "#[cfg(test)]\nmod testing;\nfn a() {}\n";
    assert_eq!(non_test(item_only).lines().count(), 3);
    let shared = "fn a() {}\n#[cfg(test)]\npub(crate) mod tests {\n    pub fn t() {}\n}\n";
    assert_eq!(non_test(shared).lines().count(), 1);
}

#[test]
fn every_module_uses_only_the_layers_below_its_own() {
    let found: Vec<String> = CRATES
        .iter()
        .flat_map(|(name, layers)| violations(name, layers, &sources_under(&src_of(name))))
        .collect();
    assert!(
        found.is_empty(),
        "{} back-import(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_table_names_every_module_once_and_no_other() {
    for (name, layers) in CRATES {
        let modules: BTreeSet<String> = sources_under(&src_of(name))
            .iter()
            .filter_map(|(relative, _)| module_of(relative).into_iter().next())
            .collect();
        let listed: Vec<&str> = layers
            .iter()
            .flat_map(|layer| layer.iter().copied())
            .collect();
        let unique: BTreeSet<String> = listed.iter().map(|m| m.to_string()).collect();
        assert_eq!(
            listed.len(),
            unique.len(),
            "{name}: a module is listed twice"
        );
        assert_eq!(
            unique, modules,
            "{name}: CRATES and the modules under src differ"
        );
    }
}

#[test]
fn a_back_import_fails_naming_the_file_the_line_and_both_modules() {
    let file = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let (name, layers) = CRATES[0];
    let found = violations(
        name,
        layers,
        &[file(
            "registry/operation.rs",
            "//! Operations\n\nuse crate::context::Context;\nuse crate::episodes;\n",
        )],
    );
    assert_eq!(
        found,
        [
            "crates/majordomus-core/src/registry/operation.rs:4: `registry` (layer 4) uses \
             `episodes` (layer 5): a module uses only the layers below its own"
        ]
    );
}

#[test]
fn groups_inline_paths_and_climbing_supers_count_and_the_rest_does_not() {
    let module = |path: &str| module_of(Path::new(path));
    let named = |path: &str, text: &str| -> Vec<(usize, String)> {
        let module = module(path);
        let mut named: Vec<(usize, String)> = uses(&module, text, &BTreeSet::new())
            .into_iter()
            .filter_map(|found| Some((found.line, found.path.first()?.clone())))
            .filter(|(_, to)| Some(to) != module.first())
            .collect();
        named.dedup();
        named
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
