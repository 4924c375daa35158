//! The task that links a serving process to the federation: it connects (and leaves the
//! reconnecting to the NATS client, which retries with backoff), makes sure the bucket is
//! there, publishes this server's board on every change and on a heartbeat, watches the
//! repository's other boards, and on the ordered stop deletes its own board.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use async_nats::jetstream::{self, kv};
use async_nats::{ConnectErrorKind, ConnectOptions, Event, ServerError};
use futures::StreamExt as _;
use majordomus_checkout::config::FederationConfig;
use majordomus_domain::leases::{Holder, Life};
use majordomus_domain::sync::LockExt;

use super::document::{BOARD_BYTES, BoardDocument, BoardKey, PublishedCheckout};
use super::{BUCKET, Federation, Identity, LinkState, Published};

/// The least time between two publications of a board that keeps changing: a burst of
/// announcements costs one publication per interval, a single one is published at once.
pub const REPUBLISH_INTERVAL: Duration = Duration::from_millis(100);

/// How long one connection attempt, and one request to JetStream, may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// Entries the watch may hold before this server has read them: beyond, the client drops
/// them and the watch starts over, so a flood of publications costs bounded memory.
const WATCH_BACKLOG: usize = 1_024;

/// How long the ordered stop waits for this board's deletion to be acknowledged.
const DELETE_TIMEOUT: Duration = Duration::from_secs(1);

/// The wait before reconnection attempt `attempt` (the first is immediate): doubling from a
/// quarter of a second up to five seconds.
fn backoff(attempt: usize) -> Duration {
    if attempt == 0 {
        return Duration::ZERO;
    }
    let exponent = u32::try_from(attempt - 1).unwrap_or(u32::MAX).min(5);
    Duration::from_millis(250 * 2u64.pow(exponent)).min(Duration::from_secs(5))
}

