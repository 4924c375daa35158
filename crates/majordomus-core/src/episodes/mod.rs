//! Recording episodes durably: the repository's episode driver, as this server runs it.
//!
//! The driver is the built-in [`journal`] unless the repository's `majordomus.toml` names a
//! [`command`] of its own. Either way it runs on one thread of its own, fed in the order the
//! episode board changed (every event is queued under the coordination's lock), so the journal never
//! says "closed" before "opened" and the async runtime never waits on a disk or a program.
//! What the driver reports goes back onto the board as the episode's `repository`; an attach
//! or a detach waits (boundedly) for that report so its answer can carry it.

pub mod command;
pub mod event;
pub mod journal;
pub mod log;
pub mod providers;

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use majordomus_checkout::Checkout;
use majordomus_domain::coordination::Coordination;
use majordomus_domain::episodes::ConnectionEpisode;
use majordomus_domain::ids::Stamp;
use majordomus_domain::peers::{Announcement, ClientInfo};
use majordomus_domain::sync::LockExt;
use tokio::sync::oneshot;

use crate::context::Site;
use command::CommandDriver;
use event::{
    CloseReason, Event, EventClient, EventKind, EventServer, INTERRUPTED_NOTE, JournalClaim,
};
use journal::{Journal, journal_path};
use providers::Providers;

/// How many distinct claims an episode's records carry; the oldest go first beyond it.
const CLAIMS_KEPT: usize = 64;

/// How many events may wait for the driver. A driver slower than the board (a stalled disk, a
/// slow command) makes events wait here; beyond this many they are not recorded and the
/// episodes they belong to say so, rather than the board waiting or memory growing.
pub const QUEUE_CAPACITY: usize = 4096;

/// How long an answer waits for the journal before it answers without its report.
const JOURNAL_PATIENCE: Duration = Duration::from_secs(5);

/// Why an answer goes without the driver's report. Its words stand in the episode's
/// `repository` in the report's place.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unreported {
    #[error(
        "the episode recorder stopped before {driver} reported; this event may be recorded nowhere"
    )]
    RecorderStopped { driver: String },
    #[error(
        "{driver} has not reported within {patience_ms} ms; its report will replace this one when it does"
    )]
    Late { driver: String, patience_ms: u128 },
}

/// A journal that could not take an event. Its words are the episode's `repository`.
#[derive(Debug, thiserror::Error)]
#[error("the episode journal at {} could not be written ({source}), so this {event} is recorded nowhere", path.display())]
struct Unwritten {
    path: std::path::PathBuf,
    event: &'static str,
    source: std::io::Error,
}

/// What the driver said about an attach.
#[derive(Clone, Debug)]
pub struct AttachReport {
    /// What `repository` now reports.
    pub text: String,
    /// Whether the journal showed the episode open already (left so by a server that ended
    /// without closing it) and it was continued rather than opened anew.
    pub carried_over: bool,
}

enum Job {
    Attached {
        episode: ConnectionEpisode,
        client: ClientInfo,
        resumed: bool,
        at: SystemTime,
        reply: oneshot::Sender<AttachReport>,
    },
    Announced {
        episode: ConnectionEpisode,
        announcement: Announcement,
        at: SystemTime,
    },
    Released {
        episode: ConnectionEpisode,
        claims: Vec<Announcement>,
        at: SystemTime,
    },
    Detached {
        episode: ConnectionEpisode,
        at: SystemTime,
    },
    Closed {
        episode: ConnectionEpisode,
        reason: CloseReason,
        at: SystemTime,
        reply: Option<oneshot::Sender<String>>,
    },
    Flush(oneshot::Sender<()>),
}

impl Job {
    /// The episode the job is about, if any.
    fn external_id(&self) -> Option<&str> {
        match self {
            Job::Attached { episode, .. }
            | Job::Announced { episode, .. }
            | Job::Released { episode, .. }
            | Job::Detached { episode, .. }
            | Job::Closed { episode, .. } => Some(&episode.external_id),
            Job::Flush(_) => None,
        }
    }

