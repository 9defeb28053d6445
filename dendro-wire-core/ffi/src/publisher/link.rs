//! The publisher on its link: a connection opened and lost, the interval
//! ended, the frames due polled into C's buffer, what waits and what was
//! counted, and release. Everything here is the core's `Publisher` as it
//! is, so a frame not polled before the next interval ends is dropped and
//! counted through C exactly as in Rust.

use super::handle::{dw_publisher, with, with_machine, Machine};
use crate::boundary::{self, finish};
use crate::error::{dw_error, dw_invalid, dw_param, dw_result, CallError};

/// One frame `dw_publisher_poll` wrote.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct dw_transmit {
    /// Its bytes, at the start of the buffer, length prefix included.
    pub len: usize,
    /// Its kind byte.
    pub kind: u8,
    /// Its source's ordinal.
    pub source: u32,
    /// The rows it carries (only a `Rows` frame carries any).
    pub rows: u32,
}

/// What a publisher has due and not yet polled.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct dw_waiting {
    /// Frames due.
    pub frames: u32,
    /// Their bytes, length prefixes included.
    pub bytes: usize,
    /// The rows observed in them.
    pub rows: u64,
}

/// What a publisher has done: the core's `PublisherStats`, whose
/// documentation says how they add up (`rows_observed = rows_sent +
/// rows_dropped + rows_unsent + rows in hand`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct dw_stats {
    /// Intervals ended.
    pub intervals: u64,
    /// Connections begun.
    pub connections: u64,
    /// Frames polled.
    pub frames_sent: u64,
    /// Rows taken into an interval's frame.
    pub rows_observed: u64,
    /// Rows that went out in a polled frame.
    pub rows_sent: u64,
    /// Rows a connection's first `Rows` frame carried again (rule 3).
    pub rows_repeated: u64,
    /// `Rows` frames dropped unpolled on a connection that went on: each a
    /// gap a subscriber sees.
    pub frames_dropped: u64,
    /// Rows in those frames.
    pub rows_dropped: u64,
    /// Other frames due and never polled.
    pub frames_unsent: u64,
    /// Rows that belonged to no connection.
    pub rows_unsent: u64,
    /// `dw_publisher_observe` calls refused.
    pub rows_refused: u64,
    /// Slot changes refused.
    pub slot_changes_refused: u64,
}

/// A new connection is open (its preamble written): anything still due
/// for the last one is dropped, counted as unsent, and the next interval
/// opens this one with every handshake, a `Full` per indexed source and
/// the latest row of every stream (rules 2, 3, 8).
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `error` is null or
/// points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_connected(
    publisher: *mut dw_publisher,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the caller's contract, passed on.
    unsafe { with(publisher, error, |m| m.publisher.connected()) }
}

/// The connection ended: anything still due is dropped, counted as
/// unsent, and until the next, intervals send nothing.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `error` is null or
/// points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_disconnected(
    publisher: *mut dw_publisher,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the caller's contract, passed on.
    unsafe { with(publisher, error, |m| m.publisher.disconnected()) }
}

/// End the interval: every source closes its `Rows` frame under way
/// (spending a `seq`, empty if nothing was observed since the last) and,
/// on a connection, has it made due after the index entry its rows need.
/// A slot set between two readings closed a frame already (rule 9).
/// Poll what is due with `dw_publisher_poll` before the next interval ends:
/// frames still due then are dropped, lost as a link slower than the
/// readings loses them, and counted (`frames_dropped`, `rows_dropped`).
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `error` is null or
/// points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_end_interval(
    publisher: *mut dw_publisher,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the caller's contract, passed on.
    unsafe { with(publisher, error, |m| m.publisher.end_interval()) }
}

/// Drop every frame due, as the next `dw_publisher_end_interval` would:
/// for a link that is up but cannot carry them in time.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `error` is null or
/// points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_drop_waiting(
    publisher: *mut dw_publisher,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the caller's contract, passed on.
    unsafe { with(publisher, error, |m| m.publisher.drop_waiting()) }
}

/// What is due and not yet polled, into `*waiting`.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `waiting` points at a
/// `dw_waiting`; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_waiting(
    publisher: *mut dw_publisher,
    waiting: *mut dw_waiting,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented, and checked.
    unsafe {
        with_machine(publisher, error, |m| {
            let w = m.publisher.waiting();
            boundary::out(waiting, dw_param::DW_PARAM_WAITING)?.write(dw_waiting {
                frames: w.frames,
                bytes: w.bytes,
                rows: w.rows,
            });
            Ok(dw_result::DW_RESULT_OK)
        })
    }
}

