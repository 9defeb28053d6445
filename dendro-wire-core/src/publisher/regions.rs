//! The map of a source's [`Storage`]: where each region lies and how one
//! grows or shrinks. The only place that knows a byte offset in a storage;
//! every other part of the publisher asks [`Regions`] for a range.
//!
//! A source's storage holds, in this order, each region ending where the
//! next begins:
//!
//! ```text
//!   handshake    its Handshake frame, sent again on every connection
//!   index name   the index stream's name
//!   table        a `StreamRec` per stream
//!   latest       a slot per stream: its latest row, encoded as a frame
//!                carries it, which starts with its prepared name
//!   full         the slots, sorted by key: `u32 len | key | u32 len | value`
//!                each, the Full blob and the slot bytes SlotSetHash hashes
//!   delta        the changes since the last entry, sorted by key:
//!                `u32 len | key | u8 present [| u32 len | value]` each, the
//!                Delta blob
//! ```
//!
//! and then the frame area: the queue, every frame due (its index entries
//! and `Rows` frames, whole and encoded, in the order they are polled),
//! then the `Rows` frame under way, its head and then its rows. The
//! regions grow rarely; the frame under way grows with every row, and
//! comes last so that growing it moves nothing. On a link that keeps up,
//! the queue is polled empty before the next row arrives and the frame
//! under way starts where it started; only rows observed while frames
//! wait are written after them, and moved down once they are gone.

use core::ops::Range;

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::error::PublishError;
use crate::codec::{copy, LEN_BYTES};
use crate::rows::{ROWS_HEAD_BYTES, TAIL_BYTES};
use crate::storage::Storage;
use crate::LENGTH_PREFIX_BYTES;

/// A region of a source's storage, in storage order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Region {
    Handshake = 0,
    IndexName,
    Table,
    Latest,
    Full,
    Delta,
}

const REGIONS: usize = 6;

/// Where each region of a source's storage ends, and how the frame area
/// after them is taken: the queue of frames due, and the `Rows` frame under
/// way after it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Regions {
    ends: [usize; REGIONS],
    /// The queue's bytes: whole frames, each its length prefix first.
    queue: usize,
    /// Of the queue, the bytes polled, at its front.
    polled: usize,
    /// Of the queue, the bytes made due before the interval under way
    /// began: what its end drops if they are still unpolled.
    earlier: usize,
    /// The bytes of the `Rows` frame under way, its head included.
    frame_len: usize,
}

impl Regions {
    /// The map of a source just declared: a handshake of `handshake` bytes,
    /// an index stream name of `index_name`, `streams` records, their slots
    /// taking `latest` bytes, no slots, and an empty frame.
    pub(super) fn new(handshake: usize, index_name: usize, streams: usize, latest: usize) -> Self {
        let mut ends = [0; REGIONS];
        ends[Region::Handshake as usize] = handshake;
        ends[Region::IndexName as usize] = handshake + index_name;
        ends[Region::Table as usize] = ends[Region::IndexName as usize] + streams * REC;
        ends[Region::Latest as usize] = ends[Region::Table as usize] + latest;
        ends[Region::Full as usize] = ends[Region::Latest as usize];
        ends[Region::Delta as usize] = ends[Region::Latest as usize];
        Regions {
            ends,
            queue: 0,
            polled: 0,
            earlier: 0,
            frame_len: ROWS_HEAD_BYTES,
        }
    }

    /// Where region `r` lies.
    #[inline]
    pub(super) fn range(&self, r: Region) -> Range<usize> {
        let r = r as usize;
        let start = if r == 0 { 0 } else { self.ends[r - 1] };
        start..self.ends[r]
    }

    /// Where byte `at` of region `r` is in the storage.
    #[inline]
    pub(super) fn offset(&self, r: Region, at: usize) -> usize {
        self.range(r).start + at
    }

    /// Region `r`'s size.
    #[inline]
    pub(super) fn len(&self, r: Region) -> usize {
        self.range(r).len()
    }