/// Follows the federation for `server` until its federation is stopped.
pub(super) async fn run<B: Published>(server: Arc<B>) {
    let federation = server.federation();
    let identity = match identify(server.as_ref()).await {
        Ok(identity) => identity,
        Err(why) => {
            federation.set_state(LinkState::Impaired(why));
            federation.stop.cancelled().await;
            return;
        }
    };
    let identity = federation.identity.get_or_init(|| identity).clone();
    let Some(client) = connect(&server).await else {
        federation.set_state(LinkState::Stopped);
        return;
    };
    let mut attempt = 0;
    let kept = loop {
        let ended = session(&server, &identity, &client).await;
        if !matches!(ended, Ended::Stopped(_)) {
            *federation.value_bucket.lock_or_recover() = None;
        }
        match ended {
            Ended::Stopped(store) => break store,
            Ended::Reconnected => attempt = 0,
            Ended::Failed(why) => {
                federation.set_state(LinkState::Impaired(why));
                attempt += 1;
                let wait = backoff(attempt);
                tokio::select! {
                    _ = federation.stop.cancelled() => break None,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    };
    if kept.is_some() {
        leave_leases(&server).await;
    }
    *federation.value_bucket.lock_or_recover() = None;
    if let Some(store) = kept {
        let deleted = tokio::time::timeout(DELETE_TIMEOUT, store.delete(identity.key.as_key()));
        if !matches!(deleted.await, Ok(Ok(()))) {
            tracing::debug!("this board could not be deleted from the federation; it expires");
        }
    }
    let _ = tokio::time::timeout(DELETE_TIMEOUT, client.flush()).await;
    federation.set_state(LinkState::Stopped);
}

/// On the ordered stop, takes this server's sessions out of the federation's lease table, so
/// that the next in line on any machine is granted at once rather than once this server's
/// beat has run out.
async fn leave_leases<B: Published>(server: &Arc<B>) {
    let Ok(store) = server.federation().lease_store(&server.checkout().id) else {
        return;
    };
    let leaving = store.server();
    let ours = |holder: &Holder| {
        holder.server().as_deref() == Some(leaving.as_str())
            && matches!(&holder.life, Life::Session { server, .. } if server.pid == std::process::id())
    };
    let left = store.change(|table| {
        let had = table
            .leases
            .values()
            .flat_map(|lease| lease.requests())
            .any(|r| ours(&r.holder));
        table.remove_where(ours, SystemTime::now());
        table.forget_idle_beats();
        ((), had)
    });
    if !matches!(tokio::time::timeout(DELETE_TIMEOUT, left).await, Ok(Ok(()))) {
        tracing::debug!("this server's leases could not be let go in the federation; they expire");
    }
}

/// This machine's and this repository's names, from the settings or found out.
async fn identify<B: Published>(server: &B) -> Result<Identity, String> {
    let config = &server.federation().config;
    let machine = match &config.machine {
        Some(machine) => machine.clone(),
        None => host_name().ok_or_else(|| {
            "this machine's host name cannot be read: set federation.machine".to_string()
        })?,
    };
    let repository = match &config.repository {
        Some(repository) => repository.clone(),
        None => {
            let checkout = server.checkout().clone();
            tokio::task::spawn_blocking(move || checkout.root_commit())
                .await
                .map_err(|error| error.to_string())?
                .map_err(|error| format!("the repository's root commit cannot be read: {error}"))?
                .ok_or_else(|| {
                    "the repository has no commit to be known by yet: commit once, or set \
                     federation.repository"
                        .to_string()
                })?
        }
    };
    let key = BoardKey::new(&repository, &machine, &server.checkout().id);
    Ok(Identity {
        machine,
        repository,
        key,
    })
}

/// The host name, as the system reports it.
fn host_name() -> Option<String> {
    let name = gethostname::gethostname();
    let name = name.to_string_lossy().trim().to_owned();
    (!name.is_empty()).then_some(name)
}

/// Connects for the first time, retrying with backoff until it succeeds or the federation
/// stops; from then on the client reconnects by itself.
async fn connect<B: Published>(server: &Arc<B>) -> Option<async_nats::Client> {
    let federation = server.federation();
    let config = &federation.config;
    let url = config.url.clone()?;
    let mut attempt = 0;
    loop {
        let attempted = async {
            let options = options(config, server.clone()).await?;
            options.connect(url.as_str()).await.map_err(|error| {
                let shown = federation.url.as_deref().unwrap_or("");
                match error.kind() {
                    ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
                        LinkState::Refused(format!("{shown} answered: {error}"))
                    }
                    _ => LinkState::Unreachable(format!("cannot connect to {shown}: {error}")),
                }
            })
        };
        tokio::select! {
            _ = federation.stop.cancelled() => return None,
            connected = attempted => match connected {
                Ok(client) => {
                    federation.set_state(LinkState::Joining);
                    return Some(client);
                }
                Err(state) => federation.set_state(state),
            },
        }
        attempt += 1;
        tokio::select! {
            _ = federation.stop.cancelled() => return None,
            _ = tokio::time::sleep(backoff(attempt)) => {}
        }
    }
}

/// The client's options: credentials and TLS from the settings, the reconnect backoff, and
/// the events that move the link's state.
async fn options<B: Published>(
    config: &FederationConfig,
    server: Arc<B>,
) -> Result<ConnectOptions, LinkState> {
    let mut options = match &config.creds_file {
        Some(path) => ConnectOptions::with_credentials_file(path)
            .await
            .map_err(|error| {
                LinkState::Impaired(format!(
                    "the credentials file {} cannot be read: {error}",
                    path.display()
                ))
            })?,
        None => ConnectOptions::new(),
    };
    if let Some(token) = &config.token {
        options = options.token(token.clone());
    }
    if let (Some(user), Some(password)) = (&config.user, &config.password) {
        options = options.user_and_password(user.clone(), password.clone());
    }
    if let Some(ca) = &config.ca_file {
        options = options.add_root_certificates(ca.clone());
    }
    if let (Some(cert), Some(key)) = (&config.cert_file, &config.key_file) {
        options = options.add_client_certificate(cert.clone(), key.clone());
    }
    if config
        .url
        .as_deref()
        .is_some_and(|url| url.starts_with("tls://"))
    {
        options = options.require_tls(true);
    }
    Ok(options
        .name(format!("majordomus {}", env!("CARGO_PKG_VERSION")))
        .connection_timeout(REQUEST_TIMEOUT)
        .subscription_capacity(WATCH_BACKLOG)
        .request_timeout(Some(REQUEST_TIMEOUT))
        .reconnect_delay_callback(backoff)
        .event_callback(move |event| {
            let server = server.clone();
            async move { on_event(server.federation(), event) }
        }))
}

/// What the client reports moves the link's state; a (re)connection also means publishing
/// and watching anew, since the server may have lost what this one knew.
fn on_event(federation: &Federation, event: Event) {
    let url = federation.url.as_deref().unwrap_or("");
    let refused = ConnectErrorKind::AuthorizationViolation.to_string();
    match event {
        Event::Connected => {
            federation.set_state(LinkState::Joining);
            federation.connections.send_modify(|count| *count += 1);
        }
        Event::Disconnected => {
            federation.set_state(LinkState::Unreachable(format!(
                "lost the connection to {url}; reconnecting"
            )));
        }
        Event::ServerError(ServerError::AuthorizationViolation) => {
            federation.set_state(LinkState::Refused(format!(
                "{url} answered: authorization violation"
            )));
        }
        Event::ClientError(async_nats::ClientError::Other(why)) if why == refused => {
            federation.set_state(LinkState::Refused(format!("{url} answered: {why}")));
        }
        Event::ClientError(async_nats::ClientError::Other(why)) => {
            federation.set_state(LinkState::Unreachable(format!(
                "cannot reconnect to {url}: {why}"
            )));
        }
        _ => {}
    }
}

/// Why a session with the bucket ended.
enum Ended {
    /// The federation stops; the store is there to delete this board from, when reached.
    Stopped(Option<Box<kv::Store>>),
    /// The client reconnected: publish and watch anew.
    Reconnected,
    /// The bucket could not be used; tried again after a backoff.
    Failed(String),
}

/// One pass of publishing and watching, until a reconnection, a failure or the stop.
async fn session<B: Published>(
    server: &Arc<B>,
    identity: &Identity,
    client: &async_nats::Client,
) -> Ended {
    let federation = server.federation();
    let mut connections = federation.connections.subscribe();
    connections.borrow_and_update();
    let mut context = jetstream::new(client.clone());
    context.set_timeout(REQUEST_TIMEOUT);
    let store = tokio::select! {
        _ = federation.stop.cancelled() => return Ended::Stopped(None),
        store = bucket(&context, federation.config.ttl()) => match store {
            Ok(store) => store,
            Err(why) => return Ended::Failed(why),
        },
    };
    if let Err(why) = publish(server.as_ref(), identity, &store).await {
        return Ended::Failed(why);
    }
    let values = match super::versioned::bucket(&context).await {
        Ok(values) => values,
        Err(why) => return Ended::Failed(why),
    };
    // With its history: the latest revision comes first, and with it any change made while
    // this server was not connected.
    let mut mailbox = match values
        .watch_with_history(super::mailbox::mailbox_key(&identity.key.repository))
        .await
    {
        Ok(watch) => watch,
        Err(error) => return Ended::Failed(format!("the mailbox cannot be watched: {error}")),
    };
    *federation.value_bucket.lock_or_recover() = Some(values);
    let filter = BoardKey::repository_filter(&identity.key.repository);
    let mut watch = match store.watch_with_history(filter).await {
        Ok(watch) => watch,
        Err(error) => return Ended::Failed(format!("the bucket cannot be watched: {error}")),
    };
    federation.change_view(|view| view.begin_sync());
    if matches!(
        federation.link_state(),
        LinkState::Joining | LinkState::Impaired(_)
    ) {
        federation.set_state(LinkState::Connected);
    }
    let own_key = identity.key.as_key();
    let ttl = federation.config.ttl();
    let mut heartbeat = tokio::time::interval(ttl / 3);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    heartbeat.tick().await;
    let mut changed = false;
    let mut next_publish = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = federation.stop.cancelled() => return Ended::Stopped(Some(Box::new(store))),
            _ = connections.changed() => return Ended::Reconnected,
            entry = watch.next() => match entry {
                Some(Ok(entry)) => {
                    if entry.key != own_key {
                        take_in(federation, &entry, ttl);
                    }
                    if entry.seen_current {
                        federation.change_view(|view| view.mark_synced());
                    }
                }
                Some(Err(error)) => return Ended::Failed(format!("watching the bucket failed: {error}")),
                None => return Ended::Failed("the watch of the bucket ended".into()),
            },
            entry = mailbox.next() => match entry {
                Some(Ok(entry)) => federation.mailbox_revision.store(entry.revision, Ordering::Release),
                Some(Err(error)) => return Ended::Failed(format!("watching the mailbox failed: {error}")),
                None => return Ended::Failed("the watch of the mailbox ended".into()),
            },
            _ = federation.board_changed.notified(), if !changed => changed = true,
            _ = tokio::time::sleep_until(next_publish), if changed => {
                changed = false;
                next_publish = tokio::time::Instant::now() + REPUBLISH_INTERVAL;
                republish(server.as_ref(), identity, &store).await;
            }
            _ = heartbeat.tick() => {
                republish(server.as_ref(), identity, &store).await;
                federation.change_view(|view| view.prune(Instant::now(), ttl));
            }
        }
    }
}