    /// Answers whoever waits for this job's report with `text`, since it will not run.
    fn answer_unrun(self, text: String) {
        match self {
            Job::Attached { reply, .. } => {
                let _ = reply.send(AttachReport {
                    text,
                    carried_over: false,
                });
            }
            Job::Closed {
                reply: Some(reply), ..
            } => {
                let _ = reply.send(text);
            }
            _ => {}
        }
    }
}

/// Events the driver never saw because the queue was full, by episode; reported onto each
/// episode's `repository` once the driver catches up. Holds at most the episodes on the
/// board, and is emptied at every report.
#[derive(Default)]
struct Unrecorded {
    by_episode: Mutex<HashMap<String, u64>>,
    any: std::sync::atomic::AtomicBool,
}
/// Whether this server may still record: it holds the checkout's lease. Asked on the
/// recorder's thread before each event reaches the driver.
pub type Entitled = Box<dyn Fn() -> bool + Send>;

/// What an event that came after the server lost its lease says in place of a report.
const DEPOSED: &str = "not recorded: this server lost the checkout's lease, and the server that \
    took it over records the checkout's episodes now";

/// The repository's episode driver, as this server runs it.
pub struct Recorder {
    jobs: mpsc::SyncSender<Job>,
    unrecorded: Arc<Unrecorded>,
    /// How long an answer waits for the driver's report.
    patience: Duration,
    /// The driver as a person reads it: `the journal at …` or `the command …`.
    description: String,
}

/// A report the caller of [`Recorder::attached`] or [`Recorder::closed`] may wait for.
pub struct Pending<T>(oneshot::Receiver<T>);

impl Recorder {
    /// Starts the driver `site`'s configuration names, reporting onto `board`, recording
    /// while `entitled` says this server holds the lease. A server whose lease was taken
    /// over (one stopped for a while, say, that comes back to find another serving) records
    /// nothing more, not even its connections leaving: the journal is the new server's now,
    /// and it has resumed those episodes.
    pub fn start(site: &Site, board: Arc<Mutex<Coordination>>, entitled: Entitled) -> Recorder {
        let grace = board.lock_or_recover().episodes().grace().as_secs();
        let (driver, patience, description) = match &site.config.episodes.command {
            Some(program) => {
                let command = CommandDriver::new(
                    program.clone(),
                    &site.checkout.root,
                    site.config.episodes.timeout(),
                );
                let patience = command.timeout() + Duration::from_secs(1);
                let description = format!("the command `{}`", command.display());
                (DriverPlan::Command(command), patience, description)
            }
            None => {
                let path = journal_path(&site.checkout);
                let description = format!("the journal at {}", path.display());
                (DriverPlan::Journal(path), JOURNAL_PATIENCE, description)
            }
        };
        let unrecorded: Arc<Unrecorded> = Arc::default();
        let (checkout, recorded) = (site.checkout.clone(), unrecorded.clone());
        let (jobs, queue) = mpsc::sync_channel(QUEUE_CAPACITY);
        // The worker, and its driver, are made on the recorder's own thread: opening the
        // journal reads it through, which is file I/O the server's start need not wait for.
        let spawned = std::thread::Builder::new()
            .name("majordomus-episodes".into())
            .spawn(move || {
                Worker {
                    driver: driver.open(),
                    checkout_id: checkout.id.clone(),
                    worktree: checkout.root.display().to_string(),
                    checkout,
                    server: EventServer::this_process(),
                    grace,
                    board,
                    providers: Providers::builtin(),
                    tracks: HashMap::new(),
                    unrecorded: recorded,
                    entitled,
                }
                .run(queue)
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "the episode recorder could not start; episodes are recorded nowhere");
        }
        Recorder {
            jobs,
            unrecorded,
            patience,
            description,
        }
    }

