//! `majordomus episodes log`: which client did which work, when — read from the journal after
//! every server that wrote it may be gone. One line per episode: its client, start, end and
//! reason, worktree, branch and the claims announced during it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use majordomus_checkout::stamp_text::StampText;
use majordomus_domain::ids::Stamp;
use majordomus_domain::peers::Announcement;
use majordomus_domain::text::for_terminal;
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::event::{
    CloseReason, EventClient, EventKind, EventServer, INTERRUPTED_NOTE, JournalClaim,
};
use super::journal::{Record, journal_path, read_journal};

/// Where an episode of the log stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum LoggedState {
    /// A `closed` record ends it.
    Closed,
    /// Not closed, and the server that recorded it last still runs: it holds it open.
    Open,
    /// Not closed; that server still runs and keeps it for its client to come back.
    Detached,
    /// Not closed, and the server that recorded it last is gone: it ended without closing
    /// it. The next attach of the same id resumes it.
    Interrupted,
}

impl LoggedState {
    fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One episode as the journal tells it.
#[derive(Clone, Debug, Serialize)]
pub struct LoggedEpisode {
    pub external_id: String,
    /// The provider its client maps to.
    pub provider: String,
    /// The client that held it last.
    pub client: EventClient,
    /// When it was opened.
    pub started: StampText,
    /// When it was closed, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<StampText>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<CloseReason>,
    pub state: LoggedState,
    /// How often a server ended without closing it and a later attach resumed it.
    pub interruptions: u32,
    pub attachments: u32,
    /// Where it was last recorded.
    pub worktree: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Every distinct claim announced during it, in the order they were made.
    pub claims: Vec<JournalClaim>,
    /// The claims released from the board after its peer left and did not come back within
    /// the claim grace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub released: Vec<JournalClaim>,
    /// The journal's numbers of its records.
    pub records: Vec<u64>,
    /// When its last record was written.
    pub last_at: StampText,
    #[serde(skip)]
    last_server: EventServer,
    #[serde(skip)]
    last_event: Option<EventKind>,
}

/// Groups the journal's records into episodes, in the order they started: an episode runs from
/// its `opened` record to its `closed` one. Records of an id with no `opened` before them (the
/// journal was cut) start an episode of their own.
pub fn episodes_of(records: &[Record]) -> Vec<LoggedEpisode> {
    let mut episodes: Vec<LoggedEpisode> = Vec::new();
    let mut current: HashMap<&str, usize> = HashMap::new();
    for record in records {
        let event = &record.event;
        let id = event.external_id.as_str();
        let index = match (event.event, current.get(id)) {
            (EventKind::Opened, _) | (_, None) => {
                episodes.push(LoggedEpisode {
                    external_id: event.external_id.clone(),
                    provider: event.provider.clone(),
                    client: event.client.clone(),
                    started: event.opened_at,
                    ended: None,
                    reason: None,
                    state: LoggedState::Open,
                    interruptions: 0,
                    attachments: 0,
                    worktree: event.worktree.clone(),
                    branch: event.branch.clone(),
                    claims: Vec::new(),
                    released: Vec::new(),
                    records: Vec::new(),
                    last_at: event.at,
                    last_server: event.server,
                    last_event: None,
                });
                current.insert(id, episodes.len() - 1);
                episodes.len() - 1
            }
            (_, Some(&index)) => index,
        };
        let episode = &mut episodes[index];
        episode.records.push(record.seq);
        episode.last_at = event.at;
        episode.last_server = event.server;
        if event.event == EventKind::Released {
            // Claims leaving the board say nothing of where the episode stands.
            for claim in &event.claims {
                if !episode.released.contains(claim) {
                    episode.released.push(claim.clone());
                }
            }
            continue;
        }
        episode.last_event = Some(event.event);
        episode.attachments = episode.attachments.max(event.attachments);
        episode.worktree = event.worktree.clone();
        episode.branch = event.branch.clone();
        if !event.client.name.is_empty() {
            episode.client = event.client.clone();
            episode.provider = event.provider.clone();
        }
        if event.note.as_deref() == Some(INTERRUPTED_NOTE) {
            episode.interruptions += 1;
        }
        for claim in &event.claims {
            let known = episode.claims.iter().any(|c| {
                c.name == claim.name && c.intent == claim.intent && c.scope == claim.scope
            });
            if !known {
                episode.claims.push(claim.clone());
            }
        }
        if event.event == EventKind::Closed {
            episode.ended = Some(event.at);
            episode.reason = event.reason;
            episode.state = LoggedState::Closed;
            current.remove(id);
        }
    }
    for episode in &mut episodes {
        if episode.state != LoggedState::Closed {
            episode.state = if !episode.last_server.still_runs() {
                LoggedState::Interrupted
            } else if episode.last_event == Some(EventKind::Detached) {
                LoggedState::Detached
            } else {
                LoggedState::Open
            };
        }
    }
    episodes
}

/// Reads `--since`: an RFC 3339 time, or a span back from `now` such as `2h`, `90m`, `1h30m`,
/// `7d`, `45s` or `2w`.
pub fn parse_since(text: &str, now: SystemTime) -> Result<SystemTime, String> {
    let text = text.trim();
    if let Ok(moment) = OffsetDateTime::parse(text, &Rfc3339) {
        return Ok(SystemTime::from(moment));
    }
    let refuse = || {
        format!(
            "`--since {text}` is neither an RFC 3339 time (2026-05-01T10:00:00Z) nor a span \
             such as 2h, 90m, 1h30m, 7d or 2w"
        )
    };
    let mut total = 0u64;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return Err(refuse()),
        };
        let amount: u64 = digits.parse().map_err(|_| refuse())?;
        total = amount
            .checked_mul(unit)
            .and_then(|seconds| total.checked_add(seconds))
            .ok_or_else(refuse)?;
        digits.clear();
    }
    if !digits.is_empty() || text.is_empty() {
        return Err(refuse());
    }
    Ok(now
        .checked_sub(Duration::from_secs(total))
        .unwrap_or(SystemTime::UNIX_EPOCH))
}

