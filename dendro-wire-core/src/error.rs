//! The one error type of the codec: which rule, which field, where.

use core::fmt;

use crate::kind;

/// What went wrong while reading or writing bytes, worded for the person who
/// has to fix the stream or the call.
///
/// It is a small `Copy` value, so it can be returned from a hot loop and kept
/// in a log record without allocating. It names the [`Rule`] that was broken,
/// the [`Field`] being read or written, the byte offset of that field within
/// the frame (the length prefix is byte 0; for the preamble, the stream's
/// first byte), and, for a `Rows` row or a map entry, its index.
///
/// ```
/// use dendro_wire_core::{decode, Field, Rule};
///
/// // A ClockOffset (kind 5) with one byte too many.
/// let mut bytes = vec![22, 0, 0, 0, 5];
/// bytes.extend_from_slice(&[0; 21]);
/// let err = decode(&bytes).unwrap_err();
/// assert_eq!((err.rule(), err.field(), err.offset()), (Rule::TrailingBytes { count: 1 }, Field::Payload, 25));
/// assert_eq!(
///     err.to_string(),
///     "malformed ClockOffset frame: `payload` at byte 25: 1 byte(s) left over after the last field"
/// );
/// ```
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    rule: Rule,
    field: Field,
    offset: usize,
    frame_kind: Option<u8>,
    item: Option<u32>,
    encoding: bool,
}

impl Error {
    pub(crate) const fn decode(rule: Rule, field: Field, offset: usize) -> Self {
        Error {
            rule,
            field,
            offset,
            frame_kind: None,
            item: None,
            encoding: false,
        }
    }

    pub(crate) const fn encode(rule: Rule, field: Field, offset: usize) -> Self {
        Error {
            encoding: true,
            ..Error::decode(rule, field, offset)
        }
    }

    /// An error made again from its parts, as [`rule`](Self::rule),
    /// [`field`](Self::field), [`offset`](Self::offset),
    /// [`frame_kind`](Self::frame_kind), [`item`](Self::item) and
    /// [`is_encoding`](Self::is_encoding) return them: for a caller that
    /// carries an error across a boundary as plain values (the C API hands
    /// C its parts, never a Rust value C could overwrite) and says its
    /// sentence later.
    ///
    /// ```
    /// use dendro_wire_core::{decode, Error};
    ///
    /// let err = decode(&[0, 0, 0, 0]).unwrap_err();
    /// let again = Error::from_parts(
    ///     err.rule(), err.field(), err.offset(), err.frame_kind(), err.item(), err.is_encoding(),
    /// );
    /// assert_eq!(again, err);
    /// ```
    pub const fn from_parts(
        rule: Rule,
        field: Field,
        offset: usize,
        frame_kind: Option<u8>,
        item: Option<u32>,
        encoding: bool,
    ) -> Self {
        Error {
            rule,
            field,
            offset,
            frame_kind,
            item,
            encoding,
        }
    }

    pub(crate) const fn in_frame(mut self, kind: u8) -> Self {
        self.frame_kind = Some(kind);
        self
    }

    pub(crate) const fn at_item(mut self, item: u32) -> Self {
        self.item = Some(item);
        self
    }

    /// The broken rule's name, for a device that logs without `core::fmt`;
    /// [`field`](Self::field) and [`offset`](Self::offset) say where.
    pub const fn name(&self) -> &'static str {
        self.rule.name()
    }

    /// The rule that was broken.
    pub const fn rule(&self) -> Rule {
        self.rule
    }

    /// The field being read or written when it broke.
    pub const fn field(&self) -> Field {
        self.field
    }

    /// Where the field starts: bytes from the start of the frame (its length
    /// prefix), or from the start of the stream for the preamble. For an
    /// encoding error, the offset in the output the field would occupy.
    pub const fn offset(&self) -> usize {
        self.offset
    }

    /// The kind byte of the frame, once it was known.
    pub const fn frame_kind(&self) -> Option<u8> {
        self.frame_kind
    }

    /// The row of a `Rows` frame, or the entry of a map, counted from 0.
    pub const fn item(&self) -> Option<u32> {
        self.item
    }

    /// Whether this came from an encoder rather than a decoder.
    pub const fn is_encoding(&self) -> bool {
        self.encoding
    }
}

