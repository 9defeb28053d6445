//! `dw_error_message`: the sentence a `dw_error` says (`error/sentence.rs`),
//! written into a caller's buffer only when asked, cut at a character when
//! the buffer is short.

use core::ffi::c_char;
use core::fmt::{self, Write};

use crate::boundary;
use crate::error::{dw_error, dw_invalid, dw_param, dw_result, CallError};

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
        let error = boundary::read(error, dw_param::DW_PARAM_ERROR)?;
        let buf = boundary::bytes_mut(buf.cast::<u8>(), len, dw_param::DW_PARAM_BUF)?;
        let written = boundary::out(written, dw_param::DW_PARAM_WRITTEN)?;
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
