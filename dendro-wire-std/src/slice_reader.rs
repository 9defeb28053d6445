//! [`SliceReader`]: frames of a stream already in memory, cut and decoded
//! where they lie.

use std::fmt;

use dendro_wire_core::{Frame, FrameDecoder};

use crate::cut::{Cut, Cutter};
use crate::read_error::{Position, ReadError};

/// Reads a dendro replication stream held whole in memory: the preamble
/// when created, then one frame at a time, each borrowed from the bytes
/// themselves.
///
/// [`FrameReader`](crate::FrameReader) copies what it reads into a buffer
/// of its own, as a reader of a file or a socket must; bytes already in
/// memory need no copy, and that copy costs about as much as decoding them.
/// The cut is every receiver's (the same limit, the same positions, unknown
/// kinds skipped and counted unless asked for), so the frames, the counts
/// and every error, a stream cut inside a frame included, are what a
/// `FrameReader` over the same bytes gives.
///
/// ```
/// use dendro_wire_core::{ClockOffset, Frame};
/// use dendro_wire_std::{FrameWriter, SliceReader};
///
/// let mut w = FrameWriter::new(Vec::new())?;
/// w.write_frame(&Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 }))?;
/// let bytes = w.into_inner();
///
/// let mut r = SliceReader::new(&bytes)?;
/// assert!(matches!(r.next_frame()?, Some(Frame::ClockOffset(_))));
/// assert!(r.next_frame()?.is_none(), "a clean end");
///
/// let cut = &bytes[..bytes.len() - 1];
/// let mut r = SliceReader::new(cut)?;
/// assert!(r.next_frame().unwrap_err().to_string().contains("ends inside this frame"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SliceReader<'a> {
    /// The bytes not yet cut.
    rest: &'a [u8],
    cutter: Cutter,
}

impl fmt::Debug for SliceReader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SliceReader")
            .field("offset", &self.cutter.offset())
            .field("frames", &self.cutter.frames())
            .field("unknown", &self.cutter.unknown())
            .field("rest", &self.rest.len())
            .finish()
    }
}

impl<'a> SliceReader<'a> {
    /// Check the preamble, with the protocol's frame limit.
    pub fn new(bytes: &'a [u8]) -> Result<Self, ReadError> {
        Self::with_decoder(bytes, FrameDecoder::new())
    }

    /// Check the preamble; frames are decoded by `decoder`, and a length
    /// above its limit is refused.
    pub fn with_decoder(bytes: &'a [u8], decoder: FrameDecoder) -> Result<Self, ReadError> {
        let mut r = SliceReader {
            rest: bytes,
            cutter: Cutter::new(decoder),
        };
        // Before the preamble is read, a cut is the preamble or too little
        // to tell.
        match r.cutter.cut(r.rest)? {
            Cut::Need(needed) => r.cutter.end_of_stream(r.rest.len(), needed)?,
            Cut::Skip(n) | Cut::Frame(n, _) => r.rest = &r.rest[n..],
        }
        Ok(r)
    }

    /// Hand frames of unknown kinds to the caller as [`Frame::Unknown`]
    /// instead of skipping them. Either way they are counted in
    /// [`unknown`](Self::unknown).
    pub fn yield_unknown(mut self, yield_unknown: bool) -> Self {
        self.cutter.set_yield_unknown(yield_unknown);
        self
    }

    /// The next frame, or `None` at a clean end of stream.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'a>>, ReadError> {
        Ok(self.next_frame_at()?.map(|(frame, _)| frame))
    }

    /// [`next_frame`](Self::next_frame), with where the frame stood in the
    /// stream.
    pub fn next_frame_at(&mut self) -> Result<Option<(Frame<'a>, Position)>, ReadError> {
        loop {
            match self.cutter.cut(self.rest)? {
                Cut::Skip(n) => self.rest = &self.rest[n..],
                // All the bytes there are, are in hand.
                Cut::Need(needed) => {
                    self.cutter.end_of_stream(self.rest.len(), needed)?;
                    return Ok(None);
                }
                Cut::Frame(n, at) => {
                    let (frame, rest) = self.rest.split_at(n);
                    self.rest = rest;
                    return self.cutter.decode(frame, at).map(|frame| Some((frame, at)));
                }
            }
        }
    }

    /// Frames read so far, unknown ones included.
    pub fn frames(&self) -> u64 {
        self.cutter.frames()
    }

    /// Frames of an unknown kind met so far.
    pub fn unknown(&self) -> u64 {
        self.cutter.unknown()
    }

    /// Bytes of the stream cut so far, preamble included.
    pub fn offset(&self) -> u64 {
        self.cutter.offset()
    }
}
