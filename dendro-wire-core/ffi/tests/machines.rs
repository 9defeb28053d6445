//! The subscriber and the publisher through the C surface: the same
//! verdicts, bytes and counts as the core's own machines on the same
//! calls, the slow-link semantics unchanged (a reading is never refused
//! because frames wait; a frame not polled in time is dropped and
//! counted), and every handle, storage and buffer C can get wrong refused.

mod common;

use core::ffi::c_void;
use core::mem::MaybeUninit;
use core::ptr::{null, null_mut};

use dendro_wire_core::{
    decode as core_decode, Admitted, Frame, Map, Publisher, PublisherConfig, SkipReason,
    SourceDecl, SourceId, Status, Subscriber,
};
use dendro_wire_ffi::*;
use dendro_wire_test_support::dendro_map::with_view;
use dendro_wire_test_support::fixtures::frame_bytes;
use dendro_wire_test_support::gen::Gen;
use dendro_wire_test_support::xorshift::XorShift;

use common::*;

#[repr(C, align(8))]
struct SubscriberStorage([u8; SUBSCRIBER_BYTES]);

/// The sources the tests' subscribers allow, and the storage that takes.
const SUBSCRIBER_SOURCES: u32 = 8;
const SUBSCRIBER_BYTES: usize =
    SUBSCRIBER_HEAD + SUBSCRIBER_SOURCES as usize * DW_SUBSCRIBER_SOURCE_BYTES;

const SOURCE_BYTES: usize = 2048;

fn subscriber(storage: &mut SubscriberStorage) -> *mut dw_subscriber {
    let mut handle = null_mut();
    // SAFETY: the storage is the test's, lent for the subscriber's life.
    let r = unsafe {
        dw_subscriber_init(
            storage.0.as_mut_ptr().cast(),
            SUBSCRIBER_BYTES,
            SUBSCRIBER_SOURCES,
            &mut handle,
            null_mut(),
        )
    };
    assert_eq!(r, dw_result::DW_RESULT_OK);
    handle
}

/// The C verdict's fields, as the core's verdict has them.
fn expected(a: Admitted, kind: u8) -> dw_admitted {
    use dw_admitted_kind::*;
    let mut v = dw_admitted {
        kind: DW_ADMITTED_APPLY,
        source: 0,
        frame_kind: kind,
        index_kind: 0,
        skip: dw_skip_reason::DW_SKIP_NONE,
        held: [0; 2],
        declared: [0; 2],
        lost: 0,
        first_gap: false,
        regression: false,
    };
    match a {
        Admitted::Opened { source } => (v.kind, v.source) = (DW_ADMITTED_OPENED, source),
        Admitted::Index { source, kind } => {
            (v.kind, v.source, v.index_kind) = (DW_ADMITTED_INDEX, source, kind.to_byte().into())
        }
        Admitted::Rows(r) => {
            (v.kind, v.source) = (DW_ADMITTED_ROWS, r.source);
            (v.lost, v.first_gap, v.regression) = (r.lost, r.first_gap, r.regression);
            match r.skip {
                None => {}
                Some(SkipReason::BeforeFirstFull) => {
                    v.skip = dw_skip_reason::DW_SKIP_BEFORE_FIRST_FULL
                }
                Some(SkipReason::IndexStateMismatch { held, declared }) => {
                    v.skip = dw_skip_reason::DW_SKIP_INDEX_STATE_MISMATCH;
                    (v.held, v.declared) = ([held.0, held.1], [declared.0, declared.1]);
                }
            }
        }
        Admitted::Apply { source } => v.source = source,
        Admitted::Unknown { .. } => v.kind = DW_ADMITTED_UNKNOWN,
    }
    v
}

