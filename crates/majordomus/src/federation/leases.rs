//! The repository's lease table when the checkout is federated: one key,
//! `<repository>.leases`, of the JetStream key-value bucket [`LEASE_BUCKET`], which every
//! machine's servers change alike, so a team has one holder of `db:staging`, not one a
//! machine.
//!
//! Every change is compare-and-set on the key's revision: read the table and its revision,
//! change it, and write it only if the key is still at that revision (`update`, or `create`
//! when there is none yet); a write another server made meanwhile refuses it, and the change
//! is made again on the table as it is now ([`change_versioned`], written over any
//! [`Versioned`] store so the rule is tested without NATS). The federation being out of reach
//! refuses the change with an error naming the outage: a lease is never granted by this
//! machine alone.

use std::future::Future;
use std::time::{Duration, SystemTime};

use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use majordomus_domain::leases::{LeaseTable, server_key};

/// The JetStream key-value bucket the lease tables of federated repositories are kept in:
/// one value a key, kept until replaced (the boards' bucket lets its entries expire).
pub const LEASE_BUCKET: &str = "majordomus-leases";

/// How many times a change is made again on a table others changed meanwhile, before it is
/// given up as contended.
pub const CHANGE_ATTEMPTS: u32 = 200;

/// The most bytes of a table kept in the bucket: under the 1 MiB a NATS message carries by
/// default.
pub const TABLE_BYTES: usize = 960 * 1024;

/// How long one read or write of the table may take before the federation is taken to be
/// out of reach.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// Why the federated table could not be read or changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LeaseStoreError {
    #[error(
        "the federation is out of reach ({0}); this repository's leases are kept there, so \
         none is granted or released until it is back"
    )]
    Outage(String),
    #[error(
        "the federation's lease table was changed by other servers {CHANGE_ATTEMPTS} times in \
         a row while this change was made; ask again"
    )]
    Contended,
    #[error(
        "the federation's lease table would be {0} bytes, over the {TABLE_BYTES} one NATS \
         message carries; release a lease first"
    )]
    TooLarge(usize),
    #[error("the federation's lease table cannot be read ({0})")]
    Unreadable(String),
}

/// What a write at a revision came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    Written,
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
}

/// Changes the table kept in `store` by compare-and-set: `change` gets the table as it is and
/// answers whether it changed it; an unchanged table is not written, a changed one is written
/// at the revision it was read at, and on a conflict the change is made again on the table
/// as it is now, at most [`CHANGE_ATTEMPTS`] times.
pub async fn change_versioned<S: Versioned, T>(
    store: &S,
    mut change: impl FnMut(&mut LeaseTable) -> (T, bool),
) -> Result<T, LeaseStoreError> {
    for attempt in 0..CHANGE_ATTEMPTS {
        let (mut table, revision) = read_versioned(store).await?;
        let (answer, changed) = change(&mut table);
        if !changed {
            return Ok(answer);
        }
        let mut bytes = serde_json::to_vec(&table)
            .map_err(|error| LeaseStoreError::Unreadable(error.to_string()))?;
        bytes.push(b'\n');
        if bytes.len() > TABLE_BYTES {
            return Err(LeaseStoreError::TooLarge(bytes.len()));
        }
        match store
            .save(bytes.into(), revision)
            .await
            .map_err(LeaseStoreError::Outage)?
        {
            Saved::Written => return Ok(answer),
            Saved::Conflict => tokio::time::sleep(conflict_pause(attempt)).await,
        }
    }
    Err(LeaseStoreError::Contended)
}

/// The table kept in `store` and its revision; empty, at no revision, when never written.
pub async fn read_versioned<S: Versioned>(
    store: &S,
) -> Result<(LeaseTable, Option<u64>), LeaseStoreError> {
    match store.load().await.map_err(LeaseStoreError::Outage)? {
        None => Ok((LeaseTable::default(), None)),
        Some((bytes, revision)) => {
            if bytes.len() > TABLE_BYTES {
                return Err(LeaseStoreError::TooLarge(bytes.len()));
            }
            let table = serde_json::from_slice(&bytes)
                .map_err(|error| LeaseStoreError::Unreadable(error.to_string()))?;
            Ok((table, Some(revision)))
        }
    }
}

/// A short random pause after the `attempt`-th conflict, growing with the attempts, so that
/// the servers that lost a race do not meet again at once.
fn conflict_pause(attempt: u32) -> Duration {
    let most = 1 + u64::from(attempt.min(20)) * 250;
    Duration::from_micros(rand::random_range(0..most))
}

