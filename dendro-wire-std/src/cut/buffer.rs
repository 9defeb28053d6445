//! The receiving side's one buffer: a stream's bytes as they arrive, cut
//! into frames by the [`Cutter`]. [`FrameReader`](crate::FrameReader)
//! drives it with blocking reads and a session with async ones, so the
//! growth policy, the cut and the accounting are written once.
//!
//! Memory follows the bytes that arrived, never what a length prefix claims:
//! the buffer starts small and doubles only when it is full of received
//! bytes, so a peer that announces a 64 MiB frame and sends nothing costs
//! [`START`] bytes. The length is still checked against the limit before
//! anything else.

use std::ops::Range;
use std::sync::Arc;

use dendro_wire_core::{Frame, FrameDecoder};

use super::budget::{MemoryBudget, READ_AHEAD};
use super::cutter::{Cut, Cutter};
use crate::read_error::{Position, ReadError, ReadErrorKind};

/// The size a buffer starts at.
pub(crate) const START: usize = 4 * 1024;

/// What the buffer holds next.
pub(crate) enum Next {
    /// A whole frame, consumed: where it lies in the buffer (length prefix
    /// included) and where it stood in the stream.
    Frame(Range<usize>, Position),
    /// At least this many more bytes must arrive.
    Need(usize),
}

/// A stream's receive buffer: the preamble, then frames, cut as they
/// arrive.
pub(crate) struct FrameBuffer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Its offset is the stream offset of `buf[start]`.
    cutter: Cutter,
    budget: Option<Arc<MemoryBudget>>,
    /// What this buffer holds of the budget: its capacity.
    charged: usize,
}

impl FrameBuffer {
    pub(crate) fn new(decoder: FrameDecoder, budget: Option<Arc<MemoryBudget>>) -> Self {
        FrameBuffer {
            buf: Vec::new(),
            start: 0,
            end: 0,
            cutter: Cutter::new(decoder),
            budget,
            charged: 0,
        }
    }

    pub(crate) fn set_yield_unknown(&mut self, yield_unknown: bool) {
        self.cutter.set_yield_unknown(yield_unknown);
    }

    /// Check the preamble as its bytes arrive: `None` once it is read,
    /// else how many more bytes it needs.
    pub(crate) fn preamble(&mut self) -> Result<Option<usize>, ReadError> {
        if self.cutter.preamble_read() {
            return Ok(None);
        }
        match self.cutter.cut(&self.buf[self.start..self.end])? {
            Cut::Need(needed) => Ok(Some(needed)),
            // Before the preamble is read, a cut is the preamble or too
            // little to tell.
            Cut::Skip(n) | Cut::Frame(n, _) => {
                self.start += n;
                Ok(None)
            }
        }
    }

    /// The next frame whole in the buffer, consumed, or how many more bytes
    /// it needs: the [`Cutter`]'s cut, with what it skips (the preamble,
    /// unknown kinds not asked for) consumed.
    pub(crate) fn next(&mut self) -> Result<Next, ReadError> {
        loop {
            match self.cutter.cut(&self.buf[self.start..self.end])? {
                Cut::Skip(n) => self.start += n,
                Cut::Need(needed) => return Ok(Next::Need(needed)),
                Cut::Frame(n, at) => {
                    let start = self.start;
                    self.start += n;
                    return Ok(Next::Frame(start..start + n, at));
                }
            }
        }
    }

