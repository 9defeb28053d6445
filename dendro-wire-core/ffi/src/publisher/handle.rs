//! The publisher object in the caller's storage: its size and alignment,
//! the buffers C lends each source, the handle every call checks, and
//! `dw_publisher_init`.

use core::ffi::c_void;
use core::mem::{align_of, size_of};
use core::ptr::NonNull;

use dendro_wire_core::{
    PublishError, PublisherConfig, PublisherIn, PublisherSource, SourceDecl, SourceId, SourceTable,
    Storage, LENGTH_PREFIX_BYTES, MAX_FRAME_BYTES,
};

use crate::boundary::{self, finish, overlap, written, Checked, Object, Plain};
use crate::error::{dw_error, dw_invalid, dw_param, dw_result, CallError};
use crate::frame::EMPTY_ROWS_FRAME;

use super::declared::{self, Streams};

/// The most sources a publisher may be given as its limit: what a
/// subscriber takes on one connection (`DW_SUBSCRIBER_MAX_SOURCES`).
pub const DW_PUBLISHER_MAX_SOURCES: u32 = 1024;

/// A publisher's storage, besides its table of sources, on a 64-bit
/// target: see `DW_PUBLISHER_SIZE(sources)`, which picks this or the
/// 32-bit figure for the target it is compiled for.
pub const DW_PUBLISHER_HEAD_BYTES_64: usize = 208;

/// The same on a 32-bit target (Cortex-M0, Cortex-M3, RISC-V 32).
pub const DW_PUBLISHER_HEAD_BYTES_32: usize = 184;

/// A publisher's storage for each source its limit allows, on a 64-bit
/// target.
pub const DW_PUBLISHER_SOURCE_BYTES_64: usize = 320;

/// The same on a 32-bit target.
pub const DW_PUBLISHER_SOURCE_BYTES_32: usize = 248;

/// The alignment a publisher's storage needs on a 64-bit target.
pub const DW_PUBLISHER_ALIGN_64: usize = 16;

/// The same on a 32-bit target.
pub const DW_PUBLISHER_ALIGN_32: usize = 8;

/// This target's figures, which the header's macros pick by the width of
/// a pointer: held equal to the sizes the compiler gives, on every target
/// the library is built for.
const HEAD_BYTES: usize = match cfg!(target_pointer_width = "64") {
    true => DW_PUBLISHER_HEAD_BYTES_64,
    false => DW_PUBLISHER_HEAD_BYTES_32,
};
const SOURCE_BYTES: usize = match cfg!(target_pointer_width = "64") {
    true => DW_PUBLISHER_SOURCE_BYTES_64,
    false => DW_PUBLISHER_SOURCE_BYTES_32,
};
const ALIGN: usize = match cfg!(target_pointer_width = "64") {
    true => DW_PUBLISHER_ALIGN_64,
    false => DW_PUBLISHER_ALIGN_32,
};

/// A source's storage: the bytes C lent it, for as long as the publisher
/// lives.
pub(super) struct Lent {
    ptr: NonNull<u8>,
    len: usize,
}

