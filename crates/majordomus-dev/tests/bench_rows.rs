//! The benchmark's rows are derived from the registry: one per capability × transport it is
//! exposed on × case its input type declares. Nothing here is timed; the one real run is a
//! tiny filtered one, to show the report holds exactly the planned rows it selected.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use majordomus_dev::bench::{self, BenchTransport, RowKey, SCENARIOS, planned_rows};
use serde_json::Value;

/// The transports a capability should be measured on, read from its exposure independently of
/// `BenchTransport::of`.
fn expected_transports(capability: &majordomus_core::registry::Capability) -> Vec<&'static str> {
    let exposure = capability.declaration.exposure;
    let mut transports = vec!["in-process"];
    if exposure.mcp_tool.is_some() {
        transports.extend(["mcp-stdio", "mcp-http", "mcp-bridge"]);
    }
    if exposure.http.is_some() {
        transports.push("rest");
    }
    transports
}

fn names(rows: &[RowKey]) -> BTreeSet<String> {
    rows.iter().map(RowKey::name).collect()
}

#[test]
fn the_planned_rows_are_every_capability_on_every_transport_once_per_case() {
    let registry = majordomus_capabilities::registry();
    let rows = planned_rows(registry);
    let planned = names(&rows);
    assert_eq!(planned.len(), rows.len(), "no row is planned twice");

    let mut expected = BTreeSet::new();
    for capability in registry.iter() {
        let cases = capability.bench_cases();
        assert!(!cases.is_empty(), "{} declares no case", capability.id());
        for transport in expected_transports(capability) {
            for (case, _) in &cases {
                expected.insert(format!("{}/{transport}/{case}", capability.id()));
            }
        }
    }
    assert_eq!(planned, expected);

    // In registry order, each capability's rows together.
    let order: Vec<&str> = registry.iter().map(|c| c.id()).collect();
    let mut seen: Vec<&str> = rows.iter().map(|row| row.capability).collect();
    seen.dedup();
    assert_eq!(seen, order);
}

#[test]
fn every_transport_has_a_target() {
    for transport in BenchTransport::ALL {
        assert!(!transport.target().describe().is_empty());
    }
}

/// Over plain HTTP there is no MCP session to act for: the rows whose input names no one but
/// the caller's session measure the handler's refusal, and every other row an answer, as the
/// benchmark and the reference pages expect. A real run, so that the expectation declared
/// beside the cases cannot drift from what the handlers do.
#[test]
fn every_rest_row_is_refused_exactly_when_its_input_acts_for_a_session() {
    let report = bench_json(&["--filter", "/rest/", "--iterations", "2", "--warmup", "1"]);
    let rows = report["rows"].as_array().expect("rows");
    let mut refused = BTreeSet::new();
    for row in rows.iter().filter(|row| row["capability"] != "floor") {
        assert_eq!(row["outcome"], row["expected"], "{row}");
        if row["outcome"] == "refusal" {
            refused.insert(row["key"].as_str().unwrap().to_string());
        }
    }
    let planned = bench::select(
        planned_rows(majordomus_capabilities::registry()),
        Some("/rest/"),
    );
    assert_eq!(
        rows.len(),
        planned.len() + 1,
        "every REST row and the floor"
    );
    assert_eq!(
        refused,
        BTreeSet::from(
            [
                "episodes.detach/rest/own",
                "leases.acquire/rest/own-session",
                "leases.release/rest/own-session",
            ]
            .map(String::from)
        ),
        "a message sent over plain HTTP is sent from the command line, and answered"
    );
}

#[test]
fn the_scenarios_have_distinct_names() {
    let names: BTreeSet<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    assert_eq!(names.len(), SCENARIOS.len());
    assert!(names.iter().all(|name| name.starts_with("scenario/")));
}

/// Builds the `majordomus` the benchmark spawns, once, before any run is timed. The benchmark
/// builds it itself when cargo runs it, as here, but under `cargo test --workspace` the first
/// such build compiles the libraries again (with the features of the two crates rather than
/// the whole workspace's), which can take longer than a run is given.
fn build_majordomus() {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let dir = Path::new(env!("CARGO_BIN_EXE_majordomus-dev"))
            .parent()
            .expect("the executable is in a target directory");
        bench::executable::build(
            env!("CARGO").as_ref(),
            dir,
            bench::executable::Output::OnFailure,
        )
    });
    if let Err(message) = built {
        panic!("{message}");
    }
}

