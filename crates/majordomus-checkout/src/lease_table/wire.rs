//! The lease table as its file (and the federation's key) writes it: types of the file's own,
//! converted from the domain's table when it is written and back into it when it is read.
//! Every server and every `majordomus lease` of the repository, of whichever build, reads the
//! one file, and it outlives every server, so what is on disk changes only when this file
//! does, never because a type of the domain did.

use std::collections::{BTreeMap, VecDeque};

use majordomus_domain::leases as domain;
use serde::{Deserialize, Serialize};

/// A process, by pid and start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ProcessId {
    pid: u32,
    start: Option<u64>,
}

/// What a holder's life hangs on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Life {
    Session { server: ProcessId, peer: String },
    Process { process: ProcessId },
}

/// Who asks for a lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Holder {
    key: String,
    label: String,
    checkout: String,
    life: Life,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine: Option<String>,
}

/// A server's latest renewal of its holders in a table shared by machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Beat {
    renewed_ms: u64,
    lifetime_secs: u32,
}

/// One request in a lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Request {
    holder: Holder,
    ticket: u64,
    ttl_secs: u32,
    asked_ms: u64,
    granted_ms: Option<u64>,
    expires_ms: Option<u64>,
}

/// A lease: its holder and who waits behind it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Lease {
    holder: Option<Request>,
    queue: VecDeque<Request>,
}

/// A port handed to a worktree from a range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct PortAssignment {
    range: String,
    checkout: String,
    port: u16,
    used_ms: u64,
}

/// The repository's leases and the ports handed to its worktrees.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseTable {
    next_ticket: u64,
    leases: BTreeMap<String, Lease>,
    #[serde(default)]
    ports: Vec<PortAssignment>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    beats: BTreeMap<String, Beat>,
}

impl From<domain::ProcessId> for ProcessId {
    fn from(process: domain::ProcessId) -> Self {
        ProcessId {
            pid: process.pid,
            start: process.start,
        }
    }
}

impl From<ProcessId> for domain::ProcessId {
    fn from(process: ProcessId) -> Self {
        domain::ProcessId {
            pid: process.pid,
            start: process.start,
        }
    }
}

impl From<domain::Life> for Life {
    fn from(life: domain::Life) -> Self {
        match life {
            domain::Life::Session { server, peer } => Life::Session {
                server: server.into(),
                peer,
            },
            domain::Life::Process { process } => Life::Process {
                process: process.into(),
            },
        }
    }
}

impl From<Life> for domain::Life {
    fn from(life: Life) -> Self {
        match life {
            Life::Session { server, peer } => domain::Life::Session {
                server: server.into(),
                peer,
            },
            Life::Process { process } => domain::Life::Process {
                process: process.into(),
            },
        }
    }
}

impl From<domain::Holder> for Holder {
    fn from(holder: domain::Holder) -> Self {
        Holder {
            key: holder.key,
            label: holder.label,
            checkout: holder.checkout,
            life: holder.life.into(),
            machine: holder.machine,
        }
    }
}

impl From<Holder> for domain::Holder {
    fn from(holder: Holder) -> Self {
        domain::Holder {
            key: holder.key,
            label: holder.label,
            checkout: holder.checkout,
            life: holder.life.into(),
            machine: holder.machine,
        }
    }
}

impl From<domain::Request> for Request {
    fn from(request: domain::Request) -> Self {
        Request {
            holder: request.holder.into(),
            ticket: request.ticket,
            ttl_secs: request.ttl_secs,
            asked_ms: request.asked_ms,
            granted_ms: request.granted_ms,
            expires_ms: request.expires_ms,
        }
    }
}

impl From<Request> for domain::Request {
    fn from(request: Request) -> Self {
        domain::Request {
            holder: request.holder.into(),
            ticket: request.ticket,
            ttl_secs: request.ttl_secs,
            asked_ms: request.asked_ms,
            granted_ms: request.granted_ms,
            expires_ms: request.expires_ms,
        }
    }
}

impl From<domain::Lease> for Lease {
    fn from(lease: domain::Lease) -> Self {
        Lease {
            holder: lease.holder.map(Request::from),
            queue: lease.queue.into_iter().map(Request::from).collect(),
        }
    }
}

impl From<Lease> for domain::Lease {
    fn from(lease: Lease) -> Self {
        domain::Lease {
            holder: lease.holder.map(domain::Request::from),
            queue: lease.queue.into_iter().map(domain::Request::from).collect(),
        }
    }
}

impl From<domain::PortAssignment> for PortAssignment {
    fn from(port: domain::PortAssignment) -> Self {
        PortAssignment {
            range: port.range,
            checkout: port.checkout,
            port: port.port,
            used_ms: port.used_ms,
        }
    }
}

