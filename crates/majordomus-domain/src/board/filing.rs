//! Filing a claim on the board: in place of the peer's claim of the same name, and a
//! session's edits at the front of the claim that keeps them.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::SystemTime;

use crate::ids::Stamp;
use crate::index::PathIndex;
use crate::limits;
use crate::paths::{ClaimPath, same_places};
use crate::peers::PeerId;
use crate::text::{self, Field};

use super::{AnnounceError, Claim, ClaimRef, InvalidAnnouncement, PeerBoard, unindex};

impl PeerBoard {
    /// Puts `edited` at the front of the attached peer `id`'s claim `name` (made when it has
    /// none), each path once, the latest `keep` kept; answers the claim's paths as they now
    /// stand. `edited` are normalised already, as a hook's files are.
    ///
    /// A session's edits arrive one file at a time and its claim keeps hundreds: the earlier
    /// paths are the ones the board holds, not their text normalised again, and no overlap
    /// is looked for (whoever records an edit asks the guard for that, over every board).
    pub fn record_in_front(
        &mut self,
        id: &PeerId,
        name: &str,
        intent: &str,
        edited: &[ClaimPath],
        keep: usize,
        now: SystemTime,
    ) -> Result<Arc<[ClaimPath]>, AnnounceError> {
        let number = self.attached_number(id)?;
        text::check(Field::Intent, intent).map_err(InvalidAnnouncement::from)?;
        text::check(Field::ClaimName, name).map_err(InvalidAnnouncement::from)?;
        let name = Some(name.to_owned());
        self.check_room(number, &name)?;
        let earlier = self.peers[&number]
            .claims
            .get(&name)
            .map(|claim| claim.paths.clone());
        let mut seen = HashSet::new();
        let paths: Vec<ClaimPath> = edited
            .iter()
            .chain(earlier.iter().flat_map(|paths| paths.iter()))
            .filter(|path| seen.insert(path.components()))
            .take(keep)
            .cloned()
            .collect();
        Ok(self.file(number, name, intent.to_owned(), paths, now).0)
    }

    /// Refuses a new claim name beyond [`limits::NAMED_CLAIMS`] for the peer `number`.
    pub(super) fn check_room(
        &self,
        number: u64,
        name: &Option<String>,
    ) -> Result<(), AnnounceError> {
        let slot = &self.peers[&number];
        if name.is_some() && !slot.claims.contains_key(name) {
            let named = slot.claims.keys().filter(|name| name.is_some()).count();
            if named >= limits::NAMED_CLAIMS {
                return Err(InvalidAnnouncement::TooManyNamedClaims.into());
            }
        }
        Ok(())
    }

    /// Files `paths` (without repeats) as the attached peer `number`'s claim `name`, in
    /// place of its claim of that name; answers the paths as the board now holds them and
    /// those the replaced claim gave up.
    pub(super) fn file(
        &mut self,
        number: u64,
        name: Option<String>,
        intent: String,
        paths: Vec<ClaimPath>,
        now: SystemTime,
    ) -> (Arc<[ClaimPath]>, Vec<String>) {
        self.version += 1;
        let PeerBoard {
            peers,
            index,
            last_claim,
            ..
        } = self;
        let slot = peers
            .get_mut(&number)
            .expect("attached_number found this peer on the board");
        // A claim announced again over the same ground (its intent updated, say) is filed
        // under the same paths at the same places already, and gives up none of them.
        let old = slot.claims.remove(&name);
        let refiled = old
            .as_ref()
            .is_none_or(|old| !same_places(&old.paths, &paths));
        let released = match old {
            Some(old) if refiled => {
                unindex(index, number, &name, &old.paths);
                released(&old.paths, &paths)
            }
            Some(_) | None => Vec::new(),
        };
        if refiled {
            for (at, path) in paths.iter().enumerate() {
                let entry = ClaimRef {
                    peer: number,
                    name: name.clone(),
                    path: at,
                };
                index.insert(path.components(), entry);
            }
        }
        *last_claim += 1;
        let paths: Arc<[ClaimPath]> = paths.into();
        let claim = Claim {
            intent,
            paths: paths.clone(),
            at: Stamp::at(now),
            sequence: *last_claim,
        };
        slot.claims.insert(name, claim);
        slot.last_seen = now;
        (paths, released)
    }
}

