//! A person's configuration file as install touches it: found without following a link out of
//! the place it belongs to, read without ever waiting on a FIFO, and replaced whole, so that
//! nobody — a reader, a write that fails halfway, an editor saving at the same moment — sees or
//! leaves anything but a complete file.
//!
//! A new text is written to a temporary file beside the original (the same directory, so the
//! rename stays on one file system), given the original's permission mode, synced, and renamed
//! over it; the directory is synced after. Just before the rename the file is read again: if
//! someone changed it since install read it, the text is made again from theirs. On Linux and
//! macOS the rename is an exchange (`renameat2`, `renamex_np`), so a save that lands between
//! that last reading and the rename is not lost either: it comes back in the temporary file's
//! place, and the text is made again from it; elsewhere such a save, made in that instant, is
//! replaced. A file install creates goes into place only if nobody created it meanwhile; a
//! file install removes is first moved aside, and put back if it was not what install read. A
//! failed write leaves the original untouched and its temporary file removed.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use majordomus_checkout::files;

use tempfile::{Builder, NamedTempFile};

/// The largest configuration file install reads: a client's settings are kilobytes; anything
/// this size is not one.
pub const SIZE_LIMIT_BYTES: u64 = 32 * 1024 * 1024;

/// How many times a file that keeps changing under install is read and merged again before
/// install leaves it as it is.
const ATTEMPTS: usize = 8;

/// Why a file is left alone, or could not be written. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(
        "it leads to {} through a symbolic link, outside {}; majordomus writes only inside it \
         (edit that file by hand, or put a copy in place of the link)",
        real.display(),
        bound.display()
    )]
    LeadsOut { real: PathBuf, bound: PathBuf },
    #[error("it is a symbolic link to {}, which does not exist; majordomus leaves it alone", .0.display())]
    Dangling(PathBuf),
    #[error("it is {0}, not a regular file; majordomus leaves it alone")]
    NotRegular(&'static str),
    #[error("it is larger than {SIZE_LIMIT_BYTES} bytes; majordomus leaves it alone")]
    TooLarge,
    #[error("it is not UTF-8 text; majordomus leaves it alone")]
    NotText,
    #[error(
        "it kept changing while majordomus wrote it ({ATTEMPTS} tries); it is as the last \
         writer left it, run this again"
    )]
    KeptChanging,
    #[error(
        "it changed while majordomus was writing it, and {because}; the version saved meanwhile \
         is kept at {}",
        kept.display()
    )]
    LeftAside {
        kept: PathBuf,
        because: Box<FileError>,
    },
    /// Someone else's text, which install cannot merge into.
    #[error("{0}")]
    Merge(String),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What a file holds, as read at one moment.
#[derive(Clone, Debug, Default)]
pub struct Contents {
    /// `None`: there is no file.
    pub text: Option<String>,
    /// Its permission bits, which a new version keeps.
    pub mode: Option<u32>,
    /// Its owner and group, which a new version keeps where install may give them.
    pub owner: Option<(u32, u32)>,
}

/// Why a file of this type is not a configuration file; `None` for a regular file.
fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else {
        Some(files::special_kind(kind))
    }
}

/// Where the file at `path` really is, every link followed, refused when that is outside each
/// of `bounds` (a cloned repository's link must not make install write into the person's other
/// files) or is anything but a regular file or nothing yet.
pub fn locate(path: &Path, bounds: &[PathBuf]) -> Result<PathBuf, FileError> {
    // The nearest ancestor that exists, with the names under it still to be made.
    let mut missing = Vec::new();
    let mut existing = path;
    let found = loop {
        match existing.canonicalize() {
            Ok(real) => break real,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                if existing.symlink_metadata().is_ok() {
                    return Err(FileError::Dangling(std::fs::read_link(existing)?));
                }
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                    return Err(error.into());
                };
                missing.push(name);
                existing = parent;
            }
            Err(error) => return Err(error.into()),
        }
    };
    let real = missing
        .iter()
        .rev()
        .fold(found, |real, name| real.join(name));
    let bounds: Vec<PathBuf> = bounds
        .iter()
        .map(|bound| bound.canonicalize().unwrap_or_else(|_| bound.clone()))
        .collect();
    if !bounds.iter().any(|bound| real.starts_with(bound)) {
        return Err(FileError::LeadsOut {
            real,
            bound: bounds.first().cloned().unwrap_or_default(),
        });
    }
    match real.symlink_metadata() {
        Ok(metadata) => match not_regular(metadata.file_type()) {
            Some(kind) => Err(FileError::NotRegular(kind)),
            None => Ok(real),
        },
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(real),
        Err(error) => Err(error.into()),
    }
}

