//! Writing rows: the one place a row's layout is written, by
//! [`RowsBuilder`], the publisher, and [`Rows`](super::Rows)' encoder.

use core::mem::offset_of;

use zerocopy::little_endian::{I64, U32, U64};
use zerocopy::IntoBytes;

use super::layout::{Row, RowTail, RowsHead, TAIL_BYTES};
use crate::codec::{copy, copy_short, Out, LEN_BYTES};
use crate::error::{Error, Field, Rule};
use crate::framing::{FrameHead, HEAD_BYTES};
use crate::index_state::IndexState;
use crate::kind;
use crate::storage::Storage;
use crate::MAX_FRAME_BYTES;

pub(super) fn rows_head(source: u32, seq: u64, index_state: IndexState, count: u32) -> RowsHead {
    RowsHead {
        source: U32::new(source),
        seq: U64::new(seq),
        index_state_0: U64::new(index_state.0),
        index_state_1: U64::new(index_state.1),
        count: U32::new(count),
    }
}

pub(super) fn emit_row(out: &mut Out<'_>, row: &Row<'_>) -> Result<(), Error> {
    let at = out.at();
    let dst = out.reserve(row.wire_len())?;
    let have = dst.len();
    // `dst` is exactly the row's size, so this cannot fail; if the layout
    // and the size ever disagreed, it says so instead of panicking.
    write_row(dst, row).map(drop).ok_or(Error::encode(
        Rule::BufferTooSmall {
            needed: row.wire_len(),
            have,
        },
        Field::Row,
        at,
    ))
}

/// Write a row at the front of `dst` and say how many bytes it took, or
/// `None` if `dst` is too short for it (having written some of it). With
/// [`write_prepared_row`], the one place a row's layout is written; the two
/// differ only in where the stream name comes from.
#[inline(always)]
fn write_row(dst: &mut [u8], row: &Row<'_>) -> Option<usize> {
    let (len, rest) = dst.split_first_chunk_mut::<LEN_BYTES>()?;
    *len = (row.stream.len() as u32).to_le_bytes();
    let (name, rest) = rest.split_at_mut_checked(row.stream.len())?;
    copy_short(name, row.stream.as_bytes())?;
    write_tail(rest, row.ts, row.wall_offset, row.row)?;
    Some(row.wire_len())
}

/// Write a row whose stream name was encoded once, ahead of time: `head` is
/// the name's length prefix and bytes, as the frame carries them. `None` if
/// `dst` is too short.
///
/// The publisher's path for the rows its short path does not take (a row
/// over [`FAST_ROW_BYTES`](crate::FAST_ROW_BYTES), a name over
/// [`FAST_NAME_BYTES`](crate::FAST_NAME_BYTES)), so plain copies: the
/// short fixed-size moves of [`copy_short`] are for the hot paths, and here
/// they cost a device flash for no speed (`cargo xtask firmware` prints
/// the footprint).
pub(crate) fn write_prepared_row(
    dst: &mut [u8],
    head: &[u8],
    ts: i64,
    wall_offset: i64,
    row: &[u8],
) -> Option<usize> {
    let n = head.len();
    let len = n + TAIL_BYTES + row.len();
    let dst = dst.get_mut(..len)?;
    copy(dst.get_mut(..n)?, head)?;
    let (tail, rest) = dst.get_mut(n..)?.split_first_chunk_mut::<TAIL_BYTES>()?;
    write_row_tail(tail, ts, wall_offset, row.len());
    copy(rest, row)?;
    Some(len)
}

/// A row's fixed run and its bytes, at the front of `dst`.
#[inline(always)]
fn write_tail(dst: &mut [u8], ts: i64, wall_offset: i64, row: &[u8]) -> Option<()> {
    let (tail, rest) = dst.split_first_chunk_mut::<TAIL_BYTES>()?;
    write_row_tail(tail, ts, wall_offset, row.len());
    copy_short(rest.get_mut(..row.len())?, row)
}

/// A row's fixed run alone: `ts`, `wall_offset`, the row's length.
#[inline(always)]
pub(crate) fn write_row_tail(
    tail: &mut [u8; TAIL_BYTES],
    ts: i64,
    wall_offset: i64,
    row_len: usize,
) {
    // A value of the array's own size: no length to check.
    *tail = zerocopy::transmute!(RowTail {
        ts: I64::new(ts),
        wall_offset: I64::new(wall_offset),
        row_len: U32::new(row_len as u32),
    });
}

