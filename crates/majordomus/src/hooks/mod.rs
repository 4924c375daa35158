//! `majordomus hook <client> <event>`: what a client runs at the moments that matter — before
//! and after an edit, when a session starts, when the person sends a prompt — so the agent
//! learns of other sessions without having to remember to ask.
//!
//! MCP notifications do not reach the model in the clients that matter and the `initialize`
//! instructions are read once; a hook's answer is read at the moment it is given. The hook
//! reads the client's JSON on stdin, asks the checkout's server over REST with the lease's
//! token (it never starts a server), and answers in the client's own contract
//! ([`answer`], [`majordomus_core::clients`]).
//!
//! Before a shell command, each of its simple commands is matched against the commands the
//! repository declares as needing a lease (`[leases.commands]`); for those, the hook reads
//! the repository's lease table itself (one small file, no git, no lock), and only when a
//! live holder has one does it ask the server whether that holder is another session than
//! its own (`hooks.leases`), since only the server knows which session the hook speaks for.
//!
//! Messages to the session that an answer carries were only handed to the hook: once the
//! answer is printed the hook tells the server (`hooks.received`), and only then are they
//! delivered. A hook that prints nothing leaves them for the session's next hook.
//!
//! It fails open and fast: no server, a server that does not answer within the budget
//! (`[hooks] budget_ms`, 500 ms by default), an error of any kind — the hook exits 0 and
//! prints nothing, and the client carries on as if majordomus were not there. A server that
//! missed the budget is not waited on again for a while ([`unanswered`]). It never exits
//! with the status that means "block" to some clients, and prints nothing on stderr.

pub mod answer;
pub mod locate;
pub mod unanswered;

use std::collections::HashSet;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use majordomus_checkout::config::{self, Config, GuardPolicy, HooksConfig};
use majordomus_checkout::git::Checkout;
use majordomus_checkout::lease::{LeaseReading, read_lease};
use majordomus_checkout::lease_table::{self, LeaseTableFile};
use majordomus_domain::leases::millis;
use majordomus_domain::peers::{WaitHolder, WaitReason};
use majordomus_domain::{limits, text};
use serde_json::Value;

use answer::{Found, LeaseHeld, Said};
use majordomus_capabilities::hooks::received::{HooksReceived, ReceivedInput};
use majordomus_capabilities::hooks::wait::{BlockingSession, HooksWait, WaitInput};
use majordomus_capabilities::hooks::{
    EndInput, Guarded, HookFiles, HooksEdit, HooksEnd, HooksGuard, HooksLeases, HooksNews,
    LeasesNeededInput, NewsInput, facts,
};
use majordomus_capabilities::leases;
use majordomus_capabilities::messages::Inbox;
use majordomus_checkout::ancestry::{self, ProcessStamp};
use majordomus_core::clients::{self, Action, HookClient, NewsMoment};
use majordomus_core::context::{Context, Site};
use majordomus_core::registry::Operation;

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
    #[error("the server missed a hook's budget a moment ago")]
    RecentlyUnanswered,
    #[error("the server answers nothing, not even `GET /`")]
    Unresponsive,
    #[error("the server could not be asked: {0}")]
    Server(String),
}

/// How long a hook waits for the server to take note that it printed the messages it was
/// handed. The answer is printed already; a confirmation that does not land leaves them
/// queued, to go with the next hook.
const RECEIVED_TIMEOUT: Duration = Duration::from_millis(500);

/// Runs one hook: reads the event on stdin and prints the client's answer, if there is one,
/// then tells the server it printed the messages the answer carries. Whatever happens, the
/// process exits 0.
pub async fn run(client: &str, event: &str) {
    let started = Instant::now();
    match answer(client, event, started).await {
        Ok(Some(printed)) => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            // A client that stopped reading gets nothing, and the hook still exits 0; the
            // messages it was handed stay queued.
            if let Err(error) = writeln!(stdout, "{}", printed.answer).and_then(|()| stdout.flush())
            {
                tracing::debug!(%error, "the client no longer reads the hook's answer");
                return;
            }
            drop(stdout);
            if let Some((server, hand)) = printed.handed {
                let input = ReceivedInput { hand };
                let told =
                    tokio::time::timeout(RECEIVED_TIMEOUT, server.post::<HooksReceived>(&input));
                if !matches!(told.await, Ok(Ok(_))) {
                    tracing::debug!("the server did not take note of the messages printed");
                }
            }
        }
        Ok(None) => {}
        Err(silence) => tracing::debug!(%silence, "the hook says nothing"),
    }
}

