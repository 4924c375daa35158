//! Listings kept encoded between calls: made once per state of what they list and answered
//! from memory, encoded or as a value, with only what differs from call to call (the
//! caller, a followed board's age) written into each answer. This board's own listing
//! (`checkouts: this`) is made and kept here; the repository's is kept the same way by the
//! listing that reads its boards (`list`).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use bytes::Bytes;
use serde_json::Value;

use majordomus_checkout::git::Checkout;
use majordomus_domain::changes::WorktreeChanges;
use majordomus_domain::checkouts::{Checkouts, ServerStanding};
use majordomus_domain::peers::PeerId;
use majordomus_domain::sync::LockExt;

use majordomus_core::api::CapabilityError;
use majordomus_core::context::Context;
use majordomus_core::port::BoardPort;
use majordomus_core::registry::{Form, Reply, inline_or_blocking, sorted_json};
use majordomus_core::survey;

use crate::wire;

use super::answer::{ListedPeer, PeerList, find_overlaps, listing_of};
use super::boards::{listed_board, stamp};
use super::changes::read_changes;

/// What this board's own listing is made of: the board's version and the rest; whatever
/// differs makes the listing a different one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ThisKey {
    pub version: u64,
    pub inputs: ListingInputs,
}

/// What this board's own listing is made of besides the board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ListingInputs {
    /// The branch checked out, read on every call: it may be switched under the server.
    pub branch: Option<String>,
    pub standing: ServerStanding,
    pub url: Option<String>,
    /// The worktree's changes, as git last read them.
    pub changes: Option<WorktreeChanges>,
}

/// A listing encoded as the surfaces write it, for a caller without a peer and with every
/// followed board's age written `0`: where those are is kept, to write each call's in.
pub(super) struct EncodedListing {
    encoded: Bytes,
    /// Where the caller's `null` is in `encoded`.
    caller_at: usize,
    /// Where each board's age (`age_ms`) is in `encoded`, in the boards' order.
    ages_at: Vec<usize>,
    /// `encoded` as a value, made the first time a surface that writes values asks: a
    /// copy of it costs a fraction of reading the text again.
    value: OnceLock<Value>,
}

