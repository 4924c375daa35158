//! `majordomus.toml`: the optional, team-shared settings at the repository root, and the
//! user's own configuration file beside it. Every setting has a default, so no file is needed;
//! a file with a typo is an error rather than a setting silently ignored.
//!
//! A repository's file is shared through git: a clone or a pull request can write anything
//! into it, so it is never trusted. It may set timings and limits, each within its bounds
//! (refused outside them, naming the bounds), the guard's policy, and names. It never names
//! credentials, which are read from the user's own file alone and sent only to the server that
//! file names. What would send this machine's boards elsewhere or run a program — a
//! `[federation]` section, an `[episodes] command` — is a suggestion, in effect only once the
//! person allowed that exact suggestion for the repository ([`crate::allowances`]); until
//! then everything runs as if the repository suggested nothing.

use std::fs;
use std::io;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::allowances::{self, Allowances, Suggestion};
use crate::git::Checkout;

mod federation;
mod leases;

pub use federation::{
    DEFAULT_FEDERATION_TTL_SECS, FEDERATION_NAME_CHARS, FEDERATION_TTL_SECS, FederationConfig,
};
pub use leases::{LeaseCommands, LeasesConfig};

/// The file name looked for at the repository root.
pub const CONFIG_FILE: &str = "majordomus.toml";

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub timings: Timings,
    pub limits: Limits,
    pub episodes: EpisodesConfig,
    pub changes: ChangesConfig,
    pub hooks: HooksConfig,
    pub leases: LeasesConfig,
    /// Once loaded, the federation in effect: the user's own, or the repository's once
    /// allowed.
    pub federation: FederationConfig,
    /// The person's own notices, from the user's file alone ([`NotifyConfig`]).
    #[serde(skip)]
    pub notify: NotifyConfig,
    /// A `[notify]` section in a repository's file, read only to be refused by name.
    #[serde(rename = "notify")]
    notify_in_repository: Option<Refused>,
    /// What the repository's file suggests, whether or not it is in effect.
    #[serde(skip)]
    pub suggestions: Suggestions,
}

/// `[notify]`, in the user's own file only: a desktop notice runs a program on this machine
/// (`notify-send`, `osascript`, PowerShell), which no cloned repository may turn on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotifyConfig {
    /// Whether the person is told on the desktop, once per reason, when a session begins to
    /// wait for them (a permission prompt, a question, a finished turn, a guard's refusal).
    pub desktop: bool,
}

/// A section a repository's file may not hold, whatever it says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
struct Refused {}

/// What a repository's file suggests that takes effect only once the person allows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Suggestions {
    /// Its `[federation]` section, when it has one.
    pub federation: Option<Suggested>,
    /// Its `[episodes] command`, when it sets one.
    pub episodes_command: Option<Suggested>,
}

impl Suggestions {
    /// The suggestion of this kind, if the repository makes it.
    pub fn of(&self, kind: Suggestion) -> Option<&Suggested> {
        match kind {
            Suggestion::Federation => self.federation.as_ref(),
            Suggestion::EpisodesCommand => self.episodes_command.as_ref(),
        }
    }

    /// Each suggestion made, with what it is.
    pub fn made(&self) -> impl Iterator<Item = (Suggestion, &Suggested)> {
        Suggestion::all()
            .iter()
            .filter_map(|&kind| Some((kind, self.of(kind)?)))
    }
}

/// One suggestion of a repository's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggested {
    /// The suggestion as the person reads it: the server's address, the command line.
    pub shown: String,
    /// The digest of the exact suggestion, which an allowance names.
    pub digest: String,
    /// Whether the person allowed this exact suggestion for this repository.
    pub allowed: bool,
}

/// `[hooks]`: what the client hooks (`majordomus hook`) do for this repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HooksConfig {
    /// What the pre-edit guard does when the file about to change is claimed by another
    /// session, or a shell command needs a lease another session holds (`[leases.commands]`):
    /// stop it before it runs (`guard`, the default), tell the agent (`warn`), ask the person
    /// (`ask`), refuse it (`deny`), or nothing (`off`).
    pub policy: GuardPolicy,
    /// How long a hook may take, from its start to its answer, before it gives up and lets
    /// the client carry on as if majordomus were absent. At most [`HOOK_BUDGET_MS`]'s end.
    pub budget_ms: u64,
    /// How long a session seen only through its hooks stays on the board after its last hook.
    pub session_idle_secs: u64,
}

/// What the pre-edit guard does about another session's claim on the file being edited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum GuardPolicy {
    /// A live other session's claim stops the edit before it is written: the person is
    /// asked where the client has one to ask, the edit refused where it has none (a
    /// headless run, Codex). A departed session's claim is a line of context.
    #[default]
    Guard,
    /// A line of context for the agent naming the other session; the edit goes ahead.
    Warn,
    /// The person is asked before the edit, where the client can ask; elsewhere a warning.
    Ask,
    /// The edit is refused, with the other session named as the reason.
    Deny,
    /// The guard says nothing.
    Off,
}

impl GuardPolicy {
    /// The word `majordomus.toml` writes it as.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// What the guard does under this policy, in a person's words.
    pub fn meaning(self) -> &'static str {
        match self {
            GuardPolicy::Guard => {
                "a live session's claimed file is stopped before the write (the person is \
                 asked where the client can ask, the edit refused where it cannot); another \
                 worktree's uncommitted change or a predicted conflict refuses the first \
                 attempt only"
            }
            GuardPolicy::Warn => "the agent is told of other sessions' claims; nothing is refused",
            GuardPolicy::Ask => "the person is asked before a claimed file is edited",
            GuardPolicy::Deny => "an edit that meets anything the guard finds is refused",
            GuardPolicy::Off => "the guard says nothing",
        }
    }
}

