//! The sentence each failure says: the core's own `Display` for a
//! protocol's error, the C surface's words for its own refusals
//! (`error_message.rs` writes it into a caller's buffer when asked).

use core::fmt;

use super::{dw_invalid, dw_param, At, CallError};

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Null(at) if at.param() == dw_param::DW_PARAM_UNNAMED => {
                f.write_str("a pointer the call needs is null")
            }
            CallError::Null(at) => {
                place(f, *at)?;
                f.write_str(" is null, and the call needs it")
            }
            CallError::Arg(why, at) if at.param() == dw_param::DW_PARAM_UNNAMED => {
                write!(f, "{}", CallError::Invalid(*why))
            }
            CallError::Arg(why, at) => {
                place(f, *at)?;
                f.write_str(match why {
                    dw_invalid::DW_INVALID_MISALIGNED => {
                        " is not aligned for the type it points at"
                    }
                    dw_invalid::DW_INVALID_TOO_LONG => {
                        "'s length is above what one buffer can hold"
                    }
                    dw_invalid::DW_INVALID_NOT_UTF8 => " is not valid UTF-8",
                    dw_invalid::DW_INVALID_TOO_MANY => {
                        " has more entries than the C API takes (DW_MAX_STREAMS, \
                         DW_MAX_MAP_ENTRIES)"
                    }
                    _ => " is an argument the call cannot take",
                })
            }
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
                | dw_invalid::DW_INVALID_NOT_CUT
                | dw_invalid::DW_INVALID_CAPACITY => "an argument the call cannot take",
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

/// The name of `param` as the header spells it, an element's place in its
/// array filled in (`decl->streams[2]`).
fn place(f: &mut fmt::Formatter<'_>, at: At) -> fmt::Result {
    let name = at.param().name();
    match (at.item(), name.split_once("[]")) {
        (Some(at), Some((array, rest))) => write!(f, "{array}[{at}]{rest}"),
        _ => f.write_str(name),
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
        DW_INVALID_SOURCE_LIMIT => match v[2] {
            1 => write!(
                f,
                "a source limit of {}: a publisher holds 1 to {} sources, as many as a \
                 subscriber allows on one connection",
                v[0], v[1]
            ),
            _ => write!(
                f,
                "a source limit of {}: a subscriber allows 1 to {} sources on one connection, \
                 as dendro-wire does",
                v[0], v[1]
            ),
        },
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
        DW_INVALID_CAPACITY => write!(
            f,
            "a batch of capacity {}: dw_rows_next_batch's capacity is the rows it may fill, at \
             least 1",
            v[0]
        ),
        _ => write!(f, "{}", CallError::Invalid(why)),
    }
}