    /// Where stream `i`'s record lies; [`Region::Table`] holds it only if
    /// the source has that many streams.
    #[inline]
    fn record_range(&self, i: u32) -> Range<usize> {
        let at = self.ends[Region::IndexName as usize] + i as usize * REC;
        at..at + REC
    }

    /// Stream `i`'s record, if the source has one.
    pub(super) fn record<'a>(&self, bytes: &'a [u8], i: u32) -> Option<&'a StreamRec> {
        let range = self.record_range(i);
        if range.end > self.ends[Region::Table as usize] {
            return None;
        }
        StreamRec::ref_from_bytes(bytes.get(range)?).ok()
    }

    /// Stream `i`'s record, to change.
    pub(super) fn record_mut<'a>(&self, bytes: &'a mut [u8], i: u32) -> Option<&'a mut StreamRec> {
        let range = self.record_range(i);
        if range.end > self.ends[Region::Table as usize] {
            return None;
        }
        StreamRec::mut_from_bytes(bytes.get_mut(range)?).ok()
    }

    /// The `len` bytes of a stream's slot that starts `slot` bytes into
    /// [`Region::Latest`] (its [`StreamRec::slot`]), from `from` on.
    #[inline]
    pub(super) fn slot(&self, slot: usize, from: usize, len: usize) -> Range<usize> {
        let at = self.ends[Region::Table as usize] + slot + from;
        at..at + len
    }

    /// The handshake, index name, table and latest regions of a source
    /// being declared, each to write.
    pub(super) fn declared<'a>(&self, bytes: &'a mut [u8]) -> Option<Declared<'a>> {
        let ends = &self.ends;
        let region = bytes.get_mut(..ends[Region::Latest as usize])?;
        let (handshake, rest) = region.split_at_mut_checked(ends[Region::Handshake as usize])?;
        let (index_name, rest) = rest.split_at_mut_checked(self.len(Region::IndexName))?;
        let (table, latest) = rest.split_at_mut_checked(self.len(Region::Table))?;
        Some(Declared {
            handshake,
            index_name,
            table,
            latest,
        })
    }

    /// The table, the slots onwards (a stream's slot at its
    /// [`StreamRec::slot`]) and the frame under way onwards (its byte `at`
    /// at `at`), apart, for a frame's close to copy each stream's latest
    /// row into its slot.
    pub(super) fn latest_and_frame<'a>(
        &self,
        bytes: &'a mut [u8],
    ) -> Option<(&'a mut [u8], &'a mut [u8], &'a [u8])> {
        let (front, frame) = bytes.split_at_mut_checked(self.frame_at())?;
        let (front, latest) = front.split_at_mut_checked(self.ends[Region::Table as usize])?;
        let table = front.get_mut(self.ends[Region::IndexName as usize]..)?;
        Some((table, latest, frame))
    }

    /// Where the frame area starts: the queue, then the frame under way.
    #[inline]
    pub(super) fn area_at(&self) -> usize {
        self.ends[Region::Delta as usize]
    }

    /// The queue's frames not yet polled.
    #[inline]
    pub(super) fn unpolled(&self) -> Range<usize> {
        self.area_at() + self.polled..self.area_at() + self.queue
    }

    /// Of the queue's frames not yet polled, those made due before the
    /// interval under way began.
    #[inline]
    pub(super) fn unpolled_earlier(&self) -> Range<usize> {
        let from = self.area_at() + self.polled;
        from..(self.area_at() + self.earlier).max(from)
    }

    /// The next frame to poll, `len` bytes, has gone. If it was the last
    /// and no row waits behind it, the frame area is free again: the next
    /// frame starts at its front, and nothing moves.
    #[inline]
    pub(super) fn polled(&mut self, len: usize) {
        self.polled += len;
        if self.polled >= self.queue && self.frame_len == ROWS_HEAD_BYTES {
            (self.queue, self.polled, self.earlier) = (0, 0, 0);
        }
    }

    /// Where the `Rows` frame under way starts.
    #[inline]
    pub(super) fn frame_at(&self) -> usize {
        self.area_at() + self.queue
    }

    /// The `Rows` frame under way, head included.
    #[inline]
    pub(super) fn frame(&self) -> Range<usize> {
        self.frame_at()..self.frame_at() + self.frame_len
    }

    /// The bytes of the frame under way, head included.
    #[inline]
    pub(super) fn frame_len(&self) -> usize {
        self.frame_len
    }

    /// The frame under way is now `len` bytes.
    #[inline]
    pub(super) fn set_frame_len(&mut self, len: usize) {
        self.frame_len = len;
    }

    /// The bytes the storage holds for the source: every region, the queue,
    /// and the frame under way, whose head is left out while it is empty
    /// behind frames due (the storage need not hold it until a row arrives
    /// or they go).
    #[inline]
    pub(super) fn end(&self) -> usize {
        match self.queue > 0 && self.frame_len == ROWS_HEAD_BYTES {
            true => self.frame_at(),
            false => self.frame_at() + self.frame_len,
        }
    }

    /// `len` bytes written at the frame under way's place are frames due
    /// now, at the queue's end; an empty frame starts after them.
    pub(super) fn enqueue(&mut self, len: usize) {
        self.queue += len;
        self.frame_len = ROWS_HEAD_BYTES;
    }

    /// The frame under way is dropped: an empty one in its place.
    pub(super) fn discard_frame(&mut self) {
        self.frame_len = ROWS_HEAD_BYTES;
    }

    /// An interval ended: every frame in the queue now counts as made due
    /// before the interval under way.
    pub(super) fn interval_ended(&mut self) {
        self.earlier = self.queue;
    }

    /// Remove `range` of the queue's unpolled frames (whole frames at its
    /// front or its end, or all of it): what follows moves down over them.
    pub(super) fn remove(&mut self, bytes: &mut [u8], range: Range<usize>) {
        let area = self.area_at();
        let (from, n) = (range.start.saturating_sub(area), range.len());
        if n == 0 {
            return;
        }
        move_bytes(bytes, range.end..self.end(), range.start);
        self.queue -= n;
        if self.earlier > from {
            self.earlier = self.earlier.saturating_sub(n).max(from);
        }
    }

    /// The polled frames are gone: what follows them moves down to the
    /// frame area's start (nothing moves if nothing is left after them but
    /// an empty frame under way).
    pub(super) fn release_polled(&mut self, bytes: &mut [u8]) {
        if self.polled == 0 {
            return;
        }
        let area = self.area_at();
        if self.frame_len > ROWS_HEAD_BYTES || self.polled < self.queue {
            move_bytes(bytes, area + self.polled..self.end(), area);
        }
        self.queue -= self.polled;
        self.earlier = self.earlier.saturating_sub(self.polled);
        self.polled = 0;
    }

    /// The map as the row path holds it across rows: where the records, the
    /// slots and the frame start, the frame's size and rows, and the most
    /// it may grow to. `streams` is the streams a row may go on.
    #[inline(always)]
    pub(super) fn cursor(&self, streams: u32, rows: u32, room: usize) -> RowCursor {
        RowCursor {
            table_at: self.ends[Region::IndexName as usize],
            slots_at: self.ends[Region::Table as usize],
            frame_at: self.frame_at(),
            streams,
            at: self.frame_len,
            rows,
            room,
        }
    }

    /// Resize `old` bytes at `at`, inside region `r`, to `new`: what follows
    /// moves, the frame under way included, and `r` and every region after
    /// it end that much later or earlier. Nothing changes on an error.
    pub(super) fn resize<S: Storage>(
        &mut self,
        storage: &mut S,
        source: u32,
        r: Region,
        at: usize,
        old: usize,
        new: usize,
    ) -> Result<(), PublishError> {
        if old == new {
            // Nothing moves: without this, every interval's end would move
            // the frame under way onto itself (an early entry, or a Delta,
            // emptied when it was already empty).
            return Ok(());
        }
        let end = self.end();
        let new_end = end - old + new;
        if new > old {
            ensure(storage, source, new_end)?;
        }
        let bytes = storage.bytes_mut();
        if bytes.len() < end.max(new_end) || at + old > end {
            return Err(PublishError::StorageShrank { source });
        }
        move_bytes(bytes, at + old..end, at + new);
        for e in &mut self.ends[r as usize..] {
            *e = *e + new - old;
        }
        Ok(())
    }
}

