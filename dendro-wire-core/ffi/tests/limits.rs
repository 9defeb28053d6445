//! What round two of the C API holds to: the tool's limits and sentences
//! (the subscriber's source limit up to 1024 in storage sized for it, the
//! truncation sentence, a reason from every call), nonsense refused (a
//! configuration, a copied handle, a zeroed cursor), sizing that is the
//! core's own, rows in batches, and the library saying which it is.

mod common;

use core::mem::{size_of, MaybeUninit};
use core::ptr::{null, null_mut};

use dendro_wire_core::{Budget, Map, SourceDecl, PREAMBLE};
use dendro_wire_ffi::*;
use dendro_wire_test_support::dendro_map::with_view;
use dendro_wire_test_support::fixtures::{frame_bytes, handshake};
use dendro_wire_test_support::gen::Gen;

use common::*;

/// Zeroed memory held by raw pointer for an object's life, as C holds
/// storage (a Box moved would retag the bytes the object keeps pointers
/// to), freed when dropped.
struct Raw {
    ptr: *mut u128,
    words: usize,
}

impl Raw {
    fn new(bytes: usize) -> Raw {
        let words = bytes.div_ceil(16).max(1);
        let boxed: Box<[u128]> = vec![0; words].into_boxed_slice();
        Raw {
            ptr: Box::into_raw(boxed).cast(),
            words,
        }
    }

    fn at(&self) -> *mut core::ffi::c_void {
        self.ptr.cast()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: made by `Raw::new` from a boxed slice of `words`.
        drop(unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(self.ptr, self.words)) });
    }
}

fn subscriber(storage: &Raw, len: usize, limit: u32) -> (dw_result, *mut dw_subscriber, dw_error) {
    let (mut handle, mut error) = (null_mut(), no_error());
    // SAFETY: the storage is the test's, lent for the subscriber's life.
    let r = unsafe { dw_subscriber_init(storage.at(), len, limit, &mut handle, &mut error) };
    (r, handle, error)
}

fn admit(sub: *mut dw_subscriber, bytes: &[u8]) -> (dw_result, dw_error) {
    let decoded = decode(bytes);
    let (mut verdict, mut error) = (MaybeUninit::uninit(), no_error());
    // SAFETY: a live handle, the frame's buffer held.
    let r = unsafe { dw_subscriber_admit(sub, decoded.frame(), verdict.as_mut_ptr(), &mut error) };
    (r, error)
}

#[test]
fn a_subscriber_allows_up_to_the_tools_1024_sources_in_storage_sized_for_them() {
    let limits: &[u32] = if cfg!(miri) {
        &[1, 9]
    } else {
        &[1, 9, 100, 1024]
    };
    for &limit in limits {
        let exact = dw_subscriber_size(limit);
        let header = SUBSCRIBER_HEAD + limit as usize * DW_SUBSCRIBER_SOURCE_BYTES;
        assert_eq!(
            exact, header,
            "{limit}: DW_SUBSCRIBER_SIZE is not the function's"
        );

        let storage = Raw::new(exact);
        let (r, _, error) = subscriber(&storage, exact - 1, limit);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        assert_eq!(
            error.reason,
            dw_invalid::DW_INVALID_STORAGE_TOO_SMALL as u32
        );
        assert_eq!(error.values[..2], [exact as u64, exact as u64 - 1]);
        assert_eq!(
            message(&error),
            format!(
                "the storage given for the object is {} bytes, and it needs {exact} (the \
                 header's _SIZE, or _size() for this build)",
                exact - 1
            )
        );

        let (r, sub, _) = subscriber(&storage, exact, limit);
        assert_eq!(r, dw_result::DW_RESULT_OK);
        for source in 0..limit {
            let (r, _) = admit(sub, &frame_bytes(&handshake(source)));
            assert_eq!(r, dw_result::DW_RESULT_OK, "{limit}: source {source}");
        }
        let (r, error) = admit(sub, &frame_bytes(&handshake(limit)));
        assert_eq!(r, dw_result::DW_RESULT_PROTOCOL_ERROR);
        assert_eq!(
            message(&error),
            format!("a handshake past the limit of {limit} sources on one connection")
        );
        let mut count = 0;
        // SAFETY: a live handle and a local.
        let r = unsafe { dw_subscriber_source_count(sub, &mut count, null_mut()) };
        assert_eq!((r, count), (dw_result::DW_RESULT_OK, limit));
    }
    // A limit it cannot have is refused, never lowered in silence.
    let storage = Raw::new(SUBSCRIBER_HEAD + 1025 * DW_SUBSCRIBER_SOURCE_BYTES);
    for limit in [0, 1025, u32::MAX] {
        assert_eq!(dw_subscriber_size(limit), 0);
        let (r, _, error) = subscriber(&storage, 1 << 20, limit);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        assert_eq!(error.reason, dw_invalid::DW_INVALID_SOURCE_LIMIT as u32);
        assert_eq!(
            message(&error),
            format!(
                "a source limit of {limit}: a subscriber allows 1 to 1024 sources on one \
                 connection, as dendro-wire does"
            )
        );
    }
}

