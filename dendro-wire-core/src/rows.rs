//! `Rows`, kind 3 ([protocol §4.3](crate::protocol)): the hot path.

use core::fmt;

use zerocopy::little_endian::{I64, U32, U64};
use zerocopy::IntoBytes;

use crate::codec::{bytes_len, copy, copy_short, Cursor, Out, LEN_BYTES};
use crate::error::{Error, Field, Rule};
use crate::frame::{encodable, kind, Decode, Encode, HEAD_BYTES};
use crate::index_state::IndexState;
use crate::layout::{FrameHead, RowTail, RowsHead};
use crate::storage::Storage;
use crate::MAX_FRAME_BYTES;

/// One observation of a `Rows` frame.
///
/// ```
/// use dendro_wire_core::Row;
///
/// let row = Row { stream: "cpu/usage", ts: 1, wall_offset: 0, row: &[0; 32] };
/// assert_eq!(row.encoded_len(), 4 + 9 + 20 + 32);
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row<'a> {
    /// The stream it belongs to; one frame may span a source's streams.
    pub stream: &'a str,
    /// The observation's timestamp.
    pub ts: i64,
    /// Wall time minus `ts`.
    pub wall_offset: i64,
    /// The row, opaque: the encoder's.
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "crate::codec::serialize_bytes")
    )]
    pub row: &'a [u8],
}

impl Row<'_> {
    /// The bytes this row takes in a frame.
    pub const fn encoded_len(&self) -> usize {
        bytes_len(self.stream.len()) + core::mem::size_of::<RowTail>() + self.row.len()
    }
}

/// The smallest a row can be: an empty stream name and an empty row.
const MIN_ROW_BYTES: usize = LEN_BYTES + core::mem::size_of::<RowTail>();

/// The bytes of a row's fixed run: `ts`, `wall_offset`, the row's length.
const TAIL_BYTES: usize = core::mem::size_of::<RowTail>();

/// A row's stream name and fixed run off the front of `rest`, and what
/// follows them: the row's bytes, then the next rows. `None` if `rest` does
/// not hold them. With [`split_row`], the one place a row's layout is read.
#[inline(always)]
fn split_head(rest: &[u8]) -> Option<(&[u8], &[u8; TAIL_BYTES], &[u8])> {
    let (len, tail) = rest.split_first_chunk::<LEN_BYTES>()?;
    let (name, tail) = tail.split_at_checked(u32::from_le_bytes(*len) as usize)?;
    let (fixed, tail) = tail.split_first_chunk::<TAIL_BYTES>()?;
    Some((name, fixed, tail))
}

/// The row length a fixed run declares.
#[inline(always)]
fn row_len(fixed: &[u8; TAIL_BYTES]) -> usize {
    u32::from_le_bytes([fixed[16], fixed[17], fixed[18], fixed[19]]) as usize
}

/// One row off the front of `rest`: its stream name's bytes, its fixed run,
/// and its row bytes; `None` if `rest` does not hold a whole row.
#[inline(always)]
fn split_row<'a>(rest: &mut &'a [u8]) -> Option<(&'a [u8], &'a [u8; TAIL_BYTES], &'a [u8])> {
    let (name, fixed, tail) = split_head(rest)?;
    let (row, tail) = tail.split_at_checked(row_len(fixed))?;
    *rest = tail;
    Some((name, fixed, row))
}

/// The bytes a stream name is checked in at once: a name this long or
/// shorter is checked as one 16-byte word.
const NAME_WORD: usize = 16;

/// For a name of `len` bytes (the index), the high bit of each of its bytes
/// in a 16-byte little-endian word.
const ASCII_MASKS: [u128; NAME_WORD + 1] = {
    let mut masks = [0u128; NAME_WORD + 1];
    let mut len = 1;
    while len <= NAME_WORD {
        masks[len] = masks[len - 1] | 0x80 << (8 * (len - 1));
        len += 1;
    }
    masks
};

