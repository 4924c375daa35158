//! `peers.list` for people: the table the command line prints.

use majordomus_domain::changes::ChangeKind;
use majordomus_domain::peers::{Peer, PeerCheckout, WaitReason};
use majordomus_domain::text::for_terminal;

use crate::leases::lease_line;
use crate::wire::{self, SideKind};
use majordomus_core::render;

use super::answer::PeerList;
use super::wire_changes::{self, ListedChangeOverlap, WorktreeChanges};

/// Why `peer` waits for the person, and since when, on one line escaped for the terminal;
/// `None` while it works.
fn waiting_line(peer: &Peer) -> Option<String> {
    let waiting = peer.waiting.as_ref()?;
    let mut line = format!(
        "{} ({}): {} since {}",
        peer_side(
            peer.id.as_str(),
            &peer.checkout,
            peer.attached,
            peer.left_seconds_ago
        ),
        for_terminal(&peer.client.name),
        waiting.reason.as_str(),
        waiting.since
    );
    if let (WaitReason::Blocked, Some(holder)) = (waiting.reason, &waiting.holder) {
        line.push_str(&format!(
            ", held up by {} ({}{})",
            for_terminal(holder.peer.as_str()),
            for_terminal(&holder.client),
            holder
                .worktree
                .as_deref()
                .map(|worktree| format!(" in {}", for_terminal(worktree)))
                .unwrap_or_default()
        ));
    }
    if let Some(message) = &waiting.message {
        line.push_str(&format!(" — {}", for_terminal(message)));
    }
    Some(line)
}

/// `peers.list` for people: first the sessions that wait for the person, then a table of
/// the peers, then a line for each overlap, change, predicted conflict and board that could
/// not be read.
pub(super) fn peer_list(output: &PeerList) -> String {
    let needs_you: String = output
        .peers
        .iter()
        .filter_map(|listed| waiting_line(&listed.peer))
        .map(|line| format!("needs you: {line}\n"))
        .collect();
    let rows: Vec<Vec<String>> = output
        .peers
        .iter()
        .map(|listed| {
            let peer = &listed.peer;
            let checkout = peer.checkout.as_ref();
            let claims: Vec<String> = peer.claims.iter().map(render::claim).collect();
            vec![
                // The table escapes every cell for the terminal.
                checkout.map_or_else(
                    || "-".into(),
                    |c| match &c.machine {
                        Some(machine) => format!("{machine}:{}", c.worktree),
                        None => c.worktree.clone(),
                    },
                ),
                checkout
                    .and_then(|c| c.branch.clone())
                    .unwrap_or_else(|| "-".into()),
                peer.id.to_string(),
                format!("{} {}", peer.client.name, peer.client.version),
                attachment(peer.attached, peer.left_seconds_ago),
                format!("{}s ago", peer.last_seen_seconds_ago),
                if claims.is_empty() {
                    "(silent)".into()
                } else {
                    claims.join("; ")
                },
            ]
        })
        .collect();
    let mut text = needs_you;
    text.push_str(&if rows.is_empty() {
        "nobody is on the board".to_string()
    } else {
        render::table(
            &[
                "WORKTREE",
                "BRANCH",
                "PEER",
                "CLIENT",
                "ATTACHED",
                "LAST SEEN",
                "CLAIMS",
            ],
            &rows,
        )
    });
    text.push_str(&format!(
        "\n{} attached, {} silent, {} overlap(s), {} with changes",
        output.count,
        output.silent,
        output.overlaps.len() + output.more_overlaps,
        output.change_overlaps.len() + output.more_change_overlaps
    ));
    for overlap in &output.overlaps {
        let mut paths: Vec<String> = overlap
            .paths
            .iter()
            .map(|p| format!("{} ~ {}", for_terminal(&p.theirs), for_terminal(&p.yours)))
            .collect();
        if overlap.more_paths > 0 {
            paths.push(format!("{} more", overlap.more_paths));
        }
        let (side, with) = (&overlap.side, &overlap.with);
        text.push_str(&format!(
            "\n  overlap: {} ({}) and {} ({}) on {}",
            peer_side(
                &side.peer.0,
                &board_checkout(&side.checkout),
                side.attached,
                side.left_seconds_ago
            ),
            claim_names(&side.claims),
            peer_side(
                &with.peer.0,
                &board_checkout(&with.checkout),
                with.attached,
                with.left_seconds_ago
            ),
            claim_names(&with.claims),
            paths.join(", ")
        ));
    }
    if output.more_overlaps > 0 {
        text.push_str(&format!(
            "\n  and {} more overlap(s) between peers, not listed",
            output.more_overlaps
        ));
    }
    for overlap in &output.change_overlaps {
        text.push_str(&format!("\n  {}", change_overlap_line(overlap)));
    }
    if output.more_change_overlaps > 0 {
        text.push_str(&format!(
            "\n  and {} more change overlap(s), not listed",
            output.more_change_overlaps
        ));
    }
    for board in &output.boards {
        let changed = board.changes.as_ref();
        if let Some(changes) = changed.filter(|c| !c.paths.is_empty() || c.more_paths > 0) {
            text.push_str(&format!(
                "\n  changed in {}: {}",
                render::checkout(&board.stamp()),
                changed_paths_line(changes)
            ));
        }
    }
    if let Some(conflicts) = &output.conflicts {
        for conflict in &conflicts.conflicts {
            text.push_str(&format!(
                "\n  merge conflict predicted: {}",
                crate::conflicts::rendered(conflict)
            ));
        }
        if conflicts.more_conflicts > 0 {
            text.push_str(&format!(
                "\n  and {} more pair(s) of worktrees would conflict, not listed",
                conflicts.more_conflicts
            ));
        }
        if let Some(reason) = &conflicts.reason {
            text.push_str(&format!(
                "\n  no full conflict prediction: {}",
                for_terminal(reason)
            ));
        }
        for left_out in &conflicts.not_hashed {
            text.push_str(&format!(
                "\n  not hashed for the prediction (untracked, over 1 MiB) in {}: {}{}",
                for_terminal(&left_out.worktree),
                for_terminal(&left_out.paths.join(", ")),
                match left_out.more_paths {
                    0 => String::new(),
                    more => format!(" and {more} more"),
                }
            ));
        }
    }
    for lease in &output.leases {
        text.push_str(&format!("\n  {}", lease_line(lease)));
    }
    if output.messages_queued > 0 {
        text.push_str(&format!(
            "\nmessages: {} waiting for their recipients (majordomus messages)",
            output.messages_queued
        ));
    }
    if let Some(federation) = &output.federation {
        text.push_str(&format!(
            "\nfederation: {}",
            for_terminal(&federation.summary)
        ));
        for ignored in &federation.ignored {
            text.push_str(&format!(
                "\n  ignored {}: {}",
                for_terminal(&ignored.key),
                for_terminal(&ignored.reason)
            ));
        }
    }
    if !output.complete {
        text.push_str("\nINCOMPLETE: some boards could not be read:");
    }
    if let Some(reason) = output.federation.as_ref().and_then(|f| f.reason.as_ref()) {
        text.push_str(&format!("\n  {}", for_terminal(reason)));
    }
    for board in output.boards.iter().filter(|b| b.reason.is_some()) {
        text.push_str(&format!(
            "\n  {}: {}",
            for_terminal(&board.worktree),
            for_terminal(board.reason.as_deref().unwrap_or(""))
        ));
    }
    text
}