impl Default for HooksConfig {
    fn default() -> HooksConfig {
        HooksConfig {
            policy: GuardPolicy::Guard,
            budget_ms: 500,
            session_idle_secs: 600,
        }
    }
}

impl HooksConfig {
    pub fn budget(&self) -> Duration {
        Duration::from_millis(self.budget_ms)
    }

    pub fn session_idle(&self) -> Duration {
        Duration::from_secs(self.session_idle_secs)
    }
}

/// `[changes]`: how each worktree's own changes are read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChangesConfig {
    /// The branch a worktree's committed changes are counted from (their merge base with
    /// it). By default: what `origin/HEAD` names, else `main`, else `master`.
    pub default_branch: Option<String>,
}

/// `[timings]`: how long majordomus waits for what.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Timings {
    /// How long a probe of a sibling's server may take before it counts as not answering.
    pub probe_timeout_ms: u64,
    /// How long an MCP-over-HTTP session may stay silent before it is dropped.
    pub idle_timeout_secs: u64,
    /// How long a detached episode waits for its client to come back before it is closed.
    pub reattach_grace_secs: u64,
    /// How long a departed peer's claims stay on the board before they are released; by
    /// default as long as the reattach grace, so a returning client finds its claims where
    /// it left them.
    pub claim_grace_secs: Option<u64>,
    /// How long a silent server whose process runs is waited for before its lease is taken.
    pub busy_grace_ms: u64,
    /// How long a lease may go without a URL before its owner counts as abandoned.
    pub starting_grace_ms: u64,
    /// How long `serve stop` waits for a server to exit.
    pub stop_timeout_ms: u64,
    /// How long an HTTP client may take to send a request's headers, from its connection (or
    /// the first byte of its next request) on; a connection that has not finished them by
    /// then is closed.
    pub header_timeout_ms: u64,
    /// How long a bridge's session may go without a message before its server takes the
    /// bridge for dead and lets its peer go. A bridge pings a third of this apart.
    pub bridge_silence_ms: u64,
    /// How long an MCP-over-HTTP session may go without a request or an open stream before
    /// it is parked: its running session is let go and brought back, unseen by its client,
    /// at its next request; its peer stays on the board. Zero never parks.
    pub session_park_secs: u64,
}

/// How many MCP-over-HTTP sessions a server holds at once by default, parked ones included.
/// A live session costs about 100 KB and a parked one a few hundred bytes, so the limit keeps
/// a runaway or hostile client near 100 MB; real repositories see a handful of agents.
pub const DEFAULT_MCP_SESSIONS: usize = 1_000;

/// `[limits]`: how much a server takes on at once.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// The most MCP-over-HTTP sessions open at once; a new one beyond it is refused (503).
    pub mcp_sessions: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            mcp_sessions: DEFAULT_MCP_SESSIONS,
        }
    }
}

/// `[episodes]`: the repository's own episode driver, if any.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EpisodesConfig {
    /// Program and arguments run with each episode event as JSON on stdin, in place of the
    /// built-in journal. Once loaded, set only when the person allowed the repository's
    /// suggestion of it.
    pub command: Option<Vec<String>>,
    /// How long one run of the command may take.
    pub timeout_ms: u64,
}

impl Default for Timings {
    fn default() -> Timings {
        Timings {
            probe_timeout_ms: 300,
            idle_timeout_secs: 90,
            reattach_grace_secs: 900,
            claim_grace_secs: None,
            busy_grace_ms: 2_000,
            starting_grace_ms: 10_000,
            stop_timeout_ms: 3_000,
            header_timeout_ms: 5_000,
            bridge_silence_ms: 5_000,
            session_park_secs: 20,
        }
    }
}

impl Timings {
    pub fn probe_timeout(&self) -> Duration {
        Duration::from_millis(self.probe_timeout_ms)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    pub fn session_park(&self) -> Duration {
        Duration::from_secs(self.session_park_secs)
    }

    pub fn reattach_grace(&self) -> Duration {
        Duration::from_secs(self.reattach_grace_secs)
    }

    pub fn claim_grace(&self) -> Duration {
        Duration::from_secs(self.claim_grace_secs.unwrap_or(self.reattach_grace_secs))
    }

    pub fn busy_grace(&self) -> Duration {
        Duration::from_millis(self.busy_grace_ms)
    }

    pub fn starting_grace(&self) -> Duration {
        Duration::from_millis(self.starting_grace_ms)
    }

    pub fn stop_timeout(&self) -> Duration {
        Duration::from_millis(self.stop_timeout_ms)
    }

    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.header_timeout_ms)
    }

    pub fn bridge_silence(&self) -> Duration {
        Duration::from_millis(self.bridge_silence_ms)
    }

    /// How often a bridge pings its server: three pings fit in the silence its server allows.
    pub fn bridge_ping_interval(&self) -> Duration {
        self.bridge_silence() / 3
    }
}

impl Default for EpisodesConfig {
    fn default() -> EpisodesConfig {
        EpisodesConfig {
            command: None,
            timeout_ms: 2_000,
        }
    }
}

impl EpisodesConfig {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// The hook budget's bounds, in milliseconds. A hook runs before every edit an agent makes and
/// holds it until it answers, so the budget is what a repository may make every edit wait:
/// two seconds is the most an agent's work can afford on each edit (an answer takes a few
/// milliseconds, the default allows 500), and below 50 a hook could not read the lease and
/// ask the server.
pub const HOOK_BUDGET_MS: RangeInclusive<u64> = 50..=2_000;

/// A day, in seconds: the longest a repository may make anything linger (a departed peer's
/// claims, a detached episode, a quiet session).
const DAY_SECS: u64 = 86_400;

/// The bounds of every numeric setting a repository's file may set. Each ceiling keeps what a
/// hostile file can make majordomus wait for or hold within what a person would notice and
/// the machine affords; each floor keeps the setting able to work at all.
mod bounds {
    use std::ops::RangeInclusive;

