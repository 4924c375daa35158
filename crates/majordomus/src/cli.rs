//! The command line. The fixed commands (`mcp`, `serve`, `openapi`, `docs`, `bench`, …) are
//! declared here; every capability with CLI words becomes a command too, its flags derived from
//! its input schema.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::{Map, Value};

use crate::context::{Context, Site};
use crate::registry::{Capability, ErrorKind, Registry};

fn repo_arg() -> Arg {
    Arg::new("repo")
        .long("repo")
        .value_name("DIR")
        .value_parser(clap::value_parser!(PathBuf))
        .help("A directory inside the checkout to act on (default: the current directory)")
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
        .subcommand(Command::new("openapi").about("Print the OpenAPI 3.1 document of the HTTP routes"))
        .subcommand(
            Command::new("docs")
                .about("Write the reference pages (one per capability, and an index) from the capability registry")
                .arg(
                    Arg::new("out")
                        .long("out")
                        .value_name("DIR")
                        .value_parser(clap::value_parser!(PathBuf))
                        .default_value(crate::docs::DEFAULT_DIR)
                        .help("The directory to write into"),
                )
                .arg(
                    Arg::new("check")
                        .long("check")
                        .action(ArgAction::SetTrue)
                        .help("Write nothing: fail, naming each page, when DIR differs from what the code generates"),
                ),
        )
        .subcommand(
            Command::new("bench")
                .about("Measure every capability on every transport it is exposed on, once per declared case; print p50/p90/p99")
                .arg(
                    Arg::new("repo")
                        .long("repo")
                        .value_name("DIR")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("Measure in this checkout (it must have no server running) instead of a temporary repository"),
                )
                .arg(
                    Arg::new("json")
                        .long("json")
                        .value_name("FILE")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("Also write the report, with the machine description, as JSON"),
                )
                .arg(
                    Arg::new("markdown")
                        .long("markdown")
                        .value_name("FILE")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("Also write the tables as Markdown"),
                )
                .arg(
                    Arg::new("filter")
                        .long("filter")
                        .value_name("TEXT")
                        .help("Only rows (capability/transport/case) and scenarios whose name contains TEXT"),
                )
                .arg(
                    Arg::new("scenarios")
                        .long("scenarios")
                        .action(ArgAction::SetTrue)
                        .help("Also run the scenarios: cold starts, a 118-worktree gather, a 1,000-peer board, memory with 200 sessions, boards federated across machines (needs nats-server)"),
                )
                .arg(
                    Arg::new("iterations")
                        .long("iterations")
                        .value_name("N")
                        .value_parser(clap::value_parser!(usize))
                        .help("Exactly N measured iterations per row and scenario (default: 200 to 2000 per row, bounded by time)"),
                )
                .arg(
                    Arg::new("warmup")
                        .long("warmup")
                        .value_name("N")
                        .value_parser(clap::value_parser!(usize))
                        .default_value("30")
                        .help("Unmeasured calls before each row"),
                ),
        );
    for capability in Registry::builtin().iter() {
        if let Some(words) = capability.declaration.exposure.cli {
            root = graft(
                root,
                words,
                capability_command(capability, words.last().expect("CLI words are not empty")),
            );
        }
    }
    graft(root, &["episodes", "log"], episodes_log_command())
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
    init_logging(name);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the async runtime starts");
    let code = runtime.block_on(dispatch(name, sub));
    // A read of stdin may still be blocked in its thread; it must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}

fn init_logging(command: &str) {
    // The NATS client logs every failed reconnection attempt; the federation reports its
    // state itself, once per change.
    let default = if command == "serve" {
        "info,async_nats=off"
    } else {
        "warn,async_nats=off"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

async fn dispatch(name: &str, matches: &ArgMatches) -> ExitCode {
    let path = cli_path(name, matches);
    let words: Vec<&str> = path.iter().map(|(word, _)| *word).collect();
    let leaf = path.last().map(|(_, m)| *m).unwrap_or(matches);
    if let Some(capability) = Registry::builtin().iter().find(|c| {
        c.declaration
            .exposure
            .cli
            .is_some_and(|cli| cli == words.as_slice())
    }) {
        return run_capability(capability, leaf).await;
    }
    let outcome = match words.as_slice() {
        ["mcp"] => crate::commands::mcp(site_dir(leaf)).await,
        ["serve"] => {
            crate::commands::serve(site_dir(leaf), leaf.get_one::<u64>("idle").copied()).await
        }
        ["serve", "stop"] => crate::commands::stop(site_dir(leaf)).await,
        ["serve", "ensure"] => crate::commands::ensure(site_dir(leaf), leaf.get_flag("json")).await,
        ["episodes", "log"] => crate::episodes::log::run(
            site_dir(leaf),
            leaf.get_flag("json"),
            leaf.get_one::<String>("since").map(String::as_str),
        ),
        ["docs"] => crate::docs::command(
            leaf.get_one::<PathBuf>("out").expect("--out has a default"),
            leaf.get_flag("check"),
        ),
        ["bench"] => {
            crate::bench::run(crate::bench::Options {
                repo: leaf.get_one::<PathBuf>("repo").cloned(),
                json: leaf.get_one::<PathBuf>("json").cloned(),
                markdown: leaf.get_one::<PathBuf>("markdown").cloned(),
                filter: leaf.get_one::<String>("filter").cloned(),
                scenarios: leaf.get_flag("scenarios"),
                iterations: leaf.get_one::<usize>("iterations").copied(),
                warmup: leaf.get_one::<usize>("warmup").copied().unwrap_or(30),
                ..Default::default()
            })
            .await
        }
        ["openapi"] => {
            println!(
                "{}",
                serde_json::to_string_pretty(&crate::openapi::document())
                    .expect("documents serialise")
            );
            Ok(())
        }
        other => Err(format!(
            "`{}` is not a command; see `majordomus --help`",
            other.join(" ")
        )),
    };
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

/// Opens the site of a directory: its checkout and the repository's configuration.
pub fn open_site(dir: &std::path::Path) -> Result<Arc<Site>, String> {
    let checkout = majordomus_checkout::git::Checkout::discover(dir)
        .map_err(|error| format!("cannot use {}: {error}", dir.display()))?;
    let config =
        majordomus_checkout::config::load(&checkout.root).map_err(|error| error.to_string())?;
    Ok(Arc::new(Site::new(checkout, config)))
}

async fn run_capability(capability: &Capability, matches: &ArgMatches) -> ExitCode {
    let site = match open_site(&site_dir(matches)) {
        Ok(site) => site,
        Err(message) => {
            eprintln!("majordomus: {message}");
            return ExitCode::FAILURE;
        }
    };
    let mut input = Map::new();
    if let Some(properties) = capability.input_schema()["properties"].as_object() {
        for name in properties.keys() {
            if let Some(value) = matches.get_one::<String>(name) {
                input.insert(name.clone(), Value::String(value.clone()));
            }
        }
    }
    match capability
        .call(&Context::observer(site), Value::Object(input))
        .await
    {
        Ok(output) => {
            if matches.get_flag("json") {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&output).expect("answers serialise")
                );
            } else {
                println!("{}", capability.render(&output));
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
