//! What every C function returns, `dw_result`; what a failed call says in
//! detail, `dw_error` (plain integers, never a Rust value C could
//! overwrite), and `CallError`, its form inside the crate; `error/parts.rs`
//! takes one into the other and back, and `error/sentence.rs` says the
//! sentence each error says, from the core's own `Display`. Nothing here
//! touches C's memory: `boundary.rs`, a layer above, writes a `dw_error`
//! where C asked for it.

use core::ffi::{c_char, CStr};

use dendro_wire_core::{Error, Field, ProtocolError, PublishError, Truncated};

mod param;
mod parts;
mod sentence;

pub use param::dw_param;

/// What a call came to. Every function that can fail returns one; the
/// details of a failure are in the `dw_error` it was given, if any.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_result {
    /// Done; the out-parameters hold the result.
    DW_RESULT_OK = 0,
    /// Not an error: the buffer holds too little yet. `*needed` says how
    /// many more bytes at least; read them, append, and call again.
    DW_RESULT_INCOMPLETE = 1,
    /// Not an error: nothing left (a cursor at its end, no frame due).
    DW_RESULT_DONE = 2,
    /// A pointer the call needs is null. Nothing was read or written.
    DW_RESULT_NULL_PARAMETER = 3,
    /// An argument the call cannot take: a misaligned pointer, a length
    /// past its bound, a string that is not UTF-8, storage too small, a
    /// handle of another kind. `dw_error.reason` is a `dw_invalid`.
    DW_RESULT_INVALID_ARGUMENT = 4,
    /// A buffer the caller gave is too small for what goes in it (a
    /// sentence, a frame to poll); what fits may have been written.
    DW_RESULT_BUFFER_TOO_SMALL = 5,
    /// The bytes break a rule of the protocol: `dw_error.rule`, `.field`
    /// and `.offset` say which and where (the preamble's errors too: a
    /// stream that is not dendro's, another version).
    DW_RESULT_MALFORMED = 6,
    /// The subscriber refuses the frame: the stream cannot go on.
    /// `dw_error.reason` is a `dw_protocol_error`.
    DW_RESULT_PROTOCOL_ERROR = 7,
    /// The publisher refuses the call; nothing changed. `dw_error.reason`
    /// is a `dw_publish_error`.
    DW_RESULT_REFUSED = 8,
    /// The stream ended inside its preamble or a frame (`dw_stream_end`):
    /// that frame was lost, an error, never the end. `dw_error.reason` is
    /// a `dw_truncated`, `values[0]` the bytes that arrived and `values[1]`
    /// those it needed at least.
    DW_RESULT_TRUNCATED = 9,
}

/// Where a stream was cut (`dw_error.reason` with `DW_RESULT_TRUNCATED`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_truncated {
    /// Inside a frame, its length prefix included.
    DW_TRUNCATED_FRAME = 1,
    /// Inside the preamble.
    DW_TRUNCATED_PREAMBLE = 2,
}

