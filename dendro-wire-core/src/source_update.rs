//! `SourceUpdate`, kind 6 (added in dendro 0.6.1; [protocol §4.6](crate::protocol)).

use core::mem::offset_of;

use zerocopy::little_endian::{I64, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codec::{Cursor, FixedRun, Out};
use crate::error::{Error, Field};
use crate::framing::{encodable, Decode, Encode};
use crate::kind;
use crate::map::Map;

/// The fixed run before the maps (§4.6).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct SourceUpdateHead {
    source: U32,
    ts: I64,
}

impl FixedRun for SourceUpdateHead {
    const FIELDS: &'static [(u8, Field)] = &[
        (offset_of!(Self, source) as u8, Field::Source),
        (offset_of!(Self, ts) as u8, Field::Ts),
    ];
}

/// A source's labels and metadata, sent when either changes after its
/// handshake.
///
/// Both maps are whole, not the changed keys: a subscriber replaces its
/// copy's with them, keeping its own `encoder` and `writer_sessions`
/// metadata keys.
///
/// ```
/// use dendro_wire_core::{Map, Rule, SourceUpdate};
///
/// let update = SourceUpdate {
///     source: 0,
///     ts: 1_700_000_000_000_000_000,
///     labels: Map::from_pairs(&[("host", "web-01"), ("rack", "r7")]),
///     metadata: Map::EMPTY,
/// };
/// assert!(update.buffer_len().is_ok());
/// // Maps are given in key order; out of order is refused, not sorted.
/// let bad = SourceUpdate { labels: Map::from_pairs(&[("rack", "r7"), ("host", "web-01")]), ..update };
/// assert_eq!(bad.buffer_len().unwrap_err().rule(), Rule::KeysNotAscending);
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceUpdate<'a> {
    /// Which source, by handshake ordinal.
    pub source: u32,
    /// The publisher's wall time when it saw the change, in ns.
    pub ts: i64,
    /// The source's labels, whole.
    pub labels: Map<'a>,
    /// The source's metadata, whole.
    pub metadata: Map<'a>,
}

impl<'a> Decode<'a> for SourceUpdate<'a> {
    const KIND: u8 = kind::SOURCE_UPDATE;

    fn parse(c: &mut Cursor<'a>) -> Result<Self, Error> {
        let head = c.fixed::<SourceUpdateHead>()?;
        Ok(SourceUpdate {
            source: head.source.get(),
            ts: head.ts.get(),
            labels: Map::parse(c, Field::Labels)?,
            metadata: Map::parse(c, Field::Metadata)?,
        })
    }
}

impl Encode for SourceUpdate<'_> {
    fn kind(&self) -> u8 {
        kind::SOURCE_UPDATE
    }

    fn payload_len(&self, at: usize) -> Result<usize, Error> {
        let labels_at = at + core::mem::size_of::<SourceUpdateHead>();
        let labels = self.labels.wire_len(Field::Labels, labels_at)?;
        let metadata = self
            .metadata
            .wire_len(Field::Metadata, labels_at + labels)?;
        Ok(labels_at - at + labels + metadata)
    }

    fn emit_payload(&self, out: &mut Out<'_>) -> Result<(), Error> {
        out.fixed(&SourceUpdateHead {
            source: U32::new(self.source),
            ts: I64::new(self.ts),
        })?;
        self.labels.emit(out)?;
        self.metadata.emit(out)
    }
}

encodable!(SourceUpdate<'_>);

impl core::fmt::Display for SourceUpdate<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "SourceUpdate source={} ts={} labels={} metadata={}",
            self.source, self.ts, self.labels, self.metadata
        )
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for SourceUpdate<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "SourceUpdate source={=u32} ts={=i64} labels={=usize} metadata={=usize}",
            self.source,
            self.ts,
            self.labels.len(),
            self.metadata.len()
        )
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::frame::golden::{assert_golden, cat};
    use crate::{decode, Frame, Rule};

    /// Source 5, ts -1, labels {a: 1, b: 2}, metadata {encoder: v3}; a
    /// payload of 57 bytes. Written from the protocol's §4.6.
    fn bytes() -> std::vec::Vec<u8> {
        cat(&[
            &[58, 0, 0, 0], // len
            &[6],           // kind: SourceUpdate
            &[5, 0, 0, 0],  // source
            &[0xff; 8],     // ts = -1
            &[2, 0, 0, 0],  // labels: 2 entries
            &[1, 0, 0, 0],
            b"a",
            &[1, 0, 0, 0],
            b"1",
            &[1, 0, 0, 0],
            b"b",
            &[1, 0, 0, 0],
            b"2",
            &[1, 0, 0, 0], // metadata: 1 entry
            &[7, 0, 0, 0],
            b"encoder",
            &[2, 0, 0, 0],
            b"v3",
        ])
    }

    fn frame() -> SourceUpdate<'static> {
        SourceUpdate {
            source: 5,
            ts: -1,
            labels: Map::from_pairs(&[("a", "1"), ("b", "2")]),
            metadata: Map::from_pairs(&[("encoder", "v3")]),
        }
    }

    #[test]
    fn the_golden_bytes_are_the_frame() {
        assert_golden(&bytes(), Frame::SourceUpdate(frame()));
    }

    #[test]
    fn keys_out_of_order_are_refused_at_the_key() {
        let mut b = bytes();
        b[25] = b'c'; // the first key, "a", becomes "c", after "b"
        let e = decode(&b).unwrap_err();
        assert_eq!(e.rule(), Rule::KeysNotAscending);
        assert_eq!(
            (e.field(), e.offset(), e.item()),
            (Field::Labels, 31, Some(1))
        );
    }

    #[test]
    fn one_line_for_a_person() {
        assert_eq!(
            std::format!("{}", Frame::SourceUpdate(frame())),
            "SourceUpdate source=5 ts=-1 labels={\"a\": \"1\", \"b\": \"2\"} \
             metadata={\"encoder\": \"v3\"}"
        );
    }
}