const CONFIG: dw_publisher_config = dw_publisher_config {
    full_every: 4,
    frame_buffer: 512,
};

fn publisher(
    storage: &Raw,
    config: &dw_publisher_config,
) -> (dw_result, *mut dw_publisher, dw_error) {
    let (mut handle, mut error) = (null_mut(), no_error());
    // SAFETY: the storage is the test's, lent for the publisher's life.
    let r = unsafe {
        dw_publisher_init(
            storage.at(),
            PUBLISHER_BYTES,
            PUBLISHER_SOURCES,
            config,
            &mut handle,
            &mut error,
        )
    };
    (r, handle, error)
}

#[test]
fn nonsense_configurations_are_refused_with_what_would_do() {
    let storage = Raw::new(PUBLISHER_BYTES);
    let most = DW_MAX_FRAME_BYTES as usize + DW_LENGTH_PREFIX_BYTES;
    let zero = dw_publisher_config {
        full_every: 0,
        ..CONFIG
    };
    let (r, _, error) = publisher(&storage, &zero);
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
    assert_eq!(error.reason, dw_invalid::DW_INVALID_FULL_EVERY as u32);
    assert_eq!(
        message(&error),
        "full_every is 0: a Full index is sent every full_every intervals (rule 7), so it is \
         at least 1"
    );
    for frame_buffer in [0, 36, most + 1, usize::MAX] {
        let config = dw_publisher_config {
            frame_buffer,
            ..CONFIG
        };
        let (r, _, error) = publisher(&storage, &config);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{frame_buffer}");
        assert_eq!(error.reason, dw_invalid::DW_INVALID_FRAME_BUFFER as u32);
        assert_eq!(
            message(&error),
            format!(
                "a frame buffer of {frame_buffer} bytes: it must hold an empty Rows frame (37 \
                 bytes) and need not hold more than the largest frame ({most} bytes)"
            )
        );
    }
    for frame_buffer in [37, most] {
        let config = dw_publisher_config {
            frame_buffer,
            ..CONFIG
        };
        assert_eq!(publisher(&storage, &config).0, dw_result::DW_RESULT_OK);
    }
}

/// The bytes of one object's storage copied elsewhere, as `memcpy` would.
fn copy(from: &Raw, to: &Raw, len: usize) {
    // SAFETY: both are the test's, at least `len` bytes, apart.
    unsafe { core::ptr::copy_nonoverlapping(from.at().cast::<u8>(), to.at().cast::<u8>(), len) };
}

