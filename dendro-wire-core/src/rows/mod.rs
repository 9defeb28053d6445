//! `Rows`, kind 3 ([protocol §4.3](crate::protocol)): the hot path.
//!
//! A row's layout is read in one place, `walk` (the decoder's fast walk and
//! the iterator's step), and written in one place, `builder`; `list` is the
//! view a caller iterates. This file holds the frame: its fixed runs, the
//! [`Rows`] view, and how the frame is decoded, sized and printed.

use core::mem::offset_of;

use zerocopy::FromBytes;

use crate::codec::{Cursor, Items, Out, LEN_BYTES};
use crate::error::{Error, Field, Rule};
use crate::framing::{encodable, Decode, Encode, FrameHead};
use crate::index_state::IndexState;
use crate::kind;

mod builder;
mod layout;
mod list;
#[cfg(test)]
mod tests;
mod walk;

#[cfg(unaligned_words)]
pub(crate) use builder::write_row_tail;
use builder::{emit_row, rows_head};
pub(crate) use builder::{write_prepared_row, write_rows_head, ROWS_HEAD_BYTES};
pub use builder::{RowsBuilder, RowsHeader};
pub use layout::Row;
pub(crate) use layout::{RowTail, RowsHead, TAIL_BYTES};
pub use list::{RowIter, RowList};
use walk::walk_rows;
pub(crate) use walk::{split_row, tail};

/// The smallest a row can be: an empty stream name and an empty row.
const MIN_ROW_BYTES: usize = LEN_BYTES + core::mem::size_of::<RowTail>();

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
        let count_at = c.at() + offset_of!(RowsHead, count);
        let head = c.fixed::<RowsHead>()?;
        let count = head.count.get();
        // A count of 4 billion over 30 bytes is refused here, not after 30
        // bytes of rows.
        c.check_count(count, Field::Count, MIN_ROW_BYTES, count_at)?;
        let start = c.at();
        let frame = |bytes| Rows {
            source: head.source.get(),
            seq: head.seq.get(),
            index_state: (head.index_state_0.get(), head.index_state_1.get()),
            rows: RowList(Items::Wire { count, bytes }),
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
            let tail = c.fixed::<RowTail>()?;
            let row_at = c.at() - TAIL_BYTES + offset_of!(RowTail, row_len);
            c.take_at(tail.row_len.get() as usize, Field::Row, row_at)?;
        }
        c.set_item(None);
        Ok(frame(c.since(start)))
    }
}

impl Encode for Rows<'_> {
    fn kind(&self) -> u8 {
        kind::ROWS
    }

    fn payload_len(&self, _at: usize) -> Result<usize, Error> {
        Ok(core::mem::size_of::<RowsHead>().saturating_add(self.rows.wire_len()))
    }

    fn emit_payload(&self, out: &mut Out<'_>) -> Result<(), Error> {
        out.fixed(&rows_head(
            self.source,
            self.seq,
            self.index_state,
            self.rows.len() as u32,
        ))?;
        match self.rows.0 {
            Items::Wire { bytes, .. } => out.put(bytes),
            Items::Given(rows) => rows.iter().try_for_each(|row| emit_row(out, row)),
        }
    }
}

encodable!(Rows<'_>);

/// One line: the source, `seq`, the index state, the rows and their bytes,
/// and the first row's stream and timestamp.
impl core::fmt::Display for Rows<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let bytes: usize = self.rows.iter().map(|row| row.row.len()).sum();
        write!(
            f,
            "Rows source={} seq={} index_state=({:#x}, {:#x}) rows={} row_bytes={}",
            self.source,
            self.seq,
            self.index_state.0,
            self.index_state.1,
            self.rows.len(),
            bytes
        )?;
        if let Some(first) = self.rows.iter().next() {
            write!(f, " first={:?}@{}", first.stream, first.ts)?;
        }
        Ok(())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Rows<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Rows source={=u32} seq={=u64} rows={=usize}",
            self.source,
            self.seq,
            self.rows.len()
        )
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
        let (head, rest) = FrameHead::ref_from_prefix(frame).ok()?;
        if head.kind != kind::ROWS {
            return None;
        }
        let (rows, _) = RowsHead::ref_from_prefix(rest).ok()?;
        Some(rows.count.get())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Row<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Row stream={=str} ts={=i64} wall_offset={=i64} row={=usize}B",
            self.stream,
            self.ts,
            self.wall_offset,
            self.row.len()
        )
    }
}
