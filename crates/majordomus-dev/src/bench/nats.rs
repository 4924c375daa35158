//! A `nats-server` with JetStream for the federation scenarios: started on a free loopback
//! port with its store in the scratch directory, ended by its pid. Where it is not installed
//! the scenario reports itself failed with that reason.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::setup::{SETUP_BOUND, Scratch};

/// A running `nats-server -js`, killed by its pid when dropped.
pub(super) struct BenchNats {
    child: std::process::Child,
    port: u16,
    binary: PathBuf,
}

impl BenchNats {
    pub(super) async fn start(scratch: &Scratch, label: &str) -> Result<BenchNats, String> {
        let binary = binary().ok_or(
            "nats-server is not installed (Debian's package `nats-server`; \
             scripts/install-test-deps.sh installs it)",
        )?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|error| format!("no free loopback port: {error}"))?
            .port();
        let store = scratch.base().join(label).join("nats-store");
        let child = std::process::Command::new(&binary)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(&store)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(scratch.log("nats-server"))
            .spawn()
            .map_err(|error| format!("nats-server did not start: {error}"))?;
        let server = BenchNats {
            child,
            port,
            binary,
        };
        let started = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if started.elapsed() > SETUP_BOUND {
                return Err(format!("nats-server did not listen on port {port}"));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(server)
    }

    pub(super) fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// What `nats-server --version` says, for the notes.
    pub(super) fn version(&self) -> String {
        std::process::Command::new(&self.binary)
            .arg("--version")
            .output()
            .ok()
            .map(|output| {
                let said = String::from_utf8_lossy(&output.stdout);
                let version = said.trim().trim_start_matches("nats-server:").trim();
                format!("nats-server {version}")
            })
            .unwrap_or_else(|| "nats-server (version unknown)".into())
    }
}

impl Drop for BenchNats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `nats-server` on PATH, or where Debian's package puts it.
fn binary() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|dir| dir.join("nats-server"))
        .find(|candidate| candidate.is_file())
}
