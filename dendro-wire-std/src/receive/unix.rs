//! A collector's Unix socket: made owner-only (or as asked) without a
//! moment of looser permissions, never over what is already there, and at
//! exit removed only if it is still the socket that was made.

use std::io::{self, Error, ErrorKind};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// A Unix socket listener at `path` with permissions `mode` (`0o600`: only
/// its owner can connect).
///
/// The socket is made in a new private directory beside `path` (mode 0700,
/// its name random and made only where nothing is, so another user can
/// neither guess nor take it), given `mode` there, and linked into place,
/// so it is never reachable with looser permissions, even for a moment.
/// Nothing at `path` is replaced (a link planted there included) except a
/// stale socket that nothing listens on, which a listener that did not shut
/// down cleanly leaves behind.
pub fn bind_unix(path: &Path, mode: u32) -> io::Result<UnixListener> {
    bind_unix_file(path, mode).map(|(listener, _)| listener)
}

/// [`bind_unix`], and the socket file it made, to be removed at exit with
/// [`UnixSocketFile::remove`].
pub fn bind_unix_file(path: &Path, mode: u32) -> io::Result<(UnixListener, UnixSocketFile)> {
    let taken = |what: &str| {
        Error::new(
            ErrorKind::AddrInUse,
            format!(
                "{} is {what}; remove it or choose another path",
                path.display()
            ),
        )
    };
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(taken("already there, and not a socket"));
        }
        match UnixStream::connect(path) {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => std::fs::remove_file(path)?,
            _ => return Err(taken("a socket another listener is serving")),
        }
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let private = private_dir(dir)?;
    let made = private.join("socket");
    let bound = (|| {
        let listener = UnixListener::bind(&made)?;
        std::fs::set_permissions(&made, std::fs::Permissions::from_mode(mode))?;
        let meta = std::fs::symlink_metadata(&made)?;
        // A link never replaces what is at `path`, as a rename would.
        std::fs::hard_link(&made, path).map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => taken("already there"),
            _ => e,
        })?;
        let file = UnixSocketFile {
            path: path.to_path_buf(),
            id: (meta.dev(), meta.ino()),
        };
        Ok((listener, file))
    })();
    let _ = std::fs::remove_file(&made);
    let _ = std::fs::remove_dir(&private);
    bound
}

/// A new directory in `dir`, mode 0700, with a random name: `mkdir` fails
/// on a name that exists, so nothing another user put there is used.
fn private_dir(dir: &Path) -> io::Result<PathBuf> {
    let mut last = None;
    for _ in 0..16 {
        let candidate = dir.join(format!(".dendro-wire-{:016x}{:016x}", random(), random()));
        match std::fs::DirBuilder::new().mode(0o700).create(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(Error::new(
                    e.kind(),
                    format!("cannot make a private directory in {}: {e}", dir.display()),
                ))
            }
        }
    }
    Err(Error::other(format!(
        "cannot make a private directory in {}: every name tried was taken ({})",
        dir.display(),
        last.map_or_else(String::new, |e| e.to_string())
    )))
}

/// 64 unguessable bits: std's hasher keys come from the system's random
/// source, fresh for each `RandomState`.
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    h.finish()
}

/// The socket file [`bind_unix_file`] made: its path, and which file it is
/// (its device and inode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnixSocketFile {
    path: PathBuf,
    id: (u64, u64),
}

impl UnixSocketFile {
    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remove it, if the path still names the socket that was made (the
    /// same device and inode); whether it did. A file put there since, or
    /// another listener's socket, is left alone.
    pub fn remove(&self) -> io::Result<bool> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.file_type().is_socket() && (meta.dev(), meta.ino()) == self.id => {
                std::fs::remove_file(&self.path)?;
                Ok(true)
            }
            Ok(_) => Ok(false),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}
