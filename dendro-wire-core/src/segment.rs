//! `Segment`, kind 4 ([protocol §4.4](crate::protocol)).

use core::mem::offset_of;

use zerocopy::little_endian::{I64, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codec::{bytes_len, opt_bytes_len, Cursor, FixedRun, Out};
use crate::error::{Error, Field};
use crate::framing::{encodable, Decode, Encode};
use crate::kind;

/// The fixed run after the stream name, up to the parquet bytes (§4.4).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct SegmentMeta {
    rows: U64,
    first_ts: I64,
    last_ts: I64,
}

impl FixedRun for SegmentMeta {
    const FIELDS: &'static [(u8, Field)] = &[
        (offset_of!(Self, rows) as u8, Field::SegmentRows),
        (offset_of!(Self, first_ts) as u8, Field::FirstTs),
        (offset_of!(Self, last_ts) as u8, Field::LastTs),
    ];
}

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
        let meta = c.fixed::<SegmentMeta>()?;
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

impl core::fmt::Display for Segment<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Segment source={} stream={:?} rows={} ts={}..={} bytes={}B caller_index=",
            self.source,
            self.stream,
            self.rows,
            self.first_ts,
            self.last_ts,
            self.bytes.len()
        )?;
        match self.caller_index {
            Some(c) => write!(f, "{}B", c.len()),
            None => f.write_str("absent"),
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Segment<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Segment source={=u32} rows={=u64} bytes={=usize}B",
            self.source,
            self.rows,
            self.bytes.len()
        )
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::frame::golden::{assert_golden, cat};
    use crate::{decode, Frame, Rule};

    /// Source 6, stream t, rows 11, first_ts -8, last_ts 8, bytes PAR1, and
    /// a caller index 07 07 or none; payloads of 48 and 42 bytes. Written
    /// from the protocol's §4.4.
    fn bytes(caller_index: bool) -> std::vec::Vec<u8> {
        let index: &[&[u8]] = match caller_index {
            true => &[&[1], &[2, 0, 0, 0], &[7, 7]], // present, len 2, bytes
            false => &[&[0]],                        // absent
        };
        let len = if caller_index { 48 } else { 42 } + 1;
        cat(&[
            &[&[len, 0, 0, 0][..], &[4]].concat(), // len, kind: Segment
            &[6, 0, 0, 0],                         // source
            &[1, 0, 0, 0],                         // stream len
            b"t",
            &[11, 0, 0, 0, 0, 0, 0, 0],                        // rows
            &[0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // first_ts = -8
            &[8, 0, 0, 0, 0, 0, 0, 0],                         // last_ts
            &[4, 0, 0, 0],                                     // bytes len
            b"PAR1",
            &index.concat(),
        ])
    }

    fn frame(caller_index: Option<&'static [u8]>) -> Segment<'static> {
        Segment {
            source: 6,
            stream: "t",
            rows: 11,
            first_ts: -8,
            last_ts: 8,
            bytes: b"PAR1",
            caller_index,
        }
    }

    #[test]
    fn the_golden_bytes_are_the_frame() {
        assert_golden(&bytes(true), Frame::Segment(frame(Some(&[7, 7]))));
        assert_golden(&bytes(false), Frame::Segment(frame(None)));
    }

    #[test]
    fn absent_and_empty_are_different_bytes() {
        let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
        let na = frame(Some(&[])).emit(&mut a).unwrap();
        let nb = frame(None).emit(&mut b).unwrap();
        assert_ne!(&a[..na], &b[..nb]);
        let back = |bytes| match decode(bytes) {
            Ok(crate::Status::Complete((Frame::Segment(s), _))) => s.caller_index,
            other => panic!("{other:?}"),
        };
        assert_eq!(back(&a[..na]), Some(&[][..]));
        assert_eq!(back(&b[..nb]), None);
    }

    #[test]
    fn a_short_meta_is_named_by_its_field() {
        // The frame ends 3 bytes into last_ts.
        let b = &mut bytes(false)[..33];
        b[0] = 29;
        let e = decode(b).unwrap_err();
        assert_eq!(e.rule(), Rule::EndsEarly { needed: 8, left: 3 });
        assert_eq!((e.field(), e.offset()), (Field::LastTs, 30));
    }

    #[test]
    fn one_line_for_a_person() {
        assert_eq!(
            std::format!("{}", Frame::Segment(frame(None))),
            "Segment source=6 stream=\"t\" rows=11 ts=-8..=8 bytes=4B caller_index=absent"
        );
    }
}