    /// The driver as a person reads it.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Queues `job` without ever waiting: it is called under the board's lock.
    fn send(&self, job: Job) {
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(job)) => {
                if let Some(id) = job.external_id() {
                    *self
                        .unrecorded
                        .by_episode
                        .lock_or_recover()
                        .entry(id.to_owned())
                        .or_default() += 1;
                    self.unrecorded
                        .any
                        .store(true, std::sync::atomic::Ordering::Release);
                }
                job.answer_unrun(format!(
                    "not recorded: {} is {QUEUE_CAPACITY} events behind",
                    self.description
                ));
            }
            Err(mpsc::TrySendError::Disconnected(job)) => {
                tracing::warn!(
                    "the episode recorder has stopped; an episode event is recorded nowhere"
                );
                job.answer_unrun(format!(
                    "not recorded: the recorder of {} has stopped",
                    self.description
                ));
            }
        }
    }

    /// A connection took up `episode` (opened it when `resumed` is false). Queue it while the
    /// board is still locked, so events reach the driver in the board's order.
    pub fn attached(
        &self,
        episode: &ConnectionEpisode,
        client: ClientInfo,
        resumed: bool,
        at: SystemTime,
    ) -> Pending<AttachReport> {
        let (reply, pending) = oneshot::channel();
        self.send(Job::Attached {
            episode: episode.clone(),
            client,
            resumed,
            at,
            reply,
        });
        Pending(pending)
    }

    /// The connection holding `episode` announced a claim.
    pub fn announced(
        &self,
        episode: &ConnectionEpisode,
        announcement: Announcement,
        at: SystemTime,
    ) {
        self.send(Job::Announced {
            episode: episode.clone(),
            announcement,
            at,
        });
    }

    /// The claims the peer holding `episode` left behind were released from the board.
    pub fn released(&self, episode: &ConnectionEpisode, claims: Vec<Announcement>, at: SystemTime) {
        self.send(Job::Released {
            episode: episode.clone(),
            claims,
            at,
        });
    }

    /// `episode` lost its connection and waits for its client.
    pub fn detached(&self, episode: &ConnectionEpisode, at: SystemTime) {
        self.send(Job::Detached {
            episode: episode.clone(),
            at,
        });
    }

    /// `episode` was closed and has left the board.
    pub fn closed(
        &self,
        episode: &ConnectionEpisode,
        reason: CloseReason,
        at: SystemTime,
    ) -> Pending<String> {
        let (reply, pending) = oneshot::channel();
        self.send(Job::Closed {
            episode: episode.clone(),
            reason,
            at,
            reply: Some(reply),
        });
        Pending(pending)
    }

    /// Waits for a report, at most as long as the driver may take.
    pub async fn report<T>(&self, pending: Pending<T>) -> Result<T, Unreported> {
        match tokio::time::timeout(self.patience, pending.0).await {
            Ok(Ok(report)) => Ok(report),
            Ok(Err(_)) => Err(Unreported::RecorderStopped {
                driver: self.description.clone(),
            }),
            Err(_) => Err(Unreported::Late {
                driver: self.description.clone(),
                patience_ms: self.patience.as_millis(),
            }),
        }
    }

    /// Waits until every event queued so far has been handed to the driver, for at most
    /// `bound`; says whether it got there.
    pub async fn flush(&self, bound: Duration) -> bool {
        let (reply, pending) = oneshot::channel();
        let deadline = tokio::time::Instant::now() + bound;
        let mut flush = Job::Flush(reply);
        // A full queue makes room as the driver works; a stopped driver never will.
        loop {
            match self.jobs.try_send(flush) {
                Ok(()) => break,
                Err(mpsc::TrySendError::Full(job)) if tokio::time::Instant::now() < deadline => {
                    flush = job;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(_) => return false,
            }
        }
        matches!(tokio::time::timeout_at(deadline, pending).await, Ok(Ok(())))
    }

    /// How long an answer waits for one report.
    pub fn patience(&self) -> Duration {
        self.patience
    }
}

enum Driver {
    Journal(Journal),
    Command(CommandDriver),
}

/// The driver a server's configuration names, before it is opened.
enum DriverPlan {
    Journal(std::path::PathBuf),
    Command(CommandDriver),
}

impl DriverPlan {
    /// The driver ready to record; the journal is read through as it opens.
    fn open(self) -> Driver {
        match self {
            DriverPlan::Journal(path) => Driver::Journal(Journal::open(path)),
            DriverPlan::Command(command) => Driver::Command(command),
        }
    }
}