/// The episodes active at or after `since`: those with a record since then, and those still
/// held or kept by a running server.
pub fn since(episodes: Vec<LoggedEpisode>, since: SystemTime) -> Vec<LoggedEpisode> {
    episodes
        .into_iter()
        .filter(|episode| {
            matches!(episode.state, LoggedState::Open | LoggedState::Detached)
                || SystemTime::from(Stamp::from(episode.last_at)) >= since
        })
        .collect()
}

/// One episode on one line.
pub fn render_line(episode: &LoggedEpisode) -> String {
    let client = if episode.client.name.is_empty() {
        "(unknown client)".to_string()
    } else if episode.client.version.is_empty() {
        for_terminal(&episode.client.name).into_owned()
    } else {
        for_terminal(&format!(
            "{} {}",
            episode.client.name, episode.client.version
        ))
        .into_owned()
    };
    let end = match (&episode.ended, episode.reason) {
        (Some(ended), Some(reason)) => format!("{ended}  closed: {}", reason.as_str()),
        (Some(ended), None) => format!("{ended}  closed"),
        (None, _) => format!("…  {}", episode.state.as_str()),
    };
    let mut notes = Vec::new();
    if episode.interruptions > 0 {
        notes.push(format!(
            "interrupted {} time{} and resumed",
            episode.interruptions,
            if episode.interruptions == 1 { "" } else { "s" }
        ));
    }
    if episode.attachments > 1 {
        notes.push(format!("{} attachments", episode.attachments));
    }
    let branch = episode
        .branch
        .as_deref()
        .map(|b| format!(" [{b}]"))
        .unwrap_or_default();
    let claims = if episode.claims.is_empty() {
        "no claims".to_string()
    } else {
        let listed: Vec<String> = episode.claims.iter().map(rendered).collect();
        format!("claims: {}", listed.join("; "))
    };
    let released = if episode.released.is_empty() {
        String::new()
    } else {
        let listed: Vec<String> = episode.released.iter().map(rendered).collect();
        format!("  released after its peer left: {}", listed.join("; "))
    };
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!("  ({})", notes.join(", "))
    };
    format!(
        "{}  {client} ({})  {} → {end}{notes}  {}{branch}  {claims}{released}",
        for_terminal(&episode.external_id),
        episode.provider,
        episode.started,
        episode.worktree,
    )
}

