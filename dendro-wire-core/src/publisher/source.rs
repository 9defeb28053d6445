//! One declared source's state: its storage and the map of it, its `seq`
//! and index state, and what it owes and has sent on the connection.

use super::regions::{Region, Regions, RowCursor, StreamRec, REC, WORD};
use crate::codec::LEN_BYTES;
use crate::index::IndexKind;
use crate::index_state::{IndexState, SlotSetHash};
use crate::storage::Storage;

/// What a source owes the connection for the interval that ended.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Due {
    pub(super) handshake: bool,
    pub(super) index: Option<IndexKind>,
    /// The index entry is held encoded in [`Region::Entry`]: a slot
    /// changed after the interval ended and before it was polled.
    pub(super) index_encoded: bool,
    pub(super) rows: bool,
    /// The `Rows` frame is the connection's first (rule 3), built when
    /// polled.
    pub(super) opening: bool,
    pub(super) seq: u64,
    /// The index entry's `ts` (rule 5).
    pub(super) stamp: i64,
    /// The slot set's state as the interval ended: the entry's, and the
    /// rows'.
    pub(super) state: IndexState,
    /// The `Rows` frame's size, and its rows.
    pub(super) rows_len: usize,
    pub(super) rows_count: u32,
    /// The rows of those observed in the interval, not carried again by
    /// rule 3.
    pub(super) rows_observed: u32,
}

/// What has gone out for a source on this connection.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Sent {
    pub(super) handshake: bool,
    pub(super) full: bool,
    pub(super) rows: bool,
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
    /// The newest of the streams' latest rows, to stamp an entry sent in an
    /// interval that observed nothing (rule 5).
    pub(super) last_ts: i64,
    pub(super) streams: u32,
    /// The slots of every stream, the room kept for rule 3.
    pub(super) caps: usize,
    pub(super) seq: u64,
    pub(super) indexed: bool,
    /// An `Index` frame with an empty blob.
    pub(super) index_overhead: usize,
    pub(super) hash: SlotSetHash,
    /// `hash`'s state, kept as the slots change rather than hashed again
    /// every interval.
    pub(super) state: IndexState,
    pub(super) intervals_since_full: u64,
    /// The changes since the last entry were not all kept: a `Full`
    /// replaces the `Delta`.
    pub(super) delta_lost: bool,
    pub(super) sent: Sent,
    pub(super) due: Due,
}

impl<S: Storage> Source<S> {
    pub(super) fn state(&self) -> IndexState {
        self.state
    }

    pub(super) fn rec(&self, i: u32) -> Option<&StreamRec> {
        self.regions.record(self.storage.bytes(), i)
    }

    /// The place of the stream named `name`. A name of up to 12 bytes is
    /// found by its prepared word, one comparison a stream.
    pub(super) fn find_stream(&self, name: &[u8]) -> Option<u32> {
        let head = LEN_BYTES + name.len();
        if head > WORD {
            return (0..self.streams).find(|&i| self.stream_name(i) == Some(name));
        }
        let mut word = [0u8; WORD];
        word[..LEN_BYTES].copy_from_slice(&(name.len() as u32).to_le_bytes());
        word[LEN_BYTES..head].copy_from_slice(name);
        let table = self
            .storage
            .bytes()
            .get(self.regions.range(Region::Table))?;
        table
            .chunks_exact(REC)
            .position(|rec| rec.first_chunk::<WORD>() == Some(&word))
            .map(|i| i as u32)
    }

    fn stream_name(&self, i: u32) -> Option<&[u8]> {
        let rec = self.rec(i)?;
        let name = self
            .regions
            .slot(rec.slot.get() as usize, LEN_BYTES, rec.name());
        self.storage.bytes().get(name)
    }

    /// An empty frame under way.
    pub(super) fn reset_rows(&mut self) {
        self.regions.set_frame_len(crate::rows::ROWS_HEAD_BYTES);
        self.rows = 0;
    }

    /// Where the frame under way stands, for the row path.
    #[inline]
    pub(super) fn cursor(&self) -> RowCursor {
        self.regions.cursor(self.streams, self.rows, self.room)
    }

    /// The row path's cursor, written back.
    #[inline]
    pub(super) fn set_cursor(&mut self, cursor: &RowCursor) {
        self.regions.set_frame_len(cursor.at);
        self.rows = cursor.rows;
    }

    /// The held frame and an early entry are gone: the frame area moves
    /// down over them.
    pub(super) fn release_held(&mut self) {
        self.regions.release_held(self.storage.bytes_mut());
        let entry = self.regions.range(Region::Entry);
        // Shrinking moves bytes down and cannot fail on storage that held
        // them.
        let _ = self.regions.resize(
            &mut self.storage,
            0,
            Region::Entry,
            entry.start,
            entry.len(),
            0,
        );
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