/// What a hook prints, and the messages it carries, to confirm once printed: the server that
/// handed them and the hand's token.
struct Printed {
    answer: Value,
    handed: Option<(Server, u64)>,
}

async fn answer(client: &str, event: &str, started: Instant) -> Result<Option<Printed>, Silence> {
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
    let needed = match &event_of_input.action {
        Action::Shell(effects) => {
            held_now(&located, leases_needed(&config, &effects.commands), || {
                may_be_federated(&located, &config)
            })
        }
        _ => Vec::new(),
    };
    if matches!(&event_of_input.action, Action::Shell(effects) if effects.changes_nothing())
        && needed.is_empty()
    {
        return Err(Silence::NotOurs);
    }
    let budget = config
        .hooks
        .budget()
        .checked_sub(started.elapsed())
        .ok_or(Silence::OutOfTime)?;
    let served = match read_lease(&located.lease) {
        LeaseReading::Document(lease, _) => lease.url.map(|url| (url, lease.token)),
        _ => None,
    };
    let Some((url, token)) = served else {
        return match event_of_input.action {
            Action::News(moment @ NewsMoment::SessionStart) => {
                let lines = tokio::time::timeout(budget, alone(&located.root, config))
                    .await
                    .map_err(|_| Silence::OutOfTime)??;
                Ok(
                    answer::answer(client, event, &Said::News { moment, lines }).map(|answer| {
                        Printed {
                            answer,
                            handed: None,
                        }
                    }),
                )
            }
            _ => Err(Silence::NoServer),
        };
    };
    let server = Server {
        url,
        token,
        http: reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|error| Silence::Server(error.to_string()))?,
    };
    let memory = unanswered::file_beside(&located.lease);
    if let Some(memory) = &memory {
        match unanswered::recall(memory, &server.url, SystemTime::now()) {
            unanswered::Memory::Trusted => {}
            unanswered::Memory::Unanswered => return Err(Silence::RecentlyUnanswered),
            unanswered::Memory::Probe => {
                if !server.answers_within(unanswered::PROBE_TIMEOUT).await {
                    unanswered::remember(memory, &server.url, SystemTime::now());
                    return Err(Silence::OutOfTime);
                }
                unanswered::forget(memory);
            }
        }
    }
    // A server slow to answer because one of its siblings is frozen still answers `GET /` at
    // once. Once half the budget has passed the server is probed: one that does not answer
    // that either within the probe's short timeout is given up on then, and remembered.
    let asked = tokio::time::timeout(budget, async {
        let asking = ask(
            &server,
            (client, event),
            &config,
            &located,
            &cwd,
            event_of_input,
            needed,
        );
        tokio::pin!(asking);
        let probing = async {
            tokio::time::sleep(budget / 2).await;
            server.answers_within(unanswered::PROBE_TIMEOUT).await
        };
        tokio::select! {
            said = &mut asking => return said,
            answered = probing => if !answered {
                return Err(Silence::Unresponsive);
            },
        }
        asking.await
    })
    .await;
    match asked {
        Ok(Err(Silence::Unresponsive)) => {
            if let Some(memory) = &memory {
                unanswered::remember(memory, &server.url, SystemTime::now());
            }
            Err(Silence::Unresponsive)
        }
        Ok(said) => {
            let (said, inbox) = said?;
            let answered = answer::answer(client, event, &said);
            let printed = answer::with_inbox(
                client,
                event,
                answered,
                inbox.as_ref().map(|inbox| inbox.text.as_str()),
            );
            let hand = inbox.and_then(|inbox| inbox.hand);
            Ok(printed.answer.map(|answer| Printed {
                answer,
                handed: hand.filter(|_| printed.carried).map(|hand| (server, hand)),
            }))
        }
        Err(_) => Err(Silence::OutOfTime),
    }
}