/// Feed `frames` to the C subscriber and the core's, in order; returns
/// how many each refused.
fn judge_both(frames: &[Vec<u8>]) -> usize {
    let mut storage = SubscriberStorage([0; SUBSCRIBER_BYTES]);
    let c = subscriber(&mut storage);
    let mut rust = Subscriber::<{ SUBSCRIBER_SOURCES as usize }>::new();
    let mut refused = 0;
    for bytes in frames {
        let Ok(Status::Complete((frame, _))) = core_decode(bytes) else {
            panic!("a whole frame")
        };
        let decoded = decode(bytes);
        let (mut verdict, mut error) = (MaybeUninit::uninit(), no_error());
        // SAFETY: the handle is live; the frame's buffer is held.
        let r =
            unsafe { dw_subscriber_admit(c, decoded.frame(), verdict.as_mut_ptr(), &mut error) };
        match rust.admit(&frame) {
            Ok(a) => {
                assert_eq!(r, dw_result::DW_RESULT_OK);
                // SAFETY: written, as the call said OK.
                let got = unsafe { verdict.assume_init() };
                assert_eq!(got, expected(a, frame.kind()));
            }
            Err(e) => {
                assert_eq!(r, dw_result::DW_RESULT_PROTOCOL_ERROR);
                assert_eq!(message(&error), e.to_string());
                refused += 1;
            }
        }
        let mut count = u32::MAX;
        // SAFETY: live handle and local.
        assert_eq!(
            unsafe { dw_subscriber_source_count(c, &mut count, null_mut()) },
            dw_result::DW_RESULT_OK
        );
        assert_eq!(count as usize, rust.source_count());
    }
    refused
}

#[test]
fn the_subscriber_judges_as_the_core_does() {
    // Generated frames of every kind, few sources so that many are judged
    // past their handshake, and many refused before it.
    let mut g = Gen::new(11);
    let n = if cfg!(miri) { 30 } else { 600 };
    let frames: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let bytes = with_view(&g.frame(), frame_bytes);
            let mut bytes = bytes;
            bytes[5..9].copy_from_slice(&(g.below(3) as u32).to_le_bytes());
            bytes
        })
        .filter(|b| core_decode(b).is_ok_and(|s| s.is_complete()))
        .collect();
    let refused = judge_both(&frames);
    assert!(
        refused > 0 && refused < frames.len(),
        "both paths taken: {refused}"
    );
    // A publisher's stream: every verdict an apply, none refused.
    assert_eq!(judge_both(&core_stream()), 0);
}

#[test]
fn a_subscriber_handle_is_checked_on_every_call() {
    let mut storage = SubscriberStorage([0; SUBSCRIBER_BYTES]);
    let mut handle = null_mut();
    let mut error = no_error();
    let at = storage.0.as_mut_ptr().cast::<c_void>();
    // SAFETY: every pointer live or null, the lengths the storage's own.
    unsafe {
        let small = dw_subscriber_size(SUBSCRIBER_SOURCES) - 1;
        let r = dw_subscriber_init(at, small, SUBSCRIBER_SOURCES, &mut handle, &mut error);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        assert_eq!(
            error.reason,
            dw_invalid::DW_INVALID_STORAGE_TOO_SMALL as u32
        );
        let odd = at.cast::<u8>().add(1).cast();
        let r = dw_subscriber_init(
            odd,
            SUBSCRIBER_BYTES - 1,
            SUBSCRIBER_SOURCES,
            &mut handle,
            &mut error,
        );
        assert_eq!(error.reason, dw_invalid::DW_INVALID_MISALIGNED as u32);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        let r = dw_subscriber_init(
            null_mut(),
            SUBSCRIBER_BYTES,
            SUBSCRIBER_SOURCES,
            &mut handle,
            null_mut(),
        );
        assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER);
        let r = dw_subscriber_init(at, SUBSCRIBER_BYTES, SUBSCRIBER_SOURCES, nul(), null_mut());
        assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER);
        // Memory that was never a subscriber is not one.
        let mut count = 0;
        let r = dw_subscriber_source_count(at.cast(), &mut count, null_mut());
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        // Made, then released: refused from then on.
        let c = subscriber(&mut storage);
        assert_eq!(dw_subscriber_reset(c, null_mut()), dw_result::DW_RESULT_OK);
        assert_eq!(
            dw_subscriber_release(c, null_mut()),
            dw_result::DW_RESULT_OK
        );
        assert_eq!(
            dw_subscriber_reset(c, null_mut()),
            dw_result::DW_RESULT_INVALID_ARGUMENT
        );
        assert_eq!(
            dw_subscriber_release(c, null_mut()),
            dw_result::DW_RESULT_INVALID_ARGUMENT
        );
        assert_eq!(
            dw_subscriber_reset(null_mut(), null_mut()),
            dw_result::DW_RESULT_NULL_PARAMETER
        );
        let frame = decode(&core_stream()[0]);
        let mut verdict = MaybeUninit::uninit();
        let c = subscriber(&mut storage);
        let r = dw_subscriber_admit(c, null(), verdict.as_mut_ptr(), null_mut());
        assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER);
        let r = dw_subscriber_admit(c, frame.frame(), nul(), null_mut());
        assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER);
        // A frame whose kind C overwrote with a value outside the enum.
        let mut forged = *frame.frame();
        forged.kind = 99;
        let r = dw_subscriber_admit(c, &forged, verdict.as_mut_ptr(), &mut error);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        assert_eq!(error.reason, dw_invalid::DW_INVALID_VALUE as u32);
    }
}

