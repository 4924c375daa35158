//! Issue "server": one server per checkout, found through a private lease, reachable over MCP
//! (stdio and Streamable HTTP) and REST, guarded by its token, Host and Origin checks, and
//! elected exactly once however many processes start at the same time.
//!
//! Real processes in real temporary git repositories; every wait is a bounded poll.

mod common;

use common::*;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HOST, ORIGIN};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// 1. Two checkouts, two servers, two leases in the two git dirs, private, and nothing in the
///    working trees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_checkout_has_its_own_server_and_private_lease_outside_the_tree() {
    let repo = TempRepo::new();
    let linked = repo.add_worktree("linked");
    let (_primary_server, primary) = ServeProcess::start(&repo, repo.root()).await;
    let (_linked_server, secondary) = ServeProcess::start(&repo, &linked).await;

    assert_ne!(primary.pid, secondary.pid, "two server processes");
    assert_ne!(primary.url, secondary.url, "two addresses");
    assert_ne!(primary.token, secondary.token, "two secrets");

    assert_eq!(git_dir(repo.root()), repo.root().join(".git"));
    assert_eq!(git_dir(&linked), repo.root().join(".git/worktrees/linked"));
    for checkout in [repo.root(), linked.as_path()] {
        let lease = lease_path(checkout);
        assert!(lease.is_file(), "{} exists", lease.display());
        assert_eq!(
            mode(&lease),
            0o600,
            "{} is private to its owner",
            lease.display()
        );
        assert_eq!(
            mode(lease.parent().unwrap()),
            0o700,
            "the lease's directory is private"
        );
        let read = read_lease(checkout).unwrap();
        assert_eq!(read.raw["schema"], "majordomus-lease/v1");
        assert_eq!(read.raw["root"], display(checkout));
        assert!(read.token.len() >= 64, "a 256-bit token: {}", read.token);
        assert_eq!(
            porcelain(checkout),
            "",
            "the working tree of {} stays clean",
            checkout.display()
        );
    }

    let one = probe(primary.url()).await.unwrap();
    let two = probe(secondary.url()).await.unwrap();
    assert_eq!(one["name"], "majordomus");
    assert_ne!(
        one["checkout_id"], two["checkout_id"],
        "each serves its own checkout"
    );
    assert_eq!(
        one["git_id"], two["git_id"],
        "both belong to one repository"
    );
}

/// 2. rmcp's client over stdio (through `majordomus mcp`) and over HTTP (URL and token from the
///    lease) both see `majordomus_server` with its schemas, and its answer names both checkouts
///    `ready` with `this_checkout` right from each side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_over_stdio_and_http_reports_every_checkouts_server() {
    let repo = TempRepo::new();
    let linked = repo.add_worktree("linked");
    // The primary is served by the `majordomus mcp` its stdio client spawned; the linked
    // checkout by `majordomus serve`, reached over HTTP.
    let stdio = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.0").await;
    let primary = wait_ready(repo.root()).await;
    assert_eq!(
        Some(primary.pid),
        stdio.pid,
        "the first `majordomus mcp` serves the checkout itself"
    );
    let (_serve, lease) = ServeProcess::start(&repo, &linked).await;
    let http = McpClient::http(&lease, "claude-code", "2.1.0").await;

    for (client, this) in [(&stdio, repo.root()), (&http, linked.as_path())] {
        let tools = client.list_all_tools().await.expect("tools/list answers");
        for tool in &tools {
            let schemas = json!([tool.input_schema, tool.output_schema]);
            let formats = formats_in(&schemas);
            assert!(
                formats
                    .iter()
                    .all(|f| STANDARD_FORMATS.contains(&f.as_str())),
                "{} declares formats clients do not know: {formats:?}",
                tool.name
            );
            assert!(
                !json!(tool.input_schema).to_string().contains("\"null\""),
                "{}: an optional input is left out, never typed null: {:?}",
                tool.name,
                tool.input_schema
            );
        }
        let tool = tools
            .iter()
            .find(|tool| tool.name == "majordomus_server")
            .unwrap_or_else(|| panic!("majordomus_server is listed: {tools:?}"));
        assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
        assert!(
            tool.input_schema["properties"].get("checkouts").is_some(),
            "the input schema has `checkouts`: {:?}",
            tool.input_schema
        );
        let output = tool
            .output_schema
            .as_ref()
            .expect("majordomus_server has an output schema");
        assert!(
            output["properties"].get("servers").is_some(),
            "the output schema has `servers`: {output:?}"
        );
        assert_eq!(
            tool.annotations.as_ref().and_then(|a| a.read_only_hint),
            Some(true)
        );

        let answer = client.answer("majordomus_server", json!({})).await;
        assert_eq!(answer["standing"], "ready", "{answer:#}");
        let servers = answer["servers"].as_array().unwrap();
        assert_eq!(servers.len(), 2, "both checkouts: {answer:#}");
        assert_eq!(
            servers[0]["worktree"],
            display(this),
            "the answering checkout comes first"
        );
        for server in servers {
            let worktree = server["worktree"].as_str().unwrap();
            assert_eq!(server["standing"], "ready", "{server:#}");
            assert_eq!(
                server["this_checkout"],
                worktree == display(this),
                "{server:#}"
            );
            assert_eq!(
                server["primary"],
                worktree == display(repo.root()),
                "{server:#}"
            );
            assert!(server["lease"]["url"].is_string(), "{server:#}");
            assert!(
                server["lease"].get("token").is_none(),
                "answers never carry the token: {server:#}"
            );
        }
        assert_eq!(
            answer["this_process"]["pid"],
            if this == repo.root() {
                primary.pid
            } else {
                lease.pid
            }
        );
    }
    stdio.close().await;
    http.close().await;
}

