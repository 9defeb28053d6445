//! `Index`, kind 2 ([protocol §4.2](crate::protocol)).

use zerocopy::little_endian::{I64, U64};

use crate::codec::{bytes_len, Cursor, Out};
use crate::error::{Error, Field, Rule};
use crate::frame::{encodable, kind, Decode, Encode};
use crate::index_state::IndexState;
use crate::layout::IndexTail;

/// Whether an [`Index`] entry carries the whole slot set or a change to it.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// Every live slot (byte 0). Sent first on every connect (rule 2) and
    /// again periodically (rule 7).
    Full,
    /// What changed since the previous entry (byte 1); meaningless without
    /// the `Full` before it.
    Delta,
}

impl IndexKind {
    /// The wire byte.
    pub const fn to_byte(self) -> u8 {
        match self {
            IndexKind::Full => 0,
            IndexKind::Delta => 1,
        }
    }

    /// The kind of a wire byte, `None` for anything but 0 or 1.
    pub const fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(IndexKind::Full),
            1 => Some(IndexKind::Delta),
            _ => None,
        }
    }
}

/// One entry of the caller's secondary index, bound for `caller_rows`.
///
/// `blob` is opaque and stays opaque; `state` is the publisher's hash of the
/// complete slot set after this entry is applied, and is the only thing a
/// subscriber compares.
///
/// ```
/// use dendro_wire_core::{Index, IndexKind, SlotSetHash};
///
/// let mut slots = SlotSetHash::new();
/// slots.insert(b"cpu0");
/// let entry = Index {
///     source: 0,
///     stream: "cpu/slots",
///     ts: 1_000,
///     kind: IndexKind::Full,
///     state: slots.state(),
///     blob: b"cpu0",
/// };
/// assert_eq!(entry.buffer_len()?, 4 + 1 + 4 + (4 + 9) + 8 + 1 + 16 + (4 + 4));
/// # Ok::<(), dendro_wire_core::Error>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Index<'a> {
    /// Which source, by handshake ordinal.
    pub source: u32,
    /// The `caller_rows` stream name.
    pub stream: &'a str,
    /// When the change happened, in the caller's timestamp unit.
    pub ts: i64,
    /// Whole set or change to it.
    pub kind: IndexKind,
    /// The hash of the complete slot set after this entry.
    pub state: IndexState,
    /// The entry, never decoded here.
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "crate::codec::serialize_bytes")
    )]
    pub blob: &'a [u8],
}

impl<'a> Decode<'a> for Index<'a> {
    const KIND: u8 = kind::INDEX;

    fn parse(c: &mut Cursor<'a>) -> Result<Self, Error> {
        let source = c.u32(Field::Source)?;
        let stream = c.str(Field::Stream)?;
        let kind_at = c.at() + 8;
        let tail = c.fixed::<IndexTail>(Field::Ts)?;
        let kind = IndexKind::from_byte(tail.kind).ok_or_else(|| {
            c.error(
                Rule::NotAnIndexKind { value: tail.kind },
                Field::IndexKind,
                kind_at,
            )
        })?;
        Ok(Index {
            source,
            stream,
            ts: tail.ts.get(),
            kind,
            state: (tail.state_0.get(), tail.state_1.get()),
            blob: c.bytes(Field::Blob)?,
        })
    }
}

impl Encode for Index<'_> {
    fn kind(&self) -> u8 {
        kind::INDEX
    }

    fn payload_len(&self, _at: usize) -> Result<usize, Error> {
        Ok(4 + bytes_len(self.stream.len())
            + core::mem::size_of::<IndexTail>()
            + bytes_len(self.blob.len()))
    }

    fn emit_payload(&self, out: &mut Out<'_>) -> Result<(), Error> {
        out.u32(self.source)?;
        out.bytes(self.stream.as_bytes())?;
        out.fixed(&IndexTail {
            ts: I64::new(self.ts),
            kind: self.kind.to_byte(),
            state_0: U64::new(self.state.0),
            state_1: U64::new(self.state.1),
        })?;
        out.bytes(self.blob)
    }
}

encodable!(Index<'_>);
