//! What the person allowed a repository's `majordomus.toml` to suggest. A repository's file
//! is shared through git, so a clone or a pull request can change it: what would run a
//! program on this machine or send its boards elsewhere (a federation, an episode command)
//! is only a suggestion until the person runs `majordomus allow` for it. The allowance is
//! kept in the user's own state, one file per repository (named after the repository's git
//! id), and holds the digest of the exact suggestion allowed, so a changed suggestion is not
//! allowed until the person allows it again.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// What a repository may suggest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "kebab-case")]
pub enum Suggestion {
    /// `[federation]`: where this machine's boards are published and read from.
    Federation,
    /// `[episodes] command`: a program run with every episode event.
    EpisodesCommand,
}

impl Suggestion {
    /// The word `majordomus allow` takes, and the key of the allowance file.
    pub fn word(self) -> &'static str {
        self.into()
    }

    /// Every kind of suggestion.
    pub fn all() -> &'static [Suggestion] {
        <Suggestion as strum::VariantArray>::VARIANTS
    }

    pub fn from_word(word: &str) -> Option<Suggestion> {
        Suggestion::all()
            .iter()
            .copied()
            .find(|suggestion| suggestion.word() == word)
    }

    /// What it is, in words: "a federation", "an episode command".
    pub fn described(self) -> &'static str {
        match self {
            Suggestion::Federation => "a federation",
            Suggestion::EpisodesCommand => "an episode command",
        }
    }
}

/// The digest of a suggestion: SHA-256 of its parts as a JSON array, so that no two
/// different suggestions read alike.
pub fn digest(parts: &serde_json::Value) -> String {
    hex::encode(Sha256::digest(parts.to_string().as_bytes()))
}

/// The directory of the user's own state: `$XDG_STATE_HOME`, else `~/.local/state`.
fn state_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|dir| !dir.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        })
}

/// The file of the repository whose git id is `repository_id` (a hex digest) in the user's
/// state; `None` when the user has no state directory (neither `XDG_STATE_HOME` nor `HOME`).
pub fn allowances_path(repository_id: &str) -> Option<PathBuf> {
    Some(
        state_dir()?
            .join("majordomus/allowed")
            .join(format!("{repository_id}.toml")),
    )
}

/// The allowances of one repository: each suggestion's allowed digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowances {
    allowed: BTreeMap<String, String>,
}

/// An allowance file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct AllowancesError {
    pub path: PathBuf,
    pub problem: String,
}

impl Allowances {
    /// Reads the file at `path`; none allowed when it does not exist.
    pub fn read(path: &Path) -> Result<Allowances, AllowancesError> {
        let problem = |problem: String| AllowancesError {
            path: path.to_path_buf(),
            problem,
        };
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Ok(Allowances::default());
            }
            Err(error) => return Err(problem(format!("cannot be read ({error})"))),
        };
        let allowed = toml::from_str(&text).map_err(|error| {
            problem(format!(
                "is not a file of allowances ({}); remove it and allow again",
                error.message()
            ))
        })?;
        Ok(Allowances { allowed })
    }

    /// Whether `suggestion` is allowed with exactly this digest.
    pub fn allows(&self, suggestion: Suggestion, digest: &str) -> bool {
        self.allowed
            .get(suggestion.word())
            .is_some_and(|allowed| allowed == digest)
    }

    /// Records `suggestion` as allowed with `digest` in the file at `path`, written whole
    /// and atomically: a sibling temporary file, synced, renamed over the old one, so a
    /// reader sees the old allowances or the new ones, never a part.
    pub fn allow(path: &Path, suggestion: Suggestion, digest: &str) -> Result<(), AllowancesError> {
        let problem = |problem: String| AllowancesError {
            path: path.to_path_buf(),
            problem,
        };
        let mut allowances = Allowances::read(path)?;
        allowances
            .allowed
            .insert(suggestion.word().to_owned(), digest.to_owned());
        let dir = path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(|error| problem(format!("cannot be made ({error})")))?;
        let text = format!(
            "# What this repository's majordomus.toml may suggest, as allowed by `majordomus allow`:\n\
             # the digest of the exact suggestion allowed.\n{}",
            toml::to_string(&allowances.allowed).expect("a map of strings is TOML")
        );
        let written = (|| {
            let mut file = tempfile::NamedTempFile::new_in(dir)?;
            file.write_all(text.as_bytes())?;
            file.as_file().sync_all()?;
            file.persist(path)?;
            fs::File::open(dir)?.sync_all()
        })();
        written.map_err(|error| problem(format!("cannot be written ({error})")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_allowance_holds_for_its_exact_digest_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/allowed/abc.toml");
        assert_eq!(Allowances::read(&path).unwrap(), Allowances::default());
        let first = digest(&json!(["federation", "nats://a:4222"]));
        let changed = digest(&json!(["federation", "nats://b:4222"]));
        Allowances::allow(&path, Suggestion::Federation, &first).unwrap();
        Allowances::allow(&path, Suggestion::EpisodesCommand, &changed).unwrap();
        let read = Allowances::read(&path).unwrap();
        assert!(read.allows(Suggestion::Federation, &first));
        assert!(!read.allows(Suggestion::Federation, &changed));
        assert!(read.allows(Suggestion::EpisodesCommand, &changed));
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);

        fs::write(&path, "federation = [").unwrap();
        let message = Allowances::read(&path).unwrap_err().to_string();
        assert!(message.contains("allow again"), "{message}");
    }

    #[test]
    fn the_words_read_back() {
        for &suggestion in Suggestion::all() {
            assert_eq!(Suggestion::from_word(suggestion.word()), Some(suggestion));
        }
        assert_eq!(Suggestion::EpisodesCommand.word(), "episodes-command");
    }
}
