//! What goes out next: the order frames are polled in (every handshake
//! first, then each source's index entry before its rows, rules 1 and 4),
//! taking one and recording that it went out, dropping what is still due,
//! and building the frames not held encoded (an `Index` entry, and a
//! connection's first `Rows` frame, rule 3).

use zerocopy::little_endian::{I64, U32, U64};

use super::error::PublishError;
use super::regions::Region;
use super::source::Source;
use super::{Publisher, Transmit};
use crate::codec::Out;
use crate::framing::FrameHead;
use crate::index::{IndexKind, IndexTail};
use crate::kind;
use crate::rows::{RowsBuilder, RowsHeader};
use crate::storage::Storage;
use crate::LENGTH_PREFIX_BYTES;

/// Where polling is: the handshakes of every source go before any other
/// frame, then each source's index entry and rows.
#[derive(Clone, Copy, Debug)]
pub(super) enum PollOrder {
    Handshakes(usize),
    Frames(usize),
    Idle,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Item {
    Handshake,
    Index(IndexKind),
    Rows,
}

/// Where a polled frame is: in the caller's buffer, or in a source's
/// storage, already encoded.
pub(super) enum Place {
    Buffer(usize),
    Stored(core::ops::Range<usize>),
}

impl<S: Storage, const SOURCES: usize> Publisher<S, SOURCES> {
    /// Drop every frame still due, counting it.
    pub(super) fn drop_due(&mut self) {
        for s in &mut self.sources {
            // The flags alone: what else `Due` holds is read only while
            // they are set.
            let due = s.due;
            (s.due.handshake, s.due.index, s.due.rows) = (false, None, false);
            let frames = u64::from(due.handshake) + u64::from(due.index.is_some());
            self.stats.frames_unsent += frames + u64::from(due.rows);
            if due.rows {
                self.stats.rows_unsent += u64::from(s.rows);
                s.reset_rows();
            }
        }
        self.order = PollOrder::Idle;
    }

    /// The next frame due, without taking it: its source, what it is, and
    /// its size.
    pub(super) fn peek(&mut self) -> Option<(usize, Item, usize)> {
        loop {
            match self.order {
                PollOrder::Handshakes(i) => match self.sources.get(i) {
                    Some(s) if s.due.handshake => {
                        return Some((i, Item::Handshake, s.regions.len(Region::Handshake)))
                    }
                    Some(_) => self.order = PollOrder::Handshakes(i + 1),
                    None => self.order = PollOrder::Frames(0),
                },
                PollOrder::Frames(i) => match self.sources.get(i) {
                    Some(s) => match (s.due.index, s.due.rows) {
                        (Some(kind), _) => return Some((i, Item::Index(kind), s.index_len(kind))),
                        (None, true) => return Some((i, Item::Rows, s.due.rows_len)),
                        (None, false) => self.order = PollOrder::Frames(i + 1),
                    },
                    None => self.order = PollOrder::Idle,
                },
                PollOrder::Idle => return None,
            }
        }
    }