    use super::DAY_SECS;

    /// A sibling's probe: every listing waits up to it for a silent sibling.
    pub(super) const PROBE_TIMEOUT_MS: RangeInclusive<u64> = 1..=10_000;
    pub(super) const IDLE_TIMEOUT_SECS: RangeInclusive<u64> = 1..=DAY_SECS;
    pub(super) const REATTACH_GRACE_SECS: RangeInclusive<u64> = 0..=DAY_SECS;
    pub(super) const CLAIM_GRACE_SECS: RangeInclusive<u64> = 0..=DAY_SECS;
    /// A take-over waits up to a minute for a silent server whose process runs.
    pub(super) const BUSY_GRACE_MS: RangeInclusive<u64> = 100..=60_000;
    pub(super) const STARTING_GRACE_MS: RangeInclusive<u64> = 100..=60_000;
    pub(super) const STOP_TIMEOUT_MS: RangeInclusive<u64> = 100..=60_000;
    /// Ten minutes at most for a request's head: connection places are capped, and a waiting
    /// connection is displaced when they are full, so a long deadline costs no service.
    pub(super) const HEADER_TIMEOUT_MS: RangeInclusive<u64> = 1..=600_000;
    /// A bridge pings three times within its silence, and a ping must have time to travel.
    pub(super) const BRIDGE_SILENCE_MS: RangeInclusive<u64> = 300..=60_000;
    pub(super) const SESSION_PARK_SECS: RangeInclusive<u64> = 0..=DAY_SECS;
    /// A live session costs about 100 KB: 5,000 of them about 500 MB.
    pub(super) const MCP_SESSIONS: RangeInclusive<u64> = 1..=5_000;
    /// One run of the episode command holds the recorder, and the events behind it wait.
    pub(super) const EPISODE_TIMEOUT_MS: RangeInclusive<u64> = 10..=30_000;
    pub(super) const SESSION_IDLE_SECS: RangeInclusive<u64> = 1..=DAY_SECS;
}

impl Config {
    /// Every numeric setting, its value and its bounds.
    fn numeric_settings(&self) -> [(&'static str, Option<u64>, RangeInclusive<u64>); 14] {
        let timings = &self.timings;
        [
            (
                "timings.probe_timeout_ms",
                Some(timings.probe_timeout_ms),
                bounds::PROBE_TIMEOUT_MS,
            ),
            (
                "timings.idle_timeout_secs",
                Some(timings.idle_timeout_secs),
                bounds::IDLE_TIMEOUT_SECS,
            ),
            (
                "timings.reattach_grace_secs",
                Some(timings.reattach_grace_secs),
                bounds::REATTACH_GRACE_SECS,
            ),
            (
                "timings.claim_grace_secs",
                timings.claim_grace_secs,
                bounds::CLAIM_GRACE_SECS,
            ),
            (
                "timings.busy_grace_ms",
                Some(timings.busy_grace_ms),
                bounds::BUSY_GRACE_MS,
            ),
            (
                "timings.starting_grace_ms",
                Some(timings.starting_grace_ms),
                bounds::STARTING_GRACE_MS,
            ),
            (
                "timings.stop_timeout_ms",
                Some(timings.stop_timeout_ms),
                bounds::STOP_TIMEOUT_MS,
            ),
            (
                "timings.header_timeout_ms",
                Some(timings.header_timeout_ms),
                bounds::HEADER_TIMEOUT_MS,
            ),
            (
                "timings.bridge_silence_ms",
                Some(timings.bridge_silence_ms),
                bounds::BRIDGE_SILENCE_MS,
            ),
            (
                "timings.session_park_secs",
                Some(timings.session_park_secs),
                bounds::SESSION_PARK_SECS,
            ),
            (
                "limits.mcp_sessions",
                u64::try_from(self.limits.mcp_sessions)
                    .ok()
                    .or(Some(u64::MAX)),
                bounds::MCP_SESSIONS,
            ),
            (
                "episodes.timeout_ms",
                Some(self.episodes.timeout_ms),
                bounds::EPISODE_TIMEOUT_MS,
            ),
            (
                "hooks.budget_ms",
                Some(self.hooks.budget_ms),
                HOOK_BUDGET_MS,
            ),
            (
                "hooks.session_idle_secs",
                Some(self.hooks.session_idle_secs),
                bounds::SESSION_IDLE_SECS,
            ),
        ]
    }

    /// The first numeric setting outside its bounds, in words naming the setting and them.
    fn out_of_bounds(&self) -> Option<String> {
        self.numeric_settings()
            .into_iter()
            .find_map(|(setting, value, bounds)| {
                let value = value?;
                (!bounds.contains(&value)).then(|| {
                    format!(
                        "{setting} is {value}: it must be between {} and {}",
                        bounds.start(),
                        bounds.end()
                    )
                })
            })
    }
}

/// The user's own configuration file, below `$XDG_CONFIG_HOME` (or `~/.config`), read beside
/// the repository's: what is personal, such as a federation's credentials, belongs there and
/// not in a file the team commits.
pub const USER_CONFIG_FILE: &str = "majordomus/config.toml";

/// The user's configuration file: its `[federation]` and `[notify]` sections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct UserConfig {
    federation: FederationConfig,
    notify: NotifyConfig,
}

/// Where the user's configuration file is: below `$XDG_CONFIG_HOME`, else `~/.config`.
pub fn user_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|dir| !dir.is_empty())
                .map(|home| PathBuf::from(home).join(".config"))
        })?;
    Some(base.join(USER_CONFIG_FILE))
}

