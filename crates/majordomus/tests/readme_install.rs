//! The README's Install section, followed word for word on Linux: each block marked
//! `<!-- tested: NAME -->` runs through `sh` as written, in a scratch home whose hosts are
//! loopback stand-ins — an npm registry serving the packages `scripts/npm-pack.sh` packs from
//! the tested executable, and, through git's `url.<base>.insteadOf`, the repository's public
//! address leading to a local repository holding this source tree's marketplace and plugins.
//! The npm block installs a `majordomus` on PATH; the Claude Code block then brings its
//! server, which `claude mcp list` shows connected, running that executable; the Codex block
//! brings Codex's, which `codex mcp list` shows enabled.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;

use common::packages::{EndProcessesOf, NpmRegistry, PACK_DEADLINE, npm_tools};
use common::real_client::{RUN_DEADLINE, clients_dir};
use common::{TempRepo, bin, clear_git_env, git};

/// The repository's public address, as the README's commands name it.
const PUBLIC_REPOSITORY: &str = "https://github.com/majordomus/majordomus";

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate lives at crates/majordomus of the workspace")
        .to_path_buf()
}

/// The commands of the README's block marked `<!-- tested: name -->`: the `sh` fence right
/// below the mark.
fn readme_block(name: &str) -> String {
    let readme = std::fs::read_to_string(source_root().join("README.md")).unwrap();
    let mark = format!("<!-- tested: {name} -->\n```sh\n");
    let start = readme
        .find(&mark)
        .unwrap_or_else(|| panic!("the README marks a block `{name}`"))
        + mark.len();
    let length = readme[start..]
        .find("```")
        .expect("the block's fence closes");
    readme[start..start + length].to_owned()
}

