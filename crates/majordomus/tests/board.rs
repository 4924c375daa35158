//! Issue "board": peers announce what they do and where, learn of overlaps when they are made,
//! and `peers.list` gathers every worktree's board into one honest answer.
//!
//! Real processes in real temporary git repositories, real rmcp clients through
//! `majordomus mcp`; every wait is a bounded poll.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::*;
use reqwest::StatusCode;
use reqwest::header::AUTHORIZATION;
use serde_json::{Value, json};

/// A repository with its primary checkout and two linked worktrees, `alpha` and `beta`; two
/// MCP clients in `alpha` (the first serves, the second bridges), one in `beta`.
struct Scene {
    repo: TempRepo,
    alpha: PathBuf,
    beta: PathBuf,
    /// `alpha`'s first client: `p1` on alpha's board, over stdio.
    alpha1: McpClient,
    /// `alpha`'s second client: `p2` on alpha's board, through a bridge.
    alpha2: McpClient,
    /// `beta`'s client: `p1` on beta's board.
    beta1: McpClient,
    /// What `alpha2`'s announce answered.
    alpha2_announced: Value,
}

impl Scene {
    /// alpha p1 claims `src/parser` and `docs`; alpha p2 claims `src/parser/lexer.rs` (meets
    /// p1's `src/parser` on alpha's board); beta p1 claims `docs/guide.md` (meets alpha p1's
    /// `docs`, across worktrees).
    async fn new() -> Scene {
        let repo = TempRepo::new();
        let alpha = repo.add_worktree("alpha");
        let beta = repo.add_worktree("beta");

        let alpha1 = McpClient::stdio(&repo, &alpha, "claude-code", "2.1.0").await;
        let lease = wait_ready(&alpha).await;
        assert_eq!(
            Some(lease.pid),
            alpha1.pid,
            "alpha's first client's process serves alpha"
        );
        let first = alpha1
            .answer(
                "majordomus_announce",
                json!({"intent": "rewrite the parser", "scope": ["src/parser", "docs"]}),
            )
            .await;
        assert_eq!(first["id"], "p1");
        assert_eq!(
            first["overlaps"],
            json!([]),
            "alone on the board: {first:#}"
        );

        let alpha2 = McpClient::stdio(&repo, &alpha, "codex", "0.98.0").await;
        assert_ne!(alpha2.pid, Some(lease.pid), "alpha's second client bridges");
        let alpha2_announced = alpha2
            .answer(
                "majordomus_announce",
                json!({"intent": "speed up the lexer", "scope": ["src/parser/lexer.rs"]}),
            )
            .await;

        let beta1 = McpClient::stdio(&repo, &beta, "gemini-cli", "0.20.0").await;
        let beta_announced = beta1
            .answer(
                "majordomus_announce",
                json!({"intent": "write the user guide", "scope": ["docs/guide.md"]}),
            )
            .await;
        assert_eq!(beta_announced["id"], "p1", "every board counts from p1");
        let across = beta_announced["overlaps"].as_array().unwrap();
        assert_eq!(
            across.len(),
            1,
            "an announce meets the claims of every worktree: {beta_announced:#}"
        );
        assert_eq!(across[0]["peer"], "p1");
        assert_eq!(across[0]["intent"], "rewrite the parser");
        assert_eq!(across[0]["checkout"]["worktree"], display(&alpha));

        Scene {
            repo,
            alpha,
            beta,
            alpha1,
            alpha2,
            beta1,
            alpha2_announced,
        }
    }

    async fn close(self) {
        self.beta1.close().await;
        self.alpha2.close().await;
        self.alpha1.close().await;
    }
}

/// 2. The second client in `alpha` is told of the overlap with the first when it announces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_that_meets_a_claim_is_told_of_the_overlap() {
    let scene = Scene::new().await;
    let answer = &scene.alpha2_announced;
    assert_eq!(answer["id"], "p2", "{answer:#}");
    assert_eq!(
        answer["client"]["name"], "codex",
        "the bridge opened its session as its client"
    );
    assert_eq!(
        answer["transport"], "stdio",
        "the client reached majordomus over its bridge's stdio"
    );
    assert_eq!(answer["attached"], true);
    assert_eq!(answer["released"], json!([]));
    let overlaps = answer["overlaps"].as_array().unwrap();
    assert_eq!(
        overlaps.len(),
        1,
        "one claim of one other peer meets it: {answer:#}"
    );
    let overlap = &overlaps[0];
    assert_eq!(overlap["peer"], "p1");
    assert_eq!(
        overlap["attached"], true,
        "the first client is still attached"
    );
    assert_eq!(overlap["intent"], "rewrite the parser");
    assert_eq!(
        overlap["paths"],
        json!([{"yours": "src/parser/lexer.rs", "theirs": "src/parser"}]),
        "the paths as each peer wrote them: {overlap:#}"
    );
    scene.close().await;
}

