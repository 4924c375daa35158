//! The words for how wide a question is and where a checkout's server stands.
//!
//! ```
//! use majordomus_domain::checkouts::{Checkouts, ServerStanding};
//!
//! assert_eq!(Checkouts::default(), Checkouts::Repository);
//! assert_eq!("this".parse::<Checkouts>().unwrap(), Checkouts::This);
//! assert_eq!(serde_json::to_value(Checkouts::This).unwrap(), "this");
//! assert_eq!("everywhere".parse::<Checkouts>().unwrap(), Checkouts::Everywhere);
//! let err = "everything".parse::<Checkouts>().unwrap_err();
//! assert!(err.contains("`repository` or `this`"));
//!
//! assert_eq!(ServerStanding::Outdated.as_str(), "outdated");
//! assert_eq!(serde_json::from_str::<ServerStanding>("\"stale\"").unwrap(), ServerStanding::Stale);
//! ```

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strum::VariantArray;

/// Which checkouts of the repository a question covers. The whole repository costs a lease
/// read and a probe per checkout; this checkout alone costs nothing beyond its own memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "lowercase")]
pub enum Checkouts {
    /// Every checkout git registers for the repository, this one first. The default.
    #[default]
    Repository,
    /// Only the checkout whose server was asked; nothing else is enumerated or probed.
    This,
    /// Every checkout of the repository, plus the boards of the same repository that other
    /// machines publish to the federation this checkout's server follows, each marked with
    /// its machine. Without a federation configured it covers what `repository` covers.
    Everywhere,
}

impl Checkouts {
    /// The word this choice is written as in queries, tool inputs and on the command line.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl fmt::Display for Checkouts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Checkouts {
    type Err = String;

    /// Accepts exactly the words serde writes; anything else is refused with a message
    /// naming the words that would have worked.
    fn from_str(word: &str) -> Result<Self, Self::Err> {
        Checkouts::VARIANTS
            .iter()
            .copied()
            .find(|choice| choice.as_str() == word)
            .ok_or_else(|| {
                format!(
                    "unknown checkouts `{word}`: say `repository` or `this`, or `everywhere` \
                     for other machines too"
                )
            })
    }
}

/// Where a checkout's server stands, judged from its lease, whether the server the lease
/// names answers for that checkout, and whether it runs this executable's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(test, derive(strum::VariantArray))]
pub enum ServerStanding {
    /// There is no lease: no server serves this checkout.
    Absent,
    /// The lease has no address yet and is young: its owner is still binding a port.
    Starting,
    /// The server named by the lease answers for this checkout, at this executable's version.
    Ready,
    /// The server answers, but runs an older version or an executable since replaced on disk.
    Outdated,
    /// The lease is unreadable, or names a server that is gone or answers as someone else.
    Stale,
}

impl ServerStanding {
    /// The word this standing is written as in answers.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl fmt::Display for ServerStanding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_serde_words;

    #[test]
    fn serde_writes_each_word_as_as_str_says() {
        assert_serde_words(Checkouts::as_str);
        assert_serde_words(ServerStanding::as_str);
    }

    #[test]
    fn checkouts_words_round_trip_through_serde_and_from_str() {
        for choice in [
            Checkouts::Repository,
            Checkouts::This,
            Checkouts::Everywhere,
        ] {
            let json = serde_json::to_value(choice).unwrap();
            assert_eq!(json, choice.as_str());
            assert_eq!(choice.as_str().parse::<Checkouts>().unwrap(), choice);
            assert_eq!(choice.to_string(), choice.as_str());
        }
    }

    #[test]
    fn an_unknown_checkouts_word_names_the_accepted_ones() {
        assert_eq!(
            "everything".parse::<Checkouts>().unwrap_err(),
            "unknown checkouts `everything`: say `repository` or `this`, or `everywhere` for \
             other machines too"
        );
        assert!("Repository".parse::<Checkouts>().is_err());
        assert!(serde_json::from_str::<Checkouts>("\"all\"").is_err());
    }

    #[test]
    fn standing_words_match_serde() {
        for standing in [
            ServerStanding::Absent,
            ServerStanding::Starting,
            ServerStanding::Ready,
            ServerStanding::Outdated,
            ServerStanding::Stale,
        ] {
            assert_eq!(serde_json::to_value(standing).unwrap(), standing.as_str());
        }
    }

    #[test]
    fn every_standing_is_described_in_the_schema() {
        let schema = serde_json::to_value(schemars::schema_for!(ServerStanding)).unwrap();
        let variants = schema["oneOf"].as_array().unwrap();
        assert_eq!(variants.len(), 5);
        assert!(variants.iter().all(|v| v["description"].is_string()));
    }
}