/// 3. The REST surface: token, Host and Origin checks, input errors, the probe, the OpenAPI
///    document and the body limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_routes_are_guarded_and_say_what_was_wrong() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let url = lease.url();
    let bearer = format!("Bearer {}", lease.token);
    let status_url = format!("{url}/api/v1/server");

    let ok = http()
        .get(&status_url)
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    let status: Value = ok.json().await.unwrap();
    assert_eq!(status["standing"], "ready", "{status:#}");

    let by_query = http()
        .get(format!("{status_url}?token={}", lease.token))
        .send()
        .await
        .unwrap();
    assert_eq!(
        by_query.status(),
        StatusCode::OK,
        "the token may come as ?token="
    );

    let anonymous = http().get(&status_url).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let wrong = http()
        .get(&status_url)
        .header(AUTHORIZATION, "Bearer 00")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);

    let foreign_origin = http()
        .get(&status_url)
        .header(AUTHORIZATION, &bearer)
        .header(ORIGIN, "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign_origin.status(), StatusCode::FORBIDDEN);
    let loopback_origin = http()
        .get(&status_url)
        .header(AUTHORIZATION, &bearer)
        .header(ORIGIN, "http://localhost:3000")
        .send()
        .await
        .unwrap();
    assert_eq!(
        loopback_origin.status(),
        StatusCode::OK,
        "a loopback Origin is fine"
    );

    let foreign_host = http()
        .get(&status_url)
        .header(AUTHORIZATION, &bearer)
        .header(HOST, "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign_host.status(), StatusCode::FORBIDDEN);
    let probe_foreign_host = http()
        .get(format!("{url}/"))
        .header(HOST, "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        probe_foreign_host.status(),
        StatusCode::FORBIDDEN,
        "the probe checks Host too"
    );

    let bad_word = http()
        .get(format!("{status_url}?checkouts=everything"))
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(bad_word.status(), StatusCode::BAD_REQUEST);
    let refusal: Value = bad_word.json().await.unwrap();
    let message = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("repository") && message.contains("this"),
        "the message names the accepted words: {refusal:#}"
    );

    let identity = http().get(format!("{url}/")).send().await.unwrap();
    assert_eq!(
        identity.status(),
        StatusCode::OK,
        "the probe needs no token"
    );
    let identity: Value = identity.json().await.unwrap();
    assert_eq!(identity["name"], "majordomus");
    assert_eq!(identity["leaseholder"], true);
    assert_eq!(identity["checkout_id"], status["checkout_id"]);
    assert_eq!(identity["checkout_id"].as_str().map(str::len), Some(32));

    let openapi = http()
        .get(format!("{url}/openapi.json"))
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(openapi.status(), StatusCode::OK);
    let openapi: Value = openapi.json().await.unwrap();
    assert!(
        openapi["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "an OpenAPI 3.1 document: {}",
        openapi["openapi"]
    );
    let operations: Vec<&str> = openapi["paths"]
        .as_object()
        .expect("the document has paths")
        .values()
        .flat_map(|item| item.as_object().into_iter().flat_map(|ops| ops.values()))
        .filter_map(|operation| operation["operationId"].as_str())
        .collect();
    assert!(
        operations.contains(&"server.status"),
        "operationIds: {operations:?}"
    );

    // A body over 1 MiB, declared up front and sent chunked (its length unknown until read).
    let huge = vec![b' '; 1024 * 1024 + 1];
    let declared = raw_request(
        url,
        &format!(
            "POST /api/v1/hooks/edit HTTP/1.1\r\nAuthorization: {bearer}\r\n\
             Content-Type: application/json\r\nContent-Length: {}",
            huge.len()
        ),
        huge.clone(),
    )
    .await;
    let mut chunk = format!("{:x}\r\n", huge.len()).into_bytes();
    chunk.extend_from_slice(&huge);
    chunk.extend_from_slice(b"\r\n0\r\n\r\n");
    let chunked = raw_request(
        url,
        &format!(
            "POST /api/v1/hooks/edit HTTP/1.1\r\nAuthorization: {bearer}\r\n\
             Content-Type: application/json\r\nTransfer-Encoding: chunked"
        ),
        chunk,
    )
    .await;
    for too_big in [declared, chunked] {
        assert_eq!(too_big.status, 413, "{too_big:?}");
        let refusal: Value = serde_json::from_str(&too_big.body)
            .unwrap_or_else(|e| panic!("the refusal is JSON ({e}): {too_big:?}"));
        assert!(
            refusal["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("limit")),
            "it says what was wrong: {refusal:#}"
        );
        assert_eq!(
            too_big.header("connection"),
            Some("close"),
            "the unread body ends the connection, and the answer says so: {too_big:?}"
        );
    }

    // It keeps serving after all of that.
    let after = http()
        .get(&status_url)
        .header(AUTHORIZATION, &bearer)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), StatusCode::OK);
}