/// Runs `majordomus-dev bench` with `args` and the JSON report written to a temporary file, bounded
/// in time; returns the report.
fn bench_json(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    bench_json_in(dir.path(), "bench", args)
}

/// Runs `majordomus-dev bench` with `args` and the JSON report written to `<dir>/<name>.json`,
/// bounded in time; returns the report.
///
/// What the benchmark prints goes to a file beside the report, shown only if it fails: a pipe
/// read only after the exit would fill up with a chatty `RUST_LOG` and stall the benchmark,
/// and inherited, its lines would be printed among the test results.
fn bench_json_in(dir: &Path, name: &str, args: &[&str]) -> Value {
    build_majordomus();
    let json = dir.join(format!("{name}.json"));
    let log = dir.join(format!("{name}.log"));
    let output = std::fs::File::create(&log).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_majordomus-dev"));
    command
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .stdout(output.try_clone().unwrap())
        .stderr(output);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            command.env_remove(&key);
        }
    }
    let printed = || std::fs::read_to_string(&log).unwrap_or_default();
    let mut child = command.spawn().expect("majordomus-dev bench starts");
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "majordomus-dev bench {args:?} failed:\n{}",
                printed()
            );
            break;
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "majordomus-dev bench {args:?} did not finish within 90 s:\n{}",
                printed()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[test]