impl From<PortAssignment> for domain::PortAssignment {
    fn from(port: PortAssignment) -> Self {
        domain::PortAssignment {
            range: port.range,
            checkout: port.checkout,
            port: port.port,
            used_ms: port.used_ms,
        }
    }
}

impl From<domain::LeaseTable> for LeaseTable {
    fn from(table: domain::LeaseTable) -> Self {
        LeaseTable {
            next_ticket: table.next_ticket,
            leases: table
                .leases
                .into_iter()
                .map(|(name, lease)| (name, lease.into()))
                .collect(),
            ports: table.ports.into_iter().map(PortAssignment::from).collect(),
            beats: table
                .beats
                .into_iter()
                .map(|(server, beat)| {
                    let beat = Beat {
                        renewed_ms: beat.renewed_ms,
                        lifetime_secs: beat.lifetime_secs,
                    };
                    (server, beat)
                })
                .collect(),
        }
    }
}

impl From<LeaseTable> for domain::LeaseTable {
    fn from(table: LeaseTable) -> Self {
        domain::LeaseTable {
            next_ticket: table.next_ticket,
            leases: table
                .leases
                .into_iter()
                .map(|(name, lease)| (name, lease.into()))
                .collect(),
            ports: table
                .ports
                .into_iter()
                .map(domain::PortAssignment::from)
                .collect(),
            beats: table
                .beats
                .into_iter()
                .map(|(server, beat)| {
                    let beat = domain::Beat {
                        renewed_ms: beat.renewed_ms,
                        lifetime_secs: beat.lifetime_secs,
                    };
                    (server, beat)
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table with every field of every type set somewhere (both lives, a start time known
    /// and not, a queue, a port, a beat), as the domain's own types wrote it before the file
    /// had types of its own: it reads, and is written back to the byte.
    const WRITTEN: &str = r#"{"next_ticket":4,"leases":{"db:staging":{"holder":{"holder":{"key":"k1","label":"k1 label","checkout":"3f9a0c1e","life":{"kind":"session","server":{"pid":100,"start":12345},"peer":"p1"}},"ticket":1,"ttl_secs":60,"asked_ms":1796000000001,"granted_ms":1796000000100,"expires_ms":1796000060100},"queue":[{"holder":{"key":"k2","label":"k2 label","checkout":"3f9a0c1e","life":{"kind":"process","process":{"pid":200,"start":null}},"machine":"alpha"},"ticket":2,"ttl_secs":60,"asked_ms":1796000000002,"granted_ms":null,"expires_ms":null}]},"port:4003":{"holder":{"holder":{"key":"k3","label":"k3 label","checkout":"3f9a0c1e","life":{"kind":"process","process":{"pid":300,"start":9}}},"ticket":3,"ttl_secs":60,"asked_ms":1796000000003,"granted_ms":1796000000100,"expires_ms":1796000060100},"queue":[]}},"ports":[{"range":"port:4000-4010","checkout":"3f9a0c1e","port":4003,"used_ms":1796000000000}],"beats":{"alpha 3f9a0c1e":{"renewed_ms":1796000000000,"lifetime_secs":30}}}"#;

    fn read(text: &str) -> domain::LeaseTable {
        serde_json::from_str::<LeaseTable>(text).unwrap().into()
    }

    fn written(table: domain::LeaseTable) -> String {
        serde_json::to_string(&LeaseTable::from(table)).unwrap()
    }

    #[test]
    fn a_table_the_domains_types_wrote_reads_and_is_written_back_to_the_byte() {
        let table = read(WRITTEN);
        assert_eq!(table.next_ticket, 4);
        let staging = &table.leases["db:staging"];
        let holder = &staging.holder.as_ref().unwrap().holder;
        assert_eq!(
            holder.life,
            domain::Life::Session {
                server: domain::ProcessId {
                    pid: 100,
                    start: Some(12_345)
                },
                peer: "p1".into()
            }
        );
        let waiting = &staging.queue[0];
        assert_eq!(waiting.holder.machine.as_deref(), Some("alpha"));
        assert_eq!(waiting.granted_ms, None);
        assert_eq!(table.ports[0].port, 4003);
        assert_eq!(table.beats["alpha 3f9a0c1e"].lifetime_secs, 30);
        assert_eq!(written(table), WRITTEN);
    }

    #[test]
    fn what_older_files_leave_out_reads_as_its_default() {
        let table = read(r#"{"next_ticket":2,"leases":{}}"#);
        assert_eq!(table.next_ticket, 2);
        assert!(table.ports.is_empty() && table.beats.is_empty());
        assert_eq!(
            written(domain::LeaseTable::default()),
            r#"{"next_ticket":0,"leases":{},"ports":[]}"#
        );
    }
}
