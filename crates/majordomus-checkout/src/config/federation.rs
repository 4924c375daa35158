//! `[federation]`: the settings that share this repository's boards with other machines,
//! from the user's own file or, once allowed, the repository's.

use std::fmt;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::allowances::{self, Suggestion};

/// How long a published board lives without a refresh, by default.
pub const DEFAULT_FEDERATION_TTL_SECS: u64 = 30;

/// The shortest and longest board lifetimes accepted: a refresh every second at most, and a
/// dead machine gone within the hour at most.
pub const FEDERATION_TTL_SECS: RangeInclusive<u64> = 3..=3_600;

/// Characters in a configured machine or repository name.
pub const FEDERATION_NAME_CHARS: usize = 128;

/// `[federation]`: sharing this repository's boards with other machines through a NATS
/// server with JetStream. Off unless `url` is set: nothing leaves the machine otherwise.
/// The user's own file may hold the same section, credentials included. A repository's file
/// may hold it without credentials, as a suggestion: once allowed, its settings win over the
/// user's one by one, and the user's credentials go with it only when the user's own file
/// names the same server.
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

    /// The settings that say who this machine is to a server or whom it trusts, by name:
    /// the user's own file alone may set them.
    pub(super) fn credentials(&self) -> [(&'static str, bool); 7] {
        [
            ("token", self.token.is_some()),
            ("user", self.user.is_some()),
            ("password", self.password.is_some()),
            ("creds_file", self.creds_file.is_some()),
            ("cert_file", self.cert_file.is_some()),
            ("key_file", self.key_file.is_some()),
            ("ca_file", self.ca_file.is_some()),
        ]
    }

    /// The same without a credential or a trusted authority, for a server other than the one
    /// they were written for.
    fn without_credentials(self) -> FederationConfig {
        FederationConfig {
            url: None,
            machine: self.machine,
            repository: self.repository,
            ttl_secs: self.ttl_secs,
            ..FederationConfig::default()
        }
    }

    /// The federation in effect: the user's own (`self`), or, once allowed, the repository's
    /// `suggested` one, with the user's credentials only when the user's file names the same
    /// server.
    pub(super) fn with_suggestion(self, suggested: FederationConfig) -> FederationConfig {
        let same_server = suggested.url.is_none() || suggested.url == self.url;
        let users = if same_server {
            self
        } else {
            self.without_credentials()
        };
        suggested.or(users)
    }

    /// The suggestion's digest: its every setting, in a fixed order.
    pub(super) fn suggestion_digest(&self) -> String {
        allowances::digest(&json!([
            Suggestion::Federation.word(),
            self.url,
            self.machine,
            self.repository,
            self.ttl_secs
        ]))
    }

    /// The files it names, made absolute against the directory of the file that named them.
    pub(super) fn anchored(mut self, dir: &Path) -> FederationConfig {
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
    pub(super) fn problem(&self) -> Option<String> {
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
