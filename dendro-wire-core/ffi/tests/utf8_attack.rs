//! Every string a C caller declares a source with is checked to be
//! UTF-8 exactly as Rust's `core::str::from_utf8` checks it: overlong
//! forms, surrogates, code points past U+10FFFF, sequences cut at the end
//! or in the middle, and lone continuation bytes are refused
//! (`DW_INVALID_NOT_UTF8`, every field of `dw_error` as documented and a
//! sentence that names the string, as `decl->labels[1].value`), at every
//! place a string goes (the uuid, a label's or a
//! metadata entry's key and value, a stream name, the index stream), by
//! `dw_publisher_add_source` and `dw_source_sizing` alike; the largest
//! valid forms, NULs inside a string and every valid string are taken and
//! come back byte for byte in the frames the publisher sends. Each string
//! ends where a guard page begins, so a check that reads one byte past a
//! cut sequence faults.

mod common;
mod hostile;

use core::ptr::null_mut;

use dendro_wire_ffi::*;
use dendro_wire_test_support::xorshift::XorShift;

use common::*;
use hostile::*;

/// Where in a declaration the string under test goes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Place {
    Uuid,
    LabelKey,
    LabelValue,
    SecondLabelValue,
    MetadataKey,
    MetadataValue,
    Stream,
    SecondStream,
    IndexStream,
}

const PLACES: [Place; 9] = [
    Place::Uuid,
    Place::LabelKey,
    Place::LabelValue,
    Place::SecondLabelValue,
    Place::MetadataKey,
    Place::MetadataValue,
    Place::Stream,
    Place::SecondStream,
    Place::IndexStream,
];

impl Place {
    /// The parameter a refusal of the string here names, its place in its
    /// array (-1 for none) and the name its sentence says.
    fn named(self) -> (dw_param, i64, &'static str) {
        use dw_param::*;
        match self {
            Place::Uuid => (DW_PARAM_DECL_UUID, -1, "decl->uuid"),
            Place::LabelKey => (DW_PARAM_DECL_LABEL_KEY, 0, "decl->labels[0].key"),
            Place::LabelValue => (DW_PARAM_DECL_LABEL_VALUE, 0, "decl->labels[0].value"),
            Place::SecondLabelValue => (DW_PARAM_DECL_LABEL_VALUE, 1, "decl->labels[1].value"),
            Place::MetadataKey => (DW_PARAM_DECL_METADATA_KEY, 0, "decl->metadata[0].key"),
            Place::MetadataValue => (DW_PARAM_DECL_METADATA_VALUE, 0, "decl->metadata[0].value"),
            Place::Stream => (DW_PARAM_DECL_STREAM_NAME, 0, "decl->streams[0]"),
            Place::SecondStream => (DW_PARAM_DECL_STREAM_NAME, 1, "decl->streams[1]"),
            Place::IndexStream => (DW_PARAM_DECL_INDEX_STREAM, -1, "decl->index_stream"),
        }
    }
}

/// A declaration's arrays, held while a `dw_source_decl` points at them.
struct Built {
    uuid: dw_str,
    labels: Vec<dw_pair>,
    metadata: Vec<dw_pair>,
    streams: Vec<dw_str>,
    index: dw_str,
}

fn pair(key: dw_str, value: dw_str) -> dw_pair {
    dw_pair { key, value }
}

impl Built {
    /// A declaration whose only string under test is `text`, at `place`;
    /// every other string plain ASCII.
    fn with(place: Place, text: dw_str) -> Built {
        let mut b = Built {
            uuid: NO_STR,
            labels: Vec::new(),
            metadata: Vec::new(),
            streams: vec![s("s")],
            index: NO_STR,
        };
        match place {
            Place::Uuid => b.uuid = text,
            Place::LabelKey => b.labels.push(pair(text, s("v"))),
            Place::LabelValue => b.labels.push(pair(s("k"), text)),
            Place::SecondLabelValue => {
                b.labels.push(pair(s("a"), s("v")));
                b.labels.push(pair(s("b"), text));
            }
            Place::MetadataKey => b.metadata.push(pair(text, s("v"))),
            Place::MetadataValue => b.metadata.push(pair(s("k"), text)),
            Place::Stream => b.streams[0] = text,
            Place::SecondStream => b.streams.push(text),
            Place::IndexStream => b.index = text,
        }
        b
    }

    fn decl(&self) -> dw_source_decl {
        dw_source_decl {
            uuid: self.uuid,
            labels: self.labels.as_ptr(),
            labels_len: self.labels.len(),
            metadata: self.metadata.as_ptr(),
            metadata_len: self.metadata.len(),
            clock_anchor_wall_ns: 5,
            complete: 0,
            streams: self.streams.as_ptr(),
            streams_len: self.streams.len(),
            index_stream: self.index,
        }
    }
}

