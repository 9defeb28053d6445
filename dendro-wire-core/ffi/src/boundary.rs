//! The checks every entry point makes before it touches C's memory, the
//! `unsafe` they need, and the end of every entry point ([`finish`]: the
//! failure written into C's `dw_error`). It sits above `error.rs` (the
//! result and error types, which touch no memory of C's) and below every
//! file with an entry point.
//!
//! The crate's other `unsafe` that reads or writes through a pointer of
//! C's is storage an object keeps for as long as it lives: a publisher's
//! per-source buffers (`Lent`, in `publisher/handle.rs`), and a subscriber's table
//! of sources and the C frame it reads field by field (`Table`,
//! `dw_subscriber_init` and `field!`, in `subscriber.rs`). Everywhere else
//! an `unsafe` block only calls the functions here, passing the caller's
//! contract on, and an `unsafe impl` is the promise that a C struct is
//! [`Plain`].
//!
//! A pointer becomes a Rust reference or slice only here, and only after
//! it was found non-null and aligned for its type, with a length no slice
//! could exceed. A value C wrote is copied out, and only of a type every bit
//! pattern of which is valid ([`Plain`]). An object the library keeps in C's
//! memory carries a tag, checked before each use, so a handle of the wrong
//! kind, or one released, is refused rather than misread.
//!
//! What cannot be checked is the header's contract for every pointer: it
//! points at as many bytes as the caller says, alive for the call (or, for
//! storage, for as long as the object using it), that no other thread
//! touches meanwhile.

use core::mem::{align_of, size_of, MaybeUninit};

use crate::error::{dw_error, dw_invalid, dw_param, dw_result, At, CallError};

/// A call refused at the boundary or by the core.
pub(crate) type Checked<T> = Result<T, CallError>;

/// The most bytes one buffer may claim: a Rust slice holds at most this.
const MAX_LEN: usize = isize::MAX as usize;

/// A type C may write and the library read back: integers and raw
/// pointers only, so every bit pattern is a value.
///
/// # Safety
///
/// Implement it only for `#[repr(C)]` types made of integers, raw pointers
/// and arrays of them, with no `bool`, enum or reference.
pub(crate) unsafe trait Plain: Copy {}

// SAFETY: integers only.
unsafe impl Plain for dw_error {}

/// Every entry point's frame: `error` checked first (null, or aligned for
/// a `dw_error`: a misaligned one refuses the call before it does
/// anything, `DW_RESULT_INVALID_ARGUMENT`, with nothing written), then
/// `run`, its failure written into `error` when it is given.
///
/// # Safety
///
/// `error` is null or points at a `dw_error` the caller lent for the call.
#[inline(always)]
pub(crate) unsafe fn finish(
    error: *mut dw_error,
    run: impl FnOnce() -> Result<dw_result, CallError>,
) -> dw_result {
    match error_sink(error) {
        // SAFETY: the caller's contract, passed on.
        Ok(()) => unsafe { written(run(), error) },
        Err(refused) => refused,
    }
}

/// Whether `error` may be written: null (never written) or aligned; a
/// misaligned one is the call's refusal.
#[inline(always)]
pub(crate) fn error_sink(error: *mut dw_error) -> Result<(), dw_result> {
    match error.is_null() || error.is_aligned() {
        true => Ok(()),
        false => Err(dw_result::DW_RESULT_INVALID_ARGUMENT),
    }
}

/// The end of every entry point: the result, with the failure's details
/// written into `error` when it is given.
///
/// # Safety
///
/// `error` is null or points at a `dw_error` the caller lent for the call.
pub(crate) unsafe fn written(
    result: Result<dw_result, CallError>,
    error: *mut dw_error,
) -> dw_result {
    match result {
        Ok(r) => r,
        Err(failure) => {
            // SAFETY: the caller's contract, passed on; a null or misaligned
            // `error` is not written.
            if let Ok(slot) = unsafe { out(error, dw_param::DW_PARAM_ERROR) } {
                failure.write_c(slot);
            }
            failure.result()
        }
    }
}

/// A length some buffer could have: no slice holds more than `isize::MAX`
/// bytes, so a larger one is refused as too long wherever it is given,
/// before anything is compared with it.
pub(crate) fn length(len: usize, param: At) -> Checked<usize> {
    match len > MAX_LEN {
        true => Err(CallError::Arg(dw_invalid::DW_INVALID_TOO_LONG, param)),
        false => Ok(len),
    }
}

