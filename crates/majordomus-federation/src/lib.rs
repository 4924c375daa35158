//! The federation: agents of one repository on several machines seeing each other, through
//! a NATS server with JetStream that the team runs.
//!
//! Each serving process publishes its board as one key, `<repository>.<machine>.<checkout>`,
//! in the JetStream key-value bucket [`BUCKET`], again whenever the board changes and on a
//! heartbeat of a third of its lifetime; it watches the keys of its repository and holds the
//! other machines' boards in memory ([`view`]), each forgotten once older than its lifetime,
//! so a machine that dies leaves every listing within that time. `peers.list` with
//! `checkouts: everywhere` joins them to the repository's listing and `peers.announce`
//! answers the remote claims a new claim meets (both in the capabilities, which read the
//! remote boards from here). Nothing is published or
//! watched unless `[federation] url` is configured; the federation being down never stops
//! local work, it only makes `everywhere` say what it could not read — but for leases and
//! messages: a federated repository's lease table ([`leases`]) and mailbox ([`mailbox`]) are
//! kept in the federation, each one key changed by compare-and-set ([`versioned`]), so while
//! it is out of reach a lease is refused, never granted by one machine alone, and a message
//! is neither sent nor delivered.

pub mod document;
pub mod leases;
mod link;
pub mod mailbox;
pub mod versioned;
pub mod view;
pub mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use majordomus_checkout::config::FederationConfig;
use majordomus_checkout::git::Checkout;
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::peers::Peer;
use majordomus_domain::sync::LockExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use async_nats::jetstream::kv;
use document::BoardKey;
use leases::{LeaseStore, LeaseStoreError};
pub use link::REPUBLISH_INTERVAL;
use mailbox::{MailboxStore, MailboxStoreError};
use versioned::Key;
use view::{HeldBoard, RemoteView};

/// The JetStream key-value bucket every repository's boards are published in, created with
/// the lifetime of the first server to need it when it is missing.
pub const BUCKET: &str = "majordomus-boards";

/// Where this server's link to the federation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FederationState {
    /// No `[federation] url` is configured: nothing leaves this machine.
    Off,
    /// A federation is configured, but no server of this checkout runs to follow it.
    Inactive,
    /// The server is connecting for the first time.
    Connecting,
    /// Connected; boards are published and watched.
    Connected,
    /// The NATS server cannot be reached; the client keeps trying, with backoff.
    Unreachable,
    /// The NATS server refused the credentials.
    Refused,
    /// Connected, but the bucket cannot be used (JetStream off, a limit, a missing setting).
    Impaired,
}

/// A published entry this server did not take in, and why.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct IgnoredBoard {
    /// Its key in the bucket, escaped.
    pub key: String,
    /// Why it was ignored.
    pub reason: String,
}

/// The federation as a serving process sees it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct FederationStatus {
    /// Where the link stands.
    pub state: FederationState,
    /// The same in words: `off`, `connecting to …`, `connected to …`, `unreachable: …`,
    /// `refused: wrong credentials …`.
    pub summary: String,
    /// The NATS server's address, without any credentials written into it.
    pub url: Option<String>,
    /// This machine's name in the federation, once known.
    pub machine: Option<String>,
    /// The repository's name in the federation (its root commit by default), once known.
    pub repository: Option<String>,
    /// How many boards of this repository other machines publish that are held now.
    pub remote_boards: usize,
    /// Why a listing across machines may lack boards: the federation is down or still
    /// reading, or published boards were ignored. Absent when it lacks none.
    pub reason: Option<String>,
    /// The latest published entries that were ignored, with why (at most 16).
    #[serde(default)]
    pub ignored: Vec<IgnoredBoard>,
}

/// What the link reads of the board it publishes. The serving process implements it, so
/// the federation needs nothing of the server above it: it runs for any board that can say
/// these four things.
pub trait Published: Send + Sync + 'static {
    /// The federation this board is published to.
    fn federation(&self) -> &Federation;
    /// The checkout the board is of.
    fn checkout(&self) -> &Checkout;
    /// Where the checkout's server stands, published beside the board.
    fn standing(&self) -> ServerStanding;
    /// The board's peers as they stand at `now`.
    fn peers(&self, now: SystemTime) -> Vec<Peer>;
}