/// Why an argument was refused (`dw_error.reason` with
/// `DW_RESULT_INVALID_ARGUMENT`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_invalid {
    /// No reason (another result).
    DW_INVALID_NONE = 0,
    /// A pointer is not aligned for the type it points at: `values[0]` the
    /// `dw_param` it was given for.
    DW_INVALID_MISALIGNED = 1,
    /// A length is above what one buffer can hold: `values[0]` the
    /// `dw_param` of the buffer it is the length of.
    DW_INVALID_TOO_LONG = 2,
    /// A string is not valid UTF-8: `values[0]` the `dw_param` it was given
    /// for (`DW_PARAM_DECL_STREAM_NAME` and `item` 2 for
    /// `decl->streams[2]`).
    DW_INVALID_NOT_UTF8 = 3,
    /// Storage for an object is smaller than its `_SIZE`: `values[0]` the
    /// bytes it needs, `values[1]` those given.
    DW_INVALID_STORAGE_TOO_SMALL = 4,
    /// The handle is not one `_init` made for this kind of object, or it was
    /// released.
    DW_INVALID_NOT_A_HANDLE = 5,
    /// Storage given to a publisher overlaps the publisher's own or another
    /// source's, or (to `dw_publisher_add_source`) the declaration's own
    /// strings or its array of streams; or a buffer given to
    /// `dw_publisher_poll` overlaps the publisher's storage.
    DW_INVALID_OVERLAP = 6,
    /// More streams or map entries than the C API takes at once
    /// (`DW_MAX_STREAMS`, `DW_MAX_MAP_ENTRIES`): `values[0]` the `dw_param`
    /// of the array.
    DW_INVALID_TOO_MANY = 7,
    /// A cursor that no longer points at what the decoder checked: its
    /// bytes changed, or `dw_decode` did not make it.
    DW_INVALID_CURSOR = 8,
    /// A value outside its enum: a `dw_index_kind`, or a `dw_error` the
    /// library did not write.
    DW_INVALID_VALUE = 9,
    /// The handle names a copy of an object's storage (a `memcpy`), or
    /// storage moved since `_init`: only the handle `_init` returned is the
    /// object.
    DW_INVALID_MOVED = 10,
    /// A subscriber's source limit outside 1 to `DW_SUBSCRIBER_MAX_SOURCES`,
    /// or a publisher's outside 1 to `DW_PUBLISHER_MAX_SOURCES`: `values[0]`
    /// the limit given, `values[1]` the most, `values[2]` 1 for a
    /// publisher, 0 for a subscriber.
    DW_INVALID_SOURCE_LIMIT = 11,
    /// A publisher's `full_every` of 0: `values[0]` the value.
    DW_INVALID_FULL_EVERY = 12,
    /// A publisher's `frame_buffer` too small for an empty `Rows` frame or
    /// above the largest frame: `values[0]` the value, `values[1]` the
    /// least, `values[2]` the most.
    DW_INVALID_FRAME_BUFFER = 13,
    /// `dw_stream_end` was given bytes that hold a whole preamble or frame:
    /// decode it first; `values[0]` its bytes.
    DW_INVALID_NOT_CUT = 14,
    /// `dw_rows_next_batch` given room for no row: `values[0]` the
    /// capacity given (0).
    DW_INVALID_CAPACITY = 15,
}

/// The rule a stream broke (`dw_error.rule`), as the protocol names it;
/// `dw_error.values` holds its numbers, in the order given.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_rule {
    /// No rule (another result).
    DW_RULE_NONE = 0,
    /// The stream does not start with `"dendro-repl\0"` (§2).
    DW_RULE_NOT_A_DENDRO_STREAM = 1,
    /// Another protocol version (§2): `values[0]` the version.
    DW_RULE_UNSUPPORTED_VERSION = 2,
    /// A frame length of zero (§2).
    DW_RULE_ZERO_LENGTH = 3,
    /// A frame length above the limit (§2): `values[0]` the length, `values[1]` the
    /// limit.
    DW_RULE_FRAME_TOO_LARGE = 4,
    /// A field runs past the frame: `values[0]` the bytes it needs, `values[1]` those
    /// left.
    DW_RULE_ENDS_EARLY = 5,
    /// A `bool` neither 0 nor 1 (§3): `values[0]` the byte.
    DW_RULE_NOT_A_BOOL = 6,
    /// An `opt` presence byte neither 0 nor 1 (§3): `values[0]` the byte.
    DW_RULE_NOT_A_PRESENCE_BYTE = 7,
    /// An index kind neither 0 nor 1 (§4.2): `values[0]` the byte.
    DW_RULE_NOT_AN_INDEX_KIND = 8,
    /// A `str` that is not UTF-8 (§3).
    DW_RULE_NOT_UTF8 = 9,
    /// A uuid that is not canonical lowercase 8-4-4-4-12 hex (§4.1).
    DW_RULE_NOT_A_CANONICAL_UUID = 10,
    /// Map keys not strictly ascending (§3).
    DW_RULE_KEYS_NOT_ASCENDING = 11,
    /// A count the bytes left cannot hold: `values[0]` the count, `values[1]` the
    /// bytes left.
    DW_RULE_COUNT_TOO_LARGE = 12,
    /// Bytes after the last field (§2): `values[0]` how many.
    DW_RULE_TRAILING_BYTES = 13,
    /// An unknown frame given a known kind (encoding).
    DW_RULE_KNOWN_KIND_AS_UNKNOWN = 14,
    /// An output buffer too small for a frame (encoding): `values[0]` the
    /// bytes needed, `values[1]` those given.
    DW_RULE_BUFFER_TOO_SMALL = 15,
    /// A rule of a newer core that this header does not name.
    DW_RULE_OTHER = 255,
}

