//! One value of a federated repository kept under one key of a JetStream key-value bucket,
//! which every machine's servers change alike: the lease table ([`super::leases`]) and the
//! mailbox ([`super::mailbox`]).
//!
//! Every change is compare-and-set on the key's revision: read the value and its revision,
//! change it, and write it only if the key is still at that revision (`update`, or `create`
//! when there is none yet); a write another server made meanwhile refuses it, and the change
//! is made again on the value as it is now ([`change_versioned`], written over any
//! [`Versioned`] store so the rule is tested without NATS). A value that would outgrow what
//! one NATS message carries makes room for itself when it can ([`Kept::make_room`]), and is
//! refused when it cannot.

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use majordomus_checkout::shared_file::Stored;

/// The JetStream key-value bucket the values of federated repositories are kept in, each
/// under `<repository>.<what>`: one value a key, kept until replaced (the boards' bucket lets
/// its entries expire). It is named for the first of them, the lease tables.
pub const BUCKET: &str = "majordomus-leases";

/// How many times a change is made again on a value others changed meanwhile, before it is
/// given up as contended.
pub const CHANGE_ATTEMPTS: u32 = 200;

/// The most bytes of a value kept in the bucket: under the 1 MiB a NATS message carries by
/// default.
pub const VALUE_BYTES: usize = 960 * 1024;

/// How long one read or write of a value may take before the federation is taken to be out
/// of reach.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a federated value could not be read or changed; each value's store says it in its
/// own words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The federation is out of reach, in words.
    Outage(String),
    /// Other servers changed it [`CHANGE_ATTEMPTS`] times in a row.
    Contended,
    /// It would be this many bytes, over the store's bound.
    TooLarge(usize),
    /// What is kept is not such a value.
    Unreadable(String),
}

/// What a write at a revision came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    /// Written, at this new revision.
    Written(u64),
    /// Another write came first: the revision is no longer the latest.
    Conflict,
}

/// A store of one value with revisions: all compare-and-set needs.
pub trait Versioned {
    /// The value and its revision; `None` when it was never written.
    fn load(&self) -> impl Future<Output = Result<Option<(Bytes, u64)>, String>> + Send;
    /// Writes `value` if the latest revision is still `revision` (`None`: if there is none).
    fn save(
        &self,
        value: Bytes,
        revision: Option<u64>,
    ) -> impl Future<Output = Result<Saved, String>> + Send;
    /// The most bytes a value may have here.
    fn bound(&self) -> usize {
        VALUE_BYTES
    }
}

/// A value kept under a key: JSON in the wire type its file is written in too, empty until
/// first written.
pub trait Kept: Stored + Clone {
    /// Makes the value at least `excess` bytes smaller, when it can drop something (the
    /// oldest messages of a mailbox); answers whether it did. A lease table cannot: a table
    /// over its bound is refused.
    fn make_room(&mut self, _excess: usize) -> bool {
        false
    }
}

/// Changes the value kept in `store` by compare-and-set: `change` gets the value as it is and
/// answers whether it changed it; an unchanged value is not written, a changed one is written
/// at the revision it was read at, and on a conflict the change is made again on the value
/// as it is now, at most [`CHANGE_ATTEMPTS`] times.
pub async fn change_versioned<S: Versioned, V: Kept, T>(
    store: &S,
    mut change: impl FnMut(&mut V) -> (T, bool),
) -> Result<T, KeyError> {
    for attempt in 0..CHANGE_ATTEMPTS {
        let (mut value, revision) = read_versioned(store).await?;
        let (answer, changed) = change(&mut value);
        if !changed {
            return Ok(answer);
        }
        let bytes = fitted(&mut value, store.bound())?;
        match store
            .save(bytes.into(), revision)
            .await
            .map_err(KeyError::Outage)?
        {
            Saved::Written(_) => return Ok(answer),
            Saved::Conflict => tokio::time::sleep(conflict_pause(attempt)).await,
        }
    }
    Err(KeyError::Contended)
}

