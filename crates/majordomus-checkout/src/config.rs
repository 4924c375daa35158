//! `majordomus.toml`: the optional, team-shared settings at the repository root. Every
//! setting has a default, so no file is needed; a file with a typo is an error rather than a
//! setting silently ignored.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

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
    pub federation: FederationConfig,
}

/// `[hooks]`: what the client hooks (`majordomus hook`) do for this repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HooksConfig {
    /// What the pre-edit guard does when the file about to change is claimed by another
    /// session: tell the agent (`warn`), ask the person (`ask`), or refuse the edit (`deny`).
    pub policy: GuardPolicy,
    /// How long a hook may take, from its start to its answer, before it gives up and lets
    /// the client carry on as if majordomus were absent.
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
    /// A line of context for the agent naming the other session; the edit goes ahead.
    #[default]
    Warn,
    /// The person is asked before the edit, where the client can ask; elsewhere a warning.
    Ask,
    /// The edit is refused, with the other session named as the reason.
    Deny,
}

impl GuardPolicy {
    /// The word `majordomus.toml` writes it as.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Default for HooksConfig {
    fn default() -> HooksConfig {
        HooksConfig {
            policy: GuardPolicy::Warn,
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
    /// built-in journal.
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

/// The user's own configuration file, below `$XDG_CONFIG_HOME` (or `~/.config`), read beside
/// the repository's: what is personal, such as a federation's credentials, belongs there and
/// not in a file the team commits.
pub const USER_CONFIG_FILE: &str = "majordomus/config.toml";

/// How long a published board lives without a refresh, by default.
pub const DEFAULT_FEDERATION_TTL_SECS: u64 = 30;

/// The shortest and longest board lifetimes accepted: a refresh every second at most, and a
/// dead machine gone within the hour at most.
pub const FEDERATION_TTL_SECS: std::ops::RangeInclusive<u64> = 3..=3_600;

/// Characters in a configured machine or repository name.
pub const FEDERATION_NAME_CHARS: usize = 128;

/// `[federation]`: sharing this repository's boards with other machines through a NATS
/// server with JetStream. Off unless `url` is set: nothing leaves the machine otherwise.
/// The user's own file may hold the same section; each setting of the repository's file
/// wins over the user's.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FederationConfig {
    /// The NATS server: `nats://host:port`, or `tls://host:port` for TLS.
    pub url: Option<String>,
    /// A token the NATS server expects.
    pub token: Option<String>,
    /// A user name the NATS server expects, with `password`.
    pub user: Option<String>,
    /// The password of `user`.
    pub password: Option<String>,
    /// A NATS credentials file (a user JWT and its NKey seed).
    pub creds_file: Option<PathBuf>,
    /// PEM certificates of the authorities the server's certificate is checked against,
    /// beside the system's.
    pub ca_file: Option<PathBuf>,
    /// A PEM client certificate, for a server that asks for one; with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The PEM private key of `cert_file`.
    pub key_file: Option<PathBuf>,
    /// What this machine is called on other machines' boards. By default: its host name.
    pub machine: Option<String>,
    /// What the repository is called in the federation, the same on every machine. By
    /// default: the id of its root commit, which every clone of it shares.
    pub repository: Option<String>,
    /// How many seconds a published board lives unless refreshed; it is refreshed three
    /// times as often. Default 30.
    pub ttl_secs: Option<u64>,
}

impl fmt::Debug for FederationConfig {
    /// Everything but the secrets, which are only said to be set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = |value: &Option<String>| value.as_ref().map(|_| "(set)");
        f.debug_struct("FederationConfig")
            .field("url", &self.url)
            .field("token", &secret(&self.token))
            .field("user", &self.user)
            .field("password", &secret(&self.password))
            .field("creds_file", &self.creds_file)
            .field("ca_file", &self.ca_file)
            .field("cert_file", &self.cert_file)
            .field("key_file", &self.key_file)
            .field("machine", &self.machine)
            .field("repository", &self.repository)
            .field("ttl_secs", &self.ttl_secs)
            .finish()
    }
}

impl FederationConfig {
    /// How long a published board lives unless refreshed.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl_secs.unwrap_or(DEFAULT_FEDERATION_TTL_SECS))
    }

    /// Each setting of `self`, else the one of `fallback`.
    fn or(self, fallback: FederationConfig) -> FederationConfig {
        FederationConfig {
            url: self.url.or(fallback.url),
            token: self.token.or(fallback.token),
            user: self.user.or(fallback.user),
            password: self.password.or(fallback.password),
            creds_file: self.creds_file.or(fallback.creds_file),
            ca_file: self.ca_file.or(fallback.ca_file),
            cert_file: self.cert_file.or(fallback.cert_file),
            key_file: self.key_file.or(fallback.key_file),
            machine: self.machine.or(fallback.machine),
            repository: self.repository.or(fallback.repository),
            ttl_secs: self.ttl_secs.or(fallback.ttl_secs),
        }
    }