/// 3. `peers.list` from `beta` gathers all three boards; from `alpha` it agrees; with
///    `checkouts: this` it reads one board.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_gathers_every_worktree_and_names_cross_worktree_overlaps() {
    let scene = Scene::new().await;
    let (root, alpha, beta) = (
        scene.repo.root().to_path_buf(),
        scene.alpha.clone(),
        scene.beta.clone(),
    );

    let from_beta = scene.beta1.answer("majordomus_peers", json!({})).await;
    assert_eq!(from_beta["complete"], true, "{from_beta:#}");
    assert_eq!(from_beta["count"], 3, "{from_beta:#}");
    assert_eq!(from_beta["caller"], "p1");
    assert_eq!(from_beta["silent"], 0);

    let boards = from_beta["boards"].as_array().unwrap();
    assert_eq!(boards.len(), 3, "one board per checkout: {from_beta:#}");
    assert_eq!(
        boards[0]["worktree"],
        display(&beta),
        "this checkout's board first"
    );
    assert_eq!(boards[0]["this_checkout"], true);
    let primary = find(&from_beta["boards"], "worktree", &display(&root));
    assert_eq!(
        primary["standing"], "absent",
        "nobody serves the primary: {primary:#}"
    );
    assert_eq!(primary["attached"], 0);
    assert_eq!(primary["this_checkout"], false);
    assert!(
        primary["reason"].is_null(),
        "an absent board is read (empty): {primary:#}"
    );
    for (checkout, attached) in [(&alpha, 2), (&beta, 1)] {
        let board = find(&from_beta["boards"], "worktree", &display(checkout));
        assert_eq!(board["standing"], "ready", "{board:#}");
        assert_eq!(board["attached"], attached, "{board:#}");
        assert!(board["url"].is_string(), "{board:#}");
        assert!(board["reason"].is_null(), "{board:#}");
    }

    let peers = from_beta["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 3, "{from_beta:#}");
    assert_eq!(
        peers[0]["checkout"]["worktree"],
        display(&beta),
        "this board's peers first"
    );
    for (checkout, branch, id, client) in [
        (&alpha, "alpha", "p1", "claude-code"),
        (&alpha, "alpha", "p2", "codex"),
        (&beta, "beta", "p1", "gemini-cli"),
    ] {
        let peer = peers
            .iter()
            .find(|p| p["id"] == id && p["checkout"]["worktree"] == display(checkout))
            .unwrap_or_else(|| panic!("{id} of {} is listed: {from_beta:#}", checkout.display()));
        assert_eq!(peer["checkout"]["branch"], branch, "{peer:#}");
        assert_eq!(
            peer["checkout"]["this_checkout"],
            checkout == &beta,
            "{peer:#}"
        );
        assert_eq!(peer["client"]["name"], client, "{peer:#}");
        assert_eq!(peer["attached"], true, "{peer:#}");
        assert_eq!(peer["claims"].as_array().map(Vec::len), Some(1), "{peer:#}");
    }

    // Two pairs meet: alpha p1 with alpha p2, and alpha p1 with beta p1, each listed once.
    let overlaps = from_beta["overlaps"].as_array().unwrap();
    assert_eq!(overlaps.len(), 2, "{from_beta:#}");
    let across: Vec<&Value> = overlaps
        .iter()
        .filter(|o| o["checkout"]["worktree"] != o["with"]["checkout"]["worktree"])
        .collect();
    assert_eq!(
        across.len(),
        1,
        "the cross-worktree pair is listed once: {:#}",
        from_beta["overlaps"]
    );
    let across = across[0];
    let sides: BTreeSet<(String, String)> =
        [side(across), side(&across["with"])].into_iter().collect();
    assert_eq!(
        sides,
        BTreeSet::from([
            (display(&alpha), "p1".to_string()),
            (display(&beta), "p1".to_string()),
        ]),
        "both sides named by peer and checkout: {across:#}"
    );
    // `theirs` is the top-level side's path, `yours` the `with` side's.
    let (theirs, yours) = if across["checkout"]["worktree"] == display(&alpha) {
        ("docs", "docs/guide.md")
    } else {
        ("docs/guide.md", "docs")
    };
    assert_eq!(
        across["paths"],
        json!([{"yours": yours, "theirs": theirs}]),
        "{across:#}"
    );
    let within = overlaps
        .iter()
        .find(|o| o["checkout"]["worktree"] == o["with"]["checkout"]["worktree"])
        .unwrap();
    assert_eq!(
        within["checkout"]["worktree"],
        display(&alpha),
        "{within:#}"
    );

    // The same repository read from alpha (through the bridge) agrees.
    let from_alpha = scene.alpha2.answer("majordomus_peers", json!({})).await;
    assert_eq!(from_alpha["caller"], "p2");
    assert_eq!(from_alpha["boards"][0]["worktree"], display(&alpha));
    assert_eq!(
        gist(&from_alpha),
        gist(&from_beta),
        "alpha and beta see the same repository"
    );

    // `checkouts: this` reads one board and nothing else.
    let only_beta = scene
        .beta1
        .answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;
    assert_eq!(
        only_beta["boards"].as_array().map(Vec::len),
        Some(1),
        "{only_beta:#}"
    );
    assert_eq!(only_beta["boards"][0]["worktree"], display(&beta));
    assert_eq!(only_beta["count"], 1);
    assert_eq!(only_beta["complete"], true);
    assert_eq!(
        only_beta["overlaps"],
        json!([]),
        "beta's board alone holds no pair"
    );
    let only_alpha = scene
        .alpha1
        .answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;
    assert_eq!(only_alpha["count"], 2);
    assert_eq!(
        only_alpha["overlaps"].as_array().map(Vec::len),
        Some(1),
        "{only_alpha:#}"
    );

    scene.close().await;
}

/// (worktree, peer) of one side of a listed overlap.
fn side(side: &Value) -> (String, String) {
    (
        side["checkout"]["worktree"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        side["peer"].as_str().unwrap_or_default().to_string(),
    )
}

/// What a listing says regardless of who asked: the peers, the overlap pairs and the boards,
/// without the caller and the `this_checkout` flags.
fn gist(list: &Value) -> Value {
    let mut peers: Vec<Value> = list["peers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            json!({
                "worktree": p["checkout"]["worktree"], "branch": p["checkout"]["branch"],
                "id": p["id"], "client": p["client"], "attached": p["attached"],
                "claims": p["claims"], "transport": p["transport"],
            })
        })
        .collect();
    peers.sort_by_key(|p| p.to_string());
    let mut overlaps: Vec<Value> = list["overlaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let mut pair = [side(o), side(&o["with"])];
            let mut paths: Vec<(String, String)> = o["paths"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p["theirs"].as_str().unwrap().into(),
                        p["yours"].as_str().unwrap().into(),
                    )
                })
                .collect();
            if pair[0] > pair[1] {
                pair.swap(0, 1);
                paths = paths.into_iter().map(|(a, b)| (b, a)).collect();
            }
            paths.sort();
            json!({"pair": pair, "paths": paths})
        })
        .collect();
    overlaps.sort_by_key(|o| o.to_string());
    let mut boards: Vec<Value> = list["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            json!({
                "id": b["id"], "worktree": b["worktree"], "branch": b["branch"],
                "standing": b["standing"], "url": b["url"], "attached": b["attached"],
                "reason": b["reason"],
            })
        })
        .collect();
    boards.sort_by_key(|b| b.to_string());
    json!({
        "count": list["count"], "silent": list["silent"], "complete": list["complete"],
        "peers": peers, "overlaps": overlaps, "boards": boards,
    })
}

