//! One stream's record in its source's table: all a row on the stream
//! reads, in one place, and the bounds of the row path's short path that
//! the record is laid out for. The only file that knows a record's bytes;
//! every other part of the publisher asks [`StreamRec`].

use zerocopy::little_endian::U32;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::bytes::{le_u32, set_le_u32};
use crate::codec::{copy, LEN_BYTES};
use crate::rows::TAIL_BYTES;

/// The longest stream name the short path takes: a name of up to this
/// many bytes is kept whole in its stream's record.
pub const FAST_NAME_BYTES: usize = 32;
/// The longest row the short path takes.
pub const FAST_ROW_BYTES: usize = 32;
/// The bytes past a row's start the short path may write: the name as a row
/// carries it (its length prefix, then up to [`FAST_NAME_BYTES`]), the
/// fixed run, and room for the longest row in whole words. A frame and its
/// storage keep this much room past the last row's start
/// ([`SourceDecl::sizing`](crate::SourceDecl::sizing) counts it), so every
/// row within a budget takes the short path.
pub const FAST_WINDOW_BYTES: usize = HEAD + TAIL_BYTES + FAST_ROW_BYTES;

/// One stream's record in its source's table. 64 bytes, so that a record's
/// place is a shift.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct StreamRec {
    /// The name as a row carries it — length prefix, then bytes — padded
    /// with zeros, or its first [`HEAD`] bytes if longer: a name of up to
    /// [`FAST_NAME_BYTES`] is copied into a row from here in whole words.
    /// Its first four bytes are the name's length.
    head: [u8; HEAD],
    /// Its slot's size: the largest row seen, encoded, and never less than
    /// the name and an empty row.
    cap: U32,
    /// The longest row the row path's short path takes on this stream: up
    /// to [`FAST_ROW_BYTES`] that fit its slot, on a name of up to
    /// [`FAST_NAME_BYTES`]; 0 on a longer name.
    small: U32,
    /// Where this frame's last row of the stream starts in the frame;
    /// [`UNSEEN`] before its first.
    last_at: U32,
    /// Where its slot starts in the latest region.
    slot: U32,
    /// The latest row's encoded size; 0 before the first.
    len: U32,
    /// The `seq` of the frame its latest row was in; [`NEVER`] before the
    /// first. Two words, the low first (the bytes of a `U64`), so that it
    /// too is read and written through `le_u32` and `set_le_u32`.
    seen: [U32; 2],
}

/// The most of a name's encoded head a record keeps: its length and
/// [`FAST_NAME_BYTES`] of it.
pub(super) const HEAD: usize = LEN_BYTES + FAST_NAME_BYTES;
const _: () = assert!(REC == 64);

/// A record's size.
pub(super) const REC: usize = core::mem::size_of::<StreamRec>();
/// `seen` of a stream never observed.
const NEVER: u64 = u64::MAX;
/// `last_at` of a stream not observed in the interval under way.
const UNSEEN: u32 = u32::MAX;

/// What pads a stream's name head in its record.
static ZEROS: [u8; HEAD] = [0; HEAD];

impl StreamRec {
    /// The record at byte `at` of `bytes`, to change.
    #[cfg(unaligned_words)]
    #[inline(always)]
    pub(super) fn at_mut(bytes: &mut [u8], at: usize) -> Option<&mut StreamRec> {
        let rec = bytes.get_mut(at..)?.first_chunk_mut::<REC>()?;
        StreamRec::mut_from_bytes(rec).ok()
    }

    /// The record that is all of `bytes`.
    #[inline]
    pub(super) fn of(bytes: &[u8]) -> Option<&StreamRec> {
        StreamRec::ref_from_bytes(bytes).ok()
    }

    /// The record that is all of `bytes`, to change.
    #[inline]
    pub(super) fn of_mut(bytes: &mut [u8]) -> Option<&mut StreamRec> {
        StreamRec::mut_from_bytes(bytes).ok()
    }

    /// The records of a table, in stream order.
    #[inline]
    pub(super) fn all_mut(table: &mut [u8]) -> impl Iterator<Item = &mut StreamRec> {
        table
            .chunks_exact_mut(REC)
            .map_while(|rec| StreamRec::mut_from_bytes(rec).ok())
    }

    /// The place in `table` of the stream named `name`, found by the head
    /// its record keeps, one comparison a stream; `None` if no record has
    /// it. A name longer than [`FAST_NAME_BYTES`] is `Err`: its head is not
    /// all of it, and the caller compares whole names.
    pub(super) fn find(table: &[u8], name: &[u8]) -> Result<Option<u32>, ()> {
        let len = LEN_BYTES + name.len();
        if len > HEAD {
            return Err(());
        }
        let mut head = [0u8; HEAD];
        head[..LEN_BYTES].copy_from_slice(&(name.len() as u32).to_le_bytes());
        head[LEN_BYTES..len].copy_from_slice(name);
        Ok(table
            .chunks_exact(REC)
            .position(|rec| rec.first_chunk::<HEAD>() == Some(&head))
            .map(|i| i as u32))
    }

