//! The row hot path: a row observed is written into its source's frame
//! under way at once, behind its stream's name as encoded at declaration.
//! A short row on a short name takes [`put_small`], one fixed-size window
//! behind one bounds check; any other takes [`put_any`]; one neither takes
//! is refused with its reason, or written once its stream's slot or the
//! storage has grown ([`Source::observe_slow`]).

use zerocopy::little_endian::U32;
use zerocopy::FromBytes;

use super::config::StreamId;
use super::error::PublishError;
use super::regions::{ensure, Region, RowCursor, StreamRec, LAST_AT, REC, TAIL, WORD};
use super::source::Source;
use crate::codec::{copy_short, LEN_BYTES};
use crate::kind;
use crate::rows::{write_prepared_row, write_row_tail};
use crate::storage::Storage;

/// The bytes [`put_small`] may write a row into: a head (length prefix and
/// name) masked to 31 bytes, the fixed run, and room for the row's last
/// 16 bytes at an offset masked to 31.
const SMALL_ROW: usize = 2 * WORD - 1 + TAIL + 2 * WORD - 1 + 16;
/// The longest row [`put_small`] takes.
pub(super) const SMALL_ROW_BYTES: usize = 2 * WORD;

/// A row into a source's frame under way, behind its stream's name as
/// encoded at declaration, if the name has up to 12 bytes and the row up
/// to 32, as most do, and there is room for the most such a row takes: its
/// stream's record says whether it fits the slot (rule 3), and the row goes
/// into one window of fixed size, every move in it of a fixed size. `None`,
/// having changed nothing `pos` says, for any other row: the caller's slow
/// path takes it to [`put_any`] or says why it cannot be kept.
#[inline(always)]
pub(super) fn put_small(
    bytes: &mut [u8],
    pos: &mut RowCursor,
    stream: u32,
    ts: i64,
    wall_offset: i64,
    row: &[u8],
) -> Option<()> {
    if stream >= pos.streams {
        return None;
    }
    let rec_at = pos.record_at(stream);
    let rec = StreamRec::ref_from_bytes(bytes.get(rec_at..)?.first_chunk::<REC>()?).ok()?;
    let (word, name, small) = (rec.word, rec.name(), rec.small.get() as usize);
    let at = pos.at;
    // One comparison for both ends: an empty row wraps to a large number.
    if row.len().wrapping_sub(1) >= small || at + SMALL_ROW > pos.room {
        return None;
    }
    let window = bytes
        .get_mut(pos.in_frame(at)..)?
        .first_chunk_mut::<SMALL_ROW>()?;
    // At most a word: `small` is 0 for a longer name. Masked rather than
    // clamped, which is one instruction and keeps the window's offsets in
    // it.
    let head = (LEN_BYTES + name) & (2 * WORD - 1);
    *window.first_chunk_mut::<WORD>()? = u128::from_ne_bytes(word).to_ne_bytes();
    let (tail, rest) = window.get_mut(head..)?.split_first_chunk_mut::<TAIL>()?;
    write_row_tail(tail, ts, wall_offset, row.len());
    copy_small(rest.first_chunk_mut()?, row)?;
    let last_at = bytes.get_mut(rec_at + LAST_AT..)?.first_chunk_mut::<4>()?;
    *last_at = (at as u32).to_le_bytes();
    pos.at = at + head + TAIL + row.len();
    pos.rows += 1;
    Some(())
}

/// Any row into a source's frame under way, the name copied from the
/// front of its stream's slot; `None` if the stream is not one the row may
/// go on, its slot is too small for the row (rule 3), or the frame buffer
/// or the storage would be outgrown.
#[cold]
#[inline(never)]
fn put_any(
    bytes: &mut [u8],
    mut pos: RowCursor,
    stream: u32,
    ts: i64,
    wall_offset: i64,
    row: &[u8],
) -> Option<RowCursor> {
    if stream >= pos.streams {
        return None;
    }
    let (table, slots, frame) = pos.split(bytes)?;
    let rec_at = pos.record_at(stream);
    let rec = StreamRec::mut_from_bytes(table.get_mut(rec_at..rec_at + REC)?).ok()?;
    let head = LEN_BYTES + rec.name();
    let len = head + TAIL + row.len();
    let at = pos.at;
    if len > rec.cap.get() as usize || at + len > pos.room {
        return None;
    }
    let slot = rec.slot.get() as usize;
    let name = slots.get(slot..slot + head)?;
    write_prepared_row(frame.get_mut(at..)?, name, ts, wall_offset, row)?;
    rec.last_at = U32::new(at as u32);
    pos.at = at + len;
    pos.rows += 1;
    Some(pos)
}

