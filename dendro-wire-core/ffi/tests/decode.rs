//! The decoder through the C surface: every kind gives the core's fields,
//! every cut point is incomplete with the core's count, every damaged
//! frame the core's error and sentence, and every pointer C can get wrong
//! is refused, never followed.

mod common;

use core::mem::MaybeUninit;
use core::ptr::null;

use core::ptr::null_mut;
use dendro_wire_core::{decode as core_decode, Frame, Status, PREAMBLE};

use dendro_wire_ffi::*;
use dendro_wire_test_support::dendro_map::with_view;
use dendro_wire_test_support::fixtures::frame_bytes;
use dendro_wire_test_support::gen::Gen;

use common::*;

/// Frames of every kind, unknown ones among them, from a fixed seed.
fn frames(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut g = Gen::new(seed);
    let mut out: Vec<Vec<u8>> = (0..n).map(|_| with_view(&g.frame(), frame_bytes)).collect();
    let (kind, payload) = g.unknown();
    out.push(frame_bytes(&Frame::Unknown {
        kind,
        payload: &payload,
    }));
    out
}

/// How many frames a test generates: fewer under Miri, which is slow.
fn count() -> usize {
    if cfg!(miri) {
        40
    } else {
        300
    }
}

#[test]
fn every_kind_is_the_cores_frame_field_by_field() {
    let mut kinds = [false; 7];
    for bytes in frames(1, count()) {
        let Status::Complete((want, used)) = core_decode(&bytes).unwrap() else {
            panic!("a whole frame")
        };
        let got = decode(&bytes);
        assert_eq!(got.result, dw_result::DW_RESULT_OK);
        assert_eq!((got.consumed, got.needed), (used, 0));
        assert_same(got.frame(), &want);
        kinds[got.frame().kind as usize] = true;
    }
    assert_eq!(kinds, [true; 7], "every kind was tried");
}

#[test]
fn every_cut_point_is_incomplete_with_the_cores_count() {
    for bytes in frames(2, count() / 10) {
        for cut in 0..bytes.len() {
            let Status::Incomplete { needed } = core_decode(&bytes[..cut]).unwrap() else {
                panic!("a cut frame is incomplete")
            };
            let got = decode(&bytes[..cut]);
            assert_eq!(got.result, dw_result::DW_RESULT_INCOMPLETE, "cut at {cut}");
            assert_eq!((got.consumed, got.needed), (0, needed), "cut at {cut}");
        }
    }
}

#[test]
fn a_damaged_frame_is_the_cores_error_in_the_cores_words() {
    let mut refused = 0;
    for (i, mut bytes) in frames(3, count()).into_iter().enumerate() {
        // Flip one byte past the prefix, or lie about the length.
        let at = 4 + i % (bytes.len() - 4);
        bytes[at] ^= 0x80 | (i as u8);
        if i % 5 == 0 {
            let lie = (bytes.len() as u32 - 4 - 1).to_le_bytes();
            bytes[..4].copy_from_slice(&lie);
        }
        match core_decode(&bytes) {
            Err(want) => {
                let got = decode(&bytes);
                assert_eq!(got.result, dw_result::DW_RESULT_MALFORMED);
                assert_eq!(got.error.result, dw_result::DW_RESULT_MALFORMED as u32);
                assert_eq!(got.error.offset, want.offset() as u64);
                assert_eq!(message(&got.error), want.to_string());
                refused += 1;
            }
            Ok(Status::Complete((want, _))) => assert_same(decode(&bytes).frame(), &want),
            Ok(Status::Incomplete { needed }) => {
                assert_eq!(decode(&bytes).needed, needed);
            }
        }
    }
    assert!(refused > count() / 4, "most damage is refused: {refused}");
}

#[test]
fn the_limit_refuses_a_long_frame_from_its_prefix() {
    let bytes = frames(4, 1).remove(0);
    let len = bytes.len() as u32 - 4;
    let got = decode_limited(&bytes[..4], len - 1);
    assert_eq!(got.result, dw_result::DW_RESULT_MALFORMED);
    assert_eq!(decode_limited(&bytes, len).consumed, bytes.len());
    // Above the protocol's limit is lowered to it.
    let got = decode_limited(&(DW_MAX_FRAME_BYTES + 1).to_le_bytes(), u32::MAX);
    assert_eq!(got.result, dw_result::DW_RESULT_MALFORMED);
}