/// Takes one watched entry into the remote view.
fn take_in(federation: &Federation, entry: &kv::Entry, ttl: Duration) {
    match entry.operation {
        kv::Operation::Put => {
            let published = SystemTime::from(entry.created);
            let age = SystemTime::now()
                .duration_since(published)
                .unwrap_or_default();
            federation
                .change_view(|view| view.put(&entry.key, &entry.value, age, Instant::now(), ttl));
        }
        kv::Operation::Delete | kv::Operation::Purge => {
            federation.change_view(|view| view.remove(&entry.key));
        }
    }
}

/// Publishes during a session: a failure is a state, not an end, since the next heartbeat
/// or reconnection tries again.
async fn republish<B: Published>(server: &B, identity: &Identity, store: &kv::Store) {
    let federation = server.federation();
    match publish(server, identity, store).await {
        Ok(()) => {
            if matches!(federation.link_state(), LinkState::Impaired(_)) {
                federation.set_state(LinkState::Connected);
            }
        }
        Err(why) => {
            if federation.link_state() == LinkState::Connected {
                federation.set_state(LinkState::Impaired(why));
            }
        }
    }
}

/// Puts this server's board under its key.
async fn publish<B: Published>(
    server: &B,
    identity: &Identity,
    store: &kv::Store,
) -> Result<(), String> {
    let now = SystemTime::now();
    let checkout = server.checkout();
    let published = PublishedCheckout {
        id: checkout.id.clone(),
        worktree: checkout.root.display().to_string(),
        branch: checkout.current_branch(),
    };
    let (_, bytes) = BoardDocument::publish(
        &identity.machine,
        published,
        server.standing(),
        server.federation().config.ttl().as_secs(),
        now,
        server.peers(now),
    );
    match tokio::time::timeout(
        REQUEST_TIMEOUT,
        store.put(identity.key.as_key(), bytes.into()),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(format!("this board cannot be published: {error}")),
        Err(_) => Err(format!(
            "publishing this board took longer than {} s",
            REQUEST_TIMEOUT.as_secs()
        )),
    }
}

