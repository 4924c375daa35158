//! What the hooks tell an agent, read off one repository-wide listing: the other sessions'
//! claims on the files a session is about to change, a summary of who works where, and the
//! overlaps that involve the session.
//!
//! Every line is a fact, not an instruction, and everything another session or another
//! server wrote (client names, worktrees, branches, intents, paths) is quoted and escaped
//! with [`quoted`], so it reads as someone else's words and never as part of the line.

use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use majordomus_domain::checkouts::Checkouts;
use majordomus_domain::index::PathIndex;
use majordomus_domain::listing::{ClaimMeeting, claim_paths, claims_meeting_peer};
use majordomus_domain::paths::{ClaimPath, normalize_relative, without_repeats};
use majordomus_domain::peers::{Peer, PeerCheckout, PeerId};
use majordomus_domain::text::{for_terminal, quoted};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::peers::{self, Detail, PeerList};
use crate::wire;
use majordomus_core::api::CapabilityError;
use majordomus_core::clients::NewsMoment;
use majordomus_core::context::Context;
use majordomus_core::context::RepositoryReading;
use majordomus_core::port::EDITS_CLAIM;
use majordomus_domain::changes::WorktreeChanges;

/// How many other claims a guard lists; the rest are counted.
pub const FINDINGS_LISTED: usize = 8;

/// How many paths of each side a finding lists; the rest are counted.
pub const PATHS_LISTED: usize = 8;

/// How many peers a session-start summary names; the rest are counted.
pub const SUMMARY_PEERS: usize = 8;

/// Bytes of all the lines one answer carries, at most: Claude Code moves context over 10,000
/// characters to a file, and a reminder is read only when it is short.
pub const LINES_BYTES: usize = 4_000;

/// Bytes one quoted text (an intent, a path, a worktree) takes in a line, at most.
const QUOTED_BYTES: usize = 200;

/// How many paths a line shows of a list before it says how many more there are.
const PATHS_SHOWN: usize = 3;

/// Another session's claim that meets files of this session.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The other peer, on its checkout's board.
    pub peer: wire::PeerId,
    /// The other peer's client, as it named itself.
    pub client: String,
    /// The checkout the other peer works in.
    pub checkout: Option<wire::PeerCheckout>,
    /// Whether the other peer is still attached; a departed peer's claim still stands.
    pub attached: bool,
    /// The claim's name, when it has one; `edits` is the files a session edited.
    pub claim: Option<String>,
    /// What the other peer said the claim is for.
    pub intent: String,
    /// This session's files that lie in the claim, as sent; at most 8.
    pub yours: Vec<String>,
    /// How many more of this session's files lie in it.
    pub more_yours: usize,
    /// The claim's paths that meet them, as the other peer wrote them; at most 8.
    pub theirs: Vec<String>,
    /// How many more of the claim's paths meet them.
    pub more_theirs: usize,
}

/// Which peer is the session asking, on this checkout's board.
struct Me<'a> {
    peer: &'a PeerId,
}

impl Me<'_> {
    fn is(&self, peer: &PeerId, checkout: Option<&PeerCheckout>) -> bool {
        peer == self.peer && checkout.is_some_and(|c| c.this_checkout)
    }
}

/// The peers every answer is read from: the whole repository's, and the other machines'
/// too when this repository is federated, so an edit is guarded against them as well. Only
/// the peers and their boards are gathered: each answer compares the asking session's own
/// paths or claims with the others' ([`findings`], [`overlap_facts`]), never every pair of
/// peers, and reads no worktree's changes.
async fn listing(ctx: &Context) -> Result<PeerList, CapabilityError> {
    peers::listing(ctx, reach(ctx), Detail::PeersOnly).await
}

/// The listing a session's news are told from at `moment`: the whole of it for the summary at
/// session start; at a prompt, whose news are the overlaps that involve the session, only the
/// session and the peers whose claims meet its own on this board (its other peers would be
/// copied only to be passed over).
pub async fn news_listing(
    ctx: &Context,
    peer: &PeerId,
    moment: NewsMoment,
) -> Result<PeerList, CapabilityError> {
    let port = match (moment, ctx.port()) {
        (NewsMoment::Prompt, Some(port)) => port,
        _ => return listing(ctx).await,
    };
    let mine: Vec<ClaimPath> = port
        .board_peer_paths(peer)
        .iter()
        .flat_map(|paths| paths.iter().cloned())
        .collect();
    peers::listing(ctx, reach(ctx), Detail::PeersMeeting(&mine)).await
}