impl Lent {
    /// # Safety
    ///
    /// If `ptr` is not null, it points at `len` writable bytes that stay
    /// lent until the publisher is released, touched by nothing but it.
    pub(super) unsafe fn new(ptr: *mut u8, len: usize) -> Checked<Lent> {
        // The checks of any buffer C lends; the slice is not kept.
        // SAFETY: the caller's contract, passed on.
        unsafe { boundary::bytes_mut(ptr, len, dw_param::DW_PARAM_STORAGE) }?;
        let ptr = NonNull::new(ptr).ok_or(CallError::Null(dw_param::DW_PARAM_STORAGE.into()))?;
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

/// A publisher's table of sources: the places after its head in the
/// caller's storage, `len` of them declared, `limit` in all.
pub(super) struct Table {
    ptr: NonNull<PublisherSource<Lent>>,
    len: usize,
    limit: usize,
}

impl SourceTable<Lent> for Table {
    fn sources(&self) -> &[PublisherSource<Lent>] {
        // SAFETY: `len` places at `ptr` were written by `push`, in the
        // caller's storage, which is the publisher's alone while it lives
        // (the header's contract), and this borrow lasts one call.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn sources_mut(&mut self) -> &mut [PublisherSource<Lent>] {
        // SAFETY: as in `sources`; `&mut self` makes this the only borrow.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    fn push(&mut self, source: PublisherSource<Lent>) -> bool {
        if self.len >= self.limit {
            return false;
        }
        // SAFETY: place `len` is below `limit`, inside the storage
        // `dw_publisher_init` found large enough and aligned for them, and
        // holds no source yet; `write` neither reads nor drops it.
        unsafe { self.ptr.as_ptr().add(self.len).write(source) };
        self.len += 1;
        true
    }

    fn limit(&self) -> usize {
        self.limit
    }
}

/// The publisher, and where its own bytes are, to refuse a buffer that
/// overlaps them (its sources' storage it knows itself).
pub(super) struct Machine {
    pub(super) publisher: PublisherIn<Lent, Table>,
    own: (usize, usize),
}

impl Object for Machine {
    const TAG: u64 = u64::from_le_bytes(*b"dw-publi");
}

const PLACE: usize = size_of::<PublisherSource<Lent>>();
const _: () = assert!(<Machine as Object>::SIZE == HEAD_BYTES);
const _: () = assert!(PLACE == SOURCE_BYTES);
const _: () = assert!(<Machine as Object>::ALIGN <= ALIGN);
const _: () = assert!(align_of::<PublisherSource<Lent>>() == ALIGN);
// The table starts right after the head, aligned for its places.
const _: () = assert!(HEAD_BYTES.is_multiple_of(align_of::<PublisherSource<Lent>>()));

/// The exact bytes a publisher of up to `limit` sources takes, if the
/// limit is one it may have.
fn storage_for(limit: u32) -> Checked<usize> {
    if limit == 0 || limit > DW_PUBLISHER_MAX_SOURCES {
        return Err(CallError::Bound(
            dw_invalid::DW_INVALID_SOURCE_LIMIT,
            [limit.into(), DW_PUBLISHER_MAX_SOURCES.into(), 1, 0],
        ));
    }
    Ok(HEAD_BYTES + limit as usize * PLACE)
}

impl Machine {
    pub(super) fn id(&self, source: u32) -> Checked<SourceId> {
        self.publisher
            .source_id(source)
            .ok_or(CallError::Publish(PublishError::UnknownSource { source }))
    }

    /// Declare a source kept in the `len` bytes at `storage`, refused if
    /// they overlap the publisher's or another source's, and remember its
    /// id and where its bytes are.
    ///
    /// # Safety
    ///
    /// As for [`Lent::new`].
    pub(super) unsafe fn add_source(
        &mut self,
        decl: &SourceDecl<'_>,
        streams: &Streams<'_>,
        storage: *mut u8,
        len: usize,
    ) -> Checked<SourceId> {
        // Before any slice is made of it: a slice over the publisher's own
        // bytes would alias the publisher in hand, one over the
        // declaration's strings the strings being read.
        let range = (
            storage as usize,
            boundary::length(len, dw_param::DW_PARAM_STORAGE.into())?,
        );
        if self.overlaps(range) || !declared::apart(decl, streams, range) {
            return Err(CallError::Invalid(dw_invalid::DW_INVALID_OVERLAP));
        }
        // SAFETY: the caller's contract, passed on.
        let lent = unsafe { Lent::new(storage, len) }?;
        Ok(self.publisher.add_source_named(decl, streams, lent)?)
    }

    /// Whether `range` shares a byte with the publisher or a source's
    /// storage.
    pub(super) fn overlaps(&self, range: (usize, usize)) -> bool {
        overlap(range, self.own) || self.publisher.storages().any(|l| overlap(range, l.range()))
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

/// The exact bytes of storage a publisher of up to `source_limit` sources
/// takes in this build: `DW_PUBLISHER_SIZE(source_limit)`, on every
/// target; 0 for a limit outside 1 to `DW_PUBLISHER_MAX_SOURCES`.
#[no_mangle]
pub extern "C" fn dw_publisher_size(source_limit: u32) -> usize {
    storage_for(source_limit).unwrap_or(0)
}

/// The publisher behind a handle, for one call, or the result the call
/// returns when the handle is refused (the refusal written into `error`
/// when given). Out of line: the check every entry point makes first, in
/// one copy.
///
/// # Safety
///
/// As for `boundary::placed`; `error` is null or points at a `dw_error`.
#[inline(never)]
unsafe fn machine<'a>(
    p: *mut dw_publisher,
    error: *mut dw_error,
) -> Result<&'a mut Machine, dw_result> {
    boundary::error_sink(error)?;
    // SAFETY: the caller's contract, passed on.
    let m = unsafe { boundary::placed::<Machine, _>(p, dw_param::DW_PARAM_PUBLISHER) };
    // SAFETY: as above.
    m.map_err(|refused| unsafe { written(Err(refused), error) })
}

/// Run `f` on the publisher behind `p` and return what it came to, or why
/// the handle or `f` refused the call (into `error` when given).
///
/// # Safety
///
/// As for `boundary::placed`; `error` is null or points at a `dw_error`.
pub(super) unsafe fn with_machine(
    p: *mut dw_publisher,
    error: *mut dw_error,
    f: impl FnOnce(&mut Machine) -> Checked<dw_result>,
) -> dw_result {
    // SAFETY: the caller's contract, passed on.
    match unsafe { machine(p, error) } {
        // SAFETY: as above.
        Ok(m) => unsafe { written(f(m), error) },
        Err(refused) => refused,
    }
}

/// Run `f` on the publisher behind `p`, returning `DW_RESULT_OK`, or why
/// the handle was refused (into `error` when given).
///
/// # Safety
///
/// As for `boundary::placed`; `error` is null or points at a `dw_error`.
pub(super) unsafe fn with(
    p: *mut dw_publisher,
    error: *mut dw_error,
    f: impl FnOnce(&mut Machine),
) -> dw_result {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        with_machine(p, error, |m| {
            f(m);
            Ok(dw_result::DW_RESULT_OK)
        })
    }
}

/// Make a publisher of up to `source_limit` sources, with none yet and no
/// connection, in `storage` (`len` bytes, at least
/// `DW_PUBLISHER_SIZE(source_limit)`, aligned to `DW_PUBLISHER_ALIGN`), and
/// write its handle into `*publisher`. The storage is the publisher's
/// until `dw_publisher_release`.
///
/// `DW_RESULT_INVALID_ARGUMENT`: `DW_INVALID_SOURCE_LIMIT` for a limit of 0
/// or above `DW_PUBLISHER_MAX_SOURCES`; `DW_INVALID_STORAGE_TOO_SMALL` for
/// storage that cannot hold that many (the bytes needed in `values[0]`);
/// `DW_INVALID_FULL_EVERY` or `DW_INVALID_FRAME_BUFFER` for a
/// configuration that means nothing.
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
    source_limit: u32,
    config: *const dw_publisher_config,
    publisher: *mut *mut dw_publisher,
    error: *mut dw_error,
) -> dw_result {
    // SAFETY: the pointers are the caller's, as documented; each is
    // checked before use.
    let run = || unsafe {
        boundary::length(len, dw_param::DW_PARAM_STORAGE.into())?;
        let config = checked_config(boundary::read(config, dw_param::DW_PARAM_CONFIG)?)?;
        let out = boundary::out(publisher, dw_param::DW_PARAM_PUBLISHER)?;
        let needed = storage_for(source_limit)?;
        // Aligned for the head and for the table's places.
        boundary::check(
            storage.cast::<PublisherSource<Lent>>(),
            dw_param::DW_PARAM_STORAGE,
        )?;
        if len < needed {
            return Err(CallError::storage_too_small(needed, len));
        }
        let places = storage.cast::<u8>().add(HEAD_BYTES);
        let table = Table {
            ptr: NonNull::new(places.cast())
                .ok_or(CallError::Null(dw_param::DW_PARAM_STORAGE.into()))?,
            len: 0,
            limit: source_limit as usize,
        };
        let machine = Machine {
            publisher: PublisherIn::with_table(
                PublisherConfig {
                    full_every: config.full_every,
                    frame_buffer: config.frame_buffer,
                },
                table,
            ),
            own: (storage as usize, needed),
        };
        out.write(boundary::place(storage.cast::<u8>(), len, machine)?);
        Ok(dw_result::DW_RESULT_OK)
    };
    // SAFETY: `error` is the caller's, as documented.
    unsafe { finish(error, run) }
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