    /// Take the frame [`peek`](Self::peek) found, of `len` bytes: build it
    /// into `buf` if it is not held encoded, and record that it went out.
    /// A `buf` too small for a frame built into it is refused, the frame
    /// still due.
    pub(super) fn take(
        &mut self,
        i: usize,
        item: Item,
        len: usize,
        buf: &mut [u8],
    ) -> Result<(Place, Transmit), PublishError> {
        let ended = self.interval.wrapping_sub(1);
        let source = i as u32;
        let s = self
            .sources
            .get_mut(i)
            .ok_or(PublishError::UnknownSource { source })?;
        let built = match item {
            Item::Handshake => false,
            Item::Index(_) => true,
            Item::Rows => s.due.opening,
        };
        if built && buf.len() < len {
            return Err(PublishError::BufferTooSmall {
                needed: len,
                have: buf.len(),
            });
        }
        let mut t = Transmit {
            len: 0,
            kind: kind::ROWS,
            source,
            rows: 0,
        };
        let place = match item {
            Item::Handshake => {
                s.due.handshake = false;
                s.sent.handshake = true;
                t.kind = kind::HANDSHAKE;
                Place::Stored(s.regions.range(Region::Handshake))
            }
            Item::Index(kind) => {
                let n = s.emit_index(source, kind, buf)?;
                s.due.index = None;
                s.clear_delta();
                if kind == IndexKind::Full {
                    s.sent.full = true;
                    s.intervals_since_full = 0;
                    s.delta_lost = false;
                }
                t.kind = kind::INDEX;
                Place::Buffer(n)
            }
            Item::Rows => {
                let place = if s.due.opening {
                    Place::Buffer(s.emit_opening(source, ended, buf)?)
                } else {
                    Place::Stored(s.regions.frame())
                };
                t.rows = s.due.rows_count;
                s.due.rows = false;
                s.sent.rows = true;
                s.reset_rows();
                self.stats.rows_sent += u64::from(t.rows);
                place
            }
        };
        t.len = match &place {
            Place::Buffer(n) => *n,
            Place::Stored(range) => range.len(),
        };
        self.stats.frames_sent += 1;
        Ok((place, t))
    }
}

impl<S: Storage> Source<S> {
    /// Where the blob of an entry of `kind` is kept.
    fn blob(&self, kind: IndexKind) -> core::ops::Range<usize> {
        match kind {
            IndexKind::Full => self.regions.range(Region::Full),
            IndexKind::Delta => self.regions.range(Region::Delta),
        }
    }

    fn index_len(&self, kind: IndexKind) -> usize {
        self.index_overhead + self.blob(kind).len()
    }

    /// The interval's entry of `kind`, written field by field as
    /// `Index::emit` writes it: that one takes the stream as a `&str`, and
    /// making one of the stored name is a UTF-8 check whose code and table
    /// were 600 bytes of a device's flash (the agent's, as `cargo xtask
    /// firmware` prints it). The name was a `&str` when it was declared;
    /// the golden tests hold the bytes to the encoder's.
    fn emit_index(
        &self,
        source: u32,
        kind: IndexKind,
        buf: &mut [u8],
    ) -> Result<usize, PublishError> {
        let shrank = PublishError::StorageShrank { source };
        let bytes = self.storage.bytes();
        let name = bytes
            .get(self.regions.range(Region::IndexName))
            .ok_or(shrank)?;
        let blob = bytes.get(self.blob(kind)).ok_or(shrank)?;
        let len = self.index_len(kind);
        let state = self.state();
        let mut out = Out::new(buf, 0);
        out.fixed(&FrameHead {
            len: U32::new((len - LENGTH_PREFIX_BYTES) as u32),
            kind: kind::INDEX,
        })?;
        out.u32(source)?;
        out.bytes(name)?;
        out.fixed(&IndexTail {
            ts: I64::new(self.due.stamp),
            kind: kind.to_byte(),
            state_0: U64::new(state.0),
            state_1: U64::new(state.1),
        })?;
        out.bytes(blob)?;
        match out.at() == len {
            true => Ok(len),
            false => Err(shrank),
        }
    }

    /// A connection's first `Rows` frame (rule 3): the latest row of every
    /// stream not observed in the interval that `ended`, then the
    /// interval's rows.
    fn emit_opening(&self, source: u32, ended: u64, buf: &mut [u8]) -> Result<usize, PublishError> {
        let shrank = PublishError::StorageShrank { source };
        let bytes = self.storage.bytes();
        let mut b = RowsBuilder::new(
            buf,
            RowsHeader {
                source,
                seq: self.due.seq,
                index_state: self.state(),
            },
        )?;
        for i in 0..self.streams {
            let rec = self.rec(i).ok_or(shrank)?;
            let len = rec.len.get() as usize;
            if len > 0 && rec.seen.get() != ended {
                let slot = self.regions.slot(rec.slot.get() as usize, 0, len);
                b.extend_encoded(bytes.get(slot).ok_or(shrank)?, 1)?;
            }
        }
        let rows = bytes.get(self.regions.frame_rows()).ok_or(shrank)?;
        b.extend_encoded(rows, self.rows)?;
        Ok(b.finish()?)
    }
}
