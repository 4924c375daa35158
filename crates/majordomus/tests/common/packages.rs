//! What the package tests share: the installed Node's own npm, a loopback npm registry that
//! serves the packages `scripts/npm-pack.sh` packed, and the clean-up of the servers a
//! packaged copy of `majordomus` started.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha512};

use super::file_server::FileServer;
use super::real_client::clients_dir;

/// How long `scripts/npm-pack.sh` may take to pack the tested executable: a debug build of
/// some 300 MB that npm gzips, about 25 s of one core, twice that on a loaded machine.
pub(crate) const PACK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);

/// A directory holding an `npm` that runs the installed Node's own npm (its wheel's `npm`
/// script expects another layout).
pub(crate) fn npm_tools(base: &Path) -> PathBuf {
    let clients = clients_dir();
    let node = clients.join("bin/node");
    let npm_cli = std::fs::canonicalize(&node)
        .expect("node resolves")
        .parent()
        .and_then(Path::parent)
        .expect("node sits in bin/ of its installation")
        .join("lib/node_modules/npm/bin/npm-cli.js");
    assert!(
        npm_cli.is_file(),
        "npm comes with the installed Node: {}",
        npm_cli.display()
    );
    let tools = base.join("npm-tools");
    std::fs::create_dir_all(&tools).unwrap();
    let shim = tools.join("npm");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nexec '{}' '{}' \"$@\"\n",
            node.display(),
            npm_cli.display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&shim).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&shim, permissions).unwrap();
    tools
}

/// A loopback stand-in for the npm registry: each published package is listed with the one
/// version its tarball holds, and the tarball is served beside it.
pub(crate) struct NpmRegistry {
    host: FileServer,
}

impl NpmRegistry {
    pub(crate) async fn start() -> NpmRegistry {
        NpmRegistry {
            host: FileServer::start().await,
        }
    }

    /// The registry's URL, as npm's `registry` setting takes it.
    pub(crate) fn url(&self) -> String {
        format!("{}/", self.host.url())
    }

    /// Lists the package whose `package.json` is `manifest`, at its version, served from
    /// `tarball`.
    pub(crate) fn publish(&self, manifest: &Value, tarball: Vec<u8>) {
        let name = manifest["name"].as_str().expect("a package has a name");
        let version = manifest["version"]
            .as_str()
            .expect("a package has a version");
        let tarball_path = format!("/{name}/-/{name}-{version}.tgz");
        let integrity = format!(
            "sha512-{}",
            base64::engine::general_purpose::STANDARD.encode(Sha512::digest(&tarball))
        );
        let mut listed = manifest.clone();
        listed["dist"] = json!({
            "tarball": format!("{}{tarball_path}", self.host.url()),
            "integrity": integrity,
        });
        let packument = json!({
            "name": name,
            "dist-tags": {"latest": version},
            "versions": {version: listed},
        });
        self.host.put(&format!("/{name}"), packument.to_string());
        self.host.put(&tarball_path, tarball);
    }

    /// How many times the tarball of `name` at `version` was downloaded.
    pub(crate) fn downloads(&self, name: &str, version: &str) -> usize {
        self.host
            .fetched(&format!("/{name}/-/{name}-{version}.tgz"))
    }
}

/// Ends, when dropped, every process running the executable at its path: the server a
/// packaged copy's `majordomus mcp` started for a checkout runs that copy, not the tested
/// binary the repository's own clean-up looks for.
pub(crate) struct EndProcessesOf(pub PathBuf);

impl Drop for EndProcessesOf {
    fn drop(&mut self) {
        let pids = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|link| link == self.0)
            });
        for pid in pids {
            super::signal(pid, libc::SIGKILL);
        }
    }
}