/// Runs `majordomus episodes log`.
pub fn run(dir: PathBuf, json: bool, since_text: Option<&str>) -> Result<(), String> {
    let site = crate::context::Site::open(&dir)?;
    let path = journal_path(&site.checkout);
    let cutoff = since_text
        .map(|text| parse_since(text, SystemTime::now()))
        .transpose()?;
    let contents = read_journal(&path)
        .map_err(|error| format!("the journal at {} cannot be read: {error}", path.display()))?;
    let Some(contents) = contents else {
        if json {
            crate::render::say!("[]");
        } else {
            crate::render::say!(
                "no episode has been recorded for this repository yet ({} does not exist)",
                path.display()
            );
            if let Some(command) = &site.config.episodes.command {
                crate::render::say!(
                    "this repository records its episodes with its own command (`{}`) instead",
                    command.join(" ")
                );
            }
        }
        return Ok(());
    };
    let mut episodes = episodes_of(&contents.records);
    if let Some(cutoff) = cutoff {
        episodes = since(episodes, cutoff);
    }
    if json {
        crate::render::say!(
            "{}",
            serde_json::to_string_pretty(&episodes).expect("episodes serialise")
        );
        return Ok(());
    }
    if episodes.is_empty() {
        crate::render::say!(
            "no episode in {}{}",
            path.display(),
            match since_text {
                Some(text) => format!(" since {text}"),
                None => String::new(),
            }
        );
    }
    for episode in &episodes {
        crate::render::say!("{}", render_line(episode));
    }
    if contents.unreadable > 0 {
        eprintln!(
            "majordomus: {} line{} of {} could not be read and {} left out",
            contents.unreadable,
            if contents.unreadable == 1 { "" } else { "s" },
            path.display(),
            if contents.unreadable == 1 {
                "was"
            } else {
                "were"
            }
        );
    }
    Ok(())
}

/// A claim of the journal as a terminal shows any claim.
fn rendered(claim: &JournalClaim) -> String {
    crate::render::claim(&Announcement::from(claim.clone()))
}

#[cfg(test)]
mod tests {
    use super::super::journal::{RECORD_SCHEMA, tests_support};
    use super::*;
    use strum::VariantArray;

    #[test]
    fn states_are_written_in_the_words_as_str_gives() {
        for &state in LoggedState::VARIANTS {
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
        }
    }

    fn record(seq: u64, kind: EventKind, id: &str, at: &str) -> Record {
        let mut event = tests_support::event(kind, id);
        event.at = at.parse().unwrap();
        event.checkout_id = "c".into();
        event.worktree = "/repo/wt".into();
        event.branch = Some("feature".into());
        event.opened_at = "2026-05-01T10:00:00Z".parse().unwrap();
        Record {
            schema: RECORD_SCHEMA.into(),
            seq,
            event,
        }
    }

    fn moment(text: &str) -> Option<SystemTime> {
        text.parse::<Stamp>().ok().map(SystemTime::from)
    }

    fn claim(intent: &str, path: &str) -> JournalClaim {
        JournalClaim {
            name: None,
            intent: intent.into(),
            scope: vec![path.into()],
            at: "2026-05-01T10:01:00Z".parse().unwrap(),
            resolved: vec![],
        }
    }

    #[test]
    fn released_claims_are_shown_apart_and_leave_the_state_alone() {
        let mut announced = record(2, EventKind::Announced, "a", "2026-05-01T10:01:00Z");
        announced.event.claims = vec![claim("fix the parser", "src/parser")];
        let detached = record(3, EventKind::Detached, "a", "2026-05-01T10:02:00Z");
        let mut released = record(4, EventKind::Released, "a", "2026-05-01T10:17:00Z");
        released.event.claims = vec![claim("fix the parser", "src/parser")];
        let records = vec![
            record(1, EventKind::Opened, "a", "2026-05-01T10:00:00Z"),
            announced,
            detached,
            released.clone(),
            released,
        ];
        let episodes = episodes_of(&records);
        assert_eq!(episodes.len(), 1);
        let episode = &episodes[0];
        assert_eq!(episode.records, [1, 2, 3, 4, 4]);
        assert_eq!(episode.claims.len(), 1, "a release is not a new claim");
        assert_eq!(episode.released.len(), 1, "a repeated release counts once");
        assert_eq!(
            episode.state,
            LoggedState::Detached,
            "still kept for its client by the server that runs"
        );
        let line = render_line(episode);
        assert!(
            line.ends_with(
                "claims: fix the parser (src/parser)  released after its peer left: fix the \
                 parser (src/parser)"
            ),
            "{line}"
        );
        let json = serde_json::to_value(episode).unwrap();
        assert_eq!(json["released"][0]["scope"][0], "src/parser");
    }