/// Where the hooks look: the repository, and every machine when it is federated.
fn reach(ctx: &Context) -> Checkouts {
    if ctx.site.config.federation.url.is_some() {
        Checkouts::Everywhere
    } else {
        Checkouts::Repository
    }
}

/// The guard's answer for `paths` (normalised against this checkout) asked by `peer`.
pub async fn guard(
    ctx: &Context,
    peer: &PeerId,
    paths: &[ClaimPath],
) -> Result<Guarded, CapabilityError> {
    // This board's other peers meet none of the paths, and are not copied to be passed over.
    let (list, reading) = tokio::join!(
        peers::listing(ctx, reach(ctx), Detail::PeersMeeting(paths)),
        peers::repository_reading(ctx)
    );
    let list = list?;
    let (findings, more_findings) = findings(&list, &Me { peer }, paths);
    let lines = bounded(findings.iter().map(finding_line).collect());
    let bumps = match reading {
        Some(reading) => bounded(speed_bumps(
            &reading,
            &list,
            &ctx.site.checkout.root.to_string_lossy(),
            paths,
        )),
        None => Vec::new(),
    };
    Ok(Guarded {
        peer: peer.clone().into(),
        findings,
        more_findings,
        lines,
        bumps,
        bump_passed: false,
        complete: list.complete,
        unread: unread(&list),
    })
}

/// The facts about `paths` that are a speed bump: another worktree's uncommitted change to
/// one of them, and a predicted merge conflict between this worktree and another on one of
/// them, read from the repository's latest reading (no git is run for them).
fn speed_bumps(
    reading: &RepositoryReading,
    list: &PeerList,
    here: &str,
    paths: &[ClaimPath],
) -> Vec<String> {
    let mut index = PathIndex::new();
    for (at, path) in paths.iter().enumerate() {
        index.insert(path.components(), at);
    }
    let meets = |path: &str| -> bool {
        let Ok(path) = normalize_relative(path) else {
            return false;
        };
        let mut met = false;
        index.for_each_meeting(path.components(), |_| met = true);
        met
    };
    let branch_of = |worktree: &str| {
        list.boards
            .iter()
            .find(|board| board.worktree == worktree)
            .and_then(|board| board.branch.clone())
    };
    let mut lines = Vec::new();
    let mut worktrees: Vec<(&String, &WorktreeChanges)> = reading
        .changes
        .iter()
        .filter(|(worktree, _)| worktree.as_str() != here)
        .collect();
    worktrees.sort_by_key(|(worktree, _)| *worktree);
    for (worktree, changes) in worktrees {
        let changed: Vec<&str> = changes
            .paths
            .iter()
            .filter(|changed| changed.is_uncommitted())
            .map(|changed| changed.path.as_str())
            .filter(|path| meets(path))
            .collect();
        if changed.is_empty() {
            continue;
        }
        lines.push(format!(
            "worktree {}{} has uncommitted changes to {}",
            quoted(worktree, QUOTED_BYTES),
            match branch_of(worktree) {
                Some(branch) => format!(" (branch {})", quoted(&branch, QUOTED_BYTES)),
                None => String::new(),
            },
            path_list(&changed, 0)
        ));
    }
    for (at, conflict) in reading.conflicts.conflicts.iter().enumerate() {
        let (other, other_is_theirs) = if conflict.ours.worktree == here {
            (&conflict.theirs, true)
        } else if conflict.theirs.worktree == here {
            (&conflict.ours, false)
        } else {
            continue;
        };
        let conflicting: Vec<&str> = conflict
            .paths
            .iter()
            .map(String::as_str)
            .filter(|path| meets(path))
            .collect();
        if conflicting.is_empty() {
            continue;
        }
        let mut line = format!(
            "merging this worktree with worktree {}{} is predicted to conflict on {}",
            quoted(&other.worktree, QUOTED_BYTES),
            match &other.branch {
                Some(branch) => format!(" (branch {})", quoted(branch, QUOTED_BYTES)),
                None => String::new(),
            },
            path_list(&conflicting, 0)
        );
        let hunks = reading
            .conflict_hunks
            .get(at)
            .map_or(&[][..], Vec::as_slice);
        for hunk in hunks
            .iter()
            .filter(|hunk| conflicting.contains(&hunk.path.as_str()))
        {
            let theirs = if other_is_theirs {
                &hunk.theirs
            } else {
                &hunk.ours
            };
            line.push_str(&format!(
                "; their side of {}'s first conflicting hunk:\n{}",
                quoted(&hunk.path, QUOTED_BYTES),
                fenced(theirs)
            ));
        }
        lines.push(line);
    }
    lines
}

