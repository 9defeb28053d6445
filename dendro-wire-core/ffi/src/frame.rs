//! The preamble check and the sans-IO decoder, and the frame as a C struct
//! whose pointers point into the caller's buffer.
//!
//! A decoded frame has had every rule checked, so its fields are plain
//! values. Its rows and map entries are handed to C as cursors over their
//! bytes; stepping one reads the layout of [protocol §3] again, with every
//! length bounded by what is left, because C holds the cursor between the
//! steps and a cursor is only as good as the bytes it still points at.
//!
//! [protocol §3]: dendro_wire_core::protocol

use core::ffi::c_char;
use core::mem::MaybeUninit;

use dendro_wire_core::{
    check_preamble, Frame, FrameDecoder, Map, RowList, Status, LENGTH_PREFIX_BYTES,
    MAX_FRAME_BYTES, PREAMBLE, PREAMBLE_BYTES,
};

use crate::boundary::{self, finish, Checked, Plain};
use crate::error::{dw_error, dw_param, dw_result};

/// The preamble's size: the 12-byte magic `"dendro-repl\0"` and the
/// protocol version, a little-endian `u16`.
pub const DW_PREAMBLE_BYTES: usize = 14;
const _: () = assert!(DW_PREAMBLE_BYTES == PREAMBLE_BYTES);

/// The preamble's bytes, every stream's first: the magic and this
/// build's protocol version. A sender writes them before its first frame.
#[no_mangle]
#[allow(non_upper_case_globals)] // a C name
pub static dw_preamble: [u8; DW_PREAMBLE_BYTES] = PREAMBLE;

/// A frame's length prefix: a little-endian `u32` counting the kind byte
/// and the payload.
pub const DW_LENGTH_PREFIX_BYTES: usize = 4;
const _: () = assert!(DW_LENGTH_PREFIX_BYTES == LENGTH_PREFIX_BYTES);

/// The largest frame length the protocol allows (64 MiB), checked before
/// anything else about a frame is trusted.
pub const DW_MAX_FRAME_BYTES: u32 = 67108864;
const _: () = assert!(DW_MAX_FRAME_BYTES == MAX_FRAME_BYTES);

/// Bytes in the caller's buffer: not NUL-terminated.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_bytes {
    /// The first byte.
    pub ptr: *const u8,
    /// How many.
    pub len: usize,
}

/// A string in the caller's buffer, UTF-8 (the decoder checked it) and not
/// NUL-terminated: print it with `printf("%.*s", (int)s.len, s.ptr)`. As
/// an argument, a null `ptr` means absent where the field is optional.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_str {
    /// The first byte.
    pub ptr: *const c_char,
    /// Its length in bytes.
    pub len: usize,
}

// SAFETY: a pointer and an integer.
unsafe impl Plain for dw_str {}

/// A `map` field (labels, metadata): its entries in key order, stepped
/// through with `dw_map_next`, which consumes them from this value (copy it
/// to walk it twice).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_map {
    /// The encoded entries not yet stepped over: never null in a map the
    /// decoder made, even an empty one, so a zeroed `dw_map` is told from
    /// one at its end (`DW_INVALID_CURSOR`).
    pub entries: *const u8,
    /// Their bytes.
    pub len: usize,
    /// How many entries are left.
    pub count: u32,
}

// SAFETY: pointers and integers.
unsafe impl Plain for dw_map {}

/// The rows of a `Rows` frame not yet stepped over, for `dw_rows_next`
/// and `dw_rows_next_batch`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_row_cursor {
    /// The encoded rows left: never null in a cursor the decoder made, even
    /// at its end, so a zeroed cursor is told from a finished one
    /// (`DW_INVALID_CURSOR`).
    pub rest: *const u8,
    /// Their bytes.
    pub len: usize,
    /// How many rows are left.
    pub left: u32,
}

// SAFETY: pointers and integers.
unsafe impl Plain for dw_row_cursor {}

