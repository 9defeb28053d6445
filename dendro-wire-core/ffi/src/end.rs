//! The end of a stream: a clean end at a frame boundary, or a cut inside
//! the preamble or a frame, said in the tool's words. The decoder cannot
//! tell an end from a pause; the caller that knows no more bytes will
//! come asks here.

use dendro_wire_core::{check_preamble, FrameDecoder, Status, Truncated};

use crate::boundary::{self, finish};
use crate::error::{dw_error, dw_invalid, dw_param, dw_result, CallError};

/// The stream has ended (its transport closed, its file was read whole),
/// and `rest` (`len` bytes; null when `len` is 0) is what is left of it
/// unconsumed: from the stream's start if the preamble was not yet read
/// (`preamble_read` 0), else from a frame boundary (`preamble_read` 1).
/// The decoder cannot tell an end from a pause (`DW_RESULT_INCOMPLETE`);
/// this says which it was.
///
/// - `DW_RESULT_OK`: a clean end, at a frame boundary after the preamble.
/// - `DW_RESULT_TRUNCATED`: the stream was cut inside its preamble or a
///   frame, and that frame was lost: an error, never the end (§1).
///   `dw_error_message` says it in the tool's words ("the stream ends
///   inside this frame: 3 of at least 4 byte(s) arrived");
///   `dw_error.values[0]` the bytes that arrived, `values[1]` those needed
///   at least.
/// - `DW_RESULT_MALFORMED`: the bytes left break a rule (a length of zero
///   or above the limit), as `dw_decode` says.
/// - `DW_RESULT_INVALID_ARGUMENT` (`DW_INVALID_NOT_CUT`): they hold a
///   whole preamble or frame, still to decode.
///
/// # Safety
///
/// `rest` points at `len` readable bytes; `error` is null or points at a
/// `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_stream_end(
    rest: *const u8,
    len: usize,
    preamble_read: u32,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let rest = match len {
            0 => &[][..],
            _ => boundary::bytes(rest, len, dw_param::DW_PARAM_REST)?,
        };
        let cut = |in_preamble, needed| {
            Err(CallError::Truncated(Truncated {
                in_preamble,
                have: len,
                needed,
            }))
        };
        let whole = |n: usize| {
            Err(CallError::Bound(
                dw_invalid::DW_INVALID_NOT_CUT,
                [n as u64, 0, 0, 0],
            ))
        };
        match preamble_read {
            0 => match check_preamble(rest)? {
                Status::Complete(n) => whole(n),
                Status::Incomplete { needed } => cut(true, len + needed),
            },
            1 if len == 0 => Ok(dw_result::DW_RESULT_OK),
            1 => match FrameDecoder::new().frame_len(rest)? {
                Status::Complete(total) if total <= len => whole(total),
                Status::Complete(total) => cut(false, total),
                Status::Incomplete { needed } => cut(false, len + needed),
            },
            _ => Err(CallError::Invalid(dw_invalid::DW_INVALID_VALUE)),
        }
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
}