/// 4. One client holds several claims side by side; re-announcing a name replaces that claim
///    and says what it released; the listing shows them in name order, unnamed first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_claims_stand_side_by_side_and_a_narrower_one_releases_paths() {
    let repo = TempRepo::new();
    let client = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.0").await;
    let announce = |args: Value| client.answer("majordomus_announce", args);

    let review = announce(
        json!({"intent": "review the parser", "scope": ["src", "docs"], "claim": "review"}),
    )
    .await;
    assert_eq!(review["released"], json!([]));
    let bench =
        announce(json!({"intent": "add benchmarks", "scope": ["benches"], "claim": "bench"})).await;
    assert_eq!(bench["released"], json!([]));
    let main = announce(json!({"intent": "fix the tests", "scope": ["tests"]})).await;
    assert_eq!(main["released"], json!([]));
    assert_eq!(
        main["overlaps"],
        json!([]),
        "a peer's own claims never overlap each other"
    );
    assert_eq!(main["claims"].as_array().map(Vec::len), Some(3), "{main:#}");

    let narrower = announce(
        json!({"intent": "review the parser only", "scope": ["src/parser"], "claim": "review"}),
    )
    .await;
    assert_eq!(
        narrower["released"],
        json!(["docs"]),
        "`src` still meets `src/parser`; `docs` is released: {narrower:#}"
    );

    let list = client
        .answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;
    let me = find(&list["peers"], "id", "p1");
    let claims = me["claims"].as_array().unwrap();
    assert_eq!(
        claims.len(),
        3,
        "both named claims and the unnamed one: {me:#}"
    );
    assert!(
        claims[0].get("name").is_none(),
        "the unnamed claim first: {me:#}"
    );
    assert_eq!(claims[0]["intent"], "fix the tests");
    assert_eq!(claims[1]["name"], "bench", "then by name: {me:#}");
    assert_eq!(claims[2]["name"], "review");
    assert_eq!(
        claims[2]["scope"],
        json!(["src/parser"]),
        "the replaced claim: {me:#}"
    );
    assert_eq!(
        me["announcement"]["name"], "review",
        "the most recent announcement: {me:#}"
    );
    assert_eq!(me["announcement"]["intent"], "review the parser only");
    client.close().await;
}

