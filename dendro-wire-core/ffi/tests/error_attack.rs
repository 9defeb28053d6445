//! Every publisher entry point, called as a careless or hostile C caller
//! calls it: a null handle, a released one, a subscriber's, memory that
//! never was a publisher, a misaligned pointer, a copy of the storage; a
//! null, a stale and a misaligned `error`. Each refusal is the result the
//! header documents, with every field of `dw_error` written whatever the
//! caller's `dw_error` held before and a sentence; a call that succeeds
//! leaves the `dw_error` as it was; and nothing is read or written past
//! what the caller lent (handles and errors end at a guard page).

mod common;
mod hostile;

use core::mem::MaybeUninit;
use core::ptr::null_mut;

use dendro_wire_ffi::*;

use common::*;
use hostile::*;

/// The publisher entry points that take a handle.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Call {
    AddSource,
    Observe,
    SetSlot,
    RemoveSlot,
    Connected,
    Disconnected,
    EndInterval,
    DropWaiting,
    Waiting,
    Stats,
    IndexState,
    NextFrameLen,
    Poll,
    Release,
}

const CALLS: [Call; 14] = [
    Call::AddSource,
    Call::Observe,
    Call::SetSlot,
    Call::RemoveSlot,
    Call::Connected,
    Call::Disconnected,
    Call::EndInterval,
    Call::DropWaiting,
    Call::Waiting,
    Call::Stats,
    Call::IndexState,
    Call::NextFrameLen,
    Call::Poll,
    Call::Release,
];

/// Call `which` on `handle`, every argument but the handle and `error`
/// one a live publisher with an indexed source 0 takes; storage given to
/// `dw_publisher_add_source` is kept in `keep`.
fn call(
    which: Call,
    handle: *mut dw_publisher,
    error: *mut dw_error,
    keep: &mut Vec<Fenced>,
) -> dw_result {
    let streams = [s("s")];
    let decl = c_source_decl(&streams, s("ix"));
    let mut buf = vec![0u8; CONFIG.frame_buffer];
    // SAFETY: every pointer but `handle` and `error` is to a live local or
    // to fenced storage kept as long as the publisher; `handle` and
    // `error` are what the test is about, and the library checks them.
    unsafe {
        match which {
            Call::AddSource => {
                let storage = Fenced::zeroed(SOURCE_BYTES);
                let mut ordinal = 0;
                let r = dw_publisher_add_source(
                    handle,
                    &decl,
                    storage.ptr().cast(),
                    SOURCE_BYTES,
                    &mut ordinal,
                    error,
                );
                keep.push(storage);
                r
            }
            Call::Observe => dw_publisher_observe(handle, 0, 0, 1, 0, b"row".as_ptr(), 3, error),
            Call::SetSlot => {
                dw_publisher_set_slot(handle, 0, b"k".as_ptr(), 1, b"v".as_ptr(), 1, error)
            }
            Call::RemoveSlot => dw_publisher_remove_slot(handle, 0, b"k".as_ptr(), 1, error),
            Call::Connected => dw_publisher_connected(handle, error),
            Call::Disconnected => dw_publisher_disconnected(handle, error),
            Call::EndInterval => dw_publisher_end_interval(handle, error),
            Call::DropWaiting => dw_publisher_drop_waiting(handle, error),
            Call::Waiting => {
                let mut w = MaybeUninit::uninit();
                dw_publisher_waiting(handle, w.as_mut_ptr(), error)
            }
            Call::Stats => {
                let mut st = MaybeUninit::uninit();
                dw_publisher_stats(handle, st.as_mut_ptr(), error)
            }
            Call::IndexState => {
                let mut state = [0u64; 2];
                dw_publisher_index_state(handle, 0, &mut state, error)
            }
            Call::NextFrameLen => {
                let mut len = 0;
                dw_publisher_next_frame_len(handle, &mut len, error)
            }
            Call::Poll => {
                let mut t = MaybeUninit::uninit();
                dw_publisher_poll(handle, buf.as_mut_ptr(), buf.len(), t.as_mut_ptr(), error)
            }
            Call::Release => dw_publisher_release(handle, error),
        }
    }
}

/// A publisher with one indexed source, ordinal 0.
fn live() -> Pub {
    let mut p = Pub::new(4);
    let streams = [s("s")];
    let (r, ordinal, e) = p.add(&c_source_decl(&streams, s("ix")));
    assert_eq!(
        (r, ordinal),
        (dw_result::DW_RESULT_OK, 0),
        "{}",
        message(&e)
    );
    p
}

/// A `dw_error` every byte of which is `byte`.
fn filled(byte: u8) -> dw_error {
    let mut e = MaybeUninit::<dw_error>::uninit();
    // SAFETY: integers only, any bytes a value.
    unsafe {
        core::ptr::write_bytes(e.as_mut_ptr(), byte, 1);
        e.assume_init()
    }
}

