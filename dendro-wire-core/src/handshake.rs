//! `Handshake`, kind 1 ([protocol §4.1](crate::protocol)).

use core::mem::offset_of;

use zerocopy::little_endian::I64;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codec::{is_canonical_uuid, opt_bytes_len, Cursor, FixedRun, Out};
use crate::error::{Error, Field, Rule};
use crate::framing::{encodable, Decode, Encode};
use crate::kind;
use crate::map::Map;

/// The fixed run after the maps (§4.1).
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct HandshakeTail {
    clock_anchor_wall_ns: I64,
    complete: u8,
}

impl FixedRun for HandshakeTail {
    const FIELDS: &'static [(u8, Field)] = &[
        (
            offset_of!(Self, clock_anchor_wall_ns) as u8,
            Field::ClockAnchorWallNs,
        ),
        (offset_of!(Self, complete) as u8, Field::Complete),
    ];
}

/// A source's identity, and the ordinal every later frame for it carries.
///
/// The ordinal is unique within one connection and reassigned from zero on a
/// reconnect; the `uuid` is the identity across connections and files.
///
/// ```
/// use dendro_wire_core::{decode, Frame, Handshake, Map, Status};
///
/// let hs = Handshake {
///     source: 0,
///     uuid: Some("3f2b1c4d-0000-4000-8000-00000000abcd"),
///     labels: Map::from_pairs(&[("host", "web-01")]),
///     metadata: Map::from_pairs(&[("encoder", "v3")]),
///     clock_anchor_wall_ns: 1_700_000_000_000_000_000,
///     complete: false,
/// };
/// let mut buf = [0u8; 128];
/// let n = hs.emit(&mut buf)?;
/// let Status::Complete((Frame::Handshake(back), _)) = decode(&buf[..n])? else { unreachable!() };
/// assert_eq!(back, hs);
/// assert_eq!(back.labels.get("host"), Some("web-01"));
/// # Ok::<(), dendro_wire_core::Error>(())
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handshake<'a> {
    /// The ordinal later frames name this source by.
    pub source: u32,
    /// Canonical lowercase 8-4-4-4-12, or `None` for a source written before
    /// archives had uuids (the subscriber then mints its own).
    pub uuid: Option<&'a str>,
    /// The source's name.
    pub labels: Map<'a>,
    /// Everything else, reserved keys (`encoder`) included.
    pub metadata: Map<'a>,
    /// The publisher's anchor, which pins the timeline.
    pub clock_anchor_wall_ns: i64,
    /// Whether the publisher's source was cleanly finalized.
    pub complete: bool,
}

impl<'a> Decode<'a> for Handshake<'a> {
    const KIND: u8 = kind::HANDSHAKE;

    fn parse(c: &mut Cursor<'a>) -> Result<Self, Error> {
        let source = c.u32(Field::Source)?;
        let uuid_at = c.at();
        let uuid = match c.opt_bytes(Field::Uuid)? {
            None => None,
            Some(raw) => Some(
                core::str::from_utf8(raw)
                    .ok()
                    .filter(|s| is_canonical_uuid(s.as_bytes()))
                    .ok_or_else(|| c.error(Rule::NotACanonicalUuid, Field::Uuid, uuid_at))?,
            ),
        };
        let labels = Map::parse(c, Field::Labels)?;
        let metadata = Map::parse(c, Field::Metadata)?;
        let complete_at = c.at() + offset_of!(HandshakeTail, complete);
        let tail = c.fixed::<HandshakeTail>()?;
        Ok(Handshake {
            source,
            uuid,
            labels,
            metadata,
            clock_anchor_wall_ns: tail.clock_anchor_wall_ns.get(),
            complete: c.bool(tail.complete, Field::Complete, complete_at)?,
        })
    }
}