/// The regions of a source being declared, apart.
pub(super) struct Declared<'a> {
    pub(super) handshake: &'a mut [u8],
    pub(super) index_name: &'a mut [u8],
    pub(super) table: &'a mut [u8],
    pub(super) latest: &'a mut [u8],
}

/// Make `storage` hold `len` bytes.
pub(super) fn ensure<S: Storage>(
    storage: &mut S,
    source: u32,
    len: usize,
) -> Result<(), PublishError> {
    if storage.grow(len) {
        Ok(())
    } else {
        Err(PublishError::StorageFull {
            source,
            needed: len,
            have: storage.bytes().len(),
        })
    }
}

/// Where a source's frame under way stands, as the row path reads it: the
/// regions it touches, the frame's size and rows, and the most it may grow
/// to. Kept in registers by an [`Observer`](super::Observer) across its
/// rows; made only by [`Regions::cursor`].
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
}

impl RowCursor {
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

/// One stream's record in its source's table: all a row on it reads, in one
/// place. 64 bytes, so that a record's place is a shift.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct StreamRec {
    /// The name as a row carries it — length prefix, then bytes — padded
    /// with zeros, or its first [`HEAD`] bytes if longer: a name of up to
    /// [`FAST_NAME_BYTES`] is copied into a row from here in whole words.
    /// Its first four bytes are the name's length.
    pub(super) head: [u8; HEAD],
    /// Its slot's size: the largest row seen, encoded, and never less than
    /// the name and an empty row.
    pub(super) cap: U32,
    /// The longest row the row path's short path takes on this stream: up
    /// to [`FAST_ROW_BYTES`] that fit its slot, on a name of up to
    /// [`FAST_NAME_BYTES`]; 0 on a longer name.
    pub(super) small: U32,
    /// Where this frame's last row of the stream starts in the frame;
    /// [`UNSEEN`] before its first.
    pub(super) last_at: U32,
    /// Where its slot starts in the latest region.
    pub(super) slot: U32,
    /// The latest row's encoded size; 0 before the first.
    pub(super) len: U32,
    /// The `seq` of the frame its latest row was in.
    pub(super) seen: U64,
}

