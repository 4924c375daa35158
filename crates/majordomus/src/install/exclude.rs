//! The repository's `info/exclude` (in its common git dir, so it holds for every worktree):
//! where install keeps the files of one person's approvals out of git, under a header line of
//! its own, so that uninstall takes out what install put in and nothing else.

use std::fs;
use std::io::Write as _;
use std::path::Path;

use majordomus_checkout::files;

/// The line before the patterns install adds.
const HEADER: &str = "# majordomus: one person's approvals, kept out of git";

/// The largest `info/exclude` edited: beyond it the file is left alone with a reason.
const FILE_LIMIT_BYTES: u64 = 1024 * 1024;

/// Puts `files` (repository-relative) into `<common_dir>/info/exclude` under install's header
/// (`keep_out`), or takes install's header and its patterns out; whether the file changed.
/// The file is replaced whole, keeping its mode.
pub fn keep_out_of_git(common_dir: &Path, files: &[&str], keep_out: bool) -> std::io::Result<bool> {
    let path = common_dir.join("info").join("exclude");
    let (text, mode) = match fs::metadata(&path) {
        Ok(metadata) if metadata.len() > FILE_LIMIT_BYTES => {
            return Err(std::io::Error::other(format!(
                "it is over {FILE_LIMIT_BYTES} bytes"
            )));
        }
        Ok(metadata) => (
            fs::read_to_string(&path)?,
            files::mode(&metadata).unwrap_or(0o644),
        ),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => (String::new(), 0o644),
        Err(error) => return Err(error),
    };
    let patterns: Vec<String> = files.iter().map(|file| format!("/{file}")).collect();
    let without_ours = without_block(&text, &patterns);
    let wanted = if keep_out {
        let mut wanted = without_ours;
        if !wanted.is_empty() && !wanted.ends_with('\n') {
            wanted.push('\n');
        }
        wanted.push_str(HEADER);
        wanted.push('\n');
        for pattern in &patterns {
            wanted.push_str(pattern);
            wanted.push('\n');
        }
        wanted
    } else {
        without_ours
    };
    if wanted == text {
        return Ok(false);
    }
    let dir = path.parent().unwrap_or(common_dir);
    fs::create_dir_all(dir)?;
    let mut staged = tempfile::NamedTempFile::new_in(dir)?;
    staged.write_all(wanted.as_bytes())?;
    files::set_mode(staged.path(), mode & 0o777)?;
    staged.persist(&path).map_err(|error| error.error)?;
    Ok(true)
}

/// `text` without install's header and the patterns of `patterns` right after it.
fn without_block(text: &str, patterns: &[String]) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut in_block = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if bare == HEADER {
            in_block = true;
            continue;
        }
        if in_block && patterns.iter().any(|pattern| pattern == bare) {
            continue;
        }
        in_block = false;
        kept.push_str(line);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patterns_go_in_once_and_come_out_leaving_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let info = dir.path().join("info");
        fs::create_dir_all(&info).unwrap();
        let theirs = "# git ls-files --others --exclude-from=.git/info/exclude\n*.swp";
        fs::write(info.join("exclude"), theirs).unwrap();
        let files = [".claude/settings.local.json"];
        assert!(keep_out_of_git(dir.path(), &files, true).unwrap());
        let kept = fs::read_to_string(info.join("exclude")).unwrap();
        assert_eq!(
            kept,
            format!("{theirs}\n{HEADER}\n/.claude/settings.local.json\n")
        );
        assert!(
            !keep_out_of_git(dir.path(), &files, true).unwrap(),
            "idempotent"
        );
        assert!(keep_out_of_git(dir.path(), &files, false).unwrap());
        assert_eq!(
            fs::read_to_string(info.join("exclude")).unwrap(),
            format!("{theirs}\n")
        );
    }
}