/// What the file at `path` holds, links followed: its type is checked before it is opened, and
/// it is opened without waiting, so a FIFO never holds install up.
pub fn read(path: &Path) -> Result<Contents, FileError> {
    read_with(path, true)
}

/// What the file at `real` (a path [`locate`] gave) holds; a link put in its place since is
/// refused rather than followed.
fn read_real(real: &Path) -> Result<Contents, FileError> {
    read_with(real, false)
}

fn read_with(path: &Path, follow: bool) -> Result<Contents, FileError> {
    match path.metadata() {
        Ok(metadata) => {
            if let Some(kind) = not_regular(metadata.file_type()) {
                return Err(FileError::NotRegular(kind));
            }
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Contents::default()),
        Err(error) => return Err(error.into()),
    }
    let mut options = OpenOptions::new();
    files::never_waits(options.read(true));
    if !follow {
        files::no_follow(&mut options);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Contents::default()),
        Err(error) => return Err(error.into()),
    };
    // What was opened is what counts: the path may name something else by now.
    let metadata = file.metadata()?;
    if let Some(kind) = not_regular(metadata.file_type()) {
        return Err(FileError::NotRegular(kind));
    }
    if metadata.len() > SIZE_LIMIT_BYTES {
        return Err(FileError::TooLarge);
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(SIZE_LIMIT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > SIZE_LIMIT_BYTES {
        return Err(FileError::TooLarge);
    }
    let text = String::from_utf8(bytes).map_err(|_| FileError::NotText)?;
    Ok(Contents {
        text: Some(text),
        mode: files::mode(&metadata).map(|mode| mode & 0o7777),
        owner: files::owner(&metadata),
    })
}

/// `path`'s directory, made if missing.
fn directory_of(path: &Path) -> io::Result<&Path> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("a file path without a directory"))?;
    std::fs::create_dir_all(dir)?;
    Ok(dir)
}

/// A temporary file's name beside `path`: hidden, and saying whose it is.
fn temporary_prefix(path: &Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    format!(".{name}.majordomus-")
}

/// `text` written beside `path` in a temporary file and synced, with the permission bits and,
/// where this process may give them, the owner of `original` (a new file gets what the
/// person's umask gives). Nothing of `path` changes; if this fails the temporary file is gone.
pub fn stage(path: &Path, text: &str, original: &Contents) -> io::Result<NamedTempFile> {
    let dir = directory_of(path)?;
    let prefix = temporary_prefix(path);
    let mut builder = Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // What the person's umask gives a new file, as their own save would.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut temporary = builder.tempfile_in(dir)?;
    if let Some(owner) = original.owner {
        // Otherwise the file is the person's own, as one they saved themselves would be.
        files::give_owner(temporary.as_file(), owner);
    }
    if let Some(mode) = original.mode {
        files::set_mode(temporary.path(), mode)?;
    }
    temporary.write_all(text.as_bytes())?;
    temporary.as_file().sync_all()?;
    Ok(temporary)
}

/// Puts a staged file in `path`'s place, whatever is there: for install's own record, which
/// nobody else writes.
pub fn put(staged: NamedTempFile, path: &Path) -> io::Result<()> {
    staged.persist(path).map_err(|error| error.error)?;
    sync_directory(path);
    Ok(())
}

/// Syncs `path`'s directory, so a rename in it outlives a crash. A file system that cannot
/// sync a directory has the rename all the same.
fn sync_directory(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(dir) = File::open(dir)
    {
        let _ = dir.sync_all();
    }
}