    /// The files it names, made absolute against the directory of the file that named them.
    fn anchored(mut self, dir: &Path) -> FederationConfig {
        for file in [
            &mut self.creds_file,
            &mut self.ca_file,
            &mut self.cert_file,
            &mut self.key_file,
        ]
        .into_iter()
        .flatten()
        {
            *file = dir.join(&*file);
        }
        self
    }

    /// What is wrong with the settings, if anything, in words naming the setting.
    fn problem(&self) -> Option<String> {
        if let Some(url) = &self.url
            && !(url.starts_with("nats://") || url.starts_with("tls://"))
        {
            return Some(format!(
                "federation.url `{}` is not a NATS server's address: write nats://host:port, \
                 or tls://host:port for TLS",
                majordomus_domain::text::for_terminal(url)
            ));
        }
        if let Some(ttl) = self.ttl_secs
            && !FEDERATION_TTL_SECS.contains(&ttl)
        {
            return Some(format!(
                "federation.ttl_secs is {ttl}: a board's lifetime is between {} and {} seconds",
                FEDERATION_TTL_SECS.start(),
                FEDERATION_TTL_SECS.end()
            ));
        }
        let kinds = [
            self.token.is_some(),
            self.user.is_some() || self.password.is_some(),
            self.creds_file.is_some(),
        ];
        if kinds.iter().filter(|set| **set).count() > 1 {
            return Some(
                "federation sets more than one kind of credentials: keep one of token, user \
                 and password, or creds_file"
                    .into(),
            );
        }
        if self.user.is_some() != self.password.is_some() {
            return Some("federation.user and federation.password go together".into());
        }
        if self.cert_file.is_some() != self.key_file.is_some() {
            return Some("federation.cert_file and federation.key_file go together".into());
        }
        for (setting, value) in [("machine", &self.machine), ("repository", &self.repository)] {
            let Some(value) = value else { continue };
            if value.trim().is_empty()
                || value.chars().count() > FEDERATION_NAME_CHARS
                || majordomus_domain::text::find_refused(value).is_some()
            {
                return Some(format!(
                    "federation.{setting} `{}` is not a name: one line of plain text of at most \
                     {FEDERATION_NAME_CHARS} characters, or remove it for the default",
                    majordomus_domain::text::for_terminal(value)
                ));
            }
        }
        None
    }
}

/// The user's configuration file: only a `[federation]` section for now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct UserConfig {
    federation: FederationConfig,
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

/// Reads `majordomus.toml` in `root`, and the user's configuration file for what it leaves
/// unset; defaults when there is neither.
pub fn load(root: &Path) -> Result<Config, ConfigError> {
    load_with_user_file(root, user_config_path().as_deref())
}

/// [`load`], with the user's configuration file at `user_file` (none: no such file).
pub fn load_with_user_file(root: &Path, user_file: Option<&Path>) -> Result<Config, ConfigError> {
    let path = root.join(CONFIG_FILE);
    let problem = |problem: String| ConfigError {
        path: path.clone(),
        problem,
    };
    let mut config: Config = read_toml(&path)?.unwrap_or_default();
    if let Some(wrong) = config.federation.problem() {
        return Err(problem(wrong));
    }
    if let Some(user_file) = user_file
        && let Some(user) = read_toml::<UserConfig>(user_file)?
    {
        let user_problem = |wrong: String| ConfigError {
            path: user_file.to_path_buf(),
            problem: wrong,
        };
        if let Some(wrong) = user.federation.problem() {
            return Err(user_problem(wrong));
        }
        config.federation = config.federation.or(user.federation);
        if let Some(wrong) = config.federation.problem() {
            return Err(user_problem(format!(
                "{wrong}, once its settings join those of {}",
                path.display()
            )));
        }
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
    if config.hooks.budget_ms == 0 {
        return Err(problem(
            "hooks.budget_ms is 0: no hook could ever answer in time".into(),
        ));
    }
    if config.timings.probe_timeout_ms == 0 {
        return Err(problem(
            "timings.probe_timeout_ms is 0: no server could ever answer in time".into(),
        ));
    }
    if config.timings.header_timeout_ms == 0 {
        return Err(problem(
            "timings.header_timeout_ms is 0: no client could ever send a request in time".into(),
        ));
    }
    if config.limits.mcp_sessions == 0 {
        return Err(problem(
            "limits.mcp_sessions is 0: no MCP client could ever open a session".into(),
        ));
    }
    if config.timings.bridge_silence_ms < MIN_BRIDGE_SILENCE_MS {
        return Err(problem(format!(
            "timings.bridge_silence_ms is {}: below {MIN_BRIDGE_SILENCE_MS} a bridge could not ping its server often enough to be kept",
            config.timings.bridge_silence_ms
        )));
    }
    Ok(config)
}

/// The least `bridge_silence_ms` accepted: a bridge pings three times within it, and a ping
/// must have time to travel.
pub const MIN_BRIDGE_SILENCE_MS: u64 = 300;

/// Reads a TOML file: `None` when it does not exist; an error naming it when it cannot be
/// read or parsed. Relative file names of a `[federation]` section are made absolute against
/// the file's directory.
fn read_toml<T: serde::de::DeserializeOwned + Anchored>(
    path: &Path,
) -> Result<Option<T>, ConfigError> {
    let problem = |problem: String| ConfigError {
        path: path.to_path_buf(),
        problem,
    };
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(problem(format!("cannot be read ({error})"))),
    };
    let parsed: T = toml::from_str(&text).map_err(|error| problem(error.to_string()))?;
    Ok(Some(
        parsed.anchored(path.parent().unwrap_or(Path::new("/"))),
    ))
}

