//! `majordomus-dev`: the reference pages and the benchmark, as `cargo xtask docs` and
//! `cargo xtask bench`. A separate executable so that neither ships to users.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
        /// Also run the scenarios: cold starts, a 118-worktree gather, a 1,000-peer board, throughput with 8 and 32 clients, memory with 2,000 idle sessions, the size of tools/list, boards federated across machines (needs nats-server)
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
        /// Compare with an earlier run's --json report: each figure's ratio to the baseline's p50 (or value), flagging those above --flag-above
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// The ratio to the baseline above which a figure is flagged
        #[arg(long, value_name = "RATIO", default_value_t = bench::baseline::FLAG_ABOVE)]
        flag_above: f64,
        /// How long each throughput scenario's clients call
        #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
        throughput_seconds: f64,
        /// Make every measured call of the row NAME this many milliseconds longer (to test --baseline)
        #[arg(long, value_name = "NAME:MILLIS", hide = true, value_parser = slow_row)]
        slow_row: Vec<(String, Duration)>,
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

/// `NAME:MILLIS`, as `--slow-row` takes it.
fn slow_row(text: &str) -> Result<(String, Duration), String> {
    let (name, millis) = text
        .rsplit_once(':')
        .ok_or("expected NAME:MILLIS, such as peers.list/rest/this:20")?;
    let millis: u64 = millis
        .parse()
        .map_err(|_| format!("`{millis}` is not a whole number of milliseconds"))?;
    Ok((name.to_string(), Duration::from_millis(millis)))
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
            baseline,
            flag_above,
            throughput_seconds,
            slow_row,
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
                baseline,
                flag_above,
                throughput_seconds,
                slow_rows: slow_row,
                ..Default::default()
            }))
        }
        Command::FloorServer { stdio, .. } => {
            // As `majordomus` runs: two workers, so the floor is served as the rows are.
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("the async runtime starts");
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
