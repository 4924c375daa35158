//! The pure domain of majordomus: claim paths and how they meet, the peer board and the
//! lifetime of departed claims, the repository-wide overlap listing, what each worktree
//! changed and where that meets claims, the merge conflicts predicted between worktrees,
//! the peers and their episodes as one aggregate with the rules that span both,
//! connection episodes and the words answers are made of, the limits on what a peer may put
//! on a board, and how a peer's words are made safe for other agents and for terminals.
//!
//! Nothing here does I/O, spawns, sleeps or reads a clock: every operation that needs the
//! current time takes it as a [`std::time::SystemTime`], so the rules can be tested exactly
//! and the app decides where time comes from. Nothing here is serialised either: every
//! answer, input, event, journal line, published board and file is written in types of its
//! own in the crate that writes it, converted from and into these, so a change of the
//! domain's types never changes what another program reads.

pub mod board;
pub mod briefing;
pub mod changes;
pub mod checkouts;
pub mod conflicts;
pub mod coordination;
pub mod episodes;
pub mod ids;
pub mod index;
pub mod leases;
pub mod limits;
pub mod listing;
pub mod messages;
mod pairs;
pub mod paths;
pub mod peers;
pub mod sync;
pub mod text;

#[cfg(test)]
mod testing;