/// The field a rule was broken in (`dw_error.field`), by the protocol's
/// name for it.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // each is the protocol's field of that name
pub enum dw_field {
    DW_FIELD_NONE = 0,
    DW_FIELD_MAGIC,
    DW_FIELD_VERSION,
    DW_FIELD_LEN,
    DW_FIELD_FRAME_KIND,
    DW_FIELD_SOURCE,
    DW_FIELD_UUID,
    DW_FIELD_LABELS,
    DW_FIELD_METADATA,
    DW_FIELD_CLOCK_ANCHOR_WALL_NS,
    DW_FIELD_COMPLETE,
    DW_FIELD_STREAM,
    DW_FIELD_TS,
    DW_FIELD_INDEX_KIND,
    DW_FIELD_STATE,
    DW_FIELD_BLOB,
    DW_FIELD_SEQ,
    DW_FIELD_INDEX_STATE,
    DW_FIELD_COUNT,
    DW_FIELD_WALL_OFFSET,
    DW_FIELD_ROW,
    DW_FIELD_SEGMENT_ROWS,
    DW_FIELD_FIRST_TS,
    DW_FIELD_LAST_TS,
    DW_FIELD_BYTES,
    DW_FIELD_CALLER_INDEX,
    DW_FIELD_OFFSET_NS,
    DW_FIELD_PAYLOAD,
    /// A field of a newer core that this header does not name.
    DW_FIELD_OTHER = 255,
}

/// The core's fields, in `dw_field`'s order from `DW_FIELD_MAGIC`.
const FIELDS: [Field; 27] = [
    Field::Magic,
    Field::Version,
    Field::Length,
    Field::FrameKind,
    Field::Source,
    Field::Uuid,
    Field::Labels,
    Field::Metadata,
    Field::ClockAnchorWallNs,
    Field::Complete,
    Field::Stream,
    Field::Ts,
    Field::IndexKind,
    Field::State,
    Field::Blob,
    Field::Seq,
    Field::IndexState,
    Field::Count,
    Field::WallOffset,
    Field::Row,
    Field::SegmentRows,
    Field::FirstTs,
    Field::LastTs,
    Field::Bytes,
    Field::CallerIndex,
    Field::OffsetNs,
    Field::Payload,
];

/// The stream-level rule a subscriber's refusal names (`dw_error.reason`
/// with `DW_RESULT_PROTOCOL_ERROR`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_protocol_error {
    /// A frame names an ordinal no handshake introduced (rule 1):
    /// `values[0]` the ordinal, `values[1]` the frame's kind.
    DW_PROTOCOL_UNKNOWN_SOURCE = 1,
    /// A second handshake for a live ordinal (§4.1): `values[0]` the ordinal.
    DW_PROTOCOL_DUPLICATE_HANDSHAKE = 2,
    /// More sources than allowed: `values[0]` the limit.
    DW_PROTOCOL_TOO_MANY_SOURCES = 3,
    /// A refusal of a newer core that this header does not name.
    DW_PROTOCOL_OTHER = 255,
}

