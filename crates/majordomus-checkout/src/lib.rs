//! Everything majordomus reads from git and the file system: which checkout a directory
//! belongs to and which worktrees share its repository ([`git`]), the lease by which a
//! checkout's server is found and won ([`lease`]), whether a lease's owner still runs
//! ([`process`]), where a checkout's server stands ([`standing`]), the repository's
//! `majordomus.toml` and the user's own configuration ([`config`]), what the person allowed
//! a repository to suggest ([`allowances`]), what each worktree changed ([`changes`]) and the
//! merge conflicts between them ([`conflicts`]) with the private object directories their git
//! objects go to ([`scratch`]), where a claimed path leads on disk ([`resolve`]), a
//! notice on the person's desktop ([`desktop`]), and the text every wire and file above the
//! domain writes an instant as ([`stamp_text`]).
//!
//! The crate is synchronous and speaks no HTTP: the app probes servers and drives the
//! election loop; this crate supplies the building blocks and the pure decisions.

pub mod allowances;
pub mod ancestry;
pub mod changes;
pub mod config;
pub mod conflicts;
pub mod desktop;
pub mod files;
pub mod git;
pub mod lease;
pub mod lease_table;
pub mod mailbox_file;
pub mod notice;
pub mod process;
pub mod resolve;
pub mod scratch;
pub mod shared_file;
pub mod stamp_text;
pub mod standing;

pub use config::{CONFIG_FILE, ChangesConfig, Config, ConfigError, EpisodesConfig, Timings};
pub use git::{
    BranchWatch, Checkout, CheckoutError, Stamps, Worktree, WorktreeList, list_worktrees,
};
pub use lease::{
    CreateError, LEASE_SCHEMA, Lease, LeaseHandle, LeaseReading, LeaseView, LeaseWatch, lease_age,
    lease_path, read_lease, take_over, try_create,
};
pub use process::{
    ExecutableStamp, ProcessHandle, executable_stamp, process_alive, process_start_time,
};
pub use standing::{
    ElectionVerdict, Evidence, ProbeAnswer, Standing, classify_for_election, judge_standing,
};

#[cfg(test)]
pub(crate) mod testing;