/// `renameat2` with `flags` (`RENAME_EXCHANGE`, `RENAME_NOREPLACE`).
#[cfg(linux_native)]
fn rename_with(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(from.as_os_str().as_bytes())?;
    let to = CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: both paths are NUL-terminated and outlive the call.
    let renamed = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if renamed == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `renamex_np` with `flags` (`RENAME_SWAP`, `RENAME_EXCL`): macOS's exchange.
#[cfg(macos_native)]
fn rename_with(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(from.as_os_str().as_bytes())?;
    let to = CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: both paths are NUL-terminated and outlive the call.
    if unsafe { libc::renamex_np(from.as_ptr(), to.as_ptr(), flags) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(any(linux_native, macos_native)))]
fn rename_with(_: &Path, _: &Path, _: u32) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

#[cfg(linux_native)]
const EXCHANGE: libc::c_uint = libc::RENAME_EXCHANGE;
#[cfg(linux_native)]
const NO_REPLACE: libc::c_uint = libc::RENAME_NOREPLACE;
#[cfg(macos_native)]
const EXCHANGE: libc::c_uint = libc::RENAME_SWAP;
#[cfg(macos_native)]
const NO_REPLACE: libc::c_uint = libc::RENAME_EXCL;
#[cfg(not(any(linux_native, macos_native)))]
const EXCHANGE: u32 = 0;
#[cfg(not(any(linux_native, macos_native)))]
const NO_REPLACE: u32 = 0;

/// Whether the exchange or exclusive rename failed only because the kernel or the file
/// system lacks the flag.
fn unsupported(error: &io::Error) -> bool {
    #[cfg(unix)]
    let lacking = matches!(
        error.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
    ) || error.raw_os_error() == Some(libc::ENOTSUP);
    #[cfg(not(unix))]
    let lacking = false;
    error.kind() == io::ErrorKind::Unsupported || lacking
}

/// Moves `from` to `to` unless `to` exists; where the file system cannot tell, `to` is
/// replaced (it is a fresh temporary name).
fn rename_to_fresh(from: &Path, to: &Path) -> io::Result<()> {
    match rename_with(from, to, NO_REPLACE) {
        Err(error) if unsupported(&error) => std::fs::rename(from, to),
        other => other,
    }
}

/// What a file came to.
#[derive(Debug, PartialEq, Eq)]
pub struct Replaced {
    /// What the new text was made from: what install read, or what someone wrote since.
    pub base: Option<String>,
    /// What the file holds now (`None`: removed).
    pub after: Option<String>,
}

/// Makes the text a file should hold from what it holds (`None`: it should not exist).
pub type Remake<'a> = dyn FnMut(Option<&str>) -> Result<Option<String>, String> + 'a;

/// Puts `after` (`None`: no file) in place of the file at `real`, which held `first` when it
/// was read; `staged` is `after` written already, if it is. What someone writes meanwhile is
/// never lost: `remake` makes the text again from theirs, up to [`ATTEMPTS`] times, after which
/// the file is left as they left it.
pub fn replace(
    real: &Path,
    first: Contents,
    after: Option<String>,
    staged: Option<NamedTempFile>,
    remake: &mut Remake,
) -> Result<Replaced, FileError> {
    let mut replacing = Replacing {
        real,
        at_target: first.text.clone(),
        attributes: Contents {
            text: None,
            ..first
        },
        base: first.text,
        after,
        staged,
        theirs: None,
    };
    let outcome = replacing.run(remake);
    match (outcome, replacing.theirs.take()) {
        (Err(because), Some(theirs)) => match theirs.keep() {
            Ok((_, kept)) => Err(FileError::LeftAside {
                kept,
                because: Box::new(because),
            }),
            Err(error) => Err(error.error.into()),
        },
        (outcome, _) => outcome,
    }
}

/// The state of one [`replace`].
struct Replacing<'a> {
    real: &'a Path,
    /// What install believes the file holds now.
    at_target: Option<String>,
    /// Its permission bits and owner, as last read (the text aside).
    attributes: Contents,
    /// What `after` was made from.
    base: Option<String>,
    after: Option<String>,
    /// `after`, written beside the file and synced.
    staged: Option<NamedTempFile>,
    /// A save someone made that an exchange displaced, held until a text made from it is in
    /// place (and kept, named in the error, if that fails).
    theirs: Option<NamedTempFile>,
}

