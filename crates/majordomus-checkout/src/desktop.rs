//! A notice on the person's desktop: the platform's own notifier, run as a program with the
//! title and text as its arguments (never through a shell), and never waited for by the
//! caller. Linux and the other Unixes run `notify-send`, macOS `osascript` (the texts
//! passed as the script's arguments, never spliced into it); Windows has no notifier that
//! needs no module installed, so nothing is shown there.
//!
//! The texts come from other programs (a client's message, a peer's name): each is cleaned
//! of control and bidirectional characters and cut to its bound, and `notify-send`'s markup
//! characters are escaped, since its notification servers read `<b>` and `<a href>`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use majordomus_domain::text;

/// Characters of a notice's title.
pub const TITLE_CHARS: usize = 64;

/// Characters of a notice's text.
pub const BODY_CHARS: usize = 240;

/// How long a notifier may run before it is killed: `notify-send` returns at once, but one
/// waiting on a notification server that never answers is not kept.
pub const NOTIFIER_BOUND: Duration = Duration::from_secs(5);

/// Why no notice was shown.
#[derive(Debug, thiserror::Error)]
pub enum DesktopError {
    #[error("this platform has no desktop notifier majordomus can run without installing one")]
    Unsupported,
    #[error("the notifier `{program}` could not be started: {error}")]
    Spawn {
        program: &'static str,
        error: std::io::Error,
    },
}

/// Shows `title` and `body` on the desktop. Returns once the notifier started; a thread
/// reaps it, killing it after [`NOTIFIER_BOUND`].
pub fn notify(title: &str, body: &str) -> Result<(), DesktopError> {
    let title = text::sanitized(title, TITLE_CHARS);
    let body = text::sanitized(body, BODY_CHARS);
    let (program, mut command) = notifier(&title, &body)?;
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| DesktopError::Spawn { program, error })?;
    std::thread::Builder::new()
        .name("majordomus-notifier".into())
        .spawn(move || reap(child))
        .map_err(|error| DesktopError::Spawn { program, error })?;
    Ok(())
}

/// Waits for the notifier at most [`NOTIFIER_BOUND`], then kills it.
fn reap(mut child: Child) {
    let started = Instant::now();
    while started.elapsed() < NOTIFIER_BOUND {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The platform's notifier, given the cleaned texts.
#[cfg(all(unix, not(target_os = "macos")))]
fn notifier(title: &str, body: &str) -> Result<(&'static str, Command), DesktopError> {
    let mut command = Command::new("notify-send");
    command
        .arg("--app-name=majordomus")
        .arg("--")
        .arg(title)
        .arg(escape_markup(body));
    Ok(("notify-send", command))
}

#[cfg(target_os = "macos")]
fn notifier(title: &str, body: &str) -> Result<(&'static str, Command), DesktopError> {
    let mut command = Command::new("osascript");
    command
        .args([
            "-e",
            "on run argv",
            "-e",
            "display notification (item 2 of argv) with title (item 1 of argv)",
            "-e",
            "end run",
            "--",
        ])
        .arg(title)
        .arg(body);
    Ok(("osascript", command))
}

#[cfg(not(unix))]
fn notifier(_title: &str, _body: &str) -> Result<(&'static str, Command), DesktopError> {
    Err(DesktopError::Unsupported)
}

/// `text` with the characters `notify-send`'s body markup reads escaped.
#[cfg(all(unix, not(target_os = "macos")))]
fn escape_markup(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(all(test, unix, not(target_os = "macos")))]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_for_the_notification_server() {
        assert_eq!(
            escape_markup("<a href=\"x\">p2</a> & co"),
            "&lt;a href=\"x\"&gt;p2&lt;/a&gt; &amp; co"
        );
    }
}
