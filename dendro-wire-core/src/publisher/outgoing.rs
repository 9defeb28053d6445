//! What goes out next, and what is dropped. Every handshake due goes first
//! (rule 1), then each source's queue in order (its entries before the
//! rows they name, rule 4), the sources taken in turn as the
//! [`DropPolicy`] says. A frame not polled before the interval after its
//! own ends is lost in transit: its `seq` stays spent (rule 6), and so is
//! every frame after an entry lost with it, whose rows no subscriber could
//! match (rule 9).

use core::ops::Range;

use zerocopy::little_endian::{I64, U32, U64};

use super::bytes::{frame_len_at, le_u32};
use super::config::DropPolicy;
use super::error::PublishError;
use super::regions::{Region, Regions};
use super::source::Source;
use super::{Publisher, Transmit, Waiting};
use crate::codec::Out;
use crate::framing::FrameHead;
use crate::index::{IndexKind, IndexTail};
use crate::index_state::IndexState;
use crate::kind;
use crate::rows::ROWS_HEAD_BYTES;
use crate::storage::Storage;
use crate::LENGTH_PREFIX_BYTES;

/// Where a `Rows` frame's count of rows is, from its length prefix on.
const COUNT_AT: usize = ROWS_HEAD_BYTES - 4;

/// What a polled frame is: its source, whether it is the source's
/// handshake, and where its bytes are in the source's storage.
pub(super) struct Due {
    pub(super) source: usize,
    pub(super) handshake: bool,
    pub(super) range: Range<usize>,
}

impl<S: Storage, const SOURCES: usize> Publisher<S, SOURCES> {
    /// Drop every frame still due, counting it as `why` says.
    pub(super) fn drop_due(&mut self, why: Dropped) {
        for s in &mut self.sources {
            s.drop_queued(s.regions.unpolled(), why);
            if why == Dropped::Unsent {
                // A handshake stays due on a connection that goes on.
                s.stats.frames_unsent += u64::from(s.link.handshake_due);
            }
        }
    }

    /// What is due and not yet polled, over every source.
    pub(super) fn waiting_now(&self) -> Waiting {
        let mut w = Waiting::default();
        for s in &self.sources {
            if s.link.handshake_due {
                w.frames += 1;
                w.bytes += s.regions.len(Region::Handshake);
            }
            let unpolled = s.regions.unpolled();
            w.bytes += unpolled.len();
            let mut rows_sent = s.link.rows_sent;
            s.walk(unpolled, |kind, count| {
                w.frames += 1;
                if kind == kind::ROWS {
                    w.rows += u64::from(count - s.repeated_in(&mut rows_sent));
                }
            });
        }
        w
    }

    /// The next frame due, without taking it.
    pub(super) fn peek(&self) -> Option<Due> {
        let n = self.sources.len();
        if let Some(i) = self.sources.iter().position(|s| s.link.handshake_due) {
            let range = self.sources.get(i)?.regions.range(Region::Handshake);
            return Some(Due {
                source: i,
                handshake: true,
                range,
            });
        }
        // Under round robin the source that has lost the fewest frames goes
        // last, next in line to lose one, ties taken in turn: a slow link's
        // losses go round the sources.
        let first = match self.policy {
            DropPolicy::RoundRobin => self.turn,
            DropPolicy::DeclarationOrder => 0,
        };
        let lost = |s: &Source<S>| match self.policy {
            DropPolicy::RoundRobin => s.stats.frames_dropped,
            DropPolicy::DeclarationOrder => 0,
        };
        let mut next: Option<(usize, u64)> = None;
        // From `first` round to it, without a division.
        for i in (first..n).chain(0..first) {
            let Some(s) = self.sources.get(i) else {
                continue;
            };
            let unpolled = s.regions.unpolled();
            if !unpolled.is_empty() && next.is_none_or(|(_, most)| lost(s) > most) {
                next = Some((i, lost(s)));
            }
        }
        let (i, _) = next?;
        let s = self.sources.get(i)?;
        let unpolled = s.regions.unpolled();
        // Storage that shrank under the queue is found by `take`.
        let queued = s.storage.bytes().get(unpolled.clone());
        let len = queued.and_then(frame_len_at).unwrap_or(unpolled.len());
        Some(Due {
            source: i,
            handshake: false,
            range: unpolled.start..unpolled.start + len,
        })
    }

    /// Take the frame [`peek`](Self::peek) found: record that it went out,
    /// and say what it is.
    pub(super) fn take(&mut self, due: &Due) -> Result<Transmit, PublishError> {
        let source = due.source as u32;
        let s = self
            .sources
            .get_mut(due.source)
            .ok_or(PublishError::UnknownSource { source })?;
        let shrank = PublishError::StorageShrank { source };
        let frame = s.storage.bytes().get(due.range.clone()).ok_or(shrank)?;
        let mut t = Transmit {
            len: frame.len(),
            kind: kind::HANDSHAKE,
            source,
            rows: 0,
        };
        s.stats.frames_sent += 1;
        if due.handshake {
            s.link.handshake_due = false;
            s.link.handshake_sent = true;
            return Ok(t);
        }
        t.kind = *frame.get(LENGTH_PREFIX_BYTES).ok_or(shrank)?;
        if t.kind == kind::ROWS {
            t.rows = le_u32(frame.get(COUNT_AT..COUNT_AT + 4).ok_or(shrank)?);
            let mut rows_sent = s.link.rows_sent;
            let repeated = s.repeated_in(&mut rows_sent);
            s.link.rows_sent = true;
            s.stats.rows_sent += u64::from(t.rows - repeated);
            s.stats.rows_repeated += u64::from(repeated);
        }
        s.regions.polled(t.len);
        Ok(t)
    }
}

