//! A connection's clock: the phase it is in, the deadline that phase holds it to, and the
//! verdict its watchdog reads after each poll of the connection, with the timer that wakes
//! the watchdog when the next deadline comes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use majordomus_domain::sync::LockExt;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why a connection's watch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Closed {
    /// It ended, by its own course or the server's stop.
    Ended,
    /// It missed the deadline of its phase, or gave its probation place to a newer one.
    Deadline,
    /// Its reader did not read within [`super::WRITE_DEADLINE`].
    Unread,
}

/// The watchdog's timer: aimed at the connection's deadline, at once at a sooner one; a
/// later one it finds when it rings, and is aimed again.
pub(super) struct Alarm {
    sleep: Pin<Box<tokio::time::Sleep>>,
    /// What it rings at; `None` once it rang, or before it was first aimed.
    aimed: Option<Instant>,
}

impl Alarm {
    pub(super) fn new() -> Alarm {
        Alarm {
            sleep: Box::pin(tokio::time::sleep_until(Instant::now())),
            aimed: None,
        }
    }

    /// Ready once `deadline` (or an earlier one it was aimed at) has come; never without a
    /// deadline.
    fn poll_until(&mut self, deadline: Option<Instant>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(deadline) = deadline else {
            return Poll::Pending;
        };
        if self.aimed.is_none_or(|aimed| deadline < aimed) {
            self.sleep.as_mut().reset(deadline);
            self.aimed = Some(deadline);
        }
        let rang = self.sleep.as_mut().poll(cx);
        if rang.is_ready() {
            self.aimed = None;
        }
        rang
    }
}

/// The deadlines a connection is held to.
#[derive(Clone, Copy, Debug)]
pub(super) struct Deadlines {
    /// From the connection's start, or the first byte of its next request, to a whole head.
    pub(super) head: Duration,
    /// From the end of one answer to the first byte of the next request.
    pub(super) idle: Duration,
    /// From a write that found the socket's buffer full to the next that went through.
    pub(super) write: Duration,
}

/// What a connection is doing, as far as its deadlines care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for a request head, since the connection opened or the next request's first
    /// byte arrived.
    AwaitingHead { since: Instant },
    /// Serving requests: no deadline while an answer is on its way.
    Serving { requests: usize },
    /// Kept alive between requests, since the last answer ended.
    Idle { since: Instant },
}

impl Phase {
    pub(super) fn bytes_arrived(self, now: Instant) -> Phase {
        match self {
            Phase::Idle { .. } => Phase::AwaitingHead { since: now },
            other => other,
        }
    }

    pub(super) fn request_began(self) -> Phase {
        match self {
            Phase::Serving { requests } => Phase::Serving {
                requests: requests + 1,
            },
            Phase::AwaitingHead { .. } | Phase::Idle { .. } => Phase::Serving { requests: 1 },
        }
    }

    pub(super) fn request_ended(self, now: Instant) -> Phase {
        match self {
            Phase::Serving { requests } if requests > 1 => Phase::Serving {
                requests: requests - 1,
            },
            Phase::Serving { .. } => Phase::Idle { since: now },
            other => other,
        }
    }

    fn deadline(self, deadlines: Deadlines) -> Option<Instant> {
        match self {
            Phase::AwaitingHead { since } => Some(since + deadlines.head),
            Phase::Idle { since } => Some(since + deadlines.idle),
            Phase::Serving { .. } => None,
        }
    }
}

/// One connection's phase, shared by its socket (bytes arriving), its service (requests
/// beginning, answers ending) and its watchdog.
///
/// The watchdog runs in the connection's own task and reads the clock each time that task
/// has polled the connection, so the connection's own changes wake nobody: a sooner deadline
/// aims its timer at once, a later one is found when the timer rings. Only a displacement,
/// which another connection's arrival makes, wakes it. A task that woke itself while polled
/// would be handed to the other worker thread: a context switch per request that a busy
/// connection never needs.
pub(super) struct ConnectionClock {
    deadlines: Deadlines,
    state: Mutex<ClockState>,
    /// Whether a write is waiting for the other end to read: its socket's own flag, so a
    /// write that goes through takes no lock.
    write_waits: AtomicBool,
    /// Set when a newcomer took this connection's probation place.
    displaced: AtomicBool,
    pub(super) changed: Notify,
    /// Cancelled once the connection is closed.
    pub(super) ended: CancellationToken,
}

impl ConnectionClock {
    pub(super) fn new(deadlines: Deadlines, opened: Instant) -> ConnectionClock {
        ConnectionClock {
            deadlines,
            state: Mutex::new(ClockState {
                phase: Phase::AwaitingHead { since: opened },
                write_waits_since: None,
            }),
            write_waits: AtomicBool::new(false),
            displaced: AtomicBool::new(false),
            changed: Notify::new(),
            ended: CancellationToken::new(),
        }
    }

    pub(super) fn awaits_head(&self) -> bool {
        matches!(
            self.state.lock_or_recover().phase,
            Phase::AwaitingHead { .. }
        )
    }

