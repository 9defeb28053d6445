//! Captures: each connection's bytes, as they arrive, in a file of a
//! directory ([`Recorder`]), bounded in what they may cost there.
//!
//! A capture is a peer's bytes written to the collector's disk, so a peer
//! must not be able to aim it at the disk: a file is made only once its
//! connection's first whole frame has arrived (a peer that connects and
//! closes, or sends a preamble and stalls, leaves nothing); each connection
//! may write at most a per-connection cap, and all captures together at most
//! a total cap on the bytes in the directory (what was there at start
//! counted). A capture that reaches a cap, or that the disk refuses (full,
//! over quota, any error), stops with one line, and its connection is
//! served on: recording is never why ingest stops.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::throttle::Throttle;

/// The captures of a server's connections: where, and what they may hold.
#[derive(Debug)]
pub(crate) struct Recorder {
    dir: PathBuf,
    max_total: u64,
    max_per_connection: u64,
    /// Bytes in the directory: its files at start, and every capture since.
    used: AtomicU64,
    /// The next capture number to try.
    next: AtomicU64,
    /// Connections not recorded because the directory is at its cap: said
    /// at most once a second, as a flood of them would otherwise be a flood
    /// of lines.
    full: Mutex<Throttle>,
}

impl Recorder {
    /// Captures in `dir` (made if need be), its files' bytes counted as
    /// used.
    pub(crate) fn new(dir: &Path, max_total: u64, max_per_connection: u64) -> io::Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| not_made(dir, e))?;
        let mut used = 0;
        for entry in std::fs::read_dir(dir)? {
            // Links and directories are not followed; a file is its size.
            let meta = entry?.metadata()?;
            if meta.is_file() {
                used += meta.len();
            }
        }
        Ok(Recorder {
            dir: dir.to_path_buf(),
            max_total,
            max_per_connection,
            used: AtomicU64::new(used),
            next: AtomicU64::new(0),
            full: Mutex::new(Throttle::new(Duration::from_secs(1))),
        })
    }

    /// Connection `id`'s capture, not yet made.
    pub(crate) fn capture(self: &Arc<Self>, id: u64) -> Capture {
        Capture {
            recorder: self.clone(),
            id,
            state: State::NotYet,
        }
    }

    /// Up to `n` bytes of the total, as many as it has left.
    fn take(&self, n: u64) -> u64 {
        let mut taken = 0;
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                taken = n.min(self.max_total.saturating_sub(used));
                Some(used + taken)
            });
        taken
    }

    fn give_back(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// One connection's capture: made at its first whole frame, then written as
/// bytes arrive, until a cap or an error stops it.
#[derive(Debug)]
pub(crate) struct Capture {
    recorder: Arc<Recorder>,
    id: u64,
    state: State,
}

#[derive(Debug)]
enum State {
    /// No whole frame yet: nothing is kept, and no file exists.
    NotYet,
    Recording {
        path: PathBuf,
        file: File,
        written: u64,
    },
    /// Stopped (said once); the file, if one was made, holds what came
    /// before.
    Stopped { path: Option<PathBuf> },
}

impl Capture {
    /// Whether the file is still to be made.
    pub(crate) fn not_yet(&self) -> bool {
        matches!(self.state, State::NotYet)
    }

    /// The connection's first whole frame has arrived: make the file and
    /// write `so_far`, the stream's bytes up to now.
    pub(crate) fn start(&mut self, so_far: &[&[u8]]) {
        if !self.not_yet() {
            return;
        }
        // A directory at its cap gets no file at all.
        if self.recorder.used.load(Ordering::Acquire) >= self.recorder.max_total {
            self.state = State::Stopped { path: None };
            let held = lock(&self.recorder.full).hit();
            if let Some(held) = held {
                log::warn!(
                    "connection {}: not recorded: the captures in {} hold their cap of {} bytes \
                     ({held} more connection(s) not recorded since last said)",
                    self.id,
                    self.recorder.dir.display(),
                    self.recorder.max_total
                );
            }
            return;
        }
        match create(&self.recorder.dir, &self.recorder.next) {
            Ok((path, file)) => {
                self.state = State::Recording {
                    path,
                    file,
                    written: 0,
                }
            }
            Err(e) => {
                log::warn!("connection {}: not recorded: {e}", self.id);
                self.state = State::Stopped { path: None };
                return;
            }
        }
        for bytes in so_far {
            self.write(bytes);
        }
    }

    /// `bytes` arrived: written, as far as the caps allow, once the file
    /// exists.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        let State::Recording {
            path,
            file,
            written,
        } = &mut self.state
        else {
            return;
        };
        let room = self.recorder.max_per_connection.saturating_sub(*written);
        let wanted = (bytes.len() as u64).min(room);
        let granted = self.recorder.take(wanted);
        let n = granted as usize;
        let why = match file.write_all(&bytes[..n]) {
            Err(e) => {
                // What did not reach the disk is not held there.
                let on_disk = file.metadata().map_or(*written, |m| m.len());
                let reached = on_disk.saturating_sub(*written).min(granted);
                self.recorder.give_back(granted - reached);
                *written += reached;
                Some(e.to_string())
            }
            Ok(()) => {
                *written += granted;
                if n == bytes.len() {
                    None
                } else if granted < wanted {
                    Some(format!(
                        "the captures in {} hold their cap of {} bytes",
                        self.recorder.dir.display(),
                        self.recorder.max_total
                    ))
                } else {
                    Some(format!(
                        "its cap of {} bytes per connection",
                        self.recorder.max_per_connection
                    ))
                }
            }
        };
        if let Some(why) = why {
            let path = std::mem::take(path);
            let written = *written;
            if written == 0 {
                // Made by this capture and holding nothing: not left behind.
                remove_if_still(&path, file);
                log::warn!("connection {}: not recorded: {why}", self.id);
            } else {
                log::warn!(
                    "connection {}: recording stopped after {written} bytes in {}: {why}; the \
                     connection is served on",
                    self.id,
                    path.display()
                );
            }
            self.state = State::Stopped {
                path: (written > 0).then_some(path),
            };
        }
    }

    /// Where the capture is, if a file was made and holds anything.
    pub(crate) fn path(&self) -> Option<PathBuf> {
        match &self.state {
            State::Recording { path, .. } => Some(path.clone()),
            State::Stopped { path } => path.clone(),
            State::NotYet => None,
        }
    }
}