/// 5. A client that leaves holding a claim stays listed, detached, and its claim still meets
///    others; one that leaves with no claim is gone; `silent` counts attached peers without
///    claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn departed_claims_outlive_their_connection_and_silent_peers_are_counted() {
    let repo = TempRepo::new();
    let owner = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.0").await;
    owner
        .answer(
            "majordomus_announce",
            json!({"intent": "rework the parser", "scope": ["src/parser"]}),
        )
        .await;
    let claimer = McpClient::stdio(&repo, repo.root(), "codex", "0.98.0").await;
    let claimed = claimer
        .answer(
            "majordomus_announce",
            json!({"intent": "tidy the AST", "scope": ["src/parser/ast.rs"]}),
        )
        .await;
    assert_eq!(claimed["id"], "p2");
    let quiet = McpClient::stdio(&repo, repo.root(), "cursor", "1.7.0").await;
    let silent = McpClient::stdio(&repo, repo.root(), "gemini-cli", "0.20.0").await;

    let list = owner.answer("majordomus_peers", json!({})).await;
    assert_eq!(list["count"], 4, "{list:#}");
    assert_eq!(
        list["silent"], 2,
        "two attached peers claim nothing: {list:#}"
    );
    assert_eq!(
        list["overlaps"].as_array().map(Vec::len),
        Some(1),
        "{list:#}"
    );

    claimer.close().await;
    let list = eventually("p2 to be listed as departed", || async {
        let list = owner.answer("majordomus_peers", json!({})).await;
        let p2 = find(&list["peers"], "id", "p2");
        if p2["attached"] == false {
            Ok(list)
        } else {
            Err(format!("{p2}"))
        }
    })
    .await;
    let p2 = find(&list["peers"], "id", "p2");
    assert_eq!(
        p2["claims"][0]["scope"],
        json!(["src/parser/ast.rs"]),
        "its claim stays: {p2:#}"
    );
    assert_eq!(list["count"], 3, "a departed peer is not counted: {list:#}");
    let overlaps = list["overlaps"].as_array().unwrap();
    assert_eq!(
        overlaps.len(),
        1,
        "the departed claim still meets p1's: {list:#}"
    );
    let departed_side = if overlaps[0]["peer"] == "p2" {
        &overlaps[0]
    } else {
        &overlaps[0]["with"]
    };
    assert_eq!(departed_side["peer"], "p2");
    assert_eq!(departed_side["attached"], false, "{list:#}");

    quiet.close().await;
    let list = eventually("p3 (no claim) to be gone", || async {
        let list = owner.answer("majordomus_peers", json!({})).await;
        let ids: Vec<&str> = list["peers"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["id"].as_str())
            .collect();
        if ids.contains(&"p3") {
            Err(format!("{ids:?}"))
        } else {
            Ok(list)
        }
    })
    .await;
    let ids: BTreeSet<&str> = list["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(ids, BTreeSet::from(["p1", "p2", "p4"]), "{list:#}");
    assert_eq!(list["count"], 2, "{list:#}");
    assert_eq!(
        list["silent"], 1,
        "p4 is attached and claims nothing: {list:#}"
    );

    // A new claim meeting the departed one is told of it, marked detached.
    let told = silent
        .answer(
            "majordomus_announce",
            json!({"intent": "document the AST", "scope": ["src/parser/ast.rs"]}),
        )
        .await;
    let with_p2 = find(&told["overlaps"], "peer", "p2");
    assert_eq!(with_p2["attached"], false, "{told:#}");
    assert_eq!(with_p2["intent"], "tidy the AST");
    find(&told["overlaps"], "peer", "p1");

    silent.close().await;
    owner.close().await;
}

/// 6. A sibling killed with `kill -9` reads as a stale, empty board and the answer is still
///    complete; a frozen sibling makes the answer incomplete, with a reason naming its URL,
///    once what this server keeps of its board is older than the probe timeout, until it runs
///    again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_sibling_reads_empty_and_a_hung_one_makes_the_answer_incomplete() {
    let repo = TempRepo::new();
    let beta = repo.add_worktree("beta");
    let here = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.0").await;

    // beta served by `majordomus serve`, with one peer connected straight over HTTP (a bridge
    // would re-elect and keep beta's board alive after the kill, which is not this test).
    let (mut killed, first_lease) = ServeProcess::start(&repo, &beta).await;
    let worker = McpClient::http(&first_lease, "codex", "0.98.0").await;
    worker
        .answer(
            "majordomus_announce",
            json!({"intent": "port the CLI", "scope": ["src/cli"]}),
        )
        .await;
    let list = here.answer("majordomus_peers", json!({})).await;
    let board = board_of(&list, &beta);
    assert_eq!(board["standing"], "ready", "{list:#}");
    assert_eq!(board["attached"], 1);
    assert_eq!(peers_of(&list, &beta).len(), 1);

    killed.kill9().await;
    let list = here.answer("majordomus_peers", json!({})).await;
    let board = board_of(&list, &beta);
    assert_eq!(board["standing"], "stale", "{list:#}");
    assert_eq!(board["attached"], 0, "{list:#}");
    assert!(
        board["reason"].is_null(),
        "a dead server's board is read as empty: {board:#}"
    );
    assert!(peers_of(&list, &beta).is_empty(), "{list:#}");
    assert_eq!(list["complete"], true, "{list:#}");
    drop(worker);

    // A new server takes beta over; then it is frozen.
    let (mut frozen, lease) = ServeProcess::start(&repo, &beta).await;
    let list = here.answer("majordomus_peers", json!({})).await;
    assert_eq!(board_of(&list, &beta)["standing"], "ready", "{list:#}");
    assert_eq!(list["complete"], true);

    frozen.freeze().await;
    let list = eventually("a hung sibling not to be read as empty", || async {
        let list = here.answer("majordomus_peers", json!({})).await;
        match list["complete"] == false {
            true => Ok(list),
            false => Err(format!("{:#}", board_of(&list, &beta))),
        }
    })
    .await;
    let board = board_of(&list, &beta);
    let reason = board["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(lease.url()),
        "the reason names {}: {board:#}",
        lease.url()
    );
    assert_eq!(
        board_of(&list, repo.root())["reason"],
        Value::Null,
        "the caller's board is read"
    );

    frozen.thaw();
    eventually("the listing to be complete again", || async {
        let list = here.answer("majordomus_peers", json!({})).await;
        if list["complete"] == true {
            Ok(())
        } else {
            Err(format!("{:#}", board_of(&list, &beta)))
        }
    })
    .await;
    here.close().await;
    // `frozen` is continued and killed by its guard even when an assertion fails above.
}