/// Copies the files under `from` to `to`, directories included.
fn copy_tree(from: &Path, to: &Path) {
    let mut pending = vec![(from.to_path_buf(), to.to_path_buf())];
    while let Some((from, to)) = pending.pop() {
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                pending.push((entry.path(), target));
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
}

/// A person's machine: a scratch home whose npm installs globally under it from the loopback
/// registry and whose git fetches the public repository from a local one.
struct Machine {
    home: PathBuf,
    path: OsString,
}

impl Machine {
    /// Runs `script` through `sh` in `dir`, to its end within [`RUN_DEADLINE`].
    async fn sh(&self, script: &str, dir: &Path) -> Output {
        self.sh_within(RUN_DEADLINE, script, dir).await
    }

    /// Runs `script` through `sh` in `dir`, to its end within `deadline`.
    async fn sh_within(&self, deadline: std::time::Duration, script: &str, dir: &Path) -> Output {
        let mut command = tokio::process::Command::new("sh");
        clear_git_env(command.as_std_mut());
        command
            .args(["-eu", "-c", script])
            .current_dir(dir)
            .env("HOME", &self.home)
            .env("PATH", &self.path)
            .env("npm_config_update_notifier", "false")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_CACHE_HOME")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        tokio::time::timeout(deadline, command.output())
            .await
            .unwrap_or_else(|_| panic!("`{script}` finishes in time"))
            .expect("sh starts")
    }

    async fn sh_ok(&self, script: &str, dir: &Path) -> String {
        let output = self.sh(script, dir).await;
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success(),
            "`{script}` failed ({}):\n{printed}",
            output.status
        );
        printed
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_readme_install_section_works_as_written() {
    let repo = TempRepo::new();
    let base = repo.base().to_path_buf();
    let home = base.join("home-readme");
    let prefix = home.join(".npm-global");
    std::fs::create_dir_all(&home).unwrap();
    let tools = npm_tools(&base);
    let mut paths = vec![prefix.join("bin"), tools, clients_dir().join("bin")];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let machine = Machine {
        home: home.clone(),
        path: std::env::join_paths(paths).unwrap(),
    };

    // The npm registry, holding the two packages packed from the tested executable.
    let tarballs = base.join("tarballs");
    let pack = format!(
        "bash '{}' '{}' '{}'",
        source_root().join("scripts/npm-pack.sh").display(),
        bin().display(),
        tarballs.display()
    );
    let packed = machine
        .sh_within(PACK_DEADLINE, &pack, &source_root())
        .await;
    assert!(packed.status.success(), "`{pack}` failed: {packed:?}");
    // Every other platform's package is listed as the registry lists it, packed here without
    // an executable: npm must pass them over.
    let platforms: Vec<String> = std::fs::read_to_string(source_root().join("npm/platforms.tsv"))
        .unwrap()
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| line.split('\t').next().unwrap().to_owned())
        .collect();
    for package in platforms.iter().filter(|p| *p != "majordomus-linux-x64") {
        let copy = base.join("other-platforms").join(package);
        copy_tree(&source_root().join("npm").join(package), &copy);
        let pack = format!(
            "npm pack --silent --pack-destination '{}'",
            tarballs.display()
        );
        machine.sh_ok(&pack, &copy).await;
    }
    let registry = NpmRegistry::start().await;
    let version = env!("CARGO_PKG_VERSION");
    for package in platforms.iter().map(String::as_str).chain(["majordomus"]) {
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(source_root().join(format!("npm/{package}/package.json")))
                .unwrap(),
        )
        .unwrap();
        let tarball = std::fs::read(tarballs.join(format!("{package}-{version}.tgz"))).unwrap();
        registry.publish(&manifest, tarball);
    }
    std::fs::write(
        home.join(".npmrc"),
        format!(
            "registry={}\nprefix={}\ncache={}\n",
            registry.url(),
            prefix.display(),
            home.join(".npm-cache").display()
        ),
    )
    .unwrap();

    // The public repository, as a local one holding this tree's marketplace and plugins.
    let published = base.join("published");
    for dir in [".claude-plugin", "plugins"] {
        copy_tree(&source_root().join(dir), &published.join(dir));
    }
    git(&published, &["init", "--quiet", "--initial-branch=main"]);
    git(&published, &["add", "--all"]);
    git(&published, &["commit", "--quiet", "--message", "release"]);
    let mut gitconfig = format!("[url \"{}\"]\n", published.display());
    for address in [
        PUBLIC_REPOSITORY.to_owned(),
        format!("{PUBLIC_REPOSITORY}.git"),
    ] {
        gitconfig.push_str(&format!("\tinsteadOf = {address}\n"));
    }
    std::fs::write(home.join(".gitconfig"), gitconfig).unwrap();

    // The npm way, as written.
    machine.sh_ok(&readme_block("npm"), &home).await;
    assert_eq!(registry.downloads("majordomus", version), 1);
    for package in &platforms {
        let expected = usize::from(package == "majordomus-linux-x64");
        assert_eq!(
            registry.downloads(package, version),
            expected,
            "npm downloads this platform's package and no other's: {package}"
        );
    }
    let found = machine
        .sh_ok("command -v majordomus && majordomus --version", &home)
        .await;
    assert_eq!(
        found.lines().collect::<Vec<_>>(),
        [
            prefix.join("bin/majordomus").to_str().unwrap(),
            &format!("majordomus {version}"),
        ],
        "npm put the launcher on PATH and it runs the packaged executable"
    );
    let packaged = [
        "lib/node_modules/majordomus/node_modules/majordomus-linux-x64/bin/majordomus",
        "lib/node_modules/majordomus-linux-x64/bin/majordomus",
    ]
    .into_iter()
    .map(|relative| prefix.join(relative))
    .find(|path| path.is_file())
    .expect("the platform package carries the executable");
    let _end_servers = EndProcessesOf(std::fs::canonicalize(packaged).unwrap());

    // The Claude Code plugin, as written, in a checkout; its server is that executable.
    let checkout = repo.root().to_path_buf();
    machine.sh_ok(&readme_block("claude-code"), &checkout).await;
    let listing = machine.sh_ok("claude mcp list", &checkout).await;
    let lines: Vec<&str> = listing
        .lines()
        .filter(|line| line.contains("majordomus"))
        .collect();
    assert!(
        lines.len() == 1
            && lines[0].contains("plugin:majordomus:majordomus")
            && lines[0].contains("majordomus mcp")
            && lines[0].contains("Connected"),
        "claude mcp list shows the plugin's server connected:\n{listing}"
    );

    // The Codex plugin, as written.
    machine.sh_ok(&readme_block("codex"), &checkout).await;
    let listing = machine.sh_ok("codex mcp list", &checkout).await;
    // Codex's warnings may name the temporary directory, whose name has majordomus in it.
    let lines: Vec<&str> = listing
        .lines()
        .filter(|line| line.starts_with("majordomus"))
        .collect();
    assert!(
        lines.len() == 1 && lines[0].contains("mcp") && lines[0].contains("enabled"),
        "codex mcp list shows the plugin's server enabled:\n{listing}"
    );
}
