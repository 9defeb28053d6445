//! The subscriber's rules ([protocol §5]) in storage the caller provides:
//! the core's `Subscriber`, judged frame by frame from the C frame.
//!
//! [protocol §5]: dendro_wire_core::protocol

use core::ffi::c_void;
use core::mem::{align_of, size_of};
use core::ptr::NonNull;

use dendro_wire_core::{
    Admitted, ClockOffset, Frame, Handshake, Index, IndexKind, Map, RowList, Rows, Segment,
    SkipReason, SourceSlot, SourceUpdate, SubscriberIn,
};

use crate::boundary::{self, finish, Checked, Object, Placed};
use crate::error::{dw_error, dw_invalid, dw_param, dw_result, CallError};
use crate::frame::{dw_frame, dw_frame_kind, dw_index_kind};

/// The most sources a subscriber may be given as its limit: what
/// `dendro-wire` and its collector allow on one connection (PROTOCOL.md
/// §8.9).
pub const DW_SUBSCRIBER_MAX_SOURCES: u32 = 1024;

/// A subscriber's storage, besides its table of sources, on a 64-bit
/// target: see `DW_SUBSCRIBER_SIZE(sources)`, which picks this or the
/// 32-bit figure for the target it is compiled for.
pub const DW_SUBSCRIBER_HEAD_BYTES_64: usize = 56;

/// The same on a 32-bit target (Cortex-M0, Cortex-M3, RISC-V 32).
pub const DW_SUBSCRIBER_HEAD_BYTES_32: usize = 40;

/// A subscriber's storage for each source its limit allows, on every
/// target.
pub const DW_SUBSCRIBER_SOURCE_BYTES: usize = 48;

/// This target's figure, which the header's macro picks by the width of a
/// pointer: held equal to the size the compiler gives, on every target
/// the library is built for.
const HEAD_BYTES: usize = match cfg!(target_pointer_width = "64") {
    true => DW_SUBSCRIBER_HEAD_BYTES_64,
    false => DW_SUBSCRIBER_HEAD_BYTES_32,
};

/// The alignment a subscriber's storage needs.
pub const DW_SUBSCRIBER_ALIGN: usize = 8;

/// A subscriber's table of sources: the places after its head in the
/// caller's storage, written with `SourceSlot::EMPTY` when it is made.
struct Table {
    ptr: NonNull<SourceSlot>,
    len: usize,
}

