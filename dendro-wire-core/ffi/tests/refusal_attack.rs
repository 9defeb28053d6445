//! What a publisher's refusals write into `dw_error`: for each reason, the
//! numbers its documentation lists, in its order, the rest of the fields
//! as the header says, the same whatever the caller's `dw_error` held;
//! and what was found off the documented path: a row on a source never
//! declared counted as refused, a length past any buffer refused as too
//! long by every call, storage over the declaration's own strings
//! refused as overlapping.

mod common;
mod hostile;

use core::mem::MaybeUninit;
use core::ptr::null_mut;

use dendro_wire_ffi::*;

use common::*;
use hostile::*;

/// `f` run with a `dw_error` of 0x00, 0xA5 and 0xFF bytes: one result,
/// one error whatever it held.
fn exact(what: &str, mut f: impl FnMut(*mut dw_error) -> dw_result) -> (dw_result, dw_error) {
    let mut seen: Option<(dw_result, [u8; 64])> = None;
    let mut last = stale_error();
    for byte in [0x00u8, 0xA5, 0xFF] {
        let mut e = MaybeUninit::<dw_error>::uninit();
        // SAFETY: integers only; any bytes a value; 64 bytes, no padding.
        let (r, img) = unsafe {
            core::ptr::write_bytes(e.as_mut_ptr(), byte, 1);
            let r = f(e.as_mut_ptr());
            (r, *e.as_ptr().cast::<[u8; 64]>())
        };
        assert_ne!(r, dw_result::DW_RESULT_OK, "{what}");
        if let Some((r0, img0)) = seen {
            assert_eq!(
                (r, img),
                (r0, img0),
                "{what}: the error depends on what it held"
            );
        }
        seen = Some((r, img));
        // SAFETY: written by the failing call.
        last = unsafe { e.assume_init() };
    }
    (seen.unwrap().0, last)
}

fn refusal(what: &str, r: dw_result, e: &dw_error, reason: dw_publish_error, values: [u64; 4]) {
    assert_eq!(r, dw_result::DW_RESULT_REFUSED, "{what}");
    assert_eq!(e.reason, reason as u32, "{what}");
    plain_failure(e, r, what);
    assert_eq!(e.values, values, "{what}: {}", message(e));
}

/// A publisher of `limit` sources: source 0 indexed, stream "s"; source
/// 1 without an index.
fn two(limit: u32) -> Pub {
    let mut p = Pub::new(limit);
    let streams = [s("s")];
    assert_eq!(
        p.add(&c_source_decl(&streams, s("ix"))).0,
        dw_result::DW_RESULT_OK
    );
    assert_eq!(
        p.add(&c_source_decl(&streams, NO_STR)).0,
        dw_result::DW_RESULT_OK
    );
    p
}