/// Whether a peer is attached, for people: `yes`, or how long ago it left.
fn attachment(attached: bool, left_seconds_ago: Option<u64>) -> String {
    match (attached, left_seconds_ago) {
        (true, _) => "yes".into(),
        (false, Some(seconds)) => render::left_ago(seconds),
        (false, None) => "left".into(),
    }
}

/// The claims of one side of an overlap for people, as the table names them: `[parser],
/// [docs]`, the unnamed one as `unnamed claim`; the first few, and how many more.
fn claim_names(claims: &[Option<String>]) -> String {
    /// How many claim names one overlap line shows of a side.
    const SHOWN: usize = 4;
    let mut names: Vec<String> = claims
        .iter()
        .take(SHOWN)
        .map(|name| match name {
            Some(name) => format!("[{}]", for_terminal(name)),
            None => "unnamed claim".to_owned(),
        })
        .collect();
    if claims.len() > SHOWN {
        names.push(format!("{} more claim(s)", claims.len() - SHOWN));
    }
    names.join(", ")
}

/// A checkout as an answer writes it, as the board names it: what the words for people are
/// written from.
fn board_checkout(checkout: &Option<wire::PeerCheckout>) -> Option<PeerCheckout> {
    checkout.clone().map(PeerCheckout::from)
}

/// The ways a path was changed as an answer writes them, as the domain names them.
fn board_kinds(kinds: &[wire_changes::ChangeKind]) -> Vec<ChangeKind> {
    kinds.iter().copied().map(ChangeKind::from).collect()
}

/// One side of an overlap for people: the peer, its worktree, and when it left if it did.
fn peer_side(
    peer: &str,
    checkout: &Option<PeerCheckout>,
    attached: bool,
    left_seconds_ago: Option<u64>,
) -> String {
    let mut side = match checkout {
        Some(c) => match &c.machine {
            Some(machine) => format!(
                "{peer} in {} on {}",
                for_terminal(&c.worktree),
                for_terminal(machine)
            ),
            None => format!("{peer} in {}", for_terminal(&c.worktree)),
        },
        None => peer.to_string(),
    };
    if !attached {
        side.push_str(&format!(" ({})", attachment(attached, left_seconds_ago)));
    }
    side
}