/// The old paths, as written, that no new path meets. Both lists are without repeats; the
/// new paths go into a trie once, so each old path costs one walk down its components
/// rather than a comparison with every new path.
fn released(old: &[ClaimPath], new: &[ClaimPath]) -> Vec<String> {
    let mut kept = PathIndex::new();
    for path in new {
        kept.insert(path.components(), ());
    }
    old.iter()
        .filter(|path| !kept.meets_any(path.components()))
        .map(|path| path.as_written().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::normalize_relative;
    use crate::peers::{AnnounceInput, ClientInfo, Transport};
    use std::time::{Duration, UNIX_EPOCH};

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_005_600 + seconds)
    }

    fn paths(written: &[&str]) -> Vec<ClaimPath> {
        written
            .iter()
            .map(|path| normalize_relative(path).unwrap())
            .collect()
    }

    fn written(paths: &[ClaimPath]) -> Vec<&str> {
        paths.iter().map(ClaimPath::as_written).collect()
    }

    /// Who else an announce of `path` meets, by claim intent.
    fn met_by(board: &mut PeerBoard, announcer: &PeerId, path: &str) -> Vec<String> {
        let input = AnnounceInput {
            intent: "look".into(),
            scope: vec![path.into()],
            claim: None,
        };
        let announced = board.announce(announcer, input, at(9)).unwrap();
        announced.overlaps.into_iter().map(|o| o.intent).collect()
    }

    #[test]
    fn edits_go_in_front_each_once_and_the_oldest_leave_the_index() {
        let mut board = PeerBoard::new("/srv/repo");
        let editor = board.attach(Transport::Http, ClientInfo::uninitialized(), at(0));
        let other = board.attach(Transport::Http, ClientInfo::uninitialized(), at(0));
        let edit = |board: &mut PeerBoard, files: &[&str]| {
            board
                .record_in_front(&editor, "edits", "edited", &paths(files), 3, at(1))
                .unwrap()
        };
        assert_eq!(
            written(&edit(&mut board, &["a.rs", "b.rs"])),
            ["a.rs", "b.rs"]
        );
        assert_eq!(
            written(&edit(&mut board, &["c.rs", "./a.rs"])),
            ["c.rs", "./a.rs", "b.rs"],
            "an edited file moves to the front once, as this edit wrote it"
        );
        assert_eq!(
            written(&edit(&mut board, &["d.rs"])),
            ["d.rs", "c.rs", "./a.rs"]
        );

        let listed = board.peer(&editor, at(2)).unwrap();
        assert_eq!(listed.claims.len(), 1);
        assert_eq!(listed.claims[0].name.as_deref(), Some("edits"));
        assert_eq!(listed.claims[0].scope, ["d.rs", "c.rs", "./a.rs"]);
        assert_eq!(met_by(&mut board, &other, "d.rs"), ["edited"]);
        assert!(
            met_by(&mut board, &other, "b.rs").is_empty(),
            "the file pushed out of the claim left the index"
        );
    }

    #[test]
    fn an_edit_of_a_departed_or_unknown_peer_is_refused() {
        let mut board = PeerBoard::new("/srv/repo");
        let editor = board.attach(Transport::Stdio, ClientInfo::uninitialized(), at(0));
        board.detach(&editor, None, at(1));
        let refused = board.record_in_front(&editor, "edits", "edited", &paths(&["a"]), 3, at(2));
        assert!(matches!(refused, Err(AnnounceError::NotFound(_))));
        let unknown = PeerId("p99".into());
        let refused = board.record_in_front(&unknown, "edits", "edited", &paths(&["a"]), 3, at(2));
        assert!(matches!(refused, Err(AnnounceError::NotFound(_))));
    }
}