/// 4a. `kill -9` leaves a stale lease that `serve status` explains and the next `serve` takes
///     over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_reported_stale_and_taken_over() {
    let repo = TempRepo::new();
    let (mut first, old) = ServeProcess::start(&repo, repo.root()).await;
    first.kill9().await;
    assert!(
        lease_path(repo.root()).exists(),
        "kill -9 leaves its lease behind"
    );

    let status = serve_status(&repo, repo.root()).await;
    assert_eq!(status["standing"], "stale", "{status:#}");
    let reason = status["servers"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(old.url()),
        "the reason names the URL {}: {status:#}",
        old.url()
    );

    let (second, new) = ServeProcess::start(&repo, repo.root()).await;
    assert_eq!(new.pid, second.pid());
    assert_ne!(new.pid, old.pid);
    assert_ne!(new.token, old.token, "a new lease, not the old one reused");
    let identity = probe(new.url()).await.unwrap();
    assert_eq!(identity["leaseholder"], true);
    assert_eq!(serve_status(&repo, repo.root()).await["standing"], "ready");
}

/// 4b. SIGTERM is an ordered stop: exit status 0, lease removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_in_order_and_removes_the_lease() {
    let repo = TempRepo::new();
    let (mut serve, _) = ServeProcess::start(&repo, repo.root()).await;
    serve.signal(libc::SIGTERM);
    let status = serve.wait_exit().await;
    assert!(
        status.success(),
        "exit status after SIGTERM: {status:?}\n{}",
        serve.output()
    );
    assert!(!lease_path(repo.root()).exists(), "the lease file is gone");
    assert_eq!(porcelain(repo.root()), "");
}

/// 5. Ten `serve ensure` at once in one checkout end with one server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_simultaneous_starts_elect_one_server() {
    let repo = TempRepo::new();
    let root = repo.root();
    let runs = (0..10).map(|_| {
        let mut args = vec!["serve".into(), "ensure".into(), "--repo".into()];
        args.push(root.as_os_str().to_owned());
        run_cli(&repo, args)
    });
    let outputs = futures::future::join_all(runs).await;
    let mut urls = Vec::new();
    for output in &outputs {
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "serve ensure failed: {}\n{}",
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
        let line = stdout.lines().last().unwrap_or_default().to_string();
        let (standing, url) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("`standing url`: {line}"));
        assert_eq!(standing, "ready", "{line}");
        urls.push(url.to_string());
    }
    let lease = wait_ready(root).await;
    assert!(
        urls.iter().all(|url| url == lease.url()),
        "all ten printed the lease's URL: {urls:?}"
    );
    // The losers of the election leave; exactly the leaseholder keeps running.
    let survivors = eventually("one `serve` process to remain", || async {
        let serving = repo.serve_processes(root);
        if serving == [lease.pid] {
            Ok(serving)
        } else {
            Err(format!("{serving:?}, lease pid {}", lease.pid))
        }
    })
    .await;
    assert_eq!(survivors, [lease.pid]);
    assert_eq!(
        read_lease(root).unwrap().pid,
        lease.pid,
        "the lease was never taken over"
    );
}