/// Another worktree's lines, fenced so that nothing in them reads as part of the answer: the
/// fence is longer than any run of backticks they hold, and control characters other than
/// line ends are escaped.
fn fenced(lines: &str) -> String {
    let longest_run = lines.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest_run + 1).max(3));
    let body: String = lines
        .lines()
        .map(for_terminal)
        .collect::<Vec<_>>()
        .join("\n");
    format!("{fence}\n{body}\n{fence}")
}

/// What `peer`, speaking for `session_id`, is told at `moment` of the board `list`: a summary at session start
/// (whose overlaps count as told), and at a prompt only the overlaps it was not told yet.
pub async fn news(
    ctx: &Context,
    list: PeerList,
    peer: &PeerId,
    session_id: &str,
    moment: NewsMoment,
) -> Result<Vec<String>, CapabilityError> {
    let server = ctx
        .server()
        .ok_or_else(|| CapabilityError::internal("news needs the serving process"))?;
    let me = Me { peer };
    let overlaps = overlap_facts(&list, &me);
    Ok(match moment {
        NewsMoment::SessionStart => {
            let keys: Vec<u64> = overlaps.iter().map(|fact| fact.key).collect();
            server.mark_told(session_id, &keys);
            bounded(summary(&list, &me, &overlaps))
        }
        NewsMoment::Prompt => {
            let grants = crate::leases::grants_to(ctx, peer).await;
            let keys: Vec<u64> = overlaps
                .iter()
                .map(|fact| fact.key)
                .chain(grants.iter().map(|fact| fact.key))
                .collect();
            let mut new = server.untold(session_id, &keys).into_iter();
            let mut lines = Vec::new();
            for fact in &overlaps {
                if new.next() == Some(true) {
                    lines.push(fact.line());
                }
            }
            for fact in grants {
                if new.next() == Some(true) {
                    lines.push(fact.line);
                }
            }
            bounded(lines)
        }
    })
}

/// What a session hears at its start when its own checkout has no server to ask yet (Claude
/// Code runs its session-start hook before it starts its MCP servers): the summary a server
/// would give, read from the siblings' boards through their leases. This checkout's board
/// is left out: a server starting meanwhile lists the reader's own connection there.
pub async fn summary_without_a_server(ctx: &Context) -> Result<Vec<String>, CapabilityError> {
    let mut list = listing(ctx).await?;
    list.peers.retain(|listed| {
        !listed
            .peer
            .checkout
            .as_ref()
            .is_some_and(|checkout| checkout.this_checkout)
    });
    let nobody = PeerId(String::new());
    Ok(bounded(summary(&list, &Me { peer: &nobody }, &[])))
}