/// What a publisher refused (`dw_error.reason` with `DW_RESULT_REFUSED`,
/// or `DW_RESULT_BUFFER_TOO_SMALL` from a poll). The numbers in
/// `dw_error.values` are the core's `PublishError` fields, in the order
/// given.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_publish_error {
    /// No room for another source: `values[0]` the limit.
    DW_PUBLISH_TOO_MANY_SOURCES = 1,
    /// A source never declared: `values[0]` the ordinal.
    DW_PUBLISH_UNKNOWN_SOURCE = 2,
    /// A stream never declared: `values[0]` the source, `values[1]` the stream's place.
    DW_PUBLISH_UNKNOWN_STREAM = 3,
    /// A stream name declared twice: `values[0]` the source, `values[1]` the second place.
    DW_PUBLISH_DUPLICATE_STREAM = 4,
    /// A row on another source's stream: `values[0]` the source, `values[1]` the stream's.
    DW_PUBLISH_OTHER_SOURCE = 5,
    /// A slot change for a source without an index: `values[0]` the source.
    DW_PUBLISH_NO_INDEX = 6,
    /// A frame before the source's handshake went out: `values[0]` the source, `values[1]`
    /// the kind.
    DW_PUBLISH_NOT_HANDSHAKEN = 7,
    /// A frame the publisher sends itself: `values[0]` the kind.
    DW_PUBLISH_NOT_PASSTHROUGH = 8,
    /// A frame would outgrow the frame buffer: `values[0]` the source, `values[1]` the
    /// kind, `values[2]` the bytes needed, `values[3]` the frame buffer.
    DW_PUBLISH_FRAME_TOO_LARGE = 9,
    /// The source's storage is full: `values[0]` the source, `values[1]` the bytes needed,
    /// `values[2]` those it has.
    DW_PUBLISH_STORAGE_FULL = 10,
    /// The storage holds fewer bytes than were written: `values[0]` the source.
    DW_PUBLISH_STORAGE_SHRANK = 11,
    /// The poll buffer is too small; the frame stays due: `values[0]` the bytes
    /// needed, `values[1]` those given.
    DW_PUBLISH_BUFFER_TOO_SMALL = 12,
    /// The encoder refused: `rule`, `field` and `offset` say why.
    DW_PUBLISH_ENCODE = 13,
    /// A row after a slot change not later than the rows before it (read
    /// by time it would fall under the slots before): `values[0]` the
    /// source.
    DW_PUBLISH_NOT_AFTER_SLOT_CHANGE = 14,
    /// A refusal of a newer core that this header does not name.
    DW_PUBLISH_OTHER = 255,
}

/// The details of a failed call, written into the `dw_error` a call was
/// given (when not null) only if it fails. Plain numbers: read them, or
/// have `dw_error_message` say the sentence.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct dw_error {
    /// The `dw_result` the call returned.
    pub result: u32,
    /// A `dw_param` (the parameter a null pointer was given for, `item` its
    /// place if it is an element of an array), `dw_invalid`,
    /// `dw_protocol_error` or `dw_publish_error`, by `result`; 0 for the
    /// others.
    pub reason: u32,
    /// A `dw_rule`: the protocol rule broken, for `DW_RESULT_MALFORMED`
    /// and `DW_PUBLISH_ENCODE`; `DW_RULE_NONE` otherwise.
    pub rule: u32,
    /// A `dw_field`: the field the rule was broken in.
    pub field: u32,
    /// Where that field starts: bytes from the start of the frame (its
    /// length prefix is byte 0), or of the stream for the preamble.
    pub offset: u64,
    /// The row of a `Rows` frame or the entry of a map, from 0; for an
    /// argument refused, the place in its array of the element refused (a
    /// stream's name, a label); -1 if none.
    pub item: i64,
    /// The frame's kind byte once known; -1 if not.
    pub frame_kind: i32,
    /// 1 if an encoder refused, 0 if a decoder did.
    pub encoding: u32,
    /// The rule's numbers, or else the reason's, as their documentation
    /// orders them.
    pub values: [u64; 4],
}

/// Why a call of the C API failed, as the crate carries it; `dw_error` is
/// its C form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallError {
    /// A null pointer, for the parameter named.
    Null(At),
    Invalid(dw_invalid),
    /// An argument refused at the boundary (misaligned, too long, too
    /// many, not UTF-8), naming the parameter.
    Arg(dw_invalid, At),
    /// An argument refused, with the numbers its sentence says.
    Bound(dw_invalid, [u64; 4]),
    Truncated(Truncated),
    /// A caller's buffer too small for a sentence.
    MessageTooLong,
    Wire(Error),
    Protocol(ProtocolError),
    Publish(PublishError),
}

/// What a refusal of an argument names: a parameter of the call and, for
/// an element of an array (a stream's name, a label's key), its place
/// there. One word, the parameter in its low byte and the place plus one
/// above (0 for none), so that a device names the place for no more than
/// the parameter alone costs; places are below `DW_MAX_STREAMS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct At(u32);

