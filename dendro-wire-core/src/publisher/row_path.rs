//! The row hot path: a row observed is written into its source's frame
//! under way at once, behind its stream's name as encoded at declaration.
//! A row of up to [`FAST_ROW_BYTES`](crate::FAST_ROW_BYTES) on a name of up to
//! [`FAST_NAME_BYTES`](crate::FAST_NAME_BYTES) takes [`put_small`], one fixed-size window behind
//! one bounds check; any other takes [`put_any`]; one neither takes is
//! refused with its reason, or written once its stream's slot or the
//! storage has grown (the source's `observe_slow`, `source/observe.rs`).

use super::regions::Regions;
use super::stream_rec::{StreamRec, REC};
use crate::codec::LEN_BYTES;
use crate::rows::{write_prepared_row, TAIL_BYTES};

/// Where a source's frame under way stands, as the row path reads it: the
/// regions it touches, the frame's size and rows, and the most it may grow
/// to. Kept in registers by an [`Observer`](super::Observer) across its
/// rows.
#[derive(Clone, Copy, Debug)]
pub(super) struct RowCursor {
    table_at: usize,
    slots_at: usize,
    frame_at: usize,
    /// The streams a row may go on.
    pub(super) streams: u32,
    /// The frame under way: its size so far, its rows, and the most it may
    /// grow to.
    pub(super) at: usize,
    pub(super) rows: u32,
    pub(super) room: usize,
    /// The earliest `ts` a row may take here; an earlier one goes to the
    /// slow path, which refuses it (the source's `floor`). Only the short
    /// path reads it.
    #[cfg(unaligned_words)]
    pub(super) floor: i64,
    /// The newest `ts` of every row the source has taken (its `last_ts`),
    /// where the row path keeps it ([`TRACKS_NEWEST`]).
    #[cfg(tracks_newest)]
    pub(super) newest: i64,
}

/// Whether the row path keeps a source's newest `ts` as rows are taken
/// (`build.rs`): on a 64-bit core a comparison a row, and the frame is
/// never walked for it, a quarter of the machine's time on the host
/// (`cargo xtask bench-report`); on a 32-bit one the comparison cost a
/// firmware's row path 12 to 16 instructions (`cargo xtask firmware`
/// counts them), and the frame is walked for it as it closes instead.
pub(super) const TRACKS_NEWEST: bool = cfg!(tracks_newest);

impl RowCursor {
    /// The map as the row path holds it across rows: where the records, the
    /// slots and the frame start, the frame's size and `rows`, and `room`,
    /// the most it may grow to. `streams` is the streams a row may go on,
    /// `floor` the earliest `ts` it may take, `newest` the newest taken.
    #[inline(always)]
    pub(super) fn new(
        regions: &Regions,
        streams: u32,
        rows: u32,
        room: usize,
        (_floor, _newest): (i64, i64),
    ) -> Self {
        RowCursor {
            table_at: regions.table_at(),
            slots_at: regions.slots_at(),
            frame_at: regions.frame_at(),
            streams,
            at: regions.frame_len(),
            rows,
            room,
            #[cfg(unaligned_words)]
            floor: _floor,
            #[cfg(tracks_newest)]
            newest: _newest,
        }
    }

    /// Where stream `stream`'s record starts in the storage.
    #[inline(always)]
    pub(super) fn record_at(&self, stream: u32) -> usize {
        self.table_at + stream as usize * REC
    }

    /// The storage split at the frame under way: everything before it (the
    /// records among it, at [`record_at`](Self::record_at)), and the frame
    /// onwards (its byte `at` at `at`).
    #[cfg(unaligned_words)]
    #[inline(always)]
    pub(super) fn split_at_frame<'a>(
        &self,
        bytes: &'a mut [u8],
    ) -> Option<(&'a mut [u8], &'a mut [u8])> {
        bytes.split_at_mut_checked(self.frame_at)
    }

    /// The storage split at the frame and at the slots: everything before
    /// the slots (the records among it, at [`record_at`](Self::record_at)),
    /// the slots onwards (a stream's slot at its [`StreamRec::slot`]), and
    /// the frame under way onwards (its byte `at` at `at`).
    #[inline(always)]
    pub(super) fn split<'a>(
        &self,
        bytes: &'a mut [u8],
    ) -> Option<(&'a mut [u8], &'a mut [u8], &'a mut [u8])> {
        let (front, frame) = bytes.split_at_mut_checked(self.frame_at)?;
        let (table, slots) = front.split_at_mut_checked(self.slots_at)?;
        Some((table, slots, frame))
    }
}

#[cfg(unaligned_words)]
pub(super) use words::put_small;

