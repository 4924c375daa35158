//! The guard's scenarios: what `hooks.guard` costs for each kind of finding, in-process from a
//! warm server, and what the hook process costs end to end, read against spawning the same
//! executable to do nothing.
//!
//! Every scenario sets up the same repository: a primary checkout (where the guarded session
//! works) and a linked worktree served by its own `majordomus serve`, on whose board one live
//! session claims `src/parser` and one departed session still claims `src/old`. The worktree
//! changed `src/changed.rs` without committing, and both checkouts committed different lines
//! of `src/lib.rs`, so a merge of the two is predicted to conflict there. Each kind of
//! finding is then one file to edit; the rest of the board is the same for all of them.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use majordomus_capabilities::hooks::HookClient;
use majordomus_core::context::CHANGES_INTERVAL;
use serde::Serialize;
use serde_json::{Value, json};

use super::clients::{Caller, HttpPooling, Outcome, connect_http, http_client, registered};
use super::report::{ScenarioFloor, ScenarioRow};
use super::setup::{
    InProcessServer, SETUP_BOUND, Scratch, ServeProcess, TempRepository, git, spawned,
};
use super::stats::Summary;
use super::{Budget, Options, Scenario};

/// What the guard finds for the file a scenario edits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum GuardCase {
    /// A file nobody claims, changes or conflicts on.
    Nothing,
    /// A file in a live other session's claim: stopped.
    LiveClaim,
    /// A file another worktree changed without committing, edited for the first time: the
    /// speed bump refuses it.
    OtherWorktreeChange,
    /// A file a merge with another worktree is predicted to conflict on, edited for the first
    /// time: the speed bump refuses it, quoting the other side's hunk.
    PredictedConflict,
    /// A file in a departed session's claim: one line of context.
    DepartedClaim,
    /// The other worktree's changed file edited again by the same session: the speed bump
    /// lets it pass.
    BumpRepeat,
}

impl GuardCase {
    /// The file the guarded session edits, relative to its checkout.
    fn file(self) -> &'static str {
        match self {
            GuardCase::Nothing => "src/quiet.rs",
            GuardCase::LiveClaim => "src/parser/lexer.rs",
            GuardCase::OtherWorktreeChange | GuardCase::BumpRepeat => "src/changed.rs",
            GuardCase::PredictedConflict => "src/lib.rs",
            GuardCase::DepartedClaim => "src/old/legacy.rs",
        }
    }

    /// Whether every measured call must be a first attempt: the speed bump remembers an edit
    /// (a session and its files) it stopped, so each call edits, beside the file, a note of
    /// its own that meets nothing.
    fn first_attempt(self) -> bool {
        matches!(
            self,
            GuardCase::OtherWorktreeChange | GuardCase::PredictedConflict
        )
    }

    /// The files of the `n`th edit.
    fn files(self, n: u64) -> Vec<String> {
        let mut files = vec![self.file().to_owned()];
        if self.first_attempt() {
            files.push(format!("notes/attempt-{n}.md"));
        }
        files
    }

    /// Whether the in-process answer is the one this case is about: `None` when it is, else
    /// what it said instead.
    fn check_answer(self, answer: &Value) -> Option<String> {
        let findings = answer["findings"].as_array().map_or(&[][..], Vec::as_slice);
        let bumps: Vec<&str> = answer["bumps"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let passed = answer["bump_passed"] == true;
        let attached = |live: bool| findings.iter().any(|f| f["attached"] == live);
        let ok = match self {
            GuardCase::Nothing => findings.is_empty() && bumps.is_empty(),
            GuardCase::LiveClaim => attached(true),
            GuardCase::DepartedClaim => attached(false) && !attached(true),
            GuardCase::OtherWorktreeChange => {
                findings.is_empty()
                    && !passed
                    && bumps.iter().any(|b| b.contains("uncommitted changes"))
            }
            GuardCase::PredictedConflict => {
                findings.is_empty()
                    && !passed
                    && bumps
                        .iter()
                        .any(|b| b.contains("predicted to conflict") && b.contains("hunk"))
            }
            GuardCase::BumpRepeat => findings.is_empty() && passed && !bumps.is_empty(),
        };
        (!ok).then(|| answer.to_string())
    }

    /// What the hook prints for this case, as a piece of its answer; `None` for nothing.
    fn printed(self) -> Option<&'static str> {
        match self {
            GuardCase::Nothing => None,
            GuardCase::LiveClaim => Some("live sessions work on what it changes"),
            GuardCase::OtherWorktreeChange => Some("has uncommitted changes to"),
            GuardCase::PredictedConflict => Some("first conflicting hunk"),
            GuardCase::DepartedClaim => Some("sessions that have left still claim"),
            GuardCase::BumpRepeat => Some("stopped once and repeated, so it goes ahead"),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            GuardCase::Nothing => "nothing found",
            GuardCase::LiveClaim => "a live session in the other worktree claims the file",
            GuardCase::OtherWorktreeChange => {
                "the other worktree changed the file without committing; each call a first attempt (the file and a note of its own)"
            }
            GuardCase::PredictedConflict => {
                "a merge with the other worktree is predicted to conflict on the file, its hunk quoted; each call a first attempt (the file and a note of its own)"
            }
            GuardCase::DepartedClaim => {
                "a departed session in the other worktree still claims the file"
            }
            GuardCase::BumpRepeat => {
                "the other worktree's changed file, edited again by the session the speed bump stopped"
            }
        }
    }
}

