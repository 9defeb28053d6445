//! `SourceUpdate`, kind 6 (added in dendro 0.6.1; [protocol §4.6](crate::protocol)).

use zerocopy::little_endian::{I64, U32};

use crate::codec::{Cursor, Out};
use crate::error::{Error, Field};
use crate::frame::{encodable, kind, Decode, Encode};
use crate::layout::SourceUpdateHead;
use crate::map::Map;

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
        let head = c.fixed::<SourceUpdateHead>(Field::Source)?;
        Ok(SourceUpdate {
            source: head.source.get(),
            ts: head.ts.get(),
            labels: c.map(Field::Labels)?,
            metadata: c.map(Field::Metadata)?,
        })
    }
}

impl Encode for SourceUpdate<'_> {
    fn kind(&self) -> u8 {
        kind::SOURCE_UPDATE
    }

    fn payload_len(&self, at: usize) -> Result<usize, Error> {
        let labels_at = at + core::mem::size_of::<SourceUpdateHead>();
        let labels = self.labels.encoded_len(Field::Labels, labels_at)?;
        let metadata = self
            .metadata
            .encoded_len(Field::Metadata, labels_at + labels)?;
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
