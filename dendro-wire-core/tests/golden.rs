//! Whole frames both ways, across kinds: what a decoder reads back, a
//! decoded frame forwarded byte for byte, the builder against the slice
//! encoder, and the preamble's bytes by hand. Each kind's own golden bytes,
//! written by hand, are its file's unit tests.

mod common;

use common::*;
use dendro_wire_core::*;

#[test]
fn every_frame_decodes_to_the_fields_it_was_encoded_from() {
    for (want, bytes) in all() {
        let got = decode_one(&bytes).unwrap_or_else(|e| panic!("{want:?}: {e}"));
        assert_eq!(got, want);
    }
}

#[test]
fn a_decoded_frame_re_encodes_to_the_same_bytes() {
    for (_, bytes) in all() {
        let frame = decode_one(&bytes).unwrap();
        let mut buf = vec![0; bytes.len()];
        assert_eq!(frame.emit(&mut buf).unwrap(), bytes.len());
        assert_eq!(buf, bytes);
    }
}

/// A receiver that cut a frame itself decodes it without reading its
/// length again: the same frame as `decode`; bytes cut short of or past
/// what their prefix says (a cut that was wrong) are refused, never read
/// as another frame, and never a panic.
#[test]
fn a_frame_decoded_as_cut_is_the_frame_decoded_whole() {
    let decoder = FrameDecoder::new();
    for (want, bytes) in all() {
        assert_eq!(decoder.decode_cut(&bytes), Ok(want), "{want:?}");
        for cut in 0..bytes.len() {
            let short = &bytes[..cut];
            assert!(decoder.decode_cut(short).is_err(), "{want:?} cut at {cut}");
        }
        let long = [&bytes[..], &[0]].concat();
        let e = decoder.decode_cut(&long).unwrap_err();
        assert_eq!(e.rule(), Rule::TrailingBytes { count: 1 }, "{want:?}");
    }
}

#[test]
fn the_segment_and_source_update_fields_read_back() {
    let (seg, seg_absent, update) = (
        segment_bytes(),
        segment_absent_bytes(),
        source_update_bytes(),
    );
    let Frame::Segment(s) = decode_one(&seg).unwrap() else {
        panic!()
    };
    assert_eq!((s.rows, s.first_ts, s.last_ts), (10, -9, 9));
    assert_eq!(s.caller_index, Some(&[9u8, 9][..]));
    let Frame::Segment(s) = decode_one(&seg_absent).unwrap() else {
        panic!()
    };
    assert_eq!(s.caller_index, None);

    let Frame::SourceUpdate(u) = decode_one(&update).unwrap() else {
        panic!()
    };
    assert_eq!(
        u.labels.iter().collect::<Vec<_>>(),
        vec![("a", "1"), ("b", "2")]
    );
    assert_eq!(u.metadata.get("encoder"), Some("v3"));
    assert_eq!(u.ts, -1);
}

#[test]
fn a_rows_builder_writes_what_a_slice_writes() {
    let rows = [
        ROW,
        Row {
            stream: "mem/used",
            ts: -1,
            wall_offset: i64::MAX,
            row: &[],
        },
        Row {
            stream: "ünïcode",
            ts: i64::MIN,
            wall_offset: 0,
            row: &[0xff; 33],
        },
    ];
    let frame = Rows {
        source: 9,
        seq: 41,
        index_state: (u64::MAX, 3),
        rows: RowList::from_slice(&rows),
    };
    let mut want = vec![0; frame.buffer_len().unwrap()];
    frame.emit(&mut want).unwrap();

    let mut buf = vec![0; 512];
    let mut b = RowsBuilder::new(
        &mut buf[..],
        RowsHeader {
            source: 9,
            seq: 41,
            index_state: (u64::MAX, 3),
        },
    )
    .unwrap();
    assert!(b.is_empty());
    for row in &rows {
        b.push(row).unwrap();
    }
    assert_eq!(b.frame_len(), want.len());
    let n = b.finish().unwrap();
    assert_eq!(&buf[..n], &want[..]);
}

#[test]
fn the_preamble_is_magic_then_version_one() {
    let mut buf = [0u8; 14];
    assert_eq!(emit_preamble(&mut buf), Ok(14));
    assert_eq!(&buf, b"dendro-repl\0\x01\x00");
    assert_eq!(check_preamble(&buf), Ok(Status::Complete(PREAMBLE_BYTES)));
    for cut in 0..14 {
        assert_eq!(
            check_preamble(&buf[..cut]),
            Ok(Status::Incomplete { needed: 14 - cut })
        );
    }
}
