//! The repository's lease table when the checkout is federated: one key,
//! `<repository>.leases`, of the JetStream key-value bucket
//! [`BUCKET`](super::versioned::BUCKET), which every machine's servers change alike, so a
//! team has one holder of `db:staging`, not one a machine.
//!
//! Every change is compare-and-set on the key's revision ([`change_versioned`]). The
//! federation being out of reach refuses the change with an error naming the outage: a lease
//! is never granted by this machine alone; nor is a table over [`TABLE_BYTES`] ever cut
//! short, it is refused.

use std::time::{Duration, SystemTime};

use majordomus_domain::leases::{LeaseTable, server_key};

use super::versioned::{
    CHANGE_ATTEMPTS, Kept, Key, KeyError, VALUE_BYTES, change_versioned, read_versioned,
};

/// The most bytes of a table kept in the bucket.
pub const TABLE_BYTES: usize = VALUE_BYTES;

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

impl From<KeyError> for LeaseStoreError {
    fn from(error: KeyError) -> Self {
        match error {
            KeyError::Outage(why) => LeaseStoreError::Outage(why),
            KeyError::Contended => LeaseStoreError::Contended,
            KeyError::TooLarge(bytes) => LeaseStoreError::TooLarge(bytes),
            KeyError::Unreadable(why) => LeaseStoreError::Unreadable(why),
        }
    }
}

/// A lease table makes no room for itself: no lease is dropped to make another fit.
impl Kept for LeaseTable {}

/// The federated lease table of one repository, as one serving process reaches it.
#[derive(Clone)]
pub struct LeaseStore {
    pub(super) key: Key,
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

    /// Which key of the bucket the table is kept under.
    pub fn table(&self) -> &str {
        &self.key.key
    }

    /// The table as it is now.
    pub async fn read(&self) -> Result<LeaseTable, LeaseStoreError> {
        Ok(read_versioned(&self.key).await.map(|(table, _)| table)?)
    }

    /// Changes the table by compare-and-set (see [`change_versioned`]).
    pub async fn change<T>(
        &self,
        change: impl FnMut(&mut LeaseTable) -> (T, bool),
    ) -> Result<T, LeaseStoreError> {
        Ok(change_versioned(&self.key, change).await?)
    }
}

/// The key of a repository's table, from its token in the bucket's keys.
pub(super) fn table_key(repository_token: &str) -> String {
    format!("{repository_token}.leases")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::UNIX_EPOCH;

    use majordomus_checkout::shared_file::Stored;
    use majordomus_domain::leases::{Holder, LeaseTtl, Life, ProcessId, Standing};

    use super::*;
    use crate::versioned::{Saved, Versioned};
    use bytes::Bytes;

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
                        .map(|(bytes, _)| LeaseTable::read(&bytes).unwrap())
                        .unwrap_or_default();
                    table.next_ticket += 1;
                    self.write(table.written().unwrap().into());
                }
            }
            let latest = self.value.lock().unwrap().as_ref().map(|(_, r)| *r);
            if latest != revision {
                return Ok(Saved::Conflict);
            }
            self.write(value);
            Ok(Saved::Written(latest.map_or(1, |r| r + 1)))
        }
    }

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
            let standing = table
                .acquire(
                    "db:staging",
                    holder(key),
                    LeaseTtl::check(60).unwrap(),
                    at(),
                )
                .unwrap();
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
        let (table, revision) = read_versioned::<_, LeaseTable>(&store).await.unwrap();
        assert_eq!(revision, Some(5));
        assert_eq!(table.next_ticket, 5);
        // A change that changes nothing writes nothing.
        let unchanged = change_versioned(&store, |_: &mut LeaseTable| ((), false)).await;
        assert_eq!(
            (
                unchanged,
                read_versioned::<_, LeaseTable>(&store).await.unwrap().1
            ),
            (Ok(()), Some(5))
        );
    }

    #[tokio::test]
    async fn endless_conflicts_and_an_outage_are_refused_never_granted() {
        let store = Memory::default();
        *store.interleaved.lock().unwrap() = CHANGE_ATTEMPTS;
        let refused =
            LeaseStoreError::from(change_versioned(&store, acquire("a")).await.unwrap_err());
        assert_eq!(refused, LeaseStoreError::Contended);
        assert!(refused.to_string().contains("200 times"), "{refused}");
        *store.down.lock().unwrap() = true;
        let refused =
            LeaseStoreError::from(change_versioned(&store, acquire("a")).await.unwrap_err());
        assert!(
            refused
                .to_string()
                .starts_with("the federation is out of reach"),
            "{refused}"
        );
        *store.down.lock().unwrap() = false;
        store.write(Bytes::from(vec![b' '; TABLE_BYTES + 1]));
        assert_eq!(
            read_versioned::<_, LeaseTable>(&store).await.unwrap_err(),
            KeyError::TooLarge(TABLE_BYTES + 1)
        );
    }
}