#[test]
fn each_refusal_says_the_numbers_its_reason_documents() {
    use dw_publish_error::*;
    let mut p = two(3);
    let h = p.handle;
    let big = vec![0u8; 5000];
    // SAFETY (every call below): a live handle, live locals.
    let (r, e) = exact("unknown source", |e| unsafe {
        dw_publisher_observe(h, 7, 0, 1, 0, b"x".as_ptr(), 1, e)
    });
    refusal(
        "unknown source",
        r,
        &e,
        DW_PUBLISH_UNKNOWN_SOURCE,
        [7, 0, 0, 0],
    );
    let (r, e) = exact("unknown stream", |e| unsafe {
        dw_publisher_observe(h, 1, 5, 1, 0, b"x".as_ptr(), 1, e)
    });
    refusal(
        "unknown stream",
        r,
        &e,
        DW_PUBLISH_UNKNOWN_STREAM,
        [1, 5, 0, 0],
    );
    let (r, e) = exact("too large", |e| unsafe {
        dw_publisher_observe(h, 0, 0, 1, 0, big.as_ptr(), big.len(), e)
    });
    assert_eq!(e.reason, DW_PUBLISH_FRAME_TOO_LARGE as u32);
    assert!(e.values[2] > 4096, "{:?}", e.values);
    refusal(
        "too large",
        r,
        &e,
        DW_PUBLISH_FRAME_TOO_LARGE,
        [0, 3, e.values[2], 4096],
    );
    let (r, e) = exact("no index", |e| unsafe {
        dw_publisher_set_slot(h, 1, b"k".as_ptr(), 1, b"v".as_ptr(), 1, e)
    });
    refusal("no index", r, &e, DW_PUBLISH_NO_INDEX, [1, 0, 0, 0]);
    let (r, e) = exact("no index (remove)", |e| unsafe {
        dw_publisher_remove_slot(h, 1, b"k".as_ptr(), 1, e)
    });
    refusal(
        "no index (remove)",
        r,
        &e,
        DW_PUBLISH_NO_INDEX,
        [1, 0, 0, 0],
    );

    let twice = [s("a"), s("a")];
    let decl = c_source_decl(&twice, NO_STR);
    let (r, _, e) = p.add(&decl);
    refusal(
        "stream declared twice",
        r,
        &e,
        DW_PUBLISH_DUPLICATE_STREAM,
        [2, 1, 0, 0],
    );

    // A uuid the encoder refuses: its rule, field and offset, a handshake.
    let one = [s("s")];
    let mut decl = c_source_decl(&one, NO_STR);
    decl.uuid = s("01234567-89AB-4DEF-8123-456789ABCDEF");
    let (r, _, e) = p.add(&decl);
    assert_eq!(
        (r, e.reason),
        (dw_result::DW_RESULT_REFUSED, DW_PUBLISH_ENCODE as u32)
    );
    assert_ne!(e.rule, dw_rule::DW_RULE_NONE as u32);
    assert_ne!(e.field, dw_field::DW_FIELD_NONE as u32);
    assert_eq!((e.offset, e.item, e.frame_kind, e.encoding), (9, -1, 1, 1));
    assert!(message(&e).contains("uuid"), "{}", message(&e));

    let decl = c_source_decl(&one, NO_STR);
    assert_eq!(p.add(&decl).0, dw_result::DW_RESULT_OK);
    let (r, _, e) = p.add(&decl);
    refusal(
        "table full",
        r,
        &e,
        DW_PUBLISH_TOO_MANY_SOURCES,
        [3, 0, 0, 0],
    );

    // A short poll buffer: its own result, the frame still due.
    // SAFETY: as above.
    unsafe {
        assert_eq!(
            dw_publisher_connected(h, null_mut()),
            dw_result::DW_RESULT_OK
        );
        assert_eq!(
            dw_publisher_end_interval(h, null_mut()),
            dw_result::DW_RESULT_OK
        );
    }
    let mut len = 0;
    // SAFETY: as above.
    assert_eq!(
        unsafe { dw_publisher_next_frame_len(h, &mut len, null_mut()) },
        dw_result::DW_RESULT_OK
    );
    let mut buf = [0u8; 8];
    let mut t = MaybeUninit::uninit();
    let (r, e) = exact("short poll", |e| unsafe {
        dw_publisher_poll(h, buf.as_mut_ptr(), 8, t.as_mut_ptr(), e)
    });
    assert_eq!(r, dw_result::DW_RESULT_BUFFER_TOO_SMALL);
    assert_eq!(e.reason, DW_PUBLISH_BUFFER_TOO_SMALL as u32);
    plain_failure(&e, r, "short poll");
    assert_eq!(e.values, [len as u64, 8, 0, 0]);
    let mut big_buf = vec![0u8; 4096];
    assert_eq!(poll(h, &mut big_buf), Some(len));
}