/// What this server knows of an episode beyond the board: who holds it and what was claimed.
#[derive(Default)]
struct Track {
    client: EventClient,
    provider: String,
    claims: Vec<JournalClaim>,
}

struct Worker {
    driver: Driver,
    checkout_id: String,
    worktree: String,
    /// Read for its branch at each event: the checkout may switch branches while serving.
    checkout: Checkout,
    server: EventServer,
    grace: u64,
    board: Arc<Mutex<Coordination>>,
    providers: &'static Providers,
    tracks: HashMap<String, Track>,
    unrecorded: Arc<Unrecorded>,
    entitled: Entitled,
}

impl Worker {
    fn run(mut self, queue: mpsc::Receiver<Job>) {
        while let Ok(job) = queue.recv() {
            if !matches!(job, Job::Flush(_)) && !(self.entitled)() {
                job.answer_unrun(DEPOSED.to_owned());
                continue;
            }
            match job {
                Job::Attached {
                    episode,
                    client,
                    resumed,
                    at,
                    reply,
                } => {
                    let report = self.attached(episode, client, resumed, at);
                    let _ = reply.send(report);
                }
                Job::Announced {
                    episode,
                    announcement,
                    at,
                } => self.announced(&episode, announcement, at),
                Job::Released {
                    episode,
                    claims,
                    at,
                } => self.released(&episode, claims, at),
                Job::Detached { episode, at } => {
                    let text = self.record(EventKind::Detached, &episode, None, None, at);
                    self.set_repository(&episode.external_id, &text);
                }
                Job::Closed {
                    episode,
                    reason,
                    at,
                    reply,
                } => {
                    let text = self.record(EventKind::Closed, &episode, Some(reason), None, at);
                    self.tracks.remove(&episode.external_id);
                    if let Some(reply) = reply {
                        let _ = reply.send(text);
                    }
                }
                Job::Flush(reply) => {
                    let _ = reply.send(());
                }
            }
            self.report_unrecorded();
        }
    }

    /// Says on each episode's `repository` how many of its events the full queue turned away.
    fn report_unrecorded(&self) {
        use std::sync::atomic::Ordering;
        if !self.unrecorded.any.swap(false, Ordering::Acquire) {
            return;
        }
        let lost = std::mem::take(&mut *self.unrecorded.by_episode.lock_or_recover());
        for (external_id, count) in lost {
            let text = format!(
                "{count} event(s) of this episode were not recorded: the episode recorder fell \
                 {QUEUE_CAPACITY} events behind"
            );
            self.set_repository(&external_id, &text);
        }
    }

    fn set_repository(&self, external_id: &str, text: &str) {
        self.board
            .lock_or_recover()
            .episodes_mut()
            .set_repository(external_id, text);
    }

    fn attached(
        &mut self,
        mut episode: ConnectionEpisode,
        client: ClientInfo,
        resumed: bool,
        at: SystemTime,
    ) -> AttachReport {
        let provider = self.providers.for_client(&client.name).id.clone();
        let track = self.tracks.entry(episode.external_id.clone()).or_default();
        track.client = EventClient {
            name: client.name,
            version: client.version,
        };
        track.provider = provider;
        let mut kind = if resumed {
            EventKind::Resumed
        } else {
            EventKind::Opened
        };
        let mut note = None;
        let mut carried_over = false;
        if !resumed
            && let Driver::Journal(journal) = &mut self.driver
            && let Some(mark) = journal.open_mark(&episode.external_id)
            && !mark.server.is_this_process()
        {
            // The journal has it open: a server that ended without closing it (killed, say),
            // or the server of another worktree that holds it still.
            note = Some(if mark.server.still_runs() {
                format!(
                    "also held by the server of {} (pid {}), which still runs",
                    mark.worktree, mark.server.pid
                )
            } else {
                INTERRUPTED_NOTE.to_string()
            });
            kind = EventKind::Resumed;
            carried_over = true;
            let now = SystemTime::now();
            if let Some(continued) = self.board.lock_or_recover().episodes_mut().carry_over(
                &episode.external_id,
                mark.opened_at,
                mark.attachments,
                now,
            ) {
                episode = continued;
            }
        }
        let text = self.record(kind, &episode, None, note, at);
        self.set_repository(&episode.external_id, &text);
        AttachReport { text, carried_over }
    }