/// How the measured calls follow each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Pace {
    /// One after the other: the repository's reading (renewed at most once a
    /// [`CHANGES_INTERVAL`]) and the other worktree's board are as warm as they get.
    BackToBack,
    /// Each after a pause longer than a [`CHANGES_INTERVAL`], untimed, as edits come in a
    /// session: the reading is due to be renewed when the guard asks.
    AfterPause,
}

impl Pace {
    /// How long to wait, untimed, before each measured call.
    fn pause(self) -> Duration {
        match self {
            Pace::BackToBack => Duration::ZERO,
            Pace::AfterPause => CHANGES_INTERVAL + Duration::from_millis(100),
        }
    }

    /// The budget of a scenario measured at this pace: back to back, `min` to `max` calls
    /// within `seconds`; after pauses, a few dozen.
    fn budget(self, options: &Options, min: usize, max: usize, seconds: f64) -> Budget {
        match self {
            Pace::BackToBack => Budget::scenario(options, min, max, seconds),
            Pace::AfterPause => Budget::scenario(options, 20, 40, 25.0),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Pace::BackToBack => "calls back to back",
            Pace::AfterPause => {
                "each call after an untimed pause of 1.1 s, so the repository's reading (renewed at most once a second) is due when the guard asks"
            }
        }
    }
}

/// The guard's repository, made as the module says; answers it and the linked worktree.
fn guarded_repository(scratch: &Scratch, label: &str) -> Result<(TempRepository, PathBuf), String> {
    let repository = TempRepository::new(scratch, label)?;
    let root = repository.root().to_path_buf();
    write(&root.join("src/quiet.rs"), "// nobody's\n")?;
    write(&root.join("src/changed.rs"), "// as committed\n")?;
    git(&root, &["add", "."])?;
    git(&root, &["commit", "--quiet", "-m", "files to edit"])?;
    let other = repository.add_worktree("other")?;
    write(&other.join("src/lib.rs"), "// the other worktree's line\n")?;
    git(&other, &["commit", "--quiet", "-am", "the other side"])?;
    // A checkout on the default branch has work of its own to merge only uncommitted.
    write(&root.join("src/lib.rs"), "// this worktree's line\n")?;
    write(&other.join("src/changed.rs"), "// changed, not committed\n")?;
    Ok((repository, other))
}

/// A directory name of the scenario's own in the scratch directory.
fn label(scenario: &Scenario) -> String {
    scenario.name.replace('/', "-")
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text)
        .map_err(|error| format!("could not write {}: {error}", path.display()))
}

/// The other worktree's server with a live session claiming `src/parser` (kept open: the
/// caller closes it) and a departed one that claimed `src/old`.
struct OtherWorktree {
    server: ServeProcess,
    live: Caller,
}