/// A `majordomus.toml` that exists but cannot be used: which file, and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct ConfigError {
    pub path: PathBuf,
    pub problem: String,
}

/// Where the person's own files are: their configuration, and what they allowed the
/// repository to suggest. `None`: no such file.
#[derive(Debug, Clone, Default)]
pub struct UserFiles {
    pub config: Option<PathBuf>,
    pub allowances: Option<PathBuf>,
}

impl UserFiles {
    /// The person's files for `checkout`'s repository, whose allowances every worktree of it
    /// shares (outside git, the directory's own).
    pub fn of(checkout: &Checkout) -> UserFiles {
        UserFiles {
            config: user_config_path(),
            allowances: allowances::allowances_path(
                checkout.git_id.as_deref().unwrap_or(&checkout.id),
            ),
        }
    }
}

/// What a repository's file suggests, before it is judged.
struct Proposed {
    federation: FederationConfig,
    episodes_command: Option<Vec<String>>,
}

/// Reads `majordomus.toml` in `checkout`'s root, the user's configuration file for the
/// federation, and the user's allowances of what the repository suggests; defaults when there
/// is none of them.
pub fn load(checkout: &Checkout) -> Result<Config, ConfigError> {
    load_with(&checkout.root, &UserFiles::of(checkout))
}

/// [`load`], with the user's files at `user`.
pub fn load_with(root: &Path, user: &UserFiles) -> Result<Config, ConfigError> {
    let (mut config, proposed) = read_repository(root)?;
    let mut federation = FederationConfig::default();
    if let Some(user_file) = &user.config
        && let Some(user) = read_toml::<UserConfig>(user_file)?
    {
        if let Some(wrong) = user.federation.problem() {
            return Err(ConfigError {
                path: user_file.clone(),
                problem: wrong,
            });
        }
        config.notify = user.notify;
        // Relative file names are relative to the file that names them.
        federation = user
            .federation
            .anchored(user_file.parent().unwrap_or(Path::new("/")));
    }
    let allowances = match &user.allowances {
        Some(path) => Allowances::read(path).map_err(|error| ConfigError {
            path: error.path,
            problem: error.problem,
        })?,
        None => Allowances::default(),
    };
    if let Some(suggested) = &mut config.suggestions.federation {
        suggested.allowed = allowances.allows(Suggestion::Federation, &suggested.digest);
        if suggested.allowed {
            federation = federation.with_suggestion(proposed.federation);
        }
    }
    config.federation = federation;
    if let Some(suggested) = &mut config.suggestions.episodes_command {
        suggested.allowed = allowances.allows(Suggestion::EpisodesCommand, &suggested.digest);
        if suggested.allowed {
            config.episodes.command = proposed.episodes_command;
        }
    }
    Ok(config)
}

/// Reads `majordomus.toml` in `root` alone, its suggestions held apart and none in effect:
/// what a hook reads, which needs only the repository's settings of the hooks.
pub fn load_repository(root: &Path) -> Result<Config, ConfigError> {
    read_repository(root).map(|(config, _)| config)
}

/// The repository's file, checked: its settings within their bounds and no credentials; its
/// suggestions taken out of the settings in effect and described in `suggestions`, none of
/// them allowed yet.
fn read_repository(root: &Path) -> Result<(Config, Proposed), ConfigError> {
    let path = root.join(CONFIG_FILE);
    let problem = |problem: String| ConfigError {
        path: path.clone(),
        problem,
    };
    let mut config: Config = read_toml(&path)?.unwrap_or_default();
    // Refused rather than ignored: a secret in a file shared through git has leaked already,
    // and an error in every command is how the person learns to move it and change it; left
    // silently unused it would stay there, and the federation would fail for a reason nobody
    // is told.
    if let Some((credential, _)) = config
        .federation
        .credentials()
        .into_iter()
        .find(|(_, set)| *set)
    {
        let own = user_config_path().map_or_else(
            || USER_CONFIG_FILE.to_owned(),
            |file| file.display().to_string(),
        );
        return Err(problem(format!(
            "federation.{credential} is for your own configuration file ({own}), not for a \
             file shared through git: a repository never chooses where your credentials go, \
             nor which authorities you trust. Move it to the [federation] section of your file"
        )));
    }
    if let Some(wrong) = config.federation.problem() {
        return Err(problem(wrong));
    }
    if config.notify_in_repository.is_some() {
        let own = user_config_path().map_or_else(
            || USER_CONFIG_FILE.to_owned(),
            |file| file.display().to_string(),
        );
        return Err(problem(format!(
            "[notify] runs programs on this machine, so only your own configuration file \
             ({own}) may set it, never a file shared through git. Remove it here"
        )));
    }
    if config
        .episodes
        .command
        .as_ref()
        .is_some_and(|command| command.is_empty())
    {
        return Err(problem(
            "episodes.command is empty: name the program to run, or remove the setting".into(),
        ));
    }
    if let Some(wrong) = config.out_of_bounds() {
        return Err(problem(wrong));
    }
    if let Some(wrong) = config.leases.problem() {
        return Err(problem(wrong));
    }
    let proposed = Proposed {
        federation: std::mem::take(&mut config.federation),
        episodes_command: config.episodes.command.take(),
    };
    if proposed.federation != FederationConfig::default() {
        config.suggestions.federation = Some(Suggested {
            shown: proposed.federation.url.clone().map_or_else(
                || "the server of your own configuration".to_owned(),
                |url| shown(&url),
            ),
            digest: proposed.federation.suggestion_digest(),
            allowed: false,
        });
    }
    if let Some(command) = &proposed.episodes_command {
        config.suggestions.episodes_command = Some(Suggested {
            shown: shown(&command.join(" ")),
            digest: command_digest(root, command),
            allowed: false,
        });
    }
    Ok((config, proposed))
}