    fn announced(
        &mut self,
        episode: &ConnectionEpisode,
        announcement: Announcement,
        at: SystemTime,
    ) {
        let Some(track) = self.tracks.get_mut(&episode.external_id) else {
            return;
        };
        let same = |claim: &JournalClaim| {
            claim.name == announcement.name
                && claim.intent == announcement.intent
                && claim.scope == announcement.scope
        };
        if !track.claims.iter().any(same) {
            track.claims.push(JournalClaim::from(announcement.clone()));
            if track.claims.len() > CLAIMS_KEPT {
                track.claims.remove(0);
            }
        }
        // A command is told of an episode's life, not of each claim; the journal keeps every
        // claim as it is made, so none is lost to a crash.
        if let Driver::Journal(_) = self.driver {
            let mut event = self.event(EventKind::Announced, episode, None, None, at);
            event.claims = vec![JournalClaim::from(announcement)];
            let _ = self.write(&event);
        }
    }

    /// Records in the journal which claims left the board with the episode's peer; a
    /// command, told of an episode's life rather than of its claims, is not run.
    fn released(&mut self, episode: &ConnectionEpisode, claims: Vec<Announcement>, at: SystemTime) {
        if let Driver::Journal(_) = self.driver {
            let mut event = self.event(EventKind::Released, episode, None, None, at);
            event.claims = claims.into_iter().map(JournalClaim::from).collect();
            let _ = self.write(&event);
        }
    }

    fn event(
        &self,
        kind: EventKind,
        episode: &ConnectionEpisode,
        reason: Option<CloseReason>,
        note: Option<String>,
        at: SystemTime,
    ) -> Event {
        let track = self.tracks.get(&episode.external_id);
        Event {
            event: kind,
            at: Stamp::at(at).into(),
            external_id: episode.external_id.clone(),
            provider: track
                .map(|t| t.provider.clone())
                .unwrap_or_else(|| providers::GENERIC.to_string()),
            client: track.map(|t| t.client.clone()).unwrap_or_default(),
            checkout_id: self.checkout_id.clone(),
            worktree: self.worktree.clone(),
            branch: self.checkout.current_branch(),
            peer: episode.peer.as_ref().map(|p| p.to_string()),
            server: self.server,
            opened_at: episode.opened_at.into(),
            attachments: episode.attachments,
            reason,
            note,
            claims: track.map(|t| t.claims.clone()).unwrap_or_default(),
        }
    }

    /// Hands one lifecycle event to the driver and says what `repository` reports about it.
    fn record(
        &mut self,
        kind: EventKind,
        episode: &ConnectionEpisode,
        reason: Option<CloseReason>,
        note: Option<String>,
        at: SystemTime,
    ) -> String {
        let event = self.event(kind, episode, reason, note, at);
        // Either way the words are the episode's `repository`: what was recorded, or why not.
        match self.write(&event) {
            Ok(recorded) => recorded,
            Err(unwritten) => unwritten.to_string(),
        }
    }

