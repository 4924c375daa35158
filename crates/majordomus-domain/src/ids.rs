//! Identities and the instants the domain hands out.
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use majordomus_domain::ids::{Stamp, identity_digest};
//!
//! let id = identity_digest("/home/me/repo");
//! assert_eq!(id.len(), 32);
//! assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
//! let stamp = Stamp::at(UNIX_EPOCH + Duration::from_millis(1_500));
//! assert_eq!(stamp.to_string(), "1970-01-01T00:00:01Z");
//! assert_eq!("1970-01-01T00:00:01Z".parse(), Ok(stamp));
//! assert!("1970-01-01T00:00:01.5Z".parse::<Stamp>().is_err());
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

use crate::text;

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

/// The first and last second a stamp can be, `0001-01-01T00:00:00Z` and
/// `9999-12-31T23:59:59Z`, in seconds since 1970: RFC 3339 writes a year in four digits.
const FIRST_SECOND: i64 = -62_135_596_800;
const LAST_SECOND: i64 = 253_402_300_799;

/// How a stamp is written, and the only way one is read.
const FORMAT: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");

/// Characters of a refused stamp that its error quotes: enough to recognise it, and no
/// more of a text that may come from another machine.
const QUOTED_CHARS: usize = 40;

/// An instant as answers, journal lines and published boards carry it: in UTC, to the
/// second, written RFC 3339 (`2026-11-30T02:26:47Z`).
///
/// Seconds are what every timestamp in an answer carries; sub-second digits would only
/// suggest a precision the board does not have. Kept as an instant rather than as its text,
/// so the domain compares instants. Its text is what [`fmt::Display`] writes and
/// [`FromStr`] reads back; every wire and file above the domain writes and reads it through
/// that text, and the domain itself serialises nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp {
    /// Seconds since 1970, from [`FIRST_SECOND`] to [`LAST_SECOND`].
    unix: i64,
}

impl Stamp {
    /// `t` to the second, truncated towards the past (so a time before 1970 rounds down
    /// too). Times outside the years 1–9999 are clamped to that range rather than panicking.
    pub fn at(t: SystemTime) -> Stamp {
        let seconds = match t.duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            Err(before) => {
                let before = before.duration();
                let whole = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
                -whole - i64::from(before.subsec_nanos() > 0)
            }
        };
        Stamp {
            unix: seconds.clamp(FIRST_SECOND, LAST_SECOND),
        }
    }

    fn moment(self) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(self.unix)
            .expect("a stamp lies within the years 1 to 9999")
    }
}

impl From<Stamp> for SystemTime {
    fn from(stamp: Stamp) -> SystemTime {
        SystemTime::from(stamp.moment())
    }
}

impl fmt::Display for Stamp {
    /// Writes [`FORMAT`] field by field: an answer writes a stamp for each peer it lists, and
    /// going through `time`'s formatter allocated and interpreted the format each time.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let moment = self.moment();
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            moment.year(),
            u8::from(moment.month()),
            moment.day(),
            moment.hour(),
            moment.minute(),
            moment.second()
        )
    }
}

/// A text that is not a stamp as [`Stamp`] writes one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{quoted}` is not an instant as majordomus writes one: RFC 3339 in UTC to the second, \
     such as 2026-11-30T02:26:47Z"
)]
pub struct StampError {
    /// The text, cleaned and cut to [`QUOTED_CHARS`].
    quoted: String,
}

impl FromStr for Stamp {
    type Err = StampError;

    /// Reads a stamp only as [`Stamp`] writes it, so that every stamp read is written back
    /// as it was: another offset, a fraction of a second or a signed year is refused rather
    /// than rewritten.
    fn from_str(written: &str) -> Result<Stamp, StampError> {
        PrimitiveDateTime::parse(written, FORMAT)
            .ok()
            .map(|moment| Stamp {
                unix: moment.assume_utc().unix_timestamp(),
            })
            .filter(|stamp| {
                (FIRST_SECOND..=LAST_SECOND).contains(&stamp.unix) && stamp.to_string() == written
            })
            .ok_or_else(|| StampError {
                quoted: text::sanitized(written, QUOTED_CHARS),
            })
    }
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

    fn stamp(text: &str) -> Result<Stamp, StampError> {
        text.parse()
    }

    #[test]
    fn stamps_are_utc_to_the_second() {
        let t = UNIX_EPOCH + Duration::from_secs(1_796_005_607) + Duration::from_millis(999);
        assert_eq!(Stamp::at(t).to_string(), "2026-11-30T02:26:47Z");
        assert_eq!(Stamp::at(UNIX_EPOCH).to_string(), "1970-01-01T00:00:00Z");
        assert_eq!(
            SystemTime::from(Stamp::at(t)),
            UNIX_EPOCH + Duration::from_secs(1_796_005_607)
        );
        assert!(Stamp::at(t) > Stamp::at(UNIX_EPOCH));
    }

    #[test]
    fn a_stamp_is_written_in_the_format_it_is_read_in() {
        for unix in [
            FIRST_SECOND,
            -1,
            0,
            951_782_400,
            1_796_005_607,
            4_107_542_399,
            LAST_SECOND,
        ] {
            let stamp = Stamp { unix };
            let written = stamp.moment().format(FORMAT).unwrap();
            assert_eq!(stamp.to_string(), written);
            assert_eq!(written.parse(), Ok(stamp));
        }
    }

    #[test]
    fn times_before_the_epoch_round_down() {
        let t = UNIX_EPOCH - Duration::from_millis(500);
        assert_eq!(Stamp::at(t).to_string(), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn times_beyond_four_digit_years_are_clamped() {
        let far = Duration::from_secs(400_000 * 366 * 86_400);
        assert_eq!(
            Stamp::at(UNIX_EPOCH + far).to_string(),
            "9999-12-31T23:59:59Z"
        );
        assert_eq!(
            Stamp::at(UNIX_EPOCH - far).to_string(),
            "0001-01-01T00:00:00Z"
        );
    }

    #[test]
    fn a_stamp_reads_back_only_as_written() {
        for text in [
            "2026-11-30T02:26:47Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "2028-02-29T23:59:59Z",
        ] {
            assert_eq!(stamp(text).unwrap().to_string(), text);
        }
        for text in [
            "",
            "t",
            "2026-11-30",
            "2026-11-30T02:26:47",
            "2026-11-30T02:26:47.5Z",
            "2026-11-30T02:26:47+00:00",
            "2026-11-30t02:26:47z",
            "2026-11-30 02:26:47Z",
            "2026-11-31T02:26:47Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T02:26:60Z",
            "+2026-11-30T02:26:47Z",
            "-0001-01-01T00:00:00Z",
            "2026-11-30T02:26:47Z ",
        ] {
            assert!(stamp(text).is_err(), "{text:?} was read");
        }
    }

    #[test]
    fn a_refused_stamp_is_quoted_clean_and_short() {
        let error = stamp(&format!("2026\u{1b}[2J{}", "9".repeat(500))).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("RFC 3339"), "{message}");
        assert!(!message.contains('\u{1b}'), "{message}");
        assert!(message.chars().count() < 200, "{message}");
    }
}