#[test]
fn an_init_refused_says_what_would_do() {
    let len = dw_publisher_size(2);
    let storage = Fenced::zeroed(len);
    let at = storage.ptr().cast();
    let mut handle = null_mut();
    let h = &mut handle as *mut *mut dw_publisher;
    let init = |len: usize, limit: u32, config: dw_publisher_config| {
        move |e: *mut dw_error| unsafe { dw_publisher_init(at, len, limit, &config, h, e) }
    };
    let cases: [(&str, _, dw_invalid, [u64; 4]); 5] = [
        (
            "small",
            init(len - 1, 2, CONFIG),
            dw_invalid::DW_INVALID_STORAGE_TOO_SMALL,
            [len as u64, len as u64 - 1, 0, 0],
        ),
        (
            "limit 0",
            init(len, 0, CONFIG),
            dw_invalid::DW_INVALID_SOURCE_LIMIT,
            [0, 1024, 1, 0],
        ),
        (
            "limit 1025",
            init(len, 1025, CONFIG),
            dw_invalid::DW_INVALID_SOURCE_LIMIT,
            [1025, 1024, 1, 0],
        ),
        (
            "full_every 0",
            init(
                len,
                2,
                dw_publisher_config {
                    full_every: 0,
                    ..CONFIG
                },
            ),
            dw_invalid::DW_INVALID_FULL_EVERY,
            [0, 0, 0, 0],
        ),
        (
            "frame buffer 36",
            init(
                len,
                2,
                dw_publisher_config {
                    frame_buffer: 36,
                    ..CONFIG
                },
            ),
            dw_invalid::DW_INVALID_FRAME_BUFFER,
            [36, 37, DW_MAX_FRAME_BYTES as u64 + 4, 0],
        ),
    ];
    for (what, f, reason, values) in cases {
        let (r, e) = exact(what, f);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{what}");
        assert_eq!(e.reason, reason as u32, "{what}");
        plain_failure(&e, r, what);
        assert_eq!(e.values, values, "{what}: {}", message(&e));
    }
}

fn rows_refused(h: *mut dw_publisher) -> u64 {
    let mut st = MaybeUninit::<dw_stats>::uninit();
    // SAFETY: a live handle and a local, written on OK.
    unsafe {
        assert_eq!(
            dw_publisher_stats(h, st.as_mut_ptr(), null_mut()),
            dw_result::DW_RESULT_OK
        );
        st.assume_init().rows_refused
    }
}

#[test]
fn an_observe_refused_for_an_undeclared_source_is_counted() {
    let p = two(3);
    for (source, stream) in [(1, 9), (2, 0), (7, 0), (u32::MAX, 0)] {
        let before = rows_refused(p.handle);
        // SAFETY: a live handle and a literal.
        let r = unsafe {
            dw_publisher_observe(p.handle, source, stream, 1, 0, b"x".as_ptr(), 1, null_mut())
        };
        assert_eq!(r, dw_result::DW_RESULT_REFUSED, "{source}/{stream}");
        assert_eq!(
            rows_refused(p.handle),
            before + 1,
            "source {source}, stream {stream}: not counted"
        );
    }
}

