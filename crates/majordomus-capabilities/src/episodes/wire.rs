//! Episodes as `episodes.list`, `episodes.attach` and `episodes.detach` write them, and the
//! inputs of the last two: types of the answers' own, converted from the domain's episode
//! board, so the answers change only when this file does, never because a type of the domain
//! did. Their doc comments are the
//! descriptions the schemas carry; the wire contract test pins what they write.

use majordomus_checkout::stamp_text::StampText;
use majordomus_domain::episodes as domain;
use majordomus_domain::{limits, text};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::PeerId;

/// The input of `episodes.attach`: the id under which this connection's work is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachInput {
    /// Your client's own durable id for this piece of work, such as its conversation id;
    /// never the peer id, which changes with every connection. One line of plain text.
    #[schemars(
        length(min = 1, max = limits::EXTERNAL_ID_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub external_id: String,
}

/// The input of `episodes.detach`: which episode to close deliberately.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DetachInput {
    /// The episode to close, as attached (plain text); leave it out for your connection's.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = limits::EXTERNAL_ID_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub external_id: Option<String>,
}

/// Whether an episode is held by a live connection or waiting for its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionEpisodeState {
    /// A connection holds it.
    Open,
    /// Its connection is gone; it is kept for the reattach grace so its client can resume
    /// it, then closed. A crash or a dropped connection lands here.
    Detached,
}

/// One episode: the client's name for the work, the connection holding it, and what the
/// repository's episode driver made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionEpisode {
    /// The client's own durable id for this work (a conversation or thread id); everything
    /// about the episode is addressed by it.
    pub external_id: String,
    /// The provider the episode is recorded under, such as `claude-code` or `generic`.
    pub provider: String,
    /// The peer whose connection holds it; absent while detached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerId>,
    /// When it was first opened, RFC 3339 in UTC; a resume does not change it.
    pub opened_at: StampText,
    /// Seconds since its client last spoke, through any connection.
    pub last_activity_seconds_ago: u64,
    /// How many times a connection has taken it up, the first attach included.
    pub attachments: u32,
    /// Whether a connection holds it or it is waiting for its client.
    pub state: ConnectionEpisodeState,
    /// What the repository's episode driver reported, verbatim; never empty, so a driver
    /// that did nothing is visible.
    pub repository: String,
}

/// The answer of `episodes.attach`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Attached {
    /// The episode this connection now holds.
    pub episode: ConnectionEpisode,
    /// Whether an existing episode with this id was resumed rather than a new one opened:
    /// true after a reconnect, restart or crash.
    pub resumed: bool,
    /// How long, in seconds, the episode outlives a lost connection before it is closed.
    pub reattach_grace_seconds: u64,
}

/// The answer of `episodes.list`: every episode this server holds or is keeping for a
/// returning client, and which one is the caller's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EpisodeList {
    /// How many episodes a connection holds.
    pub open: usize,
    /// How many episodes are waiting for their client.
    pub detached: usize,
    /// Every episode on this server, by external id.
    pub episodes: Vec<ConnectionEpisode>,
    /// The episode the calling connection holds, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mine: Option<ConnectionEpisode>,
}

impl From<domain::ConnectionEpisodeState> for ConnectionEpisodeState {
    fn from(state: domain::ConnectionEpisodeState) -> Self {
        match state {
            domain::ConnectionEpisodeState::Open => ConnectionEpisodeState::Open,
            domain::ConnectionEpisodeState::Detached => ConnectionEpisodeState::Detached,
        }
    }
}

impl From<domain::ConnectionEpisode> for ConnectionEpisode {
    fn from(episode: domain::ConnectionEpisode) -> Self {
        ConnectionEpisode {
            external_id: episode.external_id,
            provider: episode.provider,
            peer: episode.peer.map(PeerId::from),
            opened_at: episode.opened_at.into(),
            last_activity_seconds_ago: episode.last_activity_seconds_ago,
            attachments: episode.attachments,
            state: episode.state.into(),
            repository: episode.repository,
        }
    }
}