/// The probe timeout of the repositories whose sibling boards are kept in memory, and so the
/// bound on a kept board's age: long enough that a loaded machine's scheduling does not pass
/// for a hung sibling.
const KEPT_PROBE_TIMEOUT_MS: u64 = 1000;

/// A repository whose checkouts read [`KEPT_PROBE_TIMEOUT_MS`]: the primary served by an MCP
/// client's process, the linked worktree `beta` by `majordomus serve` with one peer over HTTP
/// that claims `src/cli`, and the primary following beta, its board listed from memory.
struct Followed {
    repo: TempRepo,
    beta: PathBuf,
    here: McpClient,
    beta_server: ServeProcess,
    beta_lease: LeaseFile,
    worker: McpClient,
}

impl Followed {
    async fn new() -> Followed {
        let repo = TempRepo::new();
        let beta = repo.add_worktree("beta");
        let timings = format!("[timings]\nprobe_timeout_ms = {KEPT_PROBE_TIMEOUT_MS}\n");
        for checkout in [repo.root(), beta.as_path()] {
            std::fs::write(checkout.join("majordomus.toml"), &timings).unwrap();
        }
        let here = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.0").await;
        let (beta_server, beta_lease) = ServeProcess::start(&repo, &beta).await;
        let worker = McpClient::http(&beta_lease, "codex", "0.98.0").await;
        worker
            .answer(
                "majordomus_announce",
                json!({"intent": "port the CLI", "scope": ["src/cli"]}),
            )
            .await;
        // The first listing asks beta and starts following it.
        eventually("beta's board to be listed from memory", || async {
            let list = here.answer("majordomus_peers", json!({})).await;
            kept_age(&list, &beta)
                .map(|_| ())
                .ok_or_else(|| format!("{:#}", board_of(&list, &beta)))
        })
        .await;
        Followed {
            repo,
            beta,
            here,
            beta_server,
            beta_lease,
            worker,
        }
    }
}

