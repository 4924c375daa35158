//! A truthful board: an announce sees every worktree's board and says which it could not
//! read; a departed peer's claims live for a grace and are then released (and journalled),
//! unless their worker comes back; what each worktree actually changed is on the board and
//! meets claims; and paths are compared as the file system has them.
//!
//! Real processes in real temporary git repositories with linked worktrees, real rmcp
//! clients; every wait is a bounded poll.

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

const ANNOUNCE: &str = "majordomus_announce";
const PEERS: &str = "majordomus_peers";
const ATTACH: &str = "majordomus_session_attach";

/// The probe timeout every test here runs with (the default).
const PROBE_TIMEOUT: Duration = Duration::from_millis(300);

/// The first scenario users met: a live peer in the primary checkout claims `src`, a peer in
/// worktree `wt1` announces `src/main.rs` and must be told, naming the primary's checkout and
/// branch. With a sibling frozen, the announce still answers within the probe timeout (plus
/// a generous margin) and names the board it could not read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_in_a_worktree_meets_the_primarys_claim_and_names_a_hung_board() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let wt1 = repo.add_worktree("wt1");
    let frozen_checkout = repo.add_worktree("frozen");

    let primary = McpClient::stdio(&repo, &root, "claude-code", "2.1.0").await;
    primary
        .answer(
            ANNOUNCE,
            json!({"intent": "restructure src", "scope": ["src"]}),
        )
        .await;
    let worker = McpClient::stdio(&repo, &wt1, "codex", "0.98.0").await;
    let told = worker
        .answer(
            ANNOUNCE,
            json!({"intent": "fix main", "scope": ["src/main.rs"]}),
        )
        .await;
    assert_eq!(told["complete"], true, "{told:#}");
    assert_eq!(told["boards_unread"], json!([]), "{told:#}");
    let overlaps = told["overlaps"].as_array().unwrap();
    assert_eq!(overlaps.len(), 1, "{told:#}");
    let overlap = &overlaps[0];
    assert_eq!(overlap["peer"], "p1");
    assert_eq!(overlap["attached"], true);
    assert_eq!(overlap["kind"], "claim");
    assert_eq!(overlap["intent"], "restructure src");
    assert_eq!(
        overlap["checkout"]["worktree"],
        display(&root),
        "{overlap:#}"
    );
    assert_eq!(overlap["checkout"]["branch"], "main", "{overlap:#}");
    assert_eq!(overlap["checkout"]["this_checkout"], false);
    assert_eq!(
        overlap["paths"],
        json!([{"yours": "src/main.rs", "theirs": "src"}])
    );
    assert_eq!(
        told["change_overlaps"],
        json!([]),
        "nothing is changed anywhere"
    );

    // The primary's own announce meets wt1's claim the same way.
    let back = primary
        .answer(
            ANNOUNCE,
            json!({"intent": "restructure src", "scope": ["src"]}),
        )
        .await;
    let from_wt1 = find(&back["overlaps"], "peer", "p1");
    assert_eq!(from_wt1["checkout"]["worktree"], display(&wt1), "{back:#}");
    assert_eq!(from_wt1["checkout"]["branch"], "wt1");

    // A sibling whose server hangs: the announce answers and names the board it missed, once
    // what wt1's server may keep of that board is older than the probe timeout.
    let (mut frozen, lease) = ServeProcess::start(&repo, &frozen_checkout).await;
    frozen.freeze().await;
    let bound = PROBE_TIMEOUT + Duration::from_secs(5);
    let told = eventually("the announce to name the hung board", || async {
        let told = tokio::time::timeout(
            bound,
            worker.call(
                ANNOUNCE,
                json!({"intent": "fix main again", "scope": ["src/main.rs"]}),
            ),
        )
        .await
        .unwrap_or_else(|_| {
            panic!("an announce did not answer within {bound:?} with a hung sibling")
        })
        .expect("the announce is accepted");
        match told["complete"] == false {
            true => Ok(told),
            false => Err(format!("{told:#}")),
        }
    })
    .await;
    let unread = told["boards_unread"].as_array().unwrap();
    assert_eq!(unread.len(), 1, "only the hung board is unread: {told:#}");
    assert_eq!(unread[0]["worktree"], display(&frozen_checkout));
    assert_eq!(unread[0]["branch"], "frozen");
    let reason = unread[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("did not answer within 300 ms") || reason.contains(lease.url()),
        "the reason says what happened: {reason}"
    );
    assert_eq!(
        told["overlaps"][0]["checkout"]["worktree"],
        display(&root),
        "the boards it could read still count: {told:#}"
    );

    frozen.thaw();
    worker.close().await;
    primary.close().await;
}

