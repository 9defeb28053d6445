//! [`serve`]: one connection's stream applied to a subscriber, blocking;
//! [`ServeError`], why a connection's stream stopped being applied (the
//! [`Server`](super::Server)'s connections end with it too); and
//! [`bind_unix`], a Unix socket only its owner can reach.

use std::fmt;
use std::io::Read;
use std::time::Duration;

use super::sink::Sink;
use super::subscriber::{SinkSubscriber, SubscribeError};
use crate::reader::{FrameReader, Position, ReadError};

/// Why a connection's stream stopped being applied.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The stream could not be read: the transport failed, the bytes broke a
    /// rule of the spec, the stream ended inside a frame, or the memory
    /// budget could not hold the next frame.
    Read(ReadError),
    /// A frame broke a protocol rule, or the sink failed.
    Subscribe(Position, SubscribeError),
    /// No whole frame arrived for this long.
    IdleTimeout {
        /// The time allowed.
        after: Duration,
        /// Where the next frame would have started.
        at: Position,
    },
    /// A frame started arriving and did not finish in time.
    FrameTimeout {
        /// The time allowed for one frame.
        after: Duration,
        /// Where the frame started.
        at: Position,
        /// Its bytes that arrived.
        have: usize,
    },
    /// The server shut down; what had arrived of the stream was applied.
    Shutdown {
        /// Where the next frame would have started.
        at: Position,
        /// Bytes of a frame that had started to arrive and was cut off.
        cut: usize,
    },
    /// The capture file could not be created or written.
    Capture(std::io::Error),
    /// The peer may not connect: a Unix peer whose user id is not allowed.
    NotAllowed(String),
    /// The TLS handshake failed: no client certificate, one that does not
    /// chain to the client CA or has expired, or a client that refused the
    /// server's.
    Tls(std::io::Error),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Read(e) => write!(f, "{e}"),
            ServeError::Subscribe(at, e) => write!(f, "{at}: {e}"),
            ServeError::IdleTimeout { after, at } => write!(
                f,
                "{at}: no whole frame arrived for {after:?}, the idle timeout; a publisher sends \
                 a frame every interval, even an empty one (rule 6)"
            ),
            ServeError::FrameTimeout { after, at, have } => write!(
                f,
                "{at}: the frame started arriving and was not whole within {after:?}, the frame \
                 timeout ({have} byte(s) of it arrived)"
            ),
            ServeError::Shutdown { at, cut: 0 } => {
                write!(
                    f,
                    "{at}: the server shut down; everything that arrived was applied"
                )
            }
            ServeError::Shutdown { at, cut } => write!(
                f,
                "{at}: the server shut down with {cut} byte(s) of this frame arrived and the \
                 rest not; everything before it was applied"
            ),
            ServeError::Capture(e) => write!(f, "the capture failed: {e}"),
            ServeError::NotAllowed(why) => write!(f, "not allowed to connect: {why}"),
            ServeError::Tls(e) => write!(f, "refused at the TLS handshake: {e}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Read(e) => Some(e),
            ServeError::Subscribe(_, e) => Some(e),
            ServeError::Capture(e) | ServeError::Tls(e) => Some(e),
            _ => None,
        }
    }
}

/// Read one connection's stream and apply it to `subscriber` until a clean
/// end or an error, blocking. Bounds on time are the reader's own (a
/// socket's read timeout, say); memory follows the bytes that arrived, as
/// [`FrameReader`] keeps it.
///
/// ```
/// use dendro_wire_core::{ClockOffset, Frame, Handshake, Map};
/// use dendro_wire_std::receive::serve;
/// use dendro_wire_std::{CountingSink, FrameWriter, SinkSubscriber};
///
/// let mut w = FrameWriter::new(Vec::new())?;
/// w.write_frame(&Frame::Handshake(Handshake { source: 0, uuid: None, labels: Map::EMPTY,
///     metadata: Map::EMPTY, clock_anchor_wall_ns: 0, complete: false }))?;
/// w.write_frame(&Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 }))?;
/// let stream = w.into_inner();
///
/// let mut subscriber = SinkSubscriber::new(CountingSink::default());
/// serve(&stream[..], &mut subscriber)?;
/// assert_eq!(subscriber.applied().clock_offsets, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn serve<R: Read, S: Sink>(
    reader: R,
    subscriber: &mut SinkSubscriber<S>,
) -> Result<(), ServeError> {
    let mut frames = FrameReader::new(reader).map_err(ServeError::Read)?;
    while let Some((frame, at)) = frames.next_frame_at().map_err(ServeError::Read)? {
        subscriber
            .apply(&frame)
            .map_err(|e| ServeError::Subscribe(at, e))?;
    }
    Ok(())
}

/// A Unix socket listener at `path` with permissions `mode` (`0o600`: only
/// its owner can connect).
///
/// The socket is made in a new private directory beside `path` (mode 0700),
/// given `mode` there, and linked into place, so it is never reachable with
/// looser permissions, even for a moment. Nothing at `path` is replaced (a
/// link planted there included) except a stale socket that nothing listens
/// on, which a listener that did not shut down cleanly leaves behind.
#[cfg(unix)]
pub fn bind_unix(
    path: &std::path::Path,
    mode: u32,
) -> std::io::Result<std::os::unix::net::UnixListener> {
    use std::io::{Error, ErrorKind};
    use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
    use std::os::unix::net::{UnixListener, UnixStream};

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
        _ => std::path::Path::new("."),
    };
    let private = (0..100)
        .map(|attempt| dir.join(format!(".dendro-wire-{}-{attempt}", std::process::id())))
        .find(|candidate| {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(candidate)
                .is_ok()
        })
        .ok_or_else(|| {
            Error::other(format!(
                "cannot make a private directory in {}",
                dir.display()
            ))
        })?;
    let made = private.join("socket");
    let bound = (|| {
        let listener = UnixListener::bind(&made)?;
        std::fs::set_permissions(&made, std::fs::Permissions::from_mode(mode))?;
        // A link never replaces what is at `path`, as a rename would.
        std::fs::hard_link(&made, path).map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => taken("already there"),
            _ => e,
        })?;
        Ok(listener)
    })();
    let _ = std::fs::remove_file(&made);
    let _ = std::fs::remove_dir(&private);
    bound
}
