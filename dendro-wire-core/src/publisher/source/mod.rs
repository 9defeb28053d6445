//! One declared source: its storage and the map of it, its `seq` and index
//! state, and what it owes and has sent on the connection.
//!
//! [`Source`]'s fields are private to this folder, whose files each add
//! the methods of one part of its life: `declare` declaring it and
//! changing its identity, `interval` connections and closing frames,
//! `observe` the rows the row path does not take, `slots` its index slots
//! and entries, and `queue` its frames due, polled and dropped. The
//! [`Publisher`](crate::Publisher) only calls methods.

use core::ops::Range;

use super::error::PublishError;
use super::regions::{ensure, Region, Regions};
use super::row_path::RowCursor;
use super::stats::{count, SourceCounts};
use super::stream_rec::StreamRec;
use crate::codec::LEN_BYTES;
use crate::index_state::{IndexState, SlotSetHash};
use crate::storage::Storage;

mod declare;
mod interval;
mod observe;
mod queue;
mod slots;

/// Where a source stands on the connection.
#[derive(Clone, Copy, Debug, Default)]
struct OnLink {
    /// Its handshake is due, polled before any other frame (rules 1, 8).
    handshake_due: bool,
    /// Its handshake has gone out.
    handshake_sent: bool,
    /// The connection's first `Rows` frame (rule 3) has been made due, and
    /// is in the queue or polled.
    opening_due: bool,
    /// A `Rows` frame has been polled: a frame dropped after this is a gap
    /// the subscriber sees.
    rows_sent: bool,
    /// The next index entry must be a `Full`: the connection's first
    /// (rule 2), or one after an entry was dropped.
    full_needed: bool,
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

/// A declared source, as a publisher keeps it in its [`SourceTable`](crate::SourceTable)
/// (`PublisherSource` outside this crate: opaque, only held and moved).
///
/// Laid out by hand (`repr(C)`): the map of its
/// storage, its flags and its words first, where the short loads and
/// stores of a Cortex-M0 reach them (a byte's offset up to 31, a word's up
/// to 124; past them each access takes one more instruction), and the
/// counters, read rarely, last. `cargo xtask firmware` prints the
/// footprint.
#[repr(C)]
pub struct Source<S> {
    regions: Regions,
    link: OnLink,
    /// A row has been kept as a stream's latest.
    observed: bool,
    indexed: bool,
    /// The changes since the last entry were not all kept: a `Full`
    /// replaces the `Delta`.
    delta_lost: bool,
    /// The ordinal its frames carry: its place in declaration order.
    ordinal: u32,
    /// The rows of the frame under way.
    rows: u32,
    streams: u32,
    /// The rows the connection's first `Rows` frame carries again
    /// (rule 3), not counted as observed in it.
    repeated: u32,
    intervals_since_full: u32,
    /// `Rows` frames dropped (counted in `frames_dropped`) since the last
    /// one polled on the connection: a gap the subscriber sees only when
    /// a later one arrives. If the connection ends first they were never
    /// seen, and are counted as unsent instead.
    unseen_gap: u32,
    /// The low word of the `seq` of the last `Rows` frame polled on the
    /// connection: the frames between it and the next polled are the gap
    /// the next shows.
    polled_seq: u32,
    /// The most the frame under way may grow to: the frame buffer less the
    /// slots of every stream, which a connection's first `Rows` frame
    /// carries (rule 3).
    room: usize,
    /// The slots of every stream, the room kept for rule 3.
    caps: usize,
    /// An `Index` frame with an empty blob.
    index_overhead: usize,
    storage: S,
    /// `hash`'s state, kept as the slots change rather than hashed again
    /// every interval.
    state: IndexState,
    /// The `seq` of the frame under way: every frame closed spends one.
    seq: u64,
    /// The first `seq` whose rows were observed against the slots as they
    /// are: a stream's latest row observed before it is not carried again
    /// by rule 3, since the slot set it was observed against is gone
    /// (rule 9).
    valid_from: u64,
    hash: SlotSetHash,
    /// The newest `ts` of every row observed, kept by the row path, to
    /// stamp an entry sent in a frame that carries no row (rule 5) and to
    /// raise the floor at a slot change; `i64::MIN` until a row is.
    last_ts: i64,
    /// The earliest `ts` a row may be observed at: just after the newest
    /// row observed against an earlier slot set, once the slots changed
    /// after a row (`i64::MIN` until then). An entry that brings a slot
    /// set in is stamped here, after every row read against the one
    /// before it and at or before every row read against it, so that
    /// reading by time (rule 5) and by `index_state` (rule 9) agree; a
    /// row below it is refused ([`PublishError::NotAfterSlotChange`]).
    floor: i64,
    /// What this source has done.
    stats: SourceCounts,
}

impl<S: Storage> Source<S> {
    /// The ordinal its frames carry.
    pub(super) fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The source's index state now.
    pub(super) fn state(&self) -> IndexState {
        self.state
    }

