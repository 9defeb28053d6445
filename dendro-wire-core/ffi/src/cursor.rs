//! The cursors C steps over a decoded frame's rows and a map's entries:
//! each step reads the layout of [protocol §3] again, with every length
//! bounded by what is left, because C holds the cursor between the steps
//! and a cursor is only as good as the bytes it still points at. A step
//! makes no Rust string of what it reads (the decoder checked the UTF-8),
//! so bytes changed behind a cursor are refused or handed back as bytes,
//! never misread as memory.
//!
//! [protocol §3]: dendro_wire_core::protocol

use core::ffi::c_char;
use core::mem::MaybeUninit;

use crate::boundary::{self, finish, Checked};
use crate::error::{dw_error, dw_invalid, dw_param, dw_result, CallError};
use crate::frame::{dw_bytes, dw_map, dw_row, dw_row_cursor, dw_str};

/// One `u32`-length-prefixed field off the front of `rest`.
#[inline(always)]
fn take_prefixed<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, tail) = rest.split_first_chunk::<4>()?;
    let (field, tail) = tail.split_at_checked(u32::from_le_bytes(*len) as usize)?;
    *rest = tail;
    Some(field)
}

/// One little-endian `i64` off the front of `rest`.
#[inline(always)]
fn take_i64(rest: &mut &[u8]) -> Option<i64> {
    let (word, tail) = rest.split_first_chunk::<8>()?;
    *rest = tail;
    Some(i64::from_le_bytes(*word))
}

fn str_at(bytes: &[u8]) -> dw_str {
    dw_str {
        ptr: bytes.as_ptr().cast::<c_char>(),
        len: bytes.len(),
    }
}

/// One row off the front of `rest`, in the layout of §4.3.
#[inline(always)]
fn take_row(rest: &mut &[u8]) -> Option<dw_row> {
    let stream = take_prefixed(rest)?;
    let ts = take_i64(rest)?;
    let wall_offset = take_i64(rest)?;
    let row = take_prefixed(rest)?;
    Some(dw_row {
        stream: str_at(stream),
        ts,
        wall_offset,
        row: dw_bytes {
            ptr: row.as_ptr(),
            len: row.len(),
        },
    })
}

/// The bytes a cursor points at, for one step: its pointer is never null
/// in a cursor the decoder made, so null (a zeroed cursor) is refused.
///
/// # Safety
///
/// If `ptr` is not null, it points at `len` readable bytes.
unsafe fn cursor_bytes<'a>(ptr: *const u8, len: usize) -> Checked<&'a [u8]> {
    if ptr.is_null() {
        return Err(CallError::Invalid(dw_invalid::DW_INVALID_CURSOR));
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { boundary::bytes(ptr, len, dw_param::DW_PARAM_CURSOR) }
}

/// Step the cursor over up to `capacity` rows into `rows[0..]`, in one
/// call: `DW_RESULT_OK` with `*filled` rows written (at least 1) and the
/// cursor moved past them; `DW_RESULT_DONE` with `*filled` 0 once no row is
/// left. Each `dw_row` points into the frame's buffer, as `dw_rows_next`'s
/// do; a few hundred rows a call make the crossing's cost vanish.
///
/// `DW_RESULT_INVALID_ARGUMENT`: `DW_INVALID_CURSOR` if the cursor was not
/// made by `dw_decode` (a zeroed one) or its bytes do not hold the rows its
/// count says (the buffer changed after `dw_decode`; then nothing is
/// consumed); `DW_INVALID_CAPACITY` for a `capacity` of 0.
///
/// # Safety
///
/// `cursor` points at a `dw_row_cursor` from a `dw_frame` whose buffer is
/// still lent; `rows` at `capacity` `dw_row`s; `filled` at a `size_t`;
/// `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_rows_next_batch(
    cursor: *mut dw_row_cursor,
    rows: *mut dw_row,
    capacity: usize,
    filled: *mut usize,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let c = boundary::read(cursor, dw_param::DW_PARAM_CURSOR)?;
        let out = boundary::out_items(rows, capacity, dw_param::DW_PARAM_ROWS)?;
        let filled = boundary::out(filled, dw_param::DW_PARAM_FILLED)?;
        if capacity == 0 {
            return Err(CallError::Bound(dw_invalid::DW_INVALID_CAPACITY, [0; 4]));
        }
        let mut rest = cursor_bytes(c.rest, c.len)?;
        let take = (c.left as usize).min(capacity);
        for slot in out.iter_mut().take(take) {
            let row =
                take_row(&mut rest).ok_or(CallError::Invalid(dw_invalid::DW_INVALID_CURSOR))?;
            slot.write(row);
        }
        filled.write(take);
        if take == 0 {
            return Ok(dw_result::DW_RESULT_DONE);
        }
        boundary::out(cursor, dw_param::DW_PARAM_CURSOR)?.write(dw_row_cursor {
            rest: rest.as_ptr(),
            len: rest.len(),
            left: c.left - take as u32,
        });
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}

/// Step the cursor over one row: `DW_RESULT_OK` with `*row` filled and the
/// cursor moved past it; `DW_RESULT_DONE` once no row is left.
/// `DW_RESULT_INVALID_ARGUMENT` (`DW_INVALID_CURSOR`) if the cursor was not
/// made by `dw_decode` (a zeroed one), or its bytes do not hold the row
/// the count says (the buffer changed after `dw_decode`). To step many
/// rows, `dw_rows_next_batch` crosses once for hundreds.
///
/// # Safety
///
/// `cursor` points at a `dw_row_cursor` from a `dw_frame` whose buffer is
/// still lent; `row` at a `dw_row`; `error` is null or points at a
/// `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_rows_next(
    cursor: *mut dw_row_cursor,
    row: *mut dw_row,
    error: *mut dw_error,
) -> dw_result {
    let mut filled = MaybeUninit::<usize>::uninit();
    // SAFETY: the caller's contract, passed on; `filled` is ours.
    unsafe { dw_rows_next_batch(cursor, row, 1, filled.as_mut_ptr(), error) }
}

/// Step over one map entry: `DW_RESULT_OK` with `*key` and `*value`
/// filled and `*map` moved past them; `DW_RESULT_DONE` once none is left.
/// `DW_RESULT_INVALID_ARGUMENT` (`DW_INVALID_CURSOR`) if the map was not
/// made by `dw_decode` (a zeroed one) or its bytes do not hold the entry
/// the count says.
///
/// # Safety
///
/// `map` points at a `dw_map` from a `dw_frame` whose buffer is still
/// lent; `key` and `value` at `dw_str`s; `error` is null or points at a
/// `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_map_next(
    map: *mut dw_map,
    key: *mut dw_str,
    value: *mut dw_str,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let m = boundary::read(map, dw_param::DW_PARAM_MAP)?;
        let out_key = boundary::out(key, dw_param::DW_PARAM_KEY)?;
        let out_value = boundary::out(value, dw_param::DW_PARAM_VALUE)?;
        let mut rest = cursor_bytes(m.entries, m.len)?;
        if m.count == 0 {
            return Ok(dw_result::DW_RESULT_DONE);
        }
        let invalid = CallError::Invalid(dw_invalid::DW_INVALID_CURSOR);
        let k = take_prefixed(&mut rest).ok_or(invalid)?;
        let v = take_prefixed(&mut rest).ok_or(invalid)?;
        out_key.write(str_at(k));
        out_value.write(str_at(v));
        boundary::out(map, dw_param::DW_PARAM_MAP)?.write(dw_map {
            entries: rest.as_ptr(),
            len: rest.len(),
            count: m.count - 1,
        });
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}
