//! [`ReadError`]: why a received stream could not be read, and where
//! ([`Position`]); every receiver's error, blocking, async or a codec's, so
//! the reader and the receive buffer each use it and neither the other.

use std::fmt;
use std::io;

use dendro_wire_core::{Error, Truncated, PREAMBLE_BYTES};

/// Where a frame stood in a stream: frame 0 at offset 0 is the preamble.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// The frame's number, from 1, unknown frames included; 0 for the
    /// preamble.
    pub frame: u64,
    /// The stream offset at which the frame starts.
    pub offset: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Frame 1 starts after the preamble's bytes: a place before that is
        // the preamble, however it was counted.
        if self.frame == 0 || self.offset < PREAMBLE_BYTES as u64 {
            return f.write_str("preamble");
        }
        write!(f, "frame {} (stream byte {})", self.frame, self.offset)
    }
}

/// Why a stream could not be read, and where: the frame's number (from 1)
/// and the stream offset at which it starts.
#[derive(Debug)]
pub struct ReadError {
    kind: ReadErrorKind,
    /// Where: frame 0 is the preamble; `None` for a transport that failed
    /// where no frame was being read (a codec's reader, say).
    at: Option<Position>,
}

/// What went wrong in a [`ReadError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// The transport failed.
    Io(io::Error),
    /// The preamble is wrong: not a dendro stream, or another version.
    Preamble(Error),
    /// A frame broke a rule of the spec.
    Malformed(Error),
    /// The stream ended inside the preamble or a frame, length prefix
    /// included.
    Truncated {
        /// The bytes the preamble or frame needed at least.
        needed: usize,
        /// The bytes of it that arrived.
        have: usize,
    },
    /// Bytes given as one encoded frame that are not exactly one: the length
    /// prefix claims another size.
    NotOneFrame {
        /// The bytes given.
        have: usize,
        /// The frame's size by its length prefix, prefix included.
        frame: usize,
    },
    /// Holding more of the frame would take a [`MemoryBudget`] shared by
    /// many connections past its limit.
    ///
    /// [`MemoryBudget`]: crate::MemoryBudget
    MemoryBudget {
        /// The buffer size the frame needed next.
        needed: usize,
        /// The most this connection's buffer could hold then: what was
        /// free, within its share ([`MemoryBudget`](crate::MemoryBudget)
        /// says what the shares are).
        most: usize,
        /// The bytes of the budget in use by every connection.
        in_use: usize,
        /// The budget.
        limit: usize,
    },
}

impl ReadError {
    /// An error at no place in a stream: a frame refused before it was
    /// written, say.
    #[cfg(feature = "tokio")]
    pub(crate) fn unplaced(kind: ReadErrorKind) -> Self {
        ReadError { kind, at: None }
    }

    pub(crate) fn new(kind: ReadErrorKind, frame: u64, offset: u64) -> Self {
        // No frame starts inside the preamble's bytes: an error placed there
        // (a transport that fails before the preamble is whole, a budget
        // that cannot hold it) is the preamble's, and said so.
        let (frame, offset) = if offset < PREAMBLE_BYTES as u64 {
            (0, 0)
        } else {
            (frame, offset)
        };
        ReadError {
            kind,
            at: Some(Position { frame, offset }),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ReadErrorKind {
        &self.kind
    }

    /// What went wrong, taken: a transport's `io::Error` as it was raised,
    /// for a caller that hands it on.
    pub fn into_kind(self) -> ReadErrorKind {
        self.kind
    }

    /// The bytes of the frame the stream ended inside, if it ended inside
    /// one after its preamble: what a reader of a capture cut off (`check
    /// --cut-ok`) reads up to rather than refuses. A stream cut inside its
    /// preamble is no stream, and `None`.
    pub fn cut_frame_bytes(&self) -> Option<usize> {
        match (&self.kind, self.at) {
            (ReadErrorKind::Truncated { have, .. }, Some(at)) if at.frame > 0 => Some(*have),
            _ => None,
        }
    }

    /// The number of the frame being read, from 1; 0 for the preamble (or
    /// a failure of the transport at no known place).
    pub fn frame(&self) -> u64 {
        self.at.map_or(0, |at| at.frame)
    }

    /// The stream offset at which that frame (or the preamble) starts.
    pub fn offset(&self) -> u64 {
        self.at.map_or(0, |at| at.offset)
    }

    /// Where in the stream: the frame (0 for the preamble) and the offset it
    /// starts at; `None` for a transport that failed at no known place.
    pub fn position(&self) -> Option<Position> {
        self.at
    }

    /// The spec's error, for a malformed frame or preamble.
    pub fn wire_error(&self) -> Option<&Error> {
        match &self.kind {
            ReadErrorKind::Preamble(e) | ReadErrorKind::Malformed(e) => Some(e),
            _ => None,
        }
    }

    fn is_preamble(&self) -> bool {
        self.at.is_some_and(|at| at.frame == 0)
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(at) = self.at {
            write!(f, "{at}: ")?;
        }
        match &self.kind {
            ReadErrorKind::Io(e) => write!(f, "the transport failed: {e}"),
            ReadErrorKind::Preamble(e) | ReadErrorKind::Malformed(e) => write!(f, "{e}"),
            ReadErrorKind::Truncated { needed, have } => Truncated {
                in_preamble: self.is_preamble(),
                have: *have,
                needed: *needed,
            }
            .fmt(f),
            ReadErrorKind::NotOneFrame { have, frame } => write!(
                f,
                "{have} bytes given as one frame, and its length prefix says {frame}"
            ),
            ReadErrorKind::MemoryBudget {
                needed,
                most,
                in_use,
                limit,
            } => write!(
                f,
                "holding this frame needs a buffer of {needed} bytes, and this connection may \
                 hold {most} of the memory budget's {limit} bytes now ({in_use} in use by every \
                 connection; an eighth is kept for new connections and small frames, and no \
                 connection's large frames hold more than half the rest); the connection is \
                 ended and the others go on"
            ),
        }
    }
}

/// A transport that failed at no known place in the stream: what a tokio
/// codec's reader reports through it.
impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError {
            kind: ReadErrorKind::Io(e),
            at: None,
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ReadErrorKind::Io(e) => Some(e),
            ReadErrorKind::Preamble(e) | ReadErrorKind::Malformed(e) => Some(e),
            ReadErrorKind::Truncated { .. }
            | ReadErrorKind::NotOneFrame { .. }
            | ReadErrorKind::MemoryBudget { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn truncated(frame: u64, offset: u64) -> ReadError {
        let kind = ReadErrorKind::Truncated {
            needed: 40,
            have: 7,
        };
        ReadError::new(kind, frame, offset)
    }

    #[test]
    fn a_stream_cut_inside_a_frame_is_read_up_to_it_and_one_cut_in_its_preamble_is_not() {
        assert_eq!(truncated(3, 141).cut_frame_bytes(), Some(7));
        assert_eq!(truncated(0, 0).cut_frame_bytes(), None);
        // A place inside the preamble's bytes is the preamble's.
        assert_eq!(truncated(1, 3).cut_frame_bytes(), None);
        let failed = ReadError::new(ReadErrorKind::Io(io::ErrorKind::Other.into()), 3, 141);
        assert_eq!(failed.cut_frame_bytes(), None);
        assert!(matches!(failed.into_kind(), ReadErrorKind::Io(_)));
    }
}