/// Whether `name` is UTF-8. `word` is the 16 bytes from the name's start,
/// when the frame holds them (it always does for a whole row: a name is
/// followed by its row's 20-byte fixed run). A name that fits the word is
/// checked as ASCII by one load and a mask, with no loop and no branch on
/// its length; any other name, or one that is not ASCII, by the full
/// validator.
#[inline(always)]
fn is_utf8(name: &[u8], word: Option<&[u8; NAME_WORD]>) -> bool {
    let ascii = match (word, ASCII_MASKS.get(name.len())) {
        (Some(word), Some(mask)) => u128::from_le_bytes(*word) & mask == 0,
        _ => false,
    };
    ascii || core::str::from_utf8(name).is_ok()
}

/// The bytes `count` rows take at the start of `bytes`, if every one is
/// whole and its stream name is UTF-8: the decoder's fast path, which says
/// only yes or no. On no, the field-by-field walk finds and names the
/// broken rule.
///
/// Walking rows is a chain of dependent loads: where a row ends is known
/// only once its stream name's length, and then its row length, are read.
/// Three things keep that chain short, and none changes what is accepted:
///
/// - The row length is guessed to be the last row's (an agent's rows are
///   fixed records), so the next row's start waits on one load, not two;
///   the row's own length is compared with the guess off that chain, and a
///   wrong guess takes the length read.
/// - A name is checked by [`is_utf8`] as one word, not byte by byte.
/// - A byte [`READ_AHEAD`] bytes on is read each row, at a position that
///   steps by the frame's average row size rather than following the
///   chain, so the rows to come are on their way from memory while this one
///   is checked. What it reads is thrown away.
#[inline]
fn walk_rows(bytes: &[u8], count: u32) -> Option<usize> {
    let mut rest = bytes;
    let mut guess = 0;
    let stride = bytes.len() / (count as usize).max(1);
    let mut ahead_at = READ_AHEAD;
    let mut ahead = 0u8;
    for _ in 0..count {
        ahead ^= bytes.get(ahead_at).copied().unwrap_or(0);
        ahead_at += stride;
        let (name, fixed, tail) = split_head(rest)?;
        let word = rest.get(LEN_BYTES..).and_then(<[u8]>::first_chunk);
        let len = row_len(fixed);
        rest = match tail.get(guess..) {
            Some(next) if len == guess => next,
            _ => {
                guess = len;
                tail.get(len..)?
            }
        };
        if !is_utf8(name, word) {
            return None;
        }
    }
    // Keeps the reads ahead from being optimized away.
    core::hint::black_box(ahead);
    Some(bytes.len() - rest.len())
}

/// How far ahead of the row being checked [`walk_rows`] reads: about eight
/// rows of a typical agent. Nearer, the bytes are not there in time; much
/// further (2 KiB and more), measured slower than not reading ahead at all.
const READ_AHEAD: usize = 512;

/// The rows of a [`Rows`] frame: a checked view over decoded bytes, or a
/// slice a caller supplies to encode.
///
/// Iterating a decoded list cannot fail and does not allocate: every row was
/// checked when the frame was decoded.
#[derive(Clone, Copy)]
pub struct RowList<'a>(Repr<'a>);

#[derive(Clone, Copy)]
enum Repr<'a> {
    Wire { count: u32, bytes: &'a [u8] },
    Slice(&'a [Row<'a>]),
}

impl<'a> RowList<'a> {
    /// No rows: the keepalive of rule 6.
    pub const EMPTY: RowList<'static> = RowList(Repr::Slice(&[]));