impl AsRef<[SourceSlot]> for Table {
    fn as_ref(&self) -> &[SourceSlot] {
        // SAFETY: `dw_subscriber_init` wrote `len` places at `ptr`, in the
        // caller's storage, which is the subscriber's alone while it lives
        // (the header's contract), and this borrow lasts one call.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl AsMut<[SourceSlot]> for Table {
    fn as_mut(&mut self) -> &mut [SourceSlot] {
        // SAFETY: as in `as_ref`; `&mut self` makes this the only borrow.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

type Rules = SubscriberIn<Table>;

impl Object for Rules {
    const TAG: u64 = u64::from_le_bytes(*b"dw-subsc");
}

const PLACE: usize = size_of::<SourceSlot>();
const _: () = assert!(<Rules as Object>::SIZE == HEAD_BYTES);
const _: () = assert!(PLACE == DW_SUBSCRIBER_SOURCE_BYTES);
const _: () = assert!(<Rules as Object>::ALIGN <= DW_SUBSCRIBER_ALIGN);
const _: () = assert!(align_of::<SourceSlot>() <= DW_SUBSCRIBER_ALIGN);
// The table starts right after the head, aligned for its places.
const _: () = assert!(<Rules as Object>::SIZE % align_of::<SourceSlot>() == 0);

/// The exact bytes a subscriber allowing `limit` sources takes in this
/// build, if the limit is one it may have.
fn storage_for(limit: u32) -> Checked<usize> {
    if limit == 0 || limit > DW_SUBSCRIBER_MAX_SOURCES {
        return Err(CallError::Bound(
            dw_invalid::DW_INVALID_SOURCE_LIMIT,
            [limit.into(), DW_SUBSCRIBER_MAX_SOURCES.into(), 0, 0],
        ));
    }
    Ok(<Rules as Object>::SIZE + limit as usize * PLACE)
}

/// A subscriber, kept in the caller's storage: a handle from
/// `dw_subscriber_init`, never made or freed by the caller.
pub struct dw_subscriber {
    _private: [u8; 0],
}

/// What a subscriber does with a frame that broke no rule.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_admitted_kind {
    /// A handshake opened `source`.
    DW_ADMITTED_OPENED = 1,
    /// An index entry to apply; the state held is now its `state`.
    DW_ADMITTED_INDEX = 2,
    /// A `Rows` frame: apply its rows unless `skip` says why not.
    DW_ADMITTED_ROWS = 3,
    /// A `Segment`, `ClockOffset` or `SourceUpdate` to apply.
    DW_ADMITTED_APPLY = 4,
    /// A kind this build does not read: skip and count it (§7).
    DW_ADMITTED_UNKNOWN = 5,
}

/// Why a subscriber skips a `Rows` frame's rows (rule 9).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dw_skip_reason {
    /// Apply the rows.
    DW_SKIP_NONE = 0,
    /// No `Full` index entry has arrived for the source yet.
    DW_SKIP_BEFORE_FIRST_FULL = 1,
    /// The rows were built against another index state than the one
    /// held (`held`, `declared`).
    DW_SKIP_INDEX_STATE_MISMATCH = 2,
}

/// A subscriber's verdict on one frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct dw_admitted {
    /// What to do with the frame.
    pub kind: dw_admitted_kind,
    /// The frame's ordinal (0 for an unknown kind).
    pub source: u32,
    /// The frame's kind byte.
    pub frame_kind: u8,
    /// For `DW_ADMITTED_INDEX`: a `dw_index_kind`.
    pub index_kind: u32,
    /// For `DW_ADMITTED_ROWS`: whether and why the rows are skipped.
    pub skip: dw_skip_reason,
    /// For `DW_SKIP_INDEX_STATE_MISMATCH`: the state held ...
    pub held: [u64; 2],
    /// ... and the state the frame declared.
    pub declared: [u64; 2],
    /// For `DW_ADMITTED_ROWS`: frames lost in transit before this one.
    pub lost: u64,
    /// Whether this is the source's first gap.
    pub first_gap: bool,
    /// Whether `seq` was not above the last frame's, or jumped further than
    /// a source's frames lost can count (counted; the rows are still
    /// judged).
    pub regression: bool,
}

/// The exact bytes of storage a subscriber allowing `source_limit`
/// sources takes in this build: `DW_SUBSCRIBER_SIZE(source_limit)`, on
/// every target; 0 for a limit outside 1 to `DW_SUBSCRIBER_MAX_SOURCES`.
#[no_mangle]
pub extern "C" fn dw_subscriber_size(source_limit: u32) -> usize {
    storage_for(source_limit).unwrap_or(0)
}

/// Make a subscriber for a new connection in `storage` (`len` bytes,
/// aligned to `DW_SUBSCRIBER_ALIGN`), allowing `source_limit` sources, and
/// write its handle into `*subscriber`. The storage is the subscriber's
/// until `dw_subscriber_release`; it needs `DW_SUBSCRIBER_SIZE(source_limit)`
/// bytes (as `dw_subscriber_size` says).
///
/// `DW_RESULT_INVALID_ARGUMENT`: `DW_INVALID_SOURCE_LIMIT` for a limit of 0
/// or above `DW_SUBSCRIBER_MAX_SOURCES` (the tool's 1024), never lowered
/// silently; `DW_INVALID_STORAGE_TOO_SMALL` for storage that cannot hold
/// that many (the bytes needed in `values[0]`).
///
/// # Safety
///
/// `storage` points at `len` writable bytes, touched only through the
/// handle until it is released; `subscriber` at a `dw_subscriber *`;
/// `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_subscriber_init(
    storage: *mut c_void,
    len: usize,
    source_limit: u32,
    subscriber: *mut *mut dw_subscriber,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        boundary::length(len, dw_param::DW_PARAM_STORAGE.into())?;
        let out = boundary::out(subscriber, dw_param::DW_PARAM_SUBSCRIBER)?;
        let needed = storage_for(source_limit)?;
        boundary::check(storage.cast::<Placed<Rules>>(), dw_param::DW_PARAM_STORAGE)?;
        if len < needed {
            return Err(CallError::storage_too_small(needed, len));
        }
        let limit = source_limit as usize;
        let places = storage
            .cast::<u8>()
            .add(<Rules as Object>::SIZE)
            .cast::<SourceSlot>();
        for i in 0..limit {
            places.add(i).write(SourceSlot::EMPTY);
        }
        let table = Table {
            ptr: NonNull::new(places).ok_or(CallError::Null(dw_param::DW_PARAM_STORAGE.into()))?,
            len: limit,
        };
        let rules = SubscriberIn::in_table(table, limit);
        out.write(boundary::place(storage.cast::<u8>(), len, rules)?);
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}

