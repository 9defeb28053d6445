//! `Handshake`, kind 1 ([protocol §4.1](crate::protocol)).

use zerocopy::little_endian::I64;

use crate::codec::{is_canonical_uuid, opt_bytes_len, Cursor, Out};
use crate::error::{Error, Field, Rule};
use crate::frame::{encodable, kind, Decode, Encode};
use crate::layout::HandshakeTail;
use crate::map::Map;

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
        let labels = c.map(Field::Labels)?;
        let metadata = c.map(Field::Metadata)?;
        let complete_at = c.at() + 8;
        let tail = c.fixed::<HandshakeTail>(Field::ClockAnchorWallNs)?;
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
        let labels = self.labels.encoded_len(Field::Labels, labels_at)?;
        let metadata = self
            .metadata
            .encoded_len(Field::Metadata, labels_at + labels)?;
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