/// One row of a `Rows` frame (§4.3).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_row {
    /// The stream the row belongs to.
    pub stream: dw_str,
    /// The row's timestamp, ns.
    pub ts: i64,
    /// The wall-clock offset at the observation, ns.
    pub wall_offset: i64,
    /// The row itself, opaque: the encoder's.
    pub row: dw_bytes,
}

/// Which body a `dw_frame` carries: the kind byte for a known kind, 0 for
/// any other (its byte is in `body.unknown.kind`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_frame_kind {
    /// A kind this build does not read: skip it, or forward it (§7).
    DW_FRAME_UNKNOWN = 0,
    /// Kind 1, `body.handshake`.
    DW_FRAME_HANDSHAKE = 1,
    /// Kind 2, `body.index`.
    DW_FRAME_INDEX = 2,
    /// Kind 3, `body.rows`.
    DW_FRAME_ROWS = 3,
    /// Kind 4, `body.segment`.
    DW_FRAME_SEGMENT = 4,
    /// Kind 5, `body.clock_offset`.
    DW_FRAME_CLOCK_OFFSET = 5,
    /// Kind 6, `body.source_update`.
    DW_FRAME_SOURCE_UPDATE = 6,
}

/// An index entry's kind (§4.2).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_index_kind {
    /// Every live slot.
    DW_INDEX_FULL = 0,
    /// What changed since the entry before.
    DW_INDEX_DELTA = 1,
}

/// Kind 1: a source's identity, and the ordinal its later frames carry.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_handshake {
    /// The ordinal.
    pub source: u32,
    /// Whether `uuid` is present.
    pub has_uuid: bool,
    /// Canonical lowercase 8-4-4-4-12 when present.
    pub uuid: dw_str,
    /// The source's labels.
    pub labels: dw_map,
    /// The source's metadata.
    pub metadata: dw_map,
    /// The anchor of the source's timeline, ns.
    pub clock_anchor_wall_ns: i64,
    /// Whether the source was finalized.
    pub complete: bool,
}

/// Kind 2: one entry of the caller's index.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_index {
    /// The ordinal.
    pub source: u32,
    /// The `caller_rows` stream.
    pub stream: dw_str,
    /// The entry's timestamp, ns.
    pub ts: i64,
    /// A `dw_index_kind`.
    pub kind: u32,
    /// The hash of the whole slot set after this entry.
    pub state: [u64; 2],
    /// The entry, opaque.
    pub blob: dw_bytes,
}

/// Kind 3: live observations.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_rows {
    /// The ordinal.
    pub source: u32,
    /// Strictly increasing by one per frame: a gap is frames lost.
    pub seq: u64,
    /// The index state the rows were built against.
    pub index_state: [u64; 2],
    /// The number of rows.
    pub count: u32,
    /// The rows, for `dw_rows_next`.
    pub rows: dw_row_cursor,
}

/// Kind 4: a sealed parquet segment.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_segment {
    /// The ordinal.
    pub source: u32,
    /// The segment's stream.
    pub stream: dw_str,
    /// Rows in the segment.
    pub rows: u64,
    /// Its first timestamp, ns.
    pub first_ts: i64,
    /// Its last timestamp, ns.
    pub last_ts: i64,
    /// The parquet file, byte for byte.
    pub bytes: dw_bytes,
    /// Whether `caller_index` is present (it may be present and empty).
    pub has_caller_index: bool,
    /// The caller's index of the segment.
    pub caller_index: dw_bytes,
}

/// Kind 5: one clock-drift observation.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_clock_offset {
    /// The ordinal.
    pub source: u32,
    /// When, ns.
    pub ts: i64,
    /// The offset observed, ns.
    pub offset_ns: i64,
}

/// Kind 6: a source's labels and metadata, both whole.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_source_update {
    /// The ordinal.
    pub source: u32,
    /// The publisher's wall time, ns.
    pub ts: i64,
    /// The new labels.
    pub labels: dw_map,
    /// The new metadata.
    pub metadata: dw_map,
}

/// A frame of a kind this build does not read.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_unknown {
    /// Its kind byte.
    pub kind: u8,
    /// The bytes after the kind byte.
    pub payload: dw_bytes,
}