/// What the publisher has done so far, into `*stats`.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `stats` points at a
/// `dw_stats`; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_stats(
    publisher: *mut dw_publisher,
    stats: *mut dw_stats,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented, and checked.
    unsafe {
        with_machine(publisher, error, |m| {
            let s = m.publisher.stats();
            boundary::out(stats, dw_param::DW_PARAM_STATS)?.write(dw_stats {
                intervals: s.intervals,
                connections: s.connections,
                frames_sent: s.frames_sent,
                rows_observed: s.rows_observed,
                rows_sent: s.rows_sent,
                rows_repeated: s.rows_repeated,
                frames_dropped: s.frames_dropped,
                rows_dropped: s.rows_dropped,
                frames_unsent: s.frames_unsent,
                rows_unsent: s.rows_unsent,
                rows_refused: s.rows_refused,
                slot_changes_refused: s.slot_changes_refused,
            });
            Ok(dw_result::DW_RESULT_OK)
        })
    }
}

/// The index state of `source` now (the hash of its slots, or 0, 0 for a
/// source without an index), into `state[0]`, `state[1]`.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `state` points at two
/// `uint64_t`s; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_index_state(
    publisher: *mut dw_publisher,
    source: u32,
    state: *mut [u64; 2],
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    unsafe {
        with_machine(publisher, error, |m| {
            let out = boundary::out(state, dw_param::DW_PARAM_STATE)?;
            let (a, b) = m.publisher.index_state(m.id(source)?)?;
            out.write([a, b]);
            Ok(dw_result::DW_RESULT_OK)
        })
    }
}

/// The size of the frame the next poll writes into `*len`:
/// `DW_RESULT_OK`, or `DW_RESULT_DONE` if none is due.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `len` points at a
/// `size_t`; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_next_frame_len(
    publisher: *mut dw_publisher,
    len: *mut usize,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented, and checked.
    unsafe {
        with_machine(publisher, error, |m| {
            let out = boundary::out(len, dw_param::DW_PARAM_LEN)?;
            Ok(match m.publisher.next_frame_len() {
                Some(n) => {
                    out.write(n);
                    dw_result::DW_RESULT_OK
                }
                None => dw_result::DW_RESULT_DONE,
            })
        })
    }
}

/// Write the next frame the rules require at the start of `buf` (`len`
/// bytes) and what it is into `*transmit`: `DW_RESULT_OK`, or
/// `DW_RESULT_DONE` when none is left. Call it until `DW_RESULT_DONE`
/// after each `dw_publisher_end_interval`.
///
/// `DW_RESULT_BUFFER_TOO_SMALL` (`DW_PUBLISH_BUFFER_TOO_SMALL`, the size
/// needed in `values[0]`) if `len` is short, and the frame stays due; a
/// buffer of the configured `frame_buffer` always holds it.
/// `DW_RESULT_INVALID_ARGUMENT` if `buf` overlaps the publisher's or a
/// source's storage.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `buf` points at `len`
/// writable bytes; `transmit` at a `dw_transmit`; `error` is null or points
/// at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_poll(
    publisher: *mut dw_publisher,
    buf: *mut u8,
    len: usize,
    transmit: *mut dw_transmit,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    unsafe {
        with_machine(publisher, error, |m| {
            if m.overlaps((
                buf as usize,
                boundary::length(len, dw_param::DW_PARAM_BUF.into())?,
            )) {
                return Err(CallError::Invalid(dw_invalid::DW_INVALID_OVERLAP));
            }
            let buf = boundary::bytes_mut(buf, len, dw_param::DW_PARAM_BUF)?;
            let out = boundary::out(transmit, dw_param::DW_PARAM_TRANSMIT)?;
            Ok(match m.publisher.poll_transmit(buf)? {
                Some((_, t)) => {
                    out.write(dw_transmit {
                        len: t.len,
                        kind: t.kind,
                        source: t.source,
                        rows: t.rows,
                    });
                    dw_result::DW_RESULT_OK
                }
                None => dw_result::DW_RESULT_DONE,
            })
        })
    }
}

/// Release the publisher: its handle is refused from now on, and its
/// storage and every source's are the caller's again. Nothing needs
/// freeing.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `error` is null or
/// points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_release(
    publisher: *mut dw_publisher,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the handle is the caller's, as documented, and checked.
    let run = || unsafe {
        boundary::release::<Machine, _>(publisher, dw_param::DW_PARAM_PUBLISHER)?;
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}