    /// The frame at `range`, as [`next`](Self::next) handed it out, decoded
    /// in place; an error names it `at`.
    pub(crate) fn decode(&self, range: Range<usize>, at: Position) -> Result<Frame<'_>, ReadError> {
        self.cutter.decode(&self.buf[range], at)
    }

    /// A frame's bytes, length prefix included.
    pub(crate) fn bytes(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    /// Room to read into, for a frame (or the preamble) that needs `needed`
    /// more bytes: at least one byte. The buffer grows only when it is full
    /// of bytes that arrived, doubling from [`START`]: up to
    /// [`READ_AHEAD`] to read ahead, and past it only as far as the frame in
    /// hand reaches. A budget that cannot give what the frame needs is an
    /// error; read-ahead it cannot give is skipped.
    pub(crate) fn spare(&mut self, needed: usize) -> Result<&mut [u8], ReadError> {
        let have = self.end - self.start;
        let wanted = have + needed.max(1);
        if self.buf.len() - self.start < wanted && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = have;
        }
        if self.end == self.buf.len() {
            let len = self.buf.len();
            let doubled = (2 * len).max(START);
            // Growing, the bytes in hand are short of the frame: `wanted`
            // is above `len`, and so is every size here.
            let grown = doubled.min(wanted.max(READ_AHEAD));
            // What the frame needs at the least: this step towards holding it
            // whole.
            let least = wanted.min(grown);
            self.grow(grown, least)?;
        }
        Ok(&mut self.buf[self.end..])
    }

    /// Grow to `len`, or only to `least` if the budget cannot give `len`.
    fn grow(&mut self, len: usize, least: usize) -> Result<(), ReadError> {
        let mut target = len;
        if let Some(budget) = &self.budget {
            if budget.charge(self.charged, len).is_ok() {
                self.charged = self.charged.max(len);
            } else if let Err(most) = budget.charge(self.charged, least) {
                let (limit, in_use) = (budget.limit(), budget.in_use());
                return Err(self.error(ReadErrorKind::MemoryBudget {
                    needed: least,
                    most,
                    in_use,
                    limit,
                }));
            } else {
                self.charged = self.charged.max(least);
                target = least;
            }
        }
        self.buf.reserve_exact(target - self.buf.len());
        self.buf.resize(target, 0);
        self.settle();
        Ok(())
    }

    /// Make what the budget holds for this buffer its capacity, should the
    /// allocator have given or kept other than what was asked: that memory
    /// is held whether or not the budget agrees.
    fn settle(&mut self) {
        let held = self.buf.capacity();
        if let Some(budget) = &self.budget {
            budget.settle(self.charged, held);
        }
        self.charged = held;
    }

    /// `n` bytes arrived in the room [`spare`](Self::spare) gave: they are
    /// returned, for a caller that records what arrived.
    pub(crate) fn filled(&mut self, n: usize) -> &[u8] {
        let at = self.end;
        self.end += n;
        &self.buf[at..self.end]
    }

    /// Whether [`release`](Self::release) would give memory back: nothing
    /// is buffered and the buffer has grown past its start.
    #[cfg(feature = "tokio")]
    pub(crate) fn can_release(&self) -> bool {
        self.start == self.end && self.buf.len() > START
    }

    /// Give back what a large frame needed, once it is cut: the buffer
    /// keeps [`READ_AHEAD`] bytes, or what has arrived of the next frame if
    /// that is more. A connection holds a large frame's memory only while it
    /// sends one.
    #[cfg(feature = "tokio")]
    pub(crate) fn shrink(&mut self) {
        let have = self.end - self.start;
        let keep = have.max(READ_AHEAD);
        if self.buf.len() <= keep {
            return;
        }
        self.buf.copy_within(self.start..self.end, 0);
        self.start = 0;
        self.end = have;
        self.buf.truncate(keep);
        self.buf.shrink_to(keep);
        self.settle();
    }

    /// Give memory back while nothing is buffered: a connection that has
    /// gone quiet holds [`START`] bytes, whatever its largest frame was.
    #[cfg(feature = "tokio")]
    pub(crate) fn release(&mut self) {
        if self.can_release() {
            self.start = 0;
            self.end = 0;
            self.buf.truncate(START);
            self.buf.shrink_to(START);
            self.settle();
        }
    }

    /// The stream ended with `needed` more bytes wanted: a clean end at a
    /// frame boundary, else the frame (or preamble) in hand was truncated.
    pub(crate) fn end_of_stream(&self, needed: usize) -> Result<(), ReadError> {
        self.cutter.end_of_stream(self.end - self.start, needed)
    }

    /// Bytes received and not yet cut into a frame: what has arrived of
    /// the frame (or preamble) under way.
    #[cfg(feature = "tokio")]
    pub(crate) fn uncut(&self) -> usize {
        self.end - self.start
    }

    /// Frames cut so far, unknown ones included.
    pub(crate) fn frames(&self) -> u64 {
        self.cutter.frames()
    }

    /// Frames of an unknown kind met so far.
    pub(crate) fn unknown(&self) -> u64 {
        self.cutter.unknown()
    }

    /// Stream bytes received so far, preamble included.
    #[cfg(feature = "tokio")]
    pub(crate) fn received(&self) -> u64 {
        self.cutter.offset() + (self.end - self.start) as u64
    }

    /// The stream's bytes from `offset` to the last that arrived, if the
    /// buffer still holds them all.
    #[cfg(feature = "tokio")]
    pub(crate) fn since(&self, offset: u64) -> Option<&[u8]> {
        let back = self.cutter.offset().checked_sub(offset)?;
        let from = self.start.checked_sub(usize::try_from(back).ok()?)?;
        Some(&self.buf[from..self.end])
    }

    /// Stream bytes cut into the preamble and frames so far.
    pub(crate) fn offset(&self) -> u64 {
        self.cutter.offset()
    }

    /// The buffer's size now.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Where the next frame starts.
    #[cfg(feature = "tokio")]
    pub(crate) fn position(&self) -> Position {
        self.cutter.position()
    }

    /// An error placed at the next frame.
    pub(crate) fn error(&self, kind: ReadErrorKind) -> ReadError {
        self.cutter.error(kind)
    }
}

impl Drop for FrameBuffer {
    fn drop(&mut self) {
        if let Some(budget) = &self.budget {
            budget.settle(self.charged, 0);
        }
    }
}
