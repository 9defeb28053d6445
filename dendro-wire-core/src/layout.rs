//! The fixed little-endian runs of [protocol §4](crate::protocol), one struct per run, shared by
//! the decoder (a borrowed view over the frame) and the encoder (the bytes to
//! copy out). Variable-length fields sit between these runs and are handled
//! by the cursor in `codec`.

use zerocopy::little_endian::{I64, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The length prefix and the kind byte that open every frame (§2).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct FrameHead {
    pub len: U32,
    pub kind: u8,
}

/// `Rows` up to its first row (§4.3).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct RowsHead {
    pub source: U32,
    pub seq: U64,
    pub index_state_0: U64,
    pub index_state_1: U64,
    pub count: U32,
}

/// A row after its stream name, up to its `row` bytes (§4.3).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct RowTail {
    pub ts: I64,
    pub wall_offset: I64,
    pub row_len: U32,
}

/// The whole `ClockOffset` payload (§4.5).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct ClockOffsetBody {
    pub source: U32,
    pub ts: I64,
    pub offset_ns: I64,
}

/// `Index` after its stream name, up to its blob (§4.2).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct IndexTail {
    pub ts: I64,
    pub kind: u8,
    pub state_0: U64,
    pub state_1: U64,
}

/// `Segment` after its stream name, up to its bytes (§4.4).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct SegmentMeta {
    pub rows: U64,
    pub first_ts: I64,
    pub last_ts: I64,
}

/// `Handshake` after its maps (§4.1).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct HandshakeTail {
    pub clock_anchor_wall_ns: I64,
    pub complete: u8,
}

/// `SourceUpdate` up to its maps ([protocol §4.6](crate::protocol), kind 6).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct SourceUpdateHead {
    pub source: U32,
    pub ts: I64,
}
