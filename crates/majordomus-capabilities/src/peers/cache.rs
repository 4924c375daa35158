//! This board's own listing (`checkouts: this`), made once per state of the board and
//! answered from memory, encoded or as a value.

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
use majordomus_core::registry::{ENCODE_INLINE_BYTES, Form, Reply, sorted_json};
use majordomus_core::survey;

use crate::wire;

use super::answer::{ListedPeer, PeerList, find_overlaps, listing_of};
use super::boards::{listed_board, stamp};
use super::changes::read_changes;

/// What this board's own listing is made of besides the board: whatever differs makes
/// the listing a different one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ListingInputs {
    /// The branch checked out, read on every call: it may be switched under the server.
    pub branch: Option<String>,
    pub standing: ServerStanding,
    pub url: Option<String>,
    /// The worktree's changes, as git last read them.
    pub changes: Option<WorktreeChanges>,
}

/// This board's own listing, encoded as the surfaces write it, with what it was made of.
pub(super) struct CachedListing {
    /// The board's version it lists.
    pub version: u64,
    /// When it was made; an earlier instant (a clock stepped back) is not served it.
    pub made_at: SystemTime,
    /// Until when its ages hold ([`BoardSnapshot::same_until`]).
    pub same_until: Option<SystemTime>,
    pub inputs: ListingInputs,
    /// The answer for a caller without a peer: `caller` is `null`.
    pub encoded: Bytes,
    /// Where that `null` is in `encoded`, for the answer to a peer.
    pub caller_at: usize,
    /// `encoded` as a value, made the first time a surface that writes values asks: a
    /// copy of it costs a fraction of reading the text again.
    pub value: OnceLock<Value>,
}

impl CachedListing {
    /// Whether it is the listing a call at `now` would make of the board at `version`
    /// with `inputs`: it lists exactly what a new one would.
    pub(super) fn serves(&self, version: u64, now: SystemTime, inputs: &ListingInputs) -> bool {
        self.version == version
            && self.made_at <= now
            && self.same_until.is_none_or(|until| now < until)
            && self.inputs == *inputs
    }
}

/// The latest [`CachedListing`]: kept by the serving process, whose board it lists, and
/// made and read by the capability that lists it. Building a crowded board's listing
/// costs milliseconds; a board is read far more often than it changes.
#[derive(Default)]
pub(super) struct ListingCache(Mutex<Option<Arc<CachedListing>>>);

impl ListingCache {
    pub(super) fn latest(&self) -> Option<Arc<CachedListing>> {
        self.0.lock_or_recover().clone()
    }

    pub(super) fn keep(&self, listing: Arc<CachedListing>) {
        *self.0.lock_or_recover() = Some(listing);
    }
}

/// `checkouts: this` from the board this process serves, in the `form` its surface writes.
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
    let version = port.board_version(now);
    let cache = port
        .listing_slot()
        .get_or_init(ListingCache::default)
        .ok_or_else(|| CapabilityError::internal("the listing slot keeps something else"))?;
    let listing = match cache.latest() {
        Some(kept) if kept.serves(version, now, &inputs) => kept,
        _ => {
            let made = Arc::new(encode_this(port, &checkout, inputs, now).await?);
            cache.keep(made.clone());
            made
        }
    };
    let caller = ctx.caller().cloned();
    match form {
        Form::Encoded => for_caller(&listing, caller.as_ref()).map(Reply::Encoded),
        Form::Structured if listing.encoded.len() <= ENCODE_INLINE_BYTES => {
            structured_for_caller(&listing, caller.as_ref())
        }
        Form::Structured => {
            tokio::task::spawn_blocking(move || structured_for_caller(&listing, caller.as_ref()))
                .await
                .map_err(|error| {
                    CapabilityError::internal(format!("copying the listing failed: {error}"))
                })?
        }
    }
}

/// Makes this board's listing at `now`, encoded as a JSON value is (the keys in order), so
/// that it is byte for byte the answer the listing's value would give. A crowded board's
/// overlaps are found and its listing encoded on a blocking thread, not on a worker.
async fn encode_this(
    port: &dyn BoardPort,
    checkout: &Checkout,
    inputs: ListingInputs,
    now: SystemTime,
) -> Result<CachedListing, CapabilityError> {
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
    let listing = listing_of(None, vec![board], None);
    let size = listing.size_estimate();
    let (encoded, caller_at) = if size > ENCODE_INLINE_BYTES {
        tokio::task::spawn_blocking(move || encode_listing(listing, size))
            .await
            .map_err(|error| {
                CapabilityError::internal(format!("encoding the listing failed: {error}"))
            })??
    } else {
        encode_listing(listing, size)?
    };
    Ok(CachedListing {
        version: snapshot.version,
        made_at: now,
        same_until: snapshot.same_until,
        inputs,
        encoded: Bytes::from(encoded),
        caller_at,
        value: OnceLock::new(),
    })
}