    #[test]
    fn records_group_into_episodes_from_opening_to_closing() {
        let mut announced = record(2, EventKind::Announced, "a", "2026-05-01T10:01:00Z");
        announced.event.claims = vec![claim("fix the parser", "src/parser")];
        let mut detached = record(3, EventKind::Detached, "a", "2026-05-01T10:02:00Z");
        detached.event.claims = vec![claim("fix the parser", "src/parser")];
        let mut resumed = record(5, EventKind::Resumed, "a", "2026-05-01T11:00:00Z");
        resumed.event.note = Some(INTERRUPTED_NOTE.into());
        resumed.event.attachments = 2;
        resumed.event.client.name = "codex".into();
        resumed.event.provider = "codex".into();
        let mut closed = record(6, EventKind::Closed, "a", "2026-05-01T12:00:00Z");
        closed.event.client.name = "codex".into();
        closed.event.provider = "codex".into();
        let records = vec![
            record(1, EventKind::Opened, "a", "2026-05-01T10:00:00Z"),
            announced,
            detached,
            record(4, EventKind::Opened, "b", "2026-05-01T10:30:00Z"),
            resumed,
            closed,
            // the same id again, later: a new episode
            record(7, EventKind::Opened, "a", "2026-05-02T09:00:00Z"),
        ];
        let episodes = episodes_of(&records);
        assert_eq!(episodes.len(), 3);
        let first = &episodes[0];
        assert_eq!(first.records, [1, 2, 3, 5, 6]);
        assert_eq!(first.state, LoggedState::Closed);
        assert_eq!(
            first.ended.map(|ended| ended.to_string()).as_deref(),
            Some("2026-05-01T12:00:00Z")
        );
        assert_eq!(first.reason, Some(CloseReason::Detach));
        assert_eq!(first.interruptions, 1);
        assert_eq!(first.attachments, 2);
        assert_eq!(first.client.name, "codex");
        assert_eq!(
            first.claims.len(),
            1,
            "a claim repeated in later records counts once"
        );
        // the server that recorded them is this test: still running, so open
        assert_eq!(episodes[1].state, LoggedState::Open);
        assert_eq!(episodes[2].records, [7]);

        let line = render_line(first);
        assert!(line.starts_with("a  codex 2.1.0 (codex)  2026-05-01T10:00:00Z → 2026-05-01T12:00:00Z  closed: detach"), "{line}");
        assert!(line.contains("interrupted 1 time and resumed"), "{line}");
        assert!(line.contains("/repo/wt [feature]"), "{line}");
        assert!(
            line.contains("claims: fix the parser (src/parser)"),
            "{line}"
        );
        let open = render_line(&episodes[1]);
        assert!(open.contains("→ …  open"), "{open}");
        assert!(open.ends_with("no claims"), "{open}");
    }

    #[test]
    fn an_episode_whose_server_is_gone_is_interrupted() {
        let mut opened = record(1, EventKind::Opened, "a", "2026-05-01T10:00:00Z");
        opened.event.server = EventServer {
            pid: u32::MAX - 1,
            started: Some(1),
        };
        let episodes = episodes_of(&[opened]);
        assert_eq!(episodes[0].state, LoggedState::Interrupted);
        // records of an id whose opening is not in the journal still make an episode
        let orphan = record(9, EventKind::Closed, "z", "2026-05-01T10:00:00Z");
        let episodes = episodes_of(&[orphan]);
        assert_eq!(episodes[0].state, LoggedState::Closed);
        assert_eq!(episodes[0].records, [9]);
    }

    #[test]
    fn since_takes_a_time_or_a_span() {
        let now = moment("2026-05-02T12:00:00Z").unwrap();
        assert_eq!(
            parse_since("2h", now).unwrap(),
            moment("2026-05-02T10:00:00Z").unwrap()
        );
        assert_eq!(
            parse_since("1h30m", now).unwrap(),
            moment("2026-05-02T10:30:00Z").unwrap()
        );
        assert_eq!(
            parse_since("1d", now).unwrap(),
            moment("2026-05-01T12:00:00Z").unwrap()
        );
        assert_eq!(
            parse_since("45s", now).unwrap(),
            moment("2026-05-02T11:59:15Z").unwrap()
        );
        assert_eq!(
            parse_since("1w", now).unwrap(),
            moment("2026-04-25T12:00:00Z").unwrap()
        );
        assert_eq!(
            parse_since("2026-05-01T10:00:00Z", now).unwrap(),
            moment("2026-05-01T10:00:00Z").unwrap()
        );
        for bad in ["", "2", "h", "2x", "yesterday", "-2h"] {
            assert!(
                parse_since(bad, now).unwrap_err().contains("RFC 3339"),
                "{bad}"
            );
        }

        let mut gone = record(1, EventKind::Opened, "old", "2026-05-01T10:00:00Z");
        gone.event.server = EventServer {
            pid: u32::MAX - 1,
            started: Some(1),
        };
        let records = vec![
            gone,
            record(2, EventKind::Opened, "old-open", "2026-05-01T10:00:00Z"),
            record(3, EventKind::Opened, "new", "2026-05-02T11:00:00Z"),
            record(4, EventKind::Closed, "new", "2026-05-02T11:30:00Z"),
        ];
        let kept: Vec<String> = since(episodes_of(&records), parse_since("2h", now).unwrap())
            .into_iter()
            .map(|e| e.external_id)
            .collect();
        assert_eq!(kept, ["old-open", "new"]);
    }
}