/// Every other claim in `list` that meets one of `paths`, live peers first and this
/// checkout's before the others', at most [`FINDINGS_LISTED`]; and how many more there are.
///
/// `paths` go into a trie once; each path of each other claim then walks it, so the work is
/// the claims' paths times their depth plus the pairs that meet — never every path of one
/// side against every path of the other.
fn findings(list: &PeerList, me: &Me, paths: &[ClaimPath]) -> (Vec<Finding>, usize) {
    let paths = without_repeats(paths.to_vec());
    let mut index = PathIndex::new();
    for (at, path) in paths.iter().enumerate() {
        index.insert(path.components(), at);
    }
    let mut found = Vec::new();
    for peer in list.peers.iter().map(|listed| &listed.peer) {
        if me.is(&peer.id, peer.checkout.as_ref()) {
            continue;
        }
        for claim in &peer.claims {
            let mut yours = BTreeSet::new();
            let mut theirs = Vec::new();
            for path in claim_paths(peer, claim).iter() {
                let mut met = false;
                index.for_each_meeting(path.components(), |&at| {
                    met = true;
                    yours.insert(at);
                });
                if met {
                    theirs.push(path.as_written().to_owned());
                }
            }
            if yours.is_empty() {
                continue;
            }
            let (yours, more_yours) = listed(
                yours
                    .into_iter()
                    .map(|at| paths[at].as_written().to_owned()),
            );
            let (theirs, more_theirs) = listed(theirs.into_iter());
            found.push(Finding {
                peer: peer.id.clone().into(),
                client: peer.client.name.clone(),
                checkout: peer.checkout.clone().map(Into::into),
                attached: peer.attached,
                claim: claim.name.clone(),
                intent: claim.intent.clone(),
                yours,
                more_yours,
                theirs,
                more_theirs,
            });
        }
    }
    found.sort_by_key(|finding| {
        (
            !finding.attached,
            !finding.checkout.as_ref().is_some_and(|c| c.this_checkout),
        )
    });
    let more = found.len().saturating_sub(FINDINGS_LISTED);
    found.truncate(FINDINGS_LISTED);
    (found, more)
}

/// The first [`PATHS_LISTED`] items and how many more there were.
fn listed(items: impl Iterator<Item = String>) -> (Vec<String>, usize) {
    let mut shown = Vec::new();
    let mut more = 0;
    for item in items {
        if shown.len() < PATHS_LISTED {
            shown.push(item);
        } else {
            more += 1;
        }
    }
    (shown, more)
}

/// An overlap of another peer's claim with a claim of `me`, as a fact about the other side:
/// its key says whether the session was told it, and its line is written only when it is
/// told (a prompt's news drop every overlap told before).
struct OverlapFact<'a> {
    key: u64,
    other: &'a Peer,
    intent: &'a str,
    meeting: ClaimMeeting,
}

impl OverlapFact<'_> {
    /// The other side's paths and this session's in the meeting, each once, in order.
    fn sides(meeting: &ClaimMeeting) -> (Vec<&str>, Vec<&str>) {
        (
            distinct(meeting.paths.iter().map(|p| p.theirs.as_str()).collect()),
            distinct(meeting.paths.iter().map(|p| p.yours.as_str()).collect()),
        )
    }

    fn line(&self) -> String {
        let (their_paths, my_paths) = Self::sides(&self.meeting);
        format!(
            "{} claims {} for {}, which meets your {}",
            describe_peer(self.other),
            path_list(&their_paths, 0),
            quoted(self.intent, QUOTED_BYTES),
            path_list(&my_paths, 0),
        )
    }
}

/// Every claim of another peer that meets a claim of `me`: one fact per pair of claims, in
/// the order a listing of every pair of claims would give them.
fn overlap_facts<'a>(list: &'a PeerList, me: &Me) -> Vec<OverlapFact<'a>> {
    let mut facts = Vec::new();
    let mine = list
        .peers
        .iter()
        .enumerate()
        .filter(|(_, listed)| me.is(&listed.peer.id, listed.peer.checkout.as_ref()));
    for (at, _) in mine {
        for meeting in claims_meeting_peer(&list.peers, at) {
            let other = &list.peers[meeting.theirs.0].peer;
            let intent = other.claims[meeting.theirs.1].intent.as_str();
            let checkout_id = other.checkout.as_ref().map(|c| c.id.as_str());
            let mut hasher = DefaultHasher::new();
            (checkout_id, &other.id, intent, OverlapFact::sides(&meeting)).hash(&mut hasher);
            facts.push(OverlapFact {
                key: hasher.finish(),
                other,
                intent,
                meeting,
            });
        }
    }
    facts
}

/// The items in their first order, each once.
fn distinct(items: Vec<&str>) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(*item))
        .collect()
}