/// The federated lease table of one repository, as one serving process reaches it.
#[derive(Clone)]
pub struct LeaseStore {
    pub(super) store: kv::Store,
    pub(super) key: String,
    /// This machine's name in the federation.
    pub machine: String,
    /// The id of the checkout this server serves.
    pub checkout: String,
    /// How long this server's holders live without its renewal: the federation's ttl.
    pub lifetime: Duration,
}

impl LeaseStore {
    /// This server, as the beats of the table name it.
    pub fn server(&self) -> String {
        server_key(&self.machine, &self.checkout)
    }

    /// Renews this server's beat in `table` when it has holders there and the beat is due;
    /// answers whether it did, and forgets the beats of servers with no holder left.
    pub fn renew(&self, table: &mut LeaseTable, now: SystemTime) -> bool {
        let server = self.server();
        let mine = table
            .leases
            .values()
            .flat_map(|lease| lease.requests())
            .any(|r| r.holder.server().as_deref() == Some(server.as_str()));
        let idle = table.beats.len();
        table.forget_idle_beats();
        let forgot = table.beats.len() != idle;
        (mine && table.renew(&server, self.lifetime, now)) || forgot
    }

    /// The table as it is now.
    pub async fn read(&self) -> Result<LeaseTable, LeaseStoreError> {
        read_versioned(self).await.map(|(table, _)| table)
    }

    /// Changes the table by compare-and-set (see [`change_versioned`]).
    pub async fn change<T>(
        &self,
        change: impl FnMut(&mut LeaseTable) -> (T, bool),
    ) -> Result<T, LeaseStoreError> {
        change_versioned(self, change).await
    }
}

impl Versioned for LeaseStore {
    async fn load(&self) -> Result<Option<(Bytes, u64)>, String> {
        let read = tokio::time::timeout(REQUEST_TIMEOUT, self.store.entry(self.key.as_str()))
            .await
            .map_err(|_| took_too_long("reading"))?
            .map_err(|error| format!("reading the lease table failed: {error}"))?;
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
            .map_err(|_| took_too_long("writing"))?
            .map(drop)
            .map_err(|error| match error.kind() {
                kv::UpdateErrorKind::WrongLastRevision => None,
                _ => Some(error.to_string()),
            }),
            None => tokio::time::timeout(REQUEST_TIMEOUT, self.store.create(&self.key, value))
                .await
                .map_err(|_| took_too_long("writing"))?
                .map(drop)
                .map_err(|error| match error.kind() {
                    kv::CreateErrorKind::AlreadyExists => None,
                    _ => Some(error.to_string()),
                }),
        };
        match written {
            Ok(()) => Ok(Saved::Written),
            Err(None) => Ok(Saved::Conflict),
            Err(Some(why)) => Err(format!("writing the lease table failed: {why}")),
        }
    }
}

fn took_too_long(what: &str) -> String {
    format!(
        "{what} the lease table took longer than {} s",
        REQUEST_TIMEOUT.as_secs()
    )
}

/// The key of a repository's table, from its token in the bucket's keys.
pub(super) fn table_key(repository_token: &str) -> String {
    format!("{repository_token}.leases")
}