/// The state of the link, as the client's events and the task's own steps leave it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum LinkState {
    Connecting,
    /// The client is connected, and the task is opening the buckets: nothing is published,
    /// watched or kept there yet, so it is still connecting in the status's words.
    Joining,
    /// The buckets are open: boards are published and watched, leases and messages kept.
    Connected,
    Unreachable(String),
    Refused(String),
    Impaired(String),
    Stopped,
}

/// Who this server is in the federation, once worked out.
#[derive(Clone, Debug)]
struct Identity {
    machine: String,
    repository: String,
    key: BoardKey,
}

/// One serving process's federation: its settings, the link's state, the remote boards.
pub struct Federation {
    config: FederationConfig,
    url: Option<String>,
    state: Mutex<LinkState>,
    identity: OnceLock<Identity>,
    view: Mutex<RemoteView>,
    /// Counts every change of the remote view, for whoever waits for one.
    view_changes: watch::Sender<u64>,
    /// Counts every (re)connection the client reports; a new one means publish and watch anew.
    connections: watch::Sender<u64>,
    /// Set whenever this server's board changes, so the task publishes it again.
    board_changed: Notify,
    /// The bucket of the lease tables and mailboxes, while a session with the federation
    /// lasts.
    value_bucket: Mutex<Option<kv::Store>>,
    /// The latest revision of the repository's mailbox the federation told of; 0 before it
    /// told any. Whether a session has anything waiting is answered from a mailbox read at
    /// this revision, without asking the federation again.
    mailbox_revision: AtomicU64,
    stop: CancellationToken,
}

impl Federation {
    /// The federation of a serving process with `config`; `stop` ends its task.
    pub fn new(config: &FederationConfig, stop: CancellationToken) -> Federation {
        Federation {
            url: config.url.as_deref().map(without_credentials),
            config: config.clone(),
            state: Mutex::new(LinkState::Connecting),
            identity: OnceLock::new(),
            view: Mutex::new(RemoteView::default()),
            view_changes: watch::channel(0).0,
            connections: watch::channel(0).0,
            board_changed: Notify::new(),
            value_bucket: Mutex::new(None),
            mailbox_revision: AtomicU64::new(0),
            stop,
        }
    }

    /// Whether a federation is configured at all.
    pub fn is_on(&self) -> bool {
        self.url.is_some()
    }

    /// Starts following the federation for `server`, when one is configured.
    pub fn start<B: Published>(server: &Arc<B>) -> Option<JoinHandle<()>> {
        if !server.federation().is_on() {
            return None;
        }
        Some(tokio::spawn(link::run(server.clone())))
    }

    /// Asks the task to stop: it deletes this server's board and disconnects.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// This server's board changed: it is published again (at once when quiet, at most
    /// every [`REPUBLISH_INTERVAL`] when busy).
    pub fn board_changed(&self) {
        if self.is_on() {
            self.board_changed.notify_one();
        }
    }

    /// This machine's name in the federation, once known.
    pub fn machine(&self) -> Option<&str> {
        self.identity
            .get()
            .map(|identity| identity.machine.as_str())
    }

    /// The repository's lease table in the federation, while connected; otherwise the outage,
    /// in words.
    pub fn lease_store(&self, checkout: &str) -> Result<LeaseStore, LeaseStoreError> {
        let (store, identity) = self
            .connected()
            .ok_or_else(|| LeaseStoreError::Outage(self.status().summary))?;
        Ok(LeaseStore {
            key: Key {
                store,
                key: leases::table_key(&identity.key.repository),
                what: "the lease table",
            },
            machine: identity.machine.clone(),
            checkout: checkout.to_owned(),
            lifetime: self.config.ttl(),
        })
    }

    /// The repository's mailbox in the federation, while connected; otherwise the outage, in
    /// words.
    pub fn mailbox_store(&self) -> Result<MailboxStore, MailboxStoreError> {
        let (store, identity) = self
            .connected()
            .ok_or_else(|| MailboxStoreError::Outage(self.status().summary))?;
        Ok(MailboxStore {
            key: Key {
                store,
                key: mailbox::mailbox_key(&identity.key.repository),
                what: "the mailbox",
            },
            machine: identity.machine.clone(),
        })
    }

