//! The scenarios of worktrees that changed files: conflicts predicted, announcements meeting
//! a sibling's changes, listings carrying them.

use super::*;

/// How many worktrees the change and conflict scenarios give changes to.
pub(super) const CHANGED_WORKTREES: usize = 8;

/// A repository with [`CHANGED_WORKTREES`] linked worktrees, each with a committed change to
/// a file of its own and uncommitted work in another; the first two change the same lines of
/// `src/lib.rs` (one committed, one not), so exactly one pair conflicts.
pub(super) fn changed_worktrees(
    scratch: &Scratch,
    label: &str,
) -> Result<(TempRepository, Vec<PathBuf>), String> {
    let repository = TempRepository::new(scratch, label)?;
    let mut worktrees = Vec::with_capacity(CHANGED_WORKTREES);
    for n in 0..CHANGED_WORKTREES {
        let worktree = repository.add_worktree(&format!("changed{n}"))?;
        write_file(
            &worktree.join(format!("src/own{n}.rs")),
            "// committed on its branch\n",
        )?;
        if n == 0 {
            write_file(
                &worktree.join("src/lib.rs"),
                "// the first worktree's line\n",
            )?;
        }
        git(&worktree, &["add", "."])?;
        git(
            &worktree,
            &["commit", "--quiet", "-m", "a change of its own"],
        )?;
        if n == 1 {
            write_file(
                &worktree.join("src/lib.rs"),
                "// the second worktree's line\n",
            )?;
        }
        write_file(
            &worktree.join(format!("src/work{n}.rs")),
            "// uncommitted\n",
        )?;
        worktrees.push(worktree);
    }
    Ok((repository, worktrees))
}

pub(super) fn write_file(path: &std::path::Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text)
        .map_err(|error| format!("could not write {}: {error}", path.display()))
}

/// `conflicts.predict` in-process from the primary's server over [`CHANGED_WORKTREES`]
/// worktrees with changes. Cold: before each call (untimed) every worktree's uncommitted
/// file is rewritten, so every snapshot is taken again and every pair merged again. Warm:
/// nothing moves, so snapshots and merges come from the predictor's caches.
pub(super) async fn predict(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    cold: bool,
) -> Result<ScenarioRow, String> {
    let label = if cold { "predict-cold" } else { "predict-warm" };
    let (repository, worktrees) = changed_worktrees(scratch, label)?;
    let server = InProcessServer::start(repository.root()).await?;
    let result = async {
        let ctx = server.context();
        let capability = registered("conflicts.predict");
        let input = json!({});
        let first = capability
            .call(&ctx, input.clone())
            .await
            .map_err(|error| format!("the prediction was refused: {}", error.message))?;
        let pairs = first["pairs"].as_u64().unwrap_or(0);
        let conflicts = first["conflicts"].as_array().map_or(0, Vec::len);
        if conflicts != 1 {
            return Err(format!("expected one conflicting pair, the prediction says {first}"));
        }
        let budget = if cold {
            Budget::scenario(options, 10, 60, 10.0)
        } else {
            Budget::scenario(options, 30, 300, 10.0)
        };
        let mut round = 0u64;
        let samples = budget.sample(|| {
            round += 1;
            let rewrite = cold.then(|| worktrees.clone());
            let (ctx, input) = (ctx.clone(), input.clone());
            async move {
                if let Some(worktrees) = rewrite {
                    for (n, worktree) in worktrees.iter().enumerate() {
                        write_file(
                            &worktree.join(format!("src/work{n}.rs")),
                            &format!("// uncommitted, round {round}\n"),
                        )?;
                    }
                }
                let started = Instant::now();
                capability
                    .call(&ctx, input)
                    .await
                    .map_err(|error| error.message)?;
                Ok(started.elapsed())
            }
        })
        .await?;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "{pairs} pairs of worktrees merged (git merge-tree between snapshots that include uncommitted work), 1 pair conflicting; in-process call from the primary's server{}",
                if cold { "; each call after every worktree's uncommitted file was rewritten" } else { "" }
            ),
        ))
    }
    .await;
    server.stop().await;
    result
}