impl Encode for Handshake<'_> {
    fn kind(&self) -> u8 {
        kind::HANDSHAKE
    }

    fn payload_len(&self, at: usize) -> Result<usize, Error> {
        let uuid_at = at + 4;
        if let Some(uuid) = self.uuid {
            if !is_canonical_uuid(uuid.as_bytes()) {
                return Err(Error::encode(Rule::NotACanonicalUuid, Field::Uuid, uuid_at));
            }
        }
        let labels_at = uuid_at + opt_bytes_len(self.uuid.map(str::as_bytes));
        let labels = self.labels.wire_len(Field::Labels, labels_at)?;
        let metadata = self
            .metadata
            .wire_len(Field::Metadata, labels_at + labels)?;
        Ok(labels_at - at + labels + metadata + core::mem::size_of::<HandshakeTail>())
    }

    fn emit_payload(&self, out: &mut Out<'_>) -> Result<(), Error> {
        out.u32(self.source)?;
        out.opt_bytes(self.uuid.map(str::as_bytes))?;
        self.labels.emit(out)?;
        self.metadata.emit(out)?;
        out.fixed(&HandshakeTail {
            clock_anchor_wall_ns: I64::new(self.clock_anchor_wall_ns),
            complete: u8::from(self.complete),
        })
    }
}

encodable!(Handshake<'_>);

impl core::fmt::Display for Handshake<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Handshake source={} uuid={} labels={} metadata={} clock_anchor_wall_ns={} complete={}",
            self.source,
            self.uuid.unwrap_or("absent"),
            self.labels,
            self.metadata,
            self.clock_anchor_wall_ns,
            self.complete
        )
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Handshake<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Handshake source={=u32} labels={=usize} metadata={=usize} complete={=bool}",
            self.source,
            self.labels.len(),
            self.metadata.len(),
            self.complete
        )
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::frame::golden::{assert_golden, cat};
    use crate::{decode, Frame};

    const UUID: &str = "3f2b1c4d-0000-4000-8000-00000000abcd";

    /// Source 2, a uuid, labels {host: b}, no metadata, anchor -1, not
    /// complete;
    /// a payload of 75 bytes, so len 76. Written from the protocol's §4.1,
    /// field by field.
    fn bytes() -> std::vec::Vec<u8> {
        cat(&[
            &[76, 0, 0, 0],                          // len
            &[1],                                    // kind: Handshake
            &[2, 0, 0, 0],                           // source
            &[1],                                    // uuid present
            &[36, 0, 0, 0],                          // uuid len
            b"3f2b1c4d-0000-4000-8000-00000000abcd", // uuid
            &[1, 0, 0, 0],                           // labels: 1 entry
            &[4, 0, 0, 0],
            b"host",
            &[1, 0, 0, 0],
            b"b",
            &[0, 0, 0, 0], // metadata: 0 entries
            &[0xff; 8],    // clock_anchor_wall_ns = -1
            &[0],          // complete = false
        ])
    }

    fn frame() -> Handshake<'static> {
        Handshake {
            source: 2,
            uuid: Some(UUID),
            labels: Map::from_pairs(&[("host", "b")]),
            metadata: Map::EMPTY,
            clock_anchor_wall_ns: -1,
            complete: false,
        }
    }

    #[test]
    fn the_golden_bytes_are_the_frame() {
        assert_golden(&bytes(), Frame::Handshake(frame()));
    }

    #[test]
    fn the_fields_read_back_borrowed() {
        let bytes = bytes();
        let Ok(crate::Status::Complete((Frame::Handshake(h), _))) = decode(&bytes) else {
            panic!("not a handshake")
        };
        assert_eq!(h.labels.get("host"), Some("b"));
        assert_eq!(h.labels.get("hos"), None);
        assert_eq!(h.labels.get("hz"), None);
        assert!(h.metadata.is_empty());
        // The uuid borrows from the buffer: no copy was made.
        assert!(core::ptr::eq(
            h.uuid.unwrap().as_ptr(),
            bytes[14..].as_ptr()
        ));
    }

    #[test]
    fn a_short_tail_is_named_by_its_field() {
        // Cut after the anchor: the frame ends where `complete` starts.
        let mut b = bytes();
        b.pop();
        b[0] -= 1;
        let e = decode(&b).unwrap_err();
        assert_eq!((e.field(), e.offset()), (Field::Complete, 79));
    }

    #[test]
    fn one_line_for_a_person() {
        assert_eq!(
            std::format!("{}", Frame::Handshake(frame())),
            "Handshake source=2 uuid=3f2b1c4d-0000-4000-8000-00000000abcd labels={\"host\": \"b\"} \
             metadata={} clock_anchor_wall_ns=-1 complete=false"
        );
    }
}