    /// The latest revision of the repository's mailbox the federation told of; 0 before it
    /// told any.
    pub fn mailbox_revision(&self) -> u64 {
        self.mailbox_revision.load(Ordering::Acquire)
    }

    /// The bucket of the federated values and who this server is, while connected.
    fn connected(&self) -> Option<(kv::Store, &Identity)> {
        if self.link_state() != LinkState::Connected {
            return None;
        }
        let store = self.value_bucket.lock_or_recover().clone()?;
        Some((store, self.identity.get()?))
    }

    /// Every remote board younger than its lifetime.
    pub fn remote_boards(&self) -> Vec<HeldBoard> {
        if !self.is_on() {
            return Vec::new();
        }
        self.view().boards(Instant::now())
    }

    /// Waits (at most `bound`) until the remote view changes after `seen` changes; answers
    /// how many changes it has seen by then.
    pub async fn remote_changed(&self, seen: u64, bound: Duration) -> u64 {
        let mut changes = self.view_changes.subscribe();
        let _ = tokio::time::timeout(bound, changes.wait_for(|now| *now > seen)).await;
        *changes.borrow()
    }

    /// How many times the remote view has changed.
    pub fn remote_changes(&self) -> u64 {
        *self.view_changes.borrow()
    }

    /// Where the federation stands, for `server.status` and `peers.list`.
    pub fn status(&self) -> FederationStatus {
        let Some(url) = self.url.clone() else {
            return FederationStatus::off();
        };
        let state = self.link_state();
        let now = Instant::now();
        let (remote_boards, ignored, synced) = {
            let view = self.view();
            (
                view.boards(now).len(),
                view.ignored(now, self.config.ttl()),
                view.synced(),
            )
        };
        let (kind, summary) = match &state {
            LinkState::Connecting | LinkState::Joining => {
                (FederationState::Connecting, format!("connecting to {url}"))
            }
            LinkState::Connected => (FederationState::Connected, format!("connected to {url}")),
            LinkState::Unreachable(why) => {
                (FederationState::Unreachable, format!("unreachable: {why}"))
            }
            LinkState::Refused(why) => (
                FederationState::Refused,
                format!("refused: wrong credentials ({why})"),
            ),
            LinkState::Impaired(why) => (
                FederationState::Impaired,
                format!("connected to {url}, but {why}"),
            ),
            LinkState::Stopped => (FederationState::Inactive, "stopped".to_string()),
        };
        let reason = if kind != FederationState::Connected {
            Some(format!(
                "the federation is {summary}; other machines' boards are as last read, each \
                 until its lifetime ends"
            ))
        } else if !synced {
            Some(format!(
                "the federation at {url} is still reading other machines' boards"
            ))
        } else if !ignored.is_empty() {
            Some(format!(
                "{} board(s) published to the federation were ignored; `federation.ignored` \
                 says why",
                ignored.len()
            ))
        } else {
            None
        };
        let identity = self.identity.get();
        FederationStatus {
            state: kind,
            summary,
            url: Some(url),
            machine: identity.map(|identity| identity.machine.clone()),
            repository: identity.map(|identity| identity.repository.clone()),
            remote_boards,
            reason,
            ignored: ignored
                .into_iter()
                .map(|ignored| IgnoredBoard {
                    key: ignored.key,
                    reason: ignored.reason,
                })
                .collect(),
        }
    }

    /// The status a process that does not serve reports for `config`: off, or configured
    /// but followed by nobody since no server serves the checkout.
    pub fn status_without_server(config: &FederationConfig) -> FederationStatus {
        let Some(url) = config.url.as_deref().map(without_credentials) else {
            return FederationStatus::off();
        };
        FederationStatus {
            state: FederationState::Inactive,
            summary: format!(
                "configured for {url}, but no server serves this checkout to follow it"
            ),
            reason: Some(format!(
                "the federation at {url} is followed only by a serving process, and none serves \
                 this checkout: `majordomus serve ensure` starts one"
            )),
            url: Some(url),
            machine: None,
            repository: None,
            remote_boards: 0,
            ignored: Vec::new(),
        }
    }

