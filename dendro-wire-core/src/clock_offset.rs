//! `ClockOffset`, kind 5 ([protocol §4.5](crate::protocol)).

use zerocopy::little_endian::{I64, U32};

use crate::codec::{Cursor, Out};
use crate::error::{Error, Field};
use crate::frame::{encodable, kind, Decode, Encode};
use crate::layout::ClockOffsetBody;

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
        let body = c.fixed::<ClockOffsetBody>(Field::Source)?;
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