impl StreamRec {
    /// The stream name's length.
    #[inline]
    pub(super) fn name(&self) -> usize {
        le_u32(&self.head[..LEN_BYTES]) as usize
    }

    pub(super) fn set_cap(&mut self, cap: usize) {
        let head = LEN_BYTES + self.name();
        let small = match head <= HEAD {
            true => cap.saturating_sub(head + TAIL).min(FAST_ROW_BYTES),
            false => 0,
        };
        self.cap = U32::new(cap as u32);
        self.small = U32::new(small as u32);
    }
}

/// The most of a name's encoded head a record keeps: its length and
/// [`FAST_NAME_BYTES`] of it.
pub(super) const HEAD: usize = LEN_BYTES + FAST_NAME_BYTES;
const _: () = assert!(REC == 64);

/// A record's size.
pub(super) const REC: usize = core::mem::size_of::<StreamRec>();
/// `seen` of a stream never observed.
pub(super) const NEVER: u64 = u64::MAX;
/// `last_at` of a stream not observed in the interval under way.
pub(super) const UNSEEN: u32 = u32::MAX;
/// A row's fixed run: `ts`, `wall_offset`, the row's length.
pub(super) const TAIL: usize = TAIL_BYTES;
/// The longest name and row the row path's short path takes.
pub(super) use super::row_path::{FAST_NAME_BYTES, FAST_ROW_BYTES};