/// `ptr`, given for `param`, null or not aligned for `T`: the refusal, if
/// any. A pointer that passes may be read field by field (`subscriber.rs`
/// reads a frame so).
pub(crate) fn check<T>(ptr: *const T, param: impl Into<At>) -> Checked<()> {
    if ptr.is_null() {
        Err(CallError::Null(param.into()))
    } else if !ptr.is_aligned() {
        Err(CallError::Arg(
            dw_invalid::DW_INVALID_MISALIGNED,
            param.into(),
        ))
    } else {
        Ok(())
    }
}

/// `len` bytes at `ptr`, lent by C to read during the call.
///
/// # Safety
///
/// If `ptr` is not null it points at `len` bytes readable for `'a` that
/// nothing writes meanwhile.
pub(crate) unsafe fn bytes<'a>(
    ptr: *const u8,
    len: usize,
    param: impl Into<At> + Copy,
) -> Checked<&'a [u8]> {
    check(ptr, param)?;
    length(len, param.into())?;
    // SAFETY: not null, a byte needs no alignment, the length is one a
    // slice can have, and the bytes are readable and unwritten for 'a by
    // the caller's contract.
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// `len` bytes at `ptr`, lent by C to write during the call.
///
/// # Safety
///
/// If `ptr` is not null it points at `len` bytes writable for `'a` that
/// nothing else reads or writes meanwhile.
pub(crate) unsafe fn bytes_mut<'a>(
    ptr: *mut u8,
    len: usize,
    param: dw_param,
) -> Checked<&'a mut [u8]> {
    check(ptr, param)?;
    length(len, param.into())?;
    // SAFETY: as in `bytes`, and by the contract nothing else holds these
    // bytes while the call runs, so the borrow is unique.
    Ok(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
}

/// An out-parameter: C's memory for one `T`, written before the call
/// returns.
///
/// # Safety
///
/// If `ptr` is not null it points at `size_of::<T>()` bytes writable for
/// `'a` that nothing else touches meanwhile.
pub(crate) unsafe fn out<'a, T>(ptr: *mut T, param: dw_param) -> Checked<&'a mut MaybeUninit<T>> {
    check(ptr, param)?;
    // SAFETY: not null, aligned for T, writable and unshared for 'a by the
    // contract; `MaybeUninit` asks nothing of the bytes there now.
    Ok(unsafe { &mut *ptr.cast::<MaybeUninit<T>>() })
}

/// `len` out-parameters at `ptr`: C's memory for `len` `T`s, written
/// before the call returns.
///
/// # Safety
///
/// If `ptr` is not null it points at `len` `T`s writable for `'a` that
/// nothing else touches meanwhile.
pub(crate) unsafe fn out_items<'a, T>(
    ptr: *mut T,
    len: usize,
    param: dw_param,
) -> Checked<&'a mut [MaybeUninit<T>]> {
    check(ptr, param)?;
    if len > MAX_LEN / size_of::<T>().max(1) {
        return Err(CallError::Arg(
            dw_invalid::DW_INVALID_TOO_LONG,
            param.into(),
        ));
    }
    // SAFETY: not null, aligned for T, `len` of them a size a slice can
    // have, writable and unshared for 'a by the contract; `MaybeUninit`
    // asks nothing of the bytes there now.
    Ok(unsafe { core::slice::from_raw_parts_mut(ptr.cast::<MaybeUninit<T>>(), len) })
}

/// A value C wrote, copied: nothing of C's memory is held after.
///
/// # Safety
///
/// If `ptr` is not null it points at a `T` readable during the call.
pub(crate) unsafe fn read<T: Plain>(ptr: *const T, param: dw_param) -> Checked<T> {
    check(ptr, param)?;
    // SAFETY: not null, aligned, readable by the contract, and any bits
    // are a `T` because it is `Plain`.
    Ok(unsafe { ptr.read() })
}

