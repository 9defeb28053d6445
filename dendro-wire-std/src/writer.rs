//! [`FrameWriter`]: the preamble once, then frames, to any `std::io::Write`.

use std::fmt;
use std::io::{self, Write};

use dendro_wire_core::{
    Error, Frame, FrameDecoder, Row, RowsBuilder, RowsHeader, Status, Storage, PREAMBLE,
};

use crate::growable::Growable;
use crate::owned::OwnedFrame;

/// Writes a dendro replication stream: the preamble when created, then
/// frames from views, owned frames, rows built in place, or bytes already
/// encoded ([`write_encoded`](Self::write_encoded): what a filter forwards).
///
/// Frames are encoded into one reusable buffer and written with one
/// `write_all` each; the writer does not buffer across frames, so wrap a
/// socket in a `BufWriter` when frames are small and many.
///
/// ```
/// use dendro_wire_core::{Frame, Row, RowsHeader, ClockOffset, NO_INDEX_STATE};
/// use dendro_wire_std::{FrameReader, FrameWriter, OwnedFrame};
///
/// let mut w = FrameWriter::new(Vec::new())?;
/// w.write_frame(&Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 0 }))?;
/// w.write_owned(&OwnedFrame::ClockOffset { source: 0, ts: 2, offset_ns: 0 })?;
/// let rows = (0..3).map(|i| Row { stream: "cpu/usage", ts: i, wall_offset: 0, row: &[0; 8] });
/// w.write_rows(RowsHeader { source: 0, seq: 0, index_state: NO_INDEX_STATE }, rows)?;
/// let bytes = w.into_inner();
///
/// let mut r = FrameReader::new(&bytes[..])?;
/// let mut n = 0;
/// while r.next_frame()?.is_some() { n += 1; }
/// assert_eq!(n, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FrameWriter<W: Write> {
    inner: W,
    buf: Vec<u8>,
    /// Where `Rows` frames are built, row by row.
    rows: Growable,
    frames: u64,
}

impl<W: Write> fmt::Debug for FrameWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameWriter")
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

/// Why a frame could not be written.
#[derive(Debug)]
#[non_exhaustive]
pub enum WriteError {
    /// The frame breaks a rule an encoder must keep (map key order, a
    /// canonical uuid, the frame size limit).
    Encode(Error),
    /// The transport failed.
    Io(io::Error),
    /// Bytes given as one encoded frame that are not exactly one: the length
    /// prefix claims another size.
    NotOneFrame {
        /// The bytes given.
        have: usize,
        /// The frame's size by its length prefix, prefix included.
        frame: usize,
    },
    /// Bytes given as one encoded frame that break a rule of the spec.
    Malformed(Error),
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Encode(e) | WriteError::Malformed(e) => write!(f, "{e}"),
            WriteError::Io(e) => write!(f, "the transport failed: {e}"),
            WriteError::NotOneFrame { have, frame } => write!(
                f,
                "{have} bytes given as one frame, and its length prefix says {frame}"
            ),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WriteError::Encode(e) | WriteError::Malformed(e) => Some(e),
            WriteError::Io(e) => Some(e),
            WriteError::NotOneFrame { .. } => None,
        }
    }
}

impl From<io::Error> for WriteError {
    fn from(e: io::Error) -> Self {
        WriteError::Io(e)
    }
}

impl From<Error> for WriteError {
    fn from(e: Error) -> Self {
        WriteError::Encode(e)
    }
}

impl<W: Write> FrameWriter<W> {
    /// Write the preamble.
    pub fn new(mut inner: W) -> Result<Self, WriteError> {
        inner.write_all(&PREAMBLE)?;
        Ok(FrameWriter {
            inner,
            buf: Vec::new(),
            rows: Growable::default(),
            frames: 0,
        })
    }