/// One integer field of the C frame at `$frame`, read on its own through
/// the raw pointer: whatever C wrote into the rest of the frame, and
/// whichever member of the union it filled, the bits read are a value.
macro_rules! field {
    ($frame:ident . $($path:ident).+) => {
        // SAFETY: `$frame` was checked not null and aligned, is readable by
        // the caller's contract, and the field is an integer.
        unsafe { core::ptr::addr_of!((*$frame).$($path).+).read() }
    };
}

/// The frame's fields the rules read, as the core's view of a frame of
/// the same kind and ordinal (the other fields play no part in them).
///
/// # Safety
///
/// `frame` is null or points at a `dw_frame` readable during the call.
unsafe fn frame_for_rules(frame: *const dw_frame) -> Checked<Frame<'static>> {
    use dw_frame_kind::*;
    boundary::check(frame, dw_param::DW_PARAM_FRAME)?;
    let invalid = CallError::Invalid(dw_invalid::DW_INVALID_VALUE);
    Ok(match field!(frame.kind) {
        k if k == DW_FRAME_HANDSHAKE as u32 => Frame::Handshake(Handshake {
            source: field!(frame.body.handshake.source),
            uuid: None,
            labels: Map::EMPTY,
            metadata: Map::EMPTY,
            clock_anchor_wall_ns: 0,
            complete: false,
        }),
        k if k == DW_FRAME_INDEX as u32 => {
            let kind = match field!(frame.body.index.kind) {
                k if k == dw_index_kind::DW_INDEX_FULL as u32 => IndexKind::Full,
                k if k == dw_index_kind::DW_INDEX_DELTA as u32 => IndexKind::Delta,
                _ => return Err(invalid),
            };
            let state = field!(frame.body.index.state);
            Frame::Index(Index {
                source: field!(frame.body.index.source),
                stream: "",
                ts: 0,
                kind,
                state: (state[0], state[1]),
                blob: &[],
            })
        }
        k if k == DW_FRAME_ROWS as u32 => {
            let state = field!(frame.body.rows.index_state);
            Frame::Rows(Rows {
                source: field!(frame.body.rows.source),
                seq: field!(frame.body.rows.seq),
                index_state: (state[0], state[1]),
                rows: RowList::EMPTY,
            })
        }
        k if k == DW_FRAME_SEGMENT as u32 => Frame::Segment(Segment {
            source: field!(frame.body.segment.source),
            stream: "",
            rows: 0,
            first_ts: 0,
            last_ts: 0,
            bytes: &[],
            caller_index: None,
        }),
        k if k == DW_FRAME_CLOCK_OFFSET as u32 => Frame::ClockOffset(ClockOffset {
            source: field!(frame.body.clock_offset.source),
            ts: 0,
            offset_ns: 0,
        }),
        k if k == DW_FRAME_SOURCE_UPDATE as u32 => Frame::SourceUpdate(SourceUpdate {
            source: field!(frame.body.source_update.source),
            ts: 0,
            labels: Map::EMPTY,
            metadata: Map::EMPTY,
        }),
        k if k == DW_FRAME_UNKNOWN as u32 => Frame::Unknown {
            kind: field!(frame.body.unknown.kind),
            payload: &[],
        },
        _ => return Err(invalid),
    })
}