/// A refusal for a string that is not UTF-8 at `place`, as the header
/// documents it: the parameter in `values[0]`, its place in `item`, and a
/// sentence that names it.
fn refused_as_not_utf8(r: dw_result, e: &dw_error, place: Place, what: &str) {
    assert_eq!(r, dw_result::DW_RESULT_INVALID_ARGUMENT, "{what}: result");
    assert_eq!(
        e.reason,
        dw_invalid::DW_INVALID_NOT_UTF8 as u32,
        "{what}: reason"
    );
    let (param, item, name) = place.named();
    failure_at(e, r, item, what);
    assert_eq!(e.values, [param as u64, 0, 0, 0], "{what}: values");
    assert_eq!(message(e), format!("{name} is not valid UTF-8"), "{what}");
}

/// What a decoded stream of a publisher's frames said about its strings.
#[derive(Default, Debug)]
struct Seen {
    uuid: Option<Vec<u8>>,
    labels: Vec<(String, String)>,
    metadata: Vec<(String, String)>,
    row_streams: Vec<Vec<u8>>,
    index_streams: Vec<Vec<u8>>,
}

fn raw(s: dw_str) -> Vec<u8> {
    bytes(dw_bytes {
        ptr: s.ptr.cast(),
        len: s.len,
    })
}

/// Connect, set a slot where there is an index, observe a row on
/// `stream`, end the interval, and decode every frame polled.
fn send_and_read(p: &Pub, ordinal: u32, stream: u32, indexed: bool) -> Seen {
    let mut seen = Seen::default();
    // SAFETY: the publisher's live handle and locals.
    unsafe {
        assert_eq!(
            dw_publisher_connected(p.handle, null_mut()),
            dw_result::DW_RESULT_OK
        );
        if indexed {
            let r = dw_publisher_set_slot(
                p.handle,
                ordinal,
                b"k".as_ptr(),
                1,
                b"v".as_ptr(),
                1,
                null_mut(),
            );
            assert_eq!(r, dw_result::DW_RESULT_OK, "set_slot");
        }
        let r = dw_publisher_observe(
            p.handle,
            ordinal,
            stream,
            1,
            0,
            b"r".as_ptr(),
            1,
            null_mut(),
        );
        assert_eq!(r, dw_result::DW_RESULT_OK, "observe");
        assert_eq!(
            dw_publisher_end_interval(p.handle, null_mut()),
            dw_result::DW_RESULT_OK
        );
    }
    let mut buf = vec![0u8; CONFIG.frame_buffer];
    while let Some(len) = poll(p.handle, &mut buf) {
        let frame = buf[..len].to_vec();
        let d = decode(&frame);
        assert_eq!(d.consumed, len);
        let f = d.frame();
        // SAFETY (each union read): the member `kind` names.
        unsafe {
            match f.kind {
                k if k == dw_frame_kind::DW_FRAME_HANDSHAKE as u32 => {
                    let h = f.body.handshake;
                    seen.uuid = h.has_uuid.then(|| raw(h.uuid));
                    seen.labels = entries(h.labels);
                    seen.metadata = entries(h.metadata);
                }
                k if k == dw_frame_kind::DW_FRAME_ROWS as u32 => {
                    for row in rows(f.body.rows.rows) {
                        seen.row_streams.push(row.0.into_bytes());
                    }
                }
                k if k == dw_frame_kind::DW_FRAME_INDEX as u32 => {
                    seen.index_streams.push(raw(f.body.index.stream));
                }
                _ => {}
            }
        }
    }
    seen
}

/// Whether the frames carry `text` at `place`.
fn carried(seen: &Seen, place: Place, text: &[u8]) -> bool {
    let t = String::from_utf8(text.to_vec()).unwrap();
    let has = |m: &[(String, String)], k: &str, v: &str| m.iter().any(|(a, b)| a == k && b == v);
    match place {
        Place::Uuid => seen.uuid.as_deref() == Some(text),
        Place::LabelKey => has(&seen.labels, &t, "v"),
        Place::LabelValue => has(&seen.labels, "k", &t),
        Place::SecondLabelValue => has(&seen.labels, "a", "v") && has(&seen.labels, "b", &t),
        Place::MetadataKey => has(&seen.metadata, &t, "v"),
        Place::MetadataValue => has(&seen.metadata, "k", &t),
        Place::Stream | Place::SecondStream => seen.row_streams.iter().any(|s| s == text),
        Place::IndexStream => seen.index_streams.iter().any(|s| s == text),
    }
}

/// A canonical uuid, the one string at the uuid's place that is taken.
const UUID: &[u8] = b"01234567-89ab-4def-8123-456789abcdef";

