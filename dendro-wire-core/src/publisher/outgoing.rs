//! What goes out next: the order frames are polled in (every handshake
//! first, then each source's index entry before its rows, rules 1 and 4),
//! taking one and recording that it went out, dropping what is still due
//! (a frame not polled before the next interval ends is lost in transit:
//! its `seq` stays spent, rule 6), and building the frames not held
//! encoded (an `Index` entry, and a connection's first `Rows` frame,
//! rule 3).

use zerocopy::little_endian::{I64, U32, U64};

use super::error::PublishError;
use super::regions::Region;
use super::source::{Due, Source};
use super::stats::PublisherStats;
use super::{Publisher, Transmit, Waiting};
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
    /// Drop every frame still due, counting it as `why` says.
    pub(super) fn drop_due(&mut self, why: Dropped) {
        for s in &mut self.sources {
            s.drop_due(&mut self.stats, why);
        }
        self.order = PollOrder::Idle;
    }

    /// What is due and not yet polled, over every source.
    pub(super) fn waiting_now(&self) -> Waiting {
        let mut w = Waiting::default();
        for s in &self.sources {
            let due = &s.due;
            if due.handshake {
                w.frames += 1;
                w.bytes += s.regions.len(Region::Handshake);
            }
            if let Some(kind) = due.index {
                w.frames += 1;
                w.bytes += s.index_len(kind);
            }
            if due.rows {
                w.frames += 1;
                w.bytes += due.rows_len;
                w.rows += u64::from(due.rows_observed);
            }
        }
        w
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
            Item::Index(_) => !s.due.index_encoded,
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
                let place = if s.due.index_encoded {
                    // Encoded when a slot changed after the interval ended;
                    // the changes since are in the Delta region, kept.
                    s.due.index_encoded = false;
                    Place::Stored(s.regions.range(Region::Entry))
                } else {
                    let n = s.emit_index(source, kind, buf)?;
                    s.clear_delta();
                    Place::Buffer(n)
                };
                s.due.index = None;
                // What the Delta region lost before this entry was encoded,
                // the entry carries; `delta_lost` now says only what it
                // lost after.
                if kind == IndexKind::Full {
                    s.sent.full = true;
                    s.intervals_since_full = 0;
                }
                t.kind = kind::INDEX;
                place
            }
            Item::Rows => {
                let place = if s.due.opening {
                    Place::Buffer(s.emit_opening(source, ended, buf)?)
                } else {
                    Place::Stored(s.regions.held())
                };
                let due = s.due;
                t.rows = due.rows_count;
                s.due.rows = false;
                s.sent.rows = true;
                s.regions.polled_held();
                self.stats.rows_sent += u64::from(due.rows_observed);
                self.stats.rows_repeated += u64::from(due.rows_count - due.rows_observed);
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

/// Why frames still due are dropped, which says how they are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dropped {
    /// On a connection that goes on: the next interval ended before they
    /// were polled, or the caller dropped them. Each `Rows` frame's `seq`
    /// is spent, so a subscriber that has had one of its source's frames
    /// on the connection sees the gap (rule 6).
    Lost,
    /// The connection changed: they belong to no connection now.
    Unsent,
}

impl<S: Storage> Source<S> {
    /// Drop what is due, counting it as `why` says.
    pub(super) fn drop_due(&mut self, stats: &mut PublisherStats, why: Dropped) {
        let due = self.due;
        (self.due.handshake, self.due.index, self.due.rows) = (false, None, false);
        self.due.index_encoded = false;
        let frames = u64::from(due.handshake) + u64::from(due.index.is_some());
        let rows = u64::from(due.rows_observed);
        match (why, due.rows) {
            (_, false) => stats.frames_unsent += frames,
            (Dropped::Lost, true) => {
                // A connection's first Rows frame dropped shows no gap: the
                // subscriber has had none of this source's on it.
                let gap = u64::from(!due.opening);
                stats.frames_dropped += gap;
                stats.frames_unsent += frames + 1 - gap;
                stats.rows_dropped += rows;
            }
            (Dropped::Unsent, true) => {
                stats.frames_unsent += frames + 1;
                stats.rows_unsent += rows;
            }
        }
        if due.index_encoded {
            // The changes it carried are in no other entry: the next is a
            // Full.
            self.delta_lost = true;
        }
        self.release_held();
    }

