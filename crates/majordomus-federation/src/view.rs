//! The boards other machines published, as this server holds them: bounded in number, each
//! with its age, each forgotten once older than the lifetime its publisher gave it. Expiry in
//! the bucket is silent (a watcher is not told), so the view ages boards out itself.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use majordomus_domain::text;

use super::document::{BoardDocument, BoardKey, RemoteBoard};

/// Remote boards held at once: a team's machines times their worktrees, with room to spare.
/// A board beyond it is ignored with a reason rather than held.
pub const REMOTE_BOARDS: usize = 128;

/// Ignored entries remembered (with their reasons) at once; the oldest makes room.
pub const IGNORED_KEPT: usize = 16;

/// Characters of a key as an answer quotes it.
const KEY_CHARS: usize = 200;

/// One remote board and how old it is.
#[derive(Clone, Debug)]
pub struct HeldBoard {
    pub board: Arc<RemoteBoard>,
    pub age: Duration,
}

/// A published entry that was not taken in, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    pub key: String,
    pub reason: String,
}

#[derive(Debug)]
struct Held {
    board: Arc<RemoteBoard>,
    /// When it was published, by this process's clock.
    published: Instant,
}

#[derive(Debug)]
struct Dropped {
    reason: String,
    seen: Instant,
}

/// The remote boards of this repository, by key.
#[derive(Debug, Default)]
pub struct RemoteView {
    boards: BTreeMap<String, Held>,
    ignored: BTreeMap<String, Dropped>,
    /// Whether the watch has delivered every entry the bucket held when it began.
    synced: bool,
}

impl RemoteView {
    /// A new watch begins: until it has caught up, the view may lack boards.
    pub fn begin_sync(&mut self) {
        self.synced = false;
    }

    /// The watch has delivered everything the bucket held when it began.
    pub fn mark_synced(&mut self) {
        self.synced = true;
    }

    pub fn synced(&self) -> bool {
        self.synced
    }

    /// Takes in what was published under `key`, `age` ago (as `now` counts): held when it
    /// reads as a board, ignored with a reason when it does not or when the view is full.
    /// `ignored_for` is how long an ignored entry is remembered.
    pub fn put(
        &mut self,
        key: &str,
        bytes: &[u8],
        age: Duration,
        now: Instant,
        ignored_for: Duration,
    ) {
        self.prune(now, ignored_for);
        let published = now.checked_sub(age).unwrap_or(now);
        let outcome = match BoardKey::parse(key) {
            None => Err("its key is not `<repository>.<machine>.<checkout>`".to_string()),
            Some(parsed) => BoardDocument::read(&parsed, bytes),
        };
        match outcome {
            Ok(board) => {
                if !self.boards.contains_key(key) && self.boards.len() >= REMOTE_BOARDS {
                    self.ignore(
                        key,
                        format!(
                            "this server already holds the {REMOTE_BOARDS} remote boards it may"
                        ),
                        now,
                    );
                    return;
                }
                self.ignored.remove(key);
                let board = Arc::new(board);
                self.boards
                    .insert(key.to_owned(), Held { board, published });
            }
            Err(reason) => {
                self.boards.remove(key);
                self.ignore(key, reason, now);
            }
        }
    }

    /// The board under `key` was deleted: its server stopped in order.
    pub fn remove(&mut self, key: &str) {
        self.boards.remove(key);
        self.ignored.remove(key);
    }

    /// Forgets every board older than its lifetime, and every ignored entry older than
    /// `ignored_for`.
    pub fn prune(&mut self, now: Instant, ignored_for: Duration) {
        self.boards.retain(|_, held| {
            now.saturating_duration_since(held.published) < lifetime(&held.board)
        });
        self.ignored
            .retain(|_, dropped| now.saturating_duration_since(dropped.seen) < ignored_for);
    }

    /// The boards younger than their lifetime, in key order, with their ages.
    pub fn boards(&self, now: Instant) -> Vec<HeldBoard> {
        self.boards
            .values()
            .filter_map(|held| {
                let age = now.saturating_duration_since(held.published);
                (age < lifetime(&held.board)).then(|| HeldBoard {
                    board: held.board.clone(),
                    age,
                })
            })
            .collect()
    }