/// Declare `text` at `place`, by sizing and by adding a source; the
/// library refuses it as not UTF-8 exactly when Rust does, and takes and
/// sends back a string Rust takes (`round_trip`: and checks the frames).
fn check(place: Place, text: &[u8], round_trip: bool) {
    let fenced = Fenced::of(text);
    let built = Built::with(place, fenced.str());
    let decl = built.decl();
    let what = format!("{place:?} {text:02x?}");
    let rust_ok = core::str::from_utf8(text).is_ok();

    let (r, e) = sizing(&decl);
    let mut p = Pub::new(1);
    let (r2, ordinal, e2) = p.add(&decl);
    if !rust_ok {
        refused_as_not_utf8(r, &e, place, &format!("sizing {what}"));
        refused_as_not_utf8(r2, &e2, place, &format!("add_source {what}"));
        assert_eq!(ordinal, u32::MAX, "{what}: no ordinal written on a refusal");
        return;
    }
    // Taken as UTF-8: whatever else is said of it, never that.
    if r != dw_result::DW_RESULT_OK {
        assert_ne!(
            e.reason,
            dw_invalid::DW_INVALID_NOT_UTF8 as u32,
            "sizing {what}"
        );
    }
    if r2 != dw_result::DW_RESULT_OK {
        assert_ne!(
            (r2, e2.reason),
            (
                dw_result::DW_RESULT_INVALID_ARGUMENT,
                dw_invalid::DW_INVALID_NOT_UTF8 as u32
            ),
            "add_source {what}: {}",
            message(&e2)
        );
    }
    // Every valid non-empty string is a declaration the library takes,
    // but for a uuid, which is also canonical or refused.
    let must_take = !text.is_empty() && (place != Place::Uuid || text == UUID);
    if must_take {
        assert_eq!(r, dw_result::DW_RESULT_OK, "sizing {what}: {}", message(&e));
        assert_eq!(
            r2,
            dw_result::DW_RESULT_OK,
            "add_source {what}: {}",
            message(&e2)
        );
    }
    if must_take && round_trip {
        let stream = u32::from(place == Place::SecondStream);
        let seen = send_and_read(&p, ordinal, stream, place == Place::IndexStream);
        assert!(
            carried(&seen, place, text),
            "{what}: not sent back: {seen:?}"
        );
    }
}

/// Strings Rust refuses: each kind of ill-formed UTF-8 the task names.
fn ill_formed() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = vec![
        // Overlong.
        vec![0xC0, 0x80],
        vec![0xC0, 0xAF],
        vec![0xC1, 0xBF],
        vec![0xE0, 0x80, 0x80],
        vec![0xE0, 0x9F, 0xBF],
        vec![0xF0, 0x80, 0x80, 0x80],
        vec![0xF0, 0x8F, 0xBF, 0xBF],
        // Surrogates.
        vec![0xED, 0xA0, 0x80],
        vec![0xED, 0xAD, 0xBF],
        vec![0xED, 0xAE, 0x80],
        vec![0xED, 0xB0, 0x80],
        vec![0xED, 0xBF, 0xBF],
        vec![0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80],
        // Past U+10FFFF.
        vec![0xF4, 0x90, 0x80, 0x80],
        vec![0xF4, 0xBF, 0xBF, 0xBF],
        vec![0xF8, 0x88, 0x80, 0x80, 0x80],
        vec![0xFC, 0x84, 0x80, 0x80, 0x80, 0x80],
        // Lone continuations.
        vec![0x80],
        vec![0xBF],
        vec![0x80, 0x80],
        b"a\x80b".to_vec(),
        vec![0xC3, 0xA9, 0x80],
        vec![0xE2, 0x82, 0xAC, 0xAC],
        vec![0xF0, 0x9F, 0x98, 0x80, 0x80],
    ];
    for lead in 0xF5..=0xFFu8 {
        v.push(vec![lead]);
        v.push(vec![lead, 0x80, 0x80, 0x80]);
        v.push(vec![b'a', lead, b'z']);
    }
    // Cut: every proper prefix of a multi-byte form, at the end of a
    // string and in its middle.
    for whole in [
        &[0xC2, 0xA9][..],
        &[0xDF, 0xBF],
        &[0xE0, 0xA0, 0x80],
        &[0xE2, 0x82, 0xAC],
        &[0xED, 0x9F, 0xBF],
        &[0xEF, 0xBF, 0xBF],
        &[0xF0, 0x90, 0x80, 0x80],
        &[0xF3, 0xBF, 0xBF, 0xBF],
        &[0xF4, 0x8F, 0xBF, 0xBF],
    ] {
        for cut in 1..whole.len() {
            let head = &whole[..cut];
            v.push(head.to_vec());
            v.push([b"ab", head].concat());
            v.push([head, b"z"].concat());
            v.push([b"a", head, b"z"].concat());
            v.push([head, whole].concat());
            v.push([head, &[0xC2, 0xA9][..]].concat());
        }
    }
    v
}