    /// The storage it was lent.
    pub(super) fn storage(&self) -> &S {
        &self.storage
    }

    /// What this source has done.
    pub(super) fn counts(&self) -> &SourceCounts {
        &self.stats
    }

    /// A frame of this source encoded outside the queue (a passthrough, an
    /// update) went out.
    pub(super) fn count_sent(&mut self) {
        count(&mut self.stats.frames_sent, 1);
    }

    /// Its handshake has gone out on this connection (rule 1).
    pub(super) fn handshake_sent(&self) -> bool {
        self.link.handshake_sent
    }

    /// The stored bytes at `range`, as a poll found them.
    pub(super) fn stored(&self, range: Range<usize>) -> Option<&[u8]> {
        self.storage.bytes().get(range)
    }

    fn rec(&self, i: u32) -> Option<&StreamRec> {
        self.regions.record(self.storage.bytes(), i)
    }

    /// The place of the stream named `name`. A name of up to
    /// [`FAST_NAME_BYTES`](crate::FAST_NAME_BYTES) bytes is found by the
    /// head its record keeps, one comparison a stream.
    pub(super) fn find_stream(&self, name: &[u8]) -> Option<u32> {
        let table = self
            .storage
            .bytes()
            .get(self.regions.range(Region::Table))?;
        match StreamRec::find(table, name) {
            Ok(found) => found,
            Err(()) => (0..self.streams).find(|&i| self.stream_name(i) == Some(name)),
        }
    }

    fn stream_name(&self, i: u32) -> Option<&[u8]> {
        let rec = self.rec(i)?;
        let name = self.regions.slot(rec.slot(), LEN_BYTES, rec.name());
        self.storage.bytes().get(name)
    }

    /// Where the frame under way stands, for the row path.
    #[inline(always)]
    pub(super) fn cursor(&self) -> RowCursor {
        RowCursor::new(
            &self.regions,
            self.streams,
            self.rows,
            self.room,
            (self.floor, self.last_ts),
        )
    }

    /// The row path's cursor, written back.
    #[inline(always)]
    pub(super) fn set_cursor(&mut self, cursor: &RowCursor) {
        self.regions.set_frame_len(cursor.at);
        self.rows = cursor.rows;
        #[cfg(tracks_newest)]
        {
            self.last_ts = cursor.newest;
        }
    }

    /// Make the storage hold `len` bytes.
    fn ensure(&mut self, len: usize) -> Result<(), PublishError> {
        ensure(&mut self.storage, self.ordinal, len)
    }

    /// Resize `old` bytes at `at`, inside region `r`, to `new`
    /// ([`Regions::resize`]).
    fn resize(&mut self, r: Region, at: usize, old: usize, new: usize) -> Result<(), PublishError> {
        let source = self.ordinal;
        self.regions
            .resize(&mut self.storage, source, r, at, old, new)
    }

    /// The storage no longer holds what the map says it does.
    fn shrank(&self) -> PublishError {
        PublishError::StorageShrank {
            source: self.ordinal,
        }
    }

    /// Forget the changes kept for the next `Delta`.
    fn clear_delta(&mut self) {
        let delta = self.regions.range(Region::Delta);
        // Shrinking moves bytes down and cannot fail on storage that held
        // them.
        let _ = self.resize(Region::Delta, delta.start, delta.len(), 0);
        self.delta_lost = false;
    }
}
