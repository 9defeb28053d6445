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

use super::bytes::move_bytes;
use super::error::PublishError;
use super::stream_rec::{StreamRec, REC};
use crate::rows::ROWS_HEAD_BYTES;
use crate::storage::Storage;

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
        StreamRec::of(bytes.get(range)?)
    }

    /// Stream `i`'s record, to change.
    // Out of line: inlined into the loop that moves the slots after one
    // that grew, it took more of a device's flash (`cargo xtask firmware`
    // prints the footprint).
    #[inline(never)]
    pub(super) fn record_mut<'a>(&self, bytes: &'a mut [u8], i: u32) -> Option<&'a mut StreamRec> {
        let range = self.record_range(i);
        if range.end > self.ends[Region::Table as usize] {
            return None;
        }
        StreamRec::of_mut(bytes.get_mut(range)?)
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
    pub(super) fn declared<'a>(&self, bytes: &'a mut [u8]) -> Option<DeclaredRegions<'a>> {
        let ends = &self.ends;
        let region = bytes.get_mut(..ends[Region::Latest as usize])?;
        let (handshake, rest) = region.split_at_mut_checked(ends[Region::Handshake as usize])?;
        let (index_name, rest) = rest.split_at_mut_checked(self.len(Region::IndexName))?;
        let (table, latest) = rest.split_at_mut_checked(self.len(Region::Table))?;
        Some(DeclaredRegions {
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

    /// Where the table of stream records starts.
    #[inline(always)]
    pub(super) fn table_at(&self) -> usize {
        self.ends[Region::IndexName as usize]
    }

    /// Where the slots start: [`Region::Latest`].
    #[inline(always)]
    pub(super) fn slots_at(&self) -> usize {
        self.ends[Region::Table as usize]
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
pub(super) struct DeclaredRegions<'a> {
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
