//! The command line. The fixed commands (`mcp`, `serve`, `hook`, `install`, `openapi`, …) are
//! declared here; every capability with CLI words becomes a command too, its flags derived from
//! its input schema.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::{Map, Value};
#[cfg(unix)]
use tokio::signal::unix::{Signal, SignalKind, signal};

use majordomus_checkout::allowances::Suggestion;
use majordomus_domain::checkouts::Checkouts;

use majordomus_core::api::ErrorKind;
use majordomus_core::clients::HookClient;
use majordomus_core::context::{Context, Site};
use majordomus_core::registry::Capability;
use majordomus_server::stops::StopRequests;

fn repo_arg() -> Arg {
    Arg::new("repo")
        .long("repo")
        .value_name("DIR")
        .value_parser(clap::value_parser!(PathBuf))
        .help("A directory inside the checkout to act on (default: the current directory)")
}

/// Every client's word, as a sentence names them ("claude-code, codex, gemini-cli or cursor").
fn client_words() -> String {
    let words = HookClient::ALL.map(HookClient::as_str);
    let (last, rest) = words.split_last().expect("there are clients");
    format!("{} or {last}", rest.join(", "))
}

fn json_arg() -> Arg {
    Arg::new("json")
        .long("json")
        .action(ArgAction::SetTrue)
        .help("Print the answer as JSON")
}

