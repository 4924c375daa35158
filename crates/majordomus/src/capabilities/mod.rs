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
        Capability::of::<peers::PeersAnnounce>(),
        Capability::of::<server::ServerStatus>(),
        Capability::of::<conflicts::ConflictsPredict>(),
        Capability::of::<episodes::EpisodesList>(),
        Capability::of::<episodes::EpisodesAttach>(),
        Capability::of::<episodes::EpisodesDetach>(),
        Capability::of::<hooks::HooksGuard>(),
        Capability::of::<hooks::HooksEdit>(),
        Capability::of::<hooks::HooksNews>(),
    ]
}