    /// Write one frame.
    pub fn write_frame(&mut self, frame: &Frame<'_>) -> Result<(), WriteError> {
        let len = frame.buffer_len()?;
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        let n = frame.emit(&mut self.buf)?;
        self.inner.write_all(&self.buf[..n])?;
        self.frames += 1;
        Ok(())
    }

    /// Write one frame already encoded, length prefix included (a frame a
    /// [`FrameReader`](crate::FrameReader) handed out with its bytes, say),
    /// as it is: checked first to be exactly one whole frame within the
    /// protocol's limit, of a known kind with every rule of the spec kept,
    /// or of a kind this build does not know (forwarded untouched, as §7
    /// asks of a relay).
    ///
    /// ```
    /// use dendro_wire_std::{FrameReader, FrameWriter};
    /// # let mut w = FrameWriter::new(Vec::new())?;
    /// # w.write_frame(&dendro_wire_std::Frame::ClockOffset(dendro_wire_std::ClockOffset { source: 0, ts: 1, offset_ns: 2 }))?;
    /// # let stream = w.into_inner();
    ///
    /// // A filter: every frame of source 0, forwarded untouched.
    /// let mut reader = FrameReader::new(&stream[..])?.yield_unknown(true);
    /// let mut out = FrameWriter::new(Vec::new())?;
    /// while let Some((frame, bytes)) = reader.next_frame_with_bytes()? {
    ///     if frame.source() == Some(0) {
    ///         out.write_encoded(bytes)?;
    ///     }
    /// }
    /// assert_eq!(out.into_inner(), stream);
    ///
    /// let mut w = FrameWriter::new(Vec::new())?;
    /// assert!(w.write_encoded(&stream[14..17]).is_err(), "a piece of a frame");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_encoded(&mut self, frame: &[u8]) -> Result<(), WriteError> {
        let decoder = FrameDecoder::new();
        check_one_frame(frame, &decoder)?;
        match decoder.decode(frame) {
            Ok(Status::Complete(_)) => {}
            // One whole frame by its length, so not incomplete.
            Ok(Status::Incomplete { needed }) => {
                return Err(WriteError::NotOneFrame {
                    have: frame.len(),
                    frame: frame.len() + needed,
                })
            }
            Err(e) => return Err(WriteError::Malformed(e)),
        }
        self.inner.write_all(frame)?;
        self.frames += 1;
        Ok(())
    }

    /// Write one owned frame.
    pub fn write_owned(&mut self, frame: &OwnedFrame) -> Result<(), WriteError> {
        frame.with_view(|view| self.write_frame(view))
    }

    /// Write a `Rows` frame built in place from `rows`, with no slice of them
    /// held anywhere: the buffer grows as rows need it.
    pub fn write_rows<'r>(
        &mut self,
        header: RowsHeader,
        rows: impl IntoIterator<Item = Row<'r>>,
    ) -> Result<(), WriteError> {
        let mut builder = RowsBuilder::new(&mut self.rows, header)?;
        for row in rows {
            builder.push(&row)?;
        }
        let n = builder.finish()?;
        self.inner.write_all(&self.rows.bytes()[..n])?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Flush the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The underlying writer, mutably (to set a socket option, say).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Give back the underlying writer.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

/// Check that `bytes` is exactly one frame by its length prefix: its length
/// within `decoder`'s limit and the bytes it claims all there, none more.
/// For [`FrameWriter::write_encoded`] and the codecs' encoders.
pub(crate) fn check_one_frame(bytes: &[u8], decoder: &FrameDecoder) -> Result<(), WriteError> {
    match decoder.frame_len(bytes) {
        Ok(Status::Complete(total)) if total == bytes.len() => Ok(()),
        Ok(Status::Complete(total)) => Err(WriteError::NotOneFrame {
            have: bytes.len(),
            frame: total,
        }),
        Ok(Status::Incomplete { needed }) => Err(WriteError::NotOneFrame {
            have: bytes.len(),
            frame: bytes.len() + needed,
        }),
        Err(e) => Err(WriteError::Malformed(e)),
    }
}