const STREAMS: [&str; 2] = ["cpu", "mem"];
const LABELS: [(&str, &str); 1] = [("host", "a")];
const UUID: &str = "0123abcd-0000-4000-8000-00000000cafe";

fn rust_decl() -> SourceDecl<'static> {
    SourceDecl {
        uuid: Some(UUID),
        labels: Map::from_pairs(&LABELS),
        metadata: Map::EMPTY,
        clock_anchor_wall_ns: 7,
        complete: false,
        streams: &STREAMS,
        index_stream: Some("ix"),
    }
}

const CONFIG: dw_publisher_config = dw_publisher_config {
    full_every: 4,
    frame_buffer: 512,
};

/// One C publisher, its storage and its source's, held for its life as
/// raw pointers (as C holds them: a Box moved would retag its bytes, and
/// void the pointers the publisher keeps).
struct CPublisher {
    handle: *mut dw_publisher,
    own: *mut PublisherStorage,
    source: *mut [u8; SOURCE_BYTES],
}

impl Drop for CPublisher {
    fn drop(&mut self) {
        // SAFETY: both came from Box::into_raw, and are freed once.
        unsafe {
            drop(Box::from_raw(self.own));
            drop(Box::from_raw(self.source));
        }
    }
}

fn c_publisher() -> CPublisher {
    let own = Box::into_raw(Box::new(PublisherStorage([0; PUBLISHER_BYTES])));
    let source = Box::into_raw(Box::new([0u8; SOURCE_BYTES]));
    let mut handle = null_mut();
    let labels = [dw_pair {
        key: s(LABELS[0].0),
        value: s(LABELS[0].1),
    }];
    let streams = [s(STREAMS[0]), s(STREAMS[1])];
    let decl = dw_source_decl {
        uuid: s(UUID),
        labels: labels.as_ptr(),
        labels_len: 1,
        metadata: null(),
        metadata_len: 0,
        clock_anchor_wall_ns: 7,
        complete: 0,
        streams: streams.as_ptr(),
        streams_len: 2,
        index_stream: s("ix"),
    };
    let mut ordinal = u32::MAX;
    // SAFETY: the storages live until the CPublisher is dropped, touched
    // only through the handle; the rest are live locals.
    unsafe {
        let r = dw_publisher_init(
            own.cast(),
            PUBLISHER_BYTES,
            PUBLISHER_SOURCES,
            &CONFIG,
            &mut handle,
            null_mut(),
        );
        assert_eq!(r, dw_result::DW_RESULT_OK);
        let r = dw_publisher_add_source(
            handle,
            &decl,
            source.cast(),
            SOURCE_BYTES,
            &mut ordinal,
            null_mut(),
        );
        assert_eq!(r, dw_result::DW_RESULT_OK);
    }
    assert_eq!(ordinal, 0);
    CPublisher {
        handle,
        own,
        source,
    }
}