fn image(e: &dw_error) -> Vec<u8> {
    // SAFETY: a dw_error is integers with no padding between them.
    unsafe {
        core::slice::from_raw_parts((e as *const dw_error).cast::<u8>(), size_of::<dw_error>())
    }
    .to_vec()
}

/// `which` on `handle` with a `dw_error` holding 0x00, 0xA5 and 0xFF
/// bytes, and with none: the same result each time, and the same error
/// written whatever it held (every field written, none left stale).
fn refused(
    which: Call,
    handle: *mut dw_publisher,
    keep: &mut Vec<Fenced>,
) -> (dw_result, dw_error) {
    let mut first: Option<(dw_result, dw_error)> = None;
    for byte in [0x00, 0xA5, 0xFF] {
        let mut e = filled(byte);
        let r = call(which, handle, &mut e, keep);
        assert_ne!(r, dw_result::DW_RESULT_OK, "{which:?}");
        match &first {
            None => first = Some((r, e)),
            Some((r0, e0)) => {
                assert_eq!(r, *r0, "{which:?}");
                assert_eq!(
                    image(&e),
                    image(e0),
                    "{which:?}: a field left as the caller's dw_error held it"
                );
            }
        }
    }
    let (r, e) = first.unwrap();
    assert_eq!(
        call(which, handle, null_mut(), keep),
        r,
        "{which:?} with a null error"
    );
    (r, e)
}

const NOT_A_HANDLE: &str =
    "the handle is not one _init made for this kind of object, or it was released";

fn not_a_handle(which: Call, handle: *mut dw_publisher, keep: &mut Vec<Fenced>, what: &str) {
    let (r, e) = refused(which, handle, keep);
    let what = format!("{what} {which:?}");
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{what}");
    assert_eq!(
        e.reason,
        dw_invalid::DW_INVALID_NOT_A_HANDLE as u32,
        "{what}: {}",
        message(&e)
    );
    plain_failure(&e, r, &what);
    assert_eq!(e.values, [0; 4], "{what}");
    assert_eq!(message(&e), NOT_A_HANDLE, "{what}");
}

#[test]
fn a_null_handle_is_refused_by_every_entry_point_naming_publisher() {
    let mut keep = Vec::new();
    for which in CALLS {
        let (r, e) = refused(which, null_mut(), &mut keep);
        assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER, "{which:?}");
        assert_eq!(e.reason, dw_param::DW_PARAM_PUBLISHER as u32, "{which:?}");
        plain_failure(&e, r, &format!("{which:?}"));
        assert_eq!(e.values, [0; 4], "{which:?}");
        assert_eq!(
            message(&e),
            "publisher is null, and the call needs it",
            "{which:?}"
        );
    }
}

#[test]
fn a_released_handle_is_refused_by_every_entry_point() {
    let p = live();
    let mut keep = Vec::new();
    assert_eq!(
        call(Call::Release, p.handle, null_mut(), &mut keep),
        dw_result::DW_RESULT_OK
    );
    for which in CALLS {
        not_a_handle(which, p.handle, &mut keep, "released");
    }
}

#[test]
fn a_subscriber_handle_is_refused_by_every_publisher_entry_point_reading_no_further() {
    // A subscriber of 1 source is smaller than a publisher's head: its
    // storage ends at a guard page, so a check that reads a publisher's
    // field past it faults.
    for limit in [1, 2] {
        let storage = Fenced::zeroed(dw_subscriber_size(limit));
        let mut sub = null_mut();
        // SAFETY: fenced storage of the size the library says.
        let r = unsafe {
            dw_subscriber_init(
                storage.ptr().cast(),
                storage.len(),
                limit,
                &mut sub,
                null_mut(),
            )
        };
        assert_eq!(r, dw_result::DW_RESULT_OK);
        let mut keep = Vec::new();
        for which in CALLS {
            not_a_handle(which, sub.cast(), &mut keep, "subscriber");
        }
        // And still the subscriber it was.
        let mut count = u32::MAX;
        // SAFETY: the live subscriber and a local.
        let r = unsafe { dw_subscriber_source_count(sub, &mut count, null_mut()) };
        assert_eq!((r, count), (dw_result::DW_RESULT_OK, 0));
    }
}

#[test]
fn a_publisher_handle_is_refused_by_the_subscriber() {
    let p = live();
    let mut e = stale_error();
    let mut count = 0;
    // SAFETY: a live publisher's handle where a subscriber's goes.
    let r = unsafe { dw_subscriber_source_count(p.handle.cast(), &mut count, &mut e) };
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
    assert_eq!(e.reason, dw_invalid::DW_INVALID_NOT_A_HANDLE as u32);
    plain_failure(&e, r, "publisher as subscriber");
    assert_eq!(message(&e), NOT_A_HANDLE);
    // SAFETY: as above.
    let r = unsafe { dw_subscriber_release(p.handle.cast(), &mut e) };
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
    let mut keep = Vec::new();
    assert_eq!(
        call(Call::Connected, p.handle, null_mut(), &mut keep),
        dw_result::DW_RESULT_OK
    );
}

