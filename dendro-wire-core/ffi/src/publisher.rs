//! The publisher machine ([protocol §5], rules 1 to 9) in storage the
//! caller provides, each source kept in a buffer C lends for as long as
//! the publisher lives: the core's `Publisher`, unchanged, so its
//! slow-link semantics hold through C as they do in Rust (a reading is
//! never refused because frames wait; a frame not polled before the next
//! `dw_publisher_end_interval` is dropped and counted).
//!
//! [protocol §5]: dendro_wire_core::protocol

use core::ffi::c_void;
use core::ptr::NonNull;

use dendro_wire_core::{
    PublishError, Publisher, PublisherConfig, SourceId, Storage, LENGTH_PREFIX_BYTES,
    MAX_FRAME_BYTES,
};

use crate::boundary::{self, finish, overlap, Checked, Object, Plain};
use crate::error::{dw_error, dw_invalid, dw_result, CallError};
use crate::frame::{dw_str, EMPTY_ROWS_FRAME};

mod declared;
mod link;

use declared::Gathered;
pub use declared::{dw_budget, dw_sizing, dw_source_sizing};
pub use link::{
    dw_publisher_connected, dw_publisher_disconnected, dw_publisher_drop_waiting,
    dw_publisher_end_interval, dw_publisher_index_state, dw_publisher_next_frame_len,
    dw_publisher_poll, dw_publisher_release, dw_publisher_stats, dw_publisher_waiting,
};

/// The sources one publisher holds at most, fixed at build time: the
/// core's table of sources has a size the compiler knows, and each place
/// costs every publisher's storage (`DW_PUBLISHER_SIZE`).
pub const DW_PUBLISHER_SOURCES: u32 = 8;

/// The streams one source may declare through the C API: a stream per CPU
/// of a 255-CPU host and one more. They are gathered on the stack to
/// declare or size a source (16 bytes each on a 64-bit target, 8 on a
/// 32-bit one), and only then.
pub const DW_MAX_STREAMS: usize = 256;

/// The entries of a declared source's labels, and of its metadata, the C
/// API takes (gathered on the stack likewise).
pub const DW_MAX_MAP_ENTRIES: usize = 16;

/// Bytes of storage a publisher needs on any target this header serves
/// (`dw_publisher_size()` says the exact figure for this build), besides
/// each source's own storage.
pub const DW_PUBLISHER_SIZE: usize = 3072;

/// The alignment that storage needs.
pub const DW_PUBLISHER_ALIGN: usize = 16;

const SOURCES: usize = DW_PUBLISHER_SOURCES as usize;

/// A source's storage: the bytes C lent it, for as long as the publisher
/// lives.
struct Lent {
    ptr: NonNull<u8>,
    len: usize,
}

impl Lent {
    /// # Safety
    ///
    /// If `ptr` is not null, it points at `len` writable bytes that stay
    /// lent until the publisher is released, touched by nothing but it.
    unsafe fn new(ptr: *mut u8, len: usize) -> Checked<Lent> {
        // The checks of any buffer C lends; the slice is not kept.
        // SAFETY: the caller's contract, passed on.
        unsafe { boundary::bytes_mut(ptr, len) }?;
        let ptr = NonNull::new(ptr).ok_or(CallError::Null)?;
        Ok(Lent { ptr, len })
    }

    fn range(&self) -> (usize, usize) {
        (self.ptr.as_ptr() as usize, self.len)
    }
}

impl Storage for Lent {
    fn bytes(&self) -> &[u8] {
        // SAFETY: by `Lent::new`'s contract these bytes are the
        // publisher's alone for as long as it lives, which outlasts this
        // borrow of it; not null, and a length a slice can have.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only borrow.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// The publisher, the ids it gave, and where its bytes are, to refuse a
/// buffer that overlaps them.
struct Machine {
    publisher: Publisher<Lent, SOURCES>,
    ids: [Option<SourceId>; SOURCES],
    /// Each source's storage, by ordinal; `(0, 0)` for none.
    ranges: [(usize, usize); SOURCES],
    own: (usize, usize),
}

impl Object for Machine {
    const TAG: u64 = u64::from_le_bytes(*b"dw-publi");
}

const _: () = assert!(<Machine as Object>::SIZE <= DW_PUBLISHER_SIZE);
const _: () = assert!(<Machine as Object>::ALIGN <= DW_PUBLISHER_ALIGN);

impl Machine {
    fn id(&self, source: u32) -> Checked<SourceId> {
        self.ids
            .get(source as usize)
            .copied()
            .flatten()
            .ok_or(CallError::Publish(PublishError::UnknownSource { source }))
    }

    /// Whether `range` shares a byte with the publisher or a source's
    /// storage.
    fn overlaps(&self, range: (usize, usize)) -> bool {
        overlap(range, self.own) || self.ranges.iter().any(|r| overlap(range, *r))
    }
}

/// A publisher, kept in the caller's storage: a handle from
/// `dw_publisher_init`, never made or freed by the caller.
pub struct dw_publisher {
    _private: [u8; 0],
}

/// How a publisher paces full index state and bounds its frames.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_publisher_config {
    /// Send an indexed source's `Full` again every this many intervals
    /// (rule 7), besides the one each connection opens with (rule 2).
    pub full_every: u64,
    /// The size of the buffer frames are polled into: no frame is larger,
    /// length prefix included; what would make one larger is refused when
    /// it is given.
    pub frame_buffer: usize,
}

// SAFETY: integers only.
unsafe impl Plain for dw_publisher_config {}

/// One entry of a map to declare: both strings UTF-8, the keys of a map
/// in strictly ascending byte order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_pair {
    /// The key.
    pub key: dw_str,
    /// The value.
    pub value: dw_str,
}