#[test]
fn a_copied_handle_is_refused_and_handle_only_calls_say_why() {
    let moved = "the handle names a copy of an object's storage, or storage moved since _init: \
                 only the handle _init returned is the object";
    let released = "the handle is not one _init made for this kind of object, or it was released";

    let (storage, twin) = (Raw::new(PUBLISHER_BYTES), Raw::new(PUBLISHER_BYTES));
    let (r, p, _) = publisher(&storage, &CONFIG);
    assert_eq!(r, dw_result::DW_RESULT_OK);
    copy(&storage, &twin, PUBLISHER_BYTES);
    let copied = twin.at().cast::<dw_publisher>();
    let calls: [(
        &str,
        unsafe extern "C" fn(*mut dw_publisher, *mut dw_error) -> dw_result,
    ); 5] = [
        ("connected", dw_publisher_connected),
        ("disconnected", dw_publisher_disconnected),
        ("end_interval", dw_publisher_end_interval),
        ("drop_waiting", dw_publisher_drop_waiting),
        ("release", dw_publisher_release),
    ];
    for (name, call) in calls {
        let mut error = no_error();
        // SAFETY: a handle the test made (or a copy of its bytes), a local.
        let r = unsafe { call(copied, &mut error) };
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{name}");
        assert_eq!(error.reason, dw_invalid::DW_INVALID_MOVED as u32, "{name}");
        assert_eq!(message(&error), moved, "{name}");
    }
    let (mut stats, mut error) = (MaybeUninit::uninit(), no_error());
    // SAFETY: as above.
    let r = unsafe { dw_publisher_stats(copied, stats.as_mut_ptr(), &mut error) };
    assert_eq!(
        (r, message(&error).as_str()),
        (dw_result::DW_RESULT_INVALID_ARGUMENT, moved)
    );

    // The original goes on, until released; then every call says so.
    for (name, call) in calls {
        let mut error = no_error();
        // SAFETY: the test's handle, a local.
        let r = unsafe { call(p, &mut error) };
        assert_eq!(r, dw_result::DW_RESULT_OK, "{name}");
    }
    for (name, call) in calls {
        let mut error = no_error();
        // SAFETY: the test's released handle, a local.
        let r = unsafe { call(p, &mut error) };
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{name}");
        assert_eq!(message(&error), released, "{name}");
    }

    let bytes = dw_subscriber_size(4);
    let (storage, twin) = (Raw::new(bytes), Raw::new(bytes));
    let (_, sub, _) = subscriber(&storage, bytes, 4);
    copy(&storage, &twin, bytes);
    let copied = twin.at().cast::<dw_subscriber>();
    let mut error = no_error();
    // SAFETY: a copy of the test's handle's bytes, a local.
    let r = unsafe { dw_subscriber_reset(copied, &mut error) };
    assert_eq!(
        (r, message(&error).as_str()),
        (dw_result::DW_RESULT_INVALID_ARGUMENT, moved)
    );
    // SAFETY: the test's handle, then released.
    unsafe {
        assert_eq!(
            dw_subscriber_release(sub, &mut error),
            dw_result::DW_RESULT_OK
        );
        let r = dw_subscriber_release(sub, &mut error);
        assert_eq!(
            (r, message(&error).as_str()),
            (dw_result::DW_RESULT_INVALID_ARGUMENT, released)
        );
    }
}

#[test]
fn a_zeroed_cursor_is_refused_and_a_finished_one_is_done() {
    let cursor_refused = "the cursor does not point at what the decoder checked: its bytes \
                          changed, or dw_decode did not make it";
    // SAFETY: all-zero bits are a value of these plain structs.
    let (mut cursor, mut map): (dw_row_cursor, dw_map) = unsafe {
        (
            MaybeUninit::zeroed().assume_init(),
            MaybeUninit::zeroed().assume_init(),
        )
    };
    let (mut row, mut k, mut v) = (
        MaybeUninit::uninit(),
        MaybeUninit::uninit(),
        MaybeUninit::uninit(),
    );
    let mut error = no_error();
    // SAFETY: locals.
    let r = unsafe { dw_rows_next(&mut cursor, row.as_mut_ptr(), &mut error) };
    assert_eq!(
        (r, message(&error).as_str()),
        (dw_result::DW_RESULT_INVALID_ARGUMENT, cursor_refused)
    );
    assert_eq!(error.reason, dw_invalid::DW_INVALID_CURSOR as u32);
    let mut error = no_error();
    // SAFETY: locals.
    let r = unsafe { dw_map_next(&mut map, k.as_mut_ptr(), v.as_mut_ptr(), &mut error) };
    assert_eq!(
        (r, message(&error).as_str()),
        (dw_result::DW_RESULT_INVALID_ARGUMENT, cursor_refused)
    );

    // A frame with no rows and no labels: done at once, never refused.
    let empty = frame_bytes(&dendro_wire_core::Frame::Rows(dendro_wire_core::Rows {
        source: 0,
        seq: 0,
        index_state: (0, 0),
        rows: dendro_wire_core::RowList::EMPTY,
    }));
    let decoded = decode(&empty);
    // SAFETY: the frame is a Rows frame, its buffer held.
    let mut cursor = unsafe { decoded.frame().body.rows.rows };
    // SAFETY: as above.
    let r = unsafe { dw_rows_next(&mut cursor, row.as_mut_ptr(), null_mut()) };
    assert_eq!(r, dw_result::DW_RESULT_DONE);
    let hs = frame_bytes(&handshake(0));
    let decoded = decode(&hs);
    // SAFETY: a handshake, its buffer held.
    let mut labels = unsafe { decoded.frame().body.handshake.labels };
    // SAFETY: as above.
    let r = unsafe { dw_map_next(&mut labels, k.as_mut_ptr(), v.as_mut_ptr(), null_mut()) };
    assert_eq!(r, dw_result::DW_RESULT_DONE);
}