/// How many milliseconds ago `checkout`'s board, listed from memory, was confirmed; `None` when
/// it was asked for the listing.
fn kept_age(list: &Value, checkout: &Path) -> Option<u64> {
    board_of(list, checkout)["age_ms"].as_u64()
}

/// 8. A server keeps its siblings' boards in memory: a sibling's announce is listed from memory
///    within the bound (the probe timeout), its stated age within it. A sibling killed is never
///    listed from memory, and the server that takes its place is followed in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_siblings_announce_is_listed_from_memory_within_the_bound() {
    let Followed {
        repo,
        beta,
        here,
        mut beta_server,
        worker,
        ..
    } = Followed::new().await;
    let bound = std::time::Duration::from_millis(KEPT_PROBE_TIMEOUT_MS);

    worker
        .answer(
            "majordomus_announce",
            json!({"intent": "split the parser", "scope": ["src/parser"]}),
        )
        .await;
    let announced = std::time::Instant::now();
    let (list, age) = loop {
        let list = here.answer("majordomus_peers", json!({})).await;
        let listed = peers_of(&list, &beta)
            .iter()
            .any(|peer| peer["announcement"]["intent"] == "split the parser");
        if let (true, Some(age)) = (listed, kept_age(&list, &beta)) {
            break (list, age);
        }
        assert!(
            announced.elapsed() <= bound,
            "beta's announce was not listed from memory within {bound:?}: {list:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert!(age < KEPT_PROBE_TIMEOUT_MS, "{list:#}");
    assert_eq!(list["complete"], true, "{list:#}");
    assert_eq!(board_of(&list, &beta)["standing"], "ready");

    beta_server.kill9().await;
    let list = here.answer("majordomus_peers", json!({})).await;
    let board = board_of(&list, &beta);
    assert_eq!(board["standing"], "stale", "{list:#}");
    assert!(
        board["age_ms"].is_null(),
        "a dead server's board is not kept: {board:#}"
    );
    assert!(peers_of(&list, &beta).is_empty(), "{list:#}");
    drop(worker);

    let (_again, lease) = ServeProcess::start(&repo, &beta).await;
    eventually(
        "the new server's board to be listed from memory",
        || async {
            let list = here.answer("majordomus_peers", json!({})).await;
            let board = board_of(&list, &beta);
            match (kept_age(&list, &beta), board["url"].as_str()) {
                (Some(_), Some(url)) if url == lease.url() => Ok(()),
                _ => Err(format!("{board:#}")),
            }
        },
    )
    .await;
    here.close().await;
}

/// 9. What is kept of a sibling's board does not hide a hung sibling: once it is older than
///    the bound, the sibling is asked and reported unread — within the bound and one probe
///    timeout — and every listing until then states an age within the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_sibling_is_reported_unread_once_its_kept_board_is_too_old() {
    let Followed {
        repo: _repo,
        beta,
        here,
        mut beta_server,
        beta_lease,
        worker,
    } = Followed::new().await;
    let probe = std::time::Duration::from_millis(KEPT_PROBE_TIMEOUT_MS);
    // The bound, a live read's probe timeout, and a margin for a loaded machine.
    let limit = probe * 3;

    beta_server.freeze().await;
    let frozen = std::time::Instant::now();
    let board = loop {
        let list = here.answer("majordomus_peers", json!({})).await;
        let board = board_of(&list, &beta).clone();
        if list["complete"] == false {
            break board;
        }
        let age = board["age_ms"]
            .as_u64()
            .unwrap_or_else(|| panic!("a frozen sibling can only be read from memory: {board:#}"));
        assert!(age < KEPT_PROBE_TIMEOUT_MS, "{board:#}");
        assert!(
            frozen.elapsed() <= limit,
            "the frozen sibling was still listed as read after {limit:?}: {board:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(
        frozen.elapsed() <= limit,
        "reported unread only after {:?}",
        frozen.elapsed()
    );
    let reason = board["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(beta_lease.url()), "{board:#}");
    assert!(board["age_ms"].is_null(), "{board:#}");

    beta_server.thaw();
    drop(worker);
    here.close().await;
}

/// 10. A serving process keeps its repository listing between calls, and each answer is the
///     listing made at that instant: every caller is named in its own, a followed board's age
///     is this call's, and a claim here (with the overlap it makes with a sibling's), a lease
///     and a message each show in the very next listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_repository_listing_shows_each_change_in_the_next_answer() {
    let Followed {
        repo,
        beta,
        here,
        worker,
        beta_server: _beta_server,
        ..
    } = Followed::new().await;
    let lease = read_lease(repo.root()).expect("the primary's client serves it");
    let other = McpClient::http(&lease, "gemini-cli", "0.30.0").await;
    let rest = || peers_rest(&lease);
    let mine = here.answer("majordomus_peers", json!({})).await;
    let theirs = other.answer("majordomus_peers", json!({})).await;
    let nobodys = rest().await;
    assert!(mine["caller"].is_string(), "{mine:#}");
    assert!(theirs["caller"].is_string(), "{theirs:#}");
    assert_ne!(mine["caller"], theirs["caller"]);
    assert!(nobodys["caller"].is_null(), "{nobodys:#}");
    assert_eq!(theirs["peers"], nobodys["peers"]);
    let ages: Vec<u64> = futures::future::join_all((0..5).map(|_| async {
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        let list = rest().await;
        kept_age(&list, &beta)
            .unwrap_or_else(|| panic!("beta's board is listed from memory: {list:#}"))
    }))
    .await;
    assert!(
        ages.iter().all(|age| *age < KEPT_PROBE_TIMEOUT_MS),
        "every age is within the bound: {ages:?}"
    );

    here.answer(
        "majordomus_announce",
        json!({"intent": "rename the flags", "scope": ["src/cli/flags.rs"]}),
    )
    .await;
    let list = other.answer("majordomus_peers", json!({})).await;
    assert!(
        list["peers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|peer| peer["announcement"]["intent"] == "rename the flags"),
        "the claim is listed at once: {list:#}"
    );
    let overlaps = list["overlaps"].to_string();
    assert!(
        overlaps.contains("src/cli/flags.rs") && overlaps.contains(&display(&beta)),
        "the claim meets beta's `src/cli` at once: {list:#}"
    );

    let granted = other
        .answer(
            "majordomus_lease",
            json!({"name": "deploy", "wait_secs": 5}),
        )
        .await;
    assert_eq!(granted["state"], "granted", "{granted:#}");
    let list = rest().await;
    assert_eq!(list["leases"][0]["name"], "deploy", "{list:#}");
    other
        .answer("majordomus_release", json!({"name": "deploy"}))
        .await;
    let list = here.answer("majordomus_peers", json!({})).await;
    assert!(list.get("leases").is_none(), "{list:#}");

    let recipient = peers_of(&list, &beta)[0]["qualified_id"].clone();
    let sent = here
        .answer(
            "majordomus_send",
            json!({"to": recipient, "text": "may I take src/cli/flags.rs?"}),
        )
        .await;
    assert_eq!(sent["to"][0]["qualified_id"], recipient, "{sent:#}");
    let list = rest().await;
    assert_eq!(list["messages_queued"], 1, "{list:#}");

    drop(worker);
    other.close().await;
    here.close().await;
}

fn board_of<'a>(list: &'a Value, checkout: &Path) -> &'a Value {
    find(&list["boards"], "worktree", &display(checkout))
}

fn peers_of<'a>(list: &'a Value, checkout: &Path) -> Vec<&'a Value> {
    list["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["checkout"]["worktree"] == display(checkout))
        .collect()
}

/// 7. Over plain REST there is no announce: a claim belongs to an MCP session, and plain HTTP
///    has none (the route is not offered, and the answer says where the routes are listed);
///    `GET /api/v1/peers` answers with the shape MCP does, encoded as its value is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_offers_no_announce_and_rest_listing_matches_mcp() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let bearer = format!("Bearer {}", lease.token);
    let announce_url = format!("{}/api/v1/peers/announce", lease.url());

    let refused = http()
        .post(&announce_url)
        .header(AUTHORIZATION, &bearer)
        .json(&json!({"intent": "x", "scope": ["src"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    let body: Value = refused.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("/openapi.json"),
        "the refusal says where the routes are: {body:#}"
    );

    let client = McpClient::http(&lease, "claude-code", "2.1.0").await;
    client
        .answer(
            "majordomus_announce",
            json!({"intent": "x", "scope": ["src"]}),
        )
        .await;
    let over_mcp = client.answer("majordomus_peers", json!({})).await;
    let listed = http()
        .get(format!("{}/api/v1/peers", lease.url()))
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), StatusCode::OK);
    let body = listed.text().await.unwrap();
    let over_rest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        serde_json::to_string(&over_rest).unwrap(),
        body,
        "the body is the answer's value as JSON, its keys in order as every surface writes them"
    );
    assert_eq!(
        keys(&over_rest),
        keys(&over_mcp),
        "REST:\n{over_rest:#}\nMCP:\n{over_mcp:#}"
    );
    assert_eq!(over_rest["count"], 1);
    assert_eq!(over_rest["peers"][0]["claims"][0]["scope"], json!(["src"]));
    assert!(
        over_rest["caller"].is_null(),
        "a REST call is no peer: {over_rest:#}"
    );
    assert_eq!(over_mcp["caller"], "p1");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_switched_while_serving_shows_in_the_next_listing() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let linked = repo.add_worktree("linked");
    let (_server, lease) = ServeProcess::start(&repo, &root).await;
    let list = || peers_rest(&lease);
    let before = list().await;
    assert_eq!(board_of(&before, &root)["branch"], "main");
    assert_eq!(board_of(&before, &linked)["branch"], "linked");

    git(&root, &["checkout", "--quiet", "-b", "topic"]);
    git(&linked, &["checkout", "--quiet", "-b", "renamed"]);
    let after = list().await;
    assert_eq!(board_of(&after, &root)["branch"], "topic", "{after:#}");
    assert_eq!(board_of(&after, &linked)["branch"], "renamed", "{after:#}");
}