/// The whole command tree.
pub fn command() -> Command {
    let mut root = Command::new("majordomus")
        .version(env!("CARGO_PKG_VERSION"))
        .about("The board of the AI coding agents working on one repository: who works where, on what, and where their claims collide.")
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(
            Command::new("mcp")
                .about("Serve MCP on stdin/stdout for one client (what an MCP config runs): serves the checkout, or bridges to the process that does")
                .arg(repo_arg()),
        )
        .subcommand(
            Command::new("serve")
                .about("Serve the checkout over HTTP until stopped")
                .args_conflicts_with_subcommands(true)
                .arg(repo_arg())
                .arg(
                    Arg::new("idle")
                        .long("idle")
                        .value_name("SECONDS")
                        .value_parser(clap::value_parser!(u64))
                        .help("Stop once no peer has been attached for this many seconds"),
                )
                .subcommand(Command::new("stop").about("Stop this checkout's server in order").arg(repo_arg()))
                .subcommand(
                    Command::new("ensure")
                        .about("Start a server for this checkout unless one is ready; wait until it is; print its standing and URL")
                        .arg(repo_arg())
                        .arg(json_arg()),
                ),
        )
        .subcommand(
            Command::new("hook")
                .about("Answer one of a client's hooks: read the event as JSON on stdin, ask this checkout's server, print the answer in the client's contract (what `majordomus install` wires)")
                .long_about("Answer one of a client's hooks: read the event as JSON on stdin, ask the checkout's running server (never starting one), and print the answer in the client's contract. It always exits 0 and prints nothing when majordomus has nothing to say, when no server runs, or when the server does not answer within `[hooks] budget_ms`.")
                // Optional, so that a hook written wrong still exits 0: some clients read any
                // other status (clap's usage error is 2) as "block the tool".
                .arg(Arg::new("client").value_name("CLIENT").help(client_words()))
                .arg(Arg::new("event").value_name("EVENT").help("The client's name of the event, such as PreToolUse or BeforeTool")),
        )
        .subcommand(
            Command::new("install")
                .about("Wire majordomus into a client's own configuration: its MCP server entry, its hooks, and what it needs to start the server without a prompt")
                .long_about("Wire majordomus into a client's own configuration files: the MCP server entry, the hooks (`majordomus hook`), and what the client needs to start the server without a prompt (Claude Code's approval of this project server, Gemini CLI's `trust` on the entry). Merges with what is there and keeps everything else as written; a second run changes nothing. `--uninstall` takes out exactly what install put in: a file nobody changed since is restored byte for byte. Every file is replaced whole (a temporary file beside it, synced, renamed over it), and what someone writes to it meanwhile is merged, never lost. A link leading out of the repository, a FIFO or any other file that is not a regular one is refused; a majordomus entry written some other way is kept unless `--force`.")
                .arg(repo_arg())
                .arg(
                    Arg::new("client")
                        .value_name("CLIENT")
                        .num_args(1..)
                        .default_value("all")
                        .value_parser(clap::builder::PossibleValuesParser::new(
                            HookClient::ALL.map(HookClient::as_str).into_iter().chain(["all"]),
                        ))
                        .help("The clients to wire, one or several (all: every one)"),
                )
                .arg(
                    Arg::new("scope")
                        .long("scope")
                        .value_name("SCOPE")
                        .default_value("project")
                        .value_parser(["project", "user"])
                        .help("The repository's configuration (shared through it) or the user's"),
                )
                .arg(
                    Arg::new("dry-run")
                        .long("dry-run")
                        .action(ArgAction::SetTrue)
                        .help("Print the diff of what would change, and write nothing"),
                )
                .arg(
                    Arg::new("uninstall")
                        .long("uninstall")
                        .action(ArgAction::SetTrue)
                        .help("Take out what install put in"),
                )
                .arg(
                    Arg::new("force")
                        .long("force")
                        .action(ArgAction::SetTrue)
                        .help("Replace (or with --uninstall remove) a majordomus entry written some other way than install writes it"),
                ),
        )
        .subcommand(
            Command::new("doctor")
                .about("Say, for each client found on PATH or in the repository, whether majordomus is wired into it, and what to run if not")
                .arg(repo_arg()),
        )
        .subcommand(
            Command::new("allow")
                .about("Allow what this repository's majordomus.toml suggests: its federation, or its episode command")
                .long_about("Allow what this repository's majordomus.toml suggests, exactly as it reads now: `federation` (publish this machine's boards to the NATS server it names; your own credentials go only to the server your own configuration names) or `episodes-command` (run its program with every episode event, instead of the built-in journal). A repository's file is shared through git, so its suggestions are not followed until you allow them; the allowance is kept in your own state (below $XDG_STATE_HOME, else ~/.local/state) for every worktree of the repository, and a changed suggestion needs allowing again. `majordomus doctor` says what the repository suggests.")
                .arg(repo_arg())
                .arg(
                    Arg::new("suggestion")
                        .value_name("SUGGESTION")
                        .required(true)
                        .value_parser(clap::builder::PossibleValuesParser::new(
                            Suggestion::all().iter().map(|suggestion| suggestion.word()),
                        ))
                        .help("What to allow"),
                ),
        )
        .subcommand(Command::new("openapi").about("Print the OpenAPI 3.1 document of the HTTP routes"));
    for capability in majordomus_capabilities::registry().iter() {
        if let Some(words) = capability.declaration.exposure.cli {
            root = graft(
                root,
                words,
                capability_command(capability, words.last().expect("CLI words are not empty")),
            );
        }
    }
    let root = graft(root, &["episodes", "log"], episodes_log_command());
    root.subcommand(board_command())
        .mut_subcommand("lease", lease_command)
        .mut_subcommand("release", |release| {
            name_positional(release.mut_arg("name", |name| name.long(None)))
                .mut_arg("pid", |arg| arg.hide(true))
        })
        .mut_subcommand("peers", |peers| {
            peers.arg(
                Arg::new("watch")
                    .long("watch")
                    .action(ArgAction::SetTrue)
                    .conflicts_with("json")
                    .help("Redraw the board in place on every change, until Ctrl-C"),
            )
        })
}

/// `majordomus board`: a link to the dashboard.
fn board_command() -> Command {
    Command::new("board")
        .about("Print a link that opens this checkout's live board in a browser, once")
        .long_about("Print a link to the dashboard of this checkout's server: worktrees, peers, claims and overlaps, updated live. The link carries a ticket that works once and for a minute; opening it sets a cookie for this server and drops the ticket from the address bar. Needs a running server.")
        .arg(repo_arg())
        .arg(
            Arg::new("open")
                .long("open")
                .action(ArgAction::SetTrue)
                .help("Also open the link with xdg-open (open on macOS)"),
        )
}