/// The boards' bucket, a board kept `ttl` past its last publishing.
async fn bucket(context: &jetstream::Context, ttl: Duration) -> Result<kv::Store, String> {
    key_value_bucket(
        context,
        BUCKET,
        "majordomus: the boards of agents, one key per checkout",
        ttl,
        BOARD_BYTES,
        "; the NATS server needs JetStream on (`nats-server -js`)",
    )
    .await
}

/// Bucket `name`, created when it is missing: one value a key, of at most `message_bytes`,
/// kept `max_age` (zero: until it is replaced). It is made as the stream a key-value bucket
/// is (`KV_<bucket>` on `$KV.<bucket>.>`, one value per key, rollups, direct reads) rather
/// than through the client's `create_key_value`, which first asks for the account's details
/// in a form the NATS 2.9 servers of Debian's stable release do not answer. `unmade` ends
/// the error of a bucket that could not be made.
pub(super) async fn key_value_bucket(
    context: &jetstream::Context,
    name: &str,
    description: &str,
    max_age: Duration,
    message_bytes: usize,
    unmade: &str,
) -> Result<kv::Store, String> {
    if let Ok(store) = context.get_key_value(name).await {
        return Ok(store);
    }
    let stream = jetstream::stream::Config {
        name: format!("KV_{name}"),
        description: Some(description.into()),
        subjects: vec![format!("$KV.{name}.>")],
        max_messages_per_subject: 1,
        max_age,
        max_message_size: i32::try_from(message_bytes).unwrap_or(i32::MAX),
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        num_replicas: 1,
        discard: jetstream::stream::DiscardPolicy::New,
        ..Default::default()
    };
    let created = context.create_stream(stream).await;
    // Another server may have created it meanwhile; either way it is read as a bucket now.
    context
        .get_key_value(name)
        .await
        .map_err(|error| match created {
            Err(created) => format!("the bucket {name} cannot be made ({created}){unmade}"),
            Ok(_) => format!("the bucket {name} cannot be read ({error})"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnection_backs_off_to_five_seconds() {
        let waits: Vec<u64> = (0..9).map(|n| backoff(n).as_millis() as u64).collect();
        assert_eq!(waits, [0, 250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
    }

    #[test]
    fn the_host_name_is_read() {
        assert!(host_name().is_some_and(|name| !name.is_empty()));
    }
}
