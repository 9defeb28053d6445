//! The publisher object in the caller's storage: its size and alignment,
//! the buffers C lends each source, the handle every call checks, and
//! `dw_publisher_init`.

use core::ffi::c_void;
use core::ptr::NonNull;

use dendro_wire_core::{
    PublishError, Publisher, PublisherConfig, SourceDecl, SourceId, Storage, LENGTH_PREFIX_BYTES,
    MAX_FRAME_BYTES,
};

use crate::boundary::{self, finish, overlap, Checked, Object, Plain};
use crate::error::{dw_error, dw_invalid, dw_result, CallError};
use crate::frame::EMPTY_ROWS_FRAME;

use super::declared::Streams;

/// The sources one publisher holds at most, fixed at build time: the
/// core's table of sources has a size the compiler knows, and each place
/// costs every publisher's storage (`DW_PUBLISHER_SIZE`).
pub const DW_PUBLISHER_SOURCES: u32 = 8;

/// Bytes of storage a publisher needs on any target this header serves
/// (`dw_publisher_size()` says the exact figure for this build), besides
/// each source's own storage.
pub const DW_PUBLISHER_SIZE: usize = 3072;

/// The alignment that storage needs.
pub const DW_PUBLISHER_ALIGN: usize = 16;

const SOURCES: usize = DW_PUBLISHER_SOURCES as usize;

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
pub(super) struct Machine {
    pub(super) publisher: Publisher<Lent, SOURCES>,
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
    pub(super) fn id(&self, source: u32) -> Checked<SourceId> {
        self.ids
            .get(source as usize)
            .copied()
            .flatten()
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
        // bytes would alias the publisher in hand.
        if self.overlaps((storage as usize, len)) {
            return Err(CallError::Invalid(dw_invalid::DW_INVALID_OVERLAP));
        }
        // SAFETY: the caller's contract, passed on.
        let lent = unsafe { Lent::new(storage, len) }?;
        let range = lent.range();
        let id = self.publisher.add_source_named(decl, streams, lent)?;
        let at = id.ordinal() as usize;
        if let (Some(slot), Some(r)) = (self.ids.get_mut(at), self.ranges.get_mut(at)) {
            *slot = Some(id);
            *r = range;
        }
        Ok(id)
    }

    /// Whether `range` shares a byte with the publisher or a source's
    /// storage.
    pub(super) fn overlaps(&self, range: (usize, usize)) -> bool {
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
pub(super) unsafe fn machine<'a>(p: *mut dw_publisher) -> Checked<&'a mut Machine> {
    // SAFETY: the caller's contract, passed on.
    unsafe { boundary::placed::<Machine, _>(p) }
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
