//! The federation's scenarios: another machine's board, seen here, through a real NATS server.

use super::*;

/// Writes a `[federation]` section into a checkout's `majordomus.toml` and allows it in an
/// allowance file of the bench's own, as a person would with `majordomus allow federation`;
/// answers the person's files a server started with them reads.
pub(super) fn federate(
    scratch: &Scratch,
    dir: &std::path::Path,
    url: &str,
    machine: &str,
) -> Result<UserFiles, String> {
    std::fs::write(
        dir.join(majordomus_checkout::CONFIG_FILE),
        format!("[federation]\nurl = \"{url}\"\nmachine = \"{machine}\"\n"),
    )
    .map_err(|error| format!("could not configure {}: {error}", dir.display()))?;
    let allowances = scratch.base().join(format!("allowed-{machine}.toml"));
    let user_files = UserFiles {
        config: None,
        allowances: Some(allowances.clone()),
    };
    let suggested = majordomus_checkout::config::load_with(dir, &user_files)
        .map_err(|error| error.to_string())?
        .suggestions
        .federation
        .ok_or("the federation written is no suggestion")?;
    Allowances::allow(&allowances, Suggestion::Federation, &suggested.digest)
        .map_err(|error| error.to_string())?;
    Ok(user_files)
}

/// Waits (bounded) until a server follows the federation: connected, and every board the
/// bucket held read.
pub(super) async fn until_following(server: &ServerState) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let status = server.federation.status();
        if status.state == FederationState::Connected && status.reason.is_none() {
            return Ok(());
        }
        if started.elapsed() > SETUP_BOUND {
            return Err(format!(
                "the federation did not connect: {}",
                status.summary
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether `server` holds a remote board with a claim of this intent.
pub(super) fn holds_claim(server: &ServerState, intent: &str) -> bool {
    server.federation.remote_boards().iter().any(|held| {
        held.board
            .peers
            .iter()
            .any(|peer| peer.claims.iter().any(|claim| claim.intent == intent))
    })
}

/// An announce on one machine's server until the claim is in another machine's view: two
/// clones of one repository served inside this process, federated through a `nats-server`
/// on loopback.
pub(super) async fn federation_visible(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let nats = BenchNats::start(scratch, "federation-visible").await?;
    let repository = TempRepository::new(scratch, "federation-visible")?;
    let base = repository
        .root()
        .parent()
        .ok_or("the repository has no parent directory")?;
    git(base, &["clone", "--quiet", "repo", "beta"])?;
    let beta = base.join("beta");
    let alpha_files = federate(scratch, repository.root(), &nats.url(), "alpha")?;
    let beta_files = federate(scratch, &beta, &nats.url(), "beta")?;
    let alpha = InProcessServer::start_as(repository.root(), alpha_files).await?;
    let watcher = InProcessServer::start_as(&beta, beta_files).await?;
    let result = async {
        let ctx = alpha.context();
        let seeing = watcher.state().clone();
        until_following(alpha.state()).await?;
        until_following(&seeing).await?;
        let announce = registered("peers.announce");
        let mut step = 0u64;
        let budget = Budget::scenario(options, 30, 300, 10.0);
        let samples = budget.sample(|| {
            step += 1;
            let intent = format!("step {step}");
            let (ctx, seeing) = (ctx.clone(), seeing.clone());
            async move {
                // Untimed: a quiet moment, so the board is published at once.
                tokio::time::sleep(majordomus_federation::REPUBLISH_INTERVAL).await;
                let mut seen = seeing.federation.remote_changes();
                let started = Instant::now();
                announce
                    .call(&ctx, json!({"intent": intent, "scope": ["src/parser"]}))
                    .await
                    .map_err(|error| error.message)?;
                while !holds_claim(&seeing, &intent) {
                    if started.elapsed() > SETUP_BOUND {
                        return Err(format!("`{intent}` did not reach the other machine"));
                    }
                    seen = seeing.federation.remote_changed(seen, SETUP_BOUND).await;
                }
                Ok(started.elapsed())
            }
        })
        .await?;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "`peers.announce` on machine alpha's server until the claim is in machine beta's view: published to nats-server, delivered to beta's watch, checked and held; both servers inside this process, {} on loopback; each announce after a quiet {} ms, so it is published at once",
                nats.version(),
                majordomus_federation::REPUBLISH_INTERVAL.as_millis()
            ),
        ))
    }
    .await;
    alpha.stop().await;
    watcher.stop().await;
    drop(nats);
    result
}

