//! The receiving side's one buffer: a stream's bytes as they arrive, cut into
//! frames by the core. [`FrameReader`](crate::FrameReader) drives it with
//! blocking reads and the server with async ones, so the growth policy, the
//! cut and the accounting are written once.
//!
//! Memory follows the bytes that arrived, never what a length prefix claims:
//! the buffer starts small and doubles only when it is full of received
//! bytes, so a peer that announces a 64 MiB frame and sends nothing costs
//! [`START`] bytes. The length is still checked against the limit before
//! anything else.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dendro_wire_core::{check_preamble, kind, Frame, FrameDecoder, Status, LENGTH_PREFIX_BYTES};

use crate::reader::{Position, ReadError, ReadErrorKind};

/// The size a buffer starts at.
pub(crate) const START: usize = 4 * 1024;

/// The most a buffer grows to for reading ahead, beyond what the frame in
/// hand needs: large enough that small frames arrive many to a read.
pub(crate) const READ_AHEAD: usize = 64 * 1024;

/// Memory shared by many connections' receive buffers, bounded.
///
/// A buffer asks it before growing; growth that a frame needs and the
/// budget cannot give ends that connection
/// ([`ReadErrorKind::MemoryBudget`]), while growth for reading ahead is
/// simply skipped. Buffers give their memory back when they shrink or drop.
///
/// ```
/// use dendro_wire_std::MemoryBudget;
///
/// let budget = MemoryBudget::new(1 << 20);
/// assert_eq!((budget.limit(), budget.in_use()), (1 << 20, 0));
/// ```
#[derive(Debug)]
pub struct MemoryBudget {
    limit: usize,
    in_use: AtomicUsize,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        MemoryBudget {
            limit,
            in_use: AtomicUsize::new(0),
        }
    }

    /// The bytes it allows in all.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The bytes held now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }

    /// Take `n` bytes, if that keeps within the limit.
    fn charge(&self, n: usize) -> bool {
        self.in_use
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    fn refund(&self, n: usize) {
        self.in_use.fetch_sub(n, Ordering::AcqRel);
    }
}

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
    decoder: FrameDecoder,
    preamble_read: bool,
    /// The stream offset of `buf[start]`.
    offset: u64,
    frames: u64,
    unknown: u64,
    yield_unknown: bool,
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
            decoder,
            preamble_read: false,
            offset: 0,
            frames: 0,
            unknown: 0,
            yield_unknown: false,
            budget,
            charged: 0,
        }
    }

    pub(crate) fn set_yield_unknown(&mut self, yield_unknown: bool) {
        self.yield_unknown = yield_unknown;
    }

    /// Check the preamble as its bytes arrive: `None` once it is read,
    /// else how many more bytes it needs.
    pub(crate) fn preamble(&mut self) -> Result<Option<usize>, ReadError> {
        if self.preamble_read {
            return Ok(None);
        }
        match check_preamble(self.buffered()) {
            Ok(Status::Complete(n)) => {
                self.consume(n);
                self.preamble_read = true;
                Ok(None)
            }
            Ok(Status::Incomplete { needed }) => Ok(Some(needed)),
            Err(e) => Err(ReadError::new(ReadErrorKind::Preamble(e), 0, 0)),
        }
    }

    /// The next frame whole in the buffer, consumed, or how many more bytes
    /// it needs. The preamble comes first. Unknown kinds are skipped here,
    /// and counted, unless asked for.
    pub(crate) fn next(&mut self) -> Result<Next, ReadError> {
        if let Some(needed) = self.preamble()? {
            return Ok(Next::Need(needed));
        }
        loop {
            let total = match self.decoder.frame_len(self.buffered()) {
                Ok(Status::Complete(total)) => total,
                Ok(Status::Incomplete { needed }) => return Ok(Next::Need(needed)),
                Err(e) => return Err(self.error(ReadErrorKind::Malformed(e))),
            };
            let have = self.end - self.start;
            if have < total {
                return Ok(Next::Need(total - have));
            }
            let start = self.start;
            let at = self.position();
            self.frames += 1;
            self.consume(total);
            if !kind::is_known(self.buf[start + LENGTH_PREFIX_BYTES]) {
                self.unknown += 1;
                if !self.yield_unknown {
                    continue;
                }
            }
            return Ok(Next::Frame(start..start + total, at));
        }
    }

    /// The frame at `range`, as [`next`](Self::next) handed it out, decoded
    /// in place; an error names it `at`.
    pub(crate) fn decode(&self, range: Range<usize>, at: Position) -> Result<Frame<'_>, ReadError> {
        let error = |kind| ReadError::new(kind, at.frame, at.offset);
        match self.decoder.decode(&self.buf[range]) {
            Ok(Status::Complete((frame, _))) => Ok(frame),
            // A whole frame was cut, so this does not happen; if it did, it
            // would be a truncation, said as one.
            Ok(Status::Incomplete { needed }) => {
                Err(error(ReadErrorKind::Truncated { needed, have: 0 }))
            }
            Err(e) => Err(error(ReadErrorKind::Malformed(e))),
        }
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
            if budget.charge(len.saturating_sub(self.charged)) {
                self.charged = self.charged.max(len);
            } else if budget.charge(least.saturating_sub(self.charged)) {
                self.charged = self.charged.max(least);
                target = least;
            } else {
                let (limit, in_use) = (budget.limit(), budget.in_use());
                return Err(self.error(ReadErrorKind::MemoryBudget {
                    needed: least,
                    in_use,
                    limit,
                }));
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
            if held > self.charged {
                budget
                    .in_use
                    .fetch_add(held - self.charged, Ordering::AcqRel);
            } else {
                budget.refund(self.charged - held);
            }
        }
        self.charged = held;
    }

    /// `n` bytes arrived in the room [`spare`](Self::spare) gave.
    pub(crate) fn filled(&mut self, n: usize) {
        self.end += n;
    }

    /// Whether [`release`](Self::release) would give memory back: nothing
    /// is buffered and the buffer has grown past its start.
    #[cfg(feature = "tokio")]
    pub(crate) fn can_release(&self) -> bool {
        self.start == self.end && self.buf.len() > START
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
        let have = self.end - self.start;
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

    /// Bytes received and not yet cut into a frame.
    #[cfg(feature = "tokio")]
    pub(crate) fn pending(&self) -> usize {
        self.end - self.start
    }

    /// Frames cut so far, unknown ones included.
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames of an unknown kind met so far.
    pub(crate) fn unknown(&self) -> u64 {
        self.unknown
    }

    /// Stream bytes received so far, preamble included.
    #[cfg(feature = "tokio")]
    pub(crate) fn received(&self) -> u64 {
        self.offset + (self.end - self.start) as u64
    }

    /// Stream bytes cut into the preamble and frames so far.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The buffer's size now.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Where the next frame starts.
    pub(crate) fn position(&self) -> Position {
        Position {
            frame: self.frames + 1,
            offset: self.offset,
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }

    pub(crate) fn error(&self, kind: ReadErrorKind) -> ReadError {
        let at = self.position();
        ReadError::new(kind, at.frame, at.offset)
    }
}

impl Drop for FrameBuffer {
    fn drop(&mut self) {
        if let Some(budget) = &self.budget {
            budget.refund(self.charged);
        }
    }
}
