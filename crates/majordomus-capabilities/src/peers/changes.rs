//! What one worktree changed, as git reads it, held to the bound a board carries.

use std::sync::Arc;

use majordomus_checkout::changes::Changes;
use majordomus_checkout::git::Checkout;
use majordomus_domain::changes::{CHANGED_PATHS, ChangedPath, WorktreeChanges};

use majordomus_core::context::Site;

/// What a worktree changed, from the site's cache when it holds a reading younger than its
/// interval, otherwise read by git on a blocking thread (so at most about once a second per
/// worktree); `None` outside git.
///
/// The read gets half the probe timeout: a board asked by a sibling must answer within the
/// whole of it, and in a large repository `git status` can take longer. A read that runs
/// over is reported as such and left to finish, so the next call finds it in the cache.
pub(super) async fn read_changes(site: &Arc<Site>, checkout: &Checkout) -> Option<WorktreeChanges> {
    checkout.common_dir.as_ref()?;
    if let Some(kept) = site.changes.kept(&checkout.root) {
        return Some(board_changes(kept));
    }
    let reader = site.clone();
    let root = checkout.root.clone();
    let read = tokio::task::spawn_blocking(move || {
        let default_branch = reader.config.changes.default_branch.as_deref();
        reader.changes.changes(&root, default_branch)
    });
    let budget = site.probe_timeout() / 2;
    Some(match tokio::time::timeout(budget, read).await {
        Ok(Ok(read)) => board_changes(read),
        Ok(Err(error)) => WorktreeChanges::unreadable(format!("reading them failed: {error}")),
        Err(_) => WorktreeChanges::unreadable(format!(
            "git did not finish reading them within {} ms; a later call will have them",
            budget.as_millis()
        )),
    })
}

/// A worktree's changes as git read them, as a board carries them; git's words when it
/// could not read them.
pub(super) fn board_changes(read: Result<Changes, String>) -> WorktreeChanges {
    let changes = match read {
        Ok(changes) => changes,
        Err(error) => return WorktreeChanges::unreadable(error),
    };
    capped(WorktreeChanges {
        paths: changes
            .paths
            .into_iter()
            .map(|changed| ChangedPath {
                path: changed.path,
                kinds: changed.kinds,
            })
            .collect(),
        more_paths: changes.omitted,
        reason: None,
        read_seconds_ago: None,
    })
}

/// At most [`CHANGED_PATHS`] listed, the rest counted: a sibling's answer is held to the
/// same bound as a reading here.
pub(super) fn capped(mut changes: WorktreeChanges) -> WorktreeChanges {
    let beyond = changes.paths.len().saturating_sub(CHANGED_PATHS);
    changes.paths.truncate(CHANGED_PATHS);
    changes.more_paths = changes.more_paths.saturating_add(beyond);
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_domain::changes::ChangeKind;

    #[test]
    fn changes_beyond_the_bound_are_counted_not_listed() {
        let paths: Vec<ChangedPath> = (0..CHANGED_PATHS + 3)
            .map(|n| ChangedPath {
                path: format!("gen/{n}"),
                kinds: vec![ChangeKind::Untracked],
            })
            .collect();
        let answered = WorktreeChanges {
            paths,
            more_paths: 10,
            reason: None,
            read_seconds_ago: None,
        };
        let held = capped(answered);
        assert_eq!(held.paths.len(), CHANGED_PATHS);
        assert_eq!(held.more_paths, 13);
    }
}
