//! `majordomus-dev`: the reference pages, the plugin manifests and the benchmark, as
//! `cargo xtask docs`, `cargo xtask plugins` and `cargo xtask bench`. A separate executable so that neither ships to users.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use majordomus_dev::{bench, docs, plugins};

#[derive(Parser)]
#[command(
    name = "majordomus-dev",
    version,
    about = "The development tooling of majordomus: the reference pages and the benchmark (`cargo xtask …`)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write the reference pages (one per capability, and an index) from the capability registry
    Docs {
        /// The directory to write into (default: docs/reference of this workspace)
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Write nothing: fail, naming each page, when DIR differs from what the code generates
        #[arg(long)]
        check: bool,
    },
    /// Write the plugin and package manifests (Claude Code plugin and marketplace, Gemini CLI extension, MCP Registry server.json, npm package.json files) from the wiring `majordomus install` writes
    Plugins {
        /// The workspace root to write under (default: this workspace's)
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// Write nothing: fail, naming each file, when one differs from what the code generates
        #[arg(long)]
        check: bool,
    },
    /// Measure every capability on every transport it is exposed on, once per declared case; print p50/p90/p99
    #[command(
        long_about = "Measure every capability on every transport it is exposed on, once per declared case; print p50/p90/p99.\n\n\
                      The out-of-process rows and the scenarios spawn the `majordomus` executable. Run through cargo \
                      (`cargo xtask bench`, or `cargo run --release -q -p majordomus-dev -- bench` for figures worth \
                      reading), it first builds `majordomus` with its own profile and runs the one beside it in the \
                      target directory; run directly, it needs that `majordomus` built already \
                      (`cargo build --release -p majordomus -p majordomus-dev`), or one named with --majordomus."
    )]
    Bench {
        #[command(flatten)]
        options: bench::Options,
    },
    /// A minimal MCP server with one do-nothing tool (and, over HTTP, a minimal REST route): the floor the benchmark reads each transport's rows against
    #[command(hide = true)]
    FloorServer {
        /// Serve MCP over stdin and stdout
        #[arg(long, conflicts_with = "http", required_unless_present = "http")]
        stdio: bool,
        /// Serve MCP Streamable HTTP and the REST route on a loopback port, say the URL on stdout, and stop when stdin closes
        #[arg(long)]
        http: bool,
    },
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::Docs { out, check } => {
            docs::command(&out.unwrap_or_else(docs::default_dir), check)
        }
        Command::Plugins { root, check } => {
            plugins::command(&root.unwrap_or_else(plugins::default_root), check)
        }
        Command::Bench { options } => {
            init_logging();
            // As the `majordomus` executable runs, so that the in-process rows measure the
            // handler on the runtime it has in use.
            majordomus_server::run::runtime().block_on(bench::run(options))
        }
        Command::FloorServer { stdio, .. } => {
            // As `majordomus` runs, so the floor is served as the rows are.
            let runtime = majordomus_server::run::runtime();
            if stdio {
                runtime.block_on(bench::floor::serve_stdio())
            } else {
                runtime.block_on(bench::floor::serve_http())
            }
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("majordomus-dev: {message}");
            ExitCode::FAILURE
        }
    }
}

/// What the server started inside the benchmark logs, on stderr beside the progress bar:
/// `RUST_LOG`, else the quiet default of the `majordomus` executable — its own warnings, none
/// of rmcp's or the NATS client's, which are about situations it expects and handles.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=off,async_nats=off"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}