/// This board's listing is made once and kept between calls, yet never outlives what it
/// lists: a claim announced after a listing is in the next one, a departed peer's ages grow
/// while nothing else changes, an MCP caller is named in its own answer, and the REST body
/// is the listing's JSON exactly as its value writes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_listing_shows_every_change_and_ages_as_they_grow() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let list = || async {
        let body = http()
            .get(format!("{}/api/v1/peers?checkouts=this", lease.url()))
            .bearer_auth(&lease.token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let listing: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            serde_json::to_string(&listing).unwrap(),
            body,
            "the body is the answer's value as JSON"
        );
        listing
    };
    let client = McpClient::http(&lease, "claude-code", "2.1.0").await;
    let before = list().await;
    assert_eq!(before["peers"][0]["claims"], json!([]), "{before:#}");
    assert_eq!(list().await, before, "nothing changed");

    client
        .answer(
            "majordomus_announce",
            json!({"intent": "parse", "scope": ["src/parser"]}),
        )
        .await;
    let after = list().await;
    assert_eq!(
        after["peers"][0]["claims"][0]["scope"],
        json!(["src/parser"]),
        "{after:#}"
    );
    client
        .answer(
            "majordomus_announce",
            json!({"intent": "lex", "scope": ["src/lexer"], "claim": "lexer"}),
        )
        .await;
    let again = list().await;
    assert_eq!(again["peers"][0]["claims"][1]["name"], "lexer", "{again:#}");
    let over_mcp = client
        .answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;
    assert_eq!(over_mcp["caller"], "p1", "{over_mcp:#}");
    assert!(list().await["caller"].is_null());

    client.close().await;
    let departed = eventually("p1 to be listed as departed", || async {
        let listing = list().await;
        if listing["peers"][0]["attached"] == false {
            Ok(listing)
        } else {
            Err(format!("{listing}"))
        }
    })
    .await;
    let ages = |listing: &Value| {
        let peer = &listing["peers"][0];
        (
            peer["last_seen_seconds_ago"].as_u64().unwrap(),
            peer["left_seconds_ago"].as_u64().unwrap(),
        )
    };
    let (seen, left) = ages(&departed);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let later = list().await;
    assert!(
        ages(&later).0 > seen && ages(&later).1 > left,
        "ages grow while nothing changes: {departed:#}\n{later:#}"
    );
}