fn preamble(buf: &[u8]) -> (dw_result, usize, usize, dw_error) {
    let (mut consumed, mut needed, mut error) = (usize::MAX, usize::MAX, no_error());
    // SAFETY: live locals and `buf`.
    let r = unsafe {
        dw_check_preamble(
            buf.as_ptr(),
            buf.len(),
            &mut consumed,
            &mut needed,
            &mut error,
        )
    };
    (r, consumed, needed, error)
}

#[test]
fn the_preamble_whole_cut_and_wrong() {
    let (r, consumed, needed, _) = preamble(&PREAMBLE);
    assert_eq!(
        (r, consumed, needed),
        (dw_result::DW_RESULT_OK, DW_PREAMBLE_BYTES, 0)
    );
    let (r, consumed, needed, _) = preamble(&PREAMBLE[..5]);
    assert_eq!(
        (r, consumed, needed),
        (dw_result::DW_RESULT_INCOMPLETE, 0, 9)
    );
    let mut wrong = PREAMBLE;
    wrong[13] = 9;
    let (r, .., error) = preamble(&wrong);
    assert_eq!(r, dw_result::DW_RESULT_MALFORMED);
    let want = dendro_wire_core::check_preamble(&wrong).unwrap_err();
    assert_eq!(message(&error), want.to_string());
}

#[test]
fn a_null_pointer_is_refused_never_followed() {
    let bytes = frames(5, 1).remove(0);
    let (mut frame, mut n, mut error) = (MaybeUninit::uninit(), 0usize, no_error());
    let null_result = dw_result::DW_RESULT_NULL_PARAMETER;
    // SAFETY: each call has one null pointer, the others live.
    unsafe {
        let p = bytes.as_ptr();
        let len = bytes.len();
        let f = frame.as_mut_ptr();
        assert_eq!(
            dw_decode(null(), len, f, &mut n, &mut n, &mut error),
            null_result
        );
        assert_eq!(error.result, null_result as u32, "the error says so too");
        assert_eq!(dw_decode(p, len, nul(), &mut n, &mut n, nul()), null_result);
        assert_eq!(dw_decode(p, len, f, nul(), &mut n, nul()), null_result);
        assert_eq!(dw_decode(p, len, f, &mut n, nul(), nul()), null_result);
        assert_eq!(
            dw_check_preamble(null(), 0, &mut n, &mut n, nul()),
            null_result
        );
        assert_eq!(dw_check_preamble(p, len, nul(), &mut n, nul()), null_result);
        assert_eq!(dw_rows_next(nul(), nul(), null_mut()), null_result);
        assert_eq!(dw_map_next(nul(), nul(), nul(), null_mut()), null_result);
        let mut w = 0usize;
        let mut buf = [0 as core::ffi::c_char; 8];
        assert_eq!(
            dw_error_message(null(), buf.as_mut_ptr(), 8, &mut w),
            null_result
        );
        assert_eq!(dw_error_message(&error, nul(), 8, &mut w), null_result);
        assert_eq!(
            dw_error_message(&error, buf.as_mut_ptr(), 8, nul()),
            null_result
        );
    }
}