/// 6. Two `majordomus mcp` in one checkout: one server, the second bridges; the server's peer
///    count follows the bridged client's exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_mcp_bridges_and_its_exit_is_noticed() {
    let repo = TempRepo::new();
    let owner = McpClient::stdio(&repo, repo.root(), "claude-code", "2.1.0").await;
    let lease = wait_ready(repo.root()).await;
    assert_eq!(
        Some(lease.pid),
        owner.pid,
        "the first `majordomus mcp` serves"
    );
    let bridged = McpClient::stdio(&repo, repo.root(), "codex", "0.98.0").await;
    let bridge_pid = bridged.pid.unwrap();
    assert_ne!(lease.pid, bridge_pid, "the second one does not serve");
    assert_eq!(
        read_lease(repo.root()).unwrap().pid,
        lease.pid,
        "the lease still names the first"
    );
    assert!(alive(bridge_pid));

    let this = json!({"checkouts": "this"});
    let status = owner.answer("majordomus_server", this.clone()).await;
    assert_eq!(status["servers"].as_array().map(Vec::len), Some(1));
    assert_eq!(status["servers"][0]["peers"], 2, "{status:#}");
    let through_bridge = bridged.answer("majordomus_server", this.clone()).await;
    assert_eq!(
        through_bridge["servers"][0]["peers"], 2,
        "the bridge reaches the same server"
    );
    assert_eq!(through_bridge["this_process"]["pid"], lease.pid);

    let board = owner
        .answer("majordomus_peers", json!({"checkouts": "this"}))
        .await;
    let codex = find(&board["peers"], "id", "p2");
    assert_eq!(
        codex["client"]["name"], "codex",
        "the board shows the bridged client's own name"
    );
    assert_eq!(
        (&codex["transport"], &codex["bridged"]),
        (&json!("stdio"), &json!(true)),
        "the client reached majordomus over the bridge's stdio"
    );
    let own = find(&board["peers"], "id", "p1");
    assert_eq!(
        (&own["transport"], &own["bridged"]),
        (&json!("stdio"), &json!(false))
    );

    bridged.close().await;
    eventually("the server to count one peer", || async {
        let status = owner
            .answer("majordomus_server", json!({"checkouts": "this"}))
            .await;
        match status["servers"][0]["peers"].as_u64() {
            Some(1) => Ok(()),
            other => Err(format!("peers {other:?}")),
        }
    })
    .await;
    owner.close().await;
}

/// 7. Lines that are not JSON, or longer than 4 MiB, get a JSON-RPC parse error on
///    `majordomus mcp`'s stdout, and the process keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_stdio_lines_get_parse_errors_and_serving_goes_on() {
    let repo = TempRepo::new();
    let (mut child, mut stdin, mut stdout) = mcp_on_pipes(&repo, "raw-mcp");

    async fn next_frame(stdout: &mut BufReader<tokio::process::ChildStdout>) -> Value {
        let mut line = String::new();
        let read = tokio::time::timeout(BOUND, stdout.read_line(&mut line))
            .await
            .expect("an answer line within the bound")
            .expect("stdout reads");
        assert!(read > 0, "stdout closed: the process stopped serving");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries JSON frames only ({e}): {line}"))
    }
    fn assert_parse_error(frame: &Value) {
        assert_eq!(frame["jsonrpc"], "2.0", "{frame}");
        assert_eq!(frame["error"]["code"], -32700, "{frame}");
        assert!(
            frame["id"].is_null() && frame.get("id").is_some(),
            "id null: {frame}"
        );
    }

    stdin.write_all(b"this is not json\n").await.unwrap();
    let frame = next_frame(&mut stdout).await;
    assert_parse_error(&frame);

    let mut oversized = vec![b'x'; 4 * 1024 * 1024 + 16];
    oversized.push(b'\n');
    stdin.write_all(&oversized).await.unwrap();
    let frame = next_frame(&mut stdout).await;
    assert_parse_error(&frame);
    assert!(
        frame["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("limit"),
        "{frame}"
    );

    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "1.0"}
        }
    });
    send(&mut stdin, &initialize).await;
    let frame = next_frame(&mut stdout).await;
    assert_eq!(frame["id"], 1, "{frame}");
    assert_eq!(
        frame["result"]["serverInfo"]["name"], "majordomus",
        "{frame}"
    );
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;

    // Another bad line after initialize, then a request that must still be answered.
    stdin
        .write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 2,\n")
        .await
        .unwrap();
    assert_parse_error(&next_frame(&mut stdout).await);
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    )
    .await;
    let frame = next_frame(&mut stdout).await;
    assert_eq!(frame["id"], 3, "{frame}");
    let tools = frame["result"]["tools"]
        .as_array()
        .expect("tools/list answers with tools");
    assert!(
        tools.iter().any(|tool| tool["name"] == "majordomus_peers"),
        "{frame}"
    );

    drop(stdin);
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("majordomus mcp ends when its client closes stdin")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

async fn send(stdin: &mut tokio::process::ChildStdin, frame: &Value) {
    let mut line = serde_json::to_vec(frame).unwrap();
    line.push(b'\n');
    stdin.write_all(&line).await.unwrap();
}

/// The formats JSON Schema 2020-12 defines: the only ones clients know.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every `format` a schema declares, however deep.
fn formats_in(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![schema];
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(format)) = map.get("format") {
                    found.push(format.clone());
                }
                pending.extend(map.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    found
}