/// The session-start summary: every other live peer with its latest claim (at most
/// [`SUMMARY_PEERS`]), the finished sessions that still hold claims counted in one line,
/// the overlaps that involve `me`, and the boards that were not read. `me` is never among
/// the others. Empty when nobody else is on the repository's boards and every board was
/// read.
fn summary(list: &PeerList, me: &Me, overlaps: &[OverlapFact]) -> Vec<String> {
    let others: Vec<&Peer> = list
        .peers
        .iter()
        .map(|listed| &listed.peer)
        .filter(|peer| !me.is(&peer.id, peer.checkout.as_ref()))
        .collect();
    let unread = unread(list);
    if others.is_empty() && unread.is_empty() {
        return Vec::new();
    }
    let live: Vec<&Peer> = others
        .iter()
        .copied()
        .filter(|peer| peer.attached)
        .collect();
    let finished = others.len() - live.len();
    let mut lines = vec![format!(
        "{} other session{} attached on this repository's boards",
        live.len(),
        if live.len() == 1 { " is" } else { "s are" },
    )];
    let others = live;
    for peer in others.iter().take(SUMMARY_PEERS) {
        let who = describe_peer(peer);
        lines.push(match &peer.announcement {
            Some(latest) if latest.name.as_deref() == Some(EDITS_CLAIM) => {
                let files: Vec<&str> = latest.scope.iter().map(String::as_str).collect();
                format!("{who}: edited {}", path_list(&files, 0))
            }
            Some(latest) => {
                let others = peer.claims.len().saturating_sub(1);
                format!(
                    "{who}: {} on {}{}",
                    quoted(&latest.intent, QUOTED_BYTES),
                    path_list(
                        &latest.scope.iter().map(String::as_str).collect::<Vec<_>>(),
                        0
                    ),
                    match others {
                        0 => String::new(),
                        1 => " (and 1 other claim)".to_string(),
                        n => format!(" (and {n} other claims)"),
                    }
                )
            }
            None => format!("{who}: no claim"),
        });
    }
    if others.len() > SUMMARY_PEERS {
        lines.push(format!(
            "{} more sessions are attached; `majordomus_peers` lists them all",
            others.len() - SUMMARY_PEERS
        ));
    }
    if finished > 0 {
        lines.push(format!(
            "{finished} finished session{} still listed with {} announced claims for a while; \
             `majordomus_peers` lists them",
            if finished == 1 { " is" } else { "s are" },
            if finished == 1 { "its" } else { "their" },
        ));
    }
    lines.extend(overlaps.iter().map(OverlapFact::line));
    lines.extend(unread);
    lines
}

/// A line for each board the listing could not read.
fn unread(list: &PeerList) -> Vec<String> {
    list.boards
        .iter()
        .filter_map(|board| {
            board.reason.as_ref().map(|reason| {
                format!(
                    "the board of worktree {} could not be read: {}",
                    quoted(&board.worktree, QUOTED_BYTES),
                    for_terminal(reason)
                )
            })
        })
        .collect()
}

/// A finding as a line: this session's files, the other session, its claim.
pub fn finding_line(finding: &Finding) -> String {
    let yours: Vec<&str> = finding.yours.iter().map(String::as_str).collect();
    let theirs: Vec<&str> = finding.theirs.iter().map(String::as_str).collect();
    let who = describe_holder(finding);
    let many = yours.len() + finding.more_yours > 1;
    let yours = path_list(&yours, finding.more_yours);
    let theirs = path_list(&theirs, finding.more_theirs);
    if finding.claim.as_deref() == Some(EDITS_CLAIM) {
        let verb = if many { "are" } else { "is" };
        if finding.yours == finding.theirs && finding.more_yours == finding.more_theirs {
            format!("{yours} {verb} among the files {who} edited")
        } else {
            format!("{yours} {verb} among the files {who} edited ({theirs})")
        }
    } else {
        format!(
            "{yours} {} in the claim of {who} on {theirs}, for {}",
            if many { "lie" } else { "lies" },
            quoted(&finding.intent, QUOTED_BYTES)
        )
    }
}

/// Another session working in this checkout, with its claim: what a command that discards
/// the checkout's uncommitted work would take from it.
pub fn working_here_line(finding: &Finding) -> String {
    let theirs: Vec<&str> = finding.theirs.iter().map(String::as_str).collect();
    let who = describe_holder(finding);
    if finding.claim.as_deref() == Some(EDITS_CLAIM) {
        format!("{who} edited {}", path_list(&theirs, finding.more_theirs))
    } else {
        format!(
            "{who} claims {} for {}",
            path_list(&theirs, finding.more_theirs),
            quoted(&finding.intent, QUOTED_BYTES)
        )
    }
}

