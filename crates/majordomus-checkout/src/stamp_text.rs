//! An instant as every answer, journal line, published board and file writes it: the RFC 3339
//! text of a [`Stamp`] (`2026-11-30T02:26:47Z`).
//!
//! The domain keeps instants as values and knows no serialisation, so the text form that
//! leaves the process is given here, in the lowest crate that writes one (the mailbox's file
//! names when a session attached), once for every wire and file type above it: a stamp is
//! written as its text and read back only as written, and its schema is a string's.
//!
//! ```
//! use majordomus_checkout::stamp_text::StampText;
//! use majordomus_domain::ids::Stamp;
//!
//! let at: Stamp = "2026-11-30T02:26:47Z".parse().unwrap();
//! let json = serde_json::to_string(&StampText::from(at)).unwrap();
//! assert_eq!(json, r#""2026-11-30T02:26:47Z""#);
//! assert_eq!(Stamp::from(serde_json::from_str::<StampText>(&json).unwrap()), at);
//! ```

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use majordomus_domain::ids::{Stamp, StampError};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A stamp where a wire or a file carries it: written as its RFC 3339 text, and read only
/// from a text [`Stamp`] writes, so every stamp read is written back as it was. It shows and
/// parses as that text too, for the types that are both kept and written (a journal's
/// events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StampText(Stamp);

impl From<Stamp> for StampText {
    fn from(stamp: Stamp) -> Self {
        StampText(stamp)
    }
}

impl From<StampText> for Stamp {
    fn from(text: StampText) -> Self {
        text.0
    }
}

impl fmt::Display for StampText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for StampText {
    type Err = StampError;

    fn from_str(written: &str) -> Result<StampText, StampError> {
        written.parse().map(StampText)
    }
}

impl Serialize for StampText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for StampText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StampText, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(D::Error::custom)
    }
}

/// A stamp's schema is that of the string it is written as, in place as a string field's
/// is: a schema tells a client what it reads, not how majordomus keeps it.
impl JsonSchema for StampText {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Stamp".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        String::json_schema(generator)
    }
}

/// A party's `connected_at` as answers and mailbox files write it: the session's stamp, or
/// an empty string for a message sent without a session (`command-line`), which no board
/// attached.
pub mod or_blank {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::StampText;

    /// Writes the stamp, or an empty string for none.
    pub fn serialize<S: Serializer>(
        stamp: &Option<StampText>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match stamp {
            Some(stamp) => stamp.serialize(serializer),
            None => serializer.serialize_str(""),
        }
    }

    /// Reads a stamp, or none from an empty string; anything else that is no stamp is
    /// refused.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<StampText>, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_a_json_string_with_a_string_schema() {
        let at: StampText = "2026-11-30T02:26:47Z".parse().unwrap();
        let json = serde_json::to_string(&at).unwrap();
        assert_eq!(json, r#""2026-11-30T02:26:47Z""#);
        assert_eq!(serde_json::from_str::<StampText>(&json).unwrap(), at);
        let refused = serde_json::from_str::<StampText>(r#""yesterday""#).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("`yesterday` is not an instant"),
            "{refused}"
        );
        assert!(serde_json::from_str::<StampText>("1796005607").is_err());

        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct AsText {
            /// When, RFC 3339 in UTC.
            at: String,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct AsStamp {
            /// When, RFC 3339 in UTC.
            at: StampText,
        }
        assert_eq!(
            schemars::schema_for!(AsStamp).get("properties"),
            schemars::schema_for!(AsText).get("properties")
        );
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Party {
        #[serde(default, with = "or_blank")]
        connected_at: Option<StampText>,
    }

    #[test]
    fn no_stamp_is_written_blank_and_a_blank_or_missing_one_reads_as_none() {
        let none = Party { connected_at: None };
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"connected_at":""}"#
        );
        assert_eq!(serde_json::from_str::<Party>("{}").unwrap(), none);
        let some = Party {
            connected_at: Some("2026-12-01T10:00:00Z".parse().unwrap()),
        };
        let written = serde_json::to_string(&some).unwrap();
        assert_eq!(written, r#"{"connected_at":"2026-12-01T10:00:00Z"}"#);
        assert_eq!(serde_json::from_str::<Party>(&written).unwrap(), some);
        let refused = serde_json::from_str::<Party>(r#"{"connected_at":"soon"}"#).unwrap_err();
        assert!(
            refused.to_string().contains("is not an instant"),
            "{refused}"
        );
    }
}