    pub(super) fn displace(&self) {
        self.displaced.store(true, Ordering::SeqCst);
        self.changed.notify_one();
    }

    fn displaced(&self) -> bool {
        self.displaced.load(Ordering::SeqCst)
    }

    /// Moves the phase on. Called by the connection's own task only, whose watchdog reads
    /// the clock after each poll of the connection: nobody is woken.
    pub(super) fn update(&self, step: impl FnOnce(Phase) -> Phase) {
        let mut state = self.state.lock_or_recover();
        state.phase = step(state.phase);
    }

    /// A write found the socket's buffer full: the write deadline runs from `now`, unless it
    /// runs already. Called by the connection's own task only, as is [`Self::write_went`].
    pub(super) fn write_waits(&self, now: Instant) {
        if self.write_waits.swap(true, Ordering::Relaxed) {
            return;
        }
        self.state.lock_or_recover().write_waits_since = Some(now);
    }

    /// A write went through: the other end reads.
    pub(super) fn write_went(&self) {
        if self.write_waits.swap(false, Ordering::Relaxed) {
            self.state.lock_or_recover().write_waits_since = None;
        }
    }

    /// The sooner of the phase's deadline and the write's (`None`: no deadline now).
    fn next_deadline(&self) -> Option<Instant> {
        self.state.lock_or_recover().deadline(self.deadlines)
    }

    /// Whether the connection is to be closed, as its watchdog finds after each poll of
    /// the connection: displaced while it awaits a head, or past a deadline. Otherwise
    /// `alarm` is aimed at the next deadline, to wake the task when it comes.
    pub(super) fn poll_verdict(&self, alarm: &mut Alarm, cx: &mut Context<'_>) -> Poll<Closed> {
        if self.displaced() && self.awaits_head() {
            tracing::debug!("gave a connection's probation place to a newer one");
            return Poll::Ready(Closed::Deadline);
        }
        loop {
            if alarm.poll_until(self.next_deadline(), cx).is_pending() {
                return Poll::Pending;
            }
            let now = Instant::now();
            let state = self.state.lock_or_recover();
            if state
                .write_deadline(self.deadlines)
                .is_some_and(|deadline| deadline <= now)
            {
                return Poll::Ready(Closed::Unread);
            }
            if state
                .phase
                .deadline(self.deadlines)
                .is_some_and(|deadline| deadline <= now)
            {
                tracing::debug!("closed a connection that missed its deadline");
                return Poll::Ready(Closed::Deadline);
            }
            // It rang for a deadline that has moved later since: it is aimed again.
        }
    }
}

/// A connection's phase, and since when a write has waited.
struct ClockState {
    phase: Phase,
    /// Since when a write has waited for the other end to read, if one waits.
    write_waits_since: Option<Instant>,
}

impl ClockState {
    fn write_deadline(&self, deadlines: Deadlines) -> Option<Instant> {
        self.write_waits_since.map(|since| since + deadlines.write)
    }

