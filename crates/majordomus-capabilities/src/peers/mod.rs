//! `peers.list` and `peers.announce`: the board, repository-wide — every worktree's peers
//! and their claims, what each worktree actually changed, and where any of them meet.
//!
//! One concept a file, each using only those listed before it: the peers as the answers
//! write them ([`wire`]), the worktrees' changes as the answers write them
//! ([`wire_changes`]), the answer's types ([`answer`]), other machines' boards joined to a listing ([`federated`]), git's reading of
//! one worktree's changes ([`changes`]), the background reading of the whole repository
//! ([`reading`]), a board's entry in a listing ([`boards`]), the listings kept encoded
//! between calls ([`cache`]), the listing for people ([`render`]), `peers.list` and
//! the reading of any checkout's peers, which asks a remote board's `peers.list` ([`list`]),
//! the siblings' boards an announcement reads ([`siblings`]) and `peers.announce`
//! ([`announce`]).

mod announce;
mod answer;
mod boards;
mod cache;
mod changes;
mod federated;
mod list;
mod reading;
mod render;
mod siblings;
pub mod wire;
pub mod wire_changes;

pub(crate) use announce::resolve_on_disk;
pub use announce::{AnnounceAnswer, PeersAnnounce, UnreadBoard};
pub use answer::{BoardView, ListedPeer, PeerList, PeerListInput};
pub(crate) use boards::Detail;
pub use list::PeersList;
pub(crate) use list::listing;
pub(crate) use reading::repository_reading;
