//! The C API of `dendro-wire-core`: the dendro replication wire protocol
//! (version 1) for firmware written in C and for tools in any language with
//! a C FFI.
//!
//! Everything here is a thin boundary over the core: every rule of the
//! protocol stays in `dendro-wire-core`, and this crate only checks what C
//! hands it (a null pointer is an error, never a crash; a length is
//! bounded; an out-parameter is aligned; a handle carries a tag) and turns
//! the core's values into C structs whose pointers point into the caller's
//! own buffers. Nothing is allocated and nothing is copied: the caller owns
//! every byte, so the C side never frees anything the library made.
//!
//! The header, `include/dendro_wire.h`, is generated from this crate by
//! cbindgen (`cargo xtask c` regenerates it and fails when the committed one
//! is stale); its comments are the doc comments here.
//!
//! | file | what it holds |
//! |---|---|
//! | `boundary.rs` | the checks every entry point makes, and nearly all of the crate's `unsafe`; `finish`, the end of every entry point |
//! | `error.rs` | `dw_result`, `dw_error`, and `CallError`, its form inside the crate (`error/parts.rs`: each core error into a `dw_error` and back; `error/sentence.rs`: the sentence each says) |
//! | `error_message.rs` | `dw_error_message`: that sentence into a caller's buffer |
//! | `frame.rs` | the preamble check, the decoder, the frame as a C struct |
//! | `end.rs` | the end of a stream: clean, or cut inside a frame |
//! | `cursor.rs` | the row and map cursors over a decoded frame |
//! | `subscriber.rs` | the subscriber's rules in caller storage |
//! | `publisher.rs` | the publisher machine in caller storage, each source in a C buffer (`publisher/handle.rs`: the object in C's storage and its checks; `publisher/declared.rs`: a declaration gathered, and sized; `publisher/link.rs`: the link's events, the frames it sends, the publisher's state) |
//! | `utf8.rs` | whether a string C passed is UTF-8, in little flash |
//! | `version.rs` | the library's version and its ABI's |
//!
//! The crate is `no_std` with no allocator whenever panics abort, which
//! is every build C links (the `ffi` profile, and every `none` target); a host build that unwinds (tests, the fuzz target)
//! links std for its panic runtime only.

#![cfg_attr(panic = "abort", no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]
// The C names are the API: `dw_frame`, not `DwFrame`.
#![allow(non_camel_case_types)]

mod boundary;
mod cursor;
mod end;
mod error;
mod error_message;
mod frame;
mod publisher;
mod subscriber;
mod utf8;
mod version;

pub use cursor::{dw_map_next, dw_rows_next, dw_rows_next_batch};
pub use end::dw_stream_end;
pub use error::{
    dw_error, dw_field, dw_invalid, dw_param, dw_protocol_error, dw_publish_error, dw_result,
    dw_result_name, dw_rule, dw_truncated,
};
pub use error_message::dw_error_message;
pub use frame::{
    dw_bytes, dw_check_preamble, dw_clock_offset, dw_decode, dw_decode_limited, dw_frame,
    dw_frame_body, dw_frame_kind, dw_handshake, dw_index, dw_index_kind, dw_map, dw_preamble,
    dw_row, dw_row_cursor, dw_rows, dw_segment, dw_source_update, dw_str, dw_unknown,
    DW_LENGTH_PREFIX_BYTES, DW_MAX_FRAME_BYTES, DW_PREAMBLE_BYTES,
};
pub use publisher::{
    dw_budget, dw_pair, dw_publisher, dw_publisher_add_source, dw_publisher_config,
    dw_publisher_connected, dw_publisher_disconnected, dw_publisher_drop_waiting,
    dw_publisher_end_interval, dw_publisher_index_state, dw_publisher_init,
    dw_publisher_next_frame_len, dw_publisher_observe, dw_publisher_poll, dw_publisher_release,
    dw_publisher_remove_slot, dw_publisher_set_slot, dw_publisher_size, dw_publisher_stats,
    dw_publisher_waiting, dw_sizing, dw_source_decl, dw_source_sizing, dw_stats, dw_transmit,
    dw_waiting, DW_MAX_MAP_ENTRIES, DW_MAX_STREAMS, DW_PUBLISHER_ALIGN_32, DW_PUBLISHER_ALIGN_64,
    DW_PUBLISHER_HEAD_BYTES_32, DW_PUBLISHER_HEAD_BYTES_64, DW_PUBLISHER_MAX_SOURCES,
    DW_PUBLISHER_SOURCE_BYTES_32, DW_PUBLISHER_SOURCE_BYTES_64, DW_SIZING_FAST_NAME_BYTES,
    DW_SIZING_FAST_ROW_BYTES, DW_SIZING_FAST_WINDOW_BYTES,
};
pub use subscriber::{
    dw_admitted, dw_admitted_kind, dw_skip_reason, dw_subscriber, dw_subscriber_admit,
    dw_subscriber_index_state, dw_subscriber_init, dw_subscriber_release, dw_subscriber_reset,
    dw_subscriber_size, dw_subscriber_source_count, DW_SUBSCRIBER_ALIGN,
    DW_SUBSCRIBER_HEAD_BYTES_32, DW_SUBSCRIBER_HEAD_BYTES_64, DW_SUBSCRIBER_MAX_SOURCES,
    DW_SUBSCRIBER_SOURCE_BYTES,
};
pub use version::{
    dw_abi_version, dw_version, DW_ABI_VERSION, DW_VERSION, DW_VERSION_MAJOR, DW_VERSION_MINOR,
    DW_VERSION_PATCH,
};

/// A panic cannot unwind into C: it stops here. The release builds C links
/// are checked to have no path to it (`cargo xtask c` looks for this
/// function, `rust_begin_unwind`, in the cdylib and finds none).
#[cfg(panic = "abort")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {
        core::hint::spin_loop();
    }
}

/// The unwind tables of a host's precompiled `core` (built to unwind) name
/// this routine; a build that aborts never unwinds, so nothing calls it.
/// Defined so that a linker that keeps those tables finds the name.
#[cfg(all(panic = "abort", not(target_os = "none")))]
#[no_mangle]
extern "C" fn rust_eh_personality() {}

// Hidden, so the shared library exports `dw_*` and nothing else: the name
// is for the linker, not for a program.
#[cfg(all(panic = "abort", target_os = "linux"))]
core::arch::global_asm!(".hidden rust_eh_personality");