impl OtherWorktree {
    async fn start(scratch: &Scratch, dir: &Path) -> Result<OtherWorktree, String> {
        let (server, lease) = ServeProcess::start(scratch, dir).await?;
        let claimed = async {
            let url = lease.url.clone().ok_or("the other lease names no URL")?;
            let http = http_client();
            let departed = claim(
                &http,
                &url,
                &lease.token,
                "retire the old module",
                "src/old",
            )
            .await?;
            // It leaves: its claim stays on the board, departed.
            departed.close().await;
            claim(&http, &url, &lease.token, "port the parser", "src/parser").await
        }
        .await;
        match claimed {
            Ok(live) => Ok(OtherWorktree { server, live }),
            Err(why) => {
                server.stop().await;
                Err(why)
            }
        }
    }

    async fn stop(self) {
        self.live.close().await;
        self.server.stop().await;
    }
}

/// An MCP Streamable HTTP session (as Codex) that claims `scope` for `intent`.
async fn claim(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    intent: &str,
    scope: &str,
) -> Result<Caller, String> {
    let announce = registered("peers.announce");
    let session = connect_http(http, HttpPooling::KeepAlive, url, token, "codex").await?;
    let claimant = Caller::Mcp(session);
    let outcome = claimant
        .call(announce, &json!({"intent": intent, "scope": [scope]}))
        .await;
    if outcome != Outcome::Answer {
        claimant.close().await;
        return Err(format!(
            "the other worktree's session could not claim {scope}: {}",
            outcome.detail().unwrap_or("")
        ));
    }
    Ok(claimant)
}

