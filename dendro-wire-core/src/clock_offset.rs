//! `ClockOffset`, kind 5 ([protocol §4.5](crate::protocol)).

use core::mem::offset_of;

use zerocopy::little_endian::{I64, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codec::{Cursor, FixedRun, Out};
use crate::error::{Error, Field};
use crate::framing::{encodable, Decode, Encode};
use crate::kind;

/// The whole payload (§4.5).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct ClockOffsetBody {
    source: U32,
    ts: I64,
    offset_ns: I64,
}

impl FixedRun for ClockOffsetBody {
    const FIELDS: &'static [(u8, Field)] = &[
        (offset_of!(Self, source) as u8, Field::Source),
        (offset_of!(Self, ts) as u8, Field::Ts),
        (offset_of!(Self, offset_ns) as u8, Field::OffsetNs),
    ];
}

/// One clock-drift observation, bound for `clock_offsets`.
///
/// ```
/// use dendro_wire_core::ClockOffset;
///
/// let mut buf = [0u8; 25];
/// let n = ClockOffset { source: 0, ts: 10, offset_ns: -3 }.emit(&mut buf)?;
/// assert_eq!(n, 25); // 4 of length, 1 of kind, 20 of payload
/// # Ok::<(), dendro_wire_core::Error>(())
/// ```
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockOffset {
    /// Which source, by handshake ordinal.
    pub source: u32,
    /// The observation's timestamp.
    pub ts: i64,
    /// Wall time minus `ts` at that moment.
    pub offset_ns: i64,
}

impl<'a> Decode<'a> for ClockOffset {
    const KIND: u8 = kind::CLOCK_OFFSET;

    fn parse(c: &mut Cursor<'a>) -> Result<Self, Error> {
        let body = c.fixed::<ClockOffsetBody>()?;
        Ok(ClockOffset {
            source: body.source.get(),
            ts: body.ts.get(),
            offset_ns: body.offset_ns.get(),
        })
    }
}

impl Encode for ClockOffset {
    fn kind(&self) -> u8 {
        kind::CLOCK_OFFSET
    }

    fn payload_len(&self, _at: usize) -> Result<usize, Error> {
        Ok(core::mem::size_of::<ClockOffsetBody>())
    }

    fn emit_payload(&self, out: &mut Out<'_>) -> Result<(), Error> {
        out.fixed(&ClockOffsetBody {
            source: U32::new(self.source),
            ts: I64::new(self.ts),
            offset_ns: I64::new(self.offset_ns),
        })
    }
}

encodable!(ClockOffset);

impl core::fmt::Display for ClockOffset {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "ClockOffset source={} ts={} offset_ns={}",
            self.source, self.ts, self.offset_ns
        )
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::frame::golden::{assert_golden, cat};
    use crate::Frame;

    #[test]
    fn the_golden_bytes_are_the_frame() {
        // Source 2, ts i64::MIN, offset_ns i64::MAX; a payload of 20 bytes.
        // Written from the protocol's §4.5.
        let bytes = cat(&[
            &[21, 0, 0, 0],                                    // len
            &[5],                                              // kind: ClockOffset
            &[2, 0, 0, 0],                                     // source
            &[0, 0, 0, 0, 0, 0, 0, 0x80],                      // ts = i64::MIN
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // offset_ns = i64::MAX
        ]);
        let frame = ClockOffset {
            source: 2,
            ts: i64::MIN,
            offset_ns: i64::MAX,
        };
        assert_golden(&bytes, Frame::ClockOffset(frame));
        assert_eq!(
            std::format!("{}", Frame::ClockOffset(frame)),
            "ClockOffset source=2 ts=-9223372036854775808 offset_ns=9223372036854775807"
        );
    }
}
