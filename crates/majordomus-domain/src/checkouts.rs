//! The words for how wide a question is and where a checkout's server stands. The answers
//! and inputs write them in types of their own, in the same words.
//!
//! ```
//! use majordomus_domain::checkouts::{Checkouts, ServerStanding};
//!
//! assert_eq!(Checkouts::default(), Checkouts::Repository);
//! assert_eq!("this".parse::<Checkouts>().unwrap(), Checkouts::This);
//! assert_eq!(Checkouts::This.to_string(), "this");
//! assert_eq!("everywhere".parse::<Checkouts>().unwrap(), Checkouts::Everywhere);
//! let err = "everything".parse::<Checkouts>().unwrap_err();
//! assert!(err.contains("`repository` or `this`"));
//!
//! assert_eq!(ServerStanding::Outdated.as_str(), "outdated");
//! assert_eq!(ServerStanding::Stale.to_string(), "stale");
//! ```

use std::fmt;
use std::str::FromStr;

use strum::VariantArray;

/// Which checkouts of the repository a question covers. The whole repository costs a lease
/// read and a probe per checkout; this checkout alone costs nothing beyond its own memory.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::VariantArray,
)]
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

    /// Accepts exactly the words [`Checkouts::as_str`] gives; anything else is refused with a
    /// message naming the words that would have worked.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
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

    #[test]
    fn checkouts_words_round_trip_through_from_str() {
        for choice in [
            Checkouts::Repository,
            Checkouts::This,
            Checkouts::Everywhere,
        ] {
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
        assert!("all".parse::<Checkouts>().is_err());
    }

    #[test]
    fn standings_are_written_in_lowercase() {
        for (standing, word) in [
            (ServerStanding::Absent, "absent"),
            (ServerStanding::Starting, "starting"),
            (ServerStanding::Ready, "ready"),
            (ServerStanding::Outdated, "outdated"),
            (ServerStanding::Stale, "stale"),
        ] {
            assert_eq!(standing.as_str(), word);
            assert_eq!(standing.to_string(), word);
        }
    }
}