/// `hooks.guard` in-process from the primary's server, the board and the repository's
/// reading warm.
pub(super) async fn in_process(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    case: GuardCase,
    pace: Pace,
) -> Result<ScenarioRow, String> {
    let (repository, other_dir) = guarded_repository(scratch, &label(scenario))?;
    let other = OtherWorktree::start(scratch, &other_dir).await?;
    let server = match InProcessServer::start(repository.root()).await {
        Ok(server) => server,
        Err(why) => {
            other.stop().await;
            return Err(why);
        }
    };
    let result = async {
        let ctx = server.context();
        let guard = registered("hooks.guard");
        let input = |n: u64| {
            json!({
                "client": "claude-code",
                "session_id": "bench-guard-session",
                "paths": case.files(n),
            })
        };
        // The repository's reading and the other worktree's board arrive in the background:
        // measure once the answer is the one this case is about.
        let started = Instant::now();
        let mut attempt = 0u64;
        let first = loop {
            attempt += 1;
            let answer = guard
                .call(&ctx, input(attempt))
                .await
                .map_err(|error| format!("the guard was refused: {}", error.message))?;
            let answer = if case == GuardCase::BumpRepeat {
                attempt += 1;
                guard
                    .call(&ctx, input(attempt))
                    .await
                    .map_err(|error| format!("the guard was refused: {}", error.message))?
            } else {
                answer
            };
            match case.check_answer(&answer) {
                None => break answer,
                Some(said) if started.elapsed() > SETUP_BOUND => {
                    return Err(format!("the guard never found {case:?}: {said}"));
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        let budget = pace.budget(options, 200, 2000, 4.0);
        let attempts = Cell::new(attempt);
        let samples = budget.sample(|| async {
            attempts.set(attempts.get() + 1);
            let n = attempts.get();
            let input = input(n);
            tokio::time::sleep(pace.pause()).await;
            let started = Instant::now();
            guard
                .answer(&ctx, input)
                .await
                .map_err(|error| error.message)?;
            Ok(started.elapsed())
        })
        .await?;
        // The same kind of answer after the measured calls as before them.
        let last = guard
            .call(&ctx, input(attempts.get() + 1))
            .await
            .map_err(|error| format!("the guard was refused: {}", error.message))?;
        if let Some(said) = case.check_answer(&last) {
            return Err(format!("after the measured calls the guard said {said}"));
        }
        Ok::<_, String>(ScenarioRow::latency(
            scenario,
            Summary::of(&samples),
            format!(
                "{}: {} finding(s), {} speed bump line(s), {} bytes of JSON; in-process call from the primary's server, {}",
                case.describe(),
                first["findings"].as_array().map_or(0, Vec::len),
                first["bumps"].as_array().map_or(0, Vec::len),
                first.to_string().len(),
                pace.describe(),
            ),
        ))
    }
    .await;
    server.stop().await;
    other.stop().await;
    result
}

/// A `PreToolUse` event of `client` editing `files` (relative to `root`) in `root`.
fn pre_edit_event(client: HookClient, root: &Path, session: &str, files: &[String]) -> Vec<u8> {
    let event = match client {
        HookClient::Codex => {
            let mut patch = String::from("*** Begin Patch\n");
            for file in files {
                patch.push_str(&format!(
                    "*** Update File: {file}\n@@\n-// before\n+// after\n"
                ));
            }
            patch.push_str("*** End Patch\n");
            json!({
                "session_id": session,
                "cwd": root,
                "hook_event_name": "PreToolUse",
                "model": "gpt-5-codex",
                "tool_name": "apply_patch",
                "tool_input": {"command": patch},
            })
        }
        _ => json!({
            "session_id": session,
            "cwd": root,
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {
                "file_path": root.join(&files[0]),
                "old_string": "// before",
                "new_string": "// after",
                "replace_all": false,
            },
            "tool_use_id": "toolu_bench",
        }),
    };
    event.to_string().into_bytes()
}

/// What the process rows are read against: the same executable spawned to print its version
/// and exit (its loading, argument parsing and exit; no runtime, no request).
const PROCESS_FLOOR: &str = "`majordomus --version` spawned to its exit";

/// `majordomus hook <client> PreToolUse` spawned to its exit, with both checkouts served;
/// each run preceded by a timed run of the floor.
pub(super) async fn hook_process(
    scenario: &Scenario,
    scratch: &Scratch,
    options: &Options,
    client: HookClient,
    case: GuardCase,
    pace: Pace,
) -> Result<ScenarioRow, String> {
    let (repository, other_dir) = guarded_repository(scratch, &label(scenario))?;
    let root = repository.root().to_path_buf();
    let other = OtherWorktree::start(scratch, &other_dir).await?;
    let server = match ServeProcess::start(scratch, &root).await {
        Ok((server, _)) => server,
        Err(why) => {
            other.stop().await;
            return Err(why);
        }
    };
    let result = async {
        let session = "bench-guard-session";
        let hook = |n: u64| {
            let mut command = tokio::process::Command::new(scratch.exe());
            command
                .args(["hook", client.as_str(), "PreToolUse"])
                .current_dir(&root);
            // A session of Claude Code running the benchmark must not make its hooks ask a
            // person.
            command.env_remove("CLAUDE_CODE_ENTRYPOINT");
            let event = pre_edit_event(client, &root, session, &case.files(n));
            spawned(command, event, "majordomus")
        };
        let started = Instant::now();
        let mut attempt = 0u64;
        loop {
            attempt += 1;
            let (_, mut printed) = hook(attempt).await?;
            if case == GuardCase::BumpRepeat {
                attempt += 1;
                printed = hook(attempt).await?.1;
            }
            let expected = match case.printed() {
                None => printed.is_empty(),
                Some(piece) => printed.contains(piece),
            };
            if expected {
                break;
            }
            if started.elapsed() > SETUP_BOUND {
                return Err(format!("the hook never answered {case:?}: it printed {printed:?}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let budget = pace.budget(options, 50, 300, 5.0);
        let attempts = Cell::new(attempt);
        let floors = RefCell::new(Vec::new());
        let samples = budget.sample(|| async {
            tokio::time::sleep(pace.pause()).await;
            let mut version = tokio::process::Command::new(scratch.exe());
            version.arg("--version").current_dir(&root);
            let (floor, _) = spawned(version, Vec::new(), "majordomus").await?;
            floors.borrow_mut().push(floor);
            attempts.set(attempts.get() + 1);
            let n = attempts.get();
            let (elapsed, printed) = hook(n).await?;
            let expected = match case.printed() {
                None => printed.is_empty(),
                Some(piece) => printed.contains(piece),
            };
            if !expected {
                return Err(format!("the hook answered {printed:?} for {case:?}"));
            }
            Ok(elapsed)
        })
        .await?;
        let summary = Summary::of(&samples);
        let floor = Summary::of(&floors.borrow());
        Ok::<_, String>(
            ScenarioRow::latency(
                scenario,
                summary,
                format!(
                    "{}: spawn → read the event → find the lease → POST /api/v1/hooks/guard → the answer printed → exit, both checkouts served; {}",
                    case.describe(),
                    pace.describe()
                ),
            )
            .with_floor(ScenarioFloor::of(PROCESS_FLOOR, &summary, &floor)),
        )
    }
    .await;
    server.stop().await;
    other.stop().await;
    result
}
