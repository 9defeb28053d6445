//! The C entry points on hostile input, called as C calls them: arbitrary
//! bytes cut at arbitrary points, null pointers with any length, message
//! buffers of any size. Each call agrees with the core on the same bytes
//! and writes nothing outside the buffers it was given.

use core::mem::MaybeUninit;
use core::ptr::{null, null_mut};

use bolero::check;
use dendro_wire_core::{FrameDecoder, Status, Subscriber};
use dendro_wire_ffi::*;
use dendro_wire_test_support::dendro_map::with_view;
use dendro_wire_test_support::gen::Gen;

use super::ITERATIONS;

#[repr(C, align(8))]
struct SubscriberStorage([u8; SUBSCRIBER_BYTES]);

/// The sources the tests' subscribers allow, and the storage that takes.
const SUBSCRIBER_SOURCES: u32 = 8;
const SUBSCRIBER_BYTES: usize = match cfg!(target_pointer_width = "64") {
    true => DW_SUBSCRIBER_HEAD_BYTES_64,
    false => DW_SUBSCRIBER_HEAD_BYTES_32,
} + SUBSCRIBER_SOURCES as usize * DW_SUBSCRIBER_SOURCE_BYTES;

/// Step a cursor or a map to its end: each step in bounds, and the count
/// it began with is the number of steps.
fn walk(frame: &dw_frame) {
    let walk_map = |mut m: dw_map| {
        let want = m.count;
        let mut steps = 0;
        let (mut k, mut v) = (MaybeUninit::uninit(), MaybeUninit::uninit());
        // SAFETY: the map points into the input, still held.
        while unsafe { dw_map_next(&mut m, k.as_mut_ptr(), v.as_mut_ptr(), null_mut()) }
            == dw_result::DW_RESULT_OK
        {
            steps += 1;
        }
        assert_eq!(steps, want);
    };
    // SAFETY: each member read is the one `kind` names.
    unsafe {
        match frame.kind {
            k if k == dw_frame_kind::DW_FRAME_HANDSHAKE as u32 => {
                walk_map(frame.body.handshake.labels);
                walk_map(frame.body.handshake.metadata);
            }
            k if k == dw_frame_kind::DW_FRAME_SOURCE_UPDATE as u32 => {
                walk_map(frame.body.source_update.labels);
                walk_map(frame.body.source_update.metadata);
            }
            k if k == dw_frame_kind::DW_FRAME_ROWS as u32 => {
                let mut c = frame.body.rows.rows;
                let mut row = MaybeUninit::<dw_row>::uninit();
                let mut one_by_one = Vec::new();
                while dw_rows_next(&mut c, row.as_mut_ptr(), null_mut()) == dw_result::DW_RESULT_OK
                {
                    let r = row.assume_init();
                    one_by_one.push((r.stream.ptr, r.stream.len, r.ts, r.row.ptr, r.row.len));
                }
                assert_eq!(one_by_one.len(), frame.body.rows.count as usize);
                // In batches of three: the same views, in the same order.
                let mut c = frame.body.rows.rows;
                let mut rows = [MaybeUninit::<dw_row>::uninit(); 3];
                let (mut batched, mut filled) = (Vec::new(), 0);
                while dw_rows_next_batch(
                    &mut c,
                    rows.as_mut_ptr().cast(),
                    3,
                    &mut filled,
                    null_mut(),
                ) == dw_result::DW_RESULT_OK
                {
                    for r in &rows[..filled] {
                        let r = r.assume_init();
                        batched.push((r.stream.ptr, r.stream.len, r.ts, r.row.ptr, r.row.len));
                    }
                }
                assert_eq!(batched, one_by_one);
            }
            _ => {}
        }
    }
}

/// The sentence of `error` into a buffer of `len` bytes: never a byte
/// past `len`, always a prefix of the whole sentence.
fn message_fits(error: &dw_error, len: usize) {
    let mut buf = vec![0xa5u8; 300];
    let len = len.min(256);
    let mut written = usize::MAX;
    // SAFETY: `len` is within the buffer.
    let r = unsafe { dw_error_message(error, buf.as_mut_ptr().cast(), len, &mut written) };
    assert!(matches!(
        r,
        dw_result::DW_RESULT_OK | dw_result::DW_RESULT_BUFFER_TOO_SMALL
    ));
    assert!(written <= len);
    assert!(
        buf[len + 1..].iter().all(|b| *b == 0xa5),
        "nothing past len"
    );
    std::str::from_utf8(&buf[..written]).expect("cut at a character");
}

/// The bytes the calls are tried on: `rest` as it is when `how` is odd,
/// else frames the generator makes from it (sources 0 to 2, so the
/// subscriber judges past a handshake) with a byte flipped, cut at a point
/// `how` picks.
fn stream(how: u8, rest: &[u8]) -> Vec<u8> {
    if how & 1 == 1 {
        return rest.to_vec();
    }
    let mut g = Gen::from_bytes(rest);
    let mut out = Vec::new();
    for _ in 0..1 + g.below(4) {
        let mut frame = with_view(&g.frame(), |f| {
            let mut b = vec![0; f.buffer_len().expect("a generated frame encodes")];
            f.emit(&mut b).expect("sized by buffer_len");
            b
        });
        frame[5..9].copy_from_slice(&(g.below(3) as u32).to_le_bytes());
        out.extend_from_slice(&frame);
    }
    if how & 2 == 2 {
        let at = g.below(out.len() as u64) as usize;
        out[at] ^= 1 << g.below(8);
    }
    out.truncate(out.len() - (usize::from(how >> 2) % 8).min(out.len()));
    out
}

