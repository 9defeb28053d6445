//! One declared source's state: its storage and the map of it, its `seq`
//! and index state, and what it owes and has sent on the connection.

use super::regions::{Region, Regions};
use super::row_path::RowCursor;
use super::stats::SourceCounts;
use super::stream_rec::StreamRec;
use crate::codec::LEN_BYTES;
use crate::index_state::{IndexState, SlotSetHash};
use crate::storage::Storage;

/// Where a source stands on the connection.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct OnLink {
    /// Its handshake is due, polled before any other frame (rules 1, 8).
    pub(super) handshake_due: bool,
    /// Its handshake has gone out.
    pub(super) handshake_sent: bool,
    /// The connection's first `Rows` frame (rule 3) has been made due, and
    /// is in the queue or polled.
    pub(super) opening_due: bool,
    /// A `Rows` frame has been polled: a frame dropped after this is a gap
    /// the subscriber sees.
    pub(super) rows_sent: bool,
    /// The next index entry must be a `Full`: the connection's first
    /// (rule 2), or one after an entry was dropped.
    pub(super) full_needed: bool,
}

/// A declared source.
pub(super) struct Source<S> {
    pub(super) storage: S,
    pub(super) regions: Regions,
    /// The rows of the frame under way.
    pub(super) rows: u32,
    /// The most the frame under way may grow to: the frame buffer less the
    /// slots of every stream, which a connection's first `Rows` frame
    /// carries (rule 3).
    pub(super) room: usize,
    /// The newest of the streams' latest rows, to stamp an entry sent in a
    /// frame that carries no row (rule 5); meaningless until `observed`.
    pub(super) last_ts: i64,
    /// A row has been kept as a stream's latest.
    pub(super) observed: bool,
    pub(super) streams: u32,
    /// The slots of every stream, the room kept for rule 3.
    pub(super) caps: usize,
    /// The `seq` of the frame under way: every frame closed spends one.
    pub(super) seq: u64,
    /// The first `seq` whose rows were observed against the slots as they
    /// are: a stream's latest row observed before it is not carried again
    /// by rule 3, since the slot set it was observed against is gone
    /// (rule 9).
    pub(super) valid_from: u64,
    pub(super) indexed: bool,
    /// An `Index` frame with an empty blob.
    pub(super) index_overhead: usize,
    pub(super) hash: SlotSetHash,
    /// `hash`'s state, kept as the slots change rather than hashed again
    /// every interval.
    pub(super) state: IndexState,
    pub(super) intervals_since_full: u32,
    /// The changes since the last entry were not all kept: a `Full`
    /// replaces the `Delta`.
    pub(super) delta_lost: bool,
    pub(super) link: OnLink,
    /// The rows the connection's first `Rows` frame carries again
    /// (rule 3), not counted as observed in it.
    pub(super) repeated: u32,
    /// What this source has done.
    pub(super) stats: SourceCounts,
}

impl<S: Storage> Source<S> {
    pub(super) fn state(&self) -> IndexState {
        self.state
    }

    pub(super) fn rec(&self, i: u32) -> Option<&StreamRec> {
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
        RowCursor::new(&self.regions, self.streams, self.rows, self.room)
    }

    /// The row path's cursor, written back.
    #[inline(always)]
    pub(super) fn set_cursor(&mut self, cursor: &RowCursor) {
        self.regions.set_frame_len(cursor.at);
        self.rows = cursor.rows;
    }

    /// Forget the changes kept for the next `Delta`.
    pub(super) fn clear_delta(&mut self) {
        let delta = self.regions.range(Region::Delta);
        // Shrinking moves bytes down and cannot fail on storage that held
        // them.
        let _ = self.regions.resize(
            &mut self.storage,
            0,
            Region::Delta,
            delta.start,
            delta.len(),
            0,
        );
        self.delta_lost = false;
    }
}