// SAFETY: pointers and integers only.
unsafe impl Plain for dw_pair {}

/// A source as it is declared. Every string is UTF-8 and copied into the
/// source's storage by `dw_publisher_add_source`: none need outlive the
/// call. An array may be null when its length is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct dw_source_decl {
    /// Canonical lowercase 8-4-4-4-12, or a null `ptr` to let the
    /// subscriber mint one.
    pub uuid: dw_str,
    /// The source's labels, in key order.
    pub labels: *const dw_pair,
    /// How many (at most `DW_MAX_MAP_ENTRIES`).
    pub labels_len: usize,
    /// The source's metadata (the rows' `encoder`), in key order.
    pub metadata: *const dw_pair,
    /// How many (at most `DW_MAX_MAP_ENTRIES`).
    pub metadata_len: usize,
    /// The anchor of the source's timeline, ns.
    pub clock_anchor_wall_ns: i64,
    /// 1 if the source was finalized, else 0.
    pub complete: u32,
    /// The streams rows are observed on, named by their place here.
    pub streams: *const dw_str,
    /// How many (at most `DW_MAX_STREAMS`).
    pub streams_len: usize,
    /// The `caller_rows` stream of the source's index, or a null `ptr` for
    /// a source without one (its rows declare no index state).
    pub index_stream: dw_str,
}

// SAFETY: pointers and integers only.
unsafe impl Plain for dw_source_decl {}

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

/// The exact bytes of storage a publisher takes in this build.
#[no_mangle]
pub extern "C" fn dw_publisher_size() -> usize {
    <Machine as Object>::SIZE
}

/// The publisher behind a handle, for one call.
///
/// # Safety
///
/// As for `boundary::placed`.
unsafe fn machine<'a>(p: *mut dw_publisher) -> Checked<&'a mut Machine> {
    // SAFETY: the caller's contract, passed on.
    unsafe { boundary::placed::<Machine, _>(p) }
}

/// Run `f` on the publisher behind `p`, returning `DW_RESULT_OK`, or why
/// the handle was refused (into `error` when given).
///
/// # Safety
///
/// As for `boundary::placed`; `error` is null or points at a `dw_error`.
unsafe fn with(
    p: *mut dw_publisher,
    error: *mut dw_error,
    f: impl FnOnce(&mut Machine),
) -> dw_result {
    // SAFETY: the caller's contract, passed on.
    let m = unsafe { machine(p) };
    let run = m.map(f).map(|()| dw_result::DW_RESULT_OK);
    // SAFETY: as above.
    unsafe { finish(run, error) }
}

/// Make a publisher with no sources and no connection in `storage` (`len`
/// bytes, at least `DW_PUBLISHER_SIZE`, aligned to `DW_PUBLISHER_ALIGN`),
/// and write its handle into `*publisher`. The storage is the
/// publisher's until `dw_publisher_release`.
///
/// # Safety
///
/// `storage` points at `len` writable bytes, touched only through the
/// handle until it is released; `config` at a `dw_publisher_config`;
/// `publisher` at a `dw_publisher *`; `error` is null or points at a
/// `dw_error`.
#[no_mangle]
pub unsafe extern "C" fn dw_publisher_init(
    storage: *mut c_void,
    len: usize,
    config: *const dw_publisher_config,
    publisher: *mut *mut dw_publisher,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        let config = checked_config(boundary::read(config)?)?;
        let out = boundary::out(publisher)?;
        let machine = Machine {
            publisher: Publisher::new(PublisherConfig {
                full_every: config.full_every,
                frame_buffer: config.frame_buffer,
            }),
            ids: [None; SOURCES],
            ranges: [(0, 0); SOURCES],
            own: (storage as usize, <Machine as Object>::SIZE),
        };
        out.write(boundary::place(storage.cast::<u8>(), len, machine)?);
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(run(), error) }
}

