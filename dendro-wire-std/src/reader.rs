//! [`FrameReader`]: frames off any `std::io::Read`, one reusable buffer.

use std::fmt;
use std::io::{self, Read};

use dendro_wire_core::{check_preamble, kind, Decoder, Error as WireError, Frame, Status};

/// The smallest buffer a reader keeps, so that small frames arrive many to a
/// `read` call rather than one read per frame.
const MIN_BUFFER: usize = 64 * 1024;

/// Reads a dendro replication stream: the preamble when created, then one
/// borrowed frame at a time.
///
/// All frames are decoded in place in one buffer that grows to the largest
/// frame seen and is then reused: no allocation per frame and no zero-filling
/// per read. A length above the limit is refused before the buffer grows.
///
/// The stream's only clean end is a frame boundary: a stream that stops
/// inside a frame — even inside its four-byte length — lost that frame, and
/// that is an error, not the end (WIRE.md §1).
///
/// Frames of a kind this build does not know are skipped and counted
/// ([`unknown`](Self::unknown)); [`set_yield_unknown`](Self::set_yield_unknown)
/// hands them to the caller instead.
///
/// ```
/// use dendro_wire_core::{ClockOffset, Frame};
/// use dendro_wire_std::{FrameReader, FrameWriter};
///
/// let mut w = FrameWriter::new(Vec::new())?;
/// w.write_frame(&Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 }))?;
/// let bytes = w.into_inner();
///
/// let mut r = FrameReader::new(&bytes[..])?;
/// assert!(matches!(r.next_frame()?, Some(Frame::ClockOffset(_))));
/// assert!(r.next_frame()?.is_none(), "a clean end");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    decoder: Decoder,
    /// The stream offset of `buf[start]`.
    offset: u64,
    frames: u64,
    unknown: u64,
    yield_unknown: bool,
}

impl<R> fmt::Debug for FrameReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameReader")
            .field("offset", &self.offset)
            .field("frames", &self.frames)
            .field("unknown", &self.unknown)
            .field("buffer", &self.buf.len())
            .finish_non_exhaustive()
    }
}

impl<R: Read> FrameReader<R> {
    /// Read and check the preamble, with the protocol's frame limit.
    pub fn new(inner: R) -> Result<Self, ReadError> {
        Self::with_decoder(inner, Decoder::new())
    }

    /// Read and check the preamble; frames are decoded by `decoder`, whose
    /// limit bounds the buffer.
    pub fn with_decoder(inner: R, decoder: Decoder) -> Result<Self, ReadError> {
        let mut r = FrameReader {
            inner,
            buf: Vec::new(),
            start: 0,
            end: 0,
            decoder,
            offset: 0,
            frames: 0,
            unknown: 0,
            yield_unknown: false,
        };
        let preamble = |kind| ReadError {
            kind,
            frame: 0,
            offset: 0,
        };
        loop {
            match check_preamble(r.buffered()) {
                Ok(Status::Complete(n)) => {
                    r.consume(n);
                    return Ok(r);
                }
                Ok(Status::Incomplete { needed }) => {
                    if !r.fill(needed).map_err(|e| preamble(ReadErrorKind::Io(e)))? {
                        let have = r.end - r.start;
                        return Err(preamble(ReadErrorKind::Truncated {
                            needed: have + needed,
                            have,
                        }));
                    }
                }
                Err(e) => return Err(preamble(ReadErrorKind::Preamble(e))),
            }
        }
    }

    /// Hand frames of unknown kinds to the caller as
    /// [`Frame::Unknown`] instead of skipping them. Either way they are
    /// counted in [`unknown`](Self::unknown).
    pub fn set_yield_unknown(&mut self, yield_unknown: bool) {
        self.yield_unknown = yield_unknown;
    }