    /// The entries ignored within `ignored_for`, in key order.
    pub fn ignored(&self, now: Instant, ignored_for: Duration) -> Vec<Ignored> {
        self.ignored
            .iter()
            .filter(|(_, dropped)| now.saturating_duration_since(dropped.seen) < ignored_for)
            .map(|(key, dropped)| Ignored {
                key: text::sanitized(&text::for_terminal(key), KEY_CHARS),
                reason: dropped.reason.clone(),
            })
            .collect()
    }

    fn ignore(&mut self, key: &str, reason: String, now: Instant) {
        tracing::debug!(key, %reason, "a published board is ignored");
        if !self.ignored.contains_key(key) && self.ignored.len() >= IGNORED_KEPT {
            let oldest = self
                .ignored
                .iter()
                .min_by_key(|(_, dropped)| dropped.seen)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.ignored.remove(&oldest);
            }
        }
        self.ignored
            .insert(key.to_owned(), Dropped { reason, seen: now });
    }
}

fn lifetime(board: &RemoteBoard) -> Duration {
    Duration::from_secs(board.ttl_secs)
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use majordomus_domain::checkouts::ServerStanding;

    use super::super::document::PublishedCheckout;
    use super::*;

    const TTL: Duration = Duration::from_secs(30);

    fn board(machine: &str, n: usize, ttl_secs: u64) -> (String, Vec<u8>) {
        let id = format!("{n:032x}");
        let checkout = PublishedCheckout {
            id: id.clone(),
            worktree: "/repo".into(),
            branch: None,
        };
        let (_, bytes) = BoardDocument::publish(
            machine,
            checkout,
            ServerStanding::Ready,
            ttl_secs,
            SystemTime::now(),
            Vec::new(),
        );
        (BoardKey::new("r", machine, &id).as_key(), bytes)
    }

    #[test]
    fn boards_age_out_by_their_own_lifetime() {
        let mut view = RemoteView::default();
        let start = Instant::now();
        let (short, short_bytes) = board("a", 1, 3);
        let (long, long_bytes) = board("b", 2, 30);
        view.put(&short, &short_bytes, Duration::ZERO, start, TTL);
        view.put(&long, &long_bytes, Duration::from_secs(1), start, TTL);
        let ages: Vec<Duration> = view.boards(start).iter().map(|held| held.age).collect();
        assert_eq!(ages, [Duration::ZERO, Duration::from_secs(1)]);
        let later = start + Duration::from_secs(4);
        let machines: Vec<String> = view
            .boards(later)
            .iter()
            .map(|held| held.board.machine.clone())
            .collect();
        assert_eq!(machines, ["b"]);
        view.remove(&long);
        assert!(view.boards(later).is_empty());
    }

    #[test]
    fn the_view_is_bounded_and_says_what_it_left_out() {
        let mut view = RemoteView::default();
        let now = Instant::now();
        for n in 0..REMOTE_BOARDS + 3 {
            let (key, bytes) = board(&format!("m{n}"), n, 30);
            view.put(&key, &bytes, Duration::ZERO, now, TTL);
        }
        assert_eq!(view.boards(now).len(), REMOTE_BOARDS);
        let ignored = view.ignored(now, TTL);
        assert_eq!(ignored.len(), 3);
        assert!(
            ignored[0].reason.contains("128 remote boards"),
            "{ignored:?}"
        );

        for n in 0..IGNORED_KEPT + 5 {
            view.put(
                &format!("r.junk.{n}"),
                b"nonsense",
                Duration::ZERO,
                now,
                TTL,
            );
        }
        assert_eq!(view.ignored(now, TTL).len(), IGNORED_KEPT);
        assert!(view.ignored(now + TTL, TTL).is_empty());
    }

    #[test]
    fn a_board_that_turns_bad_is_dropped_and_a_good_one_clears_its_reason() {
        let mut view = RemoteView::default();
        let now = Instant::now();
        let (key, bytes) = board("a", 1, 30);
        view.put(&key, &bytes, Duration::ZERO, now, TTL);
        view.put(&key, b"{}", Duration::ZERO, now, TTL);
        assert!(view.boards(now).is_empty());
        assert_eq!(view.ignored(now, TTL).len(), 1);
        view.put(&key, &bytes, Duration::ZERO, now, TTL);
        assert_eq!(view.boards(now).len(), 1);
        assert!(view.ignored(now, TTL).is_empty());
        view.put("r.a.b.c", &bytes, Duration::ZERO, now, TTL);
        assert!(view.ignored(now, TTL)[0].reason.contains("its key"));
    }
}
