//! The cursors C steps over a decoded frame's rows and a map's entries:
//! each step reads the layout of [protocol §3] again, with every length
//! bounded by what is left, because C holds the cursor between the steps
//! and a cursor is only as good as the bytes it still points at.
//!
//! [protocol §3]: dendro_wire_core::protocol

use crate::boundary::{self, Checked};
use crate::error::{dw_invalid, dw_result, Failure};
use crate::frame::{bytes_of, dw_map, dw_row, dw_row_cursor, dw_str, str_of};

/// One `u32`-length-prefixed field off the front of `rest`.
fn take_prefixed<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, tail) = rest.split_first_chunk::<4>()?;
    let (field, tail) = tail.split_at_checked(u32::from_le_bytes(*len) as usize)?;
    *rest = tail;
    Some(field)
}

/// One little-endian `i64` off the front of `rest`.
fn take_i64(rest: &mut &[u8]) -> Option<i64> {
    let (word, tail) = rest.split_first_chunk::<8>()?;
    *rest = tail;
    Some(i64::from_le_bytes(*word))
}

/// The bytes a cursor points at, for one step.
///
/// # Safety
///
/// If `left` is above 0, `ptr` points at `len` readable bytes.
unsafe fn cursor_bytes<'a>(ptr: *const u8, len: usize, left: u32) -> Checked<&'a [u8]> {
    match left {
        0 => Ok(&[]),
        // SAFETY: the caller's contract, passed on.
        _ => unsafe { boundary::bytes(ptr, len) },
    }
}

/// The address `rest` starts at, as the cursor's pointer.
fn start_of(rest: &[u8]) -> *const u8 {
    match rest.is_empty() {
        true => core::ptr::null(),
        false => rest.as_ptr(),
    }
}

/// Step the cursor over one row: `DW_RESULT_OK` with `*row` filled and the
/// cursor moved past it; `DW_RESULT_DONE` once no row is left.
/// `DW_RESULT_INVALID_ARGUMENT` (`DW_INVALID_CURSOR`) if the bytes do not
/// hold the row the count says: the buffer changed after `dw_decode`.
///
/// # Safety
///
/// `cursor` points at a `dw_row_cursor` from a `dw_frame` whose buffer is
/// still lent; `row` at a `dw_row`.
#[no_mangle]
pub unsafe extern "C" fn dw_rows_next(cursor: *mut dw_row_cursor, row: *mut dw_row) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let c = boundary::read(cursor)?;
        let out_row = boundary::out(row)?;
        if c.left == 0 {
            return Ok(dw_result::DW_RESULT_DONE);
        }
        let mut rest = cursor_bytes(c.rest, c.len, c.left)?;
        let step = (|| {
            let stream = core::str::from_utf8(take_prefixed(&mut rest)?).ok()?;
            let ts = take_i64(&mut rest)?;
            let wall_offset = take_i64(&mut rest)?;
            let bytes = take_prefixed(&mut rest)?;
            Some(dw_row {
                stream: str_of(stream),
                ts,
                wall_offset,
                row: bytes_of(bytes),
            })
        })();
        let r = step.ok_or(Failure::Invalid(dw_invalid::DW_INVALID_CURSOR))?;
        out_row.write(r);
        let left = c.left - 1;
        boundary::out(cursor)?.write(dw_row_cursor {
            rest: if left == 0 {
                core::ptr::null()
            } else {
                start_of(rest)
            },
            len: rest.len(),
            left,
        });
        Ok(dw_result::DW_RESULT_OK)
    };
    match run() {
        Ok(r) => r,
        Err(f) => Failure::result(&f),
    }
}

/// Step over one map entry: `DW_RESULT_OK` with `*key` and `*value`
/// filled and `*map` moved past them; `DW_RESULT_DONE` once none is left.
/// `DW_RESULT_INVALID_ARGUMENT` (`DW_INVALID_CURSOR`) if the bytes do not
/// hold the entry the count says.
///
/// # Safety
///
/// `map` points at a `dw_map` from a `dw_frame` whose buffer is still
/// lent; `key` and `value` at `dw_str`s.
#[no_mangle]
pub unsafe extern "C" fn dw_map_next(
    map: *mut dw_map,
    key: *mut dw_str,
    value: *mut dw_str,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let m = boundary::read(map)?;
        let out_key = boundary::out(key)?;
        let out_value = boundary::out(value)?;
        if m.count == 0 {
            return Ok(dw_result::DW_RESULT_DONE);
        }
        let mut rest = cursor_bytes(m.entries, m.len, m.count)?;
        let entry = (|| {
            let k = core::str::from_utf8(take_prefixed(&mut rest)?).ok()?;
            let v = core::str::from_utf8(take_prefixed(&mut rest)?).ok()?;
            Some((k, v))
        })();
        let (k, v) = entry.ok_or(Failure::Invalid(dw_invalid::DW_INVALID_CURSOR))?;
        out_key.write(str_of(k));
        out_value.write(str_of(v));
        let count = m.count - 1;
        boundary::out(map)?.write(dw_map {
            entries: if count == 0 {
                core::ptr::null()
            } else {
                start_of(rest)
            },
            len: rest.len(),
            count,
        });
        Ok(dw_result::DW_RESULT_OK)
    };
    match run() {
        Ok(r) => r,
        Err(f) => Failure::result(&f),
    }
}
