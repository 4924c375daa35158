//! The client sessions a serving process knows by the client's own conversation id: which
//! peer speaks for each, the implicit `edits` claim of a session's edited files, and what
//! each session was already told.
//!
//! A client's hooks and its MCP connection are two doors of one worker. Both name the
//! worker's conversation: a hook by the `session_id` of its input, the MCP connection by the
//! id its `majordomus mcp` was given (an environment variable the bridge passes on in
//! `initialize`, or Codex's turn metadata on each `tools/call`). The first door to name a
//! session makes it known; whichever peer speaks for it then carries the session's claims,
//! so hook edits and MCP announcements are one peer on the board.
//!
//! Where no id reaches both doors (Gemini CLI's MCP server is told none, Codex's only with
//! its first tool call), the client process joins them: a `majordomus mcp` names its parent,
//! which is the client, and a hook names its ancestors (pid and start time each, so a reused
//! pid joins nothing); a hook whose ancestors include an MCP connection's client is that
//! connection's session. The client process is held, and its end ends the session's peer. A
//! session that neither door joins gets a peer of its own, named after its client, which
//! leaves the board once its hooks have been quiet for `[hooks] session_idle_secs`.
//!
//! What is remembered of the sessions, and its bounds, is `hook_sessions`; this file holds
//! the rules that join the doors and keep the board true to the sessions.

use std::collections::HashSet;
use std::sync::{Arc, MutexGuard, Weak};
use std::time::{Duration, Instant, SystemTime};

use majordomus_checkout::ancestry::{ANCESTORS, ProcessStamp};
use majordomus_checkout::changes::ChangeKind;
use majordomus_domain::board::PeerBoard;
use majordomus_domain::episodes::validate_external_id;
use majordomus_domain::limits;
use majordomus_domain::paths::{ClaimPath, normalize};
use majordomus_domain::peers::{AnnounceInput, ClientInfo, PeerId, Transport};
use majordomus_domain::sync::LockExt;

use super::ServerState;
use super::hook_sessions::{ClientProcess, HookSessions, is_attached};
use majordomus_core::api::CapabilityError;
use majordomus_core::port::EDITS_CLAIM;

/// The intent of the `edits` claim, as other sessions read it.
const EDITS_INTENT: &str = "files this session edited";

/// What a peer made for a session's hooks says about itself, beside its client's name.
const HOOK_PEER_TITLE: &str = "a session seen through its hooks";

/// How often the sessions' hooks are checked for silence.
const REAP_INTERVAL: Duration = Duration::from_secs(1);

/// How long after a session's latest recorded edit its `edits` claim is compared with the
/// worktree's changes: long past any reading of them the edit could predate (one is kept a
/// second), so an edit just made is never taken for one undone.
const EDITS_SETTLED: Duration = Duration::from_secs(10);

/// How many ticks of [`REAP_INTERVAL`] apart the settled `edits` claims are compared with
/// the worktree's changes: each comparison may run `git status`.
const PRUNE_TICKS: u32 = 10;

