//! `majordomus install` and `majordomus doctor`: wiring majordomus into each client's own
//! configuration — its MCP server entry, its hooks, and what the client needs to start the
//! server without a prompt — merged with what is there, idempotent, and undone exactly.

pub mod doctor;
pub mod document;
pub mod manifest;
pub mod wiring;

use std::path::{Path, PathBuf};

use majordomus_checkout::git::Checkout;
use majordomus_checkout::lease::lease_path;
use similar::TextDiff;

use crate::capabilities::hooks::HookClient;
use document::{Document, EditError};
use manifest::{Manifest, Restore};
use wiring::{FileParts, Format, Places, Program, Scope, wiring};

/// What `majordomus install` was asked.
#[derive(Clone, Debug)]
pub struct Options {
    pub clients: Vec<HookClient>,
    pub scope: Scope,
    pub dry_run: bool,
    pub uninstall: bool,
    /// A directory inside the checkout (project scope).
    pub dir: PathBuf,
}

/// The clients a word names: one, or `all`.
pub fn clients_named(word: &str) -> Option<Vec<HookClient>> {
    match word {
        "all" => Some(HookClient::ALL.to_vec()),
        word => HookClient::from_word(word).map(|client| vec![client]),
    }
}

/// Where the configurations of a scope are, and where the record of what install wrote is.
pub struct Site {
    pub places: Places,
    pub manifest: PathBuf,
    scope: Scope,
}

impl Site {
    /// The places for `dir`'s checkout (project scope) or the user's home (user scope).
    pub fn new(dir: &Path, scope: Scope) -> Result<Site, String> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute())
            .ok_or("HOME is not set to an absolute directory")?;
        let codex_home = std::env::var_os("CODEX_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .unwrap_or_else(|| home.join(".codex"));
        let (root, manifest) = match scope {
            Scope::Project => {
                let checkout = Checkout::discover(dir)
                    .map_err(|error| format!("cannot use {}: {error}", dir.display()))?;
                let manifest = lease_path(&checkout).with_file_name("install.json");
                (checkout.root, manifest)
            }
            Scope::User => (home.clone(), manifest::user_manifest(&home)),
        };
        Ok(Site {
            places: Places {
                root,
                home,
                codex_home,
            },
            manifest,
            scope,
        })
    }

    /// A path as the person reads it: relative to the checkout (project) or `~` (user).
    pub fn shown(&self, path: &Path) -> String {
        let (base, prefix) = match self.scope {
            Scope::Project => (&self.places.root, ""),
            Scope::User => (&self.places.home, "~/"),
        };
        match path.strip_prefix(base) {
            Ok(relative) => format!("{prefix}{}", relative.display()),
            Err(_) => path.display().to_string(),
        }
    }
}

/// What one file comes to.
struct Change {
    path: PathBuf,
    before: Option<String>,
    /// `None`: the file is removed.
    after: Option<String>,
}

fn read(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            format!(
                "{} is not UTF-8 text; majordomus leaves it alone",
                path.display()
            )
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("cannot read {}: {error}", path.display())),
    }
}

fn parse(file: &FileParts, text: Option<&str>) -> Result<Document, EditError> {
    match file.format {
        Format::Json => Document::json(text),
        Format::Toml => Document::toml(text),
    }
}

/// The file with majordomus wired in.
fn installed(file: &FileParts, text: Option<&str>) -> Result<String, EditError> {
    let mut document = parse(file, text)?;
    for part in &file.parts {
        document.apply(part)?;
    }
    Ok(document.text())
}

/// The file with majordomus taken out: restored as it was when nobody touched it since
/// install, else with only majordomus's entries removed (and removed altogether when install
/// created it and nothing else is left in it).
fn uninstalled(
    file: &FileParts,
    text: &str,
    manifest: &Manifest,
) -> Result<Option<String>, EditError> {
    let created = match manifest.restore(&file.path, Some(text)) {
        Restore::Original(original) => return Ok(original),
        Restore::TakeOut { created } => created,
    };
    let mut document = parse(file, Some(text))?;
    for part in &file.parts {
        document.remove(part)?;
    }
    let rest = document.text();
    let nothing_left = match file.format {
        Format::Json => serde_json::from_str::<serde_json::Value>(&rest)
            .is_ok_and(|value| value.as_object().is_some_and(|object| object.is_empty())),
        Format::Toml => rest.trim().is_empty(),
    };
    Ok(if created && nothing_left {
        None
    } else {
        Some(rest)
    })
}