/// The bytes of a `Rows` frame before its first row: the length prefix, the
/// kind byte, and the fixed run up to the count.
pub(crate) const ROWS_HEAD_BYTES: usize = HEAD_BYTES + core::mem::size_of::<RowsHead>();

/// A whole `Rows` head at the front of `dst`, for a frame of `len` bytes
/// (length prefix included) holding `count` rows.
pub(crate) fn write_rows_head(
    dst: &mut [u8],
    source: u32,
    seq: u64,
    index_state: IndexState,
    count: u32,
    len: usize,
) -> Option<()> {
    let len = len.saturating_sub(crate::LENGTH_PREFIX_BYTES) as u32;
    if !cfg!(unaligned_words) {
        let words = rows_head_words(len, source, seq, index_state, count);
        return copy_rows_head(dst, words.as_bytes().get(3..)?);
    }
    let (head, rest) = dst.split_first_chunk_mut::<HEAD_BYTES>()?;
    // zerocopy's writes, not `copy_from_slice`, whose length check a
    // library built for size keeps out of line with its panic.
    FrameHead {
        len: U32::new(len),
        kind: kind::ROWS,
    }
    .write_to(&mut head[..])
    .ok()?;
    rows_head(source, seq, index_state, count)
        .write_to_prefix(rest)
        .ok()
}

/// A `Rows` head (a frame's length after its prefix, then the rest) in
/// little-endian words, three bytes in: every field after the kind byte is
/// then a whole aligned word. Where words may not be unaligned
/// (`build.rs`), a head written in place was stored a byte at a time;
/// made here and copied in by the out-of-line copy, it takes less flash
/// (`cargo xtask firmware` prints the footprint).
pub(super) fn rows_head_words(
    len: u32,
    source: u32,
    seq: u64,
    (state_0, state_1): IndexState,
    count: u32,
) -> [u32; 10] {
    let lo = |v: u64| v as u32;
    let hi = |v: u64| (v >> 32) as u32;
    [
        len << 24,
        len >> 8 | u32::from(kind::ROWS) << 24,
        source,
        lo(seq),
        hi(seq),
        lo(state_0),
        hi(state_0),
        lo(state_1),
        hi(state_1),
        count,
    ]
    .map(u32::to_le)
}

/// A head made by [`rows_head_words`] into `dst`: its frame head, and then
/// the rest, each if `dst` holds it, as one written in place is.
pub(super) fn copy_rows_head(dst: &mut [u8], head: &[u8]) -> Option<()> {
    let whole = dst.len() >= ROWS_HEAD_BYTES;
    let n = if whole { ROWS_HEAD_BYTES } else { HEAD_BYTES };
    copy(dst.get_mut(..n)?, head.get(..n)?)?;
    whole.then_some(())
}

/// Where a frame may end, length prefix included: the one bound both
/// `RowsBuilder::push` (the room it writes in) and its refusal use.
const MAX_FRAME_END: usize = MAX_FRAME_BYTES as usize + crate::LENGTH_PREFIX_BYTES;

/// Builds a `Rows` frame in place, one row at a time, for a publisher that
/// does not hold its rows in a slice.
///
/// The header is written at once; each [`push`](Self::push) appends a row or
/// leaves the frame as it was; [`finish`](Self::finish) fills in the count
/// and the length and returns the frame's size.
///
/// ```
/// use dendro_wire_core::{Row, RowsBuilder, RowsHeader, Rule};
///
/// let mut buf = [0u8; 100];
/// let header = RowsHeader { source: 3, seq: 100, index_state: (0, 0) };
/// let mut b = RowsBuilder::new(&mut buf, header).unwrap();
/// b.push(&Row { stream: "mem", ts: 1, wall_offset: 0, row: &[1, 2, 3, 4] }).unwrap();
/// // A row that does not fit says how big the buffer must be, and the
/// // frame keeps the rows it had.
/// let big = [0u8; 64];
/// let err = b.push(&Row { stream: "mem", ts: 2, wall_offset: 0, row: &big }).unwrap_err();
/// assert!(matches!(err.rule(), Rule::BufferTooSmall { needed: 159, have: 100 }));
/// assert_eq!(b.row_count(), 1);
/// assert_eq!(b.finish().unwrap(), 68);
/// ```
#[derive(Debug)]
pub struct RowsBuilder<'b, S: Storage + ?Sized = [u8]> {
    buf: &'b mut S,
    len: usize,
    count: u32,
}

