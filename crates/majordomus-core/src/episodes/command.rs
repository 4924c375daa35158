//! A repository's own episode driver: the program `[episodes] command` in `majordomus.toml`
//! names, run once per event with the event as one JSON line on stdin. The last non-empty
//! line it writes to stderr is what an episode's `repository` reports, verbatim. A command
//! that cannot be started, fails silently, or outlives its timeout is reported in words, and
//! is killed (with everything it started) when the timeout ends.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use majordomus_domain::sync::LockExt;

use super::event::EventKind;

/// The most of a command's stderr kept: its last line is all that is reported.
const STDERR_KEPT_BYTES: usize = 64 * 1024;

/// The longest report kept from a command's last line.
const REPORT_MAX_CHARS: usize = 2_000;

/// How often a running command is looked at.
const POLL: Duration = Duration::from_millis(5);

/// The configured command of a repository.
#[derive(Clone, Debug)]
pub struct CommandDriver {
    program: Vec<String>,
    /// Where it runs, and what a relative program path is relative to: the repository root.
    root: PathBuf,
    timeout: Duration,
}

impl CommandDriver {
    /// `program` is the program and its arguments, never empty (the config loader refuses an
    /// empty command).
    pub fn new(program: Vec<String>, root: &Path, timeout: Duration) -> CommandDriver {
        CommandDriver {
            program,
            root: root.to_path_buf(),
            timeout,
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The command as a person reads it.
    pub fn display(&self) -> String {
        self.program.join(" ")
    }

    /// Runs the command once with `event` (one JSON line, without the line break) and says
    /// what `repository` should report. Blocks for at most the timeout and a little more.
    pub fn run(&self, event_kind: EventKind, event: &str) -> String {
        let shown = self.display();
        let Some((program, arguments)) = self.program.split_first() else {
            return "`[episodes] command` in majordomus.toml names no program".to_string();
        };
        let program_path = Path::new(program);
        let program_path = if program_path.is_relative() && program_path.components().count() > 1 {
            self.root.join(program_path)
        } else {
            program_path.to_path_buf()
        };
        let mut command = Command::new(&program_path);
        command
            .args(arguments)
            .current_dir(&self.root)
            .env("MAJORDOMUS_EPISODE_EVENT", event_kind.as_str())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // its own process group, so a timeout can stop whatever it started too
        majordomus_checkout::process::in_own_group(&mut command);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return format!(
                    "the episode command `{shown}` was not found, so this episode is recorded \
                     nowhere: fix `[episodes] command` in majordomus.toml"
                );
            }
            Err(error) => {
                return format!(
                    "the episode command `{shown}` could not be started ({error}), so this \
                     episode is recorded nowhere"
                );
            }
        };
        let stderr_kept = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        if let Some(mut stderr) = child.stderr.take() {
            let kept = stderr_kept.clone();
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let mut kept = kept.lock_or_recover();
                    kept.extend_from_slice(&chunk[..n]);
                    if kept.len() > STDERR_KEPT_BYTES {
                        let excess = kept.len() - STDERR_KEPT_BYTES;
                        kept.drain(..excess);
                    }
                }
                let _ = done_tx.send(());
            });
        }
        if let Some(mut stdin) = child.stdin.take() {
            let line = format!("{event}\n");
            // A command that does not read its input must not hold the driver up.
            std::thread::spawn(move || {
                let _ = stdin.write_all(line.as_bytes());
            });
        }
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if started.elapsed() >= self.timeout => break None,
                Ok(None) => std::thread::sleep(POLL),
                Err(_) => break None,
            }
        };
        if status.is_none() {
            majordomus_checkout::process::kill_group(&mut child);
            let _ = child.wait();
        }
        // stderr ends when the command (and anything it left running) closes it; do not wait
        // long for a straggler that holds it open.
        let _ = done_rx.recv_timeout(Duration::from_millis(200));
        let said = last_line(&stderr_kept.lock_or_recover());
        match (status, said) {
            (None, said) => {
                let mut report = format!(
                    "the episode command `{shown}` did not finish within {} ms and was stopped",
                    self.timeout.as_millis()
                );
                if let Some(said) = said {
                    report.push_str(&format!("; the last thing it said was: {said}"));
                }
                report
            }
            (Some(_), Some(said)) => said,
            (Some(status), None) if status.success() => format!(
                "the episode command `{shown}` finished without a word on stderr, so there is \
                 no record to point to"
            ),
            (Some(status), None) => {
                format!("the episode command `{shown}` failed ({status}) without a word on stderr")
            }
        }
    }
}