    /// The sooner of the phase's deadline and the write's.
    fn deadline(&self, deadlines: Deadlines) -> Option<Instant> {
        match (
            self.phase.deadline(deadlines),
            self.write_deadline(deadlines),
        ) {
            (Some(phase), Some(write)) => Some(phase.min(write)),
            (phase, write) => phase.or(write),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEADLINES: Deadlines = Deadlines {
        head: Duration::from_secs(5),
        idle: Duration::from_secs(60),
        write: Duration::from_secs(10),
    };

    #[test]
    fn a_connection_is_held_to_the_deadline_of_its_phase() {
        let opened = Instant::now();
        let later = opened + Duration::from_secs(7);
        let fresh = Phase::AwaitingHead { since: opened };
        assert_eq!(fresh.deadline(DEADLINES), Some(opened + DEADLINES.head));
        assert_eq!(
            fresh.bytes_arrived(later),
            fresh,
            "more of the same head keeps its deadline"
        );

        let serving = fresh.request_began();
        assert_eq!(serving.deadline(DEADLINES), None);
        assert_eq!(serving.bytes_arrived(later), serving);

        let idle = serving.request_ended(later);
        assert_eq!(idle, Phase::Idle { since: later });
        assert_eq!(idle.deadline(DEADLINES), Some(later + DEADLINES.idle));

        let next = idle.bytes_arrived(later + Duration::from_secs(1));
        assert_eq!(
            next.deadline(DEADLINES),
            Some(later + Duration::from_secs(1) + DEADLINES.head),
            "the next request's head gets the head deadline from its first byte"
        );
    }

    #[test]
    fn the_watchdog_is_woken_only_for_a_displacement() {
        use futures::FutureExt;
        let woken = |clock: &ConnectionClock| clock.changed.notified().now_or_never().is_some();
        let opened = Instant::now();
        let at = |seconds: u64| opened + Duration::from_secs(seconds);
        let clock = ConnectionClock::new(DEADLINES, opened);
        assert_eq!(clock.next_deadline(), Some(opened + DEADLINES.head));

        // Request after request, the deadline sooner or later: the connection's own task
        // made each change, and its watchdog reads the clock after polling it.
        for second in 0..3 {
            clock.update(Phase::request_began);
            assert_eq!(clock.next_deadline(), None, "an answer on its way");
            clock.update(|phase| phase.request_ended(at(second)));
            assert_eq!(clock.next_deadline(), Some(at(second) + DEADLINES.idle));
            clock.update(|phase| phase.bytes_arrived(at(second)));
            assert_eq!(clock.next_deadline(), Some(at(second) + DEADLINES.head));
        }
        clock.write_waits(at(3));
        assert!(!woken(&clock), "the connection's own changes wake nobody");

        clock.displace();
        assert!(woken(&clock), "a newcomer's displacement does");
    }

    /// The verdict the watchdog reads after each poll of the connection, on a paused clock.
    #[tokio::test(start_paused = true)]
    async fn the_verdict_closes_at_the_deadline_the_connection_is_in_and_not_before() {
        let verdict = |clock: &ConnectionClock, alarm: &mut Alarm| {
            let waker = futures::task::noop_waker();
            match clock.poll_verdict(alarm, &mut Context::from_waker(&waker)) {
                Poll::Ready(closed) => Some(closed),
                Poll::Pending => None,
            }
        };
        let opened = Instant::now();
        let clock = ConnectionClock::new(DEADLINES, opened);
        let mut alarm = Alarm::new();
        assert_eq!(verdict(&clock, &mut alarm), None, "a fresh connection");

        // Serving past the head deadline the alarm was first aimed at: no deadline now.
        clock.update(Phase::request_began);
        tokio::time::advance(DEADLINES.head + Duration::from_secs(1)).await;
        assert_eq!(verdict(&clock, &mut alarm), None, "an answer on its way");

        // Idle, then the next head begins: its deadline is sooner than the idle one, and
        // the alarm is aimed at it at once.
        clock.update(|phase| phase.request_ended(Instant::now()));
        assert_eq!(verdict(&clock, &mut alarm), None);
        clock.update(|phase| phase.bytes_arrived(Instant::now()));
        assert_eq!(verdict(&clock, &mut alarm), None);
        tokio::time::advance(DEADLINES.head - Duration::from_millis(10)).await;
        assert_eq!(
            verdict(&clock, &mut alarm),
            None,
            "not before the head deadline"
        );
        tokio::time::advance(Duration::from_millis(20)).await;
        assert_eq!(verdict(&clock, &mut alarm), Some(Closed::Deadline));

        // A write waiting for its reader: closed as unread at the write deadline.
        let clock = ConnectionClock::new(DEADLINES, Instant::now());
        let mut alarm = Alarm::new();
        clock.update(Phase::request_began);
        clock.write_waits(Instant::now());
        assert_eq!(verdict(&clock, &mut alarm), None);
        tokio::time::advance(DEADLINES.write + Duration::from_millis(1)).await;
        assert_eq!(verdict(&clock, &mut alarm), Some(Closed::Unread));

        // Displaced: closed once it awaits a head, not while it serves.
        let clock = ConnectionClock::new(DEADLINES, Instant::now());
        let mut alarm = Alarm::new();
        clock.update(Phase::request_began);
        clock.displace();
        assert_eq!(verdict(&clock, &mut alarm), None, "serving keeps its place");
        clock.update(|phase| phase.request_ended(Instant::now()));
        clock.update(|phase| phase.bytes_arrived(Instant::now()));
        assert_eq!(verdict(&clock, &mut alarm), Some(Closed::Deadline));
    }

    #[test]
    fn a_write_waiting_for_its_reader_brings_the_write_deadline() {
        let opened = Instant::now();
        let clock = ConnectionClock::new(DEADLINES, opened);
        clock.update(Phase::request_began);
        assert_eq!(clock.next_deadline(), None, "an answer on its way");

        let stuck = opened + Duration::from_secs(1);
        clock.write_waits(stuck);
        assert_eq!(clock.next_deadline(), Some(stuck + DEADLINES.write));
        clock.write_waits(stuck + Duration::from_secs(5));
        assert_eq!(
            clock.next_deadline(),
            Some(stuck + DEADLINES.write),
            "a write still waiting keeps its deadline"
        );

        clock.write_went();
        assert_eq!(clock.next_deadline(), None, "the reader reads again");
        clock.update(|phase| phase.request_ended(stuck));
        clock.write_waits(stuck);
        assert_eq!(
            clock.next_deadline(),
            Some(stuck + DEADLINES.write),
            "the sooner of the idle and the write deadline"
        );
    }

    #[test]
    fn overlapping_requests_end_the_serving_phase_only_when_both_have() {
        let now = Instant::now();
        let two = Phase::AwaitingHead { since: now }
            .request_began()
            .request_began();
        assert_eq!(two.request_ended(now), Phase::Serving { requests: 1 });
        assert_eq!(
            two.request_ended(now).request_ended(now),
            Phase::Idle { since: now }
        );
    }
}