/// The rules of the [protocol](crate::protocol) that bytes or a call can
/// break.
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rule {
    /// The stream does not start with `"dendro-repl\0"` (§2).
    NotADendroStream,
    /// The preamble names a protocol version this crate does not speak (§2).
    UnsupportedVersion {
        /// The version the stream declared.
        version: u16,
    },
    /// A frame length of zero: every frame has at least a kind byte (§2).
    ZeroLength,
    /// A frame length above the limit in force (§2, [`MAX_FRAME_BYTES`](crate::MAX_FRAME_BYTES)).
    FrameTooLarge {
        /// The length the frame has or claims.
        len: usize,
        /// The limit in force.
        limit: u32,
    },
    /// A field runs past the end of the frame.
    EndsEarly {
        /// The bytes the field needs.
        needed: usize,
        /// The bytes the frame has left.
        left: usize,
    },
    /// A `bool` byte other than 0 or 1 (§3).
    NotABool {
        /// The byte found.
        value: u8,
    },
    /// An `opt<bytes>` presence byte other than 0 or 1 (§3).
    NotAPresenceByte {
        /// The byte found.
        value: u8,
    },
    /// An `Index` kind other than 0 (Full) or 1 (Delta) (§4.2).
    NotAnIndexKind {
        /// The byte found.
        value: u8,
    },
    /// A `str` that is not valid UTF-8 (§3).
    NotUtf8,
    /// A `uuid` that is not canonical lowercase 8-4-4-4-12 hex (§4.1; [protocol §8.2](crate::protocol)).
    NotACanonicalUuid,
    /// A `map` key not strictly above the key before it: out of order, or a
    /// duplicate (§3; [protocol §8.1](crate::protocol)).
    KeysNotAscending,
    /// A count that cannot fit in the bytes left, even if every entry were as
    /// small as the layout allows.
    CountTooLarge {
        /// The count declared.
        count: u32,
        /// The bytes the frame has left.
        left: usize,
    },
    /// Bytes left over after the last field (§2).
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// An `Unknown` frame given a kind this crate reads as a known one, which
    /// would make its payload be misread.
    KnownKindAsUnknown,
    /// The output buffer is too small for the frame.
    BufferTooSmall {
        /// The bytes the whole frame needs.
        needed: usize,
        /// The bytes the buffer has.
        have: usize,
    },
}

/// The field a [`Rule`] was broken in, by its name in the
/// [protocol](crate::protocol).
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[allow(missing_docs)] // each variant is the protocol's field of the same name
pub enum Field {
    Magic,
    Version,
    Length,
    FrameKind,
    Source,
    Uuid,
    Labels,
    Metadata,
    ClockAnchorWallNs,
    Complete,
    Stream,
    Ts,
    IndexKind,
    State,
    Blob,
    Seq,
    IndexState,
    Count,
    WallOffset,
    Row,
    SegmentRows,
    FirstTs,
    LastTs,
    Bytes,
    CallerIndex,
    OffsetNs,
    Payload,
}

impl Rule {
    /// The variant's name, for a device that logs without `core::fmt`.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::NotADendroStream => "NotADendroStream",
            Rule::UnsupportedVersion { .. } => "UnsupportedVersion",
            Rule::ZeroLength => "ZeroLength",
            Rule::FrameTooLarge { .. } => "FrameTooLarge",
            Rule::EndsEarly { .. } => "EndsEarly",
            Rule::NotABool { .. } => "NotABool",
            Rule::NotAPresenceByte { .. } => "NotAPresenceByte",
            Rule::NotAnIndexKind { .. } => "NotAnIndexKind",
            Rule::NotUtf8 => "NotUtf8",
            Rule::NotACanonicalUuid => "NotACanonicalUuid",
            Rule::KeysNotAscending => "KeysNotAscending",
            Rule::CountTooLarge { .. } => "CountTooLarge",
            Rule::TrailingBytes { .. } => "TrailingBytes",
            Rule::KnownKindAsUnknown => "KnownKindAsUnknown",
            Rule::BufferTooSmall { .. } => "BufferTooSmall",
        }
    }
}

