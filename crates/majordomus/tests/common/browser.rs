//! A headless Chromium driven over the DevTools protocol, for the tests that read the
//! dashboard the way a person's browser shows it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};

use super::{BOUND, TempRepo, eventually, eventually_within, http};

/// One Chromium at a time in a test binary: several starting at once on a small machine
/// take longer to open their DevTools ports than a test waits, and a browser's turn ends
/// when it is dropped, a failing test's included.
static ONE_AT_A_TIME: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// A headless Chromium the test started, driven over the DevTools protocol.
pub(crate) struct Browser {
    _turn: tokio::sync::SemaphorePermit<'static>,
    child: tokio::process::Child,
    _profile: tempfile::TempDir,
    socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    next_id: u64,
    /// Every `Network.requestWillBeSent` URL seen so far.
    pub requests: Vec<String>,
}

const CHROMIUM: &str = "/usr/bin/chromium";

/// How long Chromium may take to open its DevTools port: seconds on a small machine whose
/// cores the other tests of the binary are using.
const CHROMIUM_START: Duration = Duration::from_secs(60);

impl Browser {
    pub(crate) async fn launch(repo: &TempRepo) -> Browser {
        assert!(
            Path::new(CHROMIUM).exists(),
            "{CHROMIUM} is missing: run scripts/install-test-deps.sh (Debian's `chromium`)"
        );
        let turn = ONE_AT_A_TIME
            .acquire()
            .await
            .expect("the browsers' turns are never closed");
        let profile = tempfile::Builder::new()
            .prefix("majordomus-chromium-")
            .tempdir()
            .unwrap();
        let (_, log) = repo.log_file("chromium");
        let child = tokio::process::Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("chromium starts");
        let port_file = profile.path().join("DevToolsActivePort");
        let port: u16 = eventually_within(
            CHROMIUM_START,
            "chromium to open its DevTools port",
            || async {
                let text = std::fs::read_to_string(&port_file).map_err(|e| e.to_string())?;
                text.lines()
                    .next()
                    .and_then(|line| line.trim().parse().ok())
                    .ok_or_else(|| format!("not a port yet: {text:?}"))
            },
        )
        .await;
        let page: String = eventually("a page target", || async {
            let targets: Value = http()
                .get(format!("http://127.0.0.1:{port}/json/list"))
                .send()
                .await
                .map_err(|e| e.to_string())?
                .json()
                .await
                .map_err(|e| e.to_string())?;
            targets
                .as_array()
                .and_then(|all| all.iter().find(|t| t["type"] == "page"))
                .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                .map(str::to_string)
                .ok_or_else(|| format!("{targets}"))
        })
        .await;
        let (socket, _) = tokio_tungstenite::connect_async(page.as_str())
            .await
            .expect("the DevTools socket opens");
        let mut browser = Browser {
            _turn: turn,
            child,
            _profile: profile,
            socket,
            next_id: 0,
            requests: Vec::new(),
        };
        browser.call("Network.enable", json!({})).await;
        browser.call("Page.enable", json!({})).await;
        browser
    }

    /// Sends a command and waits for its answer, noting the events that come meanwhile.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Value {
        use tokio_tungstenite::tungstenite::Message;
        self.next_id += 1;
        let id = self.next_id;
        let command = json!({"id": id, "method": method, "params": params}).to_string();
        self.socket
            .send(Message::text(command))
            .await
            .expect("the command is sent");
        loop {
            let message = tokio::time::timeout(BOUND, self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("{method} not answered within {BOUND:?}"))
                .expect("the socket stays open")
                .expect("the socket reads");
            let Message::Text(text) = message else {
                continue;
            };
            let value: Value = serde_json::from_str(&text).expect("DevTools speaks JSON");
            if value["method"] == "Network.requestWillBeSent" {
                let url = value["params"]["request"]["url"].as_str().unwrap_or("");
                self.requests.push(url.to_string());
            }
            if value["id"] == id {
                assert!(value.get("error").is_none(), "{method}: {value}");
                return value["result"].clone();
            }
        }
    }

    /// Evaluates an expression in the page and answers its value.
    pub(crate) async fn eval(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// The page's text of `selector`, once `ready` holds of it, waiting at most `bound`.
    pub(crate) async fn text_when(
        &mut self,
        selector: &str,
        bound: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> String {
        let started = std::time::Instant::now();
        loop {
            let text = self
                .eval(&format!(
                    "(document.querySelector({selector:?}) || {{innerText: ''}}).innerText"
                ))
                .await;
            let text = text.as_str().unwrap_or("").to_string();
            if ready(&text) {
                return text;
            }
            assert!(
                started.elapsed() < bound,
                "{selector} did not show what was awaited within {bound:?}: {text}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A PNG of the whole page at `width` CSS pixels, written to `path`.
    pub(crate) async fn screenshot(&mut self, width: u32, path: &Path) {
        use base64::Engine as _;
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
        let metrics = self.call("Page.getLayoutMetrics", json!({})).await;
        let height = metrics["cssContentSize"]["height"]
            .as_f64()
            .unwrap_or(800.0)
            .ceil();
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({
                    "format": "png",
                    "captureBeyondViewport": true,
                    "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
                }),
            )
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("a screenshot"))
            .expect("base64");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    pub(crate) async fn close(mut self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            self.call("Browser.close", json!({})),
        )
        .await;
        if tokio::time::timeout(BOUND, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