/// The most characters of a suggestion shown to the person: its whole digest is allowed,
/// but a command line of a megabyte is not printed.
const SHOWN_CHARS: usize = 240;

/// A suggestion as the person's terminal shows it: escaped, and cut to [`SHOWN_CHARS`].
fn shown(text: &str) -> String {
    let escaped = majordomus_domain::text::for_terminal(text);
    match escaped.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &escaped[..cut]),
        None => escaped.into_owned(),
    }
}

/// The most of a file named by the episode command that its digest reads.
const COMMAND_FILE_DIGEST_BYTES: u64 = 16 << 20;

/// The digest of an episode command: its words, and the contents of each word that names a
/// regular file in the repository (the script the command runs, say), so that a script
/// changed after it was allowed is not run until it is allowed again.
fn command_digest(root: &Path, command: &[String]) -> String {
    let files: Vec<_> = command
        .iter()
        .filter_map(|word| {
            let file = root.join(word).canonicalize().ok()?;
            if !file.starts_with(root) || !file.is_file() {
                return None;
            }
            Some(json!([word, file_digest(&file)]))
        })
        .collect();
    allowances::digest(&json!([Suggestion::EpisodesCommand.word(), command, files]))
}

/// SHA-256 of a file's length and first [`COMMAND_FILE_DIGEST_BYTES`]; `None` when it
/// cannot be read.
fn file_digest(file: &Path) -> Option<String> {
    use io::Read as _;
    use sha2::Digest as _;
    let opened = fs::File::open(file).ok()?;
    let length = opened.metadata().ok()?.len();
    let mut hasher = sha2::Sha256::new();
    hasher.update(length.to_le_bytes());
    io::copy(&mut opened.take(COMMAND_FILE_DIGEST_BYTES), &mut hasher).ok()?;
    Some(hex::encode(hasher.finalize()))
}

