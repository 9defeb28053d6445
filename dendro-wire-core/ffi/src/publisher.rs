//! The publisher machine ([protocol §5], rules 1 to 9) in storage the
//! caller provides, each source kept in a buffer C lends for as long as
//! the publisher lives: the core's `Publisher`, unchanged, so its
//! slow-link semantics hold through C as they do in Rust (a reading is
//! never refused because frames wait; a frame not polled before the next
//! `dw_publisher_end_interval` is dropped and counted).
//!
//! [protocol §5]: dendro_wire_core::protocol

use core::ffi::c_void;

use dendro_wire_core::SourceId;

use crate::boundary;
use crate::error::{dw_error, dw_param, dw_result};

mod declared;
mod handle;
mod link;

use declared::with_declaration;
pub use declared::{
    dw_budget, dw_pair, dw_sizing, dw_source_decl, dw_source_sizing, DW_MAX_MAP_ENTRIES,
    DW_MAX_STREAMS, DW_SIZING_FAST_NAME_BYTES, DW_SIZING_FAST_ROW_BYTES,
    DW_SIZING_FAST_WINDOW_BYTES,
};
use handle::with_machine;
pub use handle::{
    dw_publisher, dw_publisher_config, dw_publisher_init, dw_publisher_size, DW_PUBLISHER_ALIGN_32,
    DW_PUBLISHER_ALIGN_64, DW_PUBLISHER_HEAD_BYTES_32, DW_PUBLISHER_HEAD_BYTES_64,
    DW_PUBLISHER_MAX_SOURCES, DW_PUBLISHER_SOURCE_BYTES_32, DW_PUBLISHER_SOURCE_BYTES_64,
};
pub use link::{
    dw_publisher_connected, dw_publisher_disconnected, dw_publisher_drop_waiting,
    dw_publisher_end_interval, dw_publisher_index_state, dw_publisher_next_frame_len,
    dw_publisher_poll, dw_publisher_release, dw_publisher_stats, dw_publisher_waiting, dw_stats,
    dw_transmit, dw_waiting,
};

/// Declare a source as `*decl` says, kept in `storage` (`storage_len`
/// bytes, lent until the publisher is released), and write its ordinal
/// into `*source`: the ordinal its frames carry on every connection, and
/// the `source` the other calls take. Its handshake goes out at the end of
/// the interval after each connection opens.
///
/// `DW_RESULT_REFUSED` if the handshake or the streams' room in a
/// connection's first `Rows` frame would outgrow the frame buffer, the
/// storage cannot hold them, a stream is declared twice or the table is
/// full; `DW_RESULT_INVALID_ARGUMENT` for a string that is not UTF-8, more
/// than `DW_MAX_STREAMS` streams or `DW_MAX_MAP_ENTRIES` entries, or
/// storage that overlaps the publisher's or another source's.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `decl` points at a
/// `dw_source_decl` whose arrays and strings are readable for the call;
/// `storage` at `storage_len` writable bytes, touched by nothing but the
/// publisher until it is released; `source` at a `uint32_t`; `error` is
/// null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_add_source(
    publisher: *mut dw_publisher,
    decl: *const dw_source_decl,
    storage: *mut c_void,
    storage_len: usize,
    source: *mut u32,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    unsafe {
        with_machine(publisher, error, |m| {
            let out = boundary::out(source, dw_param::DW_PARAM_SOURCE)?;
            with_declaration(decl, |decl, streams| {
                let id = m.add_source(decl, streams, storage.cast::<u8>(), storage_len)?;
                out.write(id.ordinal());
                Ok(())
            })?;
            Ok(dw_result::DW_RESULT_OK)
        })
    }
}

/// Observe one row on stream `stream` (its place in the declaration) of
/// source `source`, for this interval's `Rows` frame: encoded into the
/// frame now, so `row` need not outlive the call.
///
/// Never refused because frames wait to be polled. `DW_RESULT_REFUSED`,
/// and counted in `rows_refused`, only if the row would make a `Rows`
/// frame larger than the frame buffer, the storage cannot hold it, or the
/// stream was never declared.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `row` points at
/// `row_len` readable bytes; `error` is null or points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_observe(
    publisher: *mut dw_publisher,
    source: u32,
    stream: u32,
    ts: i64,
    wall_offset: i64,
    row: *const u8,
    row_len: usize,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    unsafe {
        with_machine(publisher, error, |m| {
            let row = boundary::bytes(row, row_len, dw_param::DW_PARAM_ROW)?;
            // Not checked here: the core refuses a source never declared,
            // and counts the row refused.
            let stream = SourceId::at(source).stream(stream);
            m.publisher.observe(stream, ts, wall_offset, row)?;
            Ok(dw_result::DW_RESULT_OK)
        })
    }
}

/// Set an index slot of `source`, adding it or changing its value: sent in
/// the interval's `Delta`, or in the next `Full`. Never refused because
/// frames wait. `DW_RESULT_REFUSED`, and counted in
/// `slot_changes_refused`, if every slot would no longer fit one `Full` in
/// the frame buffer or the storage cannot hold it; also for a source
/// declared without an index stream.
///
/// # Safety
///
/// `publisher` is a handle from `dw_publisher_init`; `key` and `value`
/// point at `key_len` and `value_len` readable bytes; `error` is null or
/// points at a `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_set_slot(
    publisher: *mut dw_publisher,
    source: u32,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    unsafe {
        with_machine(publisher, error, |m| {
            let key = boundary::bytes(key, key_len, dw_param::DW_PARAM_KEY)?;
            let value = boundary::bytes(value, value_len, dw_param::DW_PARAM_VALUE)?;
            let id = m.id(source)?;
            m.publisher.set_slot(id, key, value)?;
            Ok(dw_result::DW_RESULT_OK)
        })
    }
}

/// Remove an index slot of `source`; a slot that is not there is no
/// change.
///
/// # Safety
///
/// As for `dw_publisher_set_slot`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_remove_slot(
    publisher: *mut dw_publisher,
    source: u32,
    key: *const u8,
    key_len: usize,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    unsafe {
        with_machine(publisher, error, |m| {
            let key = boundary::bytes(key, key_len, dw_param::DW_PARAM_KEY)?;
            let id = m.id(source)?;
            m.publisher.remove_slot(id, key)?;
            Ok(dw_result::DW_RESULT_OK)
        })
    }
}