fn a_filtered_run_reports_exactly_the_rows_it_selects_with_the_machine() {
    let filter = "server.status/";
    let report = bench_json(&["--filter", filter, "--iterations", "3", "--warmup", "1"]);
    let expected = names(&bench::select(
        planned_rows(majordomus_capabilities::registry()),
        Some(filter),
    ));
    assert_eq!(expected.len(), 10, "server.status: 5 transports × 2 cases");
    let floors = ["floor/mcp-stdio", "floor/mcp-http", "floor/rest"];
    let rows = report["rows"].as_array().expect("rows");
    let reported: Vec<String> = rows
        .iter()
        .map(|row| row["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        reported[..3],
        floors,
        "the floors of its transports come first"
    );
    assert_eq!(
        reported[3..].iter().cloned().collect::<BTreeSet<_>>(),
        expected
    );
    assert_eq!(rows.len(), expected.len() + floors.len(), "one row each");
    for row in rows {
        assert_eq!(row["iterations"], 3, "{row}");
        assert_eq!(row["outcome"], "answer", "{row}");
        for figure in ["p50_ms", "p90_ms", "p99_ms"] {
            assert!(row[figure].as_f64().is_some_and(|ms| ms > 0.0), "{row}");
        }
        let has_floor = row["capability"] != "floor" && row["transport"] != "in-process";
        assert_eq!(
            row["floor_ratio"].as_f64().is_some_and(|ratio| ratio > 0.0),
            has_floor,
            "{row}"
        );
        assert_eq!(
            row["added_floor_ratio"]
                .as_f64()
                .is_some_and(|ratio| ratio >= 0.0),
            has_floor,
            "a row with a floor is also read as what it adds over its in-process p50: {row}"
        );
        assert_eq!(
            row["answer_floor_ratio"]
                .as_f64()
                .is_some_and(|ratio| ratio > 0.0),
            has_floor,
            "a row with a floor is also read against the floor answering its own answer: {row}"
        );
    }
    let machine = &report["machine"];
    assert!(machine["logical_cores"].as_u64().is_some_and(|n| n >= 1));
    for field in ["cpu_model", "memory_mib", "os", "profile"] {
        assert!(!machine[field].is_null(), "machine.{field}");
    }
    assert_eq!(report["scenarios"], Value::Array(Vec::new()));
}

#[test]
fn a_scenario_run_reports_its_scenario_row() {
    let filter = "scenario/board/announce-1000";
    let report = bench_json(&["--scenarios", "--filter", filter, "--iterations", "3"]);
    assert_eq!(
        report["rows"],
        Value::Array(Vec::new()),
        "no capability row matches"
    );
    let scenarios = report["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 1);
    assert_eq!(scenarios[0]["name"], "scenario/board/announce-1000x10");
    assert_eq!(scenarios[0]["outcome"], "measured", "{}", scenarios[0]);
    assert_eq!(scenarios[0]["summary"]["iterations"], 3);
}

/// The guard's scenarios measure every kind of finding: each checks, before and after its
/// measured calls, that the guard (in-process) or the hook (its printed answer) says what
/// that kind calls for, and fails otherwise; the hook processes are read against their floor.
#[test]
fn the_guard_scenarios_measure_every_kind_of_finding() {
    let filter = "scenario/guard/";
    let report = bench_json(&["--scenarios", "--filter", filter, "--iterations", "2"]);
    let scenarios = report["scenarios"].as_array().unwrap();
    let expected: BTreeSet<&str> = SCENARIOS
        .iter()
        .map(|s| s.name)
        .filter(|name| name.contains(filter))
        .collect();
    let measured: BTreeSet<&str> = scenarios
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(measured, expected);
    for kind in [
        "none",
        "live-claim",
        "other-worktree-change",
        "predicted-conflict",
        "departed-claim",
        "bump-repeat",
    ] {
        assert!(expected.contains(format!("scenario/guard/in-process/{kind}").as_str()));
    }
    for scenario in scenarios {
        assert_eq!(scenario["outcome"], "measured", "{scenario}");
        assert_eq!(scenario["summary"]["iterations"], 2, "{scenario}");
        let spawned = scenario["name"].as_str().unwrap().contains("/hook-");
        assert_eq!(
            scenario["floor"]["ratio"].is_f64(),
            spawned,
            "a hook process, and only one, is read against spawning the executable: {scenario}"
        );
    }
}

/// `--baseline` compares two real runs, and flags the one row a third run slowed down.
///
/// Two runs of the same binary differ: on a shared two-core machine, and with the other tests
/// of this file running benchmarks beside these, a row's median moves by half or more between
/// runs. The threshold here is therefore far above the default, at 20×, and the slowdown far
/// above that: 200 ms added to a REST call that takes about a millisecond (a debug build),
/// which no load makes a same-binary difference.
#[test]
fn a_baseline_flags_the_slowed_row_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let slowed = "peers.list/rest/this";
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "--filter",
            "rest/this",
            "--iterations",
            "25",
            "--warmup",
            "5",
            "--flag-above",
            "20",
        ];
        args.extend(extra);
        bench_json_in(dir.path(), name, &args)
    };
    run("first", &[]);
    let baseline = dir.path().join("first.json");
    let baseline = baseline.to_str().unwrap();

    let again = run("again", &["--baseline", baseline]);
    let comparison = &again["baseline"];
    assert_eq!(comparison["flag_above"], 20.0);
    let compared: BTreeSet<&str> = comparison["compared"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        compared.contains(slowed) && compared.contains("floor/rest"),
        "{comparison}"
    );
    assert_eq!(
        comparison["flagged"],
        Value::Array(Vec::new()),
        "{comparison}"
    );
    assert_eq!(comparison["only_in_this_run"], Value::Array(Vec::new()));
    assert_eq!(comparison["only_in_baseline"], Value::Array(Vec::new()));

    let slow_row = format!("{slowed}:200");
    let slower = run("slower", &["--baseline", baseline, "--slow-row", &slow_row]);
    let comparison = &slower["baseline"];
    assert_eq!(
        comparison["flagged"],
        serde_json::json!([slowed]),
        "{comparison}"
    );
}