/// The last line of `bytes` that is not blank, trimmed of its line ending, bounded in length.
fn last_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text
        .lines()
        .rev()
        .map(|line| line.trim_end_matches('\r'))
        .find(|line| !line.trim().is_empty())?;
    if line.chars().count() > REPORT_MAX_CHARS {
        let cut: String = line.chars().take(REPORT_MAX_CHARS).collect();
        Some(format!("{cut}…"))
    } else {
        Some(line.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver(script: &str, timeout_ms: u64) -> (tempfile::TempDir, CommandDriver) {
        let dir = tempfile::tempdir().unwrap();
        let command = vec!["sh".to_string(), "-c".to_string(), script.to_string()];
        let driver = CommandDriver::new(command, dir.path(), Duration::from_millis(timeout_ms));
        (dir, driver)
    }

    #[test]
    fn the_last_non_empty_stderr_line_is_the_report() {
        let (_dir, driver) = driver(
            "read event; echo \"noise\" >&2; echo \"got $event\" >&2; echo >&2; echo out",
            5_000,
        );
        assert_eq!(
            driver.run(EventKind::Opened, r#"{"event":"opened"}"#),
            r#"got {"event":"opened"}"#
        );
    }

    #[test]
    fn the_event_kind_and_the_repository_root_are_given() {
        let (dir, driver) = driver("echo \"$MAJORDOMUS_EPISODE_EVENT in $(pwd)\" >&2", 5_000);
        let root = dir.path().canonicalize().unwrap();
        let report = driver.run(EventKind::Closed, "{}");
        assert_eq!(report, format!("closed in {}", root.display()));
    }

    #[test]
    fn a_relative_program_is_found_from_the_repository_root() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("record.sh");
        std::fs::write(&script, "#!/bin/sh\necho recorded as ISSUE-7 >&2\n").unwrap();
        majordomus_checkout::files::set_mode(&script, 0o755).unwrap();
        let driver = CommandDriver::new(
            vec!["./record.sh".into()],
            dir.path(),
            Duration::from_secs(5),
        );
        assert_eq!(driver.run(EventKind::Opened, "{}"), "recorded as ISSUE-7");
    }

    #[test]
    fn a_missing_command_is_reported_in_words() {
        let dir = tempfile::tempdir().unwrap();
        let driver = CommandDriver::new(
            vec!["majordomus-no-such-recorder".into(), "--x".into()],
            dir.path(),
            Duration::from_secs(1),
        );
        let report = driver.run(EventKind::Opened, "{}");
        assert!(
            report.contains("`majordomus-no-such-recorder --x` was not found"),
            "{report}"
        );
    }

    #[test]
    fn a_silent_or_failing_command_is_reported_in_words() {
        let (_dir, silent) = driver("cat >/dev/null", 5_000);
        let report = silent.run(EventKind::Opened, "{}");
        assert!(report.contains("without a word on stderr"), "{report}");
        let (_dir, failing) = driver("exit 3", 5_000);
        let report = failing.run(EventKind::Opened, "{}");
        assert!(
            report.contains("failed") && report.contains('3'),
            "{report}"
        );
        let (_dir, failing_with_reason) = driver("echo 'tracker down' >&2; exit 1", 5_000);
        assert_eq!(
            failing_with_reason.run(EventKind::Opened, "{}"),
            "tracker down"
        );
    }

    #[test]
    fn a_hanging_command_is_cut_off_with_what_it_started() {
        let (_dir, driver) = driver("echo 'working on it' >&2; sleep 30 & sleep 30", 300);
        let started = Instant::now();
        let report = driver.run(EventKind::Opened, "{}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(report.contains("did not finish within 300 ms"), "{report}");
        assert!(report.contains("working on it"), "{report}");
    }

    #[test]
    fn a_command_that_never_reads_its_input_is_not_stuck_on_it() {
        let (_dir, driver) = driver("echo done >&2", 5_000);
        let big = "x".repeat(1 << 20);
        assert_eq!(driver.run(EventKind::Opened, &big), "done");
    }

    #[test]
    fn last_lines_are_trimmed_and_bounded() {
        assert_eq!(last_line(b"a\nb\r\n\n  \n"), Some("b".into()));
        assert_eq!(last_line(b"\n \n"), None);
        let long = "y".repeat(REPORT_MAX_CHARS + 10);
        assert!(last_line(long.as_bytes()).unwrap().ends_with('…'));
    }
}
