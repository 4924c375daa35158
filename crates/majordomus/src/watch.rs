//! The live board for people: `majordomus board` (a one-time link to the dashboard) and
//! `majordomus peers --watch` (the `peers` table, redrawn in the terminal on every change).

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt as _, StreamExt as _};
use majordomus_capabilities::wire;
use majordomus_checkout::lease::Lease;
use majordomus_domain::checkouts::Checkouts;
use majordomus_domain::text::for_terminal;
use serde::Deserialize;
use serde_json::json;

use majordomus_core::context::{Context, Site};
use majordomus_core::survey;
use majordomus_server::dashboard::TICKETS;
use majordomus_server::events::read_stream;

/// How long `peers --watch` waits before looking for a server again after losing one.
const RECONNECT: Duration = Duration::from_secs(1);

/// The lease of the server serving `site`'s checkout, when one answers.
async fn serving_lease(site: &Arc<Site>) -> Result<Lease, String> {
    let found = survey::survey(site, site.checkout.clone()).await;
    match (found.answers(), found.lease) {
        (true, Some(lease)) if lease.url.is_some() => Ok(lease),
        _ => Err(format!(
            "no server serves {} ({}): an agent's `majordomus mcp` starts one, or `majordomus serve`",
            site.checkout.root.display(),
            found
                .standing
                .reason
                .unwrap_or_else(|| found.standing.standing.as_str().to_string())
        )),
    }
}

#[derive(Deserialize)]
struct Ticket {
    url: String,
}

/// `majordomus board`: prints a link to the dashboard that opens it once, and with `open`
/// hands it to the desktop's opener too.
pub async fn board(dir: PathBuf, open: bool) -> Result<(), String> {
    let site = Site::open(&dir)?;
    let lease = serving_lease(&site).await?;
    let base = lease
        .url
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('/');
    let response = site
        .http
        .post(format!("{base}{TICKETS}"))
        .bearer_auth(&lease.token)
        .timeout(site.probe_timeout() * 10)
        .send()
        .await
        .map_err(|error| format!("the server at {base} did not give a link: {error}"))?;
    if !response.status().is_success() {
        return Err(format!(
            "the server at {base} answered {} when asked for a link",
            response.status()
        ));
    }
    let ticket: Ticket = response.json().await.map_err(|error| {
        format!("the server at {base} gave a link that could not be read: {error}")
    })?;
    majordomus_core::render::say!("{}", ticket.url);
    if open {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        std::process::Command::new(opener)
            .arg(&ticket.url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|error| format!("could not run `{opener}`: {error}; open the link above"))?;
    }
    Ok(())
}

/// `majordomus peers --watch`: the board as `majordomus peers` prints it, redrawn in place
/// on every change the server's event stream reports, until Ctrl-C.
pub async fn peers(dir: PathBuf, checkouts: Checkouts) -> Result<(), String> {
    let site = Site::open(&dir)?;
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    let mut screen = Screen::new(&site, checkouts);
    let mut resume: Option<String> = None;
    screen.clear();
    loop {
        let connected = tokio::select! {
            _ = &mut stop => return screen.leave(),
            connected = connect(&site, checkouts, resume.clone()) => connected,
        };
        let mut events = match connected {
            Ok(events) => events,
            Err(reason) => {
                screen.draw(Some(&reason)).await;
                tokio::select! {
                    _ = &mut stop => return screen.leave(),
                    _ = tokio::time::sleep(RECONNECT) => continue,
                }
            }
        };
        screen.draw(None).await;
        let reason = loop {
            let next = tokio::select! {
                _ = &mut stop => return screen.leave(),
                next = events.next() => next,
            };
            match next {
                Some(Ok(event)) => {
                    resume = event.id.or(resume);
                    // Changes that came together are drawn once.
                    while let Some(Some(Ok(event))) = events.next().now_or_never() {
                        resume = event.id.or(resume);
                    }
                    screen.draw(None).await;
                }
                Some(Err(error)) => break format!("the server's stream broke: {error}"),
                None => break "the server's stream ended".to_string(),
            }
        };
        screen
            .draw(Some(&format!("{reason}; looking for the server again")))
            .await;
    }
}

async fn connect(
    site: &Arc<Site>,
    checkouts: Checkouts,
    resume: Option<String>,
) -> Result<
    impl futures::Stream<Item = Result<majordomus_server::events::ReceivedEvent, String>>,
    String,
> {
    let lease = serving_lease(site).await?;
    let base = lease
        .url
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('/');
    let mut request = site
        .http
        .get(format!("{base}/api/v1/events?checkouts={checkouts}"))
        .bearer_auth(&lease.token);
    if let Some(id) = resume {
        request = request.header("Last-Event-ID", id);
    }
    let response = tokio::time::timeout(site.probe_timeout() * 10, request.send())
        .await
        .map_err(|_| format!("the server at {base} did not open its event stream"))?
        .map_err(|error| format!("the server at {base} did not open its event stream: {error}"))?;
    if !response.status().is_success() {
        return Err(format!(
            "the server at {base} answered {} for its event stream",
            response.status()
        ));
    }
    Ok(read_stream(response))
}

/// The terminal the board is drawn on: each drawing moves the cursor home, overwrites the
/// lines and clears what is left below, so the screen is replaced, never scrolled.
struct Screen {
    site: Arc<Site>,
    checkouts: Checkouts,
}

impl Screen {
    fn new(site: &Arc<Site>, checkouts: Checkouts) -> Self {
        Screen {
            site: site.clone(),
            checkouts,
        }
    }

    fn clear(&self) {
        majordomus_core::render::say_part!("\x1b[H\x1b[2J");
        let _ = std::io::stdout().flush();
    }

    async fn draw(&mut self, trouble: Option<&str>) {
        let listing = majordomus_capabilities::registry()
            .by_id("peers.list")
            .expect("peers.list is a capability");
        let board = match listing
            .call(
                &Context::observer(self.site.clone()),
                json!({"checkouts": wire::Checkouts::from(self.checkouts)}),
            )
            .await
        {
            Ok(output) => listing.render(&output),
            Err(error) => format!(
                "the board could not be read: {}",
                for_terminal(&error.message)
            ),
        };
        let now = time::OffsetDateTime::now_utc();
        let mut text = format!(
            "majordomus peers --watch · {} · {:02}:{:02}:{:02} UTC · Ctrl-C to stop\n",
            for_terminal(&self.site.checkout.root.display().to_string()),
            now.hour(),
            now.minute(),
            now.second()
        );
        if let Some(trouble) = trouble {
            text.push_str(&format!("({})\n", for_terminal(trouble)));
        }
        text.push('\n');
        text.push_str(&board);
        let mut out = String::from("\x1b[H");
        for line in text.lines() {
            out.push_str(line);
            out.push_str("\x1b[K\n");
        }
        out.push_str("\x1b[J");
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(out.as_bytes());
        let _ = stdout.flush();
    }

    fn leave(&self) -> Result<(), String> {
        majordomus_core::render::say!();
        Ok(())
    }
}
