//! [`serve`] and (feature `tokio`) [`serve_async`]: one connection's stream
//! applied to a subscriber, blocking or on tokio; and [`bind_unix`], a Unix
//! socket only its owner can reach.

use std::io::Read;

use super::error::ServeError;
use super::sink::Sink;
use super::subscriber::SinkSubscriber;
use crate::reader::FrameReader;

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
/// assert_eq!(subscriber.tally().clock_offsets, 1);
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

/// Read one connection's stream and apply it to `subscriber`, until a clean
/// end or an error, on tokio: the same session a [`Server`](super::Server)
/// runs for each connection, with its default bounds (the buffer grows with
/// the bytes that arrived; a minute with no whole frame, or a minute for one
/// frame to finish, ends the connection).
#[cfg(feature = "tokio")]
pub async fn serve_async<R: tokio::io::AsyncRead + Unpin, S: Sink>(
    mut reader: R,
    subscriber: &mut SinkSubscriber<S>,
) -> Result<(), ServeError> {
    let limits = super::session::Limits::default();
    let (result, _) = super::session::Session::new(&mut reader, subscriber, limits, None)
        .run()
        .await;
    result
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