/// A row of 1 to 32 bytes to the front of `dst`; from 16 bytes, as two
/// overlapping moves of 16 bytes. Words rather than `copy_from_slice`, whose copies the
/// compiler merged into one call to `memcpy` of a variable size, a third
/// of a row's time (the publisher machine's line of `cargo xtask
/// bench-report`); the second move's offset masked into `dst`, so that
/// no length needs checking here.
#[inline(always)]
fn copy_small(dst: &mut [u8; 2 * WORD - 1 + 16], row: &[u8]) -> Option<()> {
    let (Some(first), Some(last)) = (row.first_chunk::<16>(), row.last_chunk::<16>()) else {
        // Under 16 bytes (a sensor's reading, say): the codec's overlapping
        // moves for short runs, still no call to `memcpy`.
        return copy_short(dst.get_mut(..row.len())?, row);
    };
    let (first, last) = (u128::from_ne_bytes(*first), u128::from_ne_bytes(*last));
    let at = row.len().wrapping_sub(16) & (2 * WORD - 1);
    *dst.first_chunk_mut::<16>()? = first.to_ne_bytes();
    *dst.get_mut(at..)?.first_chunk_mut::<16>()? = last.to_ne_bytes();
    Some(())
}

impl<S: Storage> Source<S> {
    /// The row into the frame under way, if every bound holds.
    fn write_row(&mut self, stream: u32, ts: i64, wall_offset: i64, row: &[u8]) -> Option<()> {
        let pos = self.cursor();
        let pos = put_any(self.storage.bytes_mut(), pos, stream, ts, wall_offset, row)?;
        self.set_cursor(&pos);
        Some(())
    }

    /// A row [`put_small`] did not take, for source `source`'s rows (an
    /// [`Observer`](super::Observer)'s, or the one the stream names):
    /// written by [`put_any`], or refused with the reason (and counted),
    /// or written once the stream's slot or the storage has grown.
    #[cold]
    #[inline(never)]
    pub(super) fn observe_slow(
        &mut self,
        source: u32,
        limit: usize,
        stream: StreamId,
        (ts, wall_offset, row): (i64, i64, &[u8]),
    ) -> Result<(), PublishError> {
        let result = match stream.source == source {
            true => self.grow_for_row(source, limit, stream.index, (ts, wall_offset, row)),
            false => Err(PublishError::OtherSource {
                source,
                stream_source: stream.source,
            }),
        };
        self.stats.rows_refused += u64::from(result.is_err());
        result
    }

    fn grow_for_row(
        &mut self,
        source: u32,
        limit: usize,
        stream: u32,
        (ts, wall_offset, row): (i64, i64, &[u8]),
    ) -> Result<(), PublishError> {
        if self.write_row(stream, ts, wall_offset, row).is_some() {
            return Ok(());
        }
        if stream >= self.streams {
            return Err(PublishError::UnknownStream { source, stream });
        }
        let shrank = PublishError::StorageShrank { source };
        let rec = self.rec(stream).ok_or(shrank)?;
        let (slot, cap) = (rec.slot.get() as usize, rec.cap.get() as usize);
        let len = LEN_BYTES + rec.name() + TAIL + row.len();
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
            self.regions
                .resize(&mut self.storage, source, Region::Latest, at, 0, grown)?;
            for i in 0..self.streams {
                let rec = self.regions.record_mut(self.storage.bytes_mut(), i);
                let rec = rec.ok_or(shrank)?;
                if i == stream {
                    rec.set_cap(len);
                } else if rec.slot.get() as usize > slot {
                    rec.slot = U32::new(rec.slot.get() + grown as u32);
                }
            }
            self.caps += grown;
            self.room = limit - self.caps;
        }
        ensure(&mut self.storage, source, self.regions.frame().end + len)?;
        self.write_row(stream, ts, wall_offset, row).ok_or(shrank)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use crate::frame::{decode, Frame, Status};
    use crate::index_state::NO_INDEX_STATE;
    use crate::kind;
    use crate::map::Map;
    use crate::rows::{Row, RowsBuilder, RowsHeader};
    use crate::{Publisher, PublisherConfig, SourceDecl};

