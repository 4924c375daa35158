//! Recording episodes durably: the driver a repository's episodes are reported to.

use majordomus_domain::episodes::ConnectionEpisode;
use majordomus_domain::peers::{Announced, PeerId};

use crate::context::Site;
use crate::server::ServerState;

/// The repository's episode driver, as this server runs it.
pub struct Recorder {}

impl Recorder {
    pub fn for_site(_site: &Site) -> Recorder {
        Recorder {}
    }

    pub fn record_detached(&self, _state: &ServerState, _episode: &ConnectionEpisode) {}

    pub fn note_claims(&self, _state: &ServerState, _peer: &PeerId, _announced: &Announced) {}
}