#[test]
fn a_length_past_any_buffer_is_refused_as_too_long_by_every_call() {
    let huge = isize::MAX as usize + 1;
    // Refused as too long, naming the buffer whose length it is.
    let too_long = |what: &str, r: dw_result, e: &dw_error, buffer: dw_param, name: &str| {
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{what}");
        assert_eq!(
            e.reason,
            dw_invalid::DW_INVALID_TOO_LONG as u32,
            "{what}: {}",
            message(e)
        );
        plain_failure(e, r, what);
        assert_eq!(e.values, [buffer as u64, 0, 0, 0], "{what}");
        assert_eq!(
            message(e),
            format!("{name}'s length is above what one buffer can hold")
        );
    };
    use dw_param::*;
    let mut p = two(3);
    let storage = Fenced::zeroed(SOURCE_BYTES);
    let (mut ordinal, mut e) = (0, stale_error());
    let streams = [s("t")];
    let decl = c_source_decl(&streams, NO_STR);
    // SAFETY: live handle and locals; the lengths are what is refused.
    unsafe {
        let r = dw_publisher_observe(p.handle, 0, 0, 1, 0, b"x".as_ptr(), huge, &mut e);
        too_long("observe", r, &e, DW_PARAM_ROW, "row");
        let r = dw_publisher_add_source(
            p.handle,
            &decl,
            storage.ptr().cast(),
            huge,
            &mut ordinal,
            &mut e,
        );
        too_long("add_source", r, &e, DW_PARAM_STORAGE, "storage");
        dw_publisher_connected(p.handle, null_mut());
        dw_publisher_end_interval(p.handle, null_mut());
        let mut buf = [0u8; 64];
        let mut t = MaybeUninit::uninit();
        let r = dw_publisher_poll(p.handle, buf.as_mut_ptr(), huge, t.as_mut_ptr(), &mut e);
        too_long("poll", r, &e, DW_PARAM_BUF, "buf");
        let own = Fenced::zeroed(dw_publisher_size(1));
        let mut h = null_mut();
        let r = dw_publisher_init(own.ptr().cast(), huge, 1, &CONFIG, &mut h, &mut e);
        too_long("publisher init", r, &e, DW_PARAM_STORAGE, "storage");
        let sub = Fenced::zeroed(dw_subscriber_size(1));
        let mut sh = null_mut();
        let r = dw_subscriber_init(sub.ptr().cast(), huge, 1, &mut sh, &mut e);
        too_long("subscriber init", r, &e, DW_PARAM_STORAGE, "storage");
    }
    p.sources.clear();
}

#[test]
fn storage_holding_the_declarations_strings_is_refused_or_sends_them_unchanged() {
    let mut p = Pub::new(1);
    for at in [0usize, 27] {
        let storage = Fenced::zeroed(SOURCE_BYTES);
        let name = b"streamname";
        // SAFETY: inside the fenced storage.
        let name_at = unsafe { storage.ptr().add(at) };
        // SAFETY: as above; ten bytes of its own.
        unsafe { core::ptr::copy_nonoverlapping(name.as_ptr(), name_at, name.len()) };
        let streams = [dw_str {
            ptr: name_at.cast_const().cast(),
            len: name.len(),
        }];
        let decl = c_source_decl(&streams, NO_STR);
        let (mut ordinal, mut e) = (0, stale_error());
        // SAFETY: live handle, storage the test keeps; the name inside it
        // is what is under test.
        let r = unsafe {
            dw_publisher_add_source(
                p.handle,
                &decl,
                storage.ptr().cast(),
                SOURCE_BYTES,
                &mut ordinal,
                &mut e,
            )
        };
        if r != dw_result::DW_RESULT_OK {
            assert_eq!(
                (r, e.reason),
                (
                    dw_result::DW_RESULT_INVALID_ARGUMENT,
                    dw_invalid::DW_INVALID_OVERLAP as u32
                ),
                "{at}"
            );
            continue;
        }
        // SAFETY: as above.
        unsafe {
            dw_publisher_connected(p.handle, null_mut());
            dw_publisher_observe(p.handle, ordinal, 0, 1, 0, b"r".as_ptr(), 1, null_mut());
            dw_publisher_end_interval(p.handle, null_mut());
        }
        let mut buf = vec![0u8; CONFIG.frame_buffer];
        let mut sent = Vec::new();
        while let Some(len) = poll(p.handle, &mut buf) {
            let frame = buf[..len].to_vec();
            let d = decode(&frame);
            // SAFETY: the member the kind names.
            if d.frame().kind == dw_frame_kind::DW_FRAME_ROWS as u32 {
                sent.extend(
                    rows(unsafe { d.frame().body.rows.rows })
                        .into_iter()
                        .map(|r| r.0),
                );
            }
        }
        assert_eq!(sent, ["streamname"], "a name at byte {at} of the storage");
        p.sources.push(storage);
        // SAFETY: the live handle; the next case declares again.
        unsafe { dw_publisher_release(p.handle, null_mut()) };
        p = Pub::new(1);
    }
}