fn verdict_of(admitted: Admitted, frame_kind: u8) -> dw_admitted {
    let mut v = dw_admitted {
        kind: dw_admitted_kind::DW_ADMITTED_APPLY,
        source: 0,
        frame_kind,
        index_kind: 0,
        skip: dw_skip_reason::DW_SKIP_NONE,
        held: [0; 2],
        declared: [0; 2],
        lost: 0,
        first_gap: false,
        regression: false,
    };
    match admitted {
        Admitted::Opened { source } => {
            (v.kind, v.source) = (dw_admitted_kind::DW_ADMITTED_OPENED, source);
        }
        Admitted::Index { source, kind } => {
            (v.kind, v.source) = (dw_admitted_kind::DW_ADMITTED_INDEX, source);
            v.index_kind = u32::from(kind.to_byte());
        }
        Admitted::Rows(r) => {
            (v.kind, v.source) = (dw_admitted_kind::DW_ADMITTED_ROWS, r.source);
            (v.lost, v.first_gap, v.regression) = (r.lost, r.first_gap, r.regression);
            match r.skip {
                None => {}
                Some(SkipReason::BeforeFirstFull) => {
                    v.skip = dw_skip_reason::DW_SKIP_BEFORE_FIRST_FULL;
                }
                Some(SkipReason::IndexStateMismatch { held, declared }) => {
                    v.skip = dw_skip_reason::DW_SKIP_INDEX_STATE_MISMATCH;
                    v.held = [held.0, held.1];
                    v.declared = [declared.0, declared.1];
                }
            }
        }
        Admitted::Apply { source } => v.source = source,
        Admitted::Unknown { .. } => v.kind = dw_admitted_kind::DW_ADMITTED_UNKNOWN,
    }
    v
}

/// Judge one frame, in stream order: `DW_RESULT_OK` with `*verdict` saying
/// what to do with it, or `DW_RESULT_PROTOCOL_ERROR` for a frame that
/// breaks a stream-level rule (`dw_error.reason` says which); on an error
/// nothing changes.
///
/// # Safety
///
/// `subscriber` is a handle from `dw_subscriber_init`; `frame` points at a
/// `dw_frame` (from `dw_decode`), `verdict` at a `dw_admitted`; `error` is
/// null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_subscriber_admit(
    subscriber: *mut dw_subscriber,
    frame: *const dw_frame,
    verdict: *mut dw_admitted,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let rules = boundary::placed::<Rules, _>(subscriber, dw_param::DW_PARAM_SUBSCRIBER)?;
        let frame = frame_for_rules(frame)?;
        let verdict = boundary::out(verdict, dw_param::DW_PARAM_VERDICT)?;
        let admitted = rules.admit(&frame)?;
        verdict.write(verdict_of(admitted, frame.kind()));
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}

/// Forget every source: the connection ended, and the next one starts
/// with handshakes from ordinal 0 (rule 8).
///
/// # Safety
///
/// `subscriber` is a handle from `dw_subscriber_init`; `error` is null or
/// points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_subscriber_reset(
    subscriber: *mut dw_subscriber,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the handle is the caller's, as documented, and checked.
    let run = || unsafe {
        boundary::placed::<Rules, _>(subscriber, dw_param::DW_PARAM_SUBSCRIBER)?.reset();
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}

/// The sources open on the connection, into `*count`.
///
/// # Safety
///
/// `subscriber` is a handle from `dw_subscriber_init`; `count` points at a
/// `uint32_t`; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_subscriber_source_count(
    subscriber: *mut dw_subscriber,
    count: *mut u32,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented, and checked.
    let run = || unsafe {
        let rules = boundary::placed::<Rules, _>(subscriber, dw_param::DW_PARAM_SUBSCRIBER)?;
        boundary::out(count, dw_param::DW_PARAM_COUNT)?.write(rules.source_count() as u32);
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}

/// The index state held for `source` into `state[0]`, `state[1]`:
/// `DW_RESULT_OK`, or `DW_RESULT_DONE` if no such source is open.
///
/// # Safety
///
/// `subscriber` is a handle from `dw_subscriber_init`; `state` points at
/// two `uint64_t`s; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_subscriber_index_state(
    subscriber: *mut dw_subscriber,
    source: u32,
    state: *mut [u64; 2],
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented, and checked.
    let run = || unsafe {
        let rules = boundary::placed::<Rules, _>(subscriber, dw_param::DW_PARAM_SUBSCRIBER)?;
        let out = boundary::out(state, dw_param::DW_PARAM_STATE)?;
        Ok(match rules.index_state(source) {
            Some((a, b)) => {
                out.write([a, b]);
                dw_result::DW_RESULT_OK
            }
            None => dw_result::DW_RESULT_DONE,
        })
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}

/// Release the subscriber: its handle is refused from now on, and the
/// storage is the caller's again. Nothing needs freeing.
///
/// # Safety
///
/// `subscriber` is a handle from `dw_subscriber_init`; `error` is null or
/// points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_subscriber_release(
    subscriber: *mut dw_subscriber,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the handle is the caller's, as documented, and checked.
    let run = || unsafe {
        boundary::release::<Rules, _>(subscriber, dw_param::DW_PARAM_SUBSCRIBER)?;
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}