/// What opens a `Rows` frame: its source, its `seq` and the index state its
/// rows were built against ([protocol §4.3](crate::protocol)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RowsHeader {
    /// The source's ordinal.
    pub source: u32,
    /// The frame's sequence number.
    pub seq: u64,
    /// The index state the rows were built against.
    pub index_state: IndexState,
}

impl<'b, S: Storage + ?Sized> RowsBuilder<'b, S> {
    /// Start a frame at the start of `buf`: a slice, or a [`Storage`] that
    /// grows as rows need it (a fixed one refuses a row that does not fit,
    /// saying how large it must be).
    pub fn new(buf: &'b mut S, header: RowsHeader) -> Result<Self, Error> {
        let RowsHeader {
            source,
            seq,
            index_state,
        } = header;
        buf.grow(ROWS_HEAD_BYTES);
        let bytes = buf.bytes_mut();
        if write_rows_head(bytes, source, seq, index_state, 0, ROWS_HEAD_BYTES).is_none() {
            let rule = Rule::BufferTooSmall {
                needed: ROWS_HEAD_BYTES,
                have: bytes.len(),
            };
            return Err(Error::encode(rule, Field::Length, 0).in_frame(kind::ROWS));
        }
        Ok(RowsBuilder {
            buf,
            len: ROWS_HEAD_BYTES,
            count: 0,
        })
    }

    /// Append one row. On any error the frame is left as it was: its length
    /// and its row count are unchanged, and so are its bytes, though the
    /// buffer past them may hold some of the refused row.
    #[inline(always)]
    pub fn push(&mut self, row: &Row<'_>) -> Result<(), Error> {
        // The room a row may take: the buffer, and no more than §2 allows a
        // frame. Each field is written only where it fits in that room, so
        // a row that fits takes no other check; one that does not grows the
        // storage or is named by `refuse`, off the hot path.
        let bytes = self.buf.bytes_mut();
        let room = bytes.len().min(MAX_FRAME_END);
        let written = match bytes.get_mut(self.len..room) {
            Some(rest) => write_row(rest, row),
            None => None,
        };
        match written {
            Some(n) => {
                self.len += n;
                self.count += 1;
                Ok(())
            }
            None => self.grow_for(row),
        }
    }

    /// A row that did not fit: the storage grown for it and the row written,
    /// or why it cannot be, the frame's limit or the buffer's size.
    #[cold]
    #[inline(never)]
    fn grow_for(&mut self, row: &Row<'_>) -> Result<(), Error> {
        let end = self.len.saturating_add(row.wire_len());
        if end <= MAX_FRAME_END && self.buf.grow(end) {
            let bytes = self.buf.bytes_mut();
            if let Some(n) = bytes
                .get_mut(self.len..end)
                .and_then(|rest| write_row(rest, row))
            {
                self.len += n;
                self.count += 1;
                return Ok(());
            }
        }
        let (rule, field) = if end > MAX_FRAME_END {
            let len = end - crate::LENGTH_PREFIX_BYTES;
            let limit = MAX_FRAME_BYTES;
            (Rule::FrameTooLarge { len, limit }, Field::Length)
        } else {
            let have = self.buf.bytes().len();
            (Rule::BufferTooSmall { needed: end, have }, Field::Row)
        };
        Err(Error::encode(rule, field, self.len)
            .in_frame(kind::ROWS)
            .at_item(self.count))
    }

    /// The rows pushed so far.
    pub fn row_count(&self) -> u32 {
        self.count
    }

    /// The frame's size so far, in bytes, length prefix included.
    pub fn frame_len(&self) -> usize {
        self.len
    }

    /// Whether no row has been pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Fill in the count and the length; returns the frame's size. The frame
    /// is `buf`'s first that many bytes.
    pub fn finish(self) -> Result<usize, Error> {
        let count_at = HEAD_BYTES + offset_of!(RowsHead, count);
        let len = self.len;
        let mut out = Out::new(self.buf.bytes_mut(), len);
        out.patch(
            0,
            &((len - crate::LENGTH_PREFIX_BYTES) as u32).to_le_bytes(),
        )?;
        out.patch(count_at, &self.count.to_le_bytes())?;
        Ok(len)
    }
}

#[cfg(feature = "defmt")]
impl<S: Storage + ?Sized> defmt::Format for RowsBuilder<'_, S> {
    /// The frame so far: its size and its rows.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "RowsBuilder len={=usize} rows={=u32}",
            self.len,
            self.count
        );
    }
}