    /// The next frame, or `None` at a clean end of stream.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, ReadError> {
        Ok(self.next_frame_at()?.map(|(frame, _)| frame))
    }

    /// [`next_frame`](Self::next_frame), with where the frame stood in the
    /// stream, for a caller whose own checks (the subscriber's rules, say)
    /// must say where a frame broke them while it still holds the frame.
    pub fn next_frame_at(&mut self) -> Result<Option<(Frame<'_>, Position)>, ReadError> {
        let Some((range, at)) = self.next_raw()? else {
            return Ok(None);
        };
        self.decode(range, at).map(|frame| Some((frame, at)))
    }

    /// [`next_frame`](Self::next_frame), with the frame's own bytes (length
    /// prefix included), for a caller that forwards frames untouched: a
    /// filter looks at the view and writes the bytes.
    pub fn next_frame_with_bytes(&mut self) -> Result<Option<(Frame<'_>, &[u8])>, ReadError> {
        let Some((range, at)) = self.next_raw()? else {
            return Ok(None);
        };
        let frame = self.decode(range.clone(), at)?;
        Ok(Some((frame, &self.buf[range])))
    }

    /// Decode the frame at `range` of the buffer, an error naming it `at`.
    fn decode(&self, range: std::ops::Range<usize>, at: Position) -> Result<Frame<'_>, ReadError> {
        match self.decoder.decode(&self.buf[range]) {
            Ok(Status::Complete((frame, _))) => Ok(frame),
            Ok(Status::Incomplete { needed }) => Err(ReadError {
                // A whole frame is buffered, so this does not happen; if it
                // did, it would be a truncation, said as one.
                kind: ReadErrorKind::Truncated { needed, have: 0 },
                frame: at.frame,
                offset: at.offset,
            }),
            Err(e) => Err(ReadError {
                kind: ReadErrorKind::Malformed(e),
                frame: at.frame,
                offset: at.offset,
            }),
        }
    }

    /// The next frame to hand out, whole in the buffer and consumed: where
    /// it lies and where it stood in the stream. Unknown kinds are skipped
    /// here unless asked for.
    fn next_raw(&mut self) -> Result<Option<(std::ops::Range<usize>, Position)>, ReadError> {
        loop {
            let total = loop {
                match self.decoder.frame_len(self.buffered()) {
                    Ok(Status::Complete(total)) => break total,
                    Ok(Status::Incomplete { needed }) => {
                        if !self.fill_or_truncated(needed)? {
                            return Ok(None);
                        }
                    }
                    Err(e) => return Err(self.error(ReadErrorKind::Malformed(e))),
                }
            };
            while self.end - self.start < total {
                let needed = total - (self.end - self.start);
                self.fill_or_truncated(needed)?;
            }
            let start = self.start;
            let at = Position {
                frame: self.frames + 1,
                offset: self.offset,
            };
            self.frames += 1;
            self.consume(total);
            if !kind::is_known(self.buf[start + 4]) {
                self.unknown += 1;
                if !self.yield_unknown {
                    continue;
                }
            }
            return Ok(Some((start..start + total, at)));
        }
    }

    /// Frames read so far, unknown ones included.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames of an unknown kind met so far.
    pub fn unknown(&self) -> u64 {
        self.unknown
    }

    /// Bytes of the stream consumed so far, preamble included.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The size of the reader's buffer: the largest frame it has had to
    /// hold, or its minimum.
    pub fn buffer_len(&self) -> usize {
        self.buf.len()
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }

    fn error(&self, kind: ReadErrorKind) -> ReadError {
        ReadError {
            kind,
            frame: self.frames + 1,
            offset: self.offset,
        }
    }

    /// `fill`, with an end of stream that leaves part of a frame buffered
    /// reported as truncation. `Ok(false)`: a clean end at a frame boundary.
    fn fill_or_truncated(&mut self, needed: usize) -> Result<bool, ReadError> {
        match self.fill(needed) {
            Ok(true) => Ok(true),
            Ok(false) if self.start == self.end => Ok(false),
            Ok(false) => {
                let have = self.end - self.start;
                Err(self.error(ReadErrorKind::Truncated {
                    needed: have + needed,
                    have,
                }))
            }
            Err(e) => Err(self.error(ReadErrorKind::Io(e))),
        }
    }

    /// Read at least one more byte, making room for `needed` more; `false`
    /// at the end of the stream. The buffer grows (and is zeroed) only when
    /// a frame is larger than any before it.
    fn fill(&mut self, needed: usize) -> io::Result<bool> {
        let have = self.end - self.start;
        if self.buf.len() - self.start < have + needed {
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = have;
            if self.buf.len() < have + needed {
                self.buf.resize((have + needed).max(MIN_BUFFER), 0);
            }
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Where a frame stood in a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// The frame's number, from 1, unknown frames included.
    pub frame: u64,
    /// The stream offset at which the frame starts.
    pub offset: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame {} (stream byte {})", self.frame, self.offset)
    }
}

/// Why a stream could not be read, and where: the frame's number (from 1)
/// and the stream offset at which it starts.
#[derive(Debug)]
pub struct ReadError {
    kind: ReadErrorKind,
    frame: u64,
    offset: u64,
}

/// What went wrong in a [`ReadError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// The transport failed.
    Io(io::Error),
    /// The preamble is wrong: not a dendro stream, or another version.
    Preamble(WireError),
    /// A frame broke a rule of the spec.
    Malformed(WireError),
    /// The stream ended inside the preamble or a frame, length prefix
    /// included.
    Truncated {
        /// The bytes the preamble or frame needed at least.
        needed: usize,
        /// The bytes of it that arrived.
        have: usize,
    },
}

impl ReadError {
    /// What went wrong.
    pub fn kind(&self) -> &ReadErrorKind {
        &self.kind
    }

    /// The number of the frame being read, from 1; 0 for the preamble.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// The stream offset at which that frame (or the preamble) starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The spec's error, for a malformed frame or preamble.
    pub fn wire_error(&self) -> Option<&WireError> {
        match &self.kind {
            ReadErrorKind::Preamble(e) | ReadErrorKind::Malformed(e) => Some(e),
            _ => None,
        }
    }

    fn is_preamble(&self) -> bool {
        self.frame == 0
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_preamble() {
            f.write_str("preamble: ")?;
        } else {
            let at = Position {
                frame: self.frame,
                offset: self.offset,
            };
            write!(f, "{at}: ")?;
        }
        match &self.kind {
            ReadErrorKind::Io(e) => write!(f, "the transport failed: {e}"),
            ReadErrorKind::Preamble(e) | ReadErrorKind::Malformed(e) => write!(f, "{e}"),
            ReadErrorKind::Truncated { needed, have } => write!(
                f,
                "the stream ends inside {}: {have} of at least {needed} byte(s) arrived",
                if self.is_preamble() {
                    "the preamble"
                } else {
                    "this frame"
                }
            ),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ReadErrorKind::Io(e) => Some(e),
            ReadErrorKind::Preamble(e) | ReadErrorKind::Malformed(e) => Some(e),
            ReadErrorKind::Truncated { .. } => None,
        }
    }
}
