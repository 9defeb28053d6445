//! `Segment`, kind 4 ([protocol §4.4](crate::protocol)).

use zerocopy::little_endian::{I64, U64};

use crate::codec::{bytes_len, opt_bytes_len, Cursor, Out};
use crate::error::{Error, Field};
use crate::frame::{encodable, kind, Decode, Encode};
use crate::layout::SegmentMeta;

/// A sealed segment, bound for `segments`: what makes catch-up cheap.
///
/// `rows`, `first_ts` and `last_ts` describe the segment, never the rows
/// that produced it; `bytes` is one parquet file, passed through unchanged.
///
/// ```
/// use dendro_wire_core::Segment;
///
/// let parquet = b"PAR1...PAR1";
/// let segment = Segment {
///     source: 0, stream: "cpu/usage", rows: 5_000, first_ts: 0, last_ts: 4_999,
///     bytes: parquet, caller_index: None,
/// };
/// let mut buf = vec![0u8; segment.buffer_len()?];
/// segment.emit(&mut buf)?;
/// # Ok::<(), dendro_wire_core::Error>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    /// Which source, by handshake ordinal.
    pub source: u32,
    /// The stream the segment belongs to.
    pub stream: &'a str,
    /// The rows in the segment.
    pub rows: u64,
    /// The segment's first timestamp.
    pub first_ts: i64,
    /// The segment's last timestamp.
    pub last_ts: i64,
    /// One parquet file, byte-identical.
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "crate::codec::serialize_bytes")
    )]
    pub bytes: &'a [u8],
    /// The caller's index over this segment; `None` is absent, which is not
    /// the same as empty.
    #[cfg_attr(
        feature = "serde",
        serde(serialize_with = "crate::codec::serialize_opt_bytes")
    )]
    pub caller_index: Option<&'a [u8]>,
}

impl<'a> Decode<'a> for Segment<'a> {
    const KIND: u8 = kind::SEGMENT;

    fn parse(c: &mut Cursor<'a>) -> Result<Self, Error> {
        let source = c.u32(Field::Source)?;
        let stream = c.str(Field::Stream)?;
        let meta = c.fixed::<SegmentMeta>(Field::SegmentRows)?;
        Ok(Segment {
            source,
            stream,
            rows: meta.rows.get(),
            first_ts: meta.first_ts.get(),
            last_ts: meta.last_ts.get(),
            bytes: c.bytes(Field::Bytes)?,
            caller_index: c.opt_bytes(Field::CallerIndex)?,
        })
    }
}

impl Encode for Segment<'_> {
    fn kind(&self) -> u8 {
        kind::SEGMENT
    }

    fn payload_len(&self, _at: usize) -> Result<usize, Error> {
        Ok(
            (4 + bytes_len(self.stream.len()) + core::mem::size_of::<SegmentMeta>())
                .saturating_add(bytes_len(self.bytes.len()))
                .saturating_add(opt_bytes_len(self.caller_index)),
        )
    }

    fn emit_payload(&self, out: &mut Out<'_>) -> Result<(), Error> {
        out.u32(self.source)?;
        out.bytes(self.stream.as_bytes())?;
        out.fixed(&SegmentMeta {
            rows: U64::new(self.rows),
            first_ts: I64::new(self.first_ts),
            last_ts: I64::new(self.last_ts),
        })?;
        out.bytes(self.bytes)?;
        out.opt_bytes(self.caller_index)
    }
}

encodable!(Segment<'_>);