/// The bucket, created when it is missing, as the boards' bucket is (the stream a key-value
/// bucket is, made directly for the NATS 2.9 servers of Debian's stable release), but with
/// no lifetime: a table lives until it is replaced.
pub(super) async fn bucket(context: &jetstream::Context) -> Result<kv::Store, String> {
    if let Ok(store) = context.get_key_value(LEASE_BUCKET).await {
        return Ok(store);
    }
    let stream = jetstream::stream::Config {
        name: format!("KV_{LEASE_BUCKET}"),
        description: Some("majordomus: each federated repository's lease table".into()),
        subjects: vec![format!("$KV.{LEASE_BUCKET}.>")],
        max_messages_per_subject: 1,
        max_message_size: i32::try_from(TABLE_BYTES + 1024).unwrap_or(i32::MAX),
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        num_replicas: 1,
        discard: jetstream::stream::DiscardPolicy::New,
        ..Default::default()
    };
    let created = context.create_stream(stream).await;
    context
        .get_key_value(LEASE_BUCKET)
        .await
        .map_err(|error| match created {
            Err(created) => format!("the bucket {LEASE_BUCKET} cannot be made ({created})"),
            Ok(_) => format!("the bucket {LEASE_BUCKET} cannot be read ({error})"),
        })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::UNIX_EPOCH;

    use majordomus_domain::leases::{Holder, Life, ProcessId, Standing};

    use super::*;

    /// A versioned value in memory, with writes of "other servers" slipped in before the
    /// next `interleaved` saves, and an outage on demand.
    #[derive(Default)]
    struct Memory {
        value: Mutex<Option<(Bytes, u64)>>,
        interleaved: Mutex<u32>,
        down: Mutex<bool>,
    }

    impl Memory {
        fn write(&self, value: Bytes) {
            let mut kept = self.value.lock().unwrap();
            let revision = kept.as_ref().map_or(1, |(_, revision)| revision + 1);
            *kept = Some((value, revision));
        }
    }

    impl Versioned for Memory {
        async fn load(&self) -> Result<Option<(Bytes, u64)>, String> {
            if *self.down.lock().unwrap() {
                return Err("connection refused".into());
            }
            Ok(self.value.lock().unwrap().clone())
        }

        async fn save(&self, value: Bytes, revision: Option<u64>) -> Result<Saved, String> {
            {
                let mut interleaved = self.interleaved.lock().unwrap();
                if *interleaved > 0 {
                    *interleaved -= 1;
                    let current = self.value.lock().unwrap().clone();
                    // Another server's change, on top of what is there.
                    let mut table: LeaseTable = current
                        .map(|(bytes, _)| serde_json::from_slice(&bytes).unwrap())
                        .unwrap_or_default();
                    table.next_ticket += 1;
                    self.write(serde_json::to_vec(&table).unwrap().into());
                }
            }
            let latest = self.value.lock().unwrap().as_ref().map(|(_, r)| *r);
            if latest != revision {
                return Ok(Saved::Conflict);
            }
            self.write(value);
            Ok(Saved::Written)
        }
    }

    const TTL: Duration = Duration::from_secs(60);

    fn at() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_000_000)
    }

    fn holder(key: &str) -> Holder {
        Holder {
            key: key.into(),
            label: key.into(),
            checkout: "c".into(),
            life: Life::Process {
                process: ProcessId {
                    pid: 1,
                    start: None,
                },
            },
            machine: Some("alpha".into()),
        }
    }

    fn acquire(key: &str) -> impl FnMut(&mut LeaseTable) -> (Standing, bool) {
        move |table| {
            let standing = table.acquire("db:staging", holder(key), TTL, at()).unwrap();
            (standing, true)
        }
    }

    #[tokio::test]
    async fn a_change_is_made_again_on_the_table_others_wrote_meanwhile() {
        let store = Memory::default();
        let first = change_versioned(&store, acquire("a")).await.unwrap();
        assert!(matches!(first, Standing::Granted { ticket: 0, .. }));
        // Three writes of others come between this server's reads and writes: the change
        // is made a fourth time, on the table they left, and none of theirs is lost.
        *store.interleaved.lock().unwrap() = 3;
        let mut made = 0;
        let second = change_versioned(&store, |table| {
            made += 1;
            acquire("b")(table)
        })
        .await
        .unwrap();
        assert_eq!(made, 4);
        assert!(
            matches!(
                second,
                Standing::Queued {
                    ticket: 4,
                    position: 1,
                    ..
                }
            ),
            "{second:?}"
        );
        let (table, revision) = read_versioned(&store).await.unwrap();
        assert_eq!(revision, Some(5));
        assert_eq!(table.next_ticket, 5);
        // A change that changes nothing writes nothing.
        let unchanged = change_versioned(&store, |_| ((), false)).await;
        assert_eq!(
            (unchanged, read_versioned(&store).await.unwrap().1),
            (Ok(()), Some(5))
        );
    }

    #[tokio::test]
    async fn endless_conflicts_and_an_outage_are_refused_never_granted() {
        let store = Memory::default();
        *store.interleaved.lock().unwrap() = CHANGE_ATTEMPTS;
        let refused = change_versioned(&store, acquire("a")).await.unwrap_err();
        assert_eq!(refused, LeaseStoreError::Contended);
        assert!(refused.to_string().contains("200 times"), "{refused}");
        *store.down.lock().unwrap() = true;
        let refused = change_versioned(&store, acquire("a")).await.unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with("the federation is out of reach"),
            "{refused}"
        );
        *store.down.lock().unwrap() = false;
        store.write(Bytes::from(vec![b' '; TABLE_BYTES + 1]));
        assert_eq!(
            read_versioned(&store).await.unwrap_err(),
            LeaseStoreError::TooLarge(TABLE_BYTES + 1)
        );
    }
}
