//! The layouts of a `Rows` frame ([protocol §4.3](crate::protocol)): its
//! fixed run up to the first row, a row's fixed run, and a row as a caller
//! holds it. A leaf: the decoder (`mod.rs`), the walk, the builder and the
//! list all read them here, and this file reads none of them.

use core::mem::offset_of;

use zerocopy::little_endian::{I64, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codec::{bytes_len, FixedRun};
use crate::error::Field;

/// The frame's fixed run, up to its first row.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct RowsHead {
    pub source: U32,
    pub seq: U64,
    pub index_state_0: U64,
    pub index_state_1: U64,
    pub count: U32,
}

impl FixedRun for RowsHead {
    const FIELDS: &'static [(u8, Field)] = &[
        (offset_of!(Self, source) as u8, Field::Source),
        (offset_of!(Self, seq) as u8, Field::Seq),
        (offset_of!(Self, index_state_0) as u8, Field::IndexState),
        (offset_of!(Self, count) as u8, Field::Count),
    ];
}

/// A row's fixed run, after its stream name and up to its `row` bytes.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct RowTail {
    pub ts: I64,
    pub wall_offset: I64,
    pub row_len: U32,
}

impl FixedRun for RowTail {
    const FIELDS: &'static [(u8, Field)] = &[
        (offset_of!(Self, ts) as u8, Field::Ts),
        (offset_of!(Self, wall_offset) as u8, Field::WallOffset),
        (offset_of!(Self, row_len) as u8, Field::Row),
    ];
}

/// The bytes of a row's fixed run: `ts`, `wall_offset`, the row's length.
pub(crate) const TAIL_BYTES: usize = core::mem::size_of::<RowTail>();

/// One observation of a `Rows` frame.
///
/// ```
/// use dendro_wire_core::Row;
///
/// let row = Row { stream: "cpu/usage", ts: 1, wall_offset: 0, row: &[0; 32] };
/// assert_eq!(row.wire_len(), 4 + 9 + 20 + 32);
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
    pub const fn wire_len(&self) -> usize {
        bytes_len(self.stream.len()) + core::mem::size_of::<RowTail>() + self.row.len()
    }
}
