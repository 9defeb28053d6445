//! `Index`, kind 2 ([protocol §4.2](crate::protocol)).

use core::mem::offset_of;

use zerocopy::little_endian::{I64, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codec::{bytes_len, Cursor, FixedRun, Out};
use crate::error::{Error, Field, Rule};
use crate::framing::{encodable, Decode, Encode};
use crate::index_state::IndexState;
use crate::kind;

/// The fixed run after the stream name, up to the blob (§4.2).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct IndexTail {
    pub ts: I64,
    pub kind: u8,
    pub state_0: U64,
    pub state_1: U64,
}

impl IndexTail {
    /// The run in little-endian words, three bytes in: both states are
    /// then whole aligned words. Where words may not be unaligned
    /// (`build.rs`), a run built as an `IndexTail` was stored a byte at a
    /// time; the publisher writes this one instead (`cargo xtask firmware`
    /// prints the footprint).
    pub(crate) fn words(ts: i64, kind: IndexKind, (state_0, state_1): IndexState) -> [u32; 7] {
        let lo = |v: u64| v as u32;
        let hi = |v: u64| (v >> 32) as u32;
        let ts = ts as u64;
        [
            lo(ts) << 24,
            lo(ts) >> 8 | hi(ts) << 24,
            hi(ts) >> 8 | u32::from(kind.to_byte()) << 24,
            lo(state_0),
            hi(state_0),
            lo(state_1),
            hi(state_1),
        ]
        .map(u32::to_le)
    }
}

impl FixedRun for IndexTail {
    const FIELDS: &'static [(u8, Field)] = &[
        (offset_of!(Self, ts) as u8, Field::Ts),
        (offset_of!(Self, kind) as u8, Field::IndexKind),
        (offset_of!(Self, state_0) as u8, Field::State),
    ];
}

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
        let kind_at = c.at() + offset_of!(IndexTail, kind);
        let tail = c.fixed::<IndexTail>()?;
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

impl core::fmt::Display for Index<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Index source={} stream={:?} ts={} kind={:?} state=({:#x}, {:#x}) blob={}B",
            self.source,
            self.stream,
            self.ts,
            self.kind,
            self.state.0,
            self.state.1,
            self.blob.len()
        )
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Index<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Index source={=u32} ts={=i64} kind={} blob={=usize}B",
            self.source,
            self.ts,
            self.kind,
            self.blob.len()
        )
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::frame::golden::{assert_golden, cat};
    use crate::{decode, Frame};

    #[test]
    fn the_tail_in_words_is_the_tail() {
        let tails = [
            (0, IndexKind::Full, (0, 0)),
            (-10, IndexKind::Delta, (3, 4)),
            (i64::MIN, IndexKind::Full, (u64::MAX, 1 << 63)),
            (
                0x0102_0304_0506_0708,
                IndexKind::Delta,
                (0x1122_3344_5566_7788, 9),
            ),
        ];
        for (ts, kind, state) in tails {
            let tail = IndexTail {
                ts: I64::new(ts),
                kind: kind.to_byte(),
                state_0: U64::new(state.0),
                state_1: U64::new(state.1),
            };
            let words = IndexTail::words(ts, kind, state);
            assert_eq!(&words.as_bytes()[3..], tail.as_bytes(), "{ts} {state:?}");
        }
    }

    /// Source 9, stream mem, ts -10, Full, state (3, 4), blob 01 fe; a
    /// payload of 42 bytes. Written from the protocol's §4.2.
    fn bytes() -> std::vec::Vec<u8> {
        cat(&[
            &[43, 0, 0, 0],                                    // len
            &[2],                                              // kind: Index
            &[9, 0, 0, 0],                                     // source
            &[3, 0, 0, 0],                                     // stream len
            b"mem",                                            // stream
            &[0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // ts = -10
            &[0],                                              // kind: Full
            &[3, 0, 0, 0, 0, 0, 0, 0],                         // state.0
            &[4, 0, 0, 0, 0, 0, 0, 0],                         // state.1
            &[2, 0, 0, 0],                                     // blob len
            &[0x01, 0xfe],                                     // blob
        ])
    }

    fn frame() -> Index<'static> {
        Index {
            source: 9,
            stream: "mem",
            ts: -10,
            kind: IndexKind::Full,
            state: (3, 4),
            blob: &[0x01, 0xfe],
        }
    }

    #[test]
    fn the_golden_bytes_are_the_frame() {
        assert_golden(&bytes(), Frame::Index(frame()));
        let delta = Index {
            kind: IndexKind::Delta,
            ..frame()
        };
        let mut b = bytes();
        b[24] = 1; // kind: Delta
        assert_golden(&b, Frame::Index(delta));
    }

    #[test]
    fn a_kind_byte_past_delta_is_refused_where_it_is() {
        let mut b = bytes();
        b[24] = 2;
        let e = decode(&b).unwrap_err();
        assert_eq!(e.rule(), Rule::NotAnIndexKind { value: 2 });
        assert_eq!((e.field(), e.offset()), (Field::IndexKind, 24));
    }

    #[test]
    fn a_short_state_is_named_by_its_field() {
        // The frame ends 5 bytes into the state.
        let b = &mut bytes()[..30];
        b[0] = 26;
        let e = decode(b).unwrap_err();
        assert_eq!(
            e.rule(),
            Rule::EndsEarly {
                needed: 16,
                left: 5
            }
        );
        assert_eq!((e.field(), e.offset()), (Field::State, 25));
    }

    #[test]
    fn one_line_for_a_person() {
        assert_eq!(
            std::format!("{}", Frame::Index(frame())),
            "Index source=9 stream=\"mem\" ts=-10 kind=Full state=(0x3, 0x4) blob=2B"
        );
    }
}