/// The rows of a cursor taken `capacity` at a time.
fn batched(mut cursor: dw_row_cursor, capacity: usize) -> Vec<RowOut> {
    let mut out = Vec::new();
    let mut buf = vec![MaybeUninit::<dw_row>::uninit(); capacity];
    loop {
        let mut filled = usize::MAX;
        // SAFETY: the cursor's frame is held by the caller; the buffer is
        // `capacity` rows.
        let r = unsafe {
            dw_rows_next_batch(
                &mut cursor,
                buf.as_mut_ptr().cast(),
                capacity,
                &mut filled,
                null_mut(),
            )
        };
        if r == dw_result::DW_RESULT_DONE {
            assert_eq!(filled, 0);
            return out;
        }
        assert_eq!(r, dw_result::DW_RESULT_OK);
        assert!(filled >= 1 && filled <= capacity);
        for row in &buf[..filled] {
            // SAFETY: the call wrote `filled` rows.
            let row = unsafe { row.assume_init() };
            out.push((string(row.stream), row.ts, row.wall_offset, bytes(row.row)));
        }
    }
}

#[test]
fn batches_give_every_row_a_call_at_a_time_gives() {
    let mut g = Gen::new(30);
    let n = if cfg!(miri) { 10 } else { 400 };
    let mut checked = 0;
    for _ in 0..n {
        let bytes = with_view(&g.frame(), frame_bytes);
        let decoded = decode(&bytes);
        if decoded.result != dw_result::DW_RESULT_OK || decoded.frame().kind != 3 {
            continue;
        }
        // SAFETY: a Rows frame, its buffer held.
        let cursor = unsafe { decoded.frame().body.rows.rows };
        let one = rows(cursor);
        for capacity in [1, 3, 256] {
            assert_eq!(batched(cursor, capacity), one, "{capacity}");
        }
        checked += 1;
    }
    assert!(checked > 0);

    // A cursor whose count is past its bytes is refused, and not moved.
    let row = dendro_wire_core::Row {
        stream: "cpu",
        ts: 1,
        wall_offset: 2,
        row: b"abc",
    };
    let frame = frame_bytes(&dendro_wire_core::Frame::Rows(dendro_wire_core::Rows {
        source: 0,
        seq: 0,
        index_state: (0, 0),
        rows: dendro_wire_core::RowList::from_slice(&[row, row]),
    }));
    let decoded = decode(&frame);
    // SAFETY: a Rows frame, its buffer held.
    let mut cursor = unsafe { decoded.frame().body.rows.rows };
    cursor.left = 3;
    let before = (cursor.rest, cursor.len, cursor.left);
    let mut out = [MaybeUninit::<dw_row>::uninit(); 4];
    let mut take = |capacity| {
        let (mut filled, mut error) = (0, no_error());
        // SAFETY: locals and the held frame.
        let r = unsafe {
            dw_rows_next_batch(
                &mut cursor,
                out.as_mut_ptr().cast(),
                capacity,
                &mut filled,
                &mut error,
            )
        };
        (r, error.reason, message(&error))
    };
    let invalid = dw_result::DW_RESULT_INVALID_ARGUMENT;
    let (r, reason, _) = take(4);
    assert_eq!((r, reason), (invalid, dw_invalid::DW_INVALID_CURSOR as u32));
    // A capacity of 0 is said as what it is, not as a value outside an enum.
    let (r, reason, said) = take(0);
    assert_eq!(
        (r, reason),
        (invalid, dw_invalid::DW_INVALID_CAPACITY as u32)
    );
    assert!(said.starts_with("a batch of capacity 0"), "{said}");
    assert_eq!((cursor.rest, cursor.len, cursor.left), before);
}

