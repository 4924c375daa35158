//! The capabilities of this build. Each module declares its operations once; the registry
//! this module builds from them ([`registry`]) projects them onto every surface.

mod board;
pub mod conflicts;
pub mod episodes;
pub mod hooks;
pub mod leases;
mod mailbox;
pub mod messages;
pub mod openapi;
pub mod peers;
pub mod resources;
pub mod server;
#[cfg(test)]
mod table_tests;
#[cfg(test)]
mod testing;
pub mod wire;

use std::sync::OnceLock;

use majordomus_core::registry::{Capability, Registry};

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
        Capability::of::<leases::LeasesAcquire>(),
        Capability::of::<leases::LeasesRelease>(),
        Capability::of::<messages::MessagesSend>(),
        Capability::of::<messages::MessagesList>(),
        Capability::of::<hooks::HooksGuard>(),
        Capability::of::<hooks::HooksLeases>(),
        Capability::of::<hooks::HooksEdit>(),
        Capability::of::<hooks::HooksNews>(),
        Capability::of::<hooks::HooksEnd>(),
        Capability::of::<hooks::wait::HooksWait>(),
        Capability::of::<hooks::received::HooksReceived>(),
    ]
}

/// The registry of this build: every capability of [`all`], checked once. The surfaces (MCP,
/// REST, CLI, OpenAPI, resources) read it from here; the registry itself knows no capability.
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        Registry::new(all()).unwrap_or_else(|conflict| {
            panic!("the capability registry is inconsistent: {conflict}")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_of_this_build_has_no_duplicate_surface() {
        Registry::new(all()).unwrap();
    }

    #[test]
    fn every_tool_has_object_schemas_and_a_description() {
        for capability in registry().iter() {
            assert_eq!(
                capability.input_schema()["type"],
                "object",
                "{}",
                capability.id()
            );
            assert_eq!(
                capability.output_schema()["type"],
                "object",
                "{}",
                capability.id()
            );
            assert!(!capability.declaration.description.is_empty());
            assert!(
                !capability.bench_cases().is_empty(),
                "{} has no bench case",
                capability.id()
            );
        }
    }
}