/// The summary of the repository's other boards, read through their leases, for a session
/// whose checkout has no server yet.
async fn alone(root: &Path, config: Config) -> Result<Vec<String>, Silence> {
    let root = root.to_path_buf();
    let checkout = tokio::task::spawn_blocking(move || Checkout::discover(&root))
        .await
        .map_err(|error| Silence::Server(error.to_string()))?
        .map_err(|_| Silence::NoCheckout)?;
    let ctx = Context::observer(Arc::new(Site::new(checkout, config)));
    facts::summary_without_a_server(&ctx)
        .await
        .map_err(|error| Silence::Server(error.to_string()))
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
    /// Whether the server answers `GET /` (whatever it answers) within `timeout`.
    async fn answers_within(&self, timeout: Duration) -> bool {
        let probe = self.http.get(&self.url).bearer_auth(&self.token).send();
        matches!(tokio::time::timeout(timeout, probe).await, Ok(Ok(_)))
    }

    /// Asks `O` about each of `inputs` at once, the answers in the order asked: a hook's files
    /// may take several requests.
    async fn post_each<O: Operation>(
        &self,
        inputs: Vec<O::Input>,
    ) -> Result<Vec<O::Output>, Silence> {
        futures::future::try_join_all(inputs.iter().map(|input| self.post::<O>(input))).await
    }

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

/// A lease a shell command needs, by `[leases.commands]`, and the first simple command of it
/// that needs it.
struct Needed {
    name: String,
    command: Vec<String>,
}

/// The leases the simple `commands` need, each once, by the repository's `[leases.commands]`.
fn leases_needed(config: &Config, commands: &[Vec<String>]) -> Vec<Needed> {
    if config.leases.commands.is_empty() {
        return Vec::new();
    }
    let declared = config.leases.matcher();
    let mut needed: Vec<Needed> = Vec::new();
    for command in commands {
        for name in declared.needed_by(command) {
            if !needed.iter().any(|lease| lease.name == name) {
                needed.push(Needed {
                    name: name.to_owned(),
                    command: command.clone(),
                });
            }
        }
    }
    needed
}

/// Of the `needed` leases, those the repository's lease table says someone holds now, whose
/// process still runs and whose grant has not run out: only for those is the server asked
/// whether the holder is another session. The table is one small file; no git, no lock. A
/// federated repository's table is in the federation, which only the server reads: there
/// the server is asked about every needed lease.
fn held_now(
    located: &locate::Located,
    needed: Vec<Needed>,
    federated: impl FnOnce() -> bool,
) -> Vec<Needed> {
    if needed.is_empty() || federated() {
        return needed;
    }
    let Some(table) = located
        .common_dir()
        .and_then(|dir| LeaseTableFile::new(&dir).read().ok())
    else {
        return Vec::new();
    };
    let now = millis(SystemTime::now());
    needed
        .into_iter()
        .filter(|lease| {
            table
                .leases
                .get(&lease.name)
                .and_then(|held| held.holder.as_ref())
                .is_some_and(|holder| {
                    holder.expires_ms.is_none_or(|at| at > now)
                        && lease_table::lives(&holder.holder)
                })
        })
        .collect()
}

/// Whether the repository's leases may be kept in a federation: the repository suggests one,
/// or the person's own configuration sets one (whether a suggestion is allowed is the
/// server's to know; asking it once too often costs one request).
fn may_be_federated(located: &locate::Located, config: &Config) -> bool {
    if config.suggestions.federation.is_some() {
        return true;
    }
    let own = config::UserFiles {
        config: config::user_config_path(),
        allowances: None,
    };
    config::load_with(&located.root, &own).is_ok_and(|config| config.federation.url.is_some())
}

/// Asks the server what the event calls for: what to say, and the messages to the session
/// the server delivered with its answer, fenced as the model reads them.
async fn ask(
    server: &Server,
    (client, event_name): (HookClient, &str),
    config: &Config,
    located: &locate::Located,
    cwd: &Path,
    event: clients::Event,
    needed: Vec<Needed>,
) -> Result<(Said, Option<Inbox>), Silence> {
    // The processes this hook runs under: the client is among them, and so the server finds
    // the client's MCP connection where no session id reached it.
    let ancestors = ancestry::ancestors();
    let root = located.root.as_path();
    // A write that lands in another worktree of the repository is checked there, by its
    // path in that worktree, and named as landing elsewhere.
    let own_common_dir = located.common_dir();
    let mut landing = Vec::new();
    let mut files = |paths: Vec<String>| -> Result<Vec<HookFiles>, Silence> {
        let paths: Vec<String> = paths
            .iter()
            .filter_map(|path| {
                if let Some(inside) = locate::relative_to(root, cwd, path) {
                    return Some(inside);
                }
                let other = locate::checkout_of_file(cwd, path)?;
                if other.root == root || other.common_dir() != own_common_dir {
                    return None;
                }
                let there = locate::relative_to(&other.root, cwd, path)?;
                landing.push(format!(
                    "this write lands in worktree {}, not in this session's own ({})",
                    text::quoted(&other.root.to_string_lossy(), 200),
                    text::quoted(&root.to_string_lossy(), 200)
                ));
                Some(there)
            })
            .collect();
        if paths.is_empty() {
            return Err(Silence::NoFile);
        }
        Ok(in_requests(client, &event.session_id, &ancestors, paths)
            .into_iter()
            .map(|files| HookFiles {
                event: Some(event_name.to_owned()),
                ..files
            })
            .collect())
    };
    let say_claimed = |found: Found| {
        claimed(
            server,
            client,
            config.hooks.policy,
            &event.session_id,
            &ancestors,
            found,
        )
    };
    match event.action {
        Action::Guard(paths) => {
            let mut found = found(server.post_each::<HooksGuard>(files(paths)?).await?);
            found.landing = landing;
            Ok((say_claimed(found).await?, None))
        }
        Action::Shell(effects) => {
            let mut guarded = Vec::new();
            if !effects.writes.is_empty() {
                let asked = files(effects.writes).unwrap_or_default();
                guarded = server.post_each::<HooksGuard>(asked).await?;
            }
            let mut found = found(guarded);
            found.landing = std::mem::take(&mut landing);
            if !needed.is_empty() {
                let input = LeasesNeededInput {
                    client,
                    session_id: event.session_id.clone(),
                    names: needed.iter().map(|lease| lease.name.clone()).collect(),
                    ancestors: ancestors.clone(),
                };
                let answer = server.post::<HooksLeases>(&input).await?;
                found.leases = answer
                    .held
                    .iter()
                    .filter_map(|held| {
                        let lease = needed.iter().find(|lease| lease.name == held.lease.name)?;
                        Some(LeaseHeld {
                            name: lease.name.clone(),
                            line: leases::held_elsewhere_line(held),
                            command: lease.command.clone(),
                        })
                    })
                    .collect();
            }
            if let Some(command) = &effects.discards {
                let whole =
                    in_requests(client, &event.session_id, &ancestors, vec![".".to_owned()]);
                let here = server.post::<HooksGuard>(&whole[0]).await?;
                let working_here: Vec<String> = here
                    .findings
                    .iter()
                    .filter(|finding| {
                        finding.attached
                            && finding.checkout.as_ref().is_some_and(|c| c.this_checkout)
                    })
                    .map(facts::working_here_line)
                    .collect();
                if !working_here.is_empty() {
                    found.live.insert(
                        0,
                        format!(
                            "{} discards or rewrites uncommitted work in this checkout, where \
                             other live sessions work:",
                            text::quoted(command, 200)
                        ),
                    );
                    let at = found.live.len().min(1);
                    found.live.splice(at..at, working_here);
                }
            }
            Ok((say_claimed(found).await?, None))
        }
        Action::Edit(paths) => {
            let mut edited = server.post_each::<HooksEdit>(files(paths)?).await?;
            let inbox = edited.iter_mut().find_map(|edited| edited.inbox.take());
            Ok((
                Said::ClaimedAfterEdit(with_unread(
                    edited.into_iter().map(|edited| edited.guarded).collect(),
                )),
                inbox,
            ))
        }
        Action::News(moment) => {
            let input = NewsInput {
                client,
                session_id: event.session_id.clone(),
                moment,
                ancestors: ancestors.clone(),
                event: Some(event_name.to_owned()),
            };
            let news = server.post::<HooksNews>(&input).await?;
            Ok((
                Said::News {
                    moment,
                    lines: news.lines,
                },
                news.inbox,
            ))
        }
        Action::End => {
            let input = EndInput {
                client,
                session_id: event.session_id.clone(),
            };
            server.post::<HooksEnd>(&input).await?;
            Ok((Said::Ended, None))
        }
        Action::Wait { reason, message } => {
            let input = WaitInput {
                client,
                session_id: event.session_id.clone(),
                reason: reason.into(),
                message: message
                    .map(|message| text::sanitized(&message, limits::WAIT_MESSAGE_CHARS))
                    .filter(|message| !message.is_empty()),
                holder: None,
                ancestors,
            };
            server.post::<HooksWait>(&input).await?;
            Ok((Said::Waiting, None))
        }
    }
}

/// What the guard says of the claims `found`. When it stops the tool call for another live
/// session's claim, the server is told the session is `blocked`, naming that session: the
/// person sees it wait on them.
async fn claimed(
    server: &Server,
    client: HookClient,
    policy: GuardPolicy,
    session_id: &str,
    ancestors: &[ProcessStamp],
    found: Found,
) -> Result<Said, Silence> {
    let said = Said::Claimed {
        policy,
        person: client
            .contract()
            .can_ask_person(&|name| std::env::var(name).ok()),
        found,
    };
    if let Some(holder) = answer::blocked_by(&said) {
        let input = WaitInput {
            client,
            session_id: session_id.to_owned(),
            reason: WaitReason::Blocked.into(),
            message: None,
            holder: Some(BlockingSession {
                peer: holder.peer.to_string(),
                client: holder.client.clone(),
                worktree: holder.worktree.clone(),
            }),
            ancestors: ancestors.to_vec(),
        };
        server.post::<HooksWait>(&input).await?;
    }
    Ok(said)
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
            event: None,
        })
        .collect()
}