/// Arbitrary bytes or generated frames, damaged and cut, through the preamble
/// check, the decoder (frame after frame), the cursors and the subscriber:
/// the same status, counts, sentences and verdicts as the core, and null
/// pointers refused whatever the length.
#[test]
fn c_entry_points() {
    check!()
        .with_iterations(ITERATIONS)
        .for_each(|input: &[u8]| {
            let Some((&cut, rest)) = input.split_first() else {
                return;
            };
            let bytes = stream(cut, rest);
            let bytes = &bytes[..];
            let (mut n, mut m, mut error) = (0usize, 0usize, MaybeUninit::zeroed());
            // SAFETY: null pointers, refused before any length is used.
            unsafe {
                let r = dw_decode(null(), bytes.len(), null_mut(), &mut n, &mut m, null_mut());
                assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER);
                let r =
                    dw_check_preamble(bytes.as_ptr(), bytes.len(), &mut n, null_mut(), null_mut());
                assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER);
            }
            // SAFETY: live locals and the input.
            let r = unsafe {
                dw_check_preamble(
                    bytes.as_ptr(),
                    bytes.len(),
                    &mut n,
                    &mut m,
                    error.as_mut_ptr(),
                )
            };
            match dendro_wire_core::check_preamble(bytes) {
                Ok(Status::Complete(used)) => assert_eq!((r, n), (dw_result::DW_RESULT_OK, used)),
                Ok(Status::Incomplete { needed }) => {
                    assert_eq!((r, m), (dw_result::DW_RESULT_INCOMPLETE, needed))
                }
                Err(_) => assert_eq!(r, dw_result::DW_RESULT_MALFORMED),
            }

            let mut storage = SubscriberStorage([0; SUBSCRIBER_BYTES]);
            let mut sub = null_mut();
            // SAFETY: the storage outlives the subscriber, used only here.
            let r = unsafe {
                dw_subscriber_init(
                    storage.0.as_mut_ptr().cast(),
                    SUBSCRIBER_BYTES,
                    2,
                    &mut sub,
                    null_mut(),
                )
            };
            assert_eq!(r, dw_result::DW_RESULT_OK);
            let mut rust =
                Subscriber::<{ SUBSCRIBER_SOURCES as usize }>::new().with_source_limit(2);

            let limit = 1 << 12;
            let decoder = FrameDecoder::new().with_max_frame_bytes(limit);
            let mut rest = bytes;
            loop {
                let mut frame = MaybeUninit::uninit();
                let mut error = MaybeUninit::<dw_error>::zeroed();
                let (mut used, mut needed) = (usize::MAX, usize::MAX);
                // SAFETY: live locals and the input.
                let r = unsafe {
                    dw_decode_limited(
                        rest.as_ptr(),
                        rest.len(),
                        limit,
                        frame.as_mut_ptr(),
                        &mut used,
                        &mut needed,
                        error.as_mut_ptr(),
                    )
                };
                match decoder.decode(rest) {
                    Ok(Status::Complete((want, n))) => {
                        assert_eq!((r, used), (dw_result::DW_RESULT_OK, n));
                        // SAFETY: written, as the call said OK.
                        let frame = unsafe { frame.assume_init() };
                        walk(&frame);
                        let mut verdict = MaybeUninit::uninit();
                        // SAFETY: a live handle; the frame's bytes held.
                        let r = unsafe {
                            dw_subscriber_admit(
                                sub,
                                &frame,
                                verdict.as_mut_ptr(),
                                error.as_mut_ptr(),
                            )
                        };
                        match rust.admit(&want) {
                            Ok(_) => assert_eq!(r, dw_result::DW_RESULT_OK),
                            Err(_) => {
                                assert_eq!(r, dw_result::DW_RESULT_PROTOCOL_ERROR);
                                // SAFETY: written, as the call failed.
                                message_fits(unsafe { error.assume_init_ref() }, usize::from(cut));
                            }
                        }
                        rest = &rest[n..];
                    }
                    Ok(Status::Incomplete { needed: want }) => {
                        assert_eq!((r, needed), (dw_result::DW_RESULT_INCOMPLETE, want));
                        break;
                    }
                    Err(e) => {
                        assert_eq!(r, dw_result::DW_RESULT_MALFORMED);
                        // SAFETY: written, as the call failed.
                        let error = unsafe { error.assume_init() };
                        assert_eq!(error.offset, e.offset() as u64);
                        message_fits(&error, usize::from(cut));
                        message_fits(&error, 256);
                        break;
                    }
                }
            }
            // SAFETY: a live handle, released once.
            assert_eq!(
                unsafe { dw_subscriber_release(sub, null_mut()) },
                dw_result::DW_RESULT_OK
            );
        });
}