impl Replacing<'_> {
    fn run(&mut self, remake: &mut Remake) -> Result<Replaced, FileError> {
        for _ in 0..ATTEMPTS {
            let mut now = read_real(self.real)?;
            let text = now.text.take();
            self.attributes = now;
            if text != self.at_target {
                self.at_target = text.clone();
                self.remake_from(text, remake)?;
            }
            if self.after == self.at_target {
                return Ok(self.done());
            }
            let placed = match self.after.clone() {
                None => self.take_out()?,
                Some(text) => {
                    let staged = match self.staged.take() {
                        Some(staged) => staged,
                        None => stage(self.real, &text, &self.attributes)?,
                    };
                    if self.at_target.is_none() {
                        self.create(staged)?
                    } else {
                        self.exchange(staged, remake)?
                    }
                }
            };
            if placed {
                sync_directory(self.real);
                return Ok(self.done());
            }
        }
        Err(FileError::KeptChanging)
    }

    /// The outcome, once what `after` was made from is no longer needed.
    fn done(&mut self) -> Replaced {
        self.theirs = None;
        Replaced {
            base: self.base.take(),
            after: self.after.take(),
        }
    }

    /// Someone wrote `theirs` since: the text is made again from it.
    fn remake_from(
        &mut self,
        theirs: Option<String>,
        remake: &mut Remake,
    ) -> Result<(), FileError> {
        self.after = remake(theirs.as_deref()).map_err(FileError::Merge)?;
        self.base = theirs;
        self.staged = None;
        Ok(())
    }

    /// Puts a file where there was none, unless someone made one meanwhile.
    fn create(&mut self, staged: NamedTempFile) -> Result<bool, FileError> {
        match staged.persist_noclobber(self.real) {
            Ok(_) => Ok(true),
            Err(error) if error.error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(error) => Err(error.error.into()),
        }
    }

    /// Exchanges the staged file with the file in place and looks at what came back: if it is
    /// not what install read last, someone saved in between, and the text is made again from
    /// their save (held meanwhile in the staged file's place).
    fn exchange(&mut self, staged: NamedTempFile, remake: &mut Remake) -> Result<bool, FileError> {
        match rename_with(staged.path(), self.real, EXCHANGE) {
            Ok(()) => {}
            // Another file system: renamed over, the window since the last reading left open.
            Err(error) if unsupported(&error) => {
                staged.persist(self.real).map_err(|error| error.error)?;
                return Ok(true);
            }
            // Removed since the last reading.
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(error.into()),
        }
        // `staged` now names what was in place.
        let displaced = staged;
        let came_back = read_real(displaced.path());
        if came_back
            .as_ref()
            .is_ok_and(|came| came.text == self.at_target)
        {
            return Ok(true);
        }
        self.theirs = Some(displaced);
        let theirs = came_back?;
        self.at_target = self.after.clone();
        self.remake_from(theirs.text, remake)?;
        Ok(false)
    }

    /// Removes the file if it is still what install read: it is moved aside first, and put
    /// back if it is not.
    fn take_out(&mut self) -> Result<bool, FileError> {
        let real = self.real;
        let dir = directory_of(real)?;
        let aside = match Builder::new()
            .prefix(&temporary_prefix(real))
            .suffix(".tmp")
            .make_in(dir, |aside| rename_to_fresh(real, aside))
        {
            Ok(aside) => aside,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(error.into()),
        };
        let taken = read_real(aside.path());
        if taken
            .as_ref()
            .is_ok_and(|taken| taken.text == self.at_target)
        {
            return Ok(true);
        }
        let put_back = rename_with(aside.path(), self.real, NO_REPLACE);
        let put_back = match put_back {
            Err(error) if unsupported(&error) && !self.real.exists() => {
                std::fs::rename(aside.path(), self.real)
            }
            other => other,
        };
        match put_back {
            Ok(()) => {
                // Nothing is left at the temporary name to remove.
                let _ = aside.into_temp_path().keep();
                Ok(false)
            }
            Err(error) => {
                let kept = aside
                    .into_temp_path()
                    .keep()
                    .map_err(|error| FileError::Io(error.error))?;
                Err(FileError::LeftAside {
                    kept,
                    because: Box::new(FileError::Io(error)),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(path: &Path) -> Contents {
        read(path).unwrap()
    }

    #[cfg(unix)]
    #[test]
    fn a_file_is_replaced_whole_with_its_mode_and_nothing_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{}\n").unwrap();
        files::set_mode(&path, 0o640).unwrap();
        let first = contents(&path);
        let staged = stage(&path, "{\"a\": 1}\n", &first).unwrap();
        let replaced = replace(
            &path,
            first,
            Some("{\"a\": 1}\n".into()),
            Some(staged),
            &mut |_| panic!("nobody wrote meanwhile"),
        )
        .unwrap();
        assert_eq!(replaced.base.as_deref(), Some("{}\n"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\": 1}\n");
        assert_eq!(
            files::mode(&path.metadata().unwrap()).unwrap() & 0o7777,
            0o640
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_change_made_after_the_first_reading_is_merged_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, "theirs 1\n").unwrap();
        let first = contents(&path);
        let staged = stage(&path, "theirs 1\nours\n", &first).unwrap();
        std::fs::write(&path, "theirs 2\n").unwrap();
        let mut remade = Vec::new();
        let replaced = replace(
            &path,
            first,
            Some("theirs 1\nours\n".into()),
            Some(staged),
            &mut |text| {
                remade.push(text.map(str::to_owned));
                Ok(text.map(|text| format!("{text}ours\n")))
            },
        )
        .unwrap();
        assert_eq!(remade, [Some("theirs 2\n".to_string())]);
        assert_eq!(replaced.after.as_deref(), Some("theirs 2\nours\n"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs 2\nours\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Only an exchange rename hands their save back; elsewhere the rename replaces.
    #[cfg(any(linux_native, macos_native))]
    #[test]
    fn a_save_landing_between_the_last_reading_and_the_rename_comes_back_and_is_merged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings");
        std::fs::write(&path, "theirs 1\n").unwrap();
        let first = contents(&path);
        let mut replacing = Replacing {
            real: &path,
            at_target: first.text.clone(),
            attributes: first.clone(),
            base: first.text.clone(),
            after: Some("theirs 1\nours\n".into()),
            staged: None,
            theirs: None,
        };
        // Their save, after install's last reading.
        std::fs::write(&path, "theirs 2\n").unwrap();
        let remake = &mut |text: Option<&str>| Ok(text.map(|text| format!("{text}ours\n")));
        let staged = stage(&path, "theirs 1\nours\n", &first).unwrap();
        assert!(!replacing.exchange(staged, remake).unwrap());
        assert_eq!(
            std::fs::read_to_string(replacing.theirs.as_ref().unwrap().path()).unwrap(),
            "theirs 2\n",
            "their save is held until it is merged"
        );
        let replaced = replacing.run(remake).unwrap();
        assert_eq!(replaced.base.as_deref(), Some("theirs 2\n"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs 2\nours\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_file_made_meanwhile_is_not_replaced_by_a_new_one_and_a_removal_takes_only_what_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hooks.json");
        let staged = stage(&path, "ours\n", &Contents::default()).unwrap();
        std::fs::write(&path, "theirs\n").unwrap();
        let replaced = replace(
            &path,
            Contents::default(),
            Some("ours\n".into()),
            Some(staged),
            &mut |text| Ok(text.map(|text| format!("{text}ours\n"))),
        )
        .unwrap();
        assert_eq!(replaced.after.as_deref(), Some("theirs\nours\n"));

        let first = contents(&path);
        std::fs::write(&path, "theirs again\nours\n").unwrap();
        let replaced = replace(&path, first, None, None, &mut |text| {
            Ok(text.map(|text| text.replace("ours\n", "")))
        })
        .unwrap();
        assert_eq!(replaced.after.as_deref(), Some("theirs again\n"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs again\n");

        let first = contents(&path);
        replace(&path, first, None, None, &mut |_| panic!("unchanged")).unwrap();
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn links_out_fifos_and_devices_are_refused_before_anything_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("repo");
        std::fs::create_dir_all(inside.join("shared")).unwrap();
        std::fs::write(dir.path().join("outside.json"), "{}").unwrap();
        std::fs::write(inside.join("shared/mcp.json"), "{}").unwrap();
        let bounds = [inside.clone()];

        std::os::unix::fs::symlink("../outside.json", inside.join("out.json")).unwrap();
        let error = locate(&inside.join("out.json"), &bounds).unwrap_err();
        assert!(matches!(error, FileError::LeadsOut { .. }), "{error}");

        std::os::unix::fs::symlink("shared/mcp.json", inside.join("in.json")).unwrap();
        assert_eq!(
            locate(&inside.join("in.json"), &bounds).unwrap(),
            inside.canonicalize().unwrap().join("shared/mcp.json")
        );
        std::os::unix::fs::symlink("..", inside.join("up")).unwrap();
        let error = locate(&inside.join("up/new/file.json"), &bounds).unwrap_err();
        assert!(matches!(error, FileError::LeadsOut { .. }), "{error}");
        assert_eq!(
            locate(&inside.join("new/file.json"), &bounds).unwrap(),
            inside.canonicalize().unwrap().join("new/file.json")
        );

        let fifo = inside.join("fifo.json");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let error = locate(&fifo, &bounds).unwrap_err();
        assert!(error.to_string().contains("a FIFO"), "{error}");
        let error = read(&fifo).unwrap_err();
        assert!(error.to_string().contains("a FIFO"), "{error}");
        let error = read(Path::new("/dev/null")).unwrap_err();
        assert!(error.to_string().contains("a device"), "{error}");
    }
}
