//! Identities and timestamps as they appear in answers.
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use majordomus_domain::ids::{identity_digest, rfc3339};
//!
//! let id = identity_digest("/home/me/repo");
//! assert_eq!(id.len(), 32);
//! assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
//! assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_millis(1_500)), "1970-01-01T00:00:01Z");
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::macros::format_description;

/// How many hex digits of the SHA-256 an identity keeps: 128 bits, plenty to tell the
/// checkouts of one machine apart, and short enough to read in an answer.
const DIGEST_HEX_DIGITS: usize = 32;

/// The identity of a checkout or a git directory: the first 32 hex digits of the SHA-256
/// of `text` (its canonical path).
///
/// Hashing rather than printing the path keeps ids stable across restarts without them
/// revealing where anything lives.
pub fn identity_digest(text: &str) -> String {
    let mut digest = hex::encode(Sha256::digest(text.as_bytes()));
    digest.truncate(DIGEST_HEX_DIGITS);
    digest
}

/// `t` as RFC 3339 in UTC, to the second (`2026-11-30T02:26:47Z`).
///
/// Seconds are what every timestamp in an answer carries; sub-second digits would only
/// suggest a precision the board does not have. Times outside the years 1–9999 are
/// clamped to that range rather than panicking.
pub fn rfc3339(t: SystemTime) -> String {
    let seconds = match t.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        // Before the epoch: round towards the past, so truncation stays "to the second".
        Err(before) => {
            let before = before.duration();
            let whole = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            -whole - i64::from(before.subsec_nanos() > 0)
        }
    };
    let moment = OffsetDateTime::from_unix_timestamp(seconds).unwrap_or(if seconds < 0 {
        time::PrimitiveDateTime::MIN.assume_utc()
    } else {
        time::PrimitiveDateTime::MAX.assume_utc()
    });
    moment
        .format(format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second]Z"
        ))
        .expect("a UTC date-time has every component this format names")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn digest_is_the_sha256_prefix() {
        // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
        assert_eq!(identity_digest("abc"), "ba7816bf8f01cfea414140de5dae2223");
        assert_ne!(identity_digest("/a"), identity_digest("/b"));
    }

    #[test]
    fn timestamps_are_utc_to_the_second() {
        let t = UNIX_EPOCH + Duration::from_secs(1_796_005_607) + Duration::from_millis(999);
        assert_eq!(rfc3339(t), "2026-11-30T02:26:47Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn times_before_the_epoch_round_down() {
        let t = UNIX_EPOCH - Duration::from_millis(500);
        assert_eq!(rfc3339(t), "1969-12-31T23:59:59Z");
    }
}
