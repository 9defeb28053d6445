//! The sentence each failure says: the core's own `Display` for a
//! protocol's error, the C surface's words for its own refusals, written
//! into a caller's buffer only when asked.

use core::ffi::c_char;
use core::fmt::{self, Write};

use super::{dw_error, dw_invalid, dw_result, CallError};
use crate::boundary;

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Null => f.write_str("a pointer the call needs is null"),
            CallError::Invalid(why) => f.write_str(match why {
                dw_invalid::DW_INVALID_NONE => "an argument the call cannot take",
                dw_invalid::DW_INVALID_MISALIGNED => {
                    "a pointer is not aligned for the type it points at"
                }
                dw_invalid::DW_INVALID_TOO_LONG => "a length is above what one buffer can hold",
                dw_invalid::DW_INVALID_NOT_UTF8 => "a string given is not valid UTF-8",
                dw_invalid::DW_INVALID_NOT_A_HANDLE => {
                    "the handle is not one _init made for this kind of object, or it was released"
                }
                dw_invalid::DW_INVALID_OVERLAP => {
                    "the storage given overlaps the publisher's own or another source's"
                }
                dw_invalid::DW_INVALID_TOO_MANY => {
                    "more streams or map entries than the C API takes (DW_MAX_STREAMS, \
                     DW_MAX_MAP_ENTRIES)"
                }
                dw_invalid::DW_INVALID_CURSOR => {
                    "the cursor does not point at what the decoder checked: its bytes changed, \
                     or dw_decode did not make it"
                }
                dw_invalid::DW_INVALID_VALUE => "a value outside its enum",
                dw_invalid::DW_INVALID_MOVED => {
                    "the handle names a copy of an object's storage, or storage moved since \
                     _init: only the handle _init returned is the object"
                }
                // Said with their numbers, as `CallError::Bound`.
                dw_invalid::DW_INVALID_STORAGE_TOO_SMALL
                | dw_invalid::DW_INVALID_SOURCE_LIMIT
                | dw_invalid::DW_INVALID_FULL_EVERY
                | dw_invalid::DW_INVALID_FRAME_BUFFER
                | dw_invalid::DW_INVALID_NOT_CUT => "an argument the call cannot take",
            }),
            CallError::Bound(why, v) => bound(f, *why, v),
            CallError::Truncated(cut) => write!(f, "{cut}"),
            CallError::MessageTooLong => f.write_str("the buffer is too small for the sentence"),
            CallError::Wire(e) => write!(f, "{e}"),
            CallError::Protocol(e) => write!(f, "{e}"),
            CallError::Publish(e) => write!(f, "{e}"),
        }
    }
}

/// The sentence of an argument refused with numbers.
fn bound(f: &mut fmt::Formatter<'_>, why: dw_invalid, v: &[u64; 4]) -> fmt::Result {
    use dw_invalid::*;
    match why {
        DW_INVALID_STORAGE_TOO_SMALL => write!(
            f,
            "the storage given for the object is {} bytes, and it needs {} (the header's \
             _SIZE, or _size() for this build)",
            v[1], v[0]
        ),
        DW_INVALID_SOURCE_LIMIT => write!(
            f,
            "a source limit of {}: a subscriber allows 1 to {} sources on one connection, \
             as dendro-wire does",
            v[0], v[1]
        ),
        DW_INVALID_FULL_EVERY => write!(
            f,
            "full_every is {}: a Full index is sent every full_every intervals (rule 7), \
             so it is at least 1",
            v[0]
        ),
        DW_INVALID_FRAME_BUFFER => write!(
            f,
            "a frame buffer of {} bytes: it must hold an empty Rows frame ({} bytes) and \
             need not hold more than the largest frame ({} bytes)",
            v[0], v[1], v[2]
        ),
        DW_INVALID_NOT_CUT => write!(
            f,
            "the bytes left hold a whole preamble or frame ({} bytes): decode it; a stream \
             is cut only inside one",
            v[0]
        ),
        _ => write!(f, "{}", CallError::Invalid(why)),
    }
}

/// A `fmt::Write` into a caller's buffer that stops at its end, at a
/// character boundary, and remembers that it did.
struct Bounded<'a> {
    buf: &'a mut [u8],
    len: usize,
    cut: bool,
}

impl Write for Bounded<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - self.len;
        let mut take = s.len().min(room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        if let (Some(to), Some(from)) = (self.buf.get_mut(self.len..self.len + take), s.get(..take))
        {
            to.copy_from_slice(from.as_bytes());
            self.len += take;
        }
        if take < s.len() {
            self.cut = true;
            return Err(fmt::Error);
        }
        Ok(())
    }
}

/// Write the sentence for `error` into `buf` — the same words the Rust
/// error's `Display` says (rule, field, offset), as `dendro-wire` prints
/// them — and its length into `*written`. A NUL follows it when there is
/// room; it is not counted.
///
/// Returns `DW_RESULT_OK`; `DW_RESULT_BUFFER_TOO_SMALL` with as much as
/// fits (cut at a character) when `len` is short (256 bytes always
/// suffice); `DW_RESULT_INVALID_ARGUMENT` for a `dw_error` the library did
/// not write; `DW_RESULT_NULL_PARAMETER` when a pointer is null.
///
/// # Safety
///
/// `error` points at a `dw_error`, `buf` at `len` writable bytes and
/// `written` at a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn dw_error_message(
    error: *const dw_error,
    buf: *mut c_char,
    len: usize,
    written: *mut usize,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let error = boundary::read(error)?;
        let buf = boundary::bytes_mut(buf.cast::<u8>(), len)?;
        let written = boundary::out(written)?;
        let failure =
            CallError::from_c(&error).ok_or(CallError::Invalid(dw_invalid::DW_INVALID_VALUE))?;
        let mut out = Bounded {
            buf,
            len: 0,
            cut: false,
        };
        let _ = write!(out, "{failure}");
        written.write(out.len);
        if let Some(nul) = out.buf.get_mut(out.len) {
            *nul = 0;
        }
        match out.cut {
            true => Err(CallError::MessageTooLong),
            false => Ok(dw_result::DW_RESULT_OK),
        }
    };
    match run() {
        Ok(r) => r,
        Err(f) => f.result(),
    }
}