/// The body of a `dw_frame`: the member `kind` names.
#[repr(C)]
#[derive(Clone, Copy)]
pub union dw_frame_body {
    /// `DW_FRAME_HANDSHAKE`.
    pub handshake: dw_handshake,
    /// `DW_FRAME_INDEX`.
    pub index: dw_index,
    /// `DW_FRAME_ROWS`.
    pub rows: dw_rows,
    /// `DW_FRAME_SEGMENT`.
    pub segment: dw_segment,
    /// `DW_FRAME_CLOCK_OFFSET`.
    pub clock_offset: dw_clock_offset,
    /// `DW_FRAME_SOURCE_UPDATE`.
    pub source_update: dw_source_update,
    /// `DW_FRAME_UNKNOWN`.
    pub unknown: dw_unknown,
}

/// One decoded frame. Every pointer in it points into the buffer given to
/// `dw_decode`, which must outlive the frame's use: nothing is copied.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dw_frame {
    /// A `dw_frame_kind`: which member of `body` is filled.
    pub kind: u32,
    /// The frame's fields.
    pub body: dw_frame_body,
}

pub(crate) fn bytes_of(b: &[u8]) -> dw_bytes {
    dw_bytes {
        ptr: b.as_ptr(),
        len: b.len(),
    }
}

pub(crate) fn str_of(s: &str) -> dw_str {
    dw_str {
        ptr: s.as_ptr().cast::<c_char>(),
        len: s.len(),
    }
}

const NO_STR: dw_str = dw_str {
    ptr: core::ptr::null(),
    len: 0,
};

const NO_BYTES: dw_bytes = dw_bytes {
    ptr: core::ptr::null(),
    len: 0,
};

/// The entries of a decoded map, as the bytes of `frame` (the whole frame
/// the map was decoded from) from its first key's length to its last
/// value's end: where the core's own view found them. The pointer is taken
/// from `frame`, not from a key, so that it may reach every entry.
fn map_of(map: &Map<'_>, frame: &[u8]) -> dw_map {
    // No entries: the frame's own address, never null.
    let none = dw_map {
        entries: frame.as_ptr(),
        len: 0,
        count: 0,
    };
    let (Some((first, _)), Some((_, last))) = (map.iter().next(), map.iter().last()) else {
        return none;
    };
    let base = frame.as_ptr() as usize;
    let start = (first.as_ptr() as usize).wrapping_sub(base + LENGTH_PREFIX_BYTES);
    let end = (last.as_ptr() as usize + last.len()).wrapping_sub(base);
    match frame.get(start..end) {
        Some(entries) => dw_map {
            entries: entries.as_ptr(),
            len: entries.len(),
            count: map.len() as u32,
        },
        // Not reached: the decoder found the map inside the frame.
        None => none,
    }
}

/// Where a `Rows` frame's rows start: after the frame's length and kind,
/// and the fixed run of `source`, `seq`, `index_state` and `count` (§4.3).
const ROWS_AT: usize = LENGTH_PREFIX_BYTES + 1 + 4 + 8 + 16 + 4;

/// The bytes of a `Rows` frame with no rows: its fixed run is all of it.
pub(crate) const EMPTY_ROWS_FRAME: usize = ROWS_AT;

/// The rows of a decoded `Rows` frame: from [`ROWS_AT`] to the frame's end
/// (the rows are its last field, and the decoder checked every one).
fn rows_of(rows: &RowList<'_>, frame: &[u8]) -> dw_row_cursor {
    match frame.get(ROWS_AT..) {
        Some(bytes) => dw_row_cursor {
            rest: bytes.as_ptr(),
            len: bytes.len(),
            left: rows.len() as u32,
        },
        // Not reached: a decoded Rows frame holds its fixed run.
        None => dw_row_cursor {
            rest: frame.as_ptr(),
            len: 0,
            left: 0,
        },
    }
}