/// Runs `majordomus install` (or `--uninstall`), printing what it changed, or with
/// `--dry-run` the diff of what it would change.
pub fn run(options: &Options) -> Result<(), String> {
    let site = Site::new(&options.dir, options.scope)?;
    let program = Program::this_executable();
    let mut manifest = Manifest::load(&site.manifest);
    let mut changes = Vec::new();
    let mut problems = Vec::new();
    for &client in &options.clients {
        for file in wiring(client, options.scope, &site.places, &program) {
            let before = match read(&file.path) {
                Ok(before) => before,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            let after = if options.uninstall {
                match &before {
                    Some(text) => uninstalled(&file, text, &manifest),
                    None => Ok(None),
                }
            } else {
                installed(&file, before.as_deref()).map(Some)
            };
            match after {
                Ok(after) if after != before => changes.push((
                    client,
                    Change {
                        path: file.path.clone(),
                        before,
                        after,
                    },
                )),
                Ok(_) => {}
                Err(error) => {
                    problems.push(format!("cannot edit {}: {error}", site.shown(&file.path)))
                }
            }
        }
    }
    if options.dry_run {
        for (_, change) in &changes {
            print!("{}", diff(&site, change));
        }
    } else {
        for (client, change) in &changes {
            apply(change, &[&site.places.root, &site.places.home])
                .map_err(|error| format!("cannot write {}: {error}", site.shown(&change.path)))?;
            if options.uninstall {
                manifest.forget(&change.path);
            } else if let Some(after) = &change.after {
                manifest.wrote(&change.path, change.before.as_deref(), after);
            }
            let verb = match (&change.before, &change.after) {
                (None, Some(_)) => "created",
                (Some(_), None) => "removed",
                _ => "updated",
            };
            println!("{client}: {verb} {}", site.shown(&change.path));
        }
        manifest.save(&site.manifest).map_err(|error| {
            format!(
                "cannot record what was installed in {}: {error}",
                site.manifest.display()
            )
        })?;
    }
    if changes.is_empty() && problems.is_empty() {
        println!("nothing to change");
    }
    if !options.uninstall && !options.dry_run && options.scope == Scope::Project {
        for client in changes
            .iter()
            .map(|(client, _)| *client)
            .collect::<std::collections::BTreeSet<_>>()
        {
            if let Some(note) = doctor::first_run_note(client) {
                println!("{client}: {note}");
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Writes (or removes) the file; `keep` are the directories never removed however empty.
fn apply(change: &Change, keep: &[&Path]) -> std::io::Result<()> {
    match &change.after {
        Some(text) => {
            if let Some(dir) = change.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&change.path, text)
        }
        None => {
            std::fs::remove_file(&change.path)?;
            // The client's directory install made for the file (`.cursor/`, say) goes with it
            // once nothing else is in it.
            if let Some(dir) = change.path.parent()
                && !keep.contains(&dir)
                && std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
            {
                std::fs::remove_dir(dir)?;
            }
            Ok(())
        }
    }
}

/// A unified diff of one change, as `--dry-run` prints it.
fn diff(site: &Site, change: &Change) -> String {
    let shown = site.shown(&change.path);
    let old = change.before.as_deref().unwrap_or("");
    let new = change.after.as_deref().unwrap_or("");
    let old_name = if change.before.is_some() {
        format!("a/{shown}")
    } else {
        "/dev/null".to_string()
    };
    let new_name = if change.after.is_some() {
        format!("b/{shown}")
    } else {
        "/dev/null".to_string()
    };
    TextDiff::from_lines(old, new)
        .unified_diff()
        .header(&old_name, &new_name)
        .to_string()
}