/// The peer a listing shows, described as every fact describes a peer.
fn describe_peer(peer: &Peer) -> String {
    let place = peer.checkout.as_ref();
    describe(
        peer.id.as_str(),
        &peer.client.name,
        place.map(|c| (c.worktree.as_str(), c.branch.as_deref())),
        peer.attached,
    )
}

/// The other session whose claim a finding meets, described as every fact describes a peer.
fn describe_holder(finding: &Finding) -> String {
    let place = finding.checkout.as_ref();
    describe(
        &finding.peer.0,
        &finding.client,
        place.map(|c| (c.worktree.as_str(), c.branch.as_deref())),
        finding.attached,
    )
}

/// `p2 ("codex" in worktree "/w/beta", branch "beta")`, with `, departed` for a peer whose
/// connection is gone; `place` is the worktree and its branch.
fn describe(
    peer: &str,
    client: &str,
    place: Option<(&str, Option<&str>)>,
    attached: bool,
) -> String {
    let mut text = format!("{peer} ({}", quoted(client, QUOTED_BYTES));
    if let Some((worktree, branch)) = place {
        text.push_str(" in worktree ");
        text.push_str(&quoted(worktree, QUOTED_BYTES));
        if let Some(branch) = branch {
            text.push_str(", branch ");
            text.push_str(&quoted(branch, QUOTED_BYTES));
        }
    }
    if !attached {
        text.push_str(", departed");
    }
    text.push(')');
    text
}

/// Paths quoted, the first few of them, and how many more there are.
fn path_list(paths: &[&str], more: usize) -> String {
    let mut shown: Vec<String> = paths
        .iter()
        .take(PATHS_SHOWN)
        .map(|path| quoted(path, QUOTED_BYTES))
        .collect();
    let hidden = paths.len().saturating_sub(PATHS_SHOWN) + more;
    if hidden > 0 {
        shown.push(format!("and {hidden} more"));
    }
    shown.join(", ")
}

/// The lines that fit in [`LINES_BYTES`], in order; when some do not, a last line says how
/// many were left out.
pub fn bounded(lines: Vec<String>) -> Vec<String> {
    let mut kept = Vec::new();
    let mut used = 0;
    let total = lines.len();
    for line in lines {
        if used + line.len() > LINES_BYTES {
            break;
        }
        used += line.len();
        kept.push(line);
    }
    if kept.len() < total {
        kept.push(format!(
            "{} more line(s) left out; `majordomus_peers` shows the whole board",
            total - kept.len()
        ));
    }
    kept
}

