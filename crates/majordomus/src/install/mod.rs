//! `majordomus install` and `majordomus doctor`: wiring majordomus into each client's own
//! configuration — its MCP server entry, its hooks, and what the client needs to start the
//! server without a prompt — merged with what is there, idempotent, and undone exactly.

pub mod doctor;
pub mod document;
pub mod exclude;
pub mod file;
pub mod manifest;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use majordomus_checkout::git::{Checkout, list_worktrees};
use majordomus_checkout::lease::lease_path;
use similar::TextDiff;
use tempfile::NamedTempFile;

use document::{Document, EditError, Outcome};
use file::{Contents, Replaced};
use majordomus_core::clients::HookClient;
use majordomus_core::clients::wiring::{FileParts, Format, Places, Program, Scope};
use manifest::{Manifest, Restore};

/// What `majordomus install` was asked.
#[derive(Clone, Debug)]
pub struct Options {
    pub clients: Vec<HookClient>,
    pub scope: Scope,
    pub dry_run: bool,
    pub uninstall: bool,
    /// Replace (or remove) a majordomus entry someone wrote their own way.
    pub force: bool,
    /// A directory inside the checkout (project scope).
    pub dir: PathBuf,
}

/// The clients some words name (`all` naming every one), each once, in the order of
/// [`HookClient::ALL`]; `None` when a word names no client.
pub fn clients_named<'a>(words: impl IntoIterator<Item = &'a str>) -> Option<Vec<HookClient>> {
    let mut named = Vec::new();
    for word in words {
        match word {
            "all" => named.extend(HookClient::ALL),
            word => named.push(HookClient::from_word(word)?),
        }
    }
    Some(
        HookClient::ALL
            .into_iter()
            .filter(|client| named.contains(client))
            .collect(),
    )
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

    /// Where the scope's files may lead through links: the checkout (a cloned repository's
    /// link must not point install at the person's other files), or the user's home and
    /// Codex's own directory.
    fn bounds(&self) -> Vec<PathBuf> {
        match self.scope {
            Scope::Project => vec![self.places.root.clone()],
            Scope::User => vec![self.places.home.clone(), self.places.codex_home.clone()],
        }
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
    client: HookClient,
    file: FileParts,
    /// Where the file really is (links followed).
    real: PathBuf,
    /// What it held when it was read.
    read: Contents,
    /// `None`: the file is removed.
    after: Option<String>,
}

/// What install makes of a file's text.
struct Plan {
    after: Option<String>,
    /// A majordomus entry someone wrote their own way was kept.
    kept_own: bool,
}

/// What the file at `path` holds, for the clients' contracts to read (how Codex keeps its
/// hooks, whether a client trusts the project) and for `doctor`: links followed, never
/// waiting on a FIFO; nothing when it cannot be read.
pub(crate) fn read(path: &Path) -> Option<String> {
    file::read(path).ok().and_then(|contents| contents.text)
}

/// Everything majordomus puts into `client`'s configuration for `scope`, as its contract
/// says.
pub(crate) fn wiring(
    client: HookClient,
    scope: Scope,
    places: &Places,
    program: &Program,
) -> Vec<FileParts> {
    client.contract().wiring(scope, places, program, &read)
}

pub(crate) fn parse(file: &FileParts, text: Option<&str>) -> Result<Document, EditError> {
    match file.format {
        Format::Json => Document::json(text),
        Format::StrictJson => {
            if let Some(text) = text
                && let Err(error) = serde_json::from_str::<serde::de::IgnoredAny>(text)
            {
                return Err(EditError::NotStrict(error.to_string()));
            }
            Document::json(text)
        }
        Format::Toml => Document::toml(text),
    }
}

/// The file with majordomus wired in.
fn installed(file: &FileParts, text: Option<&str>, force: bool) -> Result<Plan, EditError> {
    let mut document = parse(file, text)?;
    let mut kept_own = false;
    for part in &file.parts {
        kept_own |= document.apply(part, force)? == Outcome::KeptOwn;
    }
    Ok(Plan {
        after: Some(document.text()),
        kept_own,
    })
}

/// The file with majordomus taken out: restored as it was when nobody touched it since
/// install, else with only majordomus's entries removed (and removed altogether when install
/// created it and nothing else is left in it).
fn uninstalled(
    file: &FileParts,
    text: Option<&str>,
    manifest: &Manifest,
    force: bool,
) -> Result<Plan, EditError> {
    let Some(text) = text else {
        return Ok(Plan {
            after: None,
            kept_own: false,
        });
    };
    let created = match manifest.restore(&file.path, Some(text)) {
        Restore::Original(original) => {
            return Ok(Plan {
                after: original,
                kept_own: false,
            });
        }
        Restore::TakeOut { created } => created,
    };
    let mut document = parse(file, Some(text))?;
    let mut kept_own = false;
    for part in &file.parts {
        kept_own |= document.remove(part, force)? == Outcome::KeptOwn;
    }
    let rest = document.text();
    let nothing_left = match file.format {
        Format::Json | Format::StrictJson => serde_json::from_str::<serde_json::Value>(&rest)
            .is_ok_and(|value| value.as_object().is_some_and(|object| object.is_empty())),
        Format::Toml => rest.trim().is_empty(),
    };
    Ok(Plan {
        after: if created && nothing_left {
            None
        } else {
            Some(rest)
        },
        kept_own,
    })
}

fn plan(
    file: &FileParts,
    text: Option<&str>,
    options: &Options,
    manifest: &Manifest,
) -> Result<Plan, EditError> {
    if options.uninstall {
        uninstalled(file, text, manifest, options.force)
    } else {
        installed(file, text, options.force)
    }
}

/// Runs `majordomus install` (or `--uninstall`), printing what it changed, or with
/// `--dry-run` the diff of what it would change.
///
/// In project scope every existing worktree of the repository is wired, the one asked in
/// first: each worktree has its own copy of the files, and a worktree left unwired is a
/// session nobody sees. The files that hold one person's approvals are kept out of git
/// through the repository's `info/exclude`.
pub fn run(options: &Options) -> Result<(), String> {
    if options.scope == Scope::User {
        return run_in(options);
    }
    let checkout = Checkout::discover(&options.dir)
        .map_err(|error| format!("cannot use {}: {error}", options.dir.display()))?;
    let mut problems = Vec::new();
    if let Err(problem) = run_in(options) {
        problems.push(problem);
    }
    for root in other_worktrees(&checkout) {
        majordomus_core::render::say!("in the worktree {}:", root.display());
        let options = Options {
            dir: root.clone(),
            ..options.clone()
        };
        if let Err(problem) = run_in(&options) {
            problems.push(format!("in the worktree {}: {problem}", root.display()));
        }
    }
    if !options.dry_run
        && let Some(common_dir) = &checkout.common_dir
    {
        // The files that hold one person's approvals, of every client named that has any.
        let approving: Vec<HookClient> = options
            .clients
            .iter()
            .copied()
            .filter(|client| !client.contract().personal_files().is_empty())
            .collect();
        let personal: Vec<&str> = approving
            .iter()
            .flat_map(|client| client.contract().personal_files().iter().copied())
            .collect();
        let named: Vec<&str> = approving.iter().map(|client| client.as_str()).collect();
        let named = named.join(", ");
        if !personal.is_empty() {
            match exclude::keep_out_of_git(common_dir, &personal, !options.uninstall) {
                Ok(true) if options.uninstall => majordomus_core::render::say!(
                    "{named}: {} no longer kept out of git in info/exclude",
                    personal.join(", ")
                ),
                Ok(true) => majordomus_core::render::say!(
                    "{named}: {} (one person's approvals) kept out of git in info/exclude",
                    personal.join(", ")
                ),
                Ok(false) => {}
                Err(error) => problems.push(format!("cannot edit info/exclude: {error}")),
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The roots of the repository's worktrees other than `checkout`'s, those whose directory is
/// still there, in git's order.
fn other_worktrees(checkout: &Checkout) -> Vec<PathBuf> {
    let Ok(worktrees) = list_worktrees(checkout) else {
        return Vec::new();
    };
    worktrees
        .iter()
        .filter(|worktree| !worktree.prunable)
        .map(|worktree| worktree.checkout(checkout).root)
        .filter(|root| *root != checkout.root && root.is_dir())
        .collect()
}

/// Install (or uninstall) in one checkout, or the user's scope.
fn run_in(options: &Options) -> Result<(), String> {
    let site = Site::new(&options.dir, options.scope)?;
    let bounds = site.bounds();
    let program = Program::this_executable();
    let loaded = Manifest::load(&site.manifest);
    let mut changes = Vec::new();
    let mut problems = Vec::new();
    let mut kept = Vec::new();
    for &client in &options.clients {
        for file in wiring(client, options.scope, &site.places, &program) {
            let shown = site.shown(&file.path);
            let located = file::locate(&file.path, &bounds).and_then(|real| {
                let read = file::read(&real)?;
                Ok((real, read))
            });
            let (real, read) = match located {
                Ok(located) => located,
                Err(error) => {
                    problems.push(format!("cannot use {shown}: {error}"));
                    continue;
                }
            };
            match plan(&file, read.text.as_deref(), options, &loaded) {
                Ok(plan) => {
                    if plan.kept_own {
                        let verb = if options.uninstall {
                            "remove"
                        } else {
                            "replace"
                        };
                        kept.push(format!(
                            "{client}: kept your own majordomus entry in {shown}; run with \
                             --force to {verb} it"
                        ));
                    }
                    if plan.after != read.text {
                        changes.push(Change {
                            client,
                            file,
                            real,
                            read,
                            after: plan.after,
                        });
                    }
                }
                Err(error) => problems.push(format!("cannot edit {shown}: {error}")),
            }
        }
    }
    if options.dry_run {
        for change in &changes {
            majordomus_core::render::say_part!("{}", diff(&site, change));
        }
    }
    let written = if options.dry_run || changes.is_empty() {
        BTreeSet::new()
    } else {
        write(&site, options, &loaded, &changes, &mut problems)
    };
    for line in &kept {
        majordomus_core::render::say!("{line}");
    }
    if changes.is_empty() && problems.is_empty() && kept.is_empty() {
        majordomus_core::render::say!("nothing to change");
    }
    if !options.uninstall && options.scope == Scope::Project {
        let wired_now = !written.is_empty();
        for client in written {
            if let Some(note) = client.contract().first_run_note() {
                majordomus_core::render::say!("{client}: {note}");
            }
        }
        if wired_now
            && let Ok(config) = majordomus_checkout::config::load_repository(&site.places.root)
        {
            majordomus_core::render::say!("{}", doctor::policy_line(config.hooks.policy));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The record of what install wrote once `written` are in place.
fn recorded(loaded: &Manifest, options: &Options, written: &[(&Change, Replaced)]) -> Manifest {
    let mut manifest = loaded.clone();
    for (change, replaced) in written {
        if options.uninstall {
            manifest.forget(&change.file.path);
        } else if let Some(after) = &replaced.after {
            manifest.wrote(&change.file.path, replaced.base.as_deref(), after);
        }
    }
    manifest
}

/// The record, written beside where it goes (`None`: nothing is recorded, the file goes).
fn stage_record(site: &Site, manifest: &Manifest) -> Result<Option<NamedTempFile>, String> {
    manifest
        .text()
        .map(|text| file::stage(&site.manifest, &text, &Contents::default()))
        .transpose()
        .map_err(|error| {
            format!(
                "cannot record what was installed in {}: {error}",
                site.manifest.display()
            )
        })
}

/// Writes every change, and the record of what was written; the clients whose files were
/// written. What could not be done is added to `problems`.
///
/// Every new text, and the record, is written and synced beside its file before any file is
/// replaced: a write that fails (a full disk) changes nothing. Each file is then replaced whole
/// (see [`file::replace`]), made again from what someone else wrote to it meanwhile.
fn write(
    site: &Site,
    options: &Options,
    loaded: &Manifest,
    changes: &[Change],
    problems: &mut Vec<String>,
) -> BTreeSet<HookClient> {
    match stage_and_replace(site, options, loaded, changes, problems) {
        Ok(clients) => clients,
        Err(problem) => {
            problems.push(problem);
            BTreeSet::new()
        }
    }
}

fn stage_and_replace(
    site: &Site,
    options: &Options,
    loaded: &Manifest,
    changes: &[Change],
    problems: &mut Vec<String>,
) -> Result<BTreeSet<HookClient>, String> {
    let mut staged = Vec::new();
    for change in changes {
        staged.push(match &change.after {
            Some(text) => Some(
                file::stage(&change.real, text, &change.read).map_err(|error| {
                    format!(
                        "cannot write {}: {error}; nothing was changed",
                        site.shown(&change.file.path)
                    )
                })?,
            ),
            None => None,
        });
    }
    let planned: Vec<(&Change, Replaced)> = changes
        .iter()
        .map(|change| {
            (
                change,
                Replaced {
                    base: change.read.text.clone(),
                    after: change.after.clone(),
                },
            )
        })
        .collect();
    let planned_record = recorded(loaded, options, &planned);
    let staged_record = stage_record(site, &planned_record)
        .map_err(|problem| format!("{problem}; nothing was changed"))?;

    let mut written = Vec::new();
    for (change, staged) in changes.iter().zip(staged) {
        let shown = site.shown(&change.file.path);
        let mut remake = |text: Option<&str>| {
            plan(&change.file, text, options, loaded)
                .map(|plan| plan.after)
                .map_err(|error| error.to_string())
        };
        match file::replace(
            &change.real,
            change.read.clone(),
            change.after.clone(),
            staged,
            &mut remake,
        ) {
            Ok(replaced) if replaced.after == replaced.base => {}
            Ok(replaced) => {
                let verb = match (&replaced.base, &replaced.after) {
                    (None, Some(_)) => "created",
                    (Some(_), None) => "removed",
                    _ => "updated",
                };
                majordomus_core::render::say!("{}: {verb} {shown}", change.client);
                if replaced.after.is_none() {
                    remove_empty_directory(
                        &change.file.path,
                        &[&site.places.root, &site.places.home],
                    );
                }
                written.push((change, replaced));
            }
            Err(error) => problems.push(format!("cannot write {shown}: {error}")),
        }
    }
    let clients = written.iter().map(|(change, _)| change.client).collect();
    let record = recorded(loaded, options, &written);
    let staged_record = if record == planned_record {
        staged_record
    } else {
        stage_record(site, &record)?
    };
    let saved = match staged_record {
        Some(staged) => file::put(staged, &site.manifest),
        None => match std::fs::remove_file(&site.manifest) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        },
    };
    saved.map_err(|error| {
        format!(
            "cannot record what was installed in {}: {error}",
            site.manifest.display()
        )
    })?;
    Ok(clients)
}

/// The client's directory install made for a file it removed (`.cursor/`, say) goes with it
/// once nothing else is in it; `keep` are the directories never removed however empty.
fn remove_empty_directory(removed: &Path, keep: &[&Path]) {
    if let Some(dir) = removed.parent()
        && !keep.contains(&dir)
        && std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
    {
        let _ = std::fs::remove_dir(dir);
    }
}

/// A unified diff of one change, as `--dry-run` prints it.
fn diff(site: &Site, change: &Change) -> String {
    let shown = site.shown(&change.file.path);
    let old = change.read.text.as_deref().unwrap_or("");
    let new = change.after.as_deref().unwrap_or("");
    let old_name = if change.read.text.is_some() {
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