type Rust = Publisher<[u8; SOURCE_BYTES], { PUBLISHER_SOURCES as usize }>;

fn rust_publisher() -> (Rust, SourceId) {
    let mut p = Rust::new(PublisherConfig {
        full_every: CONFIG.full_every,
        frame_buffer: CONFIG.frame_buffer,
    });
    let id = p.add_source(&rust_decl(), [0; SOURCE_BYTES]).unwrap();
    (p, id)
}

fn c_stats(p: *mut dw_publisher) -> dw_stats {
    let mut st = MaybeUninit::uninit();
    // SAFETY: a live handle and local.
    assert_eq!(
        unsafe { dw_publisher_stats(p, st.as_mut_ptr(), null_mut()) },
        dw_result::DW_RESULT_OK
    );
    // SAFETY: written, as the call said OK.
    unsafe { st.assume_init() }
}

/// One step of a workload, done to both publishers.
#[derive(Clone, Copy, Debug)]
enum Step {
    Observe(u32, i64),
    SetSlot(u8),
    RemoveSlot(u8),
    EndInterval,
    /// Poll this many frames (a slow link polls fewer than are due).
    Poll(usize),
    Connected,
    Disconnected,
    DropWaiting,
}

fn workload(seed: u64, n: usize) -> Vec<Step> {
    let mut x = XorShift::new(seed);
    let mut steps = vec![Step::Connected];
    for i in 0..n as i64 {
        steps.push(match x.next_u64() % 20 {
            0..=8 => Step::Observe((x.next_u64() % 2) as u32, i),
            9 | 10 => Step::SetSlot((x.next_u64() % 5) as u8),
            11 => Step::RemoveSlot((x.next_u64() % 5) as u8),
            12..=14 => Step::EndInterval,
            15..=17 => Step::Poll((x.next_u64() % 4) as usize),
            18 => match x.next_u64() % 2 {
                0 => Step::Connected,
                _ => Step::Disconnected,
            },
            _ => Step::DropWaiting,
        });
    }
    steps
}