impl EncodedListing {
    /// Encodes `listing` (its overlaps found) in a buffer of about `size` bytes, as a JSON
    /// value is (the keys in order), so that it is byte for byte the answer the listing's
    /// value would give.
    pub(super) fn encode(mut listing: PeerList, size: usize) -> Result<Self, CapabilityError> {
        listing.caller = None;
        let aged = listing
            .boards
            .iter_mut()
            .filter_map(|board| board.age_ms.as_mut());
        let ages = aged.map(|age| *age = 0).count();
        let encoded = sorted_json::to_vec(&listing, size).map_err(|error| {
            CapabilityError::internal(format!("could not encode the answer: {error}"))
        })?;
        // Keys are in order and `boards` precedes `caller`; nothing inside a board has a
        // `caller`, only a board has an `age_ms`, and a string cannot hold either text
        // unescaped, so the matches are the fields.
        let after = |text: &'static [u8]| {
            let encoded = &encoded;
            (0..encoded.len().saturating_sub(text.len()))
                .filter(move |&at| encoded[at..].starts_with(text))
                .map(move |at| at + text.len())
        };
        let caller_at = after(b",\"caller\":")
            .next()
            .ok_or_else(|| CapabilityError::internal("the encoded listing names no caller"))?;
        let ages_at: Vec<usize> = after(b"\"age_ms\":").collect();
        if ages_at.len() != ages {
            return Err(CapabilityError::internal(
                "the encoded listing's ages are not where its boards are",
            ));
        }
        Ok(EncodedListing {
            encoded: Bytes::from(encoded),
            caller_at,
            ages_at,
            value: OnceLock::new(),
        })
    }

    /// The listing as answered to `caller`, with `ages` (in milliseconds, one per board that
    /// has one, in the boards' order) written in.
    fn bytes_for(&self, caller: Option<&PeerId>, ages: &[u64]) -> Result<Bytes, CapabilityError> {
        if ages.len() != self.ages_at.len() {
            return Err(CapabilityError::internal(
                "the kept listing was answered with another count of ages",
            ));
        }
        let Some(caller) = caller else {
            if ages.iter().all(|age| *age == 0) {
                return Ok(self.encoded.clone());
            }
            return Ok(self.written(b"null", ages));
        };
        let id = serde_json::to_vec(&wire::PeerId::from(caller.clone())).map_err(|error| {
            CapabilityError::internal(format!("could not encode the caller: {error}"))
        })?;
        Ok(self.written(&id, ages))
    }

    /// `encoded` with `caller` for its `null` and `ages` for its `0`s.
    fn written(&self, caller: &[u8], ages: &[u64]) -> Bytes {
        let ages: Vec<String> = ages.iter().map(u64::to_string).collect();
        let mut splices: Vec<(usize, usize, &[u8])> = vec![(self.caller_at, "null".len(), caller)];
        splices.extend(
            self.ages_at
                .iter()
                .zip(&ages)
                .map(|(at, age)| (*at, "0".len(), age.as_bytes())),
        );
        splices.sort_unstable_by_key(|(at, ..)| *at);
        let grown: usize = splices.iter().map(|(_, _, text)| text.len()).sum();
        let mut answer = Vec::with_capacity(self.encoded.len() + grown);
        let mut from = 0;
        for (at, replaced, text) in splices {
            answer.extend_from_slice(&self.encoded[from..at]);
            answer.extend_from_slice(text);
            from = at + replaced;
        }
        answer.extend_from_slice(&self.encoded[from..]);
        Bytes::from(answer)
    }

    /// The listing as answered to `caller` with `ages`, as a value and its text: the value
    /// made once per listing, copied, with the caller and ages written in.
    fn structured_for(
        &self,
        caller: Option<&PeerId>,
        ages: &[u64],
    ) -> Result<Reply<PeerList>, CapabilityError> {
        let text = String::from_utf8(self.bytes_for(caller, ages)?.into()).map_err(|error| {
            CapabilityError::internal(format!("the listing is not UTF-8: {error}"))
        })?;
        let kept = match self.value.get() {
            Some(value) => value,
            None => {
                let value = serde_json::from_slice(&self.encoded).map_err(|error| {
                    CapabilityError::internal(format!("could not decode the listing: {error}"))
                })?;
                self.value.get_or_init(|| value)
            }
        };
        let mut value = kept.clone();
        if let Value::Object(fields) = &mut value {
            if let Some(caller) = caller {
                let id =
                    serde_json::to_value(wire::PeerId::from(caller.clone())).map_err(|error| {
                        CapabilityError::internal(format!("could not encode the caller: {error}"))
                    })?;
                fields.insert("caller".to_owned(), id);
            }
            if let Some(Value::Array(boards)) = fields.get_mut("boards") {
                let aged = boards
                    .iter_mut()
                    .filter_map(|board| board.get_mut("age_ms"));
                for (age, now) in aged.zip(ages) {
                    *age = Value::from(*now);
                }
            }
        }
        debug_assert_eq!(
            value.to_string(),
            text,
            "the kept listing's value and text differ"
        );
        Ok(Reply::Structured { text, value })
    }
}

/// A listing kept between calls: what it was made of (`key`), when, and until when the
/// ages it lists hold ([`BoardSnapshot::same_until`](majordomus_core::port::BoardSnapshot)).
pub(super) struct Kept<K> {
    pub key: K,
    /// When it was made; an earlier instant (a clock stepped back) is not served it.
    pub made_at: SystemTime,
    pub same_until: Option<SystemTime>,
    pub listing: EncodedListing,
}

impl<K> Kept<K> {
    /// Whether its ages still read as listed at `now`.
    pub(super) fn holds_at(&self, now: SystemTime) -> bool {
        self.made_at <= now && self.same_until.is_none_or(|until| now < until)
    }
}

/// The latest [`Kept`] listing of one kind: building a crowded board's listing costs
/// milliseconds, and a board is read far more often than it changes.
pub(super) struct Latest<K>(Mutex<Option<Arc<Kept<K>>>>);

impl<K> Default for Latest<K> {
    fn default() -> Self {
        Latest(Mutex::new(None))
    }
}