    /// Every row length around the fast path's bounds, on names shorter
    /// than, as long as, and longer than a word holds, whether the row
    /// grows its stream's slot, takes the fast path or the general one,
    /// and through both `Publisher::observe` and an `Observer`: the frame
    /// holds the bytes `RowsBuilder` writes for the same rows.
    #[test]
    fn every_row_and_name_length_is_written_as_the_builder_writes_it() {
        let names = [
            "a",
            "cpu/usage",
            "twelve-bytes",
            "thirteen-byte",
            "a-name-of-twenty-byt",
        ];
        for observer in [false, true] {
            let mut p: Publisher<[u8; 8192], 1> = Publisher::new(PublisherConfig::default());
            let decl = SourceDecl {
                uuid: None,
                labels: Map::EMPTY,
                metadata: Map::EMPTY,
                clock_anchor_wall_ns: 0,
                complete: false,
                streams: &names,
                index_stream: None,
            };
            let source = p.add_source(&decl, [0; 8192]).unwrap();
            let mut buf = [0u8; 4096];
            // Past the connection's opening, whose Rows frame also carries
            // the latest row of every stream.
            p.connected();
            p.end_interval();
            while p.poll_transmit(&mut buf).unwrap().is_some() {}
            for (i, name) in names.iter().enumerate() {
                // The first pass grows the stream's slot row by row; the
                // second finds it large enough.
                for pass in 0..2 {
                    let rows: Vec<Vec<u8>> = (0..=40u8)
                        .map(|n| (0..n).map(|b| b ^ n ^ pass).collect())
                        .collect();
                    let stream = source.stream(i as u32);
                    let each = |p: &mut Publisher<[u8; 8192], 1>| {
                        if observer {
                            let mut o = p.observer(source).unwrap();
                            for (n, row) in rows.iter().enumerate() {
                                o.observe(stream, n as i64, -(n as i64), row).unwrap();
                            }
                        } else {
                            for (n, row) in rows.iter().enumerate() {
                                p.observe(stream, n as i64, -(n as i64), row).unwrap();
                            }
                        }
                    };
                    each(&mut p);
                    p.end_interval();
                    let (got, t) = p.poll_transmit(&mut buf).unwrap().unwrap();
                    assert_eq!((t.kind, t.rows), (kind::ROWS, rows.len() as u32));
                    let got = got.to_vec();
                    let Ok(Status::Complete((Frame::Rows(frame), _))) = decode(&got) else {
                        panic!("{name}: a Rows frame");
                    };
                    let mut want = [0u8; 4096];
                    let mut b = RowsBuilder::new(
                        &mut want,
                        RowsHeader {
                            source: 0,
                            seq: frame.seq,
                            index_state: NO_INDEX_STATE,
                        },
                    )
                    .unwrap();
                    for (n, row) in rows.iter().enumerate() {
                        let (ts, wall_offset) = (n as i64, -(n as i64));
                        b.push(&Row {
                            stream: name,
                            ts,
                            wall_offset,
                            row,
                        })
                        .unwrap();
                    }
                    let len = b.finish().unwrap();
                    assert_eq!(
                        got,
                        &want[..len],
                        "{name}, pass {pass}, observer {observer}"
                    );
                    assert!(p.poll_transmit(&mut buf).unwrap().is_none());
                }
            }
        }
    }
}