/// Do `step` to both; the frames each polled must be the same bytes.
fn step_both(c: *mut dw_publisher, (rust, id): (&mut Rust, SourceId), step: Step) -> usize {
    let mut error = no_error();
    let key = |k: u8| [b'k', b'0' + k];
    // SAFETY (every call): a live handle, live locals and slices of their
    // true lengths.
    unsafe {
        match step {
            Step::Observe(stream, ts) => {
                let row = ts.to_le_bytes();
                let r = dw_publisher_observe(c, 0, stream, ts, 1, row.as_ptr(), 8, &mut error);
                let want = rust.observe(id.stream(stream), ts, 1, &row);
                assert_eq!(r == dw_result::DW_RESULT_OK, want.is_ok(), "{step:?}");
            }
            Step::SetSlot(k) => {
                let (key, value) = (key(k), [k; 3]);
                let r = dw_publisher_set_slot(c, 0, key.as_ptr(), 2, value.as_ptr(), 3, &mut error);
                let want = rust.set_slot(id, &key, &value);
                assert_eq!(r == dw_result::DW_RESULT_OK, want.is_ok(), "{step:?}");
            }
            Step::RemoveSlot(k) => {
                let key = key(k);
                let r = dw_publisher_remove_slot(c, 0, key.as_ptr(), 2, &mut error);
                let want = rust.remove_slot(id, &key);
                assert_eq!(r == dw_result::DW_RESULT_OK, want.is_ok(), "{step:?}");
            }
            Step::EndInterval => {
                assert_eq!(
                    dw_publisher_end_interval(c, null_mut()),
                    dw_result::DW_RESULT_OK
                );
                rust.end_interval();
            }
            Step::Connected => {
                assert_eq!(
                    dw_publisher_connected(c, null_mut()),
                    dw_result::DW_RESULT_OK
                );
                rust.connected();
            }
            Step::Disconnected => {
                assert_eq!(
                    dw_publisher_disconnected(c, null_mut()),
                    dw_result::DW_RESULT_OK
                );
                rust.disconnected();
            }
            Step::DropWaiting => {
                assert_eq!(
                    dw_publisher_drop_waiting(c, null_mut()),
                    dw_result::DW_RESULT_OK
                );
                rust.drop_waiting();
            }
            Step::Poll(n) => {
                let (mut ours, mut theirs) = ([0u8; 512], [0u8; 512]);
                for polled in 0..n {
                    let mut t = MaybeUninit::uninit();
                    let r =
                        dw_publisher_poll(c, ours.as_mut_ptr(), 512, t.as_mut_ptr(), &mut error);
                    let want = rust.poll_transmit(&mut theirs).unwrap();
                    let Some((bytes, tr)) = want else {
                        assert_eq!(r, dw_result::DW_RESULT_DONE);
                        return polled;
                    };
                    assert_eq!(r, dw_result::DW_RESULT_OK);
                    let t = t.assume_init();
                    assert_eq!(
                        (t.len, t.kind, t.source, t.rows),
                        (tr.len, tr.kind, tr.source, tr.rows)
                    );
                    assert_eq!(&ours[..t.len], bytes, "the same frame, byte for byte");
                }
                return n;
            }
        }
    }
    0
}

fn same_counts(c: *mut dw_publisher, rust: &Rust) {
    let (st, want) = (c_stats(c), rust.stats());
    let got = [
        st.intervals,
        st.connections,
        st.frames_sent,
        st.rows_observed,
        st.rows_sent,
        st.rows_repeated,
        st.frames_dropped,
        st.rows_dropped,
        st.frames_unsent,
        st.rows_unsent,
        st.rows_refused,
        st.slot_changes_refused,
    ];
    let wanted = [
        want.intervals,
        want.connections,
        want.frames_sent,
        want.rows_observed,
        want.rows_sent,
        want.rows_repeated,
        want.frames_dropped,
        want.rows_dropped,
        want.frames_unsent,
        want.rows_unsent,
        want.rows_refused,
        want.slot_changes_refused,
    ];
    assert_eq!(got, wanted);
    let mut w = MaybeUninit::uninit();
    // SAFETY: a live handle and local.
    assert_eq!(
        unsafe { dw_publisher_waiting(c, w.as_mut_ptr(), null_mut()) },
        dw_result::DW_RESULT_OK
    );
    // SAFETY: written, as the call said OK.
    let w = unsafe { w.assume_init() };
    let want = rust.waiting();
    assert_eq!(
        (w.frames, w.bytes, w.rows),
        (want.frames, want.bytes, want.rows)
    );
}

#[test]
fn the_publisher_sends_what_the_cores_sends_on_a_slow_link_too() {
    let n = if cfg!(miri) { 250 } else { 3000 };
    let mut dropped = 0;
    // Under Miri, one seed whose link both carries and drops frames.
    let seeds = if cfg!(miri) { 4..=4 } else { 1..=8 };
    for seed in seeds {
        let c = c_publisher();
        let (mut rust, id) = rust_publisher();
        for step in workload(seed, n) {
            step_both(c.handle, (&mut rust, id), step);
            same_counts(c.handle, &rust);
        }
        dropped += c_stats(c.handle).frames_dropped;
    }
    assert!(dropped > 0, "the slow link dropped frames");
}

