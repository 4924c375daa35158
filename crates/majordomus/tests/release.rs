//! The release as a person installs it: the Linux x86_64 archive, its SHA-256 sum and the
//! shell installer that cargo-dist built from the workspace's release configuration
//! (`bash scripts/dist-build.sh`, which scripts/test.sh runs, writes them to
//! `<target dir>/distrib`). The installer, run in a scratch home and pointed at a loopback
//! server holding the archive instead of the release host, installs a `majordomus` that answers
//! `--version`; served a corrupted archive, it refuses it on its checksum.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use sha2::{Digest as _, Sha256};

use common::file_server::FileServer;
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