/// The guards' findings, each once, split by what they call for, followed by the boards
/// the guards could not read when they found something.
fn found(answers: Vec<Guarded>) -> Found {
    let mut seen = HashSet::new();
    let mut found = Found::default();
    for finding in answers.iter().flat_map(|guarded| &guarded.findings) {
        let line = facts::finding_line(finding);
        if finding.attached && found.holder.is_none() {
            found.holder = Some(WaitHolder {
                peer: finding.peer.clone().into(),
                client: finding.client.clone(),
                worktree: finding
                    .checkout
                    .as_ref()
                    .map(|checkout| checkout.worktree.clone()),
            });
        }
        if seen.insert(line.clone()) {
            if finding.attached {
                found.live.push(line);
            } else {
                found.departed.push(line);
            }
        }
    }
    for guarded in &answers {
        found.bump_passed |= guarded.bump_passed;
        for line in &guarded.bumps {
            if seen.insert(line.clone()) {
                found.bumps.push(line.clone());
            }
        }
    }
    found.live = facts::bounded(found.live);
    found.bumps = facts::bounded(found.bumps);
    found.departed = facts::bounded(found.departed);
    if !(found.live.is_empty() && found.bumps.is_empty() && found.departed.is_empty()) {
        let unread = answers
            .iter()
            .flat_map(|guarded| &guarded.unread)
            .filter(|line| seen.insert((*line).clone()))
            .cloned();
        found.departed.extend(unread);
    }
    found
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
