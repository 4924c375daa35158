//! What `majordomus install` wrote, so that `--uninstall` can put each file back exactly:
//! for every file it changed, what the file held before (or that it did not exist) and a
//! digest of what install left in it.
//!
//! There is one entry per file install created or changed, written with the files it records
//! (see `install::file`); a file nobody touched since is restored byte for byte (or removed,
//! if install created it).
//! A file someone changed since has only majordomus's entries taken out of it again, so their
//! changes stay. The record lives out of the working tree: in the checkout's git dir for a
//! project, in the user's state directory for the user's own configuration.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The largest original kept for a byte-for-byte restore; a larger file only has
/// majordomus's entries taken out again.
pub const ORIGINAL_LIMIT_BYTES: usize = 1024 * 1024;

/// The record file.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    #[serde(default)]
    files: BTreeMap<String, Record>,
}

/// One file install changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    /// What the file held before install first changed it.
    before: Before,
    /// SHA-256 of what install last wrote into it.
    written: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "text", rename_all = "snake_case")]
enum Before {
    /// The file did not exist.
    Absent,
    /// The file's text.
    Text(String),
    /// The file was over [`ORIGINAL_LIMIT_BYTES`].
    TooLarge,
}

/// What uninstalling a file comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    /// The file is exactly as install left it: put back what it held (`None`: remove it).
    Original(Option<String>),
    /// The file changed since, or install kept no original: take majordomus's entries out.
    TakeOut {
        /// Whether install created the file.
        created: bool,
    },
}

fn digest(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

impl Manifest {
    /// The record at `path`; none when there is no file (or it cannot be read, which only
    /// costs the byte-for-byte restore).
    pub fn load(path: &Path) -> Manifest {
        super::read(path)
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// The record as its file holds it; `None` when nothing is recorded (the file goes).
    pub fn text(&self) -> Option<String> {
        (!self.files.is_empty())
            .then(|| serde_json::to_string_pretty(self).expect("a manifest serialises") + "\n")
    }

    /// Install wrote `after` into `file`, which held `before`. The first original is kept
    /// as long as nobody else changed the file in between.
    pub fn wrote(&mut self, file: &Path, before: Option<&str>, after: &str) {
        let key = file.to_string_lossy().into_owned();
        let untouched = self
            .files
            .get(&key)
            .is_some_and(|record| before.map(digest).as_deref() == Some(record.written.as_str()));
        let original = match before {
            _ if untouched => self.files[&key].before.clone(),
            None => Before::Absent,
            Some(text) if text.len() > ORIGINAL_LIMIT_BYTES => Before::TooLarge,
            Some(text) => Before::Text(text.to_owned()),
        };
        self.files.insert(
            key,
            Record {
                before: original,
                written: digest(after),
            },
        );
    }

    /// How to uninstall `file`, which now holds `now`.
    pub fn restore(&self, file: &Path, now: Option<&str>) -> Restore {
        let Some(record) = self.files.get(file.to_string_lossy().as_ref()) else {
            return Restore::TakeOut { created: false };
        };
        let untouched = now.map(digest).as_deref() == Some(record.written.as_str());
        match (&record.before, untouched) {
            (Before::Absent, true) => Restore::Original(None),
            (Before::Text(text), true) => Restore::Original(Some(text.clone())),
            (before, _) => Restore::TakeOut {
                created: matches!(before, Before::Absent),
            },
        }
    }

    /// `file` was uninstalled: its record goes.
    pub fn forget(&mut self, file: &Path) {
        self.files.remove(file.to_string_lossy().as_ref());
    }
}

/// Where the record of a user-scope install lives: `$XDG_STATE_HOME/majordomus`, else
/// `~/.local/state/majordomus`.
pub fn user_manifest(home: &Path) -> PathBuf {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| home.join(".local/state"))
        .join("majordomus")
        .join("install.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untouched_file_is_restored_and_a_changed_one_only_loses_our_entries() {
        let file = Path::new("/w/repo/.mcp.json");
        let mut manifest = Manifest::default();
        manifest.wrote(file, Some("{}\n"), "{\"a\": 1}\n");
        assert_eq!(
            manifest.restore(file, Some("{\"a\": 1}\n")),
            Restore::Original(Some("{}\n".into()))
        );
        assert_eq!(
            manifest.restore(file, Some("{\"a\": 2}\n")),
            Restore::TakeOut { created: false }
        );
        // a second install on the untouched file keeps the first original
        manifest.wrote(file, Some("{\"a\": 1}\n"), "{\"a\": 1, \"b\": 2}\n");
        assert_eq!(
            manifest.restore(file, Some("{\"a\": 1, \"b\": 2}\n")),
            Restore::Original(Some("{}\n".into()))
        );
        let created = Path::new("/w/repo/.cursor/mcp.json");
        manifest.wrote(created, None, "{}\n");
        assert_eq!(
            manifest.restore(created, Some("{}\n")),
            Restore::Original(None)
        );
        assert_eq!(
            manifest.restore(created, Some("{ }\n")),
            Restore::TakeOut { created: true }
        );
        manifest.forget(created);
        assert_eq!(
            manifest.restore(created, Some("{}\n")),
            Restore::TakeOut { created: false }
        );
    }

    #[test]
    fn a_large_original_is_not_kept() {
        let file = Path::new("/home/dev/.claude.json");
        let mut manifest = Manifest::default();
        let large = "x".repeat(ORIGINAL_LIMIT_BYTES + 1);
        manifest.wrote(file, Some(&large), "{}\n");
        assert_eq!(
            manifest.restore(file, Some("{}\n")),
            Restore::TakeOut { created: false }
        );
    }
}