/// Poll one frame: whether there was one.
fn poll_one(c: *mut dw_publisher, buf: &mut [u8; 512]) -> bool {
    let mut t = MaybeUninit::uninit();
    // SAFETY: a live handle and locals.
    let r = unsafe { dw_publisher_poll(c, buf.as_mut_ptr(), 512, t.as_mut_ptr(), null_mut()) };
    assert!(
        matches!(r, dw_result::DW_RESULT_OK | dw_result::DW_RESULT_DONE),
        "{r:?}"
    );
    r == dw_result::DW_RESULT_OK
}

#[test]
fn a_reading_is_never_refused_because_frames_wait() {
    let c = c_publisher();
    let mut buf = [0u8; 512];
    // SAFETY: a live handle and locals.
    unsafe {
        assert_eq!(
            dw_publisher_connected(c.handle, null_mut()),
            dw_result::DW_RESULT_OK
        );
        for interval in 0..4u8 {
            for ts in 0..4 {
                let row = [interval; 4];
                let r = dw_publisher_observe(c.handle, 0, 0, ts, 0, row.as_ptr(), 4, null_mut());
                assert_eq!(
                    r,
                    dw_result::DW_RESULT_OK,
                    "frames wait, the reading is taken"
                );
            }
            assert_eq!(
                dw_publisher_end_interval(c.handle, null_mut()),
                dw_result::DW_RESULT_OK
            );
            // The link carries the connection's opening, then nothing.
            while interval == 0 && poll_one(c.handle, &mut buf) {}
        }
    }
    let st = c_stats(c.handle);
    assert_eq!(
        (st.rows_observed, st.rows_sent, st.rows_refused),
        (16, 4, 0)
    );
    assert_eq!(
        (st.frames_dropped, st.rows_dropped),
        (2, 8),
        "two intervals' Rows lost"
    );
    let mut w = MaybeUninit::uninit();
    // SAFETY: a live handle and local.
    unsafe { dw_publisher_waiting(c.handle, w.as_mut_ptr(), null_mut()) };
    // SAFETY: written by the call.
    let w = unsafe { w.assume_init() };
    assert_eq!(
        (w.frames, w.rows),
        (1, 4),
        "the last interval's frame is due"
    );
}

#[test]
fn a_short_poll_buffer_keeps_the_frame_due() {
    let c = c_publisher();
    let mut buf = [0u8; 512];
    let (mut len, mut t, mut error) = (0usize, MaybeUninit::uninit(), no_error());
    // SAFETY: a live handle and locals, lengths at most the buffer's.
    unsafe {
        dw_publisher_connected(c.handle, null_mut());
        dw_publisher_end_interval(c.handle, null_mut());
        assert_eq!(
            dw_publisher_next_frame_len(c.handle, &mut len, null_mut()),
            dw_result::DW_RESULT_OK
        );
        let r = dw_publisher_poll(
            c.handle,
            buf.as_mut_ptr(),
            len - 1,
            t.as_mut_ptr(),
            &mut error,
        );
        assert_eq!(r, dw_result::DW_RESULT_BUFFER_TOO_SMALL);
        assert_eq!(error.values[0], len as u64, "the size needed");
        let mut again = 0;
        dw_publisher_next_frame_len(c.handle, &mut again, null_mut());
        assert_eq!(again, len, "still due");
        let r = dw_publisher_poll(c.handle, buf.as_mut_ptr(), len, t.as_mut_ptr(), &mut error);
        assert_eq!(r, dw_result::DW_RESULT_OK);
        assert_eq!(t.assume_init().len, len);
        // A buffer over the publisher's own storage is refused.
        let own = c.handle.cast::<u8>();
        let r = dw_publisher_poll(c.handle, own, 64, t.as_mut_ptr(), &mut error);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        assert_eq!(error.reason, dw_invalid::DW_INVALID_OVERLAP as u32);
    }
}