/// A repository whose `majordomus.toml` gives departed claims a 2 s grace, served by
/// `majordomus serve` in its primary checkout.
async fn repository_with_claim_grace() -> (TempRepo, ServeProcess, LeaseFile) {
    let repo = TempRepo::new();
    fs::write(
        repo.root().join("majordomus.toml"),
        "[timings]\nclaim_grace_secs = 2\n",
    )
    .unwrap();
    git(repo.root(), &["add", "majordomus.toml"]);
    git(
        repo.root(),
        &["commit", "--quiet", "-m", "a short claim grace"],
    );
    let (server, lease) = ServeProcess::start(&repo, repo.root()).await;
    (repo, server, lease)
}

/// An MCP session over HTTP that introduces itself as a bridge does, with a stable worker id.
async fn worker_session(lease: &LeaseFile, worker: &str) -> Service {
    let mut config = client_config("codex", "0.98.0");
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.0.0.insert("majordomus/worker".into(), json!(worker));
    config.meta = Some(meta);
    let transport = StreamableHttpClientTransport::with_client(
        http(),
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", lease.url()))
            .auth_header(lease.token.clone()),
    );
    tokio::time::timeout(BOUND, config.serve(transport))
        .await
        .expect("the session opens in time")
        .expect("the session opens")
}

/// The side of a listed overlap that is the peer holding a claim with `intent`: a listing
/// names each side's claims, and their intents are on the peers.
fn side_with_intent<'a>(list: &'a Value, intent: &str) -> &'a Value {
    let holder = list["peers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|peer| {
            peer["claims"]
                .as_array()
                .is_some_and(|claims| claims.iter().any(|claim| claim["intent"] == intent))
        })
        .unwrap_or_else(|| panic!("no peer claims `{intent}` in {list:#}"));
    let is_holder = |side: &Value| {
        side["peer"] == holder["id"] && side["checkout"]["id"] == holder["checkout"]["id"]
    };
    list["overlaps"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|o| {
            if is_holder(o) {
                Some(o)
            } else if is_holder(&o["with"]) {
                Some(&o["with"])
            } else {
                None
            }
        })
        .unwrap_or_else(|| panic!("no overlap with `{intent}` in {list:#}"))
}