#[test]
fn memory_that_never_was_a_publisher_is_refused() {
    let mut keep = Vec::new();
    for len in [dw_publisher_size(4), 64, 16] {
        let never = Fenced::zeroed(len);
        for which in CALLS {
            not_a_handle(
                which,
                never.ptr().cast(),
                &mut keep,
                &format!("zeroed {len}"),
            );
        }
    }
}

#[test]
fn a_misaligned_handle_is_refused() {
    let p = live();
    let mut keep = Vec::new();
    for by in [1, 4, 8] {
        // SAFETY: inside the publisher's storage; only its address is used.
        let odd = unsafe { p.handle.cast::<u8>().add(by) }.cast::<dw_publisher>();
        for which in CALLS {
            let (r, e) = refused(which, odd, &mut keep);
            let what = format!("+{by} {which:?}");
            assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{what}");
            let reason = e.reason;
            assert!(
                reason == dw_invalid::DW_INVALID_MISALIGNED as u32
                    || reason == dw_invalid::DW_INVALID_NOT_A_HANDLE as u32,
                "{what}: {}",
                message(&e)
            );
            plain_failure(&e, r, &what);
        }
    }
    // The publisher itself goes on.
    assert_eq!(
        call(Call::Connected, p.handle, null_mut(), &mut keep),
        dw_result::DW_RESULT_OK
    );
}

#[test]
fn a_copied_handle_is_refused_by_every_entry_point_as_moved() {
    let p = live();
    let len = dw_publisher_size(4);
    let twin = Fenced::zeroed(len);
    // SAFETY: both the test's, `len` bytes each, apart.
    unsafe { core::ptr::copy_nonoverlapping(p.handle.cast::<u8>(), twin.ptr(), len) };
    let mut keep = Vec::new();
    for which in CALLS {
        let (r, e) = refused(which, twin.ptr().cast(), &mut keep);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{which:?}");
        assert_eq!(e.reason, dw_invalid::DW_INVALID_MOVED as u32, "{which:?}");
        plain_failure(&e, r, &format!("{which:?}"));
        assert!(message(&e).contains("copy"), "{which:?}");
    }
}

#[test]
fn a_call_that_succeeds_leaves_the_callers_error_as_it_was() {
    let p = live();
    let mut keep = Vec::new();
    let order = [
        Call::Connected,
        Call::Observe,
        Call::SetSlot,
        Call::RemoveSlot,
        Call::Waiting,
        Call::Stats,
        Call::IndexState,
        Call::EndInterval,
        Call::NextFrameLen,
        Call::Poll,
        Call::DropWaiting,
        Call::Disconnected,
        Call::AddSource,
        Call::Release,
    ];
    for which in order {
        let mut e = stale_error();
        let r = call(which, p.handle, &mut e, &mut keep);
        assert_eq!(r, dw_result::DW_RESULT_OK, "{which:?}: {}", message(&e));
        assert_eq!(
            image(&e),
            image(&stale_error()),
            "{which:?} wrote its error on success"
        );
    }
}

/// A `dw_error` pointer 1 byte past 8-aligned, in fenced bytes that end
/// at most 7 bytes past it.
fn misaligned_error() -> (Fenced, *mut dw_error) {
    let f = Fenced::zeroed(size_of::<dw_error>() + 8);
    let skip = (1 + 8 - f.ptr() as usize % 8) % 8;
    // SAFETY: inside the fenced bytes.
    let at = unsafe { f.ptr().add(skip) };
    assert_eq!(at as usize % 8, 1);
    (f, at.cast())
}

#[test]
fn a_misaligned_error_is_never_written() {
    // Each call, on a null handle (refused) and a live one (taken):
    // nothing written through a pointer not aligned for a dw_error.
    let p = live();
    let mut keep = Vec::new();
    for handle in [null_mut(), p.handle] {
        for which in CALLS {
            if which == Call::Release {
                continue;
            }
            let (f, at) = misaligned_error();
            let r = call(which, handle, at, &mut keep);
            assert!(
                f.bytes().iter().all(|&b| b == 0),
                "{which:?} wrote a misaligned dw_error ({r:?})"
            );
        }
    }
}

#[test]
fn a_misaligned_error_is_refused_as_the_header_says() {
    let p = live();
    let mut keep = Vec::new();
    let (_f, at) = misaligned_error();
    let r = call(Call::Connected, p.handle, at, &mut keep);
    assert_eq!(
        r,
        dw_result::DW_RESULT_INVALID_ARGUMENT,
        "connected with a misaligned error"
    );
    let (_f, at) = misaligned_error();
    let r = call(Call::Observe, p.handle, at, &mut keep);
    assert_eq!(
        r,
        dw_result::DW_RESULT_INVALID_ARGUMENT,
        "observe with a misaligned error"
    );
}
