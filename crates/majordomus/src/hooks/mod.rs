//! `majordomus hook <client> <event>`: what a client runs at the moments that matter — before
//! and after an edit, when a session starts, when the person sends a prompt — so the agent
//! learns of other sessions without having to remember to ask.
//!
//! MCP notifications do not reach the model in the clients that matter and the `initialize`
//! instructions are read once; a hook's answer is read at the moment it is given. The hook
//! reads the client's JSON on stdin, asks the checkout's server over REST with the lease's
//! token (it never starts a server), and answers in the client's own contract
//! ([`clients`]).
//!
//! It fails open and fast: no server, a server that does not answer within the budget
//! (`[hooks] budget_ms`, 500 ms by default), an error of any kind — the hook exits 0 and
//! prints nothing, and the client carries on as if majordomus were not there. It never exits
//! with the status that means "block" to some clients, and prints nothing on stderr.

pub mod clients;
pub mod locate;
pub mod patch;

use std::collections::HashSet;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use majordomus_checkout::config::{self, Config, GuardPolicy, HooksConfig};
use majordomus_checkout::lease::{LeaseReading, read_lease};
use majordomus_domain::limits;
use serde_json::Value;

use crate::capabilities::hooks::{
    EndInput, Guarded, HookClient, HookFiles, HooksEdit, HooksEnd, HooksGuard, HooksNews, NewsInput,
};
use crate::registry::Operation;
use clients::{Action, Said};
use majordomus_checkout::ancestry::{self, ProcessStamp};

/// The largest hook input read. A `Write` carries the whole new file; beyond this the hook
/// gives up (fails open) rather than hold an arbitrary amount in memory.
pub const INPUT_LIMIT_BYTES: u64 = 8 * 1024 * 1024;

/// Why a hook said nothing. Never shown to anyone: a hook that cannot help stays silent.
#[derive(Debug, thiserror::Error)]
pub enum Silence {
    #[error("`{0}` is not a client majordomus has hooks for")]
    UnknownClient(String),
    #[error("the input could not be read: {0}")]
    Input(String),
    #[error("the input is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error("the event is none of majordomus's business")]
    NotOurs,
    #[error("the directory is not in a checkout")]
    NoCheckout,
    #[error("the checkout's majordomus.toml cannot be used: {0}")]
    Config(#[from] config::ConfigError),
    #[error("no server serves the checkout")]
    NoServer,
    #[error("no file of the event is inside the checkout")]
    NoFile,
    #[error("the server did not answer in time")]
    OutOfTime,
    #[error("the server could not be asked: {0}")]
    Server(String),
}

/// Runs one hook: reads the event on stdin and prints the client's answer, if there is one.
/// Whatever happens, the process exits 0.
pub async fn run(client: &str, event: &str) {
    let started = Instant::now();
    match answer(client, event, started).await {
        // A client that stopped reading gets nothing, and the hook still exits 0.
        Ok(Some(answer)) => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            if let Err(error) = writeln!(stdout, "{answer}").and_then(|()| stdout.flush()) {
                tracing::debug!(%error, "the client no longer reads the hook's answer");
            }
        }
        Ok(None) => {}
        Err(silence) => tracing::debug!(%silence, "the hook says nothing"),
    }
}

async fn answer(client: &str, event: &str, started: Instant) -> Result<Option<Value>, Silence> {
    let client =
        HookClient::from_word(client).ok_or_else(|| Silence::UnknownClient(client.to_owned()))?;
    // Which repository (and so which budget) is only known from the input: reading it is
    // bounded by the default budget.
    let input = read_stdin(HooksConfig::default().budget()).await?;
    let input: Value = serde_json::from_slice(&input)?;
    let event_of_input = clients::parse(client, event, &input).ok_or(Silence::NotOurs)?;
    let cwd = match &event_of_input.cwd {
        Some(cwd) => PathBuf::from(cwd),
        None => std::env::current_dir().map_err(|error| Silence::Input(error.to_string()))?,
    };
    let located = locate::checkout_of(&cwd).ok_or(Silence::NoCheckout)?;
    // The repository's own settings are all a hook reads: its suggestions concern the server.
    let config = config::load_repository(&located.root)?;
    let (url, token) = match read_lease(&located.lease) {
        LeaseReading::Document(lease, _) => (lease.url.ok_or(Silence::NoServer)?, lease.token),
        _ => return Err(Silence::NoServer),
    };
    let budget = config
        .hooks
        .budget()
        .checked_sub(started.elapsed())
        .ok_or(Silence::OutOfTime)?;
    let server = Server {
        url,
        token,
        http: reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|error| Silence::Server(error.to_string()))?,
    };
    let said = tokio::time::timeout(
        budget,
        ask(
            &server,
            client,
            &config,
            &located.root,
            &cwd,
            event_of_input,
        ),
    )
    .await
    .map_err(|_| Silence::OutOfTime)??;
    Ok(clients::answer(client, event, &said))
}