impl Field {
    /// The field's name as the [protocol](crate::protocol) writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Field::Magic => "magic",
            Field::Version => "version",
            Field::Length => "len",
            Field::FrameKind => "frame kind",
            Field::Source => "source",
            Field::Uuid => "uuid",
            Field::Labels => "labels",
            Field::Metadata => "metadata",
            Field::ClockAnchorWallNs => "clock_anchor_wall_ns",
            Field::Complete => "complete",
            Field::Stream => "stream",
            Field::Ts => "ts",
            Field::IndexKind => "kind",
            Field::State => "state",
            Field::Blob => "blob",
            Field::Seq => "seq",
            Field::IndexState => "index_state",
            Field::Count => "count",
            Field::WallOffset => "wall_offset",
            Field::Row => "row",
            Field::SegmentRows => "rows",
            Field::FirstTs => "first_ts",
            Field::LastTs => "last_ts",
            Field::Bytes => "bytes",
            Field::CallerIndex => "caller_index",
            Field::OffsetNs => "offset_ns",
            Field::Payload => "payload",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rule::NotADendroStream => f.write_str(
                "this is not a dendro replication stream: the magic does not match \"dendro-repl\\0\"",
            ),
            Rule::UnsupportedVersion { version } => write!(
                f,
                "protocol version {version} is not supported; this build speaks version {}",
                crate::consts::PROTOCOL_VERSION
            ),
            Rule::ZeroLength => {
                f.write_str("a frame length of 0; every frame has at least its kind byte")
            }
            Rule::FrameTooLarge { len, limit } => {
                write!(f, "a frame of {len} bytes is above the {limit}-byte limit")
            }
            Rule::EndsEarly { needed, left } => write!(
                f,
                "the frame ends early: the field needs {needed} byte(s) and {left} are left"
            ),
            Rule::NotABool { value } => write!(f, "{value} is not a bool; it must be 0 or 1"),
            Rule::NotAPresenceByte { value } => {
                write!(f, "{value} is not a presence byte; it must be 0 or 1")
            }
            Rule::NotAnIndexKind { value } => write!(
                f,
                "{value} is not an index kind; it must be 0 (Full) or 1 (Delta)"
            ),
            Rule::NotUtf8 => f.write_str("the string is not valid UTF-8"),
            Rule::NotACanonicalUuid => {
                f.write_str("the uuid is not canonical lowercase 8-4-4-4-12 hex")
            }
            Rule::KeysNotAscending => f.write_str(
                "map keys must be strictly ascending; this key is out of order or repeated",
            ),
            Rule::CountTooLarge { count, left } => write!(
                f,
                "a count of {count} cannot fit in the {left} byte(s) left in the frame"
            ),
            Rule::TrailingBytes { count } => {
                write!(f, "{count} byte(s) left over after the last field")
            }
            Rule::KnownKindAsUnknown => f.write_str(
                "an unknown frame cannot carry a known kind; its payload would be misread",
            ),
            Rule::BufferTooSmall { needed, have } => write!(
                f,
                "the buffer holds {have} byte(s) and the frame needs {needed}"
            ),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rule {
            Rule::NotADendroStream | Rule::UnsupportedVersion { .. } => {
                return write!(f, "{}", self.rule)
            }
            _ => {}
        }
        let verb = if self.encoding {
            "cannot encode"
        } else {
            "malformed"
        };
        match self.frame_kind {
            Some(kind) => write!(f, "{verb} {} frame", kind::name(kind))?,
            None => write!(f, "{verb} frame")?,
        }
        write!(f, ": `{}`", self.field)?;
        if let Some(item) = self.item {
            let what = match self.field {
                Field::Labels | Field::Metadata => "entry",
                _ => "row",
            };
            write!(f, " of {what} {item}")?;
        }
        write!(f, " at byte {}: {}", self.offset, self.rule)
    }
}

impl core::error::Error for Error {}