    /// Rows to encode.
    pub const fn from_slice(rows: &'a [Row<'a>]) -> Self {
        RowList(Repr::Slice(rows))
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        match self.0 {
            Repr::Wire { count, .. } => count as usize,
            Repr::Slice(rows) => rows.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows, in frame order.
    pub fn iter(&self) -> RowIter<'a> {
        RowIter(match self.0 {
            Repr::Wire { count, bytes } => IterRepr::Wire {
                left: count,
                rest: bytes,
                names: StreamNames::default(),
            },
            Repr::Slice(rows) => IterRepr::Slice(rows.iter()),
        })
    }

    /// The rows' encoded bytes, after the count.
    fn encoded_len(&self) -> usize {
        match self.0 {
            Repr::Wire { bytes, .. } => bytes.len(),
            Repr::Slice(rows) => rows
                .iter()
                .fold(0usize, |n, r| n.saturating_add(r.encoded_len())),
        }
    }
}

impl PartialEq for RowList<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for RowList<'_> {}

impl fmt::Debug for RowList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for RowList<'a> {
    type Item = Row<'a>;
    type IntoIter = RowIter<'a>;
    fn into_iter(self) -> RowIter<'a> {
        self.iter()
    }
}

/// The rows of a [`RowList`].
#[derive(Clone, Debug)]
pub struct RowIter<'a>(IterRepr<'a>);

/// The stream names an iterator has met, as `str`s.
///
/// A frame's rows come from a handful of streams, usually in a repeating
/// order. A name equal to one met before is that same `str` (equal bytes are
/// equal strings), so each distinct name is UTF-8-checked once per walk
/// rather than once per row; the decoder already checked all of them. The
/// next name is looked for first after the last one found.
#[derive(Clone, Debug, Default)]
struct StreamNames<'a> {
    names: [&'a str; 8],
    len: usize,
    next: usize,
    /// Where the next unseen name goes once the table is full.
    evict: usize,
}

/// Equality of two short byte strings without a call into `memcmp`, which
/// costs more than the comparison for a stream name: a name of 8 to 32
/// bytes is compared as its first and last words.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    /// The first and last `W` bytes: all of them, for `W <= len <= 2 * W`.
    #[inline(always)]
    fn ends<const W: usize>(a: &[u8], b: &[u8]) -> bool {
        a.first_chunk::<W>() == b.first_chunk::<W>() && a.last_chunk::<W>() == b.last_chunk::<W>()
    }
    a.len() == b.len()
        && match a.len() {
            8..=16 => ends::<8>(a, b),
            17..=32 => ends::<16>(a, b),
            _ => a == b,
        }
}

impl<'a> StreamNames<'a> {
    #[inline(always)]
    fn get(&mut self, name: &'a [u8]) -> Option<&'a str> {
        let guess = self.next;
        if let Some(s) = self.names.get(guess).filter(|s| same(s.as_bytes(), name)) {
            self.next = if guess + 1 == self.len { 0 } else { guess + 1 };
            return Some(s);
        }
        for i in 0..self.len {
            if same(self.names[i].as_bytes(), name) {
                self.next = if i + 1 == self.len { 0 } else { i + 1 };
                return Some(self.names[i]);
            }
        }
        let s = core::str::from_utf8(name).ok()?;
        let at = if self.len < self.names.len() {
            self.len += 1;
            self.len - 1
        } else {
            self.evict = (self.evict + 1) % self.names.len();
            self.evict
        };
        self.names[at] = s;
        self.next = if at + 1 == self.len { 0 } else { at + 1 };
        Some(s)
    }
}

#[derive(Clone, Debug)]
enum IterRepr<'a> {
    Wire {
        left: u32,
        rest: &'a [u8],
        names: StreamNames<'a>,
    },
    Slice(core::slice::Iter<'a, Row<'a>>),
}