/// The codex peers of this checkout's board.
fn codex_peers(list: &Value) -> Vec<&Value> {
    list["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["client"]["name"] == "codex")
        .collect()
}

/// With a 2 s claim grace: a departed peer's claim still overlaps, marked as departed, and
/// a returning worker (same worker id) gets it back; once the returned worker leaves for
/// good, its claim is released after the grace — gone from the board and recorded in the
/// journal under the episode it held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_departed_claim_lives_for_the_grace_comes_back_with_its_worker_then_is_released() {
    let (repo, _server, lease) = repository_with_claim_grace().await;
    let root = display(repo.root());
    let witness = McpClient::http(&lease, "witness", "1.0").await;

    let first = worker_session(&lease, "worker-1").await;
    call(&first, ATTACH, json!({"external_id": "conv-grace"}))
        .await
        .unwrap();
    call(
        &first,
        ANNOUNCE,
        json!({"intent": "port the parser", "scope": ["src/parser"]}),
    )
    .await
    .unwrap();
    let _ = first.cancel().await;

    // Departed: still on the board, still met, and marked so on every surface.
    let list = eventually("the worker to depart", || async {
        let list = witness.answer(PEERS, json!({"checkouts": "this"})).await;
        match codex_peers(&list).first() {
            Some(codex) if codex["attached"] == false => Ok(list),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let departed = codex_peers(&list)[0];
    assert!(
        departed["left_seconds_ago"].as_u64().is_some_and(|s| s < 2),
        "{departed:#}"
    );
    let told = witness
        .answer(
            ANNOUNCE,
            json!({"intent": "read the lexer", "scope": ["src/parser/lexer.rs"]}),
        )
        .await;
    let met = find(&told["overlaps"], "intent", "port the parser");
    assert_eq!(met["attached"], false, "{told:#}");
    assert!(met["left_seconds_ago"].is_u64(), "{told:#}");
    let people = run_cli(&repo, ["peers", "--repo", root.as_str()]).await;
    let text = String::from_utf8_lossy(&people.stdout);
    assert!(
        text.contains("left ") && text.contains(" s ago"),
        "people read when it left: {text}"
    );

    // The worker comes back within the grace: its claim is its own again, without a word.
    let again = worker_session(&lease, "worker-1").await;
    let list = witness.answer(PEERS, json!({"checkouts": "this"})).await;
    let codex = codex_peers(&list);
    assert_eq!(codex.len(), 1, "the former slot is gone: {list:#}");
    assert_eq!(codex[0]["attached"], true, "{list:#}");
    assert!(codex[0].get("left_seconds_ago").is_none(), "{list:#}");
    assert_eq!(codex[0]["claims"][0]["scope"], json!(["src/parser"]));
    assert_eq!(
        side_with_intent(&list, "port the parser")["attached"],
        true,
        "{list:#}"
    );

    // It resumes its episode and leaves for good: after the grace the claim is released.
    call(&again, ATTACH, json!({"external_id": "conv-grace"}))
        .await
        .unwrap();
    let _ = again.cancel().await;
    eventually("the departed claim to be released", || async {
        let list = witness.answer(PEERS, json!({"checkouts": "this"})).await;
        if codex_peers(&list).is_empty() && list["overlaps"] == json!([]) {
            Ok(())
        } else {
            Err(format!("{list:#}"))
        }
    })
    .await;
    let log = eventually("the release to be journalled", || async {
        let cli = run_cli(
            &repo,
            ["episodes", "log", "--json", "--repo", root.as_str()],
        )
        .await;
        let log: Value = serde_json::from_slice(&cli.stdout).map_err(|e| e.to_string())?;
        let released = log
            .as_array()
            .and_then(|episodes| episodes.iter().find(|e| e["external_id"] == "conv-grace"))
            .map(|episode| episode["released"].clone())
            .unwrap_or_default();
        if released.is_array() {
            Ok(released)
        } else {
            Err(format!("{log:#}"))
        }
    })
    .await;
    assert_eq!(log[0]["intent"], "port the parser", "{log:#}");
    assert_eq!(log[0]["scope"], json!(["src/parser"]));
    let text = run_cli(&repo, ["episodes", "log", "--repo", root.as_str()]).await;
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("released after its peer left: port the parser (src/parser)"),
        "{text}"
    );
    witness.close().await;
}

/// A resumed episode takes back the claims its departed peer held, on a new connection with
/// no worker id at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_episode_takes_back_its_departed_peers_claims() {
    let (_repo, _server, lease) = repository_with_claim_grace().await;
    let witness = McpClient::http(&lease, "witness", "1.0").await;
    let first = McpClient::http(&lease, "codex", "0.98.0").await;
    first
        .answer(ATTACH, json!({"external_id": "conv-resume"}))
        .await;
    first
        .answer(ANNOUNCE, json!({"intent": "write docs", "scope": ["docs"]}))
        .await;
    first.close().await;
    eventually("the peer to depart", || async {
        let list = witness.answer(PEERS, json!({"checkouts": "this"})).await;
        match codex_peers(&list).first() {
            Some(codex) if codex["attached"] == false => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    let second = McpClient::http(&lease, "codex", "0.98.0").await;
    let resumed = second
        .answer(ATTACH, json!({"external_id": "conv-resume"}))
        .await;
    assert_eq!(resumed["resumed"], true, "{resumed:#}");
    let list = witness.answer(PEERS, json!({"checkouts": "this"})).await;
    let codex = codex_peers(&list);
    assert_eq!(codex.len(), 1, "{list:#}");
    assert_eq!(codex[0]["attached"], true);
    assert_eq!(codex[0]["claims"][0]["scope"], json!(["docs"]), "{list:#}");
    second.close().await;
    witness.close().await;
}

/// What must not change when a capability is called: every worktree's `git status` and
/// every ref.
fn repository_state(repo: &TempRepo, worktrees: &[&Path]) -> String {
    let mut state = git(repo.root(), &["for-each-ref"]);
    for worktree in worktrees {
        state.push_str(&format!("--- {}\n", worktree.display()));
        state.push_str(&porcelain(worktree));
    }
    state
}

/// Calls a tool and checks that nothing in the repository moved.
async fn untouched(
    repo: &TempRepo,
    worktrees: &[&Path],
    client: &McpClient,
    tool: &str,
    arguments: Value,
) -> Value {
    let before = repository_state(repo, worktrees);
    let answer = client.answer(tool, arguments).await;
    assert_eq!(
        repository_state(repo, worktrees),
        before,
        "{tool} changed a worktree or a ref"
    );
    answer
}

/// The kinds of each changed path of one board, by path.
fn change_kinds(board: &Value) -> Vec<(String, Vec<String>)> {
    board["changes"]["paths"]
        .as_array()
        .unwrap_or_else(|| panic!("the board carries its changes: {board:#}"))
        .iter()
        .map(|changed| {
            (
                changed["path"].as_str().unwrap().to_owned(),
                changed["kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

fn pairs(paths: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    paths
        .iter()
        .map(|(path, kinds)| {
            (
                (*path).to_owned(),
                kinds.iter().map(|k| (*k).to_owned()).collect(),
            )
        })
        .collect()
}

/// Worktree `beta` has a committed, a staged, an unstaged and an untracked change under
/// `src/parser`: each is on beta's board with its kind, and alpha's claim of `src/parser`
/// meets them, kinds named, in the announce answer and in the listing; beta's own peer's
/// claim never meets beta's own changes. The primary, which nobody serves, shows its own
/// change too. The listing follows `git stash -u`, a commit and a reset, and no call
/// touches a worktree or a ref.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_worktrees_changes_are_on_the_board_and_meet_claims_with_their_kinds() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    fs::create_dir_all(root.join("src/parser")).unwrap();
    fs::write(root.join("src/parser/mod.rs"), "// the parser\n").unwrap();
    // A board gives `git status` half the probe timeout; this busy machine gets plenty.
    fs::write(
        root.join("majordomus.toml"),
        "[timings]\nprobe_timeout_ms = 4000\n",
    )
    .unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "--quiet", "-m", "a parser"]);
    let alpha = repo.add_worktree("alpha");
    let beta = repo.add_worktree("beta");
    let worktrees = [root.as_path(), alpha.as_path(), beta.as_path()];

    fs::write(beta.join("src/parser/committed.rs"), "c\n").unwrap();
    git(&beta, &["add", "src/parser/committed.rs"]);
    git(&beta, &["commit", "--quiet", "-m", "committed in beta"]);
    fs::write(beta.join("src/parser/staged.rs"), "s\n").unwrap();
    git(&beta, &["add", "src/parser/staged.rs"]);
    fs::write(beta.join("src/parser/mod.rs"), "// edited in beta\n").unwrap();
    fs::write(beta.join("src/parser/new.rs"), "n\n").unwrap();
    fs::write(root.join("notes.md"), "the primary's own notes\n").unwrap();
    let four_kinds = pairs(&[
        ("src/parser/committed.rs", &["committed"]),
        ("src/parser/mod.rs", &["unstaged"]),
        ("src/parser/new.rs", &["untracked"]),
        ("src/parser/staged.rs", &["staged"]),
    ]);

    let beta_peer = McpClient::stdio(&repo, &beta, "gemini-cli", "0.20.0").await;
    let beta_claim = untouched(
        &repo,
        &worktrees,
        &beta_peer,
        ANNOUNCE,
        json!({"intent": "finish the parser", "scope": ["src/parser"]}),
    )
    .await;
    assert_eq!(
        beta_claim["change_overlaps"],
        json!([]),
        "beta's own changes are beta's own work: {beta_claim:#}"
    );
    let alpha_peer = McpClient::stdio(&repo, &alpha, "claude-code", "2.1.0").await;
    let told = untouched(
        &repo,
        &worktrees,
        &alpha_peer,
        ANNOUNCE,
        json!({"intent": "rewrite the parser", "scope": ["src/parser"]}),
    )
    .await;
    let changed = told["change_overlaps"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{told:#}");
    assert_eq!(changed[0]["kind"], "change");
    assert_eq!(changed[0]["checkout"]["worktree"], display(&beta));
    assert_eq!(changed[0]["checkout"]["branch"], "beta");
    let met: Vec<(String, String, Vec<String>)> = changed[0]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["yours"].as_str().unwrap().to_owned(),
                p["theirs"].as_str().unwrap().to_owned(),
                p["kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect();
    let expected: Vec<(String, String, Vec<String>)> = four_kinds
        .iter()
        .map(|(path, kinds)| ("src/parser".to_owned(), path.clone(), kinds.clone()))
        .collect();
    assert_eq!(met, expected, "{told:#}");

    // The primary has no server: its changes come from the background reading, with
    // their age.
    let list = eventually("the primary's changes to be read", || async {
        let list = untouched(&repo, &worktrees, &alpha_peer, PEERS, json!({})).await;
        let primary = find(&list["boards"], "worktree", &display(&root));
        if primary["changes"]["read_seconds_ago"].is_u64() {
            Ok(list)
        } else {
            Err(format!("{primary:#}"))
        }
    })
    .await;
    assert_eq!(
        change_kinds(find(&list["boards"], "worktree", &display(&root))),
        pairs(&[("notes.md", &["untracked"])])
    );
    assert_eq!(list["complete"], true, "{list:#}");
    let beta_board = find(&list["boards"], "worktree", &display(&beta));
    assert_eq!(change_kinds(beta_board), four_kinds, "{beta_board:#}");
    assert_eq!(
        change_kinds(find(&list["boards"], "worktree", &display(&alpha))),
        [],
        "alpha changed nothing"
    );
    let listed = list["change_overlaps"].as_array().unwrap();
    assert_eq!(
        listed.len(),
        1,
        "only alpha's claim meets beta's changes: {list:#}"
    );
    assert_eq!(listed[0]["checkout"]["worktree"], display(&beta));
    assert_eq!(listed[0]["with"]["kind"], "claim");
    assert_eq!(listed[0]["with"]["peer"], "p1");
    assert_eq!(listed[0]["with"]["checkout"]["worktree"], display(&alpha));
    assert_eq!(
        listed[0]["with"]["claims"],
        json!([null]),
        "its unnamed claim"
    );
    assert_eq!(listed[0]["paths"].as_array().map(Vec::len), Some(4));
    assert!(list["conflicts"]["pairs"].is_u64(), "{list:#}");
    let people = run_cli(&repo, ["peers", "--repo", alpha.to_str().unwrap()]).await;
    let text = String::from_utf8_lossy(&people.stdout);
    assert!(
        text.contains(&format!(
            "worktree {} (branch beta) has uncommitted changes to src/parser/committed.rs \
             (committed), src/parser/mod.rs (unstaged), src/parser/new.rs (untracked), \
             src/parser/staged.rs (staged); p1 in {} claims src/parser (unnamed claim)",
            beta.display(),
            alpha.display()
        )),
        "{text}"
    );
    let only_alpha = untouched(
        &repo,
        &worktrees,
        &alpha_peer,
        PEERS,
        json!({"checkouts": "this"}),
    )
    .await;
    assert!(
        only_alpha.get("conflicts").is_none(),
        "conflicts are predicted for the repository only: {only_alpha:#}"
    );

    git(&beta, &["stash", "--quiet", "-u"]);
    follow(
        (&repo, &worktrees, &alpha_peer, &beta),
        "the listing to follow `git stash -u`",
        pairs(&[("src/parser/committed.rs", &["committed"])]),
    )
    .await;
    git(&beta, &["stash", "pop", "--quiet"]);
    git(&beta, &["add", "-A"]);
    git(&beta, &["commit", "--quiet", "-m", "all of it"]);
    follow(
        (&repo, &worktrees, &alpha_peer, &beta),
        "the listing to follow a commit",
        pairs(&[
            ("src/parser/committed.rs", &["committed"]),
            ("src/parser/mod.rs", &["committed"]),
            ("src/parser/new.rs", &["committed"]),
            ("src/parser/staged.rs", &["committed"]),
        ]),
    )
    .await;
    git(&beta, &["reset", "--quiet", "--hard", "main"]);
    let list = follow(
        (&repo, &worktrees, &alpha_peer, &beta),
        "the listing to follow a reset",
        Vec::new(),
    )
    .await;
    assert_eq!(list["change_overlaps"], json!([]), "{list:#}");

    alpha_peer.close().await;
    beta_peer.close().await;
}

/// Polls the repository listing until beta's board shows `expected`, checking at each call
/// that nothing in the repository moved; returns that listing.
async fn follow(
    (repo, worktrees, client, beta): (&TempRepo, &[&Path], &McpClient, &Path),
    label: &str,
    expected: Vec<(String, Vec<String>)>,
) -> Value {
    eventually(label, || async {
        let list = untouched(repo, worktrees, client, PEERS, json!({})).await;
        let kinds = change_kinds(find(&list["boards"], "worktree", &display(beta)));
        if kinds == expected {
            Ok(list)
        } else {
            Err(format!("{kinds:?}"))
        }
    })
    .await
}

/// A primary checkout with `alias -> src` (a link inside the repository), a Next.js route
/// `app/[slug]/page.tsx` beside `app/other.ts`, and `out -> ../outside` (a link out of it),
/// all committed, and a linked worktree `wt` of it.
fn repository_with_links() -> (TempRepo, PathBuf) {
    let repo = TempRepo::new();
    let root = repo.root();
    fs::write(root.join("src/a.rs"), "// a\n").unwrap();
    symlink("src", root.join("alias")).unwrap();
    fs::create_dir_all(root.join("app/[slug]")).unwrap();
    fs::write(root.join("app/[slug]/page.tsx"), "export default 1;\n").unwrap();
    fs::write(root.join("app/other.ts"), "export {};\n").unwrap();
    fs::create_dir_all(repo.base().join("outside")).unwrap();
    symlink("../outside", root.join("out")).unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "--quiet", "-m", "links and a route"]);
    let wt = repo.add_worktree("wt");
    (repo, wt)
}

/// Paths as the file system has them: `alias/a.rs` meets `src/a.rs` (on one board, and
/// across worktrees, where the resolution travels with the claim); `app/[slug]/page.tsx`,
/// existing, is that file and does not meet `app/other.ts`; a path through a link out of
/// the repository is refused with a message naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_meet_as_the_file_system_has_their_paths() {
    let (repo, wt) = repository_with_links();
    let root = repo.root().to_path_buf();
    let first = McpClient::stdio(&repo, &root, "claude-code", "2.1.0").await;
    first
        .answer(
            ANNOUNCE,
            json!({"intent": "edit a and other", "scope": ["src/a.rs", "app/other.ts"]}),
        )
        .await;
    let second = McpClient::stdio(&repo, &root, "codex", "0.98.0").await;
    let through_link = second
        .answer(
            ANNOUNCE,
            json!({"intent": "edit a through the link", "scope": ["alias/a.rs"]}),
        )
        .await;
    let overlaps = through_link["overlaps"].as_array().unwrap();
    assert_eq!(overlaps.len(), 1, "{through_link:#}");
    assert_eq!(
        overlaps[0]["paths"],
        json!([{"yours": "alias/a.rs", "theirs": "src/a.rs"}]),
        "paths as each peer wrote them"
    );
    assert_eq!(through_link["claims"][0]["scope"], json!(["alias/a.rs"]));
    assert_eq!(through_link["claims"][0]["resolved"], json!(["src/a.rs"]));

    let route = second
        .answer(
            ANNOUNCE,
            json!({"intent": "the slug page", "scope": ["app/[slug]/page.tsx"], "claim": "route"}),
        )
        .await;
    assert_eq!(
        route["overlaps"],
        json!([]),
        "an existing bracketed name is a file, not a glob over `app`: {route:#}"
    );
    let glob = second
        .answer(
            ANNOUNCE,
            json!({"intent": "all routes", "scope": ["app/*.ts"], "claim": "glob"}),
        )
        .await;
    assert_eq!(
        glob["overlaps"][0]["paths"],
        json!([{"yours": "app/*.ts", "theirs": "app/other.ts"}]),
        "a glob that names no file is still a glob: {glob:#}"
    );

    let refused = second
        .call(
            ANNOUNCE,
            json!({"intent": "outside", "scope": ["src", "out/x.rs"]}),
        )
        .await
        .expect_err("a path leading out of the repository is refused");
    assert!(refused.contains("`out/x.rs`"), "{refused}");
    assert!(refused.contains("outside this checkout"), "{refused}");
    let me = second.answer(PEERS, json!({"checkouts": "this"})).await;
    let codex = find(&me["peers"], "id", "p2");
    assert_eq!(
        codex["claims"][0]["scope"],
        json!(["alias/a.rs"]),
        "the refused announce changed nothing: {codex:#}"
    );

    // Across worktrees: the primary's resolution travels with its claim.
    let other = McpClient::stdio(&repo, &wt, "gemini-cli", "0.20.0").await;
    let across = other
        .answer(ANNOUNCE, json!({"intent": "edit a", "scope": ["src/a.rs"]}))
        .await;
    let via_link = find(&across["overlaps"], "intent", "edit a through the link");
    assert_eq!(
        via_link["paths"],
        json!([{"yours": "src/a.rs", "theirs": "alias/a.rs"}]),
        "{across:#}"
    );
    assert_eq!(via_link["checkout"]["worktree"], display(&root));
    let list = other.answer(PEERS, json!({})).await;
    let linked = side_with_intent(&list, "edit a through the link");
    let direct = side_with_intent(&list, "edit a");
    let met = list["overlaps"].as_array().unwrap().iter().any(|o| {
        let sides = [
            (&o["peer"], &o["checkout"]),
            (&o["with"]["peer"], &o["with"]["checkout"]),
        ];
        sides.contains(&(&linked["peer"], &linked["checkout"]))
            && sides.contains(&(&direct["peer"], &direct["checkout"]))
    });
    assert!(met, "the listing meets them too: {list:#}");

    other.close().await;
    second.close().await;
    first.close().await;
}