/// `listing` with its overlaps found, encoded in a buffer of about `size` bytes, and where
/// its caller's `null` is.
fn encode_listing(mut listing: PeerList, size: usize) -> Result<(Vec<u8>, usize), CapabilityError> {
    find_overlaps(&mut listing);
    let encoded = sorted_json::to_vec(&listing, size).map_err(|error| {
        CapabilityError::internal(format!("could not encode the answer: {error}"))
    })?;
    // Keys are in order and `boards` precedes `caller`; nothing inside a board has a
    // `caller`, and a string cannot hold this text unescaped, so the first match is the
    // field.
    const CALLER: &[u8] = b",\"caller\":null,";
    let caller_at = encoded
        .windows(CALLER.len())
        .position(|window| window == CALLER)
        .map(|at| at + CALLER.len() - "null,".len())
        .ok_or_else(|| CapabilityError::internal("the encoded listing names no caller"))?;
    Ok((encoded, caller_at))
}

/// The kept listing as answered to `caller`: as it is for a call without a peer, with the
/// peer's id in place of its `null` otherwise.
fn for_caller(listing: &CachedListing, caller: Option<&PeerId>) -> Result<Bytes, CapabilityError> {
    let Some(caller) = caller else {
        return Ok(listing.encoded.clone());
    };
    let id = serde_json::to_vec(&wire::PeerId::from(caller.clone())).map_err(|error| {
        CapabilityError::internal(format!("could not encode the caller: {error}"))
    })?;
    let (before, after) = listing.encoded.split_at(listing.caller_at);
    let after = &after["null".len()..];
    let mut answer = Vec::with_capacity(before.len() + id.len() + after.len());
    answer.extend_from_slice(before);
    answer.extend_from_slice(&id);
    answer.extend_from_slice(after);
    Ok(Bytes::from(answer))
}

/// The kept listing as answered to `caller` as a value and its text: the value made once
/// per listing, copied, with the caller written in.
fn structured_for_caller(
    listing: &CachedListing,
    caller: Option<&PeerId>,
) -> Result<Reply<PeerList>, CapabilityError> {
    let text = String::from_utf8(for_caller(listing, caller)?.into())
        .map_err(|error| CapabilityError::internal(format!("the listing is not UTF-8: {error}")))?;
    let kept = match listing.value.get() {
        Some(value) => value,
        None => {
            let value = serde_json::from_slice(&listing.encoded).map_err(|error| {
                CapabilityError::internal(format!("could not decode the listing: {error}"))
            })?;
            listing.value.get_or_init(|| value)
        }
    };
    let mut value = kept.clone();
    if let (Some(caller), Value::Object(fields)) = (caller, &mut value) {
        let id = serde_json::to_value(wire::PeerId::from(caller.clone())).map_err(|error| {
            CapabilityError::internal(format!("could not encode the caller: {error}"))
        })?;
        fields.insert("caller".to_owned(), id);
    }
    debug_assert_eq!(
        value.to_string(),
        text,
        "the kept listing's value and text differ"
    );
    Ok(Reply::Structured { text, value })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

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
        let kept = CachedListing {
            version: 7,
            made_at: at(1_000),
            same_until: Some(at(1_400)),
            inputs: inputs.clone(),
            encoded: Bytes::from_static(b"{}"),
            caller_at: 0,
            value: OnceLock::new(),
        };
        assert!(kept.serves(7, at(1_000), &inputs));
        assert!(kept.serves(7, at(1_399), &inputs));
        assert!(!kept.serves(8, at(1_000), &inputs), "the board changed");
        assert!(!kept.serves(7, at(1_400), &inputs), "an age ticked over");
        assert!(!kept.serves(7, at(999), &inputs), "the clock stepped back");
        let switched = ListingInputs {
            branch: Some("topic".into()),
            ..inputs.clone()
        };
        assert!(
            !kept.serves(7, at(1_000), &switched),
            "the branch was switched"
        );
        let changed = ListingInputs {
            changes: Some(WorktreeChanges::unreadable("git is still reading")),
            ..inputs
        };
        assert!(!kept.serves(7, at(1_000), &changed), "git read new changes");
    }

    #[test]
    fn a_kept_listing_answers_a_value_that_writes_its_text_with_the_caller_in_it() {
        let (encoded, caller_at) = encode_listing(listing_of(None, Vec::new(), None), 0).unwrap();
        let kept = CachedListing {
            version: 1,
            made_at: UNIX_EPOCH,
            same_until: None,
            inputs: ListingInputs {
                branch: None,
                standing: ServerStanding::Ready,
                url: None,
                changes: None,
            },
            encoded: Bytes::from(encoded),
            caller_at,
            value: OnceLock::new(),
        };
        for caller in [Some(PeerId::nth(3)), None, Some(PeerId::nth(12))] {
            let Reply::Structured { text, value } =
                structured_for_caller(&kept, caller.as_ref()).unwrap()
            else {
                panic!("a structured reply was asked for");
            };
            let encoded = for_caller(&kept, caller.as_ref()).unwrap();
            assert_eq!(text.as_bytes(), &encoded[..]);
            assert_eq!(value, serde_json::from_slice::<Value>(&encoded).unwrap());
            let expected = caller.map_or(Value::Null, |id| Value::String(id.as_str().into()));
            assert_eq!(value["caller"], expected);
        }
        assert_eq!(
            kept.value.get().unwrap()["caller"],
            Value::Null,
            "kept without a caller"
        );
    }
}
