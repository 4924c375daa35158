//! `majordomus doctor`: for each client found on PATH or configured in the repository,
//! whether majordomus is wired into it (its server entry and its hooks, in the project or for
//! the user), and what to run when it is not; then what the repository's `majordomus.toml`
//! suggests (a federation, an episode command), whether the person allowed it, and how to.

use std::path::Path;

use majordomus_checkout::config;
use majordomus_checkout::git::Checkout;

use super::document::EditError;
use super::{Site, parse, read, wiring};
use majordomus_core::clients::wiring::{FileParts, Program, Scope};
use majordomus_core::clients::{HookClient, WillRun};

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
}

/// What of a scope's wiring is missing or unusable, one phrase per file, as the person reads
/// it.
fn missing(site: &Site, files: &[FileParts]) -> Vec<String> {
    files
        .iter()
        .filter_map(|file| {
            let shown = site.shown(&file.path);
            match parse(file, read(&file.path).as_deref()) {
                Ok(document) if file.parts.iter().all(|part| document.has(part)) => None,
                Ok(_) => Some(format!("{shown} lacks majordomus's part")),
                Err(EditError::NotStrict(_)) => Some(format!(
                    "{shown} has comments or trailing commas, so the client ignores it"
                )),
                Err(error) => Some(format!("{shown}: {error}")),
            }
        })
        .collect()
}

/// Runs `majordomus doctor` in `dir`'s checkout, then says how each other worktree of the
/// repository stands.
pub fn run(dir: &Path) -> Result<(), String> {
    let project = Site::new(dir, Scope::Project)?;
    let user = Site::new(dir, Scope::User)?;
    let program = Program::this_executable();
    let mut found_any = false;
    for client in HookClient::ALL {
        let contract = client.contract();
        let installed = contract.executables().iter().find(|name| on_path(name));
        let configured = contract
            .markers()
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
        let project_files = wiring(client, Scope::Project, &project.places, &program);
        let in_project = missing(&project, &project_files);
        let for_user = missing(&user, &wiring(client, Scope::User, &user.places, &program));
        let verdict = if in_project.is_empty() {
            "wired in this project".to_string()
        } else if for_user.is_empty() {
            "wired for this user".to_string()
        } else {
            format!(
                "not wired ({}): run `majordomus install {client}`",
                in_project.join("; ")
            )
        };
        majordomus_core::render::say!("{client} ({}): {verdict}", seen.join(", "));
        if in_project.is_empty() {
            match contract.will_run(&project.places, &project_files, &read) {
                WillRun::NotYet(step) => {
                    majordomus_core::render::say!("  but the client will not run it yet: {step}")
                }
                WillRun::Unchecked(note) => majordomus_core::render::say!("  {note}"),
                WillRun::Yes => {}
            }
        }
    }
    if !found_any {
        let words: Vec<&str> = HookClient::ALL
            .iter()
            .map(|client| client.as_str())
            .collect();
        majordomus_core::render::say!(
            "no client found on PATH or configured in this repository; `majordomus install \
             <{}>` wires one",
            words.join("|")
        );
    }
    other_worktrees(dir, &program)?;
    suggestions(dir);
    Ok(())
}

/// One line per other worktree of the repository: which clients are wired there, and which
/// of those will not run the wiring yet (an untrusted folder, hooks nobody reviewed).
fn other_worktrees(dir: &Path, program: &Program) -> Result<(), String> {
    let Ok(checkout) = Checkout::discover(dir) else {
        return Ok(());
    };
    for root in super::other_worktrees(&checkout) {
        let site = Site::new(&root, Scope::Project)?;
        let mut wired = Vec::new();
        let mut unwired = Vec::new();
        let mut not_run = Vec::new();
        for client in HookClient::ALL {
            let files = wiring(client, Scope::Project, &site.places, program);
            if !missing(&site, &files).is_empty() {
                unwired.push(client);
                continue;
            }
            wired.push(client);
            if let WillRun::NotYet(_) = client.contract().will_run(&site.places, &files, &read) {
                not_run.push(client);
            }
        }
        let named = |clients: &[HookClient]| {
            clients
                .iter()
                .map(|client| client.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let verdict = match (wired.is_empty(), unwired.is_empty()) {
            (true, _) => "not wired: `majordomus install` in any worktree wires them all".into(),
            (false, true) => format!("wired for {}", named(&wired)),
            (false, false) => format!("wired for {}; not for {}", named(&wired), named(&unwired)),
        };
        let verdict = if not_run.is_empty() {
            verdict
        } else {
            format!(
                "{verdict}; {} will not run it there yet (see above)",
                named(&not_run)
            )
        };
        majordomus_core::render::say!("worktree {}: {verdict}", root.display());
    }
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
            return majordomus_core::render::say!(
                "cannot read the configuration of {}: {error}",
                dir.display()
            );
        }
    };
    let config = match config::load(&checkout) {
        Ok(config) => config,
        Err(error) => {
            return majordomus_core::render::say!("the configuration cannot be used: {error}");
        }
    };
    majordomus_core::render::say!("{}", policy_line(config.hooks.policy));
    for (kind, suggested) in config.suggestions.made() {
        let described = kind.described();
        if suggested.allowed {
            majordomus_core::render::say!(
                "this repository suggests {described} ({}) in {}: allowed",
                suggested.shown,
                config::CONFIG_FILE
            );
        } else {
            majordomus_core::render::say!(
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