/// What the guard found: other sessions' claims on the files.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Guarded {
    /// The peer that speaks for the session on this checkout's board.
    pub peer: wire::PeerId,
    /// Each other claim that meets one of the files, live sessions first; at most 8.
    pub findings: Vec<Finding>,
    /// How many more claims meet the files than `findings` lists.
    pub more_findings: usize,
    /// The findings as lines for an agent: facts, with what other sessions wrote quoted and
    /// escaped. Empty when nothing was found.
    pub lines: Vec<String>,
    /// Speed bumps, as lines: another worktree's uncommitted change to one of the files, a
    /// merge conflict on one of them predicted between this worktree and another (with the
    /// other side's conflicting lines quoted and fenced when known). Read from the latest
    /// reading of the repository, never from git in the guard's own time.
    #[serde(default)]
    pub bumps: Vec<String>,
    /// Whether the same session was stopped by these speed bumps for the same files within
    /// the last five minutes: a repeated edit passes.
    #[serde(default)]
    pub bump_passed: bool,
    /// Whether every board of the repository was read.
    pub complete: bool,
    /// A line for each board that could not be read, saying why.
    pub unread: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::{BoardView, ListedPeer};
    use crate::wire::ServerStanding;
    use majordomus_domain::paths::normalize;
    use majordomus_domain::peers::{Announcement, ClientInfo, Transport};

    const ROOT: &str = "/w/repo";

    fn checkout(worktree: &str, this_checkout: bool) -> PeerCheckout {
        PeerCheckout {
            id: majordomus_domain::ids::identity_digest(worktree),
            worktree: worktree.into(),
            branch: Some("main".into()),
            this_checkout,
            machine: None,
        }
    }

    fn peer(n: u64, client: &str, worktree: &str, claims: &[(&str, &[&str])]) -> Peer {
        let claims: Vec<Announcement> = claims
            .iter()
            .map(|(intent, scope)| Announcement {
                name: None,
                intent: (*intent).into(),
                scope: scope.iter().map(|s| (*s).to_string()).collect(),
                at: "2026-11-30T02:26:47Z".parse().unwrap(),
                resolved: Vec::new(),
                compared: Default::default(),
            })
            .collect();
        Peer {
            id: PeerId::nth(n),
            client: ClientInfo {
                name: client.into(),
                version: "1".into(),
                title: None,
            },
            transport: Transport::Http,
            connected_at: "2026-11-30T02:26:47Z".parse().unwrap(),
            last_seen_seconds_ago: 0,
            attached: true,
            left_seconds_ago: None,
            announcement: claims.last().cloned(),
            claims,
            checkout: Some(checkout(worktree, worktree == ROOT)),
            waiting: None,
        }
    }

    fn list(peers: Vec<Peer>) -> PeerList {
        PeerList {
            count: peers.len(),
            caller: None,
            silent: 0,
            overlaps: Vec::new(),
            more_overlaps: 0,
            peers: peers
                .into_iter()
                .map(|peer| ListedPeer {
                    qualified_id: peer.id.to_string(),
                    bridged: false,
                    peer,
                })
                .collect(),
            boards: vec![BoardView {
                id: "x".into(),
                worktree: ROOT.into(),
                branch: None,
                this_checkout: true,
                standing: ServerStanding::Ready,
                url: None,
                attached: 0,
                reason: None,
                changes: None,
                machine: None,
                age_seconds: None,
                age_ms: None,
            }],
            change_overlaps: Vec::new(),
            more_change_overlaps: 0,
            conflicts: None,
            complete: true,
            federation: None,
            leases: Vec::new(),
            messages_queued: 0,
        }
    }

    fn paths(raw: &[&str]) -> Vec<ClaimPath> {
        raw.iter().map(|p| normalize(p, ROOT).unwrap()).collect()
    }

    #[test]
    fn a_file_in_another_sessions_claim_is_found_with_its_words_quoted() {
        let listing = list(vec![
            peer(1, "claude-code", ROOT, &[]),
            peer(
                1,
                "codex",
                "/w/beta",
                &[("port the \"parser\"\n", &["src/parser", "docs"])],
            ),
        ]);
        let me = Me {
            peer: &PeerId::nth(1),
        };
        let (found, more) = findings(&listing, &me, &paths(&["src/parser/lexer.rs", "README.md"]));
        assert_eq!(more, 0);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].yours, ["src/parser/lexer.rs"]);
        assert_eq!(found[0].theirs, ["src/parser"]);
        let line = finding_line(&found[0]);
        assert_eq!(
            line,
            "\"src/parser/lexer.rs\" lies in the claim of p1 (\"codex\" in worktree \"/w/beta\", \
             branch \"main\") on \"src/parser\", for \"port the \\\"parser\\\"\\n\""
        );
        // the session itself, on this checkout's board, is never a finding
        let (mine, _) = findings(&listing, &me, &paths(&["."]));
        assert!(mine.iter().all(|f| f.client == "codex"), "{mine:?}");
    }

    #[test]
    fn a_claim_is_met_where_its_server_resolved_it_not_by_its_text() {
        let mut through_link = peer(2, "codex", "/w/beta", &[("the guide", &["notes"])]);
        through_link.claims[0].resolved = vec!["docs".into()];
        let listing = list(vec![through_link]);
        let me = Me {
            peer: &PeerId::nth(1),
        };
        let (found, _) = findings(&listing, &me, &paths(&["docs/guide.md"]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].theirs, ["notes"], "named as its session wrote it");
        assert_eq!(found[0].yours, ["docs/guide.md"]);
        let (found, _) = findings(&listing, &me, &paths(&["notes/guide.md"]));
        assert!(
            found.is_empty(),
            "the text alone is not where it leads: {found:?}"
        );
    }

    #[test]
    fn files_elsewhere_find_nothing_and_many_claims_are_counted() {
        let mut peers = vec![peer(1, "claude-code", ROOT, &[])];
        for n in 2..=20 {
            peers.push(peer(n, "codex", ROOT, &[("wide", &["src"])]));
        }
        let listing = list(peers);
        let me = Me {
            peer: &PeerId::nth(1),
        };
        assert!(findings(&listing, &me, &paths(&["docs/a.md"])).0.is_empty());
        let (found, more) = findings(&listing, &me, &paths(&["src/a.rs"]));
        assert_eq!((found.len(), more), (FINDINGS_LISTED, 19 - FINDINGS_LISTED));
    }

    #[test]
    fn an_overlap_is_a_fact_about_the_other_side_with_a_stable_key() {
        let listing = list(vec![
            peer(
                1,
                "claude-code",
                ROOT,
                &[("fix the lexer", &["src/parser/lexer.rs"])],
            ),
            peer(
                2,
                "gemini-cli",
                "/w/beta",
                &[("rework parsing", &["src/parser"])],
            ),
        ]);
        let me = Me {
            peer: &PeerId::nth(1),
        };
        let facts = overlap_facts(&listing, &me);
        assert_eq!(facts.len(), 1);
        assert_eq!(
            facts[0].line(),
            "p2 (\"gemini-cli\" in worktree \"/w/beta\", branch \"main\") claims \
             \"src/parser\" for \"rework parsing\", which meets your \"src/parser/lexer.rs\""
        );
        assert_eq!(
            facts[0].key,
            overlap_facts(&listing, &me)[0].key,
            "the same overlap, the same key"
        );
        let other = Me {
            peer: &PeerId::nth(3),
        };
        assert!(overlap_facts(&listing, &other).is_empty());
    }

    #[test]
    fn a_summary_names_every_other_session_and_stays_short() {
        let mut peers = vec![peer(1, "claude-code", ROOT, &[])];
        for n in 2..=30 {
            peers.push(peer(n, "codex", "/w/beta", &[(&"x".repeat(900), &["src"])]));
        }
        let listing = list(peers);
        let me = Me {
            peer: &PeerId::nth(1),
        };
        let lines = summary(&listing, &me, &[]);
        assert!(
            lines[0].starts_with("29 other sessions are attached"),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 1 + SUMMARY_PEERS + 1, "{lines:?}");
        assert!(lines[SUMMARY_PEERS + 1].starts_with("21 more sessions are attached"));
        assert!(lines.iter().all(|line| line.len() < 2 * QUOTED_BYTES + 100));
        let alone = list(vec![peer(1, "claude-code", ROOT, &[])]);
        assert!(summary(&alone, &me, &[]).is_empty());
    }

    #[test]
    fn a_summary_lists_the_live_sessions_and_counts_the_finished_in_one_line() {
        let mut peers = vec![peer(1, "claude-code", ROOT, &[])];
        for n in 2..=9 {
            let mut finished = peer(n, "codex", "/w/beta", &[("tidy", &["src/old.rs"])]);
            finished.attached = false;
            peers.push(finished);
        }
        for n in 10..=12 {
            peers.push(peer(
                n,
                "gemini-cli",
                "/w/gamma",
                &[("work", &["src/new.rs"])],
            ));
        }
        let listing = list(peers);
        let me = Me {
            peer: &PeerId::nth(1),
        };
        let lines = summary(&listing, &me, &[]);
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert_eq!(
            lines[0],
            "3 other sessions are attached on this repository's boards"
        );
        for (line, n) in lines[1..4].iter().zip(10..) {
            assert!(line.starts_with(&format!("p{n} (")), "{lines:?}");
            assert!(!line.contains("departed"), "{lines:?}");
        }
        assert!(
            lines[4].starts_with("8 finished sessions are still listed"),
            "{lines:?}"
        );
        assert!(
            lines.iter().all(|line| !line.starts_with("p1 ")),
            "a session never meets itself: {lines:?}"
        );
    }

    #[test]
    fn lines_beyond_the_bound_are_counted_not_sent() {
        let lines = bounded(vec!["x".repeat(1_000); 9]);
        assert_eq!(lines.len(), 5, "four lines fit, then the count");
        assert_eq!(
            lines[4],
            "5 more line(s) left out; `majordomus_peers` shows the whole board"
        );
        assert_eq!(bounded(vec!["short".into()]), ["short"]);
    }
}