/// What `dw_stream_end` says of `rest`.
fn stream_end(rest: &[u8], preamble_read: u32) -> (dw_result, dw_error) {
    let mut error = no_error();
    // SAFETY: `rest` is held for the call.
    let r = unsafe { dw_stream_end(rest.as_ptr(), rest.len(), preamble_read, &mut error) };
    (r, error)
}

#[test]
fn a_stream_cut_anywhere_ends_in_the_tools_sentence() {
    let stream = include_bytes!("../../../testdata/sample.dwr");
    let cuts: Vec<usize> = match cfg!(miri) {
        true => vec![0, 5, 14, 15, 18, 40, stream.len()],
        false => (0..=stream.len()).collect(),
    };
    for cut in cuts {
        let bytes = &stream[..cut];
        // The tool's reader over the same bytes: its sentence, or a clean end.
        let mut reader = dendro_wire_std::FrameReader::new(bytes);
        let told = loop {
            match reader.as_mut().map_err(|e| e.to_string()) {
                Err(e) => break Some(e),
                Ok(r) => match r.next_frame() {
                    Ok(Some(_)) => continue,
                    Ok(None) => break None,
                    Err(e) => break Some(e.to_string()),
                },
            }
        };
        // The C surface: the preamble, each whole frame, then the end.
        let (mut at, mut preamble_read) = (0, 0);
        let (r, error) = loop {
            let (mut used, mut needed) = (0, 0);
            let rest = &bytes[at..];
            let r = if preamble_read == 0 {
                // SAFETY: locals and the held bytes.
                unsafe {
                    dw_check_preamble(
                        rest.as_ptr(),
                        rest.len(),
                        &mut used,
                        &mut needed,
                        null_mut(),
                    )
                }
            } else {
                decode(rest).result
            };
            match r {
                dw_result::DW_RESULT_OK if preamble_read == 0 => (at, preamble_read) = (used, 1),
                dw_result::DW_RESULT_OK => at += decode(rest).consumed,
                dw_result::DW_RESULT_INCOMPLETE => break stream_end(rest, preamble_read),
                other => panic!("{cut}: {other:?}"),
            }
        };
        match told {
            None => assert_eq!(r, dw_result::DW_RESULT_OK, "{cut}"),
            Some(told) => {
                assert_eq!(r, dw_result::DW_RESULT_TRUNCATED, "{cut}");
                // The tool says where first: the preamble, or the frame.
                let (_, sentence) = told.split_once(": ").expect("a place, then the sentence");
                assert_eq!(message(&error), sentence, "{cut}");
            }
        }
    }
    // Bytes that hold a whole frame are no cut; a length of zero breaks
    // a rule; a value other than 0 or 1 is refused.
    let hs = frame_bytes(&handshake(0));
    let (r, error) = stream_end(&hs, 1);
    assert_eq!(
        (r, error.reason),
        (
            dw_result::DW_RESULT_INVALID_ARGUMENT,
            dw_invalid::DW_INVALID_NOT_CUT as u32
        )
    );
    let (r, _) = stream_end(&PREAMBLE, 0);
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
    let (r, _) = stream_end(&[0, 0, 0, 0, 1], 1);
    assert_eq!(r, dw_result::DW_RESULT_MALFORMED);
    let (r, _) = stream_end(&[], 2);
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
    // SAFETY: nothing is read when there is nothing.
    assert_eq!(
        unsafe { dw_stream_end(null(), 0, 1, null_mut()) },
        dw_result::DW_RESULT_OK
    );
}

const LABELS: [(&str, &str); 1] = [("host", "big-01")];

/// A source of these streams, with an index, as C declares it: the
/// arrays must outlive the declaration's use.
fn c_decl(streams: &[dw_str], labels: &[dw_pair]) -> dw_source_decl {
    dw_source_decl {
        uuid: NO_STR,
        labels: labels.as_ptr(),
        labels_len: labels.len(),
        metadata: null(),
        metadata_len: 0,
        clock_anchor_wall_ns: 7,
        complete: 0,
        streams: streams.as_ptr(),
        streams_len: streams.len(),
        index_stream: s("cpu/slots"),
    }
}

