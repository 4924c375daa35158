//! The release as a person installs it: the Linux x86_64 archive, its SHA-256 sum and the
//! shell installer that cargo-dist built from the workspace's release configuration
//! (`bash scripts/dist-build.sh`, which scripts/test.sh runs, writes them to
//! `<target dir>/distrib`). The installer, run in a scratch home and pointed at a loopback
//! server holding the archive instead of the release host, installs a `majordomus` that answers
//! `--version`; served a corrupted archive, it refuses it on its checksum. The npm packages
//! a release publishes are packed from its archives: each platform's package carries the
//! executable of its target's archive, once its sum is checked.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use sha2::{Digest as _, Sha256};

use common::file_server::FileServer;
use common::packages::npm_tools;
use common::real_client::RUN_DEADLINE;

const ARCHIVE: &str = "majordomus-x86_64-unknown-linux-gnu.tar.xz";
const INSTALLER: &str = "majordomus-installer.sh";

/// Where `dist build` put the release artifacts, each of them there.
fn distrib() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target dir holds the tests' tmp dir")
        .join("distrib");
    for file in [
        ARCHIVE.to_owned(),
        format!("{ARCHIVE}.sha256"),
        INSTALLER.to_owned(),
    ] {
        assert!(
            dir.join(&file).is_file(),
            "{} is missing; run `bash scripts/dist-build.sh` (scripts/test.sh does)",
            dir.join(&file).display()
        );
    }
    dir
}

/// Runs the shell installer as `curl … | sh` would, in the scratch `home`, downloading from
/// `download_url`, with nothing of this process's environment but PATH.
async fn run_installer(installer: &[u8], home: &Path, download_url: &str) -> Output {
    let mut command = tokio::process::Command::new("sh");
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("SHELL", "/bin/sh")
        .env("MAJORDOMUS_DOWNLOAD_URL", download_url)
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("sh starts");
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, installer)
        .await
        .unwrap();
    drop(stdin);
    tokio::time::timeout(RUN_DEADLINE, child.wait_with_output())
        .await
        .expect("the installer finishes in time")
        .unwrap()
}

