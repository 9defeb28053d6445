//! [`Cutter`]: how a received stream is cut into the preamble and frames,
//! and [`Cut`], what each cut finds.

use dendro_wire_core::{check_preamble, kind, Frame, FrameDecoder, Status, LENGTH_PREFIX_BYTES};

use crate::read_error::{Position, ReadError, ReadErrorKind};

/// What the bytes at the front of a received stream are, as
/// [`Cutter::cut`] finds them.
pub(crate) enum Cut {
    /// The preamble, or a frame of an unknown kind skipped: consume this
    /// many bytes and cut again.
    Skip(usize),
    /// A whole frame of this many bytes, length prefix included, to consume
    /// and hand out; where it stood in the stream.
    Frame(usize, Position),
    /// At least this many more bytes must arrive.
    Need(usize),
}

/// How a received stream is cut into frames, in one place for every
/// receiver: the preamble first, then frames by their length prefix (checked
/// against the decoder's limit before anything else), each counted with its
/// position; unknown kinds skipped and counted unless asked for; a clean
/// end only at a frame boundary. It reads the bytes in hand and never holds
/// them, so [`FrameBuffer`](super::FrameBuffer) cuts its own buffer with it
/// and the tokio codecs a `BytesMut`; each consumes what a cut says before
/// cutting again.
#[derive(Debug, Default)]
pub(crate) struct Cutter {
    decoder: FrameDecoder,
    preamble_read: bool,
    /// The stream offset of the first byte not yet consumed.
    offset: u64,
    frames: u64,
    unknown: u64,
    yield_unknown: bool,
}

impl Cutter {
    pub(crate) fn new(decoder: FrameDecoder) -> Self {
        Cutter {
            decoder,
            ..Cutter::default()
        }
    }

    /// The decoder whose limit the cut enforces.
    #[cfg(feature = "tokio")]
    pub(crate) fn decoder(&self) -> &FrameDecoder {
        &self.decoder
    }

    pub(crate) fn set_yield_unknown(&mut self, yield_unknown: bool) {
        self.yield_unknown = yield_unknown;
    }

    /// What starts `buffered`, the bytes in hand not yet consumed. A
    /// [`Skip`](Cut::Skip) or a [`Frame`](Cut::Frame) is counted as consumed
    /// here: the caller must consume exactly that many bytes.
    pub(crate) fn cut(&mut self, buffered: &[u8]) -> Result<Cut, ReadError> {
        if !self.preamble_read {
            return match check_preamble(buffered) {
                Ok(Status::Complete(n)) => {
                    self.preamble_read = true;
                    self.offset += n as u64;
                    Ok(Cut::Skip(n))
                }
                Ok(Status::Incomplete { needed }) => Ok(Cut::Need(needed)),
                Err(e) => Err(ReadError::new(ReadErrorKind::Preamble(e), 0, 0)),
            };
        }
        let total = match self.decoder.frame_len(buffered) {
            Ok(Status::Complete(total)) => total,
            Ok(Status::Incomplete { needed }) => return Ok(Cut::Need(needed)),
            Err(e) => return Err(self.error(ReadErrorKind::Malformed(e))),
        };
        if buffered.len() < total {
            return Ok(Cut::Need(total - buffered.len()));
        }
        let at = self.position();
        self.frames += 1;
        self.offset += total as u64;
        if !kind::is_known(buffered[LENGTH_PREFIX_BYTES]) {
            self.unknown += 1;
            if !self.yield_unknown {
                return Ok(Cut::Skip(total));
            }
        }
        Ok(Cut::Frame(total, at))
    }

    /// A frame as [`cut`](Self::cut) handed it out (its bytes, length prefix
    /// included), decoded in place without reading its length again; an
    /// error names it `at`.
    pub(crate) fn decode<'a>(&self, frame: &'a [u8], at: Position) -> Result<Frame<'a>, ReadError> {
        self.decoder
            .decode_cut(frame)
            .map_err(|e| ReadError::new(ReadErrorKind::Malformed(e), at.frame, at.offset))
    }

    /// Whether the preamble has been read.
    pub(crate) fn preamble_read(&self) -> bool {
        self.preamble_read
    }

    /// The stream ended with `have` bytes in hand and `needed` more wanted
    /// (the last [`Cut::Need`]): a clean end at a frame boundary, else the
    /// frame (or preamble) in hand was truncated.
    pub(crate) fn end_of_stream(&self, have: usize, needed: usize) -> Result<(), ReadError> {
        if have == 0 && self.preamble_read {
            return Ok(());
        }
        let (frame, offset) = if self.preamble_read {
            (self.frames + 1, self.offset)
        } else {
            (0, 0)
        };
        Err(ReadError::new(
            ReadErrorKind::Truncated {
                needed: have + needed,
                have,
            },
            frame,
            offset,
        ))
    }

    /// Frames cut so far, unknown ones included.
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames of an unknown kind met so far.
    pub(crate) fn unknown(&self) -> u64 {
        self.unknown
    }

    /// Stream bytes cut into the preamble and frames so far.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Where the next frame starts.
    pub(crate) fn position(&self) -> Position {
        Position {
            frame: self.frames + 1,
            offset: self.offset,
        }
    }

    /// An error placed at the next frame.
    pub(crate) fn error(&self, kind: ReadErrorKind) -> ReadError {
        let at = self.position();
        ReadError::new(kind, at.frame, at.offset)
    }
}