/// `majordomus lease NAME [-- COMMAND…]`: the capability's command with the name as its
/// argument, its seconds as numbers, and the command to run while holding the lease.
fn lease_command(derived: Command) -> Command {
    let seconds = |arg: Arg, long: &'static str| {
        arg.long(long)
            .value_name("SECONDS")
            .value_parser(clap::value_parser!(u32))
    };
    name_positional(derived.mut_arg("name", |name| name.long(None)))
        .mut_arg("ttl_secs", |arg| seconds(arg, "ttl"))
        .mut_arg("wait_secs", |arg| {
            seconds(arg, "wait").help("Seconds to wait for the grant when queued; a COMMAND waits as long as it takes unless told")
        })
        .mut_arg("pid", |arg| arg.hide(true))
        .arg(
            Arg::new("command")
                .value_name("COMMAND")
                .num_args(1..)
                .last(true)
                .help("Run this while holding the lease, release it when it exits, and exit with its code"),
        )
}

/// A command's `name` flag made its first argument.
fn name_positional(command: Command) -> Command {
    command.mut_arg("name", |name| name.required(true))
}

/// `majordomus episodes log`: the journal read back, beside the derived `majordomus episodes`.
fn episodes_log_command() -> Command {
    Command::new("log")
        .about("List the episodes the repository's journal recorded: client, start, end and reason, worktree, branch and claims")
        .long_about("List the episodes recorded in the repository's episode journal (in the git common dir), one line per episode: its client and provider, when it started and ended and why, the worktree and branch it ran in, and the claims announced during it. Needs no running server.")
        .arg(repo_arg())
        .arg(json_arg())
        .arg(
            Arg::new("since")
                .long("since")
                .value_name("WHEN")
                .help("Only episodes active since then: an RFC 3339 time, or a span back from now such as 2h, 90m or 7d"),
        )
}

/// Puts `leaf` at the path `words` in the tree, merging with commands already there.
fn graft(parent: Command, words: &[&'static str], leaf: Command) -> Command {
    let (first, rest) = words.split_first().expect("CLI words are not empty");
    if rest.is_empty() {
        return match parent.find_subcommand(first).cloned() {
            Some(existing) => {
                let mut merged = leaf;
                for sub in existing.get_subcommands() {
                    merged = merged.subcommand(sub.clone());
                }
                parent.mut_subcommand(first, |_| merged)
            }
            None => parent.subcommand(leaf),
        };
    }
    let parent = if parent.find_subcommand(first).is_some() {
        parent
    } else {
        parent.subcommand(Command::new(*first).subcommand_required(true))
    };
    parent.mut_subcommand(first, |node| graft(node, rest, leaf))
}

fn capability_command(capability: &Capability, word: &'static str) -> Command {
    let declaration = &capability.declaration;
    let mut command = Command::new(word)
        .about(declaration.title)
        .long_about(declaration.description)
        .args_conflicts_with_subcommands(true)
        .arg(repo_arg())
        .arg(json_arg());
    let schema = capability.input_schema();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            let mut arg = Arg::new(name.clone())
                .long(name.clone())
                .value_name(name.to_uppercase())
                .help(first_line(property["description"].as_str().unwrap_or("")));
            let words = enum_words(&schema, property);
            if !words.is_empty() {
                arg = arg.value_parser(clap::builder::PossibleValuesParser::new(words));
            }
            command = command.arg(arg);
        }
    }
    command
}

fn first_line(text: &str) -> String {
    text.split(". ")
        .next()
        .unwrap_or(text)
        .trim_end_matches('.')
        .to_string()
}

