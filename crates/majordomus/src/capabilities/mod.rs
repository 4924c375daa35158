//! The capabilities of this build. Each module declares its operations once; the registry
//! projects them onto every surface.

pub mod conflicts;
pub mod episodes;
pub mod hooks;
pub mod peers;
pub mod server;

use crate::registry::Capability;

/// Every capability, in the order the reference index lists them.
pub fn all() -> Vec<Capability> {
    vec![
        Capability::of::<peers::PeersList>(),
        session_bound(Capability::of::<peers::PeersAnnounce>()),
        Capability::of::<server::ServerStatus>(),
        Capability::of::<conflicts::ConflictsPredict>(),
        Capability::of::<episodes::EpisodesList>(),
        session_bound(Capability::of::<episodes::EpisodesAttach>()),
        Capability::of::<episodes::EpisodesDetach>(),
        Capability::of::<hooks::HooksGuard>(),
        Capability::of::<hooks::HooksEdit>(),
        Capability::of::<hooks::HooksNews>(),
    ]
}

/// A command that can only act for the MCP session calling it: a claim belongs to a peer, an
/// attached episode to a connection. Plain HTTP has no session, so a route for it could only
/// ever refuse; it is not offered there. What a client's hooks do over HTTP on behalf of a
/// session (record its edits, guard its files, tell it the news) is `hooks.*`, whose input
/// names the session.
fn session_bound(mut capability: Capability) -> Capability {
    capability.declaration.exposure.http = None;
    capability
}