/// The C form of a frame decoded from `bytes` (the whole frame).
fn frame_of(frame: &Frame<'_>, bytes: &[u8]) -> dw_frame {
    use dw_frame_kind::*;
    let (kind, body) = match frame {
        Frame::Handshake(h) => (
            DW_FRAME_HANDSHAKE,
            dw_frame_body {
                handshake: dw_handshake {
                    source: h.source,
                    has_uuid: h.uuid.is_some(),
                    uuid: h.uuid.map_or(NO_STR, str_of),
                    labels: map_of(&h.labels, bytes),
                    metadata: map_of(&h.metadata, bytes),
                    clock_anchor_wall_ns: h.clock_anchor_wall_ns,
                    complete: h.complete,
                },
            },
        ),
        Frame::Index(i) => (
            DW_FRAME_INDEX,
            dw_frame_body {
                index: dw_index {
                    source: i.source,
                    stream: str_of(i.stream),
                    ts: i.ts,
                    kind: u32::from(i.kind.to_byte()),
                    state: [i.state.0, i.state.1],
                    blob: bytes_of(i.blob),
                },
            },
        ),
        Frame::Rows(r) => (
            DW_FRAME_ROWS,
            dw_frame_body {
                rows: dw_rows {
                    source: r.source,
                    seq: r.seq,
                    index_state: [r.index_state.0, r.index_state.1],
                    count: r.rows.len() as u32,
                    rows: rows_of(&r.rows, bytes),
                },
            },
        ),
        Frame::Segment(s) => (
            DW_FRAME_SEGMENT,
            dw_frame_body {
                segment: dw_segment {
                    source: s.source,
                    stream: str_of(s.stream),
                    rows: s.rows,
                    first_ts: s.first_ts,
                    last_ts: s.last_ts,
                    bytes: bytes_of(s.bytes),
                    has_caller_index: s.caller_index.is_some(),
                    caller_index: s.caller_index.map_or(NO_BYTES, bytes_of),
                },
            },
        ),
        Frame::ClockOffset(c) => (
            DW_FRAME_CLOCK_OFFSET,
            dw_frame_body {
                clock_offset: dw_clock_offset {
                    source: c.source,
                    ts: c.ts,
                    offset_ns: c.offset_ns,
                },
            },
        ),
        Frame::SourceUpdate(u) => (
            DW_FRAME_SOURCE_UPDATE,
            dw_frame_body {
                source_update: dw_source_update {
                    source: u.source,
                    ts: u.ts,
                    labels: map_of(&u.labels, bytes),
                    metadata: map_of(&u.metadata, bytes),
                },
            },
        ),
        Frame::Unknown { kind, payload } => (
            DW_FRAME_UNKNOWN,
            dw_frame_body {
                unknown: dw_unknown {
                    kind: *kind,
                    payload: bytes_of(payload),
                },
            },
        ),
    };
    dw_frame {
        kind: kind as u32,
        body,
    }
}

/// `*consumed` and `*needed` as the status says (the other 0), and the
/// result that names it.
fn progress(
    status: Status<usize>,
    consumed: &mut MaybeUninit<usize>,
    needed: &mut MaybeUninit<usize>,
) -> dw_result {
    let (used, wanted, result) = match status {
        Status::Complete(n) => (n, 0, dw_result::DW_RESULT_OK),
        Status::Incomplete { needed: n } => (0, n, dw_result::DW_RESULT_INCOMPLETE),
    };
    consumed.write(used);
    needed.write(wanted);
    result
}

/// One step over `buf` (`len` bytes), what the preamble check and the
/// decoder share: the buffer checked, then `target` (the entry point's
/// own out-pointer, checked, or nothing), then `consumed` and `needed`;
/// `step` given the bytes and the target, and its status said through
/// [`progress`]; a failure written into `*error`.
///
/// # Safety
///
/// `buf` points at `len` readable bytes; `consumed` and `needed` at
/// `size_t`s; `error` is null or points at a `dw_error`.
unsafe fn step_over<'a, T>(
    (buf, len): (*const u8, usize),
    target: impl FnOnce() -> Checked<T>,
    consumed: *mut usize,
    needed: *mut usize,
    error: *mut dw_error,
    step: impl FnOnce(&'a [u8], T) -> Checked<Status<usize>>,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let buf = boundary::bytes(buf, len, dw_param::DW_PARAM_BUF)?;
        let target = target()?;
        let consumed = boundary::out(consumed, dw_param::DW_PARAM_CONSUMED)?;
        let needed = boundary::out(needed, dw_param::DW_PARAM_NEEDED)?;
        Ok(progress(step(buf, target)?, consumed, needed))
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}