/// The floor server answers, on its `kept` route and its `kept` tool, exactly what it was
/// last handed, to a GET, to a POST of a row's JSON and to a tool call with a row's
/// arguments, and its do-nothing answer stays what it was: a row read against it is read
/// against its own request and answer's bytes, not some other.
#[test]
fn the_floor_answers_exactly_what_it_was_handed() {
    use std::io::BufRead as _;
    use std::process::Stdio;

    use majordomus_dev::bench::floor::{KEEP_TOOL, KEPT_ROUTE, KEPT_TOOL, ROUTE, TOOL};
    use rmcp::ServiceExt as _;
    use rmcp::model::{CallToolRequestParams, ClientConfig};
    use rmcp::transport::StreamableHttpClientTransport;

    let mut server = Command::new(env!("CARGO_BIN_EXE_majordomus-dev"))
        .args(["floor-server", "--http"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let url = url.trim().to_string();
    let answer =
        serde_json::json!({"peers": [{"id": "p1", "intent": "say \"why\"\n"}], "count": 1});
    let body = answer.to_string();

    majordomus_server::run::runtime().block_on(async {
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let kept = http
            .put(format!("{url}{KEPT_ROUTE}"))
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert!(kept.status().is_success());
        let answered = http.get(format!("{url}{KEPT_ROUTE}")).send().await.unwrap();
        assert_eq!(
            answered.text().await.unwrap(),
            body,
            "the route answers the bytes kept"
        );
        let request = serde_json::json!({"session_id": "s", "paths": ["docs/a.md"]});
        let posted = http
            .post(format!("{url}{KEPT_ROUTE}"))
            .json(&request)
            .send()
            .await
            .unwrap();
        assert_eq!(
            posted.text().await.unwrap(),
            body,
            "a row's POST is answered the bytes kept"
        );
        let not_json = http
            .post(format!("{url}{KEPT_ROUTE}"))
            .header("content-type", "application/json")
            .body("{")
            .send()
            .await
            .unwrap();
        assert!(
            not_json.status().is_client_error(),
            "the POST's body is parsed as JSON, as a route of majordomus parses it"
        );
        let plain = http.get(format!("{url}{ROUTE}")).send().await.unwrap();
        assert_eq!(plain.text().await.unwrap(), r#"{"ok":true}"#);

        let transport = StreamableHttpClientTransport::from_uri(format!("{url}/mcp"));
        let client = ClientConfig::default().serve(transport).await.unwrap();
        let call = async |tool: &str, arguments: Value| {
            let Value::Object(arguments) = arguments else {
                unreachable!("the arguments are objects")
            };
            client
                .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments))
                .await
                .unwrap()
        };
        call(KEEP_TOOL, serde_json::json!({"answer": answer.clone()})).await;
        let kept = call(
            KEPT_TOOL,
            serde_json::json!({"intent": "a row's arguments"}),
        )
        .await;
        assert_eq!(kept.structured_content, Some(answer.clone()));
        let text = kept.content[0].as_text().unwrap().text.clone();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            answer,
            "the tool answers it as majordomus does: structured, and as JSON text"
        );
        let plain = call(TOOL, serde_json::json!({})).await;
        assert_eq!(
            plain.structured_content,
            Some(serde_json::json!({"ok": true}))
        );
        let _ = client.cancel().await;
    });
    drop(server.stdin.take());
    assert!(
        server.wait().unwrap().success(),
        "the floor ends when its stdin closes"
    );
}

/// A throughput scenario reads its clients' calls a second against the floor server twice:
/// doing nothing, and carrying the answer majordomus gave the first client.
#[test]
fn a_throughput_run_is_read_against_both_floors() {
    let report = bench_json(&[
        "--scenarios",
        "--filter",
        "scenario/throughput/list-rest-8",
        "--throughput-seconds",
        "0.3",
    ]);
    let scenarios = report["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 1, "{report}");
    let scenario = &scenarios[0];
    assert_eq!(scenario["outcome"], "measured", "{scenario}");
    let throughput = &scenario["throughput"];
    for figure in [
        "calls_per_second",
        "floor_calls_per_second",
        "answer_floor_calls_per_second",
        "answer_floor_p99_ms",
    ] {
        assert!(
            throughput[figure].as_f64().is_some_and(|value| value > 0.0),
            "{figure}: {scenario}"
        );
    }
    assert!(
        scenario["note"]
            .as_str()
            .is_some_and(|note| note.contains("answering what majordomus answered")),
        "{scenario}"
    );
}
