//! The pure domain of majordomus: claim paths and how they meet, the peer board, the
//! repository-wide overlap listing, connection episodes and the words answers are made of.
//!
//! Nothing here does I/O, spawns, sleeps or reads a clock: every operation that needs the
//! current time takes it as a [`std::time::SystemTime`], so the rules can be tested exactly
//! and the app decides where time comes from.

pub mod board;
pub mod checkouts;
pub mod episodes;
pub mod ids;
pub mod index;
pub mod limits;
pub mod listing;
pub mod paths;
pub mod peers;
pub mod text;

/// Whether `text` breaks a line: answers print intents and ids on one line each, so a
/// break inside one would let it pass as something else.
fn has_line_break(text: &str) -> bool {
    text.contains([
        '\n', '\r', '\u{0b}', '\u{0c}', '\u{85}', '\u{2028}', '\u{2029}',
    ])
}
