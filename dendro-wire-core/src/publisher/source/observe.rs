//! The rows the row path's short path does not take, and the short path
//! reached through the source: a row that takes neither is refused with
//! its reason, or written once its stream's slot or the storage has grown.

use super::Source;
use crate::codec::LEN_BYTES;
use crate::kind;
use crate::publisher::config::StreamId;
use crate::publisher::error::PublishError;
use crate::publisher::regions::Region;
use crate::publisher::row_path::{put_any, put_small, RowCursor};
use crate::publisher::stats::count;
use crate::rows::TAIL_BYTES;
use crate::storage::Storage;

impl<S: Storage> Source<S> {
    /// A row into the frame under way at `cursor` by the short path
    /// ([`put_small`]), if it takes it; `None`, having changed nothing
    /// `cursor` says, for any other row.
    #[inline(always)]
    pub(in crate::publisher) fn put_small(
        &mut self,
        cursor: &mut RowCursor,
        stream: u32,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Option<()> {
        put_small(
            self.storage.bytes_mut(),
            cursor,
            stream,
            ts,
            wall_offset,
            row,
        )
    }

    /// The row into the frame under way, if every bound holds.
    fn write_row(&mut self, stream: u32, ts: i64, wall_offset: i64, row: &[u8]) -> Option<()> {
        let pos = self.cursor();
        let pos = put_any(self.storage.bytes_mut(), pos, stream, ts, wall_offset, row)?;
        self.set_cursor(&pos);
        Some(())
    }

    /// A row [`put_small`] did not take: written by [`put_any`], or
    /// refused with the reason (and counted), or written once the stream's
    /// slot or the storage has grown.
    #[cold]
    #[inline(never)]
    pub(in crate::publisher) fn observe_slow(
        &mut self,
        limit: usize,
        stream: StreamId,
        (ts, wall_offset, row): (i64, i64, &[u8]),
    ) -> Result<(), PublishError> {
        let source = self.ordinal;
        let result = match stream.source == source {
            true => self.grow_for_row(limit, stream.index, (ts, wall_offset, row)),
            false => Err(PublishError::OtherSource {
                source,
                stream_source: stream.source,
            }),
        };
        count(&mut self.stats.rows_refused, u64::from(result.is_err()));
        result
    }

    fn grow_for_row(
        &mut self,
        limit: usize,
        stream: u32,
        (ts, wall_offset, row): (i64, i64, &[u8]),
    ) -> Result<(), PublishError> {
        let early = ts < self.floor;
        if !early && self.write_row(stream, ts, wall_offset, row).is_some() {
            return Ok(());
        }
        let (source, shrank) = (self.ordinal, self.shrank());
        if stream >= self.streams {
            return Err(PublishError::UnknownStream { source, stream });
        }
        if early {
            // Read by time, it would fall under the slots before the
            // change (rule 5): no stamp of the change's entry lies between
            // it and the rows before.
            return Err(PublishError::NotAfterSlotChange { source });
        }
        let rec = self.rec(stream).ok_or(shrank)?;
        let (slot, cap) = (rec.slot(), rec.cap());
        let len = LEN_BYTES + rec.name() + TAIL_BYTES + row.len();
        // The frame with this row, and the latest row of every stream with
        // this stream's as large as this row.
        let grown = len.saturating_sub(cap);
        let needed = self
            .regions
            .frame_len()
            .saturating_add(len)
            .saturating_add(self.caps)
            .saturating_add(grown);
        if needed > limit {
            return Err(PublishError::FrameTooLarge {
                source,
                kind: kind::ROWS,
                needed,
                limit,
            });
        }
        if grown > 0 {
            let at = self.regions.slot(slot, cap, 0).start;
            self.resize(Region::Latest, at, 0, grown)?;
            for i in 0..self.streams {
                let rec = self.regions.record_mut(self.storage.bytes_mut(), i);
                let rec = rec.ok_or(shrank)?;
                if i == stream {
                    rec.set_cap(len);
                } else if rec.slot() > slot {
                    rec.move_slot(grown);
                }
            }
            self.caps += grown;
            self.room = limit - self.caps;
        }
        self.ensure(self.regions.frame().end + len)?;
        self.write_row(stream, ts, wall_offset, row).ok_or(shrank)
    }
}
