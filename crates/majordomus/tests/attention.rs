//! Sessions waiting for the person, end to end: each client's waiting signal fed to
//! `majordomus hook <client> <event>` as the client writes it (the fixtures in
//! `tests/fixtures/hooks/`), and a guard's refusal, mark the session `waiting` on a real
//! server; `majordomus peers`, the event stream and the dashboard in a real headless
//! Chromium show it until the session moves on; a stand-in `notify-send` on `PATH` shows
//! that the person's desktop is told once per reason.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::browser::Browser;
use common::*;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const CLAUDE: &str = "1b6f3c2e-4d5a-4e8f-9a0b-7c1d2e3f4a5b";
const PERMISSION_MESSAGE: &str = "Claude needs your permission to use Bash";

/// A client's payload for `event` from the fixtures, in the conversation `session` whose
/// directory is `root`, with `change` applied to it.
fn payload(
    client: &str,
    event: &str,
    root: &Path,
    session: &str,
    change: impl FnOnce(&mut Value),
) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(client)
        .join(format!("{event}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the fixture {} reads: {e}", path.display()));
    let filled = text
        .replace("{{ROOT}}", &display(root))
        .replace("{{FILE}}", "src/parser/lexer.rs")
        .replace("{{SESSION}}", session);
    let mut parsed: Value = serde_json::from_str(&filled)
        .unwrap_or_else(|e| panic!("the fixture {} is JSON once filled: {e}", path.display()));
    change(&mut parsed);
    parsed.to_string()
}