/// The short path, where the target moves unaligned words cheaply
/// (`build.rs`).
#[cfg(unaligned_words)]
mod words {
    use super::RowCursor;
    use crate::codec::{copy_short, last_of, LEN_BYTES};
    use crate::publisher::stream_rec::{StreamRec, FAST_ROW_BYTES, FAST_WINDOW_BYTES};
    use crate::rows::{write_row_tail, TAIL_BYTES};

    /// A row into a source's frame under way, behind its stream's name as
    /// encoded at declaration, if the name has up to
    /// [`FAST_NAME_BYTES`](crate::FAST_NAME_BYTES) and the row up to
    /// [`FAST_ROW_BYTES`](crate::FAST_ROW_BYTES), and there is room for the most such a row takes:
    /// its stream's record says whether it fits the slot (rule 3), and the
    /// row goes into one window of fixed size, every move in it a whole
    /// word. `None`, having changed nothing `pos` says, for any other row:
    /// the caller's slow path takes it to [`put_any`](super::put_any) or
    /// says why it cannot be kept.
    #[inline(always)]
    pub(crate) fn put_small(
        bytes: &mut [u8],
        pos: &mut RowCursor,
        stream: u32,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Option<()> {
        if stream >= pos.streams || ts < pos.floor {
            return None;
        }
        // The record before the frame, the window in it: borrowed apart.
        let (front, frame) = pos.split_at_frame(bytes)?;
        let rec = StreamRec::at_mut(front, pos.record_at(stream))?;
        let (head, small) = (LEN_BYTES + rec.name(), rec.small());
        let at = pos.at;
        // One comparison for both ends: an empty row wraps to a large number.
        if row.len().wrapping_sub(1) >= small || at + FAST_WINDOW_BYTES > pos.room {
            return None;
        }
        let window = frame
            .get_mut(at..)?
            .first_chunk_mut::<FAST_WINDOW_BYTES>()?;
        // The name's head in words of 16 bytes, as many as it takes; what they
        // write past it the fixed run overwrites. (`small` is 0 for a longer
        // name.)
        let words = rec.head().as_chunks::<16>().0;
        put_word(window.first_chunk_mut()?, words.first()?);
        if head > 16 {
            put_word(window.get_mut(16..)?.first_chunk_mut()?, words.get(1)?);
            if head > 32 {
                let last = last_of::<4>(rec.head())?;
                *window.get_mut(32..)?.first_chunk_mut::<4>()? = *last;
            }
        }
        let (tail, rest) = window
            .get_mut(head..)?
            .split_first_chunk_mut::<TAIL_BYTES>()?;
        write_row_tail(tail, ts, wall_offset, row.len());
        copy_small(rest.first_chunk_mut()?, row)?;
        rec.set_last_at(at);
        pos.at = at + head + TAIL_BYTES + row.len();
        pos.rows += 1;
        #[cfg(tracks_newest)]
        {
            pos.newest = pos.newest.max(ts);
        }
        Some(())
    }

    /// One word of 16 bytes into the front of `dst`: a move of registers, not
    /// a call to `memcpy`, which is what an array assignment of 16 bytes
    /// became on a Cortex-M built for size.
    #[inline(always)]
    fn put_word(dst: &mut [u8; 16], word: &[u8; 16]) {
        *dst = u128::from_ne_bytes(*word).to_ne_bytes();
    }

    /// A row of 1 to 32 bytes to the front of `dst`; from 16 bytes, as two
    /// overlapping moves of 16 bytes. Words rather than `copy_from_slice`,
    /// whose copies the compiler merged into one call to `memcpy` of a
    /// variable size, much of a row's time (`cargo xtask firmware` prints
    /// the instructions per row, `cargo xtask bench-report` the ratios).
    #[inline(always)]
    fn copy_small(dst: &mut [u8; FAST_ROW_BYTES], row: &[u8]) -> Option<()> {
        let (Some(first), Some(last)) = (row.first_chunk::<16>(), last_of::<16>(row)) else {
            // Under 16 bytes (a sensor's reading, say): the codec's overlapping
            // moves for short runs, still no call to `memcpy`.
            return copy_short(dst.get_mut(..row.len())?, row);
        };
        if row.len() == 16 {
            // One word is all of it.
            put_word(dst.first_chunk_mut()?, first);
            return Some(());
        }
        let at = row.len() - 16;
        put_word(dst.first_chunk_mut()?, first);
        put_word(dst.get_mut(at..)?.first_chunk_mut()?, last);
        Some(())
    }
}

/// Where unaligned words cost a byte at a time (`build.rs`), no short
/// path: every row goes the general way, through `memcpy`, the one copy of
/// it in a device's flash.
#[cfg(not(unaligned_words))]
#[inline(always)]
pub(super) fn put_small(
    _: &mut [u8],
    _: &mut RowCursor,
    _: u32,
    _: i64,
    _: i64,
    _: &[u8],
) -> Option<()> {
    None
}

/// Any row into a source's frame under way, the name copied from the
/// front of its stream's slot; `None` if the stream is not one the row may
/// go on, its slot is too small for the row (rule 3), or the frame buffer
/// or the storage would be outgrown.
#[cold]
#[inline(never)]
pub(super) fn put_any(
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
    let rec = StreamRec::of_mut(table.get_mut(rec_at..rec_at + REC)?)?;
    let head = LEN_BYTES + rec.name();
    let len = head + TAIL_BYTES + row.len();
    let at = pos.at;
    if len > rec.cap() || at + len > pos.room {
        return None;
    }
    let slot = rec.slot();
    let name = slots.get(slot..slot + head)?;
    write_prepared_row(frame.get_mut(at..)?, name, ts, wall_offset, row)?;
    rec.set_last_at(at);
    pos.at = at + len;
    pos.rows += 1;
    #[cfg(tracks_newest)]
    {
        pos.newest = pos.newest.max(ts);
    }
    Some(pos)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use crate::frame::{decode, Frame, Status};
    use crate::index_state::NO_INDEX_STATE;
    use crate::kind;
    use crate::rows::{Row, RowsBuilder, RowsHeader};
    use crate::{Publisher, PublisherConfig, SourceDecl};

    /// Sized by `SourceDecl::sizing`, a source takes every row of its
    /// budget on the short path, on names of 1 to 32 bytes, rows of 1 to
    /// 32, the worst interval first on every stream then all on the one
    /// with the longest name, while an interval's frames wait to be polled:
    /// declared with `add_source_for`, from its first row; with
    /// `add_source`, once each stream's slot has grown to its largest row.
    #[test]
    #[cfg(unaligned_words)]
    fn within_its_budget_every_row_takes_the_short_path() {
        let names = [
            "a",
            "env/rh",
            "power/rail3/milliamp",
            "a-stream-name-of-thirty-two-byte",
        ];
        for sized in [true, false] {
            for longest in 1..=names.len() {
                let streams = &names[..longest];
                for (largest_row, per_interval) in [(1, 1), (2, 4), (12, 7), (16, 3), (32, 9)] {
                    every_row_short(streams, largest_row, per_interval, sized);
                }
            }
        }
    }

    #[cfg(unaligned_words)]
    fn every_row_short(streams: &[&str], largest_row: usize, per_interval: usize, sized: bool) {
        let decl = SourceDecl {
            streams,
            ..SourceDecl::default()
        };
        let budget = crate::Budget::rows(largest_row, per_interval);
        let size = decl.sizing(&budget);
        let mut storage = std::vec![0u8; size.storage];
        let mut p: Publisher<&mut [u8], 1> = Publisher::new(PublisherConfig {
            full_every: 60,
            frame_buffer: size.frame_buffer,
        });
        let s = match sized {
            true => p.add_source_for(&decl, &budget, &mut storage[..]),
            false => p.add_source(&decl, &mut storage[..]),
        }
        .unwrap();
        p.connected();
        let mut buf = std::vec![0u8; size.frame_buffer];
        let row = std::vec![7u8; largest_row];
        if !sized {
            // Every stream's slot grown to its largest row first.
            let all: std::vec::Vec<u32> = (0..streams.len() as u32).collect();
            for chunk in all.chunks(per_interval) {
                for &i in chunk {
                    p.observe(s.stream(i), 0, 0, &row).unwrap();
                }
                p.end_interval();
                while p.poll_transmit(&mut buf).unwrap().is_some() {}
            }
        }
        for interval in 1..8i64 {
            for i in 0..per_interval {
                let stream = match interval == 1 && i < streams.len() {
                    true => i,
                    false => streams.len() - 1,
                } as u32;
                let src = p.source_at(s).unwrap();
                let mut cursor = src.cursor();
                let taken = src.put_small(&mut cursor, stream, interval, 0, &row);
                assert!(
                    taken.is_some(),
                    "{streams:?} rows of {largest_row}, {per_interval} an interval, sized \
                     {sized}: row {i} of interval {interval} took the slow path"
                );
                src.set_cursor(&cursor);
            }
            p.end_interval();
            if interval % 2 == 0 {
                while p.poll_transmit(&mut buf).unwrap().is_some() {}
            }
        }
        assert_eq!(p.stats().rows_refused, 0);
    }

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
                streams: &names,
                ..SourceDecl::default()
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