fn c_labels() -> Vec<dw_pair> {
    LABELS
        .iter()
        .map(|(k, v)| dw_pair {
            key: s(k),
            value: s(v),
        })
        .collect()
}

/// What `dw_source_decl` says a source of these streams needs.
fn declare_and_size(names: &[String], budget: &Budget) -> (dw_result, dw_sizing) {
    let streams: Vec<dw_str> = names.iter().map(|n| s(n)).collect();
    let labels = c_labels();
    let decl = c_decl(&streams, &labels);
    let b = dw_budget {
        largest_row: budget.largest_row,
        rows_per_interval: budget.rows_per_interval,
        slots: budget.slots,
        largest_slot: budget.largest_slot,
        slot_changes_per_interval: budget.slot_changes_per_interval,
    };
    let mut sizing = dw_sizing {
        storage: 0,
        frame_buffer: 0,
        latest_rows: 0,
    };
    // SAFETY: locals, every array its stated length.
    let r = unsafe { dw_source_sizing(&decl, &b, &mut sizing, null_mut()) };
    (r, sizing)
}

#[test]
fn sizing_from_c_is_the_cores_and_a_big_host_declares_its_cpus() {
    let budget = Budget::rows(68, 256).with_slots(256, 24, 8);
    let sizes: &[usize] = if cfg!(miri) { &[1, 32] } else { &[1, 32, 256] };
    for &n in sizes {
        let names: Vec<String> = (0..n).map(|c| format!("cpu{c}/ticks")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let core = SourceDecl {
            uuid: None,
            labels: Map::from_pairs(&LABELS),
            metadata: Map::EMPTY,
            clock_anchor_wall_ns: 7,
            complete: false,
            streams: &refs,
            index_stream: Some("cpu/slots"),
        }
        .sizing(&budget);
        let (r, c) = declare_and_size(&names, &budget);
        assert_eq!(r, dw_result::DW_RESULT_OK, "{n}");
        assert_eq!(
            (c.storage, c.frame_buffer, c.latest_rows),
            (core.storage, core.frame_buffer, core.latest_rows),
            "{n} streams"
        );

        // Declared in exactly that storage, with that frame buffer.
        let own = Raw::new(PUBLISHER_BYTES);
        let config = dw_publisher_config {
            full_every: 4,
            frame_buffer: c.frame_buffer,
        };
        let (r, p, _) = publisher(&own, &config);
        assert_eq!(r, dw_result::DW_RESULT_OK);
        let streams: Vec<dw_str> = names.iter().map(|n| s(n)).collect();
        let labels = c_labels();
        let decl = c_decl(&streams, &labels);
        let source_storage = Raw::new(c.storage);
        let (mut ordinal, mut error) = (u32::MAX, no_error());
        // SAFETY: the storage outlives the publisher, which is released
        // before it is dropped.
        unsafe {
            let r = dw_publisher_add_source(
                p,
                &decl,
                source_storage.at(),
                c.storage,
                &mut ordinal,
                &mut error,
            );
            assert_eq!(r, dw_result::DW_RESULT_OK, "{n}: {}", message(&error));
            assert_eq!(dw_publisher_release(p, null_mut()), dw_result::DW_RESULT_OK);
        }
    }
    let names: Vec<String> = (0..DW_MAX_STREAMS + 1).map(|c| format!("s{c}")).collect();
    assert_eq!(
        declare_and_size(&names, &budget).0,
        dw_result::DW_RESULT_INVALID_ARGUMENT
    );
}

#[test]
fn the_library_says_which_it_is() {
    assert_eq!(dw_version(), DW_VERSION);
    assert_eq!(
        DW_VERSION,
        (env!("CARGO_PKG_VERSION_MAJOR").parse::<u32>().unwrap() << 16)
            | (env!("CARGO_PKG_VERSION_MINOR").parse::<u32>().unwrap() << 8)
            | env!("CARGO_PKG_VERSION_PATCH").parse::<u32>().unwrap()
    );
    assert_eq!(dw_abi_version(), DW_ABI_VERSION);
    assert_eq!(dw_preamble, PREAMBLE);
    assert_eq!(
        size_of::<dw_row>(),
        48,
        "a row view is pointers and two i64s"
    );
}