    /// A stream's record as declared: `name`, as a row carries it (its
    /// first [`HEAD`] bytes, then zeros), a slot of `cap` bytes at `slot`,
    /// never observed.
    pub(super) fn declare(&mut self, name: &[u8], cap: usize, slot: usize) -> Option<()> {
        // The name's head, then zeros: copied from a static, as zeroing an
        // array is a call to `memset` that is in no other path.
        let kept = name.len().min(HEAD);
        let (head, zeros) = self.head.split_at_mut_checked(kept)?;
        copy(head, name.get(..kept)?)?;
        copy(zeros, ZEROS.get(kept..)?)?;
        self.set_cap(cap);
        set_le_u32(&mut self.last_at, UNSEEN);
        set_le_u32(&mut self.slot, slot as u32);
        set_le_u32(&mut self.len, 0);
        self.set_seen(NEVER);
        Some(())
    }

    /// The stream name's length.
    #[inline(always)]
    pub(super) fn name(&self) -> usize {
        le_u32(&self.head[..LEN_BYTES]) as usize
    }

    /// The name as a row carries it, or its first [`HEAD`] bytes, padded
    /// with zeros.
    #[cfg(unaligned_words)]
    #[inline(always)]
    pub(super) fn head(&self) -> &[u8; HEAD] {
        &self.head
    }

    /// Its slot's size. Its words are read by `le_u32`, one copy of the
    /// byte loads on a core without unaligned word loads, the one load
    /// inline on any other.
    #[inline(always)]
    pub(super) fn cap(&self) -> usize {
        le_u32(self.cap.as_bytes()) as usize
    }

    /// Its slot is now `cap` bytes, and the short path takes the rows that
    /// fit it.
    pub(super) fn set_cap(&mut self, cap: usize) {
        let head = LEN_BYTES + self.name();
        let small = match head <= HEAD {
            true => cap.saturating_sub(head + TAIL_BYTES).min(FAST_ROW_BYTES),
            false => 0,
        };
        set_le_u32(&mut self.cap, cap as u32);
        set_le_u32(&mut self.small, small as u32);
    }

    /// The longest row the short path takes on this stream.
    #[cfg(unaligned_words)]
    #[inline(always)]
    pub(super) fn small(&self) -> usize {
        self.small.get() as usize
    }

    /// Where its slot starts in the latest region.
    #[inline(always)]
    pub(super) fn slot(&self) -> usize {
        le_u32(self.slot.as_bytes()) as usize
    }

    /// Its slot now starts `by` bytes later, the slot before it grown.
    pub(super) fn move_slot(&mut self, by: usize) {
        let slot = self.slot() as u32 + by as u32;
        set_le_u32(&mut self.slot, slot);
    }

    /// The frame's last row of the stream starts at `at` in it.
    #[inline(always)]
    pub(super) fn set_last_at(&mut self, at: usize) {
        set_le_u32(&mut self.last_at, at as u32);
    }

    /// Where the frame's last row of the stream starts, if the frame has
    /// one, forgotten: the frame is closing.
    #[inline]
    pub(super) fn take_last_at(&mut self) -> Option<usize> {
        let at = le_u32(self.last_at.as_bytes());
        if at == UNSEEN {
            return None;
        }
        set_le_u32(&mut self.last_at, UNSEEN);
        Some(at as usize)
    }

    /// The latest row's encoded size; 0 before the first.
    #[inline]
    pub(super) fn latest_len(&self) -> usize {
        le_u32(self.len.as_bytes()) as usize
    }

    /// The `seq` of the frame its latest row was in; never one a frame
    /// has before the first.
    #[inline]
    pub(super) fn seen(&self) -> u64 {
        let [lo, hi] = &self.seen;
        u64::from(le_u32(lo.as_bytes())) | u64::from(le_u32(hi.as_bytes())) << 32
    }

    /// Its latest row is now the one of `len` bytes copied into its slot,
    /// from the frame of `seq`.
    #[inline]
    pub(super) fn set_latest(&mut self, len: usize, seq: u64) {
        set_le_u32(&mut self.len, len as u32);
        self.set_seen(seq);
    }

    /// Its latest row's `seq` is now `seq`.
    fn set_seen(&mut self, seq: u64) {
        let [lo, hi] = &mut self.seen;
        set_le_u32(lo, seq as u32);
        set_le_u32(hi, (seq >> 32) as u32);
    }
}

/// `name` as a row carries it — its length, then its bytes — at the front
/// of `dst`; the bytes it took.
pub(super) fn write_name(dst: &mut [u8], name: &[u8]) -> Option<usize> {
    let (len, rest) = dst.split_first_chunk_mut::<LEN_BYTES>()?;
    *len = (name.len() as u32).to_le_bytes();
    copy(rest.get_mut(..name.len())?, name)?;
    Some(LEN_BYTES + name.len())
}
