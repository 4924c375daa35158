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