impl From<domain::Attached> for Attached {
    fn from(attached: domain::Attached) -> Self {
        Attached {
            episode: attached.episode.into(),
            resumed: attached.resumed,
            reattach_grace_seconds: attached.reattach_grace_seconds,
        }
    }
}

impl From<domain::EpisodeList> for EpisodeList {
    fn from(list: domain::EpisodeList) -> Self {
        EpisodeList {
            open: list.open,
            detached: list.detached,
            episodes: list
                .episodes
                .into_iter()
                .map(ConnectionEpisode::from)
                .collect(),
            mine: list.mine.map(ConnectionEpisode::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_domain::peers as board;

    #[test]
    fn a_detached_episode_is_written_without_a_peer_and_reads_back() {
        let episode = |peer: Option<board::PeerId>, state| domain::ConnectionEpisode {
            external_id: "conversation-1".into(),
            provider: "claude-code".into(),
            peer,
            opened_at: "2026-12-01T11:59:00Z".parse().unwrap(),
            last_activity_seconds_ago: 5,
            attachments: 2,
            state,
            repository: "recorded".into(),
        };
        let list = EpisodeList::from(domain::EpisodeList {
            open: 1,
            detached: 1,
            episodes: vec![
                episode(
                    Some(board::PeerId::nth(1)),
                    domain::ConnectionEpisodeState::Open,
                ),
                episode(None, domain::ConnectionEpisodeState::Detached),
            ],
            mine: None,
        });
        let v = serde_json::to_value(&list).unwrap();
        assert_eq!(v["episodes"][0]["peer"], "p1");
        assert_eq!(v["episodes"][1]["state"], "detached");
        assert!(
            v["episodes"][1].get("peer").is_none() && v.get("mine").is_none(),
            "{v}"
        );
        assert_eq!(serde_json::from_value::<EpisodeList>(v).unwrap(), list);
    }

    #[test]
    fn attached_schema_requires_its_three_fields() {
        let schema = serde_json::to_value(schemars::schema_for!(Attached)).unwrap();
        let mut required: Vec<_> = schema["required"].as_array().unwrap().iter().collect();
        required.sort_by_key(|v| v.as_str().unwrap().to_owned());
        assert_eq!(required, ["episode", "reattach_grace_seconds", "resumed"]);
        let episode = &schema["$defs"]["ConnectionEpisode"];
        assert!(
            !episode["required"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "peer")
        );
    }

    #[test]
    fn episode_inputs_carry_the_id_limits_in_their_schemas() {
        let attach = serde_json::to_value(schemars::schema_for!(AttachInput)).unwrap();
        let id = &attach["properties"]["external_id"];
        assert_eq!(id["minLength"], 1);
        assert_eq!(id["maxLength"], limits::EXTERNAL_ID_CHARS);
        let detach = serde_json::to_value(schemars::schema_for!(DetachInput)).unwrap();
        let id = &detach["properties"]["external_id"];
        assert_eq!(id["minLength"], 1, "{detach:#}");
        assert_eq!(id["maxLength"], limits::EXTERNAL_ID_CHARS);
    }

    #[test]
    fn inputs_refuse_unknown_fields() {
        let attach: AttachInput = serde_json::from_str(r#"{"external_id":"c"}"#).unwrap();
        assert_eq!(attach.external_id, "c");
        assert!(serde_json::from_str::<AttachInput>(r#"{"external_id":"c","peer":"p1"}"#).is_err());
        assert!(serde_json::from_str::<AttachInput>("{}").is_err());
        let detach: DetachInput = serde_json::from_str("{}").unwrap();
        assert!(detach.external_id.is_none());
        assert!(serde_json::from_str::<DetachInput>(r#"{"id":"c"}"#).is_err());
    }
}