    /// Where the blob of an entry of `kind` is kept.
    fn blob(&self, kind: IndexKind) -> core::ops::Range<usize> {
        match kind {
            IndexKind::Full => self.regions.range(Region::Full),
            IndexKind::Delta => self.regions.range(Region::Delta),
        }
    }

    /// The size of the entry due, of `kind`.
    fn index_len(&self, kind: IndexKind) -> usize {
        match self.due.index_encoded {
            true => self.regions.len(Region::Entry),
            false => self.index_overhead + self.blob(kind).len(),
        }
    }

    /// The interval's entry, due and not yet encoded, into the entry region
    /// before a slot changes under it; if the storage cannot hold it, the
    /// entry and the rows after it are dropped, lost in transit.
    pub(super) fn encode_entry_early(&mut self, source: u32, stats: &mut PublisherStats) {
        let Some(kind) = self.due.index else {
            return;
        };
        if self.due.index_encoded {
            return;
        }
        let len = self.index_len(kind);
        let entry = self.regions.range(Region::Entry);
        let regions = &mut self.regions;
        if regions
            .resize(
                &mut self.storage,
                source,
                Region::Entry,
                entry.start,
                entry.len(),
                len,
            )
            .is_err()
        {
            self.drop_due(stats, Dropped::Lost);
            return;
        }
        let entry = self.regions.range(Region::Entry);
        let bytes = self.storage.bytes_mut().split_at_mut_checked(entry.start);
        let written = bytes.and_then(|(front, rest)| {
            let buf = rest.get_mut(..len)?;
            let (regions, due) = (&self.regions, &self.due);
            Some(write_index(
                front,
                regions,
                due,
                source,
                kind,
                self.index_overhead,
                buf,
            ))
        });
        match written {
            Some(Ok(_)) => {
                self.due.index_encoded = true;
                self.clear_delta();
            }
            _ => self.drop_due(stats, Dropped::Lost),
        }
    }

    /// The interval's entry of `kind` into `buf`.
    fn emit_index(
        &self,
        source: u32,
        kind: IndexKind,
        buf: &mut [u8],
    ) -> Result<usize, PublishError> {
        let (regions, due) = (&self.regions, &self.due);
        write_index(
            self.storage.bytes(),
            regions,
            due,
            source,
            kind,
            self.index_overhead,
            buf,
        )
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
                index_state: self.due.state,
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
        let rows = bytes.get(self.regions.held_rows()).ok_or(shrank)?;
        b.extend_encoded(rows, self.due.rows_observed)?;
        Ok(b.finish()?)
    }
}

/// The interval's entry of `kind`, `due` says when and against what,
/// written into `buf` field by field as `Index::emit` writes it, from the
/// index name and blob in `bytes`: `Index::emit` takes the stream as a
/// `&str`, and making one of the stored name is a UTF-8 check whose code
/// and table were 600 bytes of a device's flash (the agent's, as `cargo
/// xtask firmware` prints it). The name was a `&str` when it was declared;
/// the golden tests hold the bytes to the encoder's.
fn write_index(
    bytes: &[u8],
    regions: &super::regions::Regions,
    due: &Due,
    source: u32,
    kind: IndexKind,
    overhead: usize,
    buf: &mut [u8],
) -> Result<usize, PublishError> {
    let shrank = PublishError::StorageShrank { source };
    let name = bytes.get(regions.range(Region::IndexName)).ok_or(shrank)?;
    let blob = match kind {
        IndexKind::Full => regions.range(Region::Full),
        IndexKind::Delta => regions.range(Region::Delta),
    };
    let blob = bytes.get(blob).ok_or(shrank)?;
    let len = overhead + blob.len();
    let mut out = Out::new(buf, 0);
    out.fixed(&FrameHead {
        len: U32::new((len - LENGTH_PREFIX_BYTES) as u32),
        kind: kind::INDEX,
    })?;
    out.u32(source)?;
    out.bytes(name)?;
    out.fixed(&IndexTail {
        ts: I64::new(due.stamp),
        kind: kind.to_byte(),
        state_0: U64::new(due.state.0),
        state_1: U64::new(due.state.1),
    })?;
    out.bytes(blob)?;
    match out.at() == len {
        true => Ok(len),
        false => Err(shrank),
    }
}
