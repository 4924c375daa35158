//! Merge conflicts predicted between worktrees, end to end: real worktrees with committed and
//! uncommitted work, a real server asked over MCP, the CLI, and a git too old to merge.

mod common;

use std::fs;
use std::path::Path;

use common::*;
use serde_json::{Value, json};

fn lines(n: usize) -> String {
    (0..n).map(|k| format!("line {k}\n")).collect()
}

/// Replaces line `at` of `path` in the worktree `root`.
fn edit(root: &Path, path: &str, at: usize, text: &str) {
    let body = fs::read_to_string(root.join(path)).unwrap();
    let edited: String = body
        .lines()
        .enumerate()
        .map(|(k, line)| {
            if k == at {
                format!("{text}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    fs::write(root.join(path), edited).unwrap();
}

/// The worktrees of each predicted conflict, by directory name, with its paths.
fn conflict_pairs(answer: &Value) -> Vec<(String, String, Vec<String>)> {
    let name = |side: &Value| {
        Path::new(side["worktree"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    answer["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let paths = c["paths"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap().to_owned())
                .collect();
            (name(&c["ours"]), name(&c["theirs"]), paths)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_lines_edited_in_two_worktrees_are_predicted_to_conflict() {
    let repo = TempRepo::new();
    fs::write(repo.root().join("src/parser.rs"), lines(40)).unwrap();
    git(repo.root(), &["add", "."]);
    git(repo.root(), &["commit", "--quiet", "-m", "parser"]);
    let alpha = repo.add_worktree("alpha");
    let beta = repo.add_worktree("beta");
    let gamma = repo.add_worktree("gamma");
    // alpha committed an edit of line 3, beta has the same line edited and not committed,
    // gamma edited another part of the file
    edit(&alpha, "src/parser.rs", 3, "alpha's line");
    git(&alpha, &["commit", "--quiet", "-am", "alpha"]);
    edit(&beta, "src/parser.rs", 3, "beta's line");
    edit(&gamma, "src/parser.rs", 30, "gamma's line");
    fs::write(gamma.join("notes.md"), "untracked\n").unwrap();

    let worktrees = [
        repo.root().to_path_buf(),
        alpha.clone(),
        beta.clone(),
        gamma.clone(),
    ];
    let status = || -> Vec<String> { worktrees.iter().map(|w| porcelain(w)).collect() };
    let refs = || git(repo.root(), &["for-each-ref"]);
    let (status_before, refs_before) = (status(), refs());

    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let client = McpClient::http(&lease, "codex", "0.171.0").await;
    let answer = client.answer("majordomus_conflicts", json!({})).await;
    assert_eq!(answer["complete"], true, "{answer:#}");
    assert_eq!(
        answer["worktrees"].as_array().unwrap().len(),
        4,
        "{answer:#}"
    );
    assert_eq!(
        conflict_pairs(&answer),
        [(
            "alpha".to_owned(),
            "beta".to_owned(),
            vec!["src/parser.rs".to_owned()]
        )],
        "only alpha and beta touch the same lines: {answer:#}"
    );
    assert_eq!(
        answer["pairs"], 3,
        "alpha, beta and gamma have changes: {answer:#}"
    );
    let beta_view = find(&answer["worktrees"], "worktree", &display(&beta));
    assert_eq!(beta_view["uncommitted"], true);
    assert_eq!(beta_view["changed"], 1);

    // asked again, the same answer, from what was kept
    let again = client.answer("majordomus_conflicts", json!({})).await;
    assert_eq!(conflict_pairs(&again), conflict_pairs(&answer));

    let cli = run_cli(
        &repo,
        ["conflicts", "--repo", repo.root().to_str().unwrap()],
    )
    .await;
    let text = String::from_utf8_lossy(&cli.stdout);
    assert!(cli.status.success(), "{text}");
    assert!(
        text.contains("conflict: ") && text.contains("src/parser.rs") && text.contains("alpha"),
        "{text}"
    );

    // beta moves its edit elsewhere: no conflict left
    edit(&beta, "src/parser.rs", 3, "line 3");
    edit(&beta, "src/parser.rs", 12, "beta's other line");
    let moved = eventually("the prediction follows beta's edit", || async {
        let answer = client.answer("majordomus_conflicts", json!({})).await;
        let pairs = conflict_pairs(&answer);
        if pairs.is_empty() {
            Ok(answer)
        } else {
            Err(format!("still predicted: {pairs:?}"))
        }
    })
    .await;
    assert_eq!(moved["complete"], true);

    assert_eq!(status(), status_before, "no worktree's status moved");
    assert_eq!(refs(), refs_before, "no ref was written");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_older_than_2_38_is_named_in_the_answer() {
    let repo = TempRepo::new();
    let alpha = repo.add_worktree("alpha");
    fs::write(alpha.join("new.rs"), "x\n").unwrap();
    // a `git` first on PATH that says it is 2.37 and otherwise is the real git
    let shim = repo.base().join("old-git");
    fs::create_dir_all(&shim).unwrap();
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = version ] || [ \"$3\" = version ]; then echo 'git version 2.37.1'; exit 0; fi\nexec {} \"$@\"\n",
        real.trim()
    );
    fs::write(shim.join("git"), script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(shim.join("git"), fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", shim.display(), std::env::var("PATH").unwrap());

    let (_, log) = repo.log_file("conflicts");
    let mut command = majordomus_command(["conflicts", "--json", "--repo"]);
    command.arg(repo.root()).env("PATH", path);
    command.stdout(std::process::Stdio::piped()).stderr(log);
    let output = command.output().await.unwrap();
    assert!(output.status.success());
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    let reason = answer["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("git 2.38") && reason.contains("2.37.1"),
        "{answer:#}"
    );
    assert_eq!(answer["complete"], false);
    assert!(answer["conflicts"].as_array().unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// What predicting leaves in the repository

/// `git count-objects -v` of the repository: its loose objects and the objects in its packs.
fn object_count(root: &Path) -> (u64, u64) {
    let report = git(root, &["count-objects", "-v"]);
    let field = |name: &str| {
        report
            .lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in {report}"))
    };
    (field("count:"), field("in-pack:"))
}

/// Every file under the repository's `objects/`: loose objects, packs and their indexes.
fn object_files(root: &Path) -> Vec<String> {
    let objects = root.join(".git/objects");
    let mut files = Vec::new();
    let mut dirs = vec![objects.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            } else {
                let path = entry.path();
                files.push(path.strip_prefix(&objects).unwrap().display().to_string());
            }
        }
    }
    files.sort();
    files
}

/// The scratch areas processes have in the repository, by name.
fn scratch_areas(root: &Path) -> Vec<String> {
    let mut areas: Vec<String> = fs::read_dir(root.join(".git/majordomus/scratch"))
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    areas.sort();
    areas
}

/// The entries of one scratch area, by name.
fn area_entries(root: &Path, area: &str) -> Vec<String> {
    let dir = root.join(".git/majordomus/scratch").join(area);
    let mut entries: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    entries
}

/// Each worktree's index file, byte for byte.
fn indexes(worktrees: &[std::path::PathBuf]) -> Vec<Vec<u8>> {
    worktrees
        .iter()
        .map(|w| fs::read(git_dir(w).join("index")).unwrap())
        .collect()
}

/// `GET /api/v1/conflicts` of the server the lease names; a cold prediction over many
/// worktrees runs hundreds of git commands, so the wait is longer than a probe's.
async fn predict_over_rest(lease: &LeaseFile) -> Value {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    let client = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .no_proxy()
            .timeout(std::time::Duration::from_secs(120))
            .build()
            .unwrap()
    });
    let response = client
        .get(format!("{}/api/v1/conflicts", lease.url()))
        .bearer_auth(&lease.token)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response.json().await.unwrap()
}

/// How many predictions the test below makes after the first, each after an edit.
const PREDICTIONS: usize = 31;

/// How many worktrees it predicts over, the primary included.
const WORKTREES: usize = 31;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn predictions_add_nothing_to_the_object_store_and_leave_nothing_behind() {
    let repo = TempRepo::new();
    fs::write(repo.root().join("src/parser.rs"), lines(4 * WORKTREES)).unwrap();
    git(repo.root(), &["add", "."]);
    git(repo.root(), &["commit", "--quiet", "-m", "parser"]);
    let mut worktrees = vec![repo.root().to_path_buf()];
    for n in 1..WORKTREES {
        worktrees.push(repo.add_worktree(&format!("w{n:02}")));
    }
    // every worktree edits its own line, uncommitted, and has an untracked file; w01 and
    // w02 edit the same line, so one pair conflicts
    for (n, worktree) in worktrees.iter().enumerate() {
        let line = if n == 2 { 4 } else { 4 * n };
        edit(worktree, "src/parser.rs", line, &format!("edited in {n}"));
        fs::write(worktree.join(format!("notes-{n}.md")), "notes\n").unwrap();
    }
    let (objects_before, files_before) = (object_count(repo.root()), object_files(repo.root()));
    let refs_before = git(repo.root(), &["for-each-ref"]);
    let status = || -> Vec<String> { worktrees.iter().map(|w| porcelain(w)).collect() };
    let status_before = status();
    let indexes_before = indexes(&worktrees);

    let (mut serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let first = predict_over_rest(&lease).await;
    assert_eq!(first["pairs"], 256, "the cap on merged pairs: {first:#}");
    assert_eq!(
        conflict_pairs(&first),
        [(
            "w01".to_owned(),
            "w02".to_owned(),
            vec!["src/parser.rs".to_owned()]
        )],
        "{first:#}"
    );
    for round in 0..PREDICTIONS {
        let worktree = &worktrees[round % WORKTREES];
        let n = round % WORKTREES;
        let line = if n == 2 { 4 } else { 4 * n };
        edit(
            worktree,
            "src/parser.rs",
            line,
            &format!("edited in {n}, round {round}"),
        );
        fs::write(
            worktree.join(format!("notes-{n}.md")),
            format!("round {round}\n"),
        )
        .unwrap();
        let answer = predict_over_rest(&lease).await;
        assert_eq!(answer["pairs"], 256, "{answer:#}");
        let view = find(&answer["worktrees"], "worktree", &display(worktree));
        assert!(view["snapshot"].is_string(), "{answer:#}");
    }
    let objects_after = object_count(repo.root());
    eprintln!(
        "{} predictions over {WORKTREES} worktrees: count + in-pack {:?} before, {:?} after",
        PREDICTIONS + 1,
        objects_before,
        objects_after
    );
    assert_eq!(
        objects_after, objects_before,
        "git count-objects -v: loose, in-pack"
    );
    assert_eq!(
        object_files(repo.root()),
        files_before,
        "no file appeared in .git/objects"
    );
    assert_eq!(
        indexes(&worktrees),
        indexes_before,
        "no worktree's index was written"
    );
    assert_eq!(status(), status_before, "no worktree's status moved");
    assert_eq!(
        git(repo.root(), &["for-each-ref"]),
        refs_before,
        "no ref was written"
    );

    // the server's one area, private, holds at most a snapshot per worktree at rest
    let [area] = &scratch_areas(repo.root())[..] else {
        panic!("one area: {:?}", scratch_areas(repo.root()));
    };
    assert!(area.starts_with(&format!("{}-", serve.pid())), "{area}");
    assert_eq!(
        mode(&repo.root().join(".git/majordomus/scratch").join(area)),
        0o700
    );
    eventually("the area at rest", || async {
        let entries = area_entries(repo.root(), area);
        if entries.len() <= WORKTREES && entries.iter().all(|e| e.starts_with("objects-")) {
            Ok(())
        } else {
            Err(format!("{} entries: {entries:?}", entries.len()))
        }
    })
    .await;

    // an ordered stop leaves no area behind
    serve.signal(libc::SIGTERM);
    assert!(serve.wait_exit().await.success(), "{}", serve.output());
    assert_eq!(scratch_areas(repo.root()), Vec::<String>::new());

    // a server killed with SIGKILL leaves its area; the next server to start removes it
    let (mut killed, lease) = ServeProcess::start(&repo, repo.root()).await;
    predict_over_rest(&lease).await;
    let [left] = &scratch_areas(repo.root())[..] else {
        panic!("one area: {:?}", scratch_areas(repo.root()));
    };
    let left = left.clone();
    killed.kill9().await;
    assert_eq!(
        scratch_areas(repo.root()),
        std::slice::from_ref(&left),
        "kill -9 leaves it"
    );
    let (_next, _) = ServeProcess::start(&repo, repo.root()).await;
    eventually("the dead server's area to be removed", || async {
        let areas = scratch_areas(repo.root());
        if areas.contains(&left) {
            Err(format!("still there: {areas:?}"))
        } else {
            Ok(())
        }
    })
    .await;
    assert_eq!(object_count(repo.root()), objects_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untracked_file_of_100_mb_is_not_hashed_and_the_answer_names_it() {
    let repo = TempRepo::new();
    fs::write(repo.root().join("src/parser.rs"), lines(40)).unwrap();
    git(repo.root(), &["add", "."]);
    git(repo.root(), &["commit", "--quiet", "-m", "parser"]);
    let alpha = repo.add_worktree("alpha");
    let beta = repo.add_worktree("beta");
    edit(&alpha, "src/parser.rs", 3, "alpha's line");
    fs::write(alpha.join("notes.md"), "small and untracked\n").unwrap();
    fs::create_dir_all(alpha.join("data")).unwrap();
    // sparse: 100 MB on paper, nothing on disk, and as slow to hash as any other 100 MB
    let dump = fs::File::create(alpha.join("data/dump.bin")).unwrap();
    dump.set_len(100 * 1024 * 1024).unwrap();
    edit(&beta, "src/parser.rs", 30, "beta's line");
    let (objects_before, files_before) = (object_count(repo.root()), object_files(repo.root()));

    let (_serve, lease) = ServeProcess::start(&repo, repo.root()).await;
    let answer = predict_over_rest(&lease).await;
    assert_eq!(answer["complete"], true, "{answer:#}");
    let alpha_view = find(&answer["worktrees"], "worktree", &display(&alpha));
    assert_eq!(
        alpha_view["not_hashed"],
        json!(["data/dump.bin"]),
        "{answer:#}"
    );
    let beta_view = find(&answer["worktrees"], "worktree", &display(&beta));
    assert!(beta_view.get("not_hashed").is_none(), "{answer:#}");

    // the snapshot, read through the server's area, holds the small file and not the big one
    let [area] = &scratch_areas(repo.root())[..] else {
        panic!("one area: {:?}", scratch_areas(repo.root()));
    };
    let area = repo.root().join(".git/majordomus/scratch").join(area);
    let alternates: Vec<String> = fs::read_dir(&area)
        .unwrap()
        .flatten()
        .map(|entry| entry.path().display().to_string())
        .collect();
    let mut ls_tree = std::process::Command::new("git");
    ls_tree
        .arg("-C")
        .arg(repo.root())
        .args(["ls-tree", "-r", "--name-only"])
        .arg(alpha_view["snapshot"].as_str().unwrap());
    clear_git_env(&mut ls_tree);
    ls_tree.env("GIT_ALTERNATE_OBJECT_DIRECTORIES", alternates.join(":"));
    let tree = ls_tree.output().unwrap();
    let tree = String::from_utf8_lossy(&tree.stdout);
    assert!(
        tree.contains("notes.md") && !tree.contains("dump.bin"),
        "the snapshot holds: {tree}"
    );

    // the listing's summary says so too
    let client = McpClient::http(&lease, "codex", "0.171.0").await;
    let summary = eventually("the listing's summary", || async {
        let listing = client
            .answer("majordomus_peers", json!({"checkouts": "repository"}))
            .await;
        let not_hashed = listing["conflicts"]["not_hashed"].clone();
        if not_hashed.is_array() {
            Ok(not_hashed)
        } else {
            Err(format!("{:#}", listing["conflicts"]))
        }
    })
    .await;
    assert_eq!(
        summary,
        json!([{"worktree": display(&alpha), "paths": ["data/dump.bin"]}])
    );
    client.close().await;

    // so does the command line, which predicts in its own process and leaves no area
    let cli = run_cli(
        &repo,
        ["conflicts", "--repo", repo.root().to_str().unwrap()],
    )
    .await;
    let text = String::from_utf8_lossy(&cli.stdout);
    assert!(cli.status.success(), "{text}");
    assert!(
        text.contains("not hashed") && text.contains("data/dump.bin"),
        "{text}"
    );
    assert_eq!(
        scratch_areas(repo.root()).len(),
        1,
        "only the server's area"
    );

    assert_eq!(
        object_count(repo.root()),
        objects_before,
        "nothing was added"
    );
    assert_eq!(object_files(repo.root()), files_before);
}