impl ServerState {
    pub(crate) fn sessions(&self) -> MutexGuard<'_, HookSessions> {
        self.sessions.lock_or_recover()
    }

    /// The peer that speaks for the client session `session_id` (checked by the caller),
    /// whose hook runs under `ancestors`: the MCP connection that named it while that is
    /// attached, else the MCP connection whose client process is among `ancestors`, else a
    /// peer made for its hooks, which takes over the claims of the session's former peer. A
    /// new peer holds the session's episode (external id = the session id) at once.
    pub(crate) async fn hook_peer(
        &self,
        client: &str,
        session_id: &str,
        ancestors: &[ProcessStamp],
    ) -> PeerId {
        let now = SystemTime::now();
        let joined = {
            let mut sessions = self.sessions();
            let coordination = self.coordination();
            let board = coordination.peers();
            let named_by_connection = {
                let (session, _) = sessions.entry(session_id, Instant::now());
                session.ancestors = ancestors.iter().take(ANCESTORS).copied().collect();
                session
                    .peer
                    .as_ref()
                    .filter(|peer| !session.made_for_hooks && is_attached(board, peer, now))
                    .is_some()
            };
            (!named_by_connection)
                .then(|| sessions.connection_of_client(session_id, ancestors, board, now))
                .flatten()
        };
        if let Some(peer) = joined {
            self.adopt_session(&peer, session_id).await;
            self.touch(&peer);
            return peer;
        }
        let (peer, made, evicted) = {
            let mut sessions = self.sessions();
            let (session, evicted) = sessions.entry(session_id, Instant::now());
            let mut coordination = self.coordination();
            let board = coordination.peers_mut();
            match session.peer.clone() {
                Some(peer) if is_attached(board, &peer, now) => {
                    board.touch(&peer, now);
                    (peer, false, evicted)
                }
                former => {
                    let introduction = ClientInfo {
                        name: client.to_owned(),
                        version: String::new(),
                        title: Some(HOOK_PEER_TITLE.to_owned()),
                    };
                    let peer = board.attach(Transport::Http, introduction, now);
                    self.events.attached(board, &peer);
                    if let Some(former) = former {
                        self.carry_claims(board, &former, &peer);
                    }
                    session.peer = Some(peer.clone());
                    session.made_for_hooks = true;
                    (peer, true, evicted)
                }
            }
        };
        if let Some(evicted) = evicted {
            self.connection_lost(&evicted);
        }
        if made {
            tracing::info!(%peer, %client, "a session seen through its hooks joined the board");
            self.board_changed();
            self.attach_episode(&peer, session_id).await;
        } else {
            self.coordination().episodes_mut().touch(&peer, now);
        }
        peer
    }

    /// The MCP connection of `peer` runs for the client process `stamp`: the client's hooks
    /// join it from now on, and the process is held: when it ends, so does the peer. A new
    /// connection's process is held as it joins the board (`attach`); this holds the process
    /// of a connection that joined without naming it (a parked session brought back).
    /// Whether the process is held (it is alive, and within the bound).
    pub(crate) fn hold_client_process(&self, peer: &PeerId, stamp: ProcessStamp) -> bool {
        let Some(living) = ClientProcess::living(stamp) else {
            return false;
        };
        let mut sessions = self.sessions();
        let coordination = self.coordination();
        sessions.hold(peer, living, coordination.peers(), SystemTime::now())
    }

    /// The session whose hooks already ran under the client process `stamp` that `peer`'s
    /// connection holds (the latest heard from, while no connection of its own named it) is
    /// the connection's session now.
    pub(crate) async fn adopt_waiting_session(&self, peer: &PeerId, stamp: ProcessStamp) {
        let now = SystemTime::now();
        let waiting = {
            let sessions = self.sessions();
            if sessions
                .clients
                .get(peer)
                .is_none_or(|client| client.stamp != stamp)
            {
                return;
            }
            let coordination = self.coordination();
            let board = coordination.peers();
            let speaks_already = sessions
                .sessions
                .values()
                .any(|session| !session.made_for_hooks && session.peer.as_ref() == Some(peer));
            if speaks_already {
                return;
            }
            sessions
                .sessions
                .iter()
                .filter(|(_, session)| session.ancestors.contains(&stamp))
                .filter(|(_, session)| {
                    session.made_for_hooks
                        || session
                            .peer
                            .as_ref()
                            .is_none_or(|known| !is_attached(board, known, now))
                })
                .max_by_key(|(_, session)| session.heard)
                .map(|(id, _)| id.clone())
        };
        if let Some(session_id) = waiting {
            self.adopt_session(peer, &session_id).await;
        }
    }

    /// Takes off the board every MCP connection's peer whose client process has ended: the
    /// session is over even where the connection lingers (a client that leaves its servers
    /// running, a bridge not yet told). Connections that left already are forgotten with
    /// their process.
    pub(crate) fn let_ended_clients_go(&self) {
        let now = SystemTime::now();
        let ended: Vec<PeerId> = {
            let mut sessions = self.sessions();
            {
                let coordination = self.coordination();
                let board = coordination.peers();
                sessions
                    .clients
                    .retain(|peer, _| is_attached(board, peer, now));
            }
            let ended: Vec<PeerId> = sessions
                .clients
                .iter()
                .filter(|(_, client)| !client.held.alive())
                .map(|(peer, _)| peer.clone())
                .collect();
            for peer in &ended {
                sessions.clients.remove(peer);
            }
            ended
        };
        for peer in &ended {
            tracing::info!(%peer, "the client of a connection ended; its peer leaves the board");
            self.workers().silenced.insert(peer.clone());
            self.connection_lost(peer);
        }
    }

    /// The session `session_id` ended, as its client's session-end hook says: a peer made
    /// for its hooks leaves the board; an MCP connection leaves when its client closes it,
    /// and until then holds no `edits` claim any more (the changes on disk tell the files).
    /// Whether the session was known.
    pub(crate) fn end_session(&self, session_id: &str) -> bool {
        let Some(session) = self.sessions().sessions.remove(session_id) else {
            return false;
        };
        let Some(peer) = session.peer else {
            return true;
        };
        if session.made_for_hooks {
            if is_attached(self.coordination().peers(), &peer, SystemTime::now()) {
                tracing::info!(%peer, "a session ended; its peer leaves the board");
                self.connection_lost(&peer);
            }
        } else if self.coordination().peers_mut().withdraw(&peer, EDITS_CLAIM) {
            self.board_changed();
        }
        true
    }

    /// Gives `to` every claim of `from` and takes `from` off the board: the same worker
    /// speaks through a new peer now. The caller holds the board's lock.
    fn carry_claims(&self, board: &mut PeerBoard, from: &PeerId, to: &PeerId) {
        let claims = board.adopt(from, to);
        self.events.retired(from, to);
        tracing::debug!(%from, %to, claims, "a session's claims were carried over");
    }

    /// An MCP connection named the client session it carries: its peer now speaks for the
    /// session, taking over the claims of a peer made for the session's hooks (or of the
    /// session's departed peer), and its episode is the session's. An id that could not name
    /// an episode is ignored: nothing the client asked for depends on it.
    pub(crate) async fn adopt_session(&self, peer: &PeerId, session_id: &str) {
        if let Err(error) = validate_external_id(session_id) {
            tracing::debug!(%error, "a client session id that cannot name an episode is ignored");
            return;
        }
        let now = SystemTime::now();
        let evicted = {
            let mut sessions = self.sessions();
            let (session, evicted) = sessions.entry(session_id, Instant::now());
            let former = session.peer.replace(peer.clone());
            let made_for_hooks = std::mem::replace(&mut session.made_for_hooks, false);
            if let Some(former) = former.filter(|former| former != peer) {
                let mut coordination = self.coordination();
                let board = coordination.peers_mut();
                if made_for_hooks || !is_attached(board, &former, now) {
                    self.carry_claims(board, &former, peer);
                }
            }
            evicted
        };
        if let Some(evicted) = evicted {
            self.connection_lost(&evicted);
        }
        tracing::info!(%peer, "an MCP connection named its client session");
        self.board_changed();
        if self.held_episode(peer).as_deref() != Some(session_id) {
            self.attach_episode(peer, session_id).await;
        }
    }

    /// Puts `paths` at the front of `peer`'s `edits` claim, which keeps the latest
    /// [`limits::SCOPE_PATHS`] files edited, each once; answers the claim as it now stands.
    pub(crate) fn record_edits(
        &self,
        peer: &PeerId,
        paths: &[ClaimPath],
    ) -> Result<Vec<String>, CapabilityError> {
        let now = SystemTime::now();
        let mut coordination = self.coordination();
        let board = coordination.peers_mut();
        let kept = board
            .record_in_front(
                peer,
                EDITS_CLAIM,
                EDITS_INTENT,
                paths,
                limits::SCOPE_PATHS,
                now,
            )
            .map_err(|error| {
                CapabilityError::refused(format!("the edit was not recorded: {error}"))
            })?;
        drop(coordination);
        // The hand-over and the federation keep and publish the claim as any other.
        self.claims_changed();
        self.sessions().edited.insert(peer.clone(), Instant::now());
        Ok(kept
            .iter()
            .map(|path| path.as_written().to_owned())
            .collect())
    }

    /// Takes out of the `edits` claims that have not grown for [`EDITS_SETTLED`] the files
    /// that no longer differ from `HEAD` (an edit undone, say with `git checkout`): such a
    /// file is nobody's work any more. A claim left with no file goes. Nothing is taken
    /// while the worktree's changes cannot be read or are too many to list.
    pub(crate) async fn prune_undone_edits(&self) {
        let now = SystemTime::now();
        let settled: Vec<PeerId> = {
            let mut sessions = self.sessions();
            let coordination = self.coordination();
            let board = coordination.peers();
            sessions
                .edited
                .retain(|peer, _| is_attached(board, peer, now));
            sessions
                .edited
                .iter()
                .filter(|(_, at)| at.elapsed() >= EDITS_SETTLED)
                .map(|(peer, _)| peer.clone())
                .collect()
        };
        if settled.is_empty() {
            return;
        }
        let site = self.site.clone();
        let read = tokio::task::spawn_blocking(move || {
            let default_branch = site.config.changes.default_branch.as_deref();
            site.changes.changes(&site.checkout.root, default_branch)
        })
        .await;
        let Ok(Ok(changes)) = read else {
            return;
        };
        if changes.omitted > 0 {
            return;
        }
        let root = self.site.checkout.root.to_string_lossy().into_owned();
        let differing: HashSet<Vec<String>> = changes
            .paths
            .iter()
            .filter(|changed| {
                changed
                    .kinds
                    .iter()
                    .any(|kind| *kind != ChangeKind::Committed)
            })
            .filter_map(|changed| normalize(&changed.path, &root).ok())
            .map(|path| path.components().to_vec())
            .collect();
        let mut coordination = self.coordination();
        let board = coordination.peers_mut();
        let mut narrowed = false;
        for peer in &settled {
            let Some(edits) = board.peer(peer, now).and_then(|known| {
                known
                    .claims
                    .into_iter()
                    .find(|claim| claim.name.as_deref() == Some(EDITS_CLAIM))
            }) else {
                continue;
            };
            let kept: Vec<String> = edits
                .scope
                .iter()
                .filter(|written| {
                    normalize(written, &root)
                        .is_ok_and(|path| differing.contains(path.components()))
                })
                .cloned()
                .collect();
            if kept.len() == edits.scope.len() {
                continue;
            }
            narrowed = true;
            if kept.is_empty() {
                board.withdraw(peer, EDITS_CLAIM);
                continue;
            }
            let input = AnnounceInput {
                intent: EDITS_INTENT.to_owned(),
                scope: kept,
                claim: Some(EDITS_CLAIM.to_owned()),
            };
            if let Err(error) = board.announce(peer, input, now) {
                tracing::debug!(%error, "an edits claim could not be narrowed");
            }
        }
        drop(coordination);
        if narrowed {
            tracing::info!("files no longer changed left the edits claims");
            self.board_changed();
        }
    }

    /// Remembers that `session_id` was told the facts of `keys`.
    pub(crate) fn mark_told(&self, session_id: &str, keys: &[u64]) {
        let mut sessions = self.sessions();
        let (session, _) = sessions.entry(session_id, Instant::now());
        for &key in keys {
            session.told.learn(key);
        }
    }

    /// Whether `session_id` was not told yet each fact of `keys`, in order; each counts as
    /// told from now on.
    pub(crate) fn untold(&self, session_id: &str, keys: &[u64]) -> Vec<bool> {
        let mut sessions = self.sessions();
        let (session, _) = sessions.entry(session_id, Instant::now());
        keys.iter().map(|&key| session.told.learn(key)).collect()
    }

    /// How many attached peers are connections (MCP sessions, stdio or bridged or over
    /// HTTP), not peers made for a session's hooks: what keeps a server that serves while
    /// connected alive.
    pub(crate) fn connected_peers(&self) -> usize {
        let now = SystemTime::now();
        let sessions = self.sessions();
        let coordination = self.coordination();
        let board = coordination.peers();
        let hooks_only = sessions
            .sessions
            .values()
            .filter(|session| session.made_for_hooks)
            .filter_map(|session| session.peer.as_ref())
            .filter(|peer| is_attached(board, peer, now))
            .count();
        board.attached_count().saturating_sub(hooks_only)
    }

    /// Takes the peers made for sessions whose hooks have been quiet for `[hooks]
    /// session_idle_secs` off the board; their claims stay, as any departed peer's do, and
    /// their episodes wait for their client.
    pub(crate) fn reap_quiet_sessions(&self) {
        let idle = self.site.config.hooks.session_idle();
        let now = SystemTime::now();
        let quiet: Vec<PeerId> = {
            let sessions = self.sessions();
            let coordination = self.coordination();
            let board = coordination.peers();
            sessions
                .sessions
                .values()
                .filter(|session| session.made_for_hooks && session.heard.elapsed() >= idle)
                .filter_map(|session| session.peer.clone())
                .filter(|peer| is_attached(board, peer, now))
                .collect()
        };
        for peer in &quiet {
            tracing::info!(%peer, "a session seen through its hooks went quiet and leaves the board");
            self.connection_lost(peer);
        }
    }
}

/// Checks the connections' client processes for their end and the sessions' hooks for
/// silence every [`REAP_INTERVAL`], and the settled `edits` claims against the worktree's
/// changes every [`PRUNE_TICKS`] of them, until the server stops.
pub(super) fn watch_quiet_sessions(state: &Arc<ServerState>) {
    let weak: Weak<ServerState> = Arc::downgrade(state);
    let stop = state.shutdown.clone();
    state.tasks.spawn(async move {
        let mut tick = tokio::time::interval(REAP_INTERVAL);
        let mut ticks: u32 = 0;
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => match weak.upgrade() {
                    Some(state) => {
                        state.let_ended_clients_go();
                        state.reap_quiet_sessions();
                        ticks = ticks.wrapping_add(1);
                        if ticks.is_multiple_of(PRUNE_TICKS) {
                            state.prune_undone_edits().await;
                        }
                    }
                    None => break,
                },
            }
        }
    });
}