/// `len` values at `ptr`, at most `most` of them, lent by C to read during
/// the call; null is no values when `len` is 0.
///
/// # Safety
///
/// If `ptr` is not null it points at `len` `T`s readable for `'a` that
/// nothing writes meanwhile.
pub(crate) unsafe fn items<'a, T: Plain>(
    ptr: *const T,
    len: usize,
    most: usize,
    param: dw_param,
) -> Checked<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    check(ptr, param)?;
    if len > most {
        return Err(CallError::Arg(
            dw_invalid::DW_INVALID_TOO_MANY,
            param.into(),
        ));
    }
    // SAFETY: not null, aligned, `len` is at most `most` (a few dozen), so
    // the bytes fit a slice; readable and unwritten for 'a by the contract,
    // and any bits are a `T` because it is `Plain`.
    Ok(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// An object the library keeps in C's memory, behind its kind's tag and
/// the address it was placed at: a copy of its bytes elsewhere (a
/// `memcpy`'d handle) carries the tag but not its own address, and is
/// refused rather than used as a second object over the same sources.
#[repr(C)]
pub(crate) struct Placed<T> {
    tag: u64,
    home: usize,
    value: T,
}

/// What an object placed in C's memory needs: the size and alignment the
/// storage must have, and its kind's tag.
pub(crate) trait Object: Sized {
    /// Distinct per kind, and unlikely in memory that holds none.
    const TAG: u64;

    /// The bytes of storage the object takes, tag included.
    const SIZE: usize = size_of::<Placed<Self>>();

    /// The alignment its storage needs.
    const ALIGN: usize = align_of::<Placed<Self>>();
}

/// Move `value` into C's storage, returning the handle C passes back.
///
/// # Safety
///
/// If `storage` is not null it points at `len` bytes writable for as long
/// as the object is used, that the caller touches only through the handle.
pub(crate) unsafe fn place<T: Object, H>(
    storage: *mut u8,
    len: usize,
    value: T,
) -> Checked<*mut H> {
    let at = storage.cast::<Placed<T>>();
    check(at, dw_param::DW_PARAM_STORAGE)?;
    if len < T::SIZE {
        return Err(CallError::storage_too_small(T::SIZE, len));
    }
    // SAFETY: not null, aligned for `Placed<T>`, at least its size, and
    // writable by the contract; `write` neither reads nor drops what was
    // there.
    unsafe {
        at.write(Placed {
            tag: T::TAG,
            home: at as usize,
            value,
        })
    };
    Ok(at.cast::<H>())
}

/// The object behind a handle `place` returned, for the call's duration.
///
/// # Safety
///
/// If `handle` is not null and its tag is `T`'s, it is a handle `place`
/// returned for a `T` whose storage is still lent, which the caller has
/// not written to since and uses from no other thread meanwhile.
pub(crate) unsafe fn placed<'a, T: Object, H>(
    handle: *mut H,
    param: dw_param,
) -> Checked<&'a mut T> {
    let at = handle.cast::<Placed<T>>();
    check(at, param)?;
    // SAFETY: not null and aligned; the tag is a `u64` at the start of the
    // storage, readable whatever the storage holds.
    let tag = unsafe { core::ptr::addr_of!((*at).tag).read() };
    if tag != T::TAG {
        return Err(CallError::Invalid(dw_invalid::DW_INVALID_NOT_A_HANDLE));
    }
    // SAFETY: as for the tag, a `usize` read whatever the storage holds.
    let home = unsafe { core::ptr::addr_of!((*at).home).read() };
    if home != at as usize {
        return Err(CallError::Invalid(dw_invalid::DW_INVALID_MOVED));
    }
    // SAFETY: the tag is `T`'s and the object is where `place` put it, so
    // by the contract this is the `T` `place` wrote and nothing else
    // refers to it while the call runs.
    Ok(unsafe { &mut (*at).value })
}

/// Forget the object behind a handle: its tag is cleared, so the handle is
/// refused from now on and its storage is the caller's again.
///
/// # Safety
///
/// As for [`placed`].
pub(crate) unsafe fn release<T: Object, H>(handle: *mut H, param: dw_param) -> Checked<()> {
    // SAFETY: the caller's contract, passed on.
    unsafe { placed::<T, H>(handle, param) }?;
    let at = handle.cast::<Placed<T>>();
    // SAFETY: `placed` found this a live `T`'s storage; the tag is a plain
    // `u64` and the value needs no drop (the objects hold no resources).
    unsafe { core::ptr::addr_of_mut!((*at).tag).write(0) };
    Ok(())
}

/// Whether two byte ranges share a byte. Out of line: one copy for the
/// publisher's storages and every string of a declaration.
#[inline(never)]
pub(crate) fn overlap(a: (usize, usize), b: (usize, usize)) -> bool {
    let (a_end, b_end) = (a.0.saturating_add(a.1), b.0.saturating_add(b.1));
    a.1 > 0 && b.1 > 0 && a.0 < b_end && b.0 < a_end
}

/// A string C passed as a pointer and a length: UTF-8, as the protocol's
/// `str` is.
///
/// # Safety
///
/// As for [`bytes`].
pub(crate) unsafe fn str<'a>(
    ptr: *const core::ffi::c_char,
    len: usize,
    param: At,
) -> Checked<&'a str> {
    // SAFETY: the caller's contract, passed on.
    let bytes = unsafe { bytes(ptr.cast::<u8>(), len, param) }?;
    if !crate::utf8::is_utf8(bytes) {
        return Err(CallError::Arg(dw_invalid::DW_INVALID_NOT_UTF8, param));
    }
    // SAFETY: `is_utf8` accepts exactly what `core::str::from_utf8` does
    // (its tests compare the two over every sequence of up to 3 bytes).
    Ok(unsafe { core::str::from_utf8_unchecked(bytes) })
}