/// `peers.announce` in-process from the primary's server while a `majordomus serve` runs in
/// a sibling worktree with a peer claiming part of what is announced: the announce reads that
/// board over HTTP (probe and listing) within the probe timeout and names its claim.
pub(super) async fn announce_with_sibling(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let repository = TempRepository::new(scratch, "announce-sibling")?;
    let sibling = repository.add_worktree("sibling")?;
    let (sibling_server, lease) = ServeProcess::start(scratch, &sibling).await?;
    let result = async {
        let url = lease.url.clone().ok_or("the sibling's lease names no URL")?;
        let mcp = connect_kept_alive(&url, &lease.token, "majordomus-bench-sibling").await?;
        let claimant = Caller::Mcp(mcp);
        let announce = registered("peers.announce");
        let outcome = claimant
            .call(
                announce,
                &json!({"intent": "the sibling's work", "scope": ["src/parser"]}),
            )
            .await;
        if outcome != Outcome::Answer {
            claimant.close().await;
            return Err(format!(
                "the sibling's claim was not answered: {}",
                outcome.detail().unwrap_or("")
            ));
        }
        let server = InProcessServer::start(repository.root()).await?;
        let ctx = server.context();
        let input = json!({"intent": "bench", "scope": ["src/parser/lexer.rs", "docs"]});
        let first = announce
            .call(&ctx, input.clone())
            .await
            .map_err(|error| format!("the announce was refused: {}", error.message))?;
        let met = first["overlaps"]
            .as_array()
            .is_some_and(|overlaps| overlaps.iter().any(|o| o["checkout"]["this_checkout"] == false));
        let budget = Budget::scenario(options, 30, 300, 10.0);
        let samples = sample_in_process(budget, announce, &ctx, &input).await;
        server.stop().await;
        claimant.close().await;
        if !met {
            return Err(format!("the announce did not name the sibling's claim: {first}"));
        }
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples?),
            "an announce of 2 paths meeting the sibling's peer's claim: this board under its lock, the sibling's read over loopback HTTP (probe and `checkouts=this` listing); in-process call from the primary's server".to_string(),
        ))
    }
    .await;
    sibling_server.stop().await;
    result
}

/// `peers.list` (`checkouts: repository`) in-process from the primary's server over
/// [`CHANGED_WORKTREES`] worktrees with changes that nobody serves: their changes and the
/// conflict summary come from the background reading of the repository.
pub(super) async fn list_with_changes(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let (repository, _worktrees) = changed_worktrees(scratch, "list-changes")?;
    let server = InProcessServer::start(repository.root()).await?;
    let result = async {
        let ctx = server.context();
        let capability = registered("peers.list");
        let input = json!({"checkouts": "repository"});
        // The first listings wait for the background reading; measure once it is there.
        let started = Instant::now();
        let summary = loop {
            let listing = capability
                .call(&ctx, input.clone())
                .await
                .map_err(|error| format!("the listing was refused: {}", error.message))?;
            let with_changes = listing["boards"].as_array().map_or(0, |boards| {
                boards
                    .iter()
                    .filter(|b| b["changes"]["paths"].as_array().is_some_and(|p| !p.is_empty()))
                    .count()
            });
            if with_changes == CHANGED_WORKTREES && listing["conflicts"]["conflicts"].as_array().is_some_and(|c| c.len() == 1) {
                break listing["conflicts"].clone();
            }
            if started.elapsed() > SETUP_BOUND {
                return Err(format!("the listing never carried every worktree's changes: {listing}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let budget = Budget::scenario(options, 30, 300, 10.0);
        let samples = sample_in_process(budget, capability, &ctx, &input).await?;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "{} boards with changes, {} pairs merged in the background; in-process call from the primary's server",
                CHANGED_WORKTREES, summary["pairs"]
            ),
        ))
    }
    .await;
    server.stop().await;
    result
}