/// `peers.list` with `checkouts: everywhere` from a server that holds 10 other machines'
/// boards of 10 peers each, published straight into the bucket.
pub(super) async fn federation_everywhere(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
) -> Result<ScenarioRow, String> {
    let nats = BenchNats::start(scratch, "federation-everywhere").await?;
    let repository = TempRepository::new(scratch, "federation-everywhere")?;
    let user_files = federate(scratch, repository.root(), &nats.url(), "home")?;
    let server = InProcessServer::start_as(repository.root(), user_files).await?;
    let result = async {
        let ctx = server.context();
        let state = server.state().clone();
        until_following(&state).await?;
        let repository_id = state
            .site
            .checkout
            .root_commit()
            .map_err(|error| error.to_string())?
            .ok_or("the repository has no commit")?;
        let client = async_nats::connect(nats.url())
            .await
            .map_err(|error| format!("cannot connect to nats-server: {error}"))?;
        let bucket = async_nats::jetstream::new(client)
            .get_key_value(majordomus_federation::BUCKET)
            .await
            .map_err(|error| format!("no bucket: {error}"))?;
        let seen = state.federation.remote_changes();
        for (key, bytes) in remote_boards(&repository_id) {
            bucket
                .put(key, bytes.into())
                .await
                .map_err(|error| format!("cannot publish a board: {error}"))?;
        }
        let started = Instant::now();
        let mut seen = seen;
        while state.federation.remote_boards().len() < FEDERATION_MACHINES {
            if started.elapsed() > SETUP_BOUND {
                return Err("the remote boards did not all arrive".to_string());
            }
            seen = state.federation.remote_changed(seen, SETUP_BOUND).await;
        }
        let capability = registered("peers.list");
        let input = json!({"checkouts": "everywhere"});
        let first = capability
            .call(&ctx, input.clone())
            .await
            .map_err(|error| format!("the listing was refused: {}", error.message))?;
        let size = serde_json::to_vec(&first).map_or(0, |bytes| bytes.len()) / 1024;
        let budget = Budget::scenario(options, 100, 2000, 5.0);
        let samples = sample_in_process(budget, capability, &ctx, &input).await?;
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "{} peers listed ({FEDERATION_MACHINES} machines × {FEDERATION_PEERS} peers × 10 paths held in memory, and the caller), {} overlaps across machines, complete: {}, {size} KB of JSON; in-process call",
                first["peers"].as_array().map_or(0, Vec::len),
                first["overlaps"].as_array().map_or(0, Vec::len),
                first["complete"]
            ),
        ))
    }
    .await;
    server.stop().await;
    drop(nats);
    result
}

/// The boards of [`FEDERATION_MACHINES`] machines, [`FEDERATION_PEERS`] peers each claiming
/// 10 paths of their own; each machine's first peer also claims `shared`, so those meet
/// across machines. Keys and documents as a serving process publishes them.
pub(super) fn remote_boards(repository: &str) -> Vec<(String, Vec<u8>)> {
    (0..FEDERATION_MACHINES)
        .map(|m| {
            let machine = format!("machine-{m}");
            let id = majordomus_domain::ids::identity_digest(&format!("/{machine}/repo"));
            let peers = (0..FEDERATION_PEERS)
                .map(|p| {
                    let mut scope: Vec<String> =
                        (0..9).map(|k| format!("m{m}/pkg{p}/mod{k}")).collect();
                    scope.push(if p == 0 {
                        "shared".into()
                    } else {
                        format!("m{m}/pkg{p}/docs")
                    });
                    let claim = majordomus_domain::peers::Announcement {
                        name: None,
                        intent: format!("task {p} on {machine}"),
                        scope,
                        at: "2026-11-30T02:26:47Z".parse().unwrap(),
                        resolved: Vec::new(),
                        compared: Default::default(),
                    };
                    majordomus_domain::peers::Peer {
                        id: PeerId::nth(p as u64 + 1),
                        client: ClientInfo {
                            name: "claude-code".into(),
                            version: "2.1.0".into(),
                            title: None,
                        },
                        transport: Transport::Http,
                        connected_at: "2026-11-30T02:26:47Z".parse().unwrap(),
                        last_seen_seconds_ago: 1,
                        attached: true,
                        left_seconds_ago: None,
                        announcement: Some(claim.clone()),
                        claims: vec![claim],
                        checkout: None,
                        waiting: None,
                    }
                })
                .collect();
            let checkout = majordomus_federation::document::PublishedCheckout {
                id: id.clone(),
                worktree: "/home/dev/repo".into(),
                branch: Some("main".into()),
            };
            let (_, bytes) = majordomus_federation::document::BoardDocument::publish(
                &machine,
                checkout,
                majordomus_domain::checkouts::ServerStanding::Ready,
                60,
                SystemTime::now(),
                peers,
            );
            let key = majordomus_federation::document::BoardKey::new(repository, &machine, &id);
            (key.as_key(), bytes)
        })
        .collect()
}