/// A worktree's changes meeting a claim or other changes, as a sentence: "worktree
/// `/wt/beta` (branch `beta`) has uncommitted changes to `src/parser/lexer.rs` (unstaged);
/// p1 in `/wt/alpha` claims `src/parser` (rewrite the parser)".
fn change_overlap_line(overlap: &ListedChangeOverlap) -> String {
    let pairs = &overlap.overlap.paths;
    let mut theirs: Vec<(&str, Vec<ChangeKind>)> = Vec::new();
    let mut yours: Vec<(&str, Vec<ChangeKind>)> = Vec::new();
    for pair in pairs {
        if !theirs.iter().any(|(path, _)| *path == pair.theirs) {
            theirs.push((&pair.theirs, board_kinds(&pair.kinds)));
        }
        if !yours.iter().any(|(path, _)| *path == pair.yours) {
            yours.push((&pair.yours, board_kinds(&pair.your_kinds)));
        }
    }
    let changes_to = |paths: &[(&str, Vec<ChangeKind>)]| {
        let paths: Vec<(&str, &[ChangeKind])> = paths
            .iter()
            .map(|(path, kinds)| (*path, kinds.as_slice()))
            .collect();
        render::changes_to(&paths)
    };
    let with = &overlap.with;
    let other = match (with.kind, &with.peer) {
        (SideKind::Claim, Some(peer)) => {
            let claimed: Vec<String> = yours
                .iter()
                .map(|(path, _)| for_terminal(path).into_owned())
                .collect();
            format!(
                "{} claims {} ({})",
                peer_side(
                    &peer.0,
                    &board_checkout(&with.checkout),
                    with.attached.unwrap_or(true),
                    with.left_seconds_ago
                ),
                claimed.join(", "),
                claim_names(&with.claims)
            )
        }
        _ => format!(
            "{} has {}",
            board_checkout(&with.checkout)
                .as_ref()
                .map_or_else(|| "another worktree".into(), render::checkout),
            changes_to(&yours)
        ),
    };
    let more = if overlap.overlap.more_paths > 0 {
        format!(" ({} more pair(s) of paths)", overlap.overlap.more_paths)
    } else {
        String::new()
    };
    format!(
        "change overlap: {} has {}; {other}{more}",
        render::checkout(&overlap.overlap.checkout.clone().into()),
        changes_to(&theirs)
    )
}

/// How many paths a worktree changed, and the first few with how, for people.
fn changed_paths_line(changes: &WorktreeChanges) -> String {
    /// How many changed paths one line names.
    const SHOWN: usize = 5;
    let total = changes.paths.len() + changes.more_paths;
    let shown: Vec<String> = changes
        .paths
        .iter()
        .take(SHOWN)
        .map(|changed| {
            let kinds: Vec<&str> = board_kinds(&changed.kinds)
                .into_iter()
                .map(ChangeKind::as_str)
                .collect();
            format!("{} ({})", for_terminal(&changed.path), kinds.join(", "))
        })
        .collect();
    let mut line = format!("{total} path(s): {}", shown.join(", "));
    if total > shown.len() {
        line.push_str(&format!(" and {} more", total - shown.len()));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::wire_changes::{ChangeOverlap, ChangeOverlapPath, ChangeOverlapSide};

    #[test]
    fn people_read_a_change_overlap_as_a_sentence() {
        let beta = wire::PeerCheckout {
            id: "b".into(),
            worktree: "/wt/beta".into(),
            branch: Some("feature/beta".into()),
            this_checkout: false,
            machine: None,
        };
        let alpha = wire::PeerCheckout {
            id: "a".into(),
            worktree: "/wt/alpha".into(),
            branch: Some("alpha".into()),
            this_checkout: true,
            machine: None,
        };
        let overlap = ListedChangeOverlap {
            overlap: ChangeOverlap {
                kind: SideKind::Change,
                checkout: beta,
                paths: vec![ChangeOverlapPath {
                    yours: "src/parser".into(),
                    theirs: "src/parser/lexer.rs".into(),
                    kinds: vec![wire_changes::ChangeKind::Unstaged],
                    your_kinds: vec![],
                }],
                more_paths: 0,
            },
            with: ChangeOverlapSide {
                kind: SideKind::Claim,
                checkout: Some(alpha),
                peer: Some(wire::PeerId("p1".into())),
                attached: Some(false),
                left_seconds_ago: Some(240),
                claims: vec![None, Some("parser\u{1b}[2J".into())],
            },
        };
        assert_eq!(
            change_overlap_line(&overlap),
            "change overlap: worktree /wt/beta (branch feature/beta) has uncommitted changes to \
             src/parser/lexer.rs (unstaged); p1 in /wt/alpha (left 4 min ago) claims src/parser \
             (unnamed claim, [parser\\x1b[2J])"
        );
    }
}