/// A configuration whose relative file names are relative to its own file.
trait Anchored {
    fn anchored(self, dir: &Path) -> Self;
}

impl Anchored for Config {
    fn anchored(mut self, dir: &Path) -> Config {
        self.federation = self.federation.anchored(dir);
        self
    }
}

impl Anchored for UserConfig {
    fn anchored(mut self, dir: &Path) -> UserConfig {
        self.federation = self.federation.anchored(dir);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        load_with_user_file(dir.path(), None)
    }

    #[test]
    fn no_file_means_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let config = load_with_user_file(dir.path(), None).unwrap();
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
        assert_eq!(config.hooks.policy, GuardPolicy::Warn);
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
        assert_eq!(config.episodes.command.unwrap(), ["./record", "--json"]);
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
    fn the_repository_file_wins_over_the_users_setting_by_setting() {
        let repository = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        fs::write(
            repository.path().join(CONFIG_FILE),
            "[federation]\nurl = \"nats://team.example:4222\"\nmachine = \"ci\"\nca_file = \"certs/ca.pem\"\n",
        )
        .unwrap();
        let user_file = home.path().join("config.toml");
        fs::write(
            &user_file,
            "[federation]\nurl = \"nats://elsewhere:4222\"\ntoken = \"s3cret\"\nmachine = \"laptop\"\nttl_secs = 9\n",
        )
        .unwrap();
        let federation = load_with_user_file(repository.path(), Some(&user_file))
            .unwrap()
            .federation;
        assert_eq!(federation.url.as_deref(), Some("nats://team.example:4222"));
        assert_eq!(federation.machine.as_deref(), Some("ci"));
        assert_eq!(federation.token.as_deref(), Some("s3cret"));
        assert_eq!(federation.ttl(), Duration::from_secs(9));
        assert_eq!(
            federation.ca_file.unwrap(),
            repository.path().join("certs/ca.pem")
        );
        let shown = format!(
            "{:?}",
            load_with_user_file(repository.path(), Some(&user_file))
        );
        assert!(!shown.contains("s3cret"), "{shown}");

        let without_user = load_with_user_file(repository.path(), None).unwrap();
        assert_eq!(without_user.federation.token, None);
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
            (
                "token = \"a\"\nuser = \"b\"\npassword = \"c\"",
                "more than one kind",
            ),
            ("user = \"b\"", "user and federation.password go together"),
            (
                "cert_file = \"c.pem\"",
                "cert_file and federation.key_file go together",
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
        fs::write(
            repository.path().join(CONFIG_FILE),
            "[federation]\ntoken = \"t\"\n",
        )
        .unwrap();
        let user_file = home.path().join("config.toml");
        fs::write(&user_file, "[federation]\ncreds_file = \"me.creds\"\n").unwrap();
        let message = load_with_user_file(repository.path(), Some(&user_file))
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with(&user_file.display().to_string()),
            "{message}"
        );
        assert!(message.contains("more than one kind"), "{message}");
        fs::write(&user_file, "[timings]\n").unwrap();
        let message = load_with_user_file(repository.path(), Some(&user_file))
            .unwrap_err()
            .to_string();
        assert!(message.contains("timings"), "{message}");
    }
}