/// The words an enum property accepts, following one `$ref` into `$defs`.
fn enum_words(schema: &Value, property: &Value) -> Vec<String> {
    let resolved = property["$ref"]
        .as_str()
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .map(|name| &schema["$defs"][name])
        .unwrap_or(property);
    let from_one_of = resolved["oneOf"]
        .as_array()
        .map(|options| {
            options
                .iter()
                .filter_map(|o| o["const"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if !from_one_of.is_empty() {
        return from_one_of;
    }
    resolved["enum"]
        .as_array()
        .map(|options| {
            options
                .iter()
                .filter_map(|o| o.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the command line and says how the process should exit.
pub fn main() -> ExitCode {
    let matches = command().get_matches();
    let (name, sub) = matches.subcommand().expect("a subcommand is required");
    init_logging();
    let runtime = majordomus_server::run::runtime();
    let stops = StopRequests::default();
    // Listening starts before anything is served, so no signal can find the default action.
    let signals = {
        let _runtime = runtime.enter();
        StopSignals::listen(name)
    };
    let code = runtime.block_on(async {
        tokio::select! {
            code = dispatch(name, sub, &stops) => code,
            () = StopSignals::watch(signals, &stops) => ExitCode::from(EXIT_ON_SECOND_SIGNAL),
        }
    });
    // Everything worth finishing has finished; a read of stdin may still be blocked in its
    // thread, and must not keep the process alive a moment longer.
    runtime.shutdown_background();
    // the values that own them may never be dropped now that the runtime is gone
    majordomus_checkout::scratch::remove_process_areas();
    code
}

/// The exit code when a second stop signal cut the stop short: 128 + SIGINT, as a shell
/// reports an interrupted command.
const EXIT_ON_SECOND_SIGNAL: u8 = 130;

/// The stop signals of the commands that serve. SIGUSR1 asks either for the ordered stop (as
/// `serve stop`'s request does); so does SIGINT or SIGTERM to `majordomus serve`. To
/// `majordomus mcp`, SIGINT or SIGTERM is its client ending it (Claude Code sends SIGINT,
/// then SIGTERM 100 ms later; rmcp's client signals after 3 s), so the process leaves,
/// handing whoever it serves over. On Windows, Ctrl-C and the console closing stand for SIGINT
/// and SIGTERM. A second signal of any kind ends the process at once. Other commands keep
/// the default handling.
struct StopSignals {
    listening: Listening,
    /// Whether SIGINT and SIGTERM come from the process's own client.
    client_ends_it: bool,
}

/// What a signal to a serving process says.
enum Heard {
    /// SIGINT or SIGTERM (Ctrl-C or the console closing on Windows).
    Ending,
    /// SIGUSR1: an ordered stop, whoever sends it.
    #[cfg(unix)]
    StopInOrder,
}

#[cfg(unix)]
struct Listening {
    terminate: Signal,
    interrupt: Signal,
    stop_in_order: Signal,
}

#[cfg(unix)]
impl Listening {
    fn start() -> std::io::Result<Listening> {
        Ok(Listening {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
            stop_in_order: signal(SignalKind::user_defined1())?,
        })
    }

    async fn next(&mut self) -> Heard {
        tokio::select! {
            _ = self.terminate.recv() => Heard::Ending,
            _ = self.interrupt.recv() => Heard::Ending,
            _ = self.stop_in_order.recv() => Heard::StopInOrder,
        }
    }
}

#[cfg(windows)]
struct Listening {
    interrupt: tokio::signal::windows::CtrlC,
    close: tokio::signal::windows::CtrlClose,
}

#[cfg(windows)]
impl Listening {
    fn start() -> std::io::Result<Listening> {
        Ok(Listening {
            interrupt: tokio::signal::windows::ctrl_c()?,
            close: tokio::signal::windows::ctrl_close()?,
        })
    }

    async fn next(&mut self) -> Heard {
        tokio::select! {
            _ = self.interrupt.recv() => Heard::Ending,
            _ = self.close.recv() => Heard::Ending,
        }
    }
}

impl StopSignals {
    /// Starts listening, for the commands that serve; call it inside the runtime.
    fn listen(command: &str) -> Option<StopSignals> {
        let client_ends_it = match command {
            "mcp" => true,
            "serve" => false,
            _ => return None,
        };
        Listening::start()
            .map(|listening| StopSignals {
                listening,
                client_ends_it,
            })
            .inspect_err(|error| {
                tracing::warn!(%error, "cannot watch for stop signals; a signal ends this process at once");
            })
            .ok()
    }

    /// Turns the first signal into a stop request, and resolves on the second.
    async fn watch(signals: Option<StopSignals>, stops: &StopRequests) {
        let Some(mut signals) = signals else {
            return std::future::pending().await;
        };
        let asked = match signals.listening.next().await {
            Heard::Ending => !signals.client_ends_it,
            #[cfg(unix)]
            Heard::StopInOrder => true,
        };
        if asked {
            tracing::info!("an ordered stop was requested by signal");
            stops.ask();
        } else {
            stops.leave();
        }
        signals.listening.next().await;
        tracing::info!("second stop signal: exiting now");
    }
}

/// Logging when `RUST_LOG` does not say otherwise: warnings and errors of majordomus, nothing
/// of rmcp, whose own warnings and errors are about what majordomus expects and handles (a
/// session gone with its server, a client's unknown tool). Expected events — failovers,
/// sessions coming and going — are logged at `info` and below. Nothing of the NATS client
/// either, which logs every failed reconnection; the federation reports its state itself,
/// in `serve status`.
const DEFAULT_LOG_FILTER: &str = "warn,rmcp=off,async_nats=off";

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

async fn dispatch(name: &str, matches: &ArgMatches, stops: &StopRequests) -> ExitCode {
    let path = cli_path(name, matches);
    let words: Vec<&str> = path.iter().map(|(word, _)| *word).collect();
    let leaf = path.last().map(|(_, m)| *m).unwrap_or(matches);
    if words == ["peers"] && leaf.get_flag("watch") {
        let checkouts = match leaf.get_one::<String>("checkouts").map(String::as_str) {
            Some("this") => Checkouts::This,
            Some("everywhere") => Checkouts::Everywhere,
            _ => Checkouts::Repository,
        };
        return exit_code(crate::watch::peers(site_dir(leaf), checkouts).await);
    }
    if words == ["lease"] {
        return crate::commands::lease(crate::commands::LeaseCommand {
            dir: site_dir(leaf),
            name: leaf.get_one::<String>("name").cloned().unwrap_or_default(),
            ttl_secs: leaf.get_one::<u32>("ttl_secs").copied(),
            wait_secs: leaf.get_one::<u32>("wait_secs").copied(),
            command: leaf
                .get_many::<String>("command")
                .into_iter()
                .flatten()
                .cloned()
                .collect(),
            json: leaf.get_flag("json"),
        })
        .await;
    }
    if words == ["release"] {
        // The lease `majordomus lease` took for its caller is released for the same caller.
        let mut input = Map::new();
        if let Some(name) = leaf.get_one::<String>("name") {
            input.insert("name".into(), Value::String(name.clone()));
        }
        input.insert("pid".into(), Value::from(crate::commands::caller_pid()));
        let release = majordomus_capabilities::registry()
            .by_id("leases.release")
            .expect("leases.release is built in");
        return run_with_input(release, leaf, input).await;
    }
    if let Some(capability) = majordomus_capabilities::registry().iter().find(|c| {
        c.declaration
            .exposure
            .cli
            .is_some_and(|cli| cli == words.as_slice())
    }) {
        return run_capability(capability, leaf).await;
    }
    let outcome = match words.as_slice() {
        ["mcp"] => crate::commands::mcp(site_dir(leaf), stops.clone()).await,
        ["install"] => {
            let word = |name: &str| leaf.get_one::<String>(name).map_or("", String::as_str);
            crate::install::run(&crate::install::Options {
                clients: crate::install::clients_named(
                    leaf.get_many::<String>("client")
                        .into_iter()
                        .flatten()
                        .map(String::as_str),
                )
                .expect("clap accepts only client words"),
                scope: majordomus_core::clients::wiring::Scope::from_word(word("scope"))
                    .expect("clap accepts only scope words"),
                dry_run: leaf.get_flag("dry-run"),
                uninstall: leaf.get_flag("uninstall"),
                force: leaf.get_flag("force"),
                dir: site_dir(leaf),
            })
        }
        ["doctor"] => crate::install::doctor::run(&site_dir(leaf)),
        ["allow"] => crate::commands::allow(
            &site_dir(leaf),
            leaf.get_one::<String>("suggestion")
                .and_then(|word| Suggestion::from_word(word))
                .expect("clap accepts only the suggestions' words"),
        ),
        ["hook"] => {
            let word = |name: &str| leaf.get_one::<String>(name).map_or("", String::as_str);
            crate::hooks::run(word("client"), word("event")).await;
            Ok(())
        }
        ["serve"] => {
            crate::commands::serve(
                site_dir(leaf),
                leaf.get_one::<u64>("idle").copied(),
                stops.clone(),
            )
            .await
        }
        ["serve", "stop"] => crate::commands::stop(site_dir(leaf)).await,
        ["serve", "ensure"] => crate::commands::ensure(site_dir(leaf), leaf.get_flag("json")).await,
        ["board"] => crate::watch::board(site_dir(leaf), leaf.get_flag("open")).await,
        ["episodes", "log"] => majordomus_core::episodes::log::run(
            site_dir(leaf),
            leaf.get_flag("json"),
            leaf.get_one::<String>("since").map(String::as_str),
        ),
        ["openapi"] => {
            majordomus_core::render::say!(
                "{}",
                serde_json::to_string_pretty(&majordomus_capabilities::openapi::document())
                    .expect("documents serialise")
            );
            Ok(())
        }
        other => Err(format!(
            "`{}` is not a command; see `majordomus --help`",
            other.join(" ")
        )),
    };
    exit_code(outcome)
}

fn exit_code(outcome: Result<(), String>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("majordomus: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The chain of subcommand words the user typed, with each one's matches.
fn cli_path<'a>(first: &'a str, matches: &'a ArgMatches) -> Vec<(&'a str, &'a ArgMatches)> {
    let mut path = vec![(first, matches)];
    let mut current = matches;
    while let Some((word, sub)) = current.subcommand() {
        path.push((word, sub));
        current = sub;
    }
    path
}

fn site_dir(matches: &ArgMatches) -> PathBuf {
    matches
        .get_one::<PathBuf>("repo")
        .cloned()
        .unwrap_or_else(|| PathBuf::from("."))
}

async fn run_capability(capability: &Capability, matches: &ArgMatches) -> ExitCode {
    let mut input = Map::new();
    if let Some(properties) = capability.input_schema()["properties"].as_object() {
        for name in properties.keys() {
            if let Some(value) = matches.get_one::<String>(name) {
                input.insert(name.clone(), Value::String(value.clone()));
            }
        }
    }
    run_with_input(capability, matches, input).await
}

async fn run_with_input(
    capability: &Capability,
    matches: &ArgMatches,
    input: Map<String, Value>,
) -> ExitCode {
    let site = match Site::open(&site_dir(matches)) {
        Ok(site) => site,
        Err(message) => {
            eprintln!("majordomus: {message}");
            return ExitCode::FAILURE;
        }
    };
    match capability
        .call(&Context::observer(site), Value::Object(input))
        .await
    {
        Ok(output) => {
            if matches.get_flag("json") {
                majordomus_core::render::say!(
                    "{}",
                    serde_json::to_string_pretty(&output).expect("answers serialise")
                );
            } else {
                majordomus_core::render::say!("{}", capability.render(&output));
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("majordomus: {}", error.message);
            ExitCode::from(if error.kind == ErrorKind::InvalidInput {
                2
            } else {
                1
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_tree_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn the_development_tooling_is_no_command_of_the_users_executable() {
        for tool in ["docs", "bench"] {
            assert!(command().find_subcommand(tool).is_none(), "{tool}");
        }
    }

    #[test]
    fn capability_commands_take_their_input_fields_as_flags() {
        let matches = command()
            .try_get_matches_from([
                "majordomus",
                "serve",
                "status",
                "--checkouts",
                "this",
                "--json",
            ])
            .unwrap();
        let path = cli_path("serve", matches.subcommand().unwrap().1);
        assert_eq!(
            path.iter().map(|(w, _)| *w).collect::<Vec<_>>(),
            ["serve", "status"]
        );
        let refused =
            command().try_get_matches_from(["majordomus", "peers", "--checkouts", "everything"]);
        assert!(refused.unwrap_err().to_string().contains("repository"));
    }
}