/// Why frames still due are dropped, which says how they are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dropped {
    /// On a connection that goes on: the interval after their own ended
    /// before they were polled, or the caller dropped them. Each `Rows`
    /// frame's `seq` is spent, so a subscriber that has had one of its
    /// source's frames on the connection sees the gap (rule 6).
    Lost,
    /// The connection changed: they belong to no connection now.
    Unsent,
}

impl<S: Storage> Source<S> {
    /// Call `f` with the kind and (for `Rows`) the row count of each frame
    /// queued in `range`, in order.
    pub(super) fn walk(&self, range: Range<usize>, mut f: impl FnMut(u8, u32)) {
        let Some(mut rest) = self.storage.bytes().get(range) else {
            return;
        };
        while let Some(len) = frame_len_at(rest) {
            let (Some(frame), Some(tail)) = (rest.get(..len), rest.get(len..)) else {
                return;
            };
            let kind = frame.get(LENGTH_PREFIX_BYTES).copied().unwrap_or(0);
            let count = frame.get(COUNT_AT..COUNT_AT + 4).map_or(0, le_u32);
            f(kind, if kind == kind::ROWS { count } else { 0 });
            rest = tail;
        }
    }

    /// The rows rule 3 repeated in the next `Rows` frame of the queue, given
    /// whether one was polled on the connection before it (`rows_sent`,
    /// which it then sets): only the connection's first repeats any.
    pub(super) fn repeated_in(&self, rows_sent: &mut bool) -> u32 {
        let first = !core::mem::replace(rows_sent, true);
        match first && self.link.opening_due {
            true => self.repeated,
            false => 0,
        }
    }

    /// The end of an interval: the frames made due before it began and
    /// still unpolled are lost in transit, and with them every frame after
    /// an entry or a connection's first `Rows` frame among them (their rows
    /// could no longer be matched, or would open the connection without
    /// rule 3); the polled frames' room is given back.
    pub(super) fn drop_earlier(&mut self) {
        let earlier = self.regions.unpolled_earlier();
        let mut all = false;
        let mut rows_sent = self.link.rows_sent;
        self.walk(earlier.clone(), |kind, _| {
            let opening = kind == kind::ROWS && !core::mem::replace(&mut rows_sent, true);
            all |= kind == kind::INDEX || (opening && self.link.opening_due);
        });
        let range = match all {
            true => self.regions.unpolled(),
            false => earlier,
        };
        self.drop_queued(range, Dropped::Lost);
        self.regions.release_polled(self.storage.bytes_mut());
    }

    /// Drop the frames queued in `range` (whole frames, the unpolled
    /// queue's front or all of it), counting them as `why` says.
    pub(super) fn drop_queued(&mut self, range: Range<usize>, why: Dropped) {
        let mut dropped = (0u64, 0u64, false);
        let mut rows_sent = self.link.rows_sent;
        self.walk(range.clone(), |kind, count| match kind {
            kind::ROWS => {
                dropped.0 += 1;
                dropped.1 += u64::from(count - self.repeated_in(&mut rows_sent));
            }
            _ => dropped.2 = true,
        });
        let (frames, rows, entries) = dropped;
        if self.link.opening_due && !self.link.rows_sent && frames > 0 {
            // The connection's first Rows frame went: the next is one again.
            self.link.opening_due = false;
        }
        if entries {
            // The subscriber may lack what they carried.
            self.link.full_needed = true;
        }
        let queued = frames + self.queued_entries(range.clone());
        let (gap, unseen) = match (why, self.link.rows_sent) {
            (Dropped::Lost, true) => (frames, queued - frames),
            _ => (0, queued),
        };
        self.stats.frames_dropped += gap;
        self.stats.frames_unsent += unseen;
        match why {
            Dropped::Lost => self.stats.rows_dropped += rows,
            Dropped::Unsent => self.stats.rows_unsent += rows,
        }
        self.regions.remove(self.storage.bytes_mut(), range);
    }

    /// The index entries queued in `range`.
    fn queued_entries(&self, range: Range<usize>) -> u64 {
        let mut n = 0;
        self.walk(range, |kind, _| n += u64::from(kind != kind::ROWS));
        n
    }

    /// A `Rows` frame of `rows` lost in transit before it was queued, a gap
    /// a subscriber sees if `seen`.
    pub(super) fn count_dropped_rows(&mut self, seen: bool, rows: u32) {
        match seen {
            true => self.stats.frames_dropped += 1,
            false => self.stats.frames_unsent += 1,
        }
        self.stats.rows_dropped += u64::from(rows);
    }

    /// The size of an entry of `kind` made now.
    pub(super) fn index_len(&self, kind: IndexKind) -> usize {
        let blob = match kind {
            IndexKind::Full => Region::Full,
            IndexKind::Delta => Region::Delta,
        };
        self.index_overhead + self.regions.len(blob)
    }
}

/// An index entry of `kind`, stamped `ts`, declaring `state`, written into
/// `buf` field by field as `Index::emit` writes it, from the index name and
/// blob in `bytes`: `Index::emit` takes the stream as a `&str`, and making
/// one of the stored name is a UTF-8 check whose code and table were 600
/// bytes of a device's flash (the agent's, as `cargo xtask firmware`
/// prints it). The name was a `&str` when it was declared; the golden
/// tests hold the bytes to the encoder's.
pub(super) fn write_index(
    bytes: &[u8],
    regions: &Regions,
    source: u32,
    (kind, ts, state): (IndexKind, i64, IndexState),
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
        ts: I64::new(ts),
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