#[test]
fn a_publisher_refuses_what_c_can_get_wrong() {
    let c = c_publisher();
    let mut error = no_error();
    let mut ordinal = 0;
    let bad = [0xffu8, 0xfe];
    let bad_stream = [dw_str {
        ptr: bad.as_ptr().cast(),
        len: 2,
    }];
    let mut decl = c_source_decl(&bad_stream, NO_STR);
    let mut storage = [0u8; SOURCE_BYTES];
    let at = storage.as_mut_ptr().cast::<c_void>();
    // SAFETY: a live handle and locals; each refused before use.
    unsafe {
        let r =
            dw_publisher_add_source(c.handle, &decl, at, SOURCE_BYTES, &mut ordinal, &mut error);
        assert_eq!(
            (r, error.reason),
            (
                dw_result::DW_RESULT_INVALID_ARGUMENT,
                dw_invalid::DW_INVALID_NOT_UTF8 as u32
            )
        );
        decl.streams_len = DW_MAX_STREAMS + 1;
        let r =
            dw_publisher_add_source(c.handle, &decl, at, SOURCE_BYTES, &mut ordinal, &mut error);
        assert_eq!(error.reason, dw_invalid::DW_INVALID_TOO_MANY as u32);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        assert_eq!(error.values[0], dw_param::DW_PARAM_DECL_STREAMS as u64);
        assert!(
            message(&error).starts_with("decl->streams has more entries than the C API takes"),
            "{}",
            message(&error)
        );
        decl.streams_len = 0;
        decl.complete = 2;
        let r =
            dw_publisher_add_source(c.handle, &decl, at, SOURCE_BYTES, &mut ordinal, &mut error);
        assert_eq!(error.reason, dw_invalid::DW_INVALID_VALUE as u32);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        decl.complete = 0;
        // Storage over the publisher's own.
        let own = c.handle.cast::<c_void>();
        let r = dw_publisher_add_source(c.handle, &decl, own, 64, &mut ordinal, &mut error);
        assert_eq!(error.reason, dw_invalid::DW_INVALID_OVERLAP as u32);
        assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT);
        let r =
            dw_publisher_add_source(c.handle, null(), at, SOURCE_BYTES, &mut ordinal, null_mut());
        assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER);
        // An ordinal never given.
        let r = dw_publisher_observe(c.handle, 3, 0, 0, 0, bad.as_ptr(), 2, &mut error);
        assert_eq!(r, dw_result::DW_RESULT_REFUSED);
        assert!(message(&error).contains('3'), "{}", message(&error));
        let r = dw_publisher_observe(c.handle, 0, 0, 0, 0, null(), 2, null_mut());
        assert_eq!(r, dw_result::DW_RESULT_NULL_PARAMETER);
        // A subscriber's handle is not a publisher's.
        let mut sub = SubscriberStorage([0; SUBSCRIBER_BYTES]);
        let other = subscriber(&mut sub).cast::<dw_publisher>();
        assert_eq!(
            dw_publisher_end_interval(other, null_mut()),
            dw_result::DW_RESULT_INVALID_ARGUMENT
        );
        assert_eq!(
            dw_publisher_end_interval(null_mut(), null_mut()),
            dw_result::DW_RESULT_NULL_PARAMETER
        );
        // Released: refused from then on.
        assert_eq!(
            dw_publisher_release(c.handle, null_mut()),
            dw_result::DW_RESULT_OK
        );
        assert_eq!(
            dw_publisher_end_interval(c.handle, null_mut()),
            dw_result::DW_RESULT_INVALID_ARGUMENT
        );
    }
}

/// The frames a core publisher sends on one connection, each whole.
fn core_stream() -> Vec<Vec<u8>> {
    let (mut p, id) = rust_publisher();
    p.connected();
    p.set_slot(id, b"k", b"v").unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    for ts in 0..3 {
        p.observe(id.stream(0), ts, 0, b"row").unwrap();
        p.end_interval();
        while let Some((bytes, _)) = p.poll_transmit(&mut buf).unwrap() {
            out.push(bytes.to_vec());
        }
    }
    assert!(out
        .iter()
        .any(|b| matches!(core_decode(b), Ok(Status::Complete((Frame::Index(_), _))))));
    out
}