impl<'a> Iterator for RowIter<'a> {
    type Item = Row<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<Row<'a>> {
        match &mut self.0 {
            IterRepr::Wire { left, rest, names } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                // Every `?` below is unreachable for a list this crate
                // decoded; each ends the walk rather than panicking.
                let (name, fixed, row) = split_row(rest)?;
                let stream = names.get(name)?;
                let (ts, fixed) = fixed.split_first_chunk::<8>()?;
                let wall_offset = fixed.first_chunk::<8>()?;
                Some(Row {
                    stream,
                    ts: i64::from_le_bytes(*ts),
                    wall_offset: i64::from_le_bytes(*wall_offset),
                    row,
                })
            }
            IterRepr::Slice(rows) => rows.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.0 {
            IterRepr::Wire { left, .. } => *left as usize,
            IterRepr::Slice(rows) => rows.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for RowIter<'_> {}

/// Live observations, bound for the `wal` table.
///
/// `seq` is a sequence number in the TCP sense: strictly increasing and
/// contiguous per source, so a gap means frames lost and nothing else.
/// `index_state` is the state the rows were built against; a subscriber
/// holding another skips them (rule 9).
///
/// ```
/// use dendro_wire_core::{decode, Frame, Row, RowList, Rows, Status, NO_INDEX_STATE};
///
/// let rows = [
///     Row { stream: "cpu/usage", ts: 1, wall_offset: 0, row: &[1, 2] },
///     Row { stream: "mem/used", ts: 1, wall_offset: 0, row: &[3] },
/// ];
/// let frame = Rows { source: 0, seq: 9, index_state: NO_INDEX_STATE, rows: RowList::from_slice(&rows) };
/// let mut buf = [0u8; 128];
/// let n = frame.emit(&mut buf)?;
/// let Status::Complete((Frame::Rows(back), _)) = decode(&buf[..n])? else { unreachable!() };
/// let streams: Vec<&str> = back.rows.iter().map(|r| r.stream).collect();
/// assert_eq!(streams, ["cpu/usage", "mem/used"]);
/// # Ok::<(), dendro_wire_core::Error>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows<'a> {
    /// Which source, by handshake ordinal.
    pub source: u32,
    /// The frame's sequence number.
    pub seq: u64,
    /// The index state the rows were built against.
    pub index_state: IndexState,
    /// The observations.
    pub rows: RowList<'a>,
}

impl<'a> Decode<'a> for Rows<'a> {
    const KIND: u8 = kind::ROWS;

    fn parse(c: &mut Cursor<'a>) -> Result<Self, Error> {
        let count_at = c.at() + core::mem::size_of::<RowsHead>() - 4;
        let head = c.fixed::<RowsHead>(Field::Source)?;
        let count = head.count.get();
        // A count of 4 billion over 30 bytes is refused here, not after 30
        // bytes of rows.
        c.check_count(count, Field::Count, MIN_ROW_BYTES, count_at)?;
        let start = c.at();
        let frame = |bytes| Rows {
            source: head.source.get(),
            seq: head.seq.get(),
            index_state: (head.index_state_0.get(), head.index_state_1.get()),
            rows: RowList(Repr::Wire { count, bytes }),
        };
        if let Some(used) = walk_rows(c.rest(), count) {
            return Ok(frame(c.take(used, Field::Row)?));
        }
        // Some row breaks a rule: walk field by field to name it and where.
        let mut last_stream: &[u8] = &[];
        for i in 0..count {
            c.set_item(Some(i));
            let stream_at = c.at();
            let name = c.bytes(Field::Stream)?;
            // Stream names repeat from row to row, and a name equal to one
            // already checked is valid UTF-8 too.
            if name != last_stream {
                if core::str::from_utf8(name).is_err() {
                    return Err(c.error(Rule::NotUtf8, Field::Stream, stream_at));
                }
                last_stream = name;
            }
            let tail = c.fixed::<RowTail>(Field::Ts)?;
            let row_at = c.at() - 4;
            c.take_at(tail.row_len.get() as usize, Field::Row, row_at)?;
        }
        c.set_item(None);
        Ok(frame(c.since(start)))
    }
}

fn rows_head(source: u32, seq: u64, index_state: IndexState, count: u32) -> RowsHead {
    RowsHead {
        source: U32::new(source),
        seq: U64::new(seq),
        index_state_0: U64::new(index_state.0),
        index_state_1: U64::new(index_state.1),
        count: U32::new(count),
    }
}