impl<K> Latest<K> {
    pub(super) fn latest(&self) -> Option<Arc<Kept<K>>> {
        self.0.lock_or_recover().clone()
    }

    pub(super) fn keep(&self, listing: Arc<Kept<K>>) {
        *self.0.lock_or_recover() = Some(listing);
    }
}

/// The kept listings, held by the serving process, whose boards they list, and made and
/// read by the capability that lists them: this board's, and the repository's (`R`, the
/// key `list` reads it by), one for `checkouts: repository` and one for `everywhere`.
pub(super) struct KeptListings<R> {
    pub this: Latest<ThisKey>,
    pub repository: Latest<R>,
    pub everywhere: Latest<R>,
}

impl<R> Default for KeptListings<R> {
    fn default() -> Self {
        KeptListings {
            this: Latest::default(),
            repository: Latest::default(),
            everywhere: Latest::default(),
        }
    }
}

/// `kept` answered to `caller` with `ages`, in the `form` its surface writes; a large
/// value is copied on a blocking thread.
pub(super) async fn answer_kept<K: Send + Sync + 'static>(
    kept: Arc<Kept<K>>,
    caller: Option<PeerId>,
    ages: Vec<u64>,
    form: Form,
) -> Result<Reply<PeerList>, CapabilityError> {
    match form {
        Form::Encoded => kept
            .listing
            .bytes_for(caller.as_ref(), &ages)
            .map(Reply::Encoded),
        Form::Structured => {
            let size = kept.listing.encoded.len();
            inline_or_blocking(size, "copying the listing", move || {
                kept.listing.structured_for(caller.as_ref(), &ages)
            })
            .await?
        }
    }
}

/// `checkouts: this` from the board this process serves, in the `form` its surface writes,
/// kept in `kept`.
///
/// The listing is made once per state of the board and served from memory until something
/// it lists changes: the board's version (any peer attached, heard from or gone, any claim
/// announced or released), the instant any listed age ticks over, the branch, the server's
/// standing and address, or the worktree's changes (which git reads at most about once a
/// second). So every answer is the one a listing made at that instant would be, at the
/// cost of a copy. The caller is the only field that depends on who asks: it is written
/// into each answer.
pub(super) async fn this_board_reply(
    ctx: &Context,
    port: &dyn BoardPort,
    kept: &Latest<ThisKey>,
    form: Form,
) -> Result<Reply<PeerList>, CapabilityError> {
    let site = &ctx.site;
    let now = SystemTime::now();
    let checkout = survey::covered_checkouts(site, Checkouts::This)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| CapabilityError::internal("no checkout is covered by `this`"))?;
    let inputs = ListingInputs {
        branch: checkout.branch.clone(),
        standing: port.own_standing(),
        url: port.url(),
        changes: read_changes(site, &checkout).await,
    };
    let key = ThisKey {
        version: port.board_version(now),
        inputs,
    };
    let listing = match kept.latest() {
        Some(listing) if listing.key == key && listing.holds_at(now) => listing,
        _ => {
            let made = Arc::new(encode_this(port, &checkout, key.inputs, now).await?);
            kept.keep(made.clone());
            made
        }
    };
    answer_kept(listing, ctx.caller().cloned(), Vec::new(), form).await
}

