//! `peers.list` and `peers.announce`: the board, repository-wide — every worktree's peers
//! and their claims, what each worktree actually changed, and where any of them meet.
//!
//! One concept a file, each using only those listed before it: the answer's types
//! ([`answer`]), git's reading of one worktree's changes ([`changes`]), the background
//! reading of the whole repository ([`reading`]), one checkout's board as a listing reads it
//! ([`boards`]), this board's listing kept encoded between calls ([`cache`]), the listing for
//! people ([`render`]), `peers.list` ([`list`]), the siblings' boards an announcement reads
//! ([`siblings`]) and `peers.announce` ([`announce`]).

mod announce;
mod answer;
mod boards;
mod cache;
mod changes;
mod list;
mod reading;
mod render;
mod siblings;

pub(crate) use announce::needs_a_session;
pub use announce::{AnnounceAnswer, PeersAnnounce, UnreadBoard};
#[cfg(test)]
pub(crate) use answer::find_overlaps;
pub use answer::{BoardView, ListedPeer, PeerList, PeerListInput};
pub(crate) use boards::Detail;
pub use list::PeersList;
pub(crate) use list::listing;
pub(crate) use reading::repository_reading;
