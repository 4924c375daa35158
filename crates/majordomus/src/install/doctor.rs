//! `majordomus doctor`: for each client found on PATH or configured in the repository,
//! whether majordomus is wired into it (its server entry and its hooks, in the project or for
//! the user), and what to run when it is not; then what the repository's `majordomus.toml`
//! suggests (a federation, an episode command), whether the person allowed it, and how to.

use std::path::Path;

use majordomus_checkout::config;
use majordomus_checkout::git::Checkout;

use super::document::Document;
use super::wiring::{FileParts, Format, Program, Scope, wiring};
use super::{Site, read};
use crate::capabilities::hooks::HookClient;

/// The executables a client is run as.
fn executables(client: HookClient) -> &'static [&'static str] {
    match client {
        HookClient::ClaudeCode => &["claude"],
        HookClient::Codex => &["codex"],
        HookClient::GeminiCli => &["gemini"],
        HookClient::Cursor => &["cursor", "cursor-agent"],
    }
}

/// What in a repository shows a client is used there.
fn markers(client: HookClient) -> &'static [&'static str] {
    match client {
        HookClient::ClaudeCode => &[".mcp.json", ".claude"],
        HookClient::Codex => &[".codex"],
        HookClient::GeminiCli => &[".gemini"],
        HookClient::Cursor => &[".cursor"],
    }
}

/// What a client needs beyond its files the first time it meets majordomus in a project, in
/// a sentence; `None` when the files are all it needs.
pub fn first_run_note(client: HookClient) -> Option<&'static str> {
    match client {
        HookClient::ClaudeCode => None,
        HookClient::Codex => Some(
            "Codex reads a project's .codex/ only in a project it trusts, and runs new hooks once \
             they are reviewed (`/hooks` in Codex)",
        ),
        HookClient::GeminiCli => Some(
            "Gemini CLI starts a project's MCP servers only in a trusted folder; run `gemini \
             trust` here if it says the folder is not trusted",
        ),
        HookClient::Cursor => {
            Some("Cursor may ask once to enable the project's server (Settings, MCP)")
        }
    }
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
}

/// What of a scope's wiring is missing: the files that lack a part, as the person reads them.
fn missing(site: &Site, files: &[FileParts]) -> Vec<String> {
    files
        .iter()
        .filter(|file| {
            let text = read(&file.path);
            let document = match file.format {
                Format::Json => Document::json(text.as_deref()),
                Format::Toml => Document::toml(text.as_deref()),
            };
            !document.is_ok_and(|document| file.parts.iter().all(|part| document.has(part)))
        })
        .map(|file| site.shown(&file.path))
        .collect()
}

/// Runs `majordomus doctor` in `dir`'s checkout.
pub fn run(dir: &Path) -> Result<(), String> {
    let project = Site::new(dir, Scope::Project)?;
    let user = Site::new(dir, Scope::User)?;
    let program = Program::this_executable();
    let mut found_any = false;
    for client in HookClient::ALL {
        let installed = executables(client).iter().find(|name| on_path(name));
        let configured = markers(client)
            .iter()
            .any(|marker| project.places.root.join(marker).exists());
        if installed.is_none() && !configured {
            continue;
        }
        found_any = true;
        let mut seen = Vec::new();
        if let Some(name) = installed {
            seen.push(format!("`{name}` on PATH"));
        }
        if configured {
            seen.push("configured in this repository".to_string());
        }
        let in_project = missing(
            &project,
            &wiring(client, Scope::Project, &project.places, &program),
        );
        let for_user = missing(&user, &wiring(client, Scope::User, &user.places, &program));
        let verdict = if in_project.is_empty() {
            "wired in this project".to_string()
        } else if for_user.is_empty() {
            "wired for this user".to_string()
        } else {
            format!(
                "not wired ({} {} majordomus's part): run `majordomus install {client}`",
                in_project.join(", "),
                if in_project.len() == 1 {
                    "lacks"
                } else {
                    "lack"
                }
            )
        };
        crate::say!("{client} ({}): {verdict}", seen.join(", "));
        if in_project.is_empty()
            && let Some(note) = first_run_note(client)
        {
            crate::say!("  {note}");
        }
    }
    if !found_any {
        crate::say!(
            "no client found on PATH or configured in this repository; `majordomus install \
             <claude-code|codex|gemini-cli|cursor>` wires one"
        );
    }
    suggestions(dir);
    Ok(())
}

/// The guard's policy in force, and what it does.
pub fn policy_line(policy: config::GuardPolicy) -> String {
    format!(
        "the guard's policy is `{}` (`[hooks] policy` in {}): {}",
        policy.as_str(),
        config::CONFIG_FILE,
        policy.meaning()
    )
}

/// Says what the repository's `majordomus.toml` suggests, whether each suggestion is allowed,
/// and the command that allows it; or why the configuration cannot be used.
fn suggestions(dir: &Path) {
    let checkout = match Checkout::discover(dir) {
        Ok(checkout) => checkout,
        Err(error) => {
            return println!(
                "cannot read the configuration of {}: {error}",
                dir.display()
            );
        }
    };
    let config = match config::load(&checkout) {
        Ok(config) => config,
        Err(error) => return println!("the configuration cannot be used: {error}"),
    };
    println!("{}", policy_line(config.hooks.policy));
    for (kind, suggested) in config.suggestions.made() {
        let described = kind.described();
        if suggested.allowed {
            println!(
                "this repository suggests {described} ({}) in {}: allowed",
                suggested.shown,
                config::CONFIG_FILE
            );
        } else {
            println!(
                "this repository suggests {described} ({}) in {}: not allowed, so not used; \
                 to allow it, run `majordomus allow {} --repo {}`",
                suggested.shown,
                config::CONFIG_FILE,
                kind.word(),
                majordomus_domain::text::for_terminal(&shell_word(
                    &checkout.root.to_string_lossy()
                ))
            );
        }
    }
}

/// `word` as a shell reads it back: as it is when it holds nothing the shell would read
/// otherwise, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
