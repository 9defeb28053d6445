//! The receiving end of the network: a connection's stream applied to a
//! subscriber ([`serve`], blocking), and, with the `tokio` feature, a
//! [`Server`] for many publishers at once.
//!
//! A collector is where bytes from anyone who can reach it arrive, so every
//! connection is bounded: its buffer grows with the bytes that arrived, never
//! with what a length prefix claims, against a memory budget shared by all
//! connections; a connection that sends no whole frame for a while, or
//! starts a frame and does not finish it, is ended; connections past a cap
//! are closed as soon as they are accepted. Every connection that ends,
//! whatever the cause, closes its socket, frees what it held, and is
//! reported once with why it ended.

use std::fmt;
use std::io::Read;
use std::time::Duration;

use crate::reader::{FrameReader, Position, ReadError};
use crate::subscriber::{Sink, SubscribeError, Subscriber};

#[cfg(feature = "tokio")]
pub use self::collector::{
    ConnectionInfo, Ended, LiveConnection, Server, ServerConfig, ServerStats,
};

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
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Read(e) => Some(e),
            ServeError::Subscribe(_, e) => Some(e),
            ServeError::Capture(e) => Some(e),
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
/// use dendro_wire_std::server::serve;
/// use dendro_wire_std::{CountingSink, FrameWriter, Subscriber};
///
/// let mut w = FrameWriter::new(Vec::new())?;
/// w.write_frame(&Frame::Handshake(Handshake { source: 0, uuid: None, labels: Map::EMPTY,
///     metadata: Map::EMPTY, clock_anchor_wall_ns: 0, complete: false }))?;
/// w.write_frame(&Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 }))?;
/// let stream = w.into_inner();
///
/// let mut subscriber = Subscriber::new(CountingSink::default());
/// serve(&stream[..], &mut subscriber)?;
/// assert_eq!(subscriber.applied().clock_offsets, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn serve<R: Read, S: Sink>(
    reader: R,
    subscriber: &mut Subscriber<S>,
) -> Result<(), ServeError> {
    let mut frames = FrameReader::new(reader).map_err(ServeError::Read)?;
    while let Some((frame, at)) = frames.next_frame_at().map_err(ServeError::Read)? {
        subscriber
            .apply(&frame)
            .map_err(|e| ServeError::Subscribe(at, e))?;
    }
    Ok(())
}

#[cfg(feature = "tokio")]
mod collector;
#[cfg(feature = "tokio")]
pub(crate) use collector::{serve_async, Limits};