/// A configuration that means something: a `Full` every `full_every`
/// intervals, 1 or more; a frame buffer that holds an empty `Rows` frame
/// (a connection's every interval sends one, rule 6) and no more than the
/// largest frame.
fn checked_config(config: dw_publisher_config) -> Checked<dw_publisher_config> {
    let most = MAX_FRAME_BYTES as usize + LENGTH_PREFIX_BYTES;
    if config.full_every == 0 {
        return Err(CallError::Bound(dw_invalid::DW_INVALID_FULL_EVERY, [0; 4]));
    }
    if !(EMPTY_ROWS_FRAME..=most).contains(&config.frame_buffer) {
        return Err(CallError::Bound(
            dw_invalid::DW_INVALID_FRAME_BUFFER,
            [
                config.frame_buffer as u64,
                EMPTY_ROWS_FRAME as u64,
                most as u64,
                0,
            ],
        ));
    }
    Ok(config)
}

/// The strings of `len` `dw_str`s at `ptr`, into `out`.
///
/// # Safety
///
/// As for `boundary::items`, and each string as for `boundary::str`.
unsafe fn strs<'a, const N: usize>(
    ptr: *const dw_str,
    len: usize,
    out: &'a mut [&'a str; N],
) -> Checked<&'a [&'a str]> {
    // SAFETY: the caller's contract, passed on.
    let given = unsafe { boundary::items(ptr, len, N) }?;
    for (to, s) in out.iter_mut().zip(given) {
        // SAFETY: as above.
        *to = unsafe { boundary::str(s.ptr, s.len) }?;
    }
    Ok(out.get(..given.len()).unwrap_or(&[]))
}

/// The pairs of `len` `dw_pair`s at `ptr`, into `out`.
///
/// # Safety
///
/// As for [`strs`].
unsafe fn pairs<'a>(
    ptr: *const dw_pair,
    len: usize,
    out: &'a mut [(&'a str, &'a str); DW_MAX_MAP_ENTRIES],
) -> Checked<&'a [(&'a str, &'a str)]> {
    // SAFETY: the caller's contract, passed on.
    let given = unsafe { boundary::items(ptr, len, DW_MAX_MAP_ENTRIES) }?;
    for (to, p) in out.iter_mut().zip(given) {
        // SAFETY: as above.
        *to = unsafe {
            (
                boundary::str(p.key.ptr, p.key.len)?,
                boundary::str(p.value.ptr, p.value.len)?,
            )
        };
    }
    Ok(out.get(..given.len()).unwrap_or(&[]))
}

/// An optional string: a null `ptr` is absent.
///
/// # Safety
///
/// As for `boundary::str`.
unsafe fn optional<'a>(s: dw_str) -> Checked<Option<&'a str>> {
    match s.ptr.is_null() {
        true => Ok(None),
        // SAFETY: the caller's contract, passed on.
        false => unsafe { boundary::str(s.ptr, s.len) }.map(Some),
    }
}

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
    let run = || unsafe {
        let m = machine(publisher)?;
        let out = boundary::out(source)?;
        let mut gathered = Gathered::new();
        let decl = gathered.declaration(decl)?;
        // Before any slice is made of it: a slice over the publisher's own
        // bytes would alias the publisher in hand.
        if m.overlaps((storage as usize, storage_len)) {
            return Err(CallError::Invalid(dw_invalid::DW_INVALID_OVERLAP));
        }
        let lent = Lent::new(storage.cast::<u8>(), storage_len)?;
        let range = lent.range();
        let id = m.publisher.add_source(&decl, lent)?;
        let at = id.ordinal() as usize;
        if let (Some(slot), Some(r)) = (m.ids.get_mut(at), m.ranges.get_mut(at)) {
            *slot = Some(id);
            *r = range;
        }
        out.write(id.ordinal());
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(run(), error) }
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
    let run = || unsafe {
        let m = machine(publisher)?;
        let row = boundary::bytes(row, row_len)?;
        let id = m.id(source)?;
        m.publisher
            .observe(id.stream(stream), ts, wall_offset, row)?;
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(run(), error) }
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
    let run = || unsafe {
        let m = machine(publisher)?;
        let key = boundary::bytes(key, key_len)?;
        let value = boundary::bytes(value, value_len)?;
        let id = m.id(source)?;
        m.publisher.set_slot(id, key, value)?;
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(run(), error) }
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
    let run = || unsafe {
        let m = machine(publisher)?;
        let key = boundary::bytes(key, key_len)?;
        let id = m.id(source)?;
        m.publisher.remove_slot(id, key)?;
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(run(), error) }
}