/// Strings Rust takes: the largest form of each length, the edges of the
/// surrogates and of the code space, NULs inside.
fn well_formed() -> Vec<Vec<u8>> {
    vec![
        vec![0x7F],
        vec![0x00],
        b"a\0b".to_vec(),
        vec![0, 0, 0],
        b"cpu\0".to_vec(),
        vec![0xC2, 0x80],
        vec![0xDF, 0xBF],
        vec![0xE0, 0xA0, 0x80],
        vec![0xED, 0x9F, 0xBF],
        vec![0xEE, 0x80, 0x80],
        vec![0xEF, 0xBF, 0xBF],
        vec![0xEF, 0xBF, 0xBE],
        vec![0xEF, 0xBB, 0xBF],
        vec![0xF0, 0x90, 0x80, 0x80],
        vec![0xF4, 0x8F, 0xBF, 0xBF],
        [
            &[0x7F][..],
            &[0xDF, 0xBF],
            &[0xEF, 0xBF, 0xBF],
            &[0xF4, 0x8F, 0xBF, 0xBF],
        ]
        .concat(),
        "z\u{10FFFF}\u{0}é€😀".as_bytes().to_vec(),
        UUID.to_vec(),
    ]
}

#[test]
#[cfg_attr(
    miri,
    ignore = "thousands of declarations: minutes under Miri; natively each string ends at a guard page, which catches a read past it"
)]
fn ill_formed_utf8_is_refused_at_every_place_a_string_goes() {
    let all = ill_formed();
    for place in PLACES {
        for text in &all {
            assert!(core::str::from_utf8(text).is_err(), "{text:02x?}");
            check(place, text, false);
        }
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "thousands of declarations: minutes under Miri; natively each string ends at a guard page, which catches a read past it"
)]
fn the_largest_forms_and_nuls_inside_are_taken_and_sent_back_byte_for_byte() {
    for place in PLACES {
        for text in well_formed() {
            assert!(core::str::from_utf8(&text).is_ok(), "{text:02x?}");
            check(place, &text, true);
        }
    }
}

/// Bytes drawn to land near the edges of UTF-8: ASCII, continuations,
/// each kind of lead, and whole valid characters spliced in.
fn draw(rng: &mut XorShift) -> Vec<u8> {
    const EDGES: [u8; 20] = [
        0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED,
        0xEF, 0xF0, 0xF4, 0xF5, 0xFF,
    ];
    let len = rng.below(10);
    let mut out = Vec::new();
    while out.len() < len {
        match rng.below(4) {
            0 => out.push(rng.next_u64() as u8),
            1 => out.push(EDGES[rng.below(EDGES.len())]),
            2 => {
                let c = char::from_u32(rng.below(0x11_0000) as u32).unwrap_or('\u{FFFD}');
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
            _ => out.push(0x80 | (rng.next_u64() as u8 & 0x3F)),
        }
    }
    out
}

#[test]
#[cfg_attr(
    miri,
    ignore = "tens of thousands of declarations: hours under Miri; run natively"
)]
fn random_bytes_are_taken_exactly_when_rust_takes_them() {
    let n = if cfg!(miri) { 40 } else { 3000 };
    let mut rng = XorShift::new(0x5eed_c0de);
    let (mut valid, mut invalid) = (0, 0);
    for i in 0..n {
        let text = draw(&mut rng);
        if core::str::from_utf8(&text).is_ok() {
            valid += 1;
        } else {
            invalid += 1;
        }
        check(PLACES[i % PLACES.len()], &text, i % 16 == 0);
    }
    assert!(valid > n / 10 && invalid > n / 10, "{valid} {invalid}");
}

#[test]
#[cfg_attr(
    miri,
    ignore = "tens of thousands of declarations: hours under Miri; run natively"
)]
fn every_two_byte_string_is_judged_as_rust_judges_it() {
    if cfg!(miri) {
        return;
    }
    // Every pair of bytes as a stream name, through the sizing call.
    for a in 0..=255u8 {
        for b in 0..=255u8 {
            let text = [a, b];
            let fenced = Fenced::of(&text);
            let built = Built::with(Place::Stream, fenced.str());
            let (r, e) = sizing(&built.decl());
            let what = format!("{text:02x?}");
            if core::str::from_utf8(&text).is_ok() {
                assert_eq!(r, dw_result::DW_RESULT_OK, "{what}: {}", message(&e));
            } else {
                refused_as_not_utf8(r, &e, Place::Stream, &what);
            }
        }
    }
}
