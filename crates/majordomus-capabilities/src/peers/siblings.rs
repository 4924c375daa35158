//! The other worktrees' boards as an announcement reads them: all within one probe timeout.

use std::time::SystemTime;

use majordomus_domain::checkouts::Checkouts;
use majordomus_domain::peers::PeerCheckout;

use majordomus_core::context::Context;
use majordomus_core::survey;

use super::answer::{BoardView, ListedPeer};
use super::boards::{Detail, stamp};
use super::list::read_board;
use super::reading::latest_reading;

/// This checkout as answers name it, and every other worktree's board, each read as
/// `peers.list` reads it, all within one probe timeout: an announce is never held up by a
/// sibling that is slow or hung, and says which boards it could not read.
pub(super) async fn read_siblings(
    ctx: &Context,
) -> (PeerCheckout, Vec<(BoardView, Vec<ListedPeer>)>) {
    let site = &ctx.site;
    let timeout = site.probe_timeout();
    let deadline = tokio::time::Instant::now() + timeout;
    let too_slow = format!("it did not answer within {} ms", timeout.as_millis());
    let listed = tokio::time::timeout_at(
        deadline,
        survey::covered_and_noticed(site, Checkouts::Repository),
    )
    .await;
    let (checkouts, noticed) = match listed {
        Ok(Ok(covered)) => covered,
        failed => {
            let reason = match failed {
                Ok(Err(error)) => error.message,
                _ => format!(
                    "the worktrees could not be listed within {} ms",
                    timeout.as_millis()
                ),
            };
            let mut here = site.checkout.clone();
            here.branch = here.current_branch();
            let repository = site.checkout.common_dir.as_ref().map_or_else(
                || here.root.display().to_string(),
                |dir| dir.display().to_string(),
            );
            let unread = BoardView::unread(
                String::new(),
                repository,
                None,
                format!("the other worktrees' boards were not read: {reason}"),
            );
            return (stamp(&here, true), vec![(unread, Vec::new())]);
        }
    };
    let here = stamp(&checkouts[0], true);
    let any_sibling = checkouts.len() > 1;
    let noticed = noticed.as_ref();
    let siblings = checkouts.into_iter().skip(1).map(|checkout| {
        let too_slow = too_slow.clone();
        async move {
            let unread = BoardView::unread(
                checkout.id.clone(),
                checkout.root.display().to_string(),
                checkout.branch.clone(),
                too_slow,
            );
            let read = read_board(ctx, checkout, false, Detail::Whole, noticed);
            match tokio::time::timeout_at(deadline, read).await {
                Ok(board) => {
                    let (view, peers, _) = board.listed(SystemTime::now());
                    (view, peers)
                }
                Err(_) => (unread, Vec::new()),
            }
        }
    });
    // What the worktrees without a server changed comes from the repository reading, waited
    // for within the same deadline.
    let reading = async {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match any_sibling {
            true => latest_reading(site, left).await,
            false => None,
        }
    };
    let (mut boards, reading) = tokio::join!(futures::future::join_all(siblings), reading);
    for (view, _) in &mut boards {
        if view.changes.is_none()
            && let Some(reading) = &reading
        {
            view.changes = reading.changes.get(&view.worktree).cloned().map(Into::into);
        }
    }
    (here, boards)
}
