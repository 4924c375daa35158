//! `majordomus-dev`: the reference pages and the benchmark, as `cargo xtask docs` and
//! `cargo xtask bench`. A separate executable so that neither ships to users.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use majordomus_dev::{bench, docs};

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
        /// Measure in this checkout (it must have no server running) instead of a temporary repository
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
        /// Also write the report, with the machine description, as JSON
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Also write the tables as Markdown
        #[arg(long, value_name = "FILE")]
        markdown: Option<PathBuf>,
        /// Only rows (capability/transport/case) and scenarios whose name contains TEXT
        #[arg(long, value_name = "TEXT")]
        filter: Option<String>,
        /// Also run the scenarios: cold starts, a 118-worktree gather, a 1,000-peer board, memory with 200 sessions, boards federated across machines (needs nats-server)
        #[arg(long)]
        scenarios: bool,
        /// Exactly N measured iterations per row and scenario (default: 200 to 2000 per row, bounded by time)
        #[arg(long, value_name = "N")]
        iterations: Option<usize>,
        /// Unmeasured calls before each row
        #[arg(long, value_name = "N", default_value_t = 30)]
        warmup: usize,
        /// The `majordomus` executable to spawn (default: the one beside this executable)
        #[arg(long, value_name = "FILE")]
        majordomus: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::Docs { out, check } => {
            docs::command(&out.unwrap_or_else(docs::default_dir), check)
        }
        Command::Bench {
            repo,
            json,
            markdown,
            filter,
            scenarios,
            iterations,
            warmup,
            majordomus,
        } => {
            init_logging();
            // Two workers, as the `majordomus` executable runs, so that the in-process rows
            // measure the handler on the runtime it has in use.
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("the async runtime starts");
            runtime.block_on(bench::run(bench::Options {
                repo,
                json,
                markdown,
                filter,
                scenarios,
                iterations,
                warmup,
                majordomus,
                ..Default::default()
            }))
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
