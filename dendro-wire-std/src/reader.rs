//! [`FrameReader`]: frames off any `std::io::Read`, one reusable buffer.

use std::fmt;
use std::io::{self, Read};
use std::ops::Range;

use dendro_wire_core::{Frame, FrameDecoder};

use crate::cut::{FrameBuffer, Next};
use crate::read_error::{Position, ReadError, ReadErrorKind};

/// Reads a dendro replication stream: the preamble when created, then one
/// borrowed frame at a time.
///
/// All frames are decoded in place in one buffer that is then reused: no
/// allocation per frame and no zero-filling per read. The buffer starts at
/// 4 KiB and doubles only when it is full of bytes that arrived, up to
/// 64 KiB for reading ahead (so small frames come many to a `read` call:
/// wrapping the reader in a `BufReader` only adds a copy), and past that only
/// as far as a large frame reaches. Memory follows the bytes received: a
/// length prefix that claims 64 MiB costs nothing until the bytes come. A
/// length above the limit is refused before anything is read past it.
///
/// The stream's only clean end is a frame boundary: a stream that stops
/// inside a frame — even inside its four-byte length — lost that frame, and
/// that is an error, not the end ([protocol §1](dendro_wire_core::protocol)).
///
/// Frames of a kind this build does not know are skipped and counted
/// ([`unknown`](Self::unknown)); [`yield_unknown`](Self::yield_unknown)
/// hands them to the caller instead, as the tokio codecs'
/// `yield_unknown` does.
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
    frames: FrameBuffer,
}

impl<R> fmt::Debug for FrameReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameReader")
            .field("offset", &self.frames.offset())
            .field("frames", &self.frames.frames())
            .field("unknown", &self.frames.unknown())
            .field("buffer", &self.frames.len())
            .finish_non_exhaustive()
    }
}

impl<R: Read> FrameReader<R> {
    /// Read and check the preamble, with the protocol's frame limit.
    pub fn new(inner: R) -> Result<Self, ReadError> {
        Self::with_decoder(inner, FrameDecoder::new())
    }

    /// Read and check the preamble; frames are decoded by `decoder`, whose
    /// limit bounds the buffer.
    pub fn with_decoder(inner: R, decoder: FrameDecoder) -> Result<Self, ReadError> {
        let mut r = FrameReader {
            inner,
            frames: FrameBuffer::new(decoder, None),
        };
        while let Some(needed) = r.frames.preamble()? {
            r.fill(needed)?;
        }
        Ok(r)
    }

    /// Hand frames of unknown kinds to the caller as
    /// [`Frame::Unknown`] instead of skipping them (what a forwarder
    /// needs): `FrameReader::new(input)?.yield_unknown(true)`. Either way
    /// they are counted in [`unknown`](Self::unknown).
    pub fn yield_unknown(mut self, yield_unknown: bool) -> Self {
        self.frames.set_yield_unknown(yield_unknown);
        self
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
        self.frames.decode(range, at).map(|frame| Some((frame, at)))
    }

    /// [`next_frame`](Self::next_frame), with the frame's own bytes (length
    /// prefix included), for a caller that forwards frames untouched: a
    /// filter looks at the view and writes the bytes.
    pub fn next_frame_with_bytes(&mut self) -> Result<Option<(Frame<'_>, &[u8])>, ReadError> {
        let Some((range, at)) = self.next_raw()? else {
            return Ok(None);
        };
        let frame = self.frames.decode(range.clone(), at)?;
        Ok(Some((frame, self.frames.bytes(range))))
    }

    /// The next frame to hand out, whole in the buffer and consumed: where
    /// it lies and where it stood in the stream; `None` at a clean end.
    fn next_raw(&mut self) -> Result<Option<(Range<usize>, Position)>, ReadError> {
        loop {
            match self.frames.next()? {
                Next::Frame(range, at) => return Ok(Some((range, at))),
                Next::Need(needed) => {
                    if !self.fill(needed)? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Read at least one more byte for a frame that needs `needed` more.
    /// `Ok(false)`: a clean end at a frame boundary; an end anywhere else is
    /// a truncation.
    fn fill(&mut self, needed: usize) -> Result<bool, ReadError> {
        loop {
            let room = self.frames.spare(needed)?;
            match self.inner.read(room) {
                Ok(0) => return self.frames.end_of_stream(needed).map(|()| false),
                Ok(n) => {
                    self.frames.filled(n);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.frames.error(ReadErrorKind::Io(e))),
            }
        }
    }

    /// Frames read so far, unknown ones included.
    pub fn frames(&self) -> u64 {
        self.frames.frames()
    }

    /// Frames of an unknown kind met so far.
    pub fn unknown(&self) -> u64 {
        self.frames.unknown()
    }

    /// Bytes of the stream consumed so far, preamble included.
    pub fn offset(&self) -> u64 {
        self.frames.offset()
    }

    /// The size of the reader's buffer now: at most twice the bytes that
    /// have arrived, and at most the read-ahead or the largest frame.
    pub fn buffer_len(&self) -> usize {
        self.frames.len()
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }
}