/// Runs `majordomus hook <client> <event>` with `input` on its stdin; its exit code and
/// stdout, once it has checked it said nothing on stderr.
async fn hook(repo: &TempRepo, client: &str, event: &str, input: &str) -> (Option<i32>, String) {
    let mut command = majordomus_command(["hook", client, event]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("majordomus hook starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let ran = async {
        let (mut out, mut err) = (String::new(), String::new());
        let _ = tokio::join!(
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        );
        (
            child.wait().await.expect("the hook is waited for"),
            out,
            err,
        )
    };
    let (status, out, err) = tokio::time::timeout(BOUND, ran)
        .await
        .unwrap_or_else(|_| panic!("majordomus hook {client} {event} ran over {BOUND:?}"));
    let (_, mut log) = repo.log_file(&format!("hook-{client}-{event}"));
    let _ = std::io::Write::write_all(
        &mut log,
        format!("exit {status}\n--- stdout\n{out}\n--- stderr\n{err}\n").as_bytes(),
    );
    assert_eq!(err, "", "a hook says nothing on stderr");
    (status.code(), out)
}

/// Runs a waiting signal's hook, which answers the client with nothing at all.
async fn signal(repo: &TempRepo, client: &str, event: &str, input: &str) {
    let (code, out) = hook(repo, client, event, input).await;
    assert_eq!(code, Some(0), "{client} {event}: a hook exits 0");
    assert_eq!(out, "", "{client} {event}: the client is told nothing");
}

/// `majordomus peers --json` of the repository.
async fn peers_json(repo: &TempRepo) -> Value {
    let output = run_cli(
        repo,
        ["peers", "--json", "--repo", repo.root().to_str().unwrap()],
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("peers --json prints JSON")
}

/// `majordomus peers` for people.
async fn peers_text(repo: &TempRepo) -> String {
    let output = run_cli(repo, ["peers", "--repo", repo.root().to_str().unwrap()]).await;
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The peers of the listing that wait for the person.
fn waiting(list: &Value) -> Vec<Value> {
    list["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|peer| peer.get("waiting").is_some())
        .cloned()
        .collect()
}

/// The listing once exactly `count` peers wait, within [`BOUND`].
async fn waiting_count(repo: &TempRepo, count: usize) -> Vec<Value> {
    eventually(&format!("{count} session(s) waiting"), || async {
        let list = peers_json(repo).await;
        let waiting = waiting(&list);
        if waiting.len() == count {
            Ok(waiting)
        } else {
            Err(format!("{list:#}"))
        }
    })
    .await
}

/// An open `/api/v1/events` stream of this checkout, read event by event.
struct Events {
    events: std::pin::Pin<
        Box<dyn futures::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>,
    >,
}

impl Events {
    async fn open(lease: &LeaseFile) -> Events {
        let response = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .get(format!("{}/api/v1/events?checkouts=this", lease.url()))
            .bearer_auth(&lease.token)
            .send()
            .await
            .expect("the stream opens");
        let bytes = futures::stream::unfold(response, |mut response| async move {
            match response.chunk().await {
                Ok(Some(chunk)) => Some((Ok::<_, std::io::Error>(chunk), response)),
                Ok(None) => None,
                Err(error) => Some((Err(std::io::Error::other(error)), response)),
            }
        });
        Events {
            events: Box::pin(sse_stream::SseStream::from_bytes_stream(bytes)),
        }
    }

    /// The next event of `kind`, within [`BOUND`].
    async fn next_of(&mut self, kind: &str) -> Value {
        loop {
            let sse = tokio::time::timeout(BOUND, self.events.next())
                .await
                .unwrap_or_else(|_| panic!("no `{kind}` event within {BOUND:?}"))
                .expect("the stream goes on")
                .expect("the stream is well formed");
            let Some(data) = sse.data else { continue };
            let event: Value = serde_json::from_str(&data).expect("every event is JSON");
            if event["kind"] == kind {
                return event;
            }
        }
    }
}

/// A hook fails open once its budget is spent, and a signal it carried is then not heard;
/// these tests give the hooks the most a repository may, so a busy machine running the suite
/// does not turn a signal into silence.
const PATIENT_HOOKS: &str = "[hooks]\nbudget_ms = 2000\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_prompt_marks_the_session_waiting_everywhere_until_its_next_prompt() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    std::fs::write(root.join("majordomus.toml"), PATIENT_HOOKS).unwrap();
    let (_serve, lease) = ServeProcess::start(&repo, &root).await;
    let mut events = Events::open(&lease).await;

    signal(
        &repo,
        "claude-code",
        "Notification",
        &payload("claude-code", "Notification", &root, CLAUDE, |_| {}),
    )
    .await;
    let event = events.next_of("waiting").await;
    assert_eq!(event["waiting"]["reason"], "permission", "{event}");

    let waiting = waiting_count(&repo, 1).await;
    let mark = &waiting[0]["waiting"];
    assert_eq!(mark["reason"], "permission", "{mark}");
    assert_eq!(mark["message"], PERMISSION_MESSAGE, "{mark}");
    assert!(mark["since"].as_str().unwrap().ends_with('Z'), "{mark}");
    assert!(mark.get("holder").is_none(), "{mark}");
    let claude = waiting[0]["id"].as_str().unwrap().to_owned();

    // Another session's question, in words meant to act on a page and a terminal.
    let hostile = "<img src=x onerror=\"document.title='owned'\"> \u{1b}[31mred\u{202e}";
    signal(
        &repo,
        "claude-code",
        "Notification",
        &payload(
            "claude-code",
            "Notification",
            &root,
            "other-session",
            |input| {
                input["notification_type"] = json!("idle_prompt");
                input["message"] = json!(hostile);
            },
        ),
    )
    .await;
    waiting_count(&repo, 2).await;
    let text = peers_text(&repo).await;
    let needs_you: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("needs you: "))
        .collect();
    assert_eq!(needs_you.len(), 2, "{text}");
    assert!(
        text.starts_with("needs you: "),
        "the waiting sessions come first: {text}"
    );
    assert!(
        needs_you[0].contains(&format!("{claude} in {}", display(&root)))
            && needs_you[0].contains("permission since")
            && needs_you[0].contains(PERMISSION_MESSAGE),
        "{text}"
    );
    assert!(needs_you[1].contains("question since"), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "a client's words never act on the terminal: {text:?}"
    );

    // The dashboard lists both above everything, as text.
    let printed = run_cli(&repo, ["board", "--repo", root.to_str().unwrap()]).await;
    assert!(printed.status.success(), "{printed:?}");
    let link = String::from_utf8(printed.stdout).unwrap().trim().to_owned();
    let mut browser = Browser::launch(&repo).await;
    browser.call("Page.navigate", json!({"url": link})).await;
    let needs = browser
        .text_when("#needs-you", BOUND, |text| {
            text.contains("asks for permission") && text.contains("waits for your answer")
        })
        .await;
    assert!(needs.contains(PERMISSION_MESSAGE), "{needs}");
    assert!(
        needs.contains(&format!("{claude} in {}", display(&root))),
        "{needs}"
    );
    assert!(
        needs.contains("<img src=x"),
        "the markup is shown as text: {needs}"
    );
    assert_eq!(
        browser
            .eval("document.querySelectorAll('#needs-you img').length")
            .await,
        0
    );
    assert_ne!(browser.eval("document.title").await, "owned");
    assert_eq!(
        browser
            .eval(
                "document.querySelector('main').firstElementChild\
                 .contains(document.getElementById('needs-you'))"
            )
            .await,
        true,
        "the list is above everything"
    );

    // The next prompt: the session moved on, everywhere, the page unreloaded.
    signal(
        &repo,
        "claude-code",
        "UserPromptSubmit",
        &payload("claude-code", "UserPromptSubmit", &root, CLAUDE, |_| {}),
    )
    .await;
    let over = events.next_of("waiting_over").await;
    assert_eq!(over["peer"], claude.as_str(), "{over}");
    let left = waiting_count(&repo, 1).await;
    assert_ne!(left[0]["id"], claude.as_str(), "{left:?}");
    let needs = browser
        .text_when("#needs-you", BOUND, |text| {
            !text.contains("asks for permission")
        })
        .await;
    assert!(needs.contains("waits for your answer"), "{needs}");
    browser.close().await;
}

/// How many times [`signal_until_marked`] sends a client's signal.
const SIGNALS: usize = 3;
/// How long it looks for the mark after each signal.
const SIGNAL_AGAIN: std::time::Duration = std::time::Duration::from_secs(5);

/// The peer of `client` once its `event` marked it waiting, the signal sent again when no
/// mark came within [`SIGNAL_AGAIN`], at most [`SIGNALS`] times. A hook that runs past its
/// budget on a loaded machine fails open and marks nothing, as it must, and a client sends
/// its signal again at its next wait: what this checks is the reason each signal marks.
async fn signal_until_marked(repo: &TempRepo, client: &str, event: &str, input: &str) -> Value {
    let mut last = String::new();
    for _ in 0..SIGNALS {
        signal(repo, client, event, input).await;
        let sent = std::time::Instant::now();
        while sent.elapsed() < SIGNAL_AGAIN {
            let list = peers_json(repo).await;
            if let Some(marked) = waiting(&list)
                .into_iter()
                .find(|peer| peer["client"]["name"] == client)
            {
                return marked;
            }
            last = format!("{list:#}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    panic!("{SIGNALS} signals of {client} {event} marked no session waiting; last seen: {last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_clients_waiting_signal_marks_its_session_with_its_reason() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    std::fs::write(root.join("majordomus.toml"), PATIENT_HOOKS).unwrap();
    let (_serve, _lease) = ServeProcess::start(&repo, &root).await;
    for (client, event, session, reason) in [
        ("codex", "PermissionRequest", "codex-session", "permission"),
        ("gemini-cli", "Notification", "gemini-session", "permission"),
        ("claude-code", "Stop", "claude-session", "finished"),
    ] {
        let input = payload(client, event, &root, session, |_| {});
        let marked = signal_until_marked(&repo, client, event, &input).await;
        assert_eq!(marked["waiting"]["reason"], reason, "{client} {event}");
    }
    for (client, event, session) in [
        ("codex", "Stop", "codex-session"),
        ("gemini-cli", "AfterAgent", "gemini-session"),
    ] {
        signal(
            &repo,
            client,
            event,
            &payload(client, event, &root, session, |_| {}),
        )
        .await;
        let list = peers_json(&repo).await;
        let marked = waiting(&list)
            .into_iter()
            .find(|peer| peer["client"]["name"] == client)
            .unwrap();
        assert_eq!(marked["waiting"]["reason"], "finished", "{client} {event}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_refusal_marks_the_refused_session_blocked_naming_the_holder() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    let beta = repo.add_worktree("beta");
    let (_primary, _lease) = ServeProcess::start(&repo, &root).await;
    let (_beta_server, beta_lease) = ServeProcess::start(&repo, &beta).await;
    let codex = McpClient::http(&beta_lease, "codex", "0.98.0").await;
    codex
        .answer(
            "majordomus_announce",
            json!({"intent": "port the parser to nom", "scope": ["src/parser"]}),
        )
        .await;

    let (code, out) = hook(
        &repo,
        "claude-code",
        "PreToolUse",
        &payload("claude-code", "PreToolUse", &root, CLAUDE, |_| {}),
    )
    .await;
    assert_eq!(code, Some(0));
    let answer: Value = serde_json::from_str(&out).expect("the guard answers");
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "a headless run is refused: {answer}"
    );

    let list = peers_json(&repo).await;
    let blocked = waiting(&list);
    assert_eq!(blocked.len(), 1, "{list:#}");
    let mark = &blocked[0]["waiting"];
    assert_eq!(mark["reason"], "blocked", "{mark}");
    assert_eq!(mark["holder"]["peer"], "p1", "{mark}");
    assert_eq!(mark["holder"]["client"], "codex", "{mark}");
    assert_eq!(mark["holder"]["worktree"], display(&beta), "{mark}");
    assert_eq!(
        blocked[0]["checkout"]["worktree"],
        display(&root),
        "the refused session, not the holder: {list:#}"
    );
    let text = peers_text(&repo).await;
    assert!(
        text.contains("blocked since") && text.contains("held up by p1 (codex in"),
        "{text}"
    );

    // Its next tool call, on a file nobody claims, is the session moving on.
    let (code, out) = hook(
        &repo,
        "claude-code",
        "PreToolUse",
        &payload("claude-code", "PreToolUse", &root, CLAUDE, |input| {
            input["tool_input"]["file_path"] = json!(display(&root.join("docs/guide.md")));
        }),
    )
    .await;
    assert_eq!((code, out.as_str()), (Some(0), ""));
    waiting_count(&repo, 0).await;
    codex.close().await;
}

/// The line the stand-in notifier writes after each call's arguments.
const END_OF_CALL: &str = "=== end of call";

/// A stand-in `notify-send` in a directory of its own: each call appends its arguments,
/// one a line, and an [`END_OF_CALL`] line to the file it returns.
fn stand_in_notifier(repo: &TempRepo) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt as _;
    let bin = repo.base().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = repo.base().join("notify-send.calls");
    let script = bin.join("notify-send");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor word in \"$@\"; do printf '%s\\n' \"$word\"; done >> '{0}'\necho '{END_OF_CALL}' >> '{0}'\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, calls)
}

/// The calls the stand-in recorded, each its arguments.
fn calls(file: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut calls = Vec::new();
    let mut call = Vec::new();
    for line in text.lines() {
        if line == END_OF_CALL {
            calls.push(std::mem::take(&mut call));
        } else {
            call.push(line.to_owned());
        }
    }
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desktop_is_told_once_per_reason_when_the_person_asked_for_it() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    std::fs::write(root.join("majordomus.toml"), PATIENT_HOOKS).unwrap();
    let config = repo.user_config_home().join("majordomus/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[notify]\ndesktop = true\n").unwrap();
    let (bin, recorded) = stand_in_notifier(&repo);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let _serve = ServeProcess::spawn_with(&repo, &root, |command| {
        command.env("PATH", &path);
    });
    wait_ready(&root).await;

    let notification = |message: &str| {
        payload("claude-code", "Notification", &root, CLAUDE, |input| {
            input["message"] = json!(message);
        })
    };
    let stop = payload("claude-code", "Stop", &root, CLAUDE, |_| {});
    signal(
        &repo,
        "claude-code",
        "Notification",
        &notification(PERMISSION_MESSAGE),
    )
    .await;
    signal(
        &repo,
        "claude-code",
        "Notification",
        &notification("<b>again</b>"),
    )
    .await;
    signal(&repo, "claude-code", "Stop", &stop).await;
    signal(&repo, "claude-code", "Stop", &stop).await;
    signal(
        &repo,
        "claude-code",
        "Notification",
        &notification(PERMISSION_MESSAGE),
    )
    .await;
    // A new spell, after the session moved on, is told again.
    signal(
        &repo,
        "claude-code",
        "UserPromptSubmit",
        &payload("claude-code", "UserPromptSubmit", &root, CLAUDE, |_| {}),
    )
    .await;
    signal(
        &repo,
        "claude-code",
        "Notification",
        &notification("<b>bold</b> & co"),
    )
    .await;

    let told = eventually("three desktop notices", || async {
        let told = calls(&recorded);
        if told.len() >= 3 {
            Ok(told)
        } else {
            Err(format!("{told:?}"))
        }
    })
    .await;
    assert_eq!(told.len(), 3, "once per reason per spell: {told:?}");
    for call in &told {
        assert_eq!(call[0], "--app-name=majordomus", "{call:?}");
        assert_eq!(call[1], "--", "no text is read as an option: {call:?}");
        assert!(call[2].contains("needs you"), "{call:?}");
    }
    // Each notice is its own process, never waited for: two started close together may
    // record in either order.
    let told_once = |what: &dyn Fn(&str) -> bool| told.iter().filter(|call| what(&call[3])).count();
    assert_eq!(
        told_once(&|text| text.contains("asks for permission") && text.contains(PERMISSION_MESSAGE)),
        1,
        "{told:?}"
    );
    assert_eq!(
        told_once(&|text| text.contains("finished its turn")),
        1,
        "{told:?}"
    );
    assert_eq!(
        told_once(&|text| text == "asks for permission: &lt;b&gt;bold&lt;/b&gt; &amp; co"),
        1,
        "markup is escaped for the notification server: {told:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_persons_word_the_desktop_is_never_told() {
    let repo = TempRepo::new();
    let root = repo.root().to_path_buf();
    std::fs::write(root.join("majordomus.toml"), "[notify]\ndesktop = true\n").unwrap();
    let refused = run_cli(&repo, ["peers", "--repo", root.to_str().unwrap()]).await;
    let said = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(
        !refused.status.success() && said.contains("[notify] runs programs on this machine"),
        "a repository cannot turn on a program: {said}"
    );
    std::fs::remove_file(root.join("majordomus.toml")).unwrap();

    let (bin, recorded) = stand_in_notifier(&repo);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let _serve = ServeProcess::spawn_with(&repo, &root, |command| {
        command.env("PATH", &path);
    });
    wait_ready(&root).await;
    signal(
        &repo,
        "claude-code",
        "Notification",
        &payload("claude-code", "Notification", &root, CLAUDE, |_| {}),
    )
    .await;
    waiting_count(&repo, 1).await;
    assert_eq!(calls(&recorded), Vec::<Vec<String>>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_wires_each_clients_waiting_signals_and_uninstall_takes_them_away() {
    let repo = TempRepo::new();
    let home = repo.base().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |args: &'static [&'static str]| {
        let mut command = majordomus_command(args);
        command
            .current_dir(repo.root())
            .env("HOME", &home)
            .env_remove("CODEX_HOME")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        async move {
            let output = tokio::time::timeout(BOUND, command.output())
                .await
                .expect("majordomus finishes in time")
                .expect("majordomus runs");
            assert!(output.status.success(), "majordomus {args:?}: {output:?}");
        }
    };
    run(&["install", "all", "--scope", "project"]).await;
    let wired = |file: &str| -> Value {
        let text = std::fs::read_to_string(repo.root().join(file)).unwrap_or_default();
        serde_json::from_str(&text).unwrap_or(Value::Null)
    };
    for (file, client, events) in [
        (
            ".claude/settings.json",
            "claude-code",
            ["Notification", "Stop"],
        ),
        (".codex/hooks.json", "codex", ["PermissionRequest", "Stop"]),
        (
            ".gemini/settings.json",
            "gemini-cli",
            ["Notification", "AfterAgent"],
        ),
    ] {
        let hooks = wired(file)["hooks"].clone();
        for event in events {
            let command = hooks[event][0]["hooks"][0]["command"]
                .as_str()
                .unwrap_or_else(|| panic!("{file} wires {event}: {hooks:#}"));
            assert!(
                command.ends_with(&format!("hook {client} {event}'")),
                "{file}: {command}"
            );
        }
    }
    run(&["install", "all", "--uninstall"]).await;
    for (file, events) in [
        (".claude/settings.json", ["Notification", "Stop"]),
        (".codex/hooks.json", ["PermissionRequest", "Stop"]),
        (".gemini/settings.json", ["Notification", "AfterAgent"]),
    ] {
        let hooks = wired(file)["hooks"].clone();
        for event in events {
            assert!(
                hooks.get(event).is_none(),
                "{file} keeps {event}: {hooks:#}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_signal_over_its_bounds_is_refused_naming_the_limit() {
    let repo = TempRepo::new();
    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let post = |body: Value| {
        let request = http()
            .post(format!("{}/api/v1/hooks/wait", lease.url()))
            .bearer_auth(&lease.token)
            .json(&body);
        async move {
            let response = request.send().await.expect("the server answers");
            let status = response.status();
            (status, response.text().await.unwrap_or_default())
        }
    };
    let base = json!({"client": "claude-code", "session_id": "hostile", "reason": "blocked"});
    let with = |field: &str, value: Value| {
        let mut body = base.clone();
        body[field] = value;
        body
    };
    for (body, said) in [
        (
            with("message", json!("x".repeat(201))),
            "`message` holds at most 200 characters; this one has 201",
        ),
        (
            with(
                "holder",
                json!({"peer": "p1", "client": "c".repeat(100_000)}),
            ),
            "`holder.client` holds at most 64 characters; this one has 100000",
        ),
        (
            with(
                "holder",
                json!({"peer": "p1", "client": "c", "worktree": "w".repeat(1_025)}),
            ),
            "`holder.worktree` holds at most 1024 characters; this one has 1025",
        ),
        (
            with("reason", json!("bored")),
            "unknown variant `bored`, expected one of `permission`, `question`, `finished`, `blocked`",
        ),
    ] {
        let (status, answer) = post(body).await;
        assert_eq!(status.as_u16(), 400, "{answer}");
        assert!(answer.contains(said), "{answer}");
        assert!(answer.len() < 1_000, "the refusal does not echo the input");
    }
    let (status, answer) = post(with(
        "holder",
        json!({"peer": "p1", "client": "codex\u{1b}[2J", "worktree": "/w/\u{202e}beta"}),
    ))
    .await;
    assert_eq!(status.as_u16(), 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let holder = &answer["waiting"]["holder"];
    let shown = holder.to_string();
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{202e}'),
        "what the board keeps is cleaned: {holder}"
    );
}