/// Remove `path` if it is still `file` (the same device and inode), never
/// what another put in its place.
fn remove_if_still(path: &Path, file: &File) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (Ok(ours), Ok(there)) = (file.metadata(), std::fs::symlink_metadata(path)) else {
            return;
        };
        if (ours.dev(), ours.ino()) != (there.dev(), there.ino()) {
            return;
        }
    }
    let _ = std::fs::remove_file(path);
}

/// Why the capture directory `dir` could not be made, `e` said plainly: a
/// symbolic link to nothing on its path (at `dir` or above it) is named as
/// one. Such a link is never followed, so nothing is made where it points.
fn not_made(dir: &Path, e: io::Error) -> io::Error {
    for at in dir.ancestors().filter(|a| !a.as_os_str().is_empty()) {
        let is_link = std::fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && std::fs::metadata(at).is_err() {
            let to =
                std::fs::read_link(at).map_or_else(|_| "?".into(), |t| t.display().to_string());
            let on_the_way = if at == dir {
                String::new()
            } else {
                format!(", on the path to {}", dir.display())
            };
            return io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "the capture directory cannot be made: {} is a symbolic link to nothing \
                     (to {to}){on_the_way}, and links are not followed to make directories; \
                     make the directory it names, or remove the link",
                    at.display()
                ),
            );
        }
    }
    io::Error::new(
        e.kind(),
        format!("cannot make the capture directory {}: {e}", dir.display()),
    )
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new capture file in `dir`: created, never opened if anything (a file, a
/// planted link) has the name; a taken name gets the next number.
fn create(dir: &Path, next: &AtomicU64) -> io::Result<(PathBuf, File)> {
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("connection-{n}.dwr"));
        // `create_new` is O_CREAT | O_EXCL: it fails on any existing name,
        // a symbolic link included, and so never follows one.
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot create {}: {e}", path.display()),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that refuses a write (`/dev/full` says ENOSPC to every one):
    /// recording stops, what it had taken of the total is given back, and
    /// the capture says no file holds anything.
    /// A capture directory that is a link to nothing, or under one, is
    /// refused by name, and nothing is made where the link points.
    #[cfg(unix)]
    #[test]
    fn a_dangling_link_for_the_directory_is_named_and_not_followed() {
        let dir = std::env::temp_dir().join(format!("capture-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let (link, nowhere) = (dir.join("captures"), dir.join("nowhere"));
        std::os::unix::fs::symlink(&nowhere, &link).unwrap();
        for record in [link.clone(), link.join("today")] {
            let e = Recorder::new(&record, 1 << 20, 1 << 20).unwrap_err();
            let said = e.to_string();
            assert!(
                said.contains(&format!(
                    "{} is a symbolic link to nothing (to {})",
                    link.display(),
                    nowhere.display()
                )),
                "{said}"
            );
            assert!(said.contains("links are not followed"), "{said}");
            assert!(!nowhere.exists(), "made through the link");
        }
        // A file where the directory should be: its path and the reason.
        let file = dir.join("file");
        std::fs::write(&file, b"").unwrap();
        let said = Recorder::new(&file, 1, 1).unwrap_err().to_string();
        assert!(
            said.starts_with(&format!(
                "cannot make the capture directory {}: ",
                file.display()
            )),
            "{said}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_disk_stops_the_recording_and_gives_its_bytes_back() {
        let dir = std::env::temp_dir().join(format!("capture-full-{}", std::process::id()));
        let recorder = Arc::new(Recorder::new(&dir, 1 << 20, 1 << 20).unwrap());
        let mut capture = recorder.capture(7);
        capture.state = State::Recording {
            // Not a file this capture made: nothing is removed.
            path: dir.join("connection-0.dwr"),
            file: OpenOptions::new().write(true).open("/dev/full").unwrap(),
            written: 0,
        };
        capture.write(b"some bytes");
        assert!(matches!(capture.state, State::Stopped { path: None }));
        assert_eq!(capture.path(), None);
        assert_eq!(recorder.used.load(Ordering::Relaxed), 0);
        // Stopped is stopped: later bytes are not written.
        capture.write(b"more");
        assert_eq!(recorder.used.load(Ordering::Relaxed), 0);
        std::fs::remove_dir(&dir).unwrap();
    }
}
