//! What the hostile-caller tests share: memory that ends where the caller
//! says it does (a guard page right after it on Linux, an allocation of
//! exactly its length under Miri), a publisher made in such memory, and
//! a `dw_error` filled with garbage before a call so that every field the
//! call leaves stale shows.

#![allow(dead_code)]

use core::ptr::null_mut;

use dendro_wire_ffi::*;

/// `len` bytes whose last is the last readable one: a read one past them
/// faults (Linux, not Miri) or is reported (Miri).
pub struct Fenced {
    base: *mut u8,
    map_len: usize,
    at: *mut u8,
    len: usize,
}

#[cfg(all(target_os = "linux", not(miri)))]
mod sys {
    use core::ffi::c_void;
    extern "C" {
        pub fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: i32,
            flags: i32,
            fd: i32,
            off: i64,
        ) -> *mut c_void;
        pub fn munmap(addr: *mut c_void, len: usize) -> i32;
        pub fn mprotect(addr: *mut c_void, len: usize, prot: i32) -> i32;
    }
    pub const PAGE: usize = 4096;
}

impl Fenced {
    /// `bytes` copied into fenced memory.
    pub fn of(bytes: &[u8]) -> Fenced {
        let f = Fenced::zeroed(bytes.len());
        // SAFETY: `f.at` names `bytes.len()` writable bytes of its own.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), f.at, bytes.len()) };
        f
    }

    /// `len` zeroed bytes, fenced.
    #[cfg(all(target_os = "linux", not(miri)))]
    pub fn zeroed(len: usize) -> Fenced {
        let pages = len.div_ceil(sys::PAGE) + 1;
        let map_len = pages * sys::PAGE;
        // SAFETY: an anonymous private mapping; its last page made
        // unreadable, the rest the test's.
        unsafe {
            let base = sys::mmap(null_mut(), map_len, 3, 0x22, -1, 0);
            assert!(base as isize != -1, "mmap");
            let base = base.cast::<u8>();
            let guard = base.add(map_len - sys::PAGE);
            assert_eq!(sys::mprotect(guard.cast(), sys::PAGE, 0), 0, "mprotect");
            Fenced {
                base,
                map_len,
                at: guard.sub(len),
                len,
            }
        }
    }

    /// `len` zeroed bytes in an allocation of exactly that many, aligned
    /// to 16 (Miri reports a read past it).
    #[cfg(not(all(target_os = "linux", not(miri))))]
    pub fn zeroed(len: usize) -> Fenced {
        let layout = std::alloc::Layout::from_size_align(len.max(1), 16).unwrap();
        // SAFETY: a layout of nonzero size.
        let base = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!base.is_null());
        Fenced {
            base,
            map_len: len.max(1),
            at: base,
            len,
        }
    }

    pub fn ptr(&self) -> *mut u8 {
        self.at
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The fenced bytes as a `dw_str`.
    pub fn str(&self) -> dw_str {
        dw_str {
            ptr: self.at.cast_const().cast(),
            len: self.len,
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        // SAFETY: `len` readable bytes of this mapping.
        unsafe { core::slice::from_raw_parts(self.at, self.len) }.to_vec()
    }
}

impl Drop for Fenced {
    #[cfg(all(target_os = "linux", not(miri)))]
    fn drop(&mut self) {
        // SAFETY: the mapping `zeroed` made, unmapped once.
        unsafe { sys::munmap(self.base.cast(), self.map_len) };
    }

    #[cfg(not(all(target_os = "linux", not(miri))))]
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.map_len, 16).unwrap();
        // SAFETY: the allocation `zeroed` made with this layout, freed once.
        unsafe { std::alloc::dealloc(self.base, layout) };
    }
}

/// A `dw_error` every byte of which is 0xA5: whatever a failing call does
/// not write shows.
pub fn stale_error() -> dw_error {
    let mut e = core::mem::MaybeUninit::<dw_error>::uninit();
    // SAFETY: a dw_error is integers only, any bytes a value.
    unsafe {
        core::ptr::write_bytes(e.as_mut_ptr(), 0xA5, 1);
        e.assume_init()
    }
}

/// Every field of a `dw_error` but its reason, values and sentence, as
/// the header documents them for a failure that is no rule of the
/// protocol: the result, no rule, no field, offset 0, no item, no kind,
/// not an encoder's.
pub fn plain_failure(e: &dw_error, result: dw_result, what: &str) {
    failure_at(e, result, -1, what);
}

/// [`plain_failure`] for an argument that is an element of an array: its
/// place in `item`.
pub fn failure_at(e: &dw_error, result: dw_result, item: i64, what: &str) {
    assert_eq!(e.result, result as u32, "{what}: result");
    assert_eq!(e.rule, dw_rule::DW_RULE_NONE as u32, "{what}: rule");
    assert_eq!(e.field, dw_field::DW_FIELD_NONE as u32, "{what}: field");
    assert_eq!(e.offset, 0, "{what}: offset");
    assert_eq!(e.item, item, "{what}: item");
    assert_eq!(e.frame_kind, -1, "{what}: frame_kind");
    assert_eq!(e.encoding, 0, "{what}: encoding");
}

/// The config the hostile tests' publishers run with.
pub const CONFIG: dw_publisher_config = dw_publisher_config {
    full_every: 4,
    frame_buffer: 4096,
};

/// Bytes of storage each source is given.
pub const SOURCE_BYTES: usize = 16384;

/// A publisher of `limit` sources in fenced storage of exactly its size.
pub struct Pub {
    pub handle: *mut dw_publisher,
    pub storage: Fenced,
    pub sources: Vec<Fenced>,
}

impl Pub {
    pub fn new(limit: u32) -> Pub {
        let len = dw_publisher_size(limit);
        let storage = Fenced::zeroed(len);
        let mut handle = null_mut();
        let mut error = stale_error();
        // SAFETY: fenced storage of the size the library says, lent for
        // the publisher's life (the Pub holds it).
        let r = unsafe {
            dw_publisher_init(
                storage.ptr().cast(),
                len,
                limit,
                &CONFIG,
                &mut handle,
                &mut error,
            )
        };
        assert_eq!(r, dw_result::DW_RESULT_OK, "init");
        Pub {
            handle,
            storage,
            sources: Vec::new(),
        }
    }

    /// `dw_publisher_add_source` with fresh storage: the result, the
    /// ordinal and the error as the call left them.
    pub fn add(&mut self, decl: &dw_source_decl) -> (dw_result, u32, dw_error) {
        let storage = Fenced::zeroed(SOURCE_BYTES);
        let mut ordinal = u32::MAX;
        let mut error = stale_error();
        // SAFETY: a live handle, a declaration the caller holds, fenced
        // storage kept for the publisher's life.
        let r = unsafe {
            dw_publisher_add_source(
                self.handle,
                decl,
                storage.ptr().cast(),
                SOURCE_BYTES,
                &mut ordinal,
                &mut error,
            )
        };
        self.sources.push(storage);
        (r, ordinal, error)
    }
}

/// `dw_source_sizing` of `decl` under a small budget.
pub fn sizing(decl: &dw_source_decl) -> (dw_result, dw_error) {
    let budget = dw_budget {
        largest_row: 8,
        rows_per_interval: 4,
        slots: 2,
        largest_slot: 8,
        slot_changes_per_interval: 2,
    };
    let mut out = core::mem::MaybeUninit::<dw_sizing>::uninit();
    let mut error = stale_error();
    // SAFETY: live locals and a declaration the caller holds.
    let r = unsafe { dw_source_sizing(decl, &budget, out.as_mut_ptr(), &mut error) };
    (r, error)
}