fn emit_row(out: &mut Out<'_>, row: &Row<'_>) -> Result<(), Error> {
    let at = out.at();
    let dst = out.reserve(row.encoded_len())?;
    let have = dst.len();
    // `dst` is exactly the row's size, so this cannot fail; if the layout
    // and the size ever disagreed, it says so instead of panicking.
    write_row(dst, row).map(drop).ok_or(Error::encode(
        Rule::BufferTooSmall {
            needed: row.encoded_len(),
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
    Some(row.encoded_len())
}

/// Write a row whose stream name was encoded once, ahead of time: `head` is
/// the name's length prefix and bytes, as the frame carries them. `word`,
/// when given, is 16 bytes starting with `head` (a head of at most 16
/// bytes), copied as one fixed-size move; the bytes past `head` are
/// overwritten by the row's fixed run. `None` if `dst` is too short.
#[inline(always)]
pub(crate) fn write_prepared_row(
    dst: &mut [u8],
    head: &[u8],
    word: Option<&[u8; NAME_WORD]>,
    ts: i64,
    wall_offset: i64,
    row: &[u8],
) -> Option<usize> {
    let n = head.len();
    let len = n + TAIL_BYTES + row.len();
    let dst = dst.get_mut(..len)?;
    match word {
        Some(word) if n <= NAME_WORD => *dst.first_chunk_mut::<NAME_WORD>()? = *word,
        _ => copy_short(dst.get_mut(..n)?, head)?,
    }
    write_tail(dst.get_mut(n..)?, ts, wall_offset, row)?;
    Some(len)
}

/// A row's fixed run and its bytes, at the front of `dst`.
#[inline(always)]
fn write_tail(dst: &mut [u8], ts: i64, wall_offset: i64, row: &[u8]) -> Option<()> {
    let (tail, rest) = dst.split_first_chunk_mut::<TAIL_BYTES>()?;
    tail.copy_from_slice(
        RowTail {
            ts: I64::new(ts),
            wall_offset: I64::new(wall_offset),
            row_len: U32::new(row.len() as u32),
        }
        .as_bytes(),
    );
    copy_short(rest.get_mut(..row.len())?, row)
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
    let (head, rest) = dst.split_first_chunk_mut::<HEAD_BYTES>()?;
    head.copy_from_slice(
        FrameHead {
            len: U32::new(len.saturating_sub(crate::LENGTH_PREFIX_BYTES) as u32),
            kind: kind::ROWS,
        }
        .as_bytes(),
    );
    rest.get_mut(..core::mem::size_of::<RowsHead>())?
        .copy_from_slice(rows_head(source, seq, index_state, count).as_bytes());
    Some(())
}

impl Encode for Rows<'_> {
    fn kind(&self) -> u8 {
        kind::ROWS
    }

    fn payload_len(&self, _at: usize) -> Result<usize, Error> {
        Ok(core::mem::size_of::<RowsHead>().saturating_add(self.rows.encoded_len()))
    }

    fn emit_payload(&self, out: &mut Out<'_>) -> Result<(), Error> {
        out.fixed(&rows_head(
            self.source,
            self.seq,
            self.index_state,
            self.rows.len() as u32,
        ))?;
        match self.rows.0 {
            Repr::Wire { bytes, .. } => out.put(bytes),
            Repr::Slice(rows) => rows.iter().try_for_each(|row| emit_row(out, row)),
        }
    }
}

encodable!(Rows<'_>);

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
        let end = self.len.saturating_add(row.encoded_len());
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

    /// Append `count` rows already encoded as a frame carries them, as one
    /// copy: for rows a publisher kept encoded. The caller vouches that
    /// `rows` holds exactly `count` whole rows.
    pub(crate) fn extend_encoded(&mut self, rows: &[u8], count: u32) -> Result<(), Error> {
        let end = self.len.saturating_add(rows.len());
        if end <= MAX_FRAME_END {
            self.buf.grow(end);
        }
        let bytes = self.buf.bytes_mut();
        let room = bytes.len().min(MAX_FRAME_END);
        match bytes
            .get_mut(self.len..end)
            .filter(|_| end <= room)
            .and_then(|dst| copy(dst, rows))
        {
            Some(()) => {
                self.len = end;
                self.count += count;
                Ok(())
            }
            None => {
                let rule = Rule::BufferTooSmall {
                    needed: end,
                    have: room,
                };
                Err(Error::encode(rule, Field::Row, self.len)
                    .in_frame(kind::ROWS)
                    .at_item(self.count))
            }
        }
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
        let count_at = HEAD_BYTES + core::mem::size_of::<RowsHead>() - 4;
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

/// The rows serialize as a sequence, in frame order.
#[cfg(feature = "serde")]
impl serde::Serialize for RowList<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl Rows<'_> {
    /// The row count of an encoded `Rows` frame (length prefix included),
    /// read from its head alone, nothing else checked: for a queue or a
    /// transport that counts the rows in frames it built itself. `None` for
    /// a frame of another kind or one too short to hold a head.
    ///
    /// ```
    /// use dendro_wire_core::{Row, Rows, RowsBuilder, RowsHeader};
    ///
    /// let mut buf = [0u8; 128];
    /// let header = RowsHeader { source: 0, seq: 7, index_state: (0, 0) };
    /// let mut rows = RowsBuilder::new(&mut buf, header).unwrap();
    /// rows.push(&Row { stream: "cpu", ts: 1, wall_offset: 0, row: &[1] }).unwrap();
    /// let len = rows.finish().unwrap();
    /// assert_eq!(Rows::count_in_frame(&buf[..len]), Some(1));
    /// assert_eq!(Rows::count_in_frame(&buf[..10]), None);
    /// ```
    pub fn count_in_frame(frame: &[u8]) -> Option<u32> {
        use zerocopy::FromBytes;
        let (head, rest) = FrameHead::ref_from_prefix(frame).ok()?;
        if head.kind != kind::ROWS {
            return None;
        }
        let (rows, _) = RowsHead::ref_from_prefix(rest).ok()?;
        Some(rows.count.get())
    }
}

#[cfg(test)]
mod tests {
    //! The decoder's fast walk against a plain field-by-field walk: the
    //! fast walk guesses row lengths, checks names a word at a time and
    //! reads ahead, and none of that may change what it accepts.

    extern crate std;

    use std::string::String;
    use std::vec::Vec;

    use super::*;

    /// The rows a plain walk reads at the start of `bytes`, and the bytes
    /// they take; `None` where a row is not whole or its name not UTF-8.
    /// Each field is read in turn, each name validated in full.
    fn plain_parse(bytes: &[u8], count: u32) -> Option<(Vec<Row<'_>>, usize)> {
        let mut at = 0usize;
        let mut field = |n: usize| {
            let b = bytes.get(at..at.checked_add(n)?)?;
            at += n;
            Some(b)
        };
        let mut rows = Vec::new();
        for _ in 0..count {
            let name_len = u32::from_le_bytes(field(4)?.try_into().ok()?);
            let stream = core::str::from_utf8(field(name_len as usize)?).ok()?;
            let ts = i64::from_le_bytes(field(8)?.try_into().ok()?);
            let wall_offset = i64::from_le_bytes(field(8)?.try_into().ok()?);
            let row_len = u32::from_le_bytes(field(4)?.try_into().ok()?);
            let row = field(row_len as usize)?;
            rows.push(Row {
                stream,
                ts,
                wall_offset,
                row,
            });
        }
        Some((rows, at))
    }

    /// Stream names of every length from 0 to 40, ASCII and not.
    fn names() -> Vec<String> {
        let mut names: Vec<String> = (0..=40)
            .map(|n| "abcdefghijklmnopqrstuvwxyz0123456789ABCDE"[..n].into())
            .collect();
        for at in [0, 3, 7, 8, 14, 15, 16, 30] {
            let mut s: String = "n".repeat(at);
            s.push('é');
            names.push(s.clone());
            s.push_str("温度");
            names.push(s);
        }
        names
    }

    /// A small deterministic generator, so a failure is the same every run.
    struct Gen(u64);

    impl Gen {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// The rows part of a `Rows` frame: row lengths that repeat, so the
    /// guess holds, and change, so it fails.
    fn rows_bytes(g: &mut Gen, names: &[String], count: usize) -> Vec<u8> {
        const ROW_LENS: [usize; 8] = [32, 32, 32, 0, 1, 33, 100, 32];
        let mut out = Vec::new();
        for i in 0..count {
            let name = names[g.below(names.len())].as_bytes();
            let row_len = ROW_LENS[g.below(ROW_LENS.len())];
            out.extend_from_slice(&(name.len() as u32).to_le_bytes());
            out.extend_from_slice(name);
            out.extend_from_slice(&(i as i64).to_le_bytes());
            out.extend_from_slice(&(-3i64).to_le_bytes());
            out.extend_from_slice(&(row_len as u32).to_le_bytes());
            out.extend((0..row_len).map(|b| b as u8));
        }
        out
    }

    #[test]
    fn the_fast_walk_accepts_exactly_what_a_plain_walk_accepts() {
        let names = names();
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let (mut accepted, mut refused) = (0, 0);
        for frame in 0..60 {
            let count = 1 + frame % 12;
            let bytes = rows_bytes(&mut g, &names, count);
            let count = count as u32;
            assert_eq!(walk_rows(&bytes, count), Some(bytes.len()));
            let mut check = |b: &[u8], count: u32| {
                let want = plain_parse(b, count).map(|(_, used)| used);
                assert_eq!(walk_rows(b, count), want, "{b:?}, {count} rows");
                if want.is_some() {
                    accepted += 1;
                } else {
                    refused += 1;
                }
            };
            // Every cut, and a count one too many or too few.
            for cut in 0..bytes.len() {
                check(&bytes[..cut], count);
            }
            check(&bytes, count + 1);
            check(&bytes, count - 1);
            // Every byte changed: a length one off either way, a high bit,
            // a lone UTF-8 lead byte.
            let mut b = bytes.clone();
            for at in 0..b.len() {
                let was = b[at];
                for now in [was.wrapping_add(1), was.wrapping_sub(1), was ^ 0x80, 0xc3] {
                    b[at] = now;
                    check(&b, count);
                }
                b[at] = was;
            }
        }
        // Both answers were reached many times, so the comparison bites.
        assert!(
            accepted > 10_000 && refused > 10_000,
            "{accepted} accepted, {refused} refused"
        );
    }

    #[test]
    fn iterating_yields_every_row_as_a_plain_parse_reads_it() {
        let names = names();
        let mut g = Gen(0x6a09_e667_f3bc_c908);
        for frame in 0..60 {
            let count = frame % 12;
            let bytes = rows_bytes(&mut g, &names, count);
            let (want, used) = plain_parse(&bytes, count as u32).unwrap();
            assert_eq!(used, bytes.len());
            let list = RowList(Repr::Wire {
                count: count as u32,
                bytes: &bytes,
            });
            assert_eq!(list.iter().collect::<Vec<_>>(), want);
        }
    }

    /// A row as a plain encoder writes it, field by field.
    fn plain_row(out: &mut Vec<u8>, row: &Row<'_>) {
        out.extend_from_slice(&(row.stream.len() as u32).to_le_bytes());
        out.extend_from_slice(row.stream.as_bytes());
        out.extend_from_slice(&row.ts.to_le_bytes());
        out.extend_from_slice(&row.wall_offset.to_le_bytes());
        out.extend_from_slice(&(row.row.len() as u32).to_le_bytes());
        out.extend_from_slice(row.row);
    }

    #[test]
    fn the_builder_and_emit_write_every_row_as_a_plain_encoder_does() {
        // Every name length to 40 and every row length to 80 cross each
        // size class of the short copies, and the `memcpy` beyond them.
        let names = names();
        let bytes: Vec<u8> = (0..80u8).map(|b| b.wrapping_mul(37) ^ 0x5a).collect();
        let mut buf = [0xeeu8; 512];
        for (i, name) in names.iter().enumerate() {
            for row_len in 0..=bytes.len() {
                let row = Row {
                    stream: name,
                    ts: i as i64 - 7,
                    wall_offset: -(row_len as i64),
                    row: &bytes[..row_len],
                };
                let mut want = Vec::new();
                plain_row(&mut want, &row);
                // Cleared each time, so a byte left from the last row
                // cannot pass for one this row wrote.
                buf.fill(0xee);
                let mut b = RowsBuilder::new(
                    &mut buf[..],
                    RowsHeader {
                        source: 1,
                        seq: 2,
                        index_state: (3, 4),
                    },
                )
                .unwrap();
                let head = b.frame_len();
                b.push(&row).unwrap();
                b.push(&row).unwrap();
                let n = b.finish().unwrap();
                let (one, two) = buf[head..n].split_at(want.len());
                assert_eq!((one, two), (&want[..], &want[..]), "{name:?}, {row_len}");

                let rows = [row, row];
                let frame = Rows {
                    source: 1,
                    seq: 2,
                    index_state: (3, 4),
                    rows: RowList::from_slice(&rows),
                };
                let mut emitted = [0u8; 512];
                assert_eq!(crate::Frame::Rows(frame).emit(&mut emitted), Ok(n));
                assert_eq!(emitted[..n], buf[..n]);
            }
        }
    }

    #[test]
    fn a_row_that_does_not_fit_leaves_the_frame_as_it_was() {
        let row = Row {
            stream: "net/rx_bytes",
            ts: 5,
            wall_offset: 6,
            row: &[9; 32],
        };
        let head = HEAD_BYTES + core::mem::size_of::<RowsHead>();
        let one = head + row.encoded_len();
        // Every buffer size from one row's frame to two rows' but a byte.
        for size in one..one + row.encoded_len() {
            let mut buf = std::vec![0u8; size];
            let mut b = RowsBuilder::new(
                &mut buf[..],
                RowsHeader {
                    source: 0,
                    seq: 0,
                    index_state: (0, 0),
                },
            )
            .unwrap();
            b.push(&row).unwrap();
            let e = b.push(&row).unwrap_err();
            let needed = one + row.encoded_len();
            assert_eq!(e.rule(), Rule::BufferTooSmall { needed, have: size });
            assert_eq!(
                (e.field(), e.offset(), e.item()),
                (Field::Row, one, Some(1))
            );
            assert_eq!((b.frame_len(), b.row_count()), (one, 1));
            assert_eq!(b.finish(), Ok(one));
            match crate::decode(&buf[..one]) {
                Ok(crate::Status::Complete((crate::Frame::Rows(r), used))) => {
                    assert_eq!(used, one);
                    assert_eq!(r.rows.iter().collect::<Vec<_>>(), [row]);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_name_is_utf8_exactly_when_the_validator_says_so() {
        let mut bytes = [b'a'; 40 + NAME_WORD];
        for len in 0..=40 {
            for at in 0..len.max(1) {
                for high in [0x80, 0xc3, 0xe6, 0xff] {
                    let was = bytes[at];
                    bytes[at] = high;
                    let name = &bytes[..len];
                    let want = core::str::from_utf8(name).is_ok();
                    assert_eq!(is_utf8(name, bytes.first_chunk()), want, "{name:?}");
                    assert_eq!(is_utf8(name, None), want, "{name:?} without a word");
                    bytes[at] = was;
                }
            }
        }
        for name in names() {
            let mut padded = name.clone().into_bytes();
            padded.resize(name.len() + NAME_WORD, 0xff);
            assert!(is_utf8(name.as_bytes(), padded.first_chunk()), "{name:?}");
        }
    }
}