/// `bytes.copy_within(from, to)`, in pieces of 16 bytes each read whole
/// before it is written, so that no piece lands on bytes still to move:
/// `copy_within` is a `memmove`, 1.6 KB of flash on a Cortex-M built for
/// size (and keeps a panic there), for moves that are rare (a slot set, a
/// stream's latest row outgrowing its slot, frames polled). A move that
/// does not fit in `bytes` moves nothing.
pub(super) fn move_bytes(bytes: &mut [u8], from: Range<usize>, to: usize) {
    const PIECE: usize = 16;
    let len = from.len();
    if from.end > bytes.len() || to.saturating_add(len) > bytes.len() {
        return;
    }
    let (pieces, rest) = (len / PIECE, len % PIECE);
    // Upwards from the end, downwards from the start.
    let up = to > from.start;
    let mut piece = |at: usize| -> Option<()> {
        let read: [u8; PIECE] = *bytes.get(from.start + at..)?.first_chunk()?;
        // Written by the out-of-line copy: a read and a write the compiler
        // sees whole it merges into a `memmove`.
        copy(bytes.get_mut(to + at..)?.first_chunk_mut::<PIECE>()?, &read)
    };
    for k in 0..pieces {
        let at = match up {
            true => rest + (pieces - 1 - k) * PIECE,
            false => k * PIECE,
        };
        let _ = piece(at);
    }
    // The last few bytes, one at a time, on the side the pieces left.
    for k in 0..rest {
        let at = match up {
            true => rest - 1 - k,
            false => pieces * PIECE + k,
        };
        if let Some(&b) = bytes.get(from.start + at) {
            if let Some(d) = bytes.get_mut(to + at) {
                *d = b;
            }
        }
    }
}

/// The whole length of the frame at the front of `bytes`, from its length
/// prefix: for walking the queue, whose frames the publisher wrote.
pub(super) fn frame_len_at(bytes: &[u8]) -> Option<usize> {
    let len = le_u32(bytes.get(..LENGTH_PREFIX_BYTES)?) as usize;
    Some(LENGTH_PREFIX_BYTES + len)
}

/// `name` as a row carries it — its length, then its bytes — at the front
/// of `dst`; the bytes it took.
pub(super) fn write_name(dst: &mut [u8], name: &[u8]) -> Option<usize> {
    let (len, rest) = dst.split_first_chunk_mut::<LEN_BYTES>()?;
    *len = (name.len() as u32).to_le_bytes();
    copy(rest.get_mut(..name.len())?, name)?;
    Some(LEN_BYTES + name.len())
}

#[inline]
pub(super) fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    #[test]
    fn moving_bytes_is_copy_within_up_and_down_near_and_far() {
        // Distances shorter and longer than the moving piece, regions of
        // several pieces, and both directions, against `copy_within`.
        let fresh = || (0..=255u8).cycle().take(600).collect::<Vec<u8>>();
        for len in [0, 1, 5, 63, 64, 65, 130, 300] {
            for from in [0, 3, 100] {
                for to in [0, 1, 2, 40, 64, 99, 101, 163, 290] {
                    let mut want = fresh();
                    want.copy_within(from..from + len, to);
                    let mut got = fresh();
                    move_bytes(&mut got, from..from + len, to);
                    assert_eq!(got, want, "{len} bytes from {from} to {to}");
                }
            }
        }
    }

    #[test]
    fn moving_bytes_out_of_range_moves_nothing_past_the_end() {
        let mut bytes = [1u8, 2, 3, 4];
        move_bytes(&mut bytes, 1..3, 3);
        assert_eq!(bytes, [1, 2, 3, 4]);
        move_bytes(&mut bytes, 2..9, 0);
        assert_eq!(bytes, [1, 2, 3, 4]);
        // Pieces that would fit before one that does not.
        let mut bytes: Vec<u8> = (0..200).collect();
        move_bytes(&mut bytes, 100..250, 0);
        assert!(bytes.iter().copied().eq(0..200));
    }
}