    fn link_state(&self) -> LinkState {
        self.state.lock_or_recover().clone()
    }

    /// Records a new state of the link, and logs it when it is a change of kind.
    fn set_state(&self, next: LinkState) {
        let mut state = self.state.lock_or_recover();
        // Once stopping, what the client reports is the stop's own doing: not worth a line.
        if *state == next || (self.stop.is_cancelled() && next != LinkState::Stopped) {
            return;
        }
        let url = self.url.as_deref().unwrap_or("");
        match &next {
            LinkState::Connected => tracing::info!(url, "federation connected"),
            LinkState::Unreachable(why) => tracing::warn!(url, "federation unreachable: {why}"),
            LinkState::Refused(why) => {
                tracing::warn!(url, "federation refused the credentials: {why}")
            }
            LinkState::Impaired(why) => tracing::warn!(url, "federation impaired: {why}"),
            LinkState::Connecting | LinkState::Joining | LinkState::Stopped => {}
        }
        *state = next;
    }

    fn view(&self) -> MutexGuard<'_, RemoteView> {
        self.view.lock_or_recover()
    }

    /// Runs `change` on the remote view and tells whoever waits for changes.
    fn change_view<T>(&self, change: impl FnOnce(&mut RemoteView) -> T) -> T {
        let answer = change(&mut self.view());
        self.view_changes.send_modify(|changes| *changes += 1);
        answer
    }
}

impl FederationStatus {
    /// No federation is configured.
    pub fn off() -> FederationStatus {
        FederationStatus {
            state: FederationState::Off,
            summary: "off: no [federation] url is configured, so nothing leaves this machine"
                .into(),
            url: None,
            machine: None,
            repository: None,
            remote_boards: 0,
            reason: None,
            ignored: Vec::new(),
        }
    }
}

/// `url` without a user name or password written into it (`nats://user:pw@host`), so it
/// can be shown.
fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_a_url_are_never_shown() {
        assert_eq!(
            without_credentials("nats://me:s3cret@nats.example:4222"),
            "nats://nats.example:4222"
        );
        assert_eq!(without_credentials("tls://host:4222"), "tls://host:4222");
        assert_eq!(without_credentials("nats://tok@h/x@y"), "nats://h/x@y");
    }

    #[test]
    fn the_status_says_where_the_link_stands_in_words() {
        let config = FederationConfig {
            url: Some("nats://me:pw@127.0.0.1:4222".into()),
            ..Default::default()
        };
        let federation = Federation::new(&config, CancellationToken::new());
        let status = federation.status();
        assert_eq!(status.state, FederationState::Connecting);
        assert_eq!(status.summary, "connecting to nats://127.0.0.1:4222");
        assert!(status.reason.unwrap().contains("federation"));

        federation.set_state(LinkState::Refused("authorization violation".into()));
        let status = federation.status();
        assert_eq!(
            status.summary,
            "refused: wrong credentials (authorization violation)"
        );

        federation.set_state(LinkState::Joining);
        assert_eq!(federation.status().state, FederationState::Connecting);
        assert_eq!(
            federation.lease_store("c").err(),
            Some(LeaseStoreError::Outage(
                "connecting to nats://127.0.0.1:4222".into()
            ))
        );

        federation.set_state(LinkState::Connected);
        let status = federation.status();
        assert_eq!(status.summary, "connected to nats://127.0.0.1:4222");
        assert!(status.reason.unwrap().contains("still reading"));
        federation.change_view(RemoteView::mark_synced);
        assert_eq!(federation.status().reason, None);

        let off = Federation::new(&FederationConfig::default(), CancellationToken::new());
        assert_eq!(off.status().state, FederationState::Off);
        assert!(!off.is_on());
        let idle = Federation::status_without_server(&config);
        assert_eq!(idle.state, FederationState::Inactive);
        assert!(idle.reason.unwrap().contains("serve ensure"));
    }
}