impl At {
    /// The parameter, as `dw_error.reason` or `values[0]` says it.
    pub(crate) fn param_value(self) -> u32 {
        self.0 & 0xff
    }

    pub(crate) fn param(self) -> dw_param {
        dw_param::from_reason(self.param_value())
    }

    /// The place, as `dw_error.item` says it: -1 for none.
    pub(crate) fn item_value(self) -> i64 {
        i64::from(self.0 >> 8) - 1
    }

    pub(crate) fn item(self) -> Option<u32> {
        (self.0 >> 8).checked_sub(1)
    }

    /// This parameter, for the element at `place` in its array.
    pub(crate) fn place(self, place: usize) -> At {
        At(self.0 & 0xff | (place as u32).wrapping_add(1) << 8)
    }

    /// The parameter and place a `dw_error` says: a parameter this
    /// library does not name is unnamed, and a place it could not have
    /// written is none (a `dw_error` of another version still reads).
    pub(crate) fn from_c(param: u64, item: i64) -> At {
        let param = match u32::try_from(param) {
            Ok(p) if p <= 0xff => At(p),
            _ => At(0),
        };
        match usize::try_from(item) {
            Ok(at) if at < 1 << 23 => param.place(at),
            _ => param,
        }
    }
}

impl From<dw_param> for At {
    fn from(param: dw_param) -> At {
        At(param as u32)
    }
}

impl From<Error> for CallError {
    fn from(e: Error) -> Self {
        CallError::Wire(e)
    }
}

impl From<ProtocolError> for CallError {
    fn from(e: ProtocolError) -> Self {
        CallError::Protocol(e)
    }
}

impl From<PublishError> for CallError {
    fn from(e: PublishError) -> Self {
        CallError::Publish(e)
    }
}

impl CallError {
    /// Storage of `given` bytes where the object needs `needed`.
    pub(crate) fn storage_too_small(needed: usize, given: usize) -> CallError {
        CallError::Bound(
            dw_invalid::DW_INVALID_STORAGE_TOO_SMALL,
            [needed as u64, given as u64, 0, 0],
        )
    }

    #[inline(never)]
    pub(crate) fn result(&self) -> dw_result {
        match self {
            CallError::Null(..) => dw_result::DW_RESULT_NULL_PARAMETER,
            CallError::Invalid(_) | CallError::Arg(..) | CallError::Bound(..) => {
                dw_result::DW_RESULT_INVALID_ARGUMENT
            }
            CallError::Truncated(_) => dw_result::DW_RESULT_TRUNCATED,
            CallError::MessageTooLong => dw_result::DW_RESULT_BUFFER_TOO_SMALL,
            CallError::Wire(_) => dw_result::DW_RESULT_MALFORMED,
            CallError::Protocol(_) => dw_result::DW_RESULT_PROTOCOL_ERROR,
            CallError::Publish(PublishError::BufferTooSmall { .. }) => {
                dw_result::DW_RESULT_BUFFER_TOO_SMALL
            }
            CallError::Publish(_) => dw_result::DW_RESULT_REFUSED,
        }
    }
}

/// The name of a `dw_result` as the header spells it (`"DW_RESULT_OK"`),
/// NUL-terminated and static; `"DW_RESULT_UNKNOWN"` for a value outside
/// the enum.
#[no_mangle]
pub extern "C" fn dw_result_name(result: u32) -> *const c_char {
    let name: &CStr = match result {
        0 => c"DW_RESULT_OK",
        1 => c"DW_RESULT_INCOMPLETE",
        2 => c"DW_RESULT_DONE",
        3 => c"DW_RESULT_NULL_PARAMETER",
        4 => c"DW_RESULT_INVALID_ARGUMENT",
        5 => c"DW_RESULT_BUFFER_TOO_SMALL",
        6 => c"DW_RESULT_MALFORMED",
        7 => c"DW_RESULT_PROTOCOL_ERROR",
        8 => c"DW_RESULT_REFUSED",
        9 => c"DW_RESULT_TRUNCATED",
        _ => c"DW_RESULT_UNKNOWN",
    };
    name.as_ptr()
}