    fn write(&mut self, event: &Event) -> Result<String, Unwritten> {
        match &mut self.driver {
            Driver::Command(command) => {
                let line = serde_json::to_string(event).expect("events serialise");
                Ok(command.run(event.event, &line))
            }
            Driver::Journal(journal) => {
                let seq = journal.append(event).map_err(|source| Unwritten {
                    path: journal.path().to_path_buf(),
                    event: event.event.as_str(),
                    source,
                })?;
                let opened = journal
                    .open_mark(&event.external_id)
                    .map(|mark| mark.opened_seq)
                    .filter(|&opened| opened != seq)
                    .map(|opened| format!(" (the episode was opened as #{opened})"))
                    .unwrap_or_default();
                Ok(match event.event {
                    EventKind::Opened => format!(
                        "opened in the journal as #{seq}; `majordomus episodes log` lists it"
                    ),
                    EventKind::Resumed => match &event.note {
                        Some(note) if note == INTERRUPTED_NOTE => format!(
                            "resumed in the journal as #{seq} after the previous server ended \
                             without closing it{opened}"
                        ),
                        Some(note) => format!("resumed in the journal as #{seq}, {note}{opened}"),
                        None => format!("resumed in the journal as #{seq}{opened}"),
                    },
                    EventKind::Detached => format!(
                        "detached in the journal as #{seq}; kept {} s for its client to come \
                         back{opened}",
                        self.grace
                    ),
                    EventKind::Closed => format!(
                        "closed in the journal as #{seq} ({})",
                        event.reason.map_or("closed", CloseReason::as_str)
                    ),
                    EventKind::Announced => format!("claim recorded in the journal as #{seq}"),
                    EventKind::Released => {
                        format!("released claims recorded in the journal as #{seq}")
                    }
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::testing::site_in_repository;
    use majordomus_checkout::config::Config;
    use majordomus_domain::peers::PeerId;

    fn client(name: &str) -> ClientInfo {
        ClientInfo {
            name: name.into(),
            version: "1.2.3".into(),
            title: None,
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_full_queue_turns_events_away_without_waiting_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let site = site_in_repository(dir.path(), Config::default());
        let board = Arc::new(Mutex::new(Coordination::new(
            "/repo",
            Duration::from_secs(900),
        )));
        let recorder = Recorder::start(&site, board.clone(), Box::new(|| true));
        let now = SystemTime::now();
        let (p1, p2) = (PeerId::nth(1), PeerId::nth(2));
        let first = board
            .lock()
            .unwrap()
            .episodes_mut()
            .attach(&p1, "first", "generic", now)
            .episode;
        let second = board
            .lock()
            .unwrap()
            .episodes_mut()
            .attach(&p2, "second", "generic", now)
            .episode;
        runtime().block_on(async {
            // The driver reports onto the board, so holding the board's lock holds it up
            // right after it takes the first event.
            let held = board.lock().unwrap();
            let pending = recorder.attached(&first, client("codex"), false, now);
            // claims of an episode the driver never saw cost it nothing, so the queue drains
            // fast once the board is let go
            let mut unknown = second.clone();
            unknown.external_id = "never-attached".into();
            let claim = Announcement {
                name: None,
                intent: "x".into(),
                scope: vec![],
                at: Stamp::at(now),
                resolved: vec![],
                compared: Default::default(),
            };
            let mut queued = 0;
            while recorder
                .jobs
                .try_send(Job::Announced {
                    episode: unknown.clone(),
                    announcement: claim.clone(),
                    at: now,
                })
                .is_ok()
            {
                queued += 1;
            }
            assert!(queued >= QUEUE_CAPACITY - 1, "{queued}");
            recorder.detached(&second, now);
            let mut refused = recorder.closed(&second, CloseReason::Detach, now);
            let text = refused
                .0
                .try_recv()
                .expect("answered at once, without the driver");
            assert!(
                text.contains("not recorded") && text.contains("4096 events behind"),
                "{text}"
            );
            drop(held);

            recorder.report(pending).await.unwrap();
            assert!(recorder.flush(Duration::from_secs(30)).await);
            let said = board
                .lock()
                .unwrap()
                .episodes()
                .episode("second", now)
                .unwrap()
                .repository;
            assert_eq!(
                said,
                "2 event(s) of this episode were not recorded: the episode recorder fell 4096 \
                 events behind"
            );
        });
    }

    #[test]
    fn the_journal_records_a_whole_episode_and_reports_onto_the_board() {
        let dir = tempfile::tempdir().unwrap();
        let site = site_in_repository(dir.path(), Config::default());
        let board = Arc::new(Mutex::new(Coordination::new(
            "/repo",
            Duration::from_secs(900),
        )));
        let recorder = Recorder::start(&site, board.clone(), Box::new(|| true));
        assert!(recorder.description().contains("episodes.jsonl"));
        let now = SystemTime::now();
        let p1 = PeerId::nth(1);
        runtime().block_on(async {
            let outcome = board
                .lock()
                .unwrap()
                .episodes_mut()
                .attach(&p1, "conv-42", "generic", now);
            let pending = recorder.attached(&outcome.episode, client("claude-code"), false, now);
            let report = recorder.report(pending).await.unwrap();
            assert_eq!(
                report.text,
                "opened in the journal as #1; `majordomus episodes log` lists it"
            );
            assert!(!report.carried_over);
            let on_board = board
                .lock()
                .unwrap()
                .episodes()
                .episode("conv-42", now)
                .unwrap();
            assert_eq!(on_board.repository, report.text);

            let announcement = Announcement {
                name: None,
                intent: "fix the parser".into(),
                scope: vec!["src/parser".into()],
                at: Stamp::at(now),
                resolved: vec![],
                compared: Default::default(),
            };
            recorder.announced(&on_board, announcement.clone(), now);
            let lost = board
                .lock()
                .unwrap()
                .episodes_mut()
                .connection_lost(&p1, now)
                .unwrap();
            recorder.detached(&lost, now);
            let closed = board
                .lock()
                .unwrap()
                .episodes_mut()
                .close("conv-42", now)
                .unwrap();
            let text = recorder
                .report(recorder.closed(&closed, CloseReason::Expired, now))
                .await
                .unwrap();
            assert_eq!(text, "closed in the journal as #4 (expired)");
            assert!(recorder.flush(Duration::from_secs(5)).await);
        });
        let path = journal_path(&site.checkout);
        let records = journal::read_journal(&path).unwrap().unwrap().records;
        let kinds: Vec<EventKind> = records.iter().map(|r| r.event.event).collect();
        assert_eq!(
            kinds,
            [
                EventKind::Opened,
                EventKind::Announced,
                EventKind::Detached,
                EventKind::Closed
            ]
        );
        let opened = &records[0].event;
        assert_eq!(opened.provider, "claude-code");
        assert_eq!(opened.client.name, "claude-code");
        assert_eq!(opened.client.version, "1.2.3");
        assert_eq!(opened.branch.as_deref(), Some("main"));
        assert_eq!(opened.checkout_id, site.checkout.id);
        assert_eq!(opened.peer.as_deref(), Some("p1"));
        let closed = &records[3].event;
        assert_eq!(closed.reason, Some(CloseReason::Expired));
        assert_eq!(closed.claims.len(), 1);
        assert_eq!(closed.claims[0].intent, "fix the parser");
        assert!(closed.peer.is_none());
    }

    #[test]
    fn a_recorder_whose_server_lost_the_lease_writes_nothing_more() {
        let dir = tempfile::tempdir().unwrap();
        let site = site_in_repository(dir.path(), Config::default());
        let board = Arc::new(Mutex::new(Coordination::new(
            "/repo",
            Duration::from_secs(900),
        )));
        let holds = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let entitled = {
            let holds = holds.clone();
            Box::new(move || holds.load(std::sync::atomic::Ordering::SeqCst))
        };
        let recorder = Recorder::start(&site, board.clone(), entitled);
        let now = SystemTime::now();
        let p1 = PeerId::nth(1);
        runtime().block_on(async {
            let outcome = board
                .lock()
                .unwrap()
                .episodes_mut()
                .attach(&p1, "conv-9", "generic", now);
            let pending = recorder.attached(&outcome.episode, client("codex"), false, now);
            recorder.report(pending).await.unwrap();

            holds.store(false, std::sync::atomic::Ordering::SeqCst);
            let lost = board
                .lock()
                .unwrap()
                .episodes_mut()
                .connection_lost(&p1, now)
                .unwrap();
            recorder.detached(&lost, now);
            let closed = board
                .lock()
                .unwrap()
                .episodes_mut()
                .close("conv-9", now)
                .unwrap();
            let text = recorder
                .report(recorder.closed(&closed, CloseReason::Expired, now))
                .await
                .unwrap();
            assert!(
                text.starts_with("not recorded: this server lost the checkout's lease"),
                "{text}"
            );
            assert!(recorder.flush(Duration::from_secs(5)).await);
        });
        let path = journal_path(&site.checkout);
        let records = journal::read_journal(&path).unwrap().unwrap().records;
        let kinds: Vec<EventKind> = records.iter().map(|r| r.event.event).collect();
        assert_eq!(
            kinds,
            [EventKind::Opened],
            "nothing after the lease was lost"
        );
    }

    #[test]
    fn an_episode_a_dead_server_left_open_is_resumed_not_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let site = site_in_repository(dir.path(), Config::default());
        let path = journal_path(&site.checkout);
        // a previous server (a pid that cannot be running) opened it and never closed it
        let mut earlier = Journal::open(path.clone());
        let mut opened = journal::tests_support::event(EventKind::Opened, "conv-7");
        opened.server = EventServer {
            pid: u32::MAX - 1,
            started: Some(1),
        };
        opened.opened_at = "2026-01-02T03:04:05Z".parse().unwrap();
        opened.attachments = 2;
        earlier.append(&opened).unwrap();

        let board = Arc::new(Mutex::new(Coordination::new(
            "/repo",
            Duration::from_secs(900),
        )));
        let recorder = Recorder::start(&site, board.clone(), Box::new(|| true));
        let now = SystemTime::now();
        runtime().block_on(async {
            let outcome = board.lock().unwrap().episodes_mut().attach(
                &PeerId::nth(1),
                "conv-7",
                "generic",
                now,
            );
            assert!(!outcome.resumed);
            let pending = recorder.attached(&outcome.episode, client("codex"), false, now);
            let report = recorder.report(pending).await.unwrap();
            assert!(report.carried_over);
            assert!(
                report
                    .text
                    .contains("after the previous server ended without closing it"),
                "{}",
                report.text
            );
            assert!(report.text.contains("opened as #1"), "{}", report.text);
        });
        let episode = board
            .lock()
            .unwrap()
            .episodes()
            .episode("conv-7", now)
            .unwrap();
        assert_eq!(episode.opened_at.to_string(), "2026-01-02T03:04:05Z");
        assert_eq!(episode.attachments, 3);
        let records = journal::read_journal(&path).unwrap().unwrap().records;
        assert_eq!(records.len(), 2);
        assert_eq!(records[1].event.event, EventKind::Resumed);
        assert_eq!(records[1].event.note.as_deref(), Some(INTERRUPTED_NOTE));
        assert_eq!(records[1].event.provider, "codex");
    }

    #[test]
    fn a_command_driver_reports_its_last_stderr_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.episodes.command = Some(vec![
            "sh".into(),
            "-c".into(),
            "read e; case \"$e\" in *'\"event\":\"opened\"'*) echo 'tracker: opened T-1' >&2;; *) echo \"tracker: $MAJORDOMUS_EPISODE_EVENT\" >&2;; esac".into(),
        ]);
        let site = site_in_repository(dir.path(), config);
        let board = Arc::new(Mutex::new(Coordination::new(
            "/repo",
            Duration::from_secs(900),
        )));
        let recorder = Recorder::start(&site, board.clone(), Box::new(|| true));
        assert!(recorder.description().starts_with("the command `sh -c"));
        let now = SystemTime::now();
        runtime().block_on(async {
            let outcome =
                board
                    .lock()
                    .unwrap()
                    .episodes_mut()
                    .attach(&PeerId::nth(1), "c", "generic", now);
            let pending = recorder.attached(&outcome.episode, client("x"), false, now);
            assert_eq!(
                recorder.report(pending).await.unwrap().text,
                "tracker: opened T-1"
            );
            let closed = board
                .lock()
                .unwrap()
                .episodes_mut()
                .close("c", now)
                .unwrap();
            let text = recorder
                .report(recorder.closed(&closed, CloseReason::Detach, now))
                .await
                .unwrap();
            assert_eq!(text, "tracker: closed");
        });
        assert!(
            !journal_path(&site.checkout).exists(),
            "a command replaces the journal"
        );
    }
}