#[test]
fn a_misaligned_or_impossible_argument_is_refused() {
    let bytes = frames(6, 1).remove(0);
    let mut words = [0usize; 3];
    let odd = words
        .as_mut_ptr()
        .cast::<u8>()
        .wrapping_add(1)
        .cast::<usize>();
    let mut frame = MaybeUninit::uninit();
    let mut n = 0usize;
    let mut error = no_error();
    // SAFETY: `odd` is never written (refused first); the rest are live.
    let r = unsafe {
        dw_decode(
            bytes.as_ptr(),
            bytes.len(),
            frame.as_mut_ptr(),
            odd,
            &mut n,
            &mut error,
        )
    };
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
    assert_eq!(error.reason, dw_invalid::DW_INVALID_MISALIGNED as u32);
    // The refusal names the parameter, in its values and its sentence.
    assert_eq!(error.values[0], dw_param::DW_PARAM_CONSUMED as u64);
    assert_eq!(error.item, -1);
    assert_eq!(
        message(&error),
        "consumed is not aligned for the type it points at"
    );
    // SAFETY: the length is refused before the pointer is read.
    let r = unsafe {
        dw_decode(
            bytes.as_ptr(),
            usize::MAX,
            frame.as_mut_ptr(),
            &mut n,
            &mut n,
            &mut error,
        )
    };
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
    assert_eq!(error.reason, dw_invalid::DW_INVALID_TOO_LONG as u32);
    assert_eq!(error.values[0], dw_param::DW_PARAM_BUF as u64);
    assert_eq!(
        message(&error),
        "buf's length is above what one buffer can hold"
    );
}

#[test]
fn a_cursor_over_changed_bytes_is_refused_not_overread() {
    // A Rows frame with rows, found by seed.
    let mut g = Gen::new(7);
    let bytes = loop {
        let b = with_view(&g.frame(), frame_bytes);
        if let Ok(Status::Complete((Frame::Rows(r), _))) = core_decode(&b) {
            if r.rows.len() > 1 {
                break b;
            }
        }
    };
    let got = decode(&bytes);
    // SAFETY: the frame is a Rows frame.
    let mut cursor = unsafe { got.frame().body.rows.rows };
    // The bytes under the cursor changed: the first row's stream length
    // is a lie. (A copy, changed, and the cursor moved onto it: changing
    // the decoded buffer itself would void the pointers Rust lent.)
    let at = cursor.rest as usize - bytes.as_ptr() as usize;
    let mut changed = bytes.clone();
    changed[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    cursor.rest = changed[at..].as_ptr();
    let mut row = MaybeUninit::uninit();
    // SAFETY: the cursor points into `bytes`, still held.
    let r = unsafe { dw_rows_next(&mut cursor, row.as_mut_ptr(), null_mut()) };
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
    // A cursor whose length is past what a slice holds.
    cursor.len = usize::MAX;
    // SAFETY: refused before the bytes are read.
    let r = unsafe { dw_rows_next(&mut cursor, row.as_mut_ptr(), null_mut()) };
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
}

#[test]
fn a_short_message_buffer_gets_what_fits_cut_at_a_character() {
    let got = decode(&[0, 0, 0, 0]);
    let whole = message(&got.error);
    for len in 0..whole.len() {
        let mut buf = vec![0xffu8; len + 1];
        let mut written = usize::MAX;
        // SAFETY: `len` of the buffer's bytes; one more to see none is
        // written past it.
        let r = unsafe { dw_error_message(&got.error, buf.as_mut_ptr().cast(), len, &mut written) };
        assert_eq!(r, dw_result::DW_RESULT_BUFFER_TOO_SMALL);
        assert!(written <= len);
        assert!(whole.starts_with(std::str::from_utf8(&buf[..written]).unwrap()));
        assert_eq!(buf[len], 0xff, "nothing is written past len");
    }
}

#[test]
fn an_error_the_library_did_not_write_has_no_sentence() {
    let mut forged = decode(&[0, 0, 0, 0]).error;
    forged.rule = 9999;
    let mut buf = [0 as core::ffi::c_char; 256];
    let mut written = 0;
    // SAFETY: live locals.
    let r = unsafe { dw_error_message(&forged, buf.as_mut_ptr(), 256, &mut written) };
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
}

#[test]
fn every_result_has_its_header_name() {
    let name = |r: u32| {
        // SAFETY: a static NUL-terminated string.
        unsafe { core::ffi::CStr::from_ptr(dw_result_name(r)) }
            .to_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(name(dw_result::DW_RESULT_OK as u32), "DW_RESULT_OK");
    assert_eq!(
        name(dw_result::DW_RESULT_REFUSED as u32),
        "DW_RESULT_REFUSED"
    );
    assert_eq!(
        name(dw_result::DW_RESULT_TRUNCATED as u32),
        "DW_RESULT_TRUNCATED"
    );
    assert_eq!(name(10), "DW_RESULT_UNKNOWN");
}