/// Reads all of stdin, at most [`INPUT_LIMIT_BYTES`] and for at most `within`, on a thread of
/// its own: a client that never closes the pipe cannot hold the hook past its budget.
async fn read_stdin(within: Duration) -> Result<Vec<u8>, Silence> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut input = Vec::new();
        let read = std::io::stdin()
            .lock()
            .take(INPUT_LIMIT_BYTES + 1)
            .read_to_end(&mut input);
        let _ = sender.send(read.map(|_| input));
    });
    let input = tokio::time::timeout(within, receiver)
        .await
        .map_err(|_| Silence::OutOfTime)?
        .map_err(|_| Silence::Input("the reader stopped".into()))?
        .map_err(|error| Silence::Input(error.to_string()))?;
    if input.len() as u64 > INPUT_LIMIT_BYTES {
        return Err(Silence::Input(format!(
            "it is over {INPUT_LIMIT_BYTES} bytes"
        )));
    }
    Ok(input)
}

/// The checkout's server, as its lease names it.
struct Server {
    url: String,
    token: String,
    http: reqwest::Client,
}

impl Server {
    /// Asks for capability `O` with `input`, through the route `O` declares: the hook and
    /// the router read the route from the same declaration.
    async fn post<O: Operation>(&self, input: &O::Input) -> Result<O::Output, Silence> {
        let Some((_, route)) = O::DECLARATION.exposure.http else {
            return Err(Silence::Server(format!(
                "{} has no HTTP route",
                O::DECLARATION.id
            )));
        };
        let response = self
            .http
            .post(format!("{}{route}", self.url.trim_end_matches('/')))
            .bearer_auth(&self.token)
            .json(input)
            .send()
            .await
            .map_err(|error| Silence::Server(error.to_string()))?;
        if !response.status().is_success() {
            return Err(Silence::Server(format!(
                "{route} answered {}",
                response.status()
            )));
        }
        response
            .json()
            .await
            .map_err(|error| Silence::Server(error.to_string()))
    }
}

/// Asks the server what the event calls for.
async fn ask(
    server: &Server,
    client: HookClient,
    config: &Config,
    root: &Path,
    cwd: &Path,
    event: clients::Event,
) -> Result<Said, Silence> {
    // The processes this hook runs under: the client is among them, and so the server finds
    // the client's MCP connection where no session id reached it.
    let ancestors = ancestry::ancestors();
    let files = |paths: Vec<String>| -> Result<Vec<HookFiles>, Silence> {
        let paths: Vec<String> = paths
            .iter()
            .filter_map(|path| locate::relative_to(root, cwd, path))
            .collect();
        if paths.is_empty() {
            return Err(Silence::NoFile);
        }
        Ok(in_requests(client, &event.session_id, &ancestors, paths))
    };
    match event.action {
        Action::Guard(paths) => {
            let asked = files(paths)?
                .into_iter()
                .map(|files| async move { server.post::<HooksGuard>(&files).await });
            let guarded = futures::future::try_join_all(asked).await?;
            // A departed session's claim is information: it refuses nobody and asks nobody.
            let live = guarded
                .iter()
                .any(|answer| answer.findings.iter().any(|finding| finding.attached));
            Ok(Said::Claimed {
                policy: if live {
                    config.hooks.policy
                } else {
                    GuardPolicy::Warn
                },
                lines: with_unread(guarded),
            })
        }
        Action::Edit(paths) => {
            let told = files(paths)?
                .into_iter()
                .map(|files| async move { server.post::<HooksEdit>(&files).await });
            let edited = futures::future::try_join_all(told).await?;
            Ok(Said::ClaimedAfterEdit(with_unread(
                edited.into_iter().map(|edited| edited.guarded).collect(),
            )))
        }
        Action::News(moment) => {
            let input = NewsInput {
                client,
                session_id: event.session_id.clone(),
                moment,
                ancestors: ancestors.clone(),
            };
            let news = server.post::<HooksNews>(&input).await?;
            Ok(Said::News {
                moment,
                lines: news.lines,
            })
        }
        Action::End => {
            let input = EndInput {
                client,
                session_id: event.session_id.clone(),
            };
            server.post::<HooksEnd>(&input).await?;
            Ok(Said::Ended)
        }
    }
}

/// `paths` in as many requests as the server's bound on one request's files
/// ([`limits::SCOPE_PATHS`]) makes: a Codex patch may touch thousands, and each is checked.
fn in_requests(
    client: HookClient,
    session_id: &str,
    ancestors: &[ProcessStamp],
    paths: Vec<String>,
) -> Vec<HookFiles> {
    paths
        .chunks(limits::SCOPE_PATHS)
        .map(|chunk| HookFiles {
            client,
            session_id: session_id.to_owned(),
            paths: chunk.to_vec(),
            ancestors: ancestors.to_vec(),
        })
        .collect()
}

/// The guards' lines, each once, followed by the boards they could not read when they found
/// something: a finding says "here is a claim", and the reader should know the list may be
/// short.
fn with_unread(answers: Vec<Guarded>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut lines: Vec<String> = answers
        .iter()
        .flat_map(|guarded| &guarded.lines)
        .filter(|line| seen.insert(line.as_str()))
        .cloned()
        .collect();
    if !lines.is_empty() {
        let unread: Vec<String> = answers
            .iter()
            .flat_map(|guarded| &guarded.unread)
            .filter(|line| seen.insert(line.as_str()))
            .cloned()
            .collect();
        lines.extend(unread);
    }
    lines
}