/// Check the preamble at the start of `buf` (`len` bytes).
///
/// `DW_RESULT_OK` with `*consumed` = `DW_PREAMBLE_BYTES`;
/// `DW_RESULT_INCOMPLETE` with `*needed` the bytes still to come;
/// `DW_RESULT_MALFORMED` as soon as the bytes in hand differ from the magic
/// (`DW_RULE_NOT_A_DENDRO_STREAM`), or for another version
/// (`DW_RULE_UNSUPPORTED_VERSION`, the version in `values[0]`).
///
/// # Safety
///
/// `buf` points at `len` readable bytes; `consumed` and `needed` at
/// `size_t`s; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_check_preamble(
    buf: *const u8,
    len: usize,
    consumed: *mut usize,
    needed: *mut usize,
    error: *mut dw_error,
) -> dw_result {
    let step = |buf, ()| Ok(check_preamble(buf)?);
    // SAFETY: the caller's contract, passed on.
    unsafe { step_over((buf, len), || Ok(()), consumed, needed, error, step) }
}

/// Decode the frame at the start of `buf` (`len` bytes), with the
/// protocol's limit, `DW_MAX_FRAME_BYTES`; see `dw_decode_limited`.
///
/// # Safety
///
/// As for `dw_decode_limited`.
#[no_mangle]
pub unsafe extern "C" fn dw_decode(
    buf: *const u8,
    len: usize,
    frame: *mut dw_frame,
    consumed: *mut usize,
    needed: *mut usize,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the caller's contract, passed on.
    unsafe { dw_decode_limited(buf, len, MAX_FRAME_BYTES, frame, consumed, needed, error) }
}

/// Decode the frame at the start of `buf` (`len` bytes), refusing a
/// length above `max_frame_bytes` (a device with a 4 KiB buffer passes
/// 4092; a value above `DW_MAX_FRAME_BYTES` is lowered to it).
///
/// - `DW_RESULT_OK`: `*frame` is the frame, every pointer in it into `buf`,
///   and `*consumed` the bytes it took (length prefix included).
/// - `DW_RESULT_INCOMPLETE`: `*needed` more bytes at least must be
///   appended; a length of zero or above the limit is refused as soon as
///   the four bytes of the prefix are in, before the rest.
/// - `DW_RESULT_MALFORMED`: the first rule the bytes break, in `*error`.
///
/// Nothing is kept between calls: give it the bytes from a frame boundary.
///
/// # Safety
///
/// `buf` points at `len` readable bytes that stay unchanged while the
/// frame is used; `frame` points at a `dw_frame`, `consumed` and `needed`
/// at `size_t`s; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_decode_limited(
    buf: *const u8,
    len: usize,
    max_frame_bytes: u32,
    frame: *mut dw_frame,
    consumed: *mut usize,
    needed: *mut usize,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: `frame` is the caller's, as documented, and checked before
    // use.
    let target = || unsafe { boundary::out(frame, dw_param::DW_PARAM_FRAME) };
    let step = |buf: &[u8], frame: &mut MaybeUninit<dw_frame>| {
        let decoder = FrameDecoder::new().with_max_frame_bytes(max_frame_bytes);
        Ok(decoder.decode(buf)?.map(|(f, n)| {
            frame.write(frame_of(&f, buf.get(..n).unwrap_or(&[])));
            n
        }))
    };
    // SAFETY: the caller's contract, passed on.
    unsafe { step_over((buf, len), target, consumed, needed, error, step) }
}