/// Makes this board's listing at `now`, kept under the board's version it lists. A crowded
/// board's overlaps are found and its listing encoded on a blocking thread, not on a
/// worker.
async fn encode_this(
    port: &dyn BoardPort,
    checkout: &Checkout,
    inputs: ListingInputs,
    now: SystemTime,
) -> Result<Kept<ThisKey>, CapabilityError> {
    let snapshot = port.board_snapshot(now);
    let bridged = port.bridged_peers();
    let peers = ListedPeer::on_this_board(snapshot.peers, &bridged);
    let board = listed_board(
        stamp(checkout, true),
        inputs.standing,
        inputs.url.clone(),
        None,
        inputs.changes.clone(),
        peers,
    );
    let mut listing = listing_of(None, vec![board], None);
    let size = listing.size_estimate();
    let encoded = inline_or_blocking(size, "encoding the listing", move || {
        find_overlaps(&mut listing);
        EncodedListing::encode(listing, size)
    })
    .await??;
    Ok(Kept {
        key: ThisKey {
            version: snapshot.version,
            inputs,
        },
        made_at: now,
        same_until: snapshot.same_until,
        listing: encoded,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::super::answer::BoardView;
    use super::*;

    #[test]
    fn a_kept_listing_serves_only_its_version_inputs_and_ages() {
        let at = |millis: u64| UNIX_EPOCH + Duration::from_millis(1_796_005_600_000 + millis);
        let inputs = ListingInputs {
            branch: Some("main".into()),
            standing: ServerStanding::Ready,
            url: Some("http://127.0.0.1:1".into()),
            changes: None,
        };
        let key = |version: u64, inputs: &ListingInputs| ThisKey {
            version,
            inputs: inputs.clone(),
        };
        let kept = Kept {
            key: key(7, &inputs),
            made_at: at(1_000),
            same_until: Some(at(1_400)),
            listing: EncodedListing::encode(listing_of(None, Vec::new(), None), 0).unwrap(),
        };
        let serves = |version: u64, now, inputs: &ListingInputs| {
            kept.key == key(version, inputs) && kept.holds_at(now)
        };
        assert!(serves(7, at(1_000), &inputs));
        assert!(serves(7, at(1_399), &inputs));
        assert!(!serves(8, at(1_000), &inputs), "the board changed");
        assert!(!serves(7, at(1_400), &inputs), "an age ticked over");
        assert!(!serves(7, at(999), &inputs), "the clock stepped back");
        let switched = ListingInputs {
            branch: Some("topic".into()),
            ..inputs.clone()
        };
        assert!(!serves(7, at(1_000), &switched), "the branch was switched");
        let changed = ListingInputs {
            changes: Some(WorktreeChanges::unreadable("git is still reading")),
            ..inputs
        };
        assert!(!serves(7, at(1_000), &changed), "git read new changes");
    }

    #[test]
    fn a_kept_listing_answers_a_value_that_writes_its_text_with_the_caller_and_ages_in_it() {
        let board = |n: u64, age_ms: Option<u64>| {
            let mut view = BoardView::unread(
                format!("checkout-{n}"),
                format!("/repository/age_ms-{n}"),
                Some("\"age_ms\":0".into()),
                "its server is starting".into(),
            );
            view.age_ms = age_ms;
            (view, Vec::new())
        };
        let boards = vec![board(1, None), board(2, Some(41)), board(3, Some(7))];
        let listing = listing_of(Some(PeerId::nth(9)), boards, None);
        let encoded = EncodedListing::encode(listing, 0).unwrap();
        let plain: Value = serde_json::from_slice(&encoded.encoded).unwrap();
        assert_eq!(plain["caller"], Value::Null, "kept without a caller");
        assert_eq!(plain["boards"][1]["age_ms"], 0, "kept without its ages");
        for (caller, ages) in [
            (Some(PeerId::nth(3)), [12_345, 0]),
            (None, [0, 0]),
            (None, [9, 1_000_000]),
            (Some(PeerId::nth(12)), [0, 3]),
        ] {
            let Reply::Structured { text, value } =
                encoded.structured_for(caller.as_ref(), &ages).unwrap()
            else {
                panic!("a structured reply was asked for");
            };
            let bytes = encoded.bytes_for(caller.as_ref(), &ages).unwrap();
            assert_eq!(text.as_bytes(), &bytes[..]);
            assert_eq!(value, serde_json::from_slice::<Value>(&bytes).unwrap());
            let expected = caller.map_or(Value::Null, |id| Value::String(id.as_str().into()));
            assert_eq!(value["caller"], expected);
            assert!(value["boards"][0].get("age_ms").is_none());
            assert_eq!(value["boards"][1]["age_ms"], ages[0]);
            assert_eq!(value["boards"][2]["age_ms"], ages[1]);
            assert_eq!(
                value["boards"][2]["branch"], "\"age_ms\":0",
                "a string is left alone"
            );
        }
        assert!(
            encoded.bytes_for(None, &[1]).is_err(),
            "a count of ages other than the boards' is refused"
        );
        assert_eq!(
            encoded.value.get().unwrap()["caller"],
            Value::Null,
            "kept without a caller"
        );
    }
}
