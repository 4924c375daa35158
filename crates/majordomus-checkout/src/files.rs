//! The file system's platform differences, in one place: paths as git writes them, what
//! tells a file from one put in its place, files and directories private to the user, and
//! opening a file without following a link or blocking on a pipe. Unix (Linux and macOS)
//! has all of it; on Windows each function says what stands in.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fs::{self, DirBuilder, Metadata, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// The separator of a list of paths in git's environment (`GIT_ALTERNATE_OBJECT_DIRECTORIES`).
pub const PATH_LIST_SEPARATOR: u8 = if cfg!(windows) { b';' } else { b':' };

/// A path as git printed it: bytes on Unix; on Windows git prints UTF-8, and a byte that is
/// not is replaced (no such path can be opened there anyway).
pub fn os_str_from_git(bytes: &[u8]) -> Cow<'_, OsStr> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        Cow::Borrowed(OsStr::from_bytes(bytes))
    }
    #[cfg(not(unix))]
    {
        match String::from_utf8_lossy(bytes) {
            Cow::Borrowed(text) => Cow::Borrowed(OsStr::new(text)),
            Cow::Owned(text) => Cow::Owned(text.into()),
        }
    }
}

/// [`os_str_from_git`] as a path.
pub fn path_from_git(bytes: &[u8]) -> PathBuf {
    PathBuf::from(os_str_from_git(bytes).into_owned())
}

/// A path's bytes as git reads them: the bytes on Unix, UTF-8 on Windows.
pub fn git_bytes(path: &OsStr) -> Cow<'_, [u8]> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        Cow::Borrowed(path.as_bytes())
    }
    #[cfg(not(unix))]
    {
        match path.to_string_lossy() {
            Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
            Cow::Owned(text) => Cow::Owned(text.into_bytes()),
        }
    }
}

/// Device and inode, which tell a file from another put in its place. The standard library
/// gives no stable file identity on Windows: there it is `(0, 0)`, and a replacement of the
/// same size and modification time goes unnoticed by a stamp made with it.
pub fn identity(metadata: &Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        (metadata.dev(), metadata.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        (0, 0)
    }
}

/// The modification time as whole seconds and nanoseconds since the Unix epoch (negative
/// before it); `(0, 0)` where the system keeps none.
pub fn modified(metadata: &Metadata) -> (i64, i64) {
    let Ok(time) = metadata.modified() else {
        return (0, 0);
    };
    let (sign, since) = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => (1, after),
        Err(before) => (-1, before.duration()),
    };
    let seconds = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    (sign * seconds, sign * i64::from(since.subsec_nanos()))
}

/// Whether the open `file` is the file now at `path`, not one removed or replaced since it
/// was opened (volume and file index on Windows, device and inode on Unix).
pub fn is_the_file_at(file: &fs::File, path: &Path) -> io::Result<bool> {
    let held = same_file::Handle::from_file(file.try_clone()?)?;
    match same_file::Handle::from_path(path) {
        Ok(current) => Ok(current == held),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

/// Makes `options` create a file only the user may read and write: mode 0600 on Unix. On
/// Windows a new file takes its directory's access rules, and majordomus keeps its files in
/// the user's own profile or in the repository.
pub fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600)
    }
    #[cfg(not(unix))]
    {
        options
    }
}

/// Creates `dir` (and any missing parent) private to the user; an existing directory is
/// narrowed to 0700 too, so what it holds never sits where others can list or replace it.
/// On Windows, see [`private_file`].
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut builder = DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        builder.mode(0o700).create(dir)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    {
        builder.create(dir)
    }
}

/// Creates the directory `dir` (its parent must exist) private to the user; an existing one
/// is an error. On Windows, see [`private_file`].
pub fn create_new_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut builder = DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Sets a file's permission bits on Unix (`0o755` for a script, `0o644` for a file others
/// may read); Windows has no such bits, and a script runs by its interpreter there.
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

/// The permission bits of `metadata` on Unix; `None` on Windows.
pub fn mode(metadata: &Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        Some(metadata.permissions().mode())
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        None
    }
}

/// Makes `options` open the link itself rather than what a symbolic link at the path's last
/// component points to (`O_NOFOLLOW` on Unix, `FILE_FLAG_OPEN_REPARSE_POINT` on Windows), so
/// a link planted in the user's place cannot redirect a read or a write; and, on Unix, never
/// wait on a pipe put there (`O_NONBLOCK`, which changes nothing for a regular file).
pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt as _;
        const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
        options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
    }
}

/// Makes `options` never wait on a pipe or take a terminal put where a file was expected
/// (`O_NONBLOCK | O_NOCTTY` on Unix; Windows has neither in its file system).
pub fn never_waits(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
    }
    #[cfg(not(unix))]
    {
        options
    }
}

/// What a file is when it is neither a regular file nor a directory, in words.
pub fn special_kind(kind: fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        } else if kind.is_socket() {
            return "a socket";
        } else if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    let _ = kind;
    "a special file"
}

/// The owner and group of a file on Unix; `None` on Windows.
pub fn owner(metadata: &Metadata) -> Option<(u32, u32)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        Some((metadata.uid(), metadata.gid()))
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        None
    }
}

/// Gives `file` the owner and group `owner` where this process may (only root may give a
/// file away, and only to a group it is in); nothing on Windows.
pub fn give_owner(file: &fs::File, owner: (u32, u32)) {
    #[cfg(unix)]
    {
        let _ = std::os::unix::fs::fchown(file, Some(owner.0), Some(owner.1));
    }
    #[cfg(not(unix))]
    {
        let _ = (file, owner);
    }
}

/// A directory of the user's own for files of this user's processes when no runtime or
/// cache directory is set: `majordomus-<uid>` in the system's temporary directory on Unix
/// (shared by every user, hence the uid); on Windows the temporary directory is the user's.
pub fn per_user_temp_dir() -> PathBuf {
    #[cfg(unix)]
    {
        // SAFETY: getuid cannot fail and touches no memory.
        let uid = unsafe { libc::getuid() };
        std::env::temp_dir().join(format!("majordomus-{uid}"))
    }
    #[cfg(not(unix))]
    {
        std::env::temp_dir().join("majordomus")
    }
}

/// Whether making a hard link failed because the file system cannot make them at all.
pub fn hard_links_unsupported(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(
            error.raw_os_error(),
            Some(libc::EPERM | libc::EOPNOTSUPP | libc::ENOSYS)
        )
    }
    #[cfg(windows)]
    {
        // ERROR_INVALID_FUNCTION, ERROR_NOT_SUPPORTED
        error.kind() == io::ErrorKind::Unsupported || matches!(error.raw_os_error(), Some(1 | 50))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modification_time_reads_to_the_nanosecond() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, "x").unwrap();
        let at = UNIX_EPOCH + std::time::Duration::new(1_700_000_000, 123_456_789);
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(at)
            .unwrap();
        assert_eq!(
            modified(&fs::metadata(&path).unwrap()),
            (1_700_000_000, 123_456_789)
        );
    }

    #[test]
    fn a_replaced_file_is_not_the_file_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        fs::write(&path, "").unwrap();
        let held = fs::File::open(&path).unwrap();
        assert!(is_the_file_at(&held, &path).unwrap());
        fs::remove_file(&path).unwrap();
        assert!(!is_the_file_at(&held, &path).unwrap());
        fs::write(&path, "").unwrap();
        assert!(!is_the_file_at(&held, &path).unwrap());
    }
}