fn printed(output: &Output) -> String {
    format!(
        "{}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_shell_installer_installs_the_archive_it_names() {
    let distrib = distrib();
    let archive = std::fs::read(distrib.join(ARCHIVE)).unwrap();
    let installer = std::fs::read(distrib.join(INSTALLER)).unwrap();

    let sum = std::fs::read_to_string(distrib.join(format!("{ARCHIVE}.sha256"))).unwrap();
    let digest = hex::encode(Sha256::digest(&archive));
    assert_eq!(
        sum.split_whitespace().next(),
        Some(digest.as_str()),
        "the checksum file is the archive's SHA-256: {sum}"
    );

    let scratch = tempfile::tempdir().unwrap();
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let host = FileServer::start().await;
    host.put(&format!("/{ARCHIVE}"), archive);

    let output = run_installer(&installer, &home, host.url()).await;
    assert!(output.status.success(), "{}", printed(&output));
    assert_eq!(
        host.fetched(&format!("/{ARCHIVE}")),
        1,
        "the archive came from the loopback host"
    );

    // What the installer tells a person to run, then the executable it put on that PATH.
    let installed = home.join(".cargo/bin/majordomus");
    assert!(installed.is_file(), "{}", printed(&output));
    let version = std::process::Command::new("sh")
        .args(["-c", ". \"$HOME/.cargo/env\" && majordomus --version"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(version.status.success(), "{}", printed(&version));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("majordomus {}", env!("CARGO_PKG_VERSION")),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_shell_installer_refuses_an_archive_that_is_not_the_one_it_names() {
    let distrib = distrib();
    let mut archive = std::fs::read(distrib.join(ARCHIVE)).unwrap();
    let installer = std::fs::read(distrib.join(INSTALLER)).unwrap();
    let middle = archive.len() / 2;
    archive[middle] ^= 0xff;

    let scratch = tempfile::tempdir().unwrap();
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let host = FileServer::start().await;
    host.put(&format!("/{ARCHIVE}"), archive);

    let output = run_installer(&installer, &home, host.url()).await;
    assert!(!output.status.success(), "{}", printed(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("checksum mismatch"),
        "{}",
        printed(&output)
    );
    assert!(!home.join(".cargo/bin/majordomus").exists());
}

/// The workspace, where `scripts/` and `npm/` are.
fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// The npm platform packages as `npm/platforms.tsv` lists them: package, release target,
/// executable.
fn npm_platforms() -> Vec<(String, String, String)> {
    std::fs::read_to_string(source_root().join("npm/platforms.tsv"))
        .unwrap()
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 3, "{line}");
            (fields[0].into(), fields[1].into(), fields[2].into())
        })
        .collect()
}

/// Runs `scripts/npm-pack.sh --release ARCHIVES OUT` with npm on PATH in a scratch home.
async fn npm_pack_release(scratch: &Path, archives: &Path, out: &Path) -> Output {
    let home = scratch.join("home-npm");
    std::fs::create_dir_all(&home).unwrap();
    let mut paths = vec![npm_tools(scratch)];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut command = tokio::process::Command::new("bash");
    command
        .arg(source_root().join("scripts/npm-pack.sh"))
        .arg("--release")
        .arg(archives)
        .arg(out)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("HOME", &home)
        .env("npm_config_cache", home.join("npm-cache"))
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(RUN_DEADLINE, command.output())
        .await
        .expect("npm-pack finishes in time")
        .unwrap()
}

fn run(program: &str, args: &[&OsStr], dir: &Path) {
    let output = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{program}: {}", printed(&output));
}

/// The release archives of every target: Linux x86_64's the one `dist build` made, each other
/// one as cargo-dist lays it out (`majordomus-<target>/` holding the executable, or a flat
/// `.zip` for Windows) around a stand-in executable naming its target, each with its `.sha256`.
fn release_archives(dir: &Path) -> Vec<(String, String, String)> {
    let platforms = npm_platforms();
    std::fs::create_dir_all(dir).unwrap();
    let distrib = distrib();
    for (_, target, executable) in &platforms {
        let name = if target.contains("windows") {
            format!("majordomus-{target}.zip")
        } else {
            format!("majordomus-{target}.tar.xz")
        };
        if name == ARCHIVE {
            std::fs::copy(distrib.join(ARCHIVE), dir.join(ARCHIVE)).unwrap();
        } else {
            let stage = dir.join(format!("stage-{target}"));
            let inner = stage.join(format!("majordomus-{target}"));
            std::fs::create_dir_all(&inner).unwrap();
            std::fs::write(inner.join(executable), format!("stand-in for {target}\n")).unwrap();
            let archive = dir.join(&name);
            if name.ends_with(".zip") {
                let zipped = [
                    OsStr::new("-m"),
                    OsStr::new("zipfile"),
                    OsStr::new("-c"),
                    archive.as_os_str(),
                    OsStr::new(executable),
                ];
                run("python3", &zipped, &inner);
            } else {
                let folder = OsStr::new(inner.file_name().unwrap());
                let tarred = [OsStr::new("-cJf"), archive.as_os_str(), folder];
                run("tar", &tarred, &stage);
            }
            std::fs::remove_dir_all(&stage).unwrap();
        }
        let digest = hex::encode(Sha256::digest(std::fs::read(dir.join(&name)).unwrap()));
        std::fs::write(
            dir.join(format!("{name}.sha256")),
            format!("{digest} *{name}\n"),
        )
        .unwrap();
    }
    platforms
}

/// The file `path` of the npm tarball `tarball`, unpacked under `into`.
fn unpacked(tarball: &Path, into: &Path, path: &str) -> PathBuf {
    std::fs::create_dir_all(into).unwrap();
    let args = [
        OsStr::new("-xzf"),
        tarball.as_os_str(),
        OsStr::new("-C"),
        into.as_os_str(),
    ];
    run("tar", &args, into);
    into.join("package").join(path)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_releases_npm_packages_carry_each_targets_executable_from_its_archive() {
    let scratch = tempfile::tempdir().unwrap();
    let archives = scratch.path().join("archives");
    let platforms = release_archives(&archives);
    let out = scratch.path().join("packed");

    let output = npm_pack_release(scratch.path(), &archives, &out).await;
    assert!(output.status.success(), "{}", printed(&output));
    let tarballs: Vec<PathBuf> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(tarballs.len(), platforms.len() + 1, "{}", printed(&output));
    assert_eq!(
        tarballs.last().unwrap(),
        &out.join(format!("majordomus-{version}.tgz")),
        "the launcher is packed last, so that it is published after what it depends on"
    );

    // The Linux x86_64 executable as the real archive holds it.
    let real = scratch.path().join("real");
    std::fs::create_dir_all(&real).unwrap();
    let real_archive = archives.join(ARCHIVE);
    let args = [
        OsStr::new("-xJf"),
        real_archive.as_os_str(),
        OsStr::new("-C"),
        real.as_os_str(),
    ];
    run("tar", &args, &real);
    let real_executable = std::fs::read(
        real.join("majordomus-x86_64-unknown-linux-gnu")
            .join("majordomus"),
    )
    .unwrap();

    for ((package, target, executable), tarball) in platforms.iter().zip(&tarballs) {
        assert_eq!(
            tarball,
            &out.join(format!("{package}-{version}.tgz")),
            "{}",
            printed(&output)
        );
        let into = scratch.path().join("unpacked").join(package);
        let carried = unpacked(tarball, &into, &format!("bin/{executable}"));
        let bytes = std::fs::read(&carried).unwrap();
        if target == "x86_64-unknown-linux-gnu" {
            assert!(
                bytes == real_executable,
                "{package} carries the archive's executable"
            );
        } else {
            assert_eq!(
                String::from_utf8_lossy(&bytes),
                format!("stand-in for {target}\n")
            );
        }
        assert_eq!(
            common::mode(&carried) & 0o111,
            0o111,
            "{package}'s executable may be run"
        );
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(into.join("package/package.json")).unwrap())
                .unwrap();
        let (os, cpu) = package
            .strip_prefix("majordomus-")
            .and_then(|platform| platform.split_once('-'))
            .unwrap();
        assert_eq!(manifest["os"], serde_json::json!([os]), "{package}");
        assert_eq!(manifest["cpu"], serde_json::json!([cpu]), "{package}");
    }
    let launcher = unpacked(
        tarballs.last().unwrap(),
        &scratch.path().join("unpacked/launcher"),
        "package.json",
    );
    let launcher: serde_json::Value =
        serde_json::from_slice(&std::fs::read(launcher).unwrap()).unwrap();
    let mut depended: Vec<&str> = launcher["optionalDependencies"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    depended.sort_unstable();
    let mut packed: Vec<&str> = platforms.iter().map(|(p, _, _)| p.as_str()).collect();
    packed.sort_unstable();
    assert_eq!(depended, packed);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_release_is_not_packed_for_npm_from_an_archive_that_fails_its_sum_or_is_missing() {
    let scratch = tempfile::tempdir().unwrap();
    let archives = scratch.path().join("archives");
    release_archives(&archives);
    let windows = "majordomus-x86_64-pc-windows-msvc.zip";
    std::fs::write(
        archives.join(format!("{windows}.sha256")),
        format!("{} *{windows}\n", "0".repeat(64)),
    )
    .unwrap();
    let output = npm_pack_release(scratch.path(), &archives, &scratch.path().join("a")).await;
    assert!(!output.status.success(), "{}", printed(&output));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains(windows) && said.contains("does not match its sum"),
        "{}",
        printed(&output)
    );

    std::fs::remove_file(archives.join(windows)).unwrap();
    let output = npm_pack_release(scratch.path(), &archives, &scratch.path().join("b")).await;
    assert!(!output.status.success(), "{}", printed(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("no release archive for x86_64-pc-windows-msvc"),
        "{}",
        printed(&output)
    );
}