/// Reads a TOML file: `None` when it does not exist; an error naming it when it cannot be
/// read or parsed.
fn read_toml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, ConfigError> {
    let problem = |problem: String| ConfigError {
        path: path.to_path_buf(),
        problem,
    };
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(problem(format!("cannot be read ({error})"))),
    };
    toml::from_str(&text)
        .map(Some)
        .map_err(|error| problem(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_domain::limits::{
        LEASE_COMMAND_BYTES, LEASE_COMMAND_PREFIXES, LEASE_COMMAND_WORDS, LEASES_DECLARED,
    };
    use strum::VariantArray;

    #[test]
    fn each_policy_reads_back_from_the_word_as_str_gives() {
        for &policy in GuardPolicy::VARIANTS {
            let read: GuardPolicy = serde_json::from_value(policy.as_str().into()).unwrap();
            assert_eq!(read, policy);
        }
    }

    fn load_text(text: &str) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(CONFIG_FILE), text).unwrap();
        load_with(dir.path(), &UserFiles::default())
    }

    #[test]
    fn no_file_means_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let config = load_with(dir.path(), &UserFiles::default()).unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.federation.url, None);
        assert_eq!(config.federation.ttl(), Duration::from_secs(30));
        assert_eq!(config.timings.probe_timeout(), Duration::from_millis(300));
        assert_eq!(config.timings.idle_timeout(), Duration::from_secs(90));
        assert_eq!(config.timings.reattach_grace(), Duration::from_secs(900));
        assert_eq!(config.timings.claim_grace(), Duration::from_secs(900));
        assert_eq!(config.timings.busy_grace(), Duration::from_secs(2));
        assert_eq!(config.timings.starting_grace(), Duration::from_secs(10));
        assert_eq!(config.timings.stop_timeout(), Duration::from_secs(3));
        assert_eq!(config.timings.header_timeout(), Duration::from_secs(5));
        assert_eq!(config.limits.mcp_sessions, DEFAULT_MCP_SESSIONS);
        assert_eq!(config.timings.bridge_silence(), Duration::from_secs(5));
        assert!(config.timings.bridge_ping_interval() < config.timings.bridge_silence() / 2);
        assert_eq!(config.episodes.command, None);
        assert_eq!(config.episodes.timeout(), Duration::from_secs(2));
        assert_eq!(config.hooks.policy, GuardPolicy::Guard);
        assert_eq!(config.hooks.budget(), Duration::from_millis(500));
        assert_eq!(config.hooks.session_idle(), Duration::from_secs(600));
    }

    #[test]
    fn the_hooks_section_names_a_policy_in_words() {
        let config = load_text("[hooks]\npolicy = \"deny\"\nsession_idle_secs = 2\n").unwrap();
        assert_eq!(config.hooks.policy, GuardPolicy::Deny);
        assert_eq!(config.hooks.session_idle_secs, 2);
        assert_eq!(config.hooks.budget_ms, 500);
        let message = load_text("[hooks]\npolicy = \"block\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("block") && message.contains("warn"),
            "{message}"
        );
        let message = load_text("[hooks]\nbudget_ms = 0\n")
            .unwrap_err()
            .to_string();
        assert!(message.contains("hooks.budget_ms is 0"), "{message}");
    }

    #[test]
    fn a_partial_file_keeps_the_other_defaults() {
        let config = load_text(
            "[timings]\nprobe_timeout_ms = 500\n\n[limits]\nmcp_sessions = 3\n\n[episodes]\ncommand = [\"./record\", \"--json\"]\n",
        )
        .unwrap();
        assert_eq!(config.timings.probe_timeout_ms, 500);
        assert_eq!(config.timings.busy_grace_ms, 2_000);
        assert_eq!(config.limits.mcp_sessions, 3);
        assert_eq!(
            config.episodes.command, None,
            "a suggestion, not yet allowed"
        );
        assert_eq!(
            config.suggestions.episodes_command.unwrap().shown,
            "./record --json"
        );
        assert_eq!(config.episodes.timeout_ms, 2_000);
        assert_eq!(load_text("").unwrap(), Config::default());
    }

    #[test]
    fn the_claim_grace_follows_the_reattach_grace_unless_set() {
        let timings = load_text("[timings]\nreattach_grace_secs = 60\n")
            .unwrap()
            .timings;
        assert_eq!(timings.claim_grace(), Duration::from_secs(60));
        let timings = load_text("[timings]\nclaim_grace_secs = 2\n")
            .unwrap()
            .timings;
        assert_eq!(timings.claim_grace(), Duration::from_secs(2));
        assert_eq!(timings.reattach_grace(), Duration::from_secs(900));
    }

    #[test]
    fn a_bad_file_is_an_error_naming_the_file_and_the_problem() {
        let error = load_text("[timings]\nprobe_timeout = 500\n").unwrap_err();
        let message = error.to_string();
        assert!(message.contains(CONFIG_FILE), "{message}");
        assert!(message.contains("probe_timeout"), "{message}");

        let message = load_text("[timing]\n").unwrap_err().to_string();
        assert!(message.contains("timing"), "{message}");

        let message = load_text("[timings]\nbusy_grace_ms = \"2s\"\n")
            .unwrap_err()
            .to_string();
        assert!(message.contains("busy_grace_ms"), "{message}");

        let message = load_text("[episodes]\ncommand = []\n")
            .unwrap_err()
            .to_string();
        assert!(message.contains("episodes.command is empty"), "{message}");

        let message = load_text("[timings]\nprobe_timeout_ms = 0\n")
            .unwrap_err()
            .to_string();
        assert!(message.contains("probe_timeout_ms is 0"), "{message}");

        let message = load_text("[timings]\nheader_timeout_ms = 0\n")
            .unwrap_err()
            .to_string();
        assert!(message.contains("header_timeout_ms is 0"), "{message}");

        let message = load_text("[limits]\nmcp_sessions = 0\n")
            .unwrap_err()
            .to_string();
        assert!(message.contains("mcp_sessions is 0"), "{message}");
        let message = load_text("[timings]\nbridge_silence_ms = 10\n")
            .unwrap_err()
            .to_string();
        assert!(message.contains("bridge_silence_ms is 10"), "{message}");
    }

    #[test]
    fn desktop_notices_are_the_users_to_turn_on_never_a_repositorys() {
        let repository = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let user = user_files(home.path());
        let config = load_with(repository.path(), &user).unwrap();
        assert!(!config.notify.desktop, "off unless the person turns it on");
        fs::write(user.config.as_ref().unwrap(), "[notify]\ndesktop = true\n").unwrap();
        assert!(load_with(repository.path(), &user).unwrap().notify.desktop);

        for text in ["[notify]\ndesktop = true\n", "[notify]\n"] {
            fs::write(repository.path().join(CONFIG_FILE), text).unwrap();
            let message = load_with(repository.path(), &user).unwrap_err().to_string();
            assert!(
                message.contains("[notify] runs programs on this machine")
                    && message.contains(CONFIG_FILE),
                "{message}"
            );
        }
        fs::write(
            user.config.as_ref().unwrap(),
            "[notify]\ndesktop = true\ncommand = \"x\"\n",
        )
        .unwrap();
        fs::remove_file(repository.path().join(CONFIG_FILE)).unwrap();
        let message = load_with(repository.path(), &user).unwrap_err().to_string();
        assert!(message.contains("command"), "a typo is an error: {message}");
    }

    /// A repository at `repository`, the user's files below `home`.
    fn user_files(home: &Path) -> UserFiles {
        UserFiles {
            config: Some(home.join("config.toml")),
            allowances: Some(home.join("state/allowed/repository.toml")),
        }
    }

    fn allow(user: &UserFiles, suggestion: Suggestion, suggested: &Option<Suggested>) {
        let digest = &suggested.as_ref().expect("a suggestion").digest;
        Allowances::allow(user.allowances.as_ref().unwrap(), suggestion, digest).unwrap();
    }

    #[test]
    fn a_suggested_federation_is_in_effect_only_once_allowed_and_never_gets_the_users_token() {
        let repository = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let user = user_files(home.path());
        fs::write(
            repository.path().join(CONFIG_FILE),
            "[federation]\nurl = \"nats://attacker.example:4222\"\nmachine = \"ci\"\n",
        )
        .unwrap();
        fs::write(
            user.config.as_ref().unwrap(),
            "[federation]\nurl = \"nats://team.example:4222\"\ntoken = \"s3cret\"\nttl_secs = 9\nca_file = \"ca.pem\"\n",
        )
        .unwrap();

        let config = load_with(repository.path(), &user).unwrap();
        let suggested = config.suggestions.federation.clone().unwrap();
        assert_eq!(suggested.shown, "nats://attacker.example:4222");
        assert!(!suggested.allowed);
        assert_eq!(
            config.federation.url.as_deref(),
            Some("nats://team.example:4222"),
            "the user's own federation, as if the repository suggested nothing"
        );
        assert_eq!(config.federation.token.as_deref(), Some("s3cret"));
        assert_eq!(config.federation.machine, None);
        assert_eq!(config.federation.ca_file, Some(home.path().join("ca.pem")));

        allow(
            &user,
            Suggestion::Federation,
            &config.suggestions.federation,
        );
        let config = load_with(repository.path(), &user).unwrap();
        assert!(config.suggestions.federation.unwrap().allowed);
        let federation = config.federation;
        assert_eq!(
            federation.url.as_deref(),
            Some("nats://attacker.example:4222")
        );
        assert_eq!(federation.token, None, "the token stays with its server");
        assert_eq!(federation.ca_file, None);
        assert_eq!(federation.machine.as_deref(), Some("ci"));
        assert_eq!(federation.ttl(), Duration::from_secs(9));

        // A changed suggestion is a new one.
        fs::write(
            repository.path().join(CONFIG_FILE),
            "[federation]\nurl = \"nats://attacker.example:4223\"\nmachine = \"ci\"\n",
        )
        .unwrap();
        let config = load_with(repository.path(), &user).unwrap();
        assert!(!config.suggestions.federation.unwrap().allowed);
        assert_eq!(
            config.federation.url.as_deref(),
            Some("nats://team.example:4222")
        );
    }

    #[test]
    fn the_users_credentials_go_with_a_suggestion_of_the_server_the_user_names() {
        let repository = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let user = user_files(home.path());
        fs::write(
            repository.path().join(CONFIG_FILE),
            "[federation]\nurl = \"nats://team.example:4222\"\nrepository = \"shop\"\n",
        )
        .unwrap();
        fs::write(
            user.config.as_ref().unwrap(),
            "[federation]\nurl = \"nats://team.example:4222\"\ntoken = \"s3cret\"\n",
        )
        .unwrap();
        let config = load_with(repository.path(), &user).unwrap();
        assert_eq!(config.federation.repository, None);
        allow(
            &user,
            Suggestion::Federation,
            &config.suggestions.federation,
        );
        let federation = load_with(repository.path(), &user).unwrap().federation;
        assert_eq!(federation.url.as_deref(), Some("nats://team.example:4222"));
        assert_eq!(federation.token.as_deref(), Some("s3cret"));
        assert_eq!(federation.repository.as_deref(), Some("shop"));
        let shown = format!("{federation:?}");
        assert!(!shown.contains("s3cret"), "{shown}");

        let without_user = load_with(repository.path(), &UserFiles::default()).unwrap();
        assert_eq!(without_user.federation, FederationConfig::default());
    }

    #[test]
    fn a_repository_that_names_a_credential_is_refused_naming_it_and_the_users_file() {
        for setting in [
            "token = \"t\"",
            "user = \"u\"\npassword = \"p\"",
            "creds_file = \"me.creds\"",
            "cert_file = \"c.pem\"\nkey_file = \"k.pem\"",
            "ca_file = \"ca.pem\"",
        ] {
            let message = load_text(&format!(
                "[federation]\nurl = \"nats://n:4222\"\n{setting}\n"
            ))
            .unwrap_err()
            .to_string();
            let name = setting.split(' ').next().unwrap();
            assert!(
                message.contains(&format!(
                    "federation.{name} is for your own configuration file"
                )),
                "{message}"
            );
            assert!(message.contains(USER_CONFIG_FILE), "{message}");
            assert!(message.contains(CONFIG_FILE), "{message}");
        }
    }

    #[test]
    fn a_suggested_episode_command_runs_only_once_allowed_and_again_after_its_script_changed() {
        let repository = tempfile::tempdir().unwrap();
        let root = repository.path().canonicalize().unwrap();
        let home = tempfile::tempdir().unwrap();
        let user = user_files(home.path());
        fs::write(
            root.join(CONFIG_FILE),
            "[episodes]\ncommand = [\"./record\", \"--json\"]\n",
        )
        .unwrap();
        fs::write(root.join("record"), "#!/bin/sh\ncat >> seen\n").unwrap();
        let config = load_with(&root, &user).unwrap();
        assert_eq!(config.episodes.command, None);
        assert_eq!(shown(&"x".repeat(5_000)).chars().count(), SHOWN_CHARS + 1);
        allow(
            &user,
            Suggestion::EpisodesCommand,
            &config.suggestions.episodes_command,
        );
        let config = load_with(&root, &user).unwrap();
        assert!(config.suggestions.episodes_command.unwrap().allowed);
        assert_eq!(config.episodes.command.unwrap(), ["./record", "--json"]);

        fs::write(root.join("record"), "#!/bin/sh\ncurl evil\n").unwrap();
        let config = load_with(&root, &user).unwrap();
        assert!(!config.suggestions.episodes_command.unwrap().allowed);
        assert_eq!(config.episodes.command, None);
    }

    #[test]
    fn every_numeric_setting_is_refused_outside_its_bounds_naming_them() {
        for (setting, _, bounds) in Config::default().numeric_settings() {
            let (section, key) = setting.split_once('.').unwrap();
            let mut outside = vec![bounds.end() + 1];
            if *bounds.start() > 0 {
                outside.push(bounds.start() - 1);
            }
            for value in outside {
                let message = load_text(&format!("[{section}]\n{key} = {value}\n"))
                    .unwrap_err()
                    .to_string();
                assert!(
                    message.contains(&format!(
                        "{setting} is {value}: it must be between {} and {}",
                        bounds.start(),
                        bounds.end()
                    )),
                    "{message}"
                );
            }
            let at_the_ceiling = format!("[{section}]\n{key} = {}\n", bounds.end());
            assert!(load_text(&at_the_ceiling).is_ok(), "{at_the_ceiling}");
        }
        assert!(load_text("").unwrap().out_of_bounds().is_none());
    }

    fn words(command: &str) -> Vec<String> {
        shlex::split(command).unwrap()
    }

    #[test]
    fn declared_lease_commands_match_a_simple_command_word_by_word() {
        let config = load_text(
            "[leases.commands]\ntest-suite = [\"cargo test\", \"npm test\", \"./run 'all tests'\"]\n\
             \"db:staging\" = [\"cargo test\", \"psql\"]\n",
        )
        .unwrap();
        let matcher = config.leases.matcher();
        for (command, needed) in [
            ("cargo test", vec!["db:staging", "test-suite"]),
            ("cargo test --workspace", vec!["db:staging", "test-suite"]),
            ("/usr/bin/cargo test", vec!["db:staging", "test-suite"]),
            ("npm test", vec!["test-suite"]),
            ("./run 'all tests' -v", vec!["test-suite"]),
            ("psql -c 'select 1'", vec!["db:staging"]),
            ("cargo build", vec![]),
            ("cargo", vec![]),
            ("npm testing", vec![]),
            ("echo cargo test", vec![]),
            ("./run all tests", vec![]),
            ("", vec![]),
        ] {
            let mut found = matcher.needed_by(&words(command));
            found.sort_unstable();
            assert_eq!(found, needed, "{command}");
        }
        assert_eq!(
            load_text("")
                .unwrap()
                .leases
                .matcher()
                .needed_by(&words("cargo test")),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn lease_commands_are_refused_beyond_their_bounds_naming_them() {
        let many_leases: String = (0..=LEASES_DECLARED)
            .map(|n| format!("lease-{n} = [\"x\"]\n"))
            .collect();
        let many_prefixes = vec!["\"x\""; LEASE_COMMAND_PREFIXES + 1].join(", ");
        let many_words = vec!["w"; LEASE_COMMAND_WORDS + 1].join(" ");
        let long = "x".repeat(LEASE_COMMAND_BYTES + 1);
        for (text, named) in [
            (
                many_leases,
                format!("declares 33 leases: at most {LEASES_DECLARED}"),
            ),
            (
                format!("a = [{many_prefixes}]\n"),
                format!(
                    "leases.commands.a lists 17 commands: between 1 and {LEASE_COMMAND_PREFIXES}"
                ),
            ),
            (
                "a = []\n".into(),
                "leases.commands.a lists 0 commands".into(),
            ),
            (
                format!("a = [\"{many_words}\"]\n"),
                format!("has 17 words: between 1 and {LEASE_COMMAND_WORDS}"),
            ),
            ("a = [\"\"]\n".into(), "has 0 words".into()),
            (
                format!("a = [\"{long}\"]\n"),
                format!("a command is at most {LEASE_COMMAND_BYTES} bytes"),
            ),
            ("a = [\"echo 'open\"]\n".into(), "not shell words".into()),
            (
                "a = [\"make && make test\"]\n".into(),
                "more than one command".into(),
            ),
            (
                "a = [\"x\\u001b[2J\"]\n".into(),
                "not one line of plain text".into(),
            ),
            (
                "\"-x\" = [\"x\"]\n".into(),
                "leases.commands.-x: a lease name".into(),
            ),
            (
                "\"port:3000-3099\" = [\"x\"]\n".into(),
                "a port range".into(),
            ),
        ] {
            let message = load_text(&format!("[leases.commands]\n{text}"))
                .unwrap_err()
                .to_string();
            assert!(
                message.contains(CONFIG_FILE) && message.contains(&named),
                "{named}: {message}"
            );
        }
        let at_the_bounds: String = (0..LEASES_DECLARED)
            .map(|n| {
                format!(
                    "lease-{n} = [{}]\n",
                    vec![
                        format!("\"{}\"", vec!["w"; LEASE_COMMAND_WORDS].join(" "));
                        LEASE_COMMAND_PREFIXES
                    ]
                    .join(", ")
                )
            })
            .collect();
        assert!(load_text(&format!("[leases.commands]\n{at_the_bounds}")).is_ok());
        let message = load_text("[leases]\ncommand = {}\n")
            .unwrap_err()
            .to_string();
        assert!(message.contains("command"), "{message}");
    }

    #[test]
    fn the_hook_budget_has_a_ceiling_no_file_raises() {
        let message = load_text("[hooks]\nbudget_ms = 20000\n")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("hooks.budget_ms is 20000: it must be between 50 and 2000"),
            "{message}"
        );
        assert_eq!(
            load_text("[hooks]\nbudget_ms = 2000\n")
                .unwrap()
                .hooks
                .budget(),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn a_federation_that_cannot_work_is_an_error_naming_the_setting() {
        let cases = [
            (
                "url = \"http://nats:4222\"",
                "is not a NATS server's address",
            ),
            (
                "url = \"nats://n:4222\"\nttl_secs = 1",
                "federation.ttl_secs is 1",
            ),
            ("machine = \"  \"", "federation.machine"),
            (
                "repository = \"a\\u001b[2Jb\"",
                "federation.repository `a\\x1b[2Jb`",
            ),
            ("urls = \"nats://n\"", "urls"),
        ];
        for (section, expected) in cases {
            let message = load_text(&format!("[federation]\n{section}\n"))
                .unwrap_err()
                .to_string();
            assert!(message.contains(expected), "{section}: {message}");
            assert!(message.contains(CONFIG_FILE), "{message}");
        }

        let repository = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let user = user_files(home.path());
        let user_file = user.config.clone().unwrap();
        for (section, expected) in [
            (
                "token = \"a\"\nuser = \"b\"\npassword = \"c\"",
                "more than one kind",
            ),
            ("user = \"b\"", "user and federation.password go together"),
            (
                "cert_file = \"c.pem\"",
                "cert_file and federation.key_file go together",
            ),
        ] {
            fs::write(&user_file, format!("[federation]\n{section}\n")).unwrap();
            let message = load_with(repository.path(), &user).unwrap_err().to_string();
            assert!(
                message.starts_with(&user_file.display().to_string()),
                "{message}"
            );
            assert!(message.contains(expected), "{section}: {message}");
        }
        fs::write(&user_file, "[timings]\n").unwrap();
        let message = load_with(repository.path(), &user).unwrap_err().to_string();
        assert!(message.contains("timings"), "{message}");
    }
}