/// `value` as it is written, within `bound` bytes: made room in while it is over and can,
/// each time by what it is over, so a mailbox is written again only a few times however
/// large its messages.
fn fitted<V: Kept>(value: &mut V, bound: usize) -> Result<Vec<u8>, KeyError> {
    loop {
        let mut bytes = value
            .clone()
            .written()
            .map_err(|error| KeyError::Unreadable(error.to_string()))?;
        bytes.push(b'\n');
        if bytes.len() <= bound {
            return Ok(bytes);
        }
        if !value.make_room(bytes.len() - bound) {
            return Err(KeyError::TooLarge(bytes.len()));
        }
    }
}

/// The value kept in `store` and its revision; empty, at no revision, when never written.
pub async fn read_versioned<S: Versioned, V: Kept>(
    store: &S,
) -> Result<(V, Option<u64>), KeyError> {
    match store.load().await.map_err(KeyError::Outage)? {
        None => Ok((V::default(), None)),
        Some((bytes, revision)) => {
            if bytes.len() > store.bound() {
                return Err(KeyError::TooLarge(bytes.len()));
            }
            let value = V::read(&bytes).map_err(|error| KeyError::Unreadable(error.to_string()))?;
            Ok((value, Some(revision)))
        }
    }
}

/// A short random pause after the `attempt`-th conflict, growing with the attempts, so that
/// the servers that lost a race do not meet again at once.
fn conflict_pause(attempt: u32) -> Duration {
    let most = 1 + u64::from(attempt.min(20)) * 250;
    Duration::from_micros(rand::random_range(0..most))
}

/// One key of the bucket, as one serving process reaches it.
#[derive(Clone)]
pub struct Key {
    pub(super) store: kv::Store,
    pub(super) key: String,
    /// What the value is, in the words of an error (`the lease table`).
    pub(super) what: &'static str,
}

impl Versioned for Key {
    async fn load(&self) -> Result<Option<(Bytes, u64)>, String> {
        let read = tokio::time::timeout(REQUEST_TIMEOUT, self.store.entry(self.key.as_str()))
            .await
            .map_err(|_| self.took_too_long("reading"))?
            .map_err(|error| format!("reading {} failed: {error}", self.what))?;
        Ok(read.map(|entry| match entry.operation {
            kv::Operation::Put => (entry.value, entry.revision),
            // A removed value is written again at its revision.
            kv::Operation::Delete | kv::Operation::Purge => {
                (Bytes::from_static(b"{}"), entry.revision)
            }
        }))
    }

    async fn save(&self, value: Bytes, revision: Option<u64>) -> Result<Saved, String> {
        let written = match revision {
            Some(revision) => tokio::time::timeout(
                REQUEST_TIMEOUT,
                self.store.update(self.key.as_str(), value, revision),
            )
            .await
            .map_err(|_| self.took_too_long("writing"))?
            .map_err(|error| match error.kind() {
                kv::UpdateErrorKind::WrongLastRevision => None,
                _ => Some(error.to_string()),
            }),
            None => tokio::time::timeout(REQUEST_TIMEOUT, self.store.create(&self.key, value))
                .await
                .map_err(|_| self.took_too_long("writing"))?
                .map_err(|error| match error.kind() {
                    kv::CreateErrorKind::AlreadyExists => None,
                    _ => Some(error.to_string()),
                }),
        };
        match written {
            Ok(revision) => Ok(Saved::Written(revision)),
            Err(None) => Ok(Saved::Conflict),
            Err(Some(why)) => Err(format!("writing {} failed: {why}", self.what)),
        }
    }
}

impl Key {
    fn took_too_long(&self, doing: &str) -> String {
        format!(
            "{doing} {} took longer than {} s",
            self.what,
            REQUEST_TIMEOUT.as_secs()
        )
    }
}

/// The bucket, created when it is missing as the boards' bucket is, but with no lifetime: a
/// value lives until it is replaced.
pub(super) async fn bucket(context: &jetstream::Context) -> Result<kv::Store, String> {
    super::link::key_value_bucket(
        context,
        BUCKET,
        "majordomus: each federated repository's lease table and mailbox",
        Duration::ZERO,
        VALUE_BYTES + 1024,
        "",
    )
    .await
}
