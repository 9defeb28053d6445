//! Golden frames: bytes written by hand from the spec, decoded to fields and
//! encoded from fields.

mod common;

use common::*;
use dendro_wire_core::*;

#[test]
fn every_golden_frame_decodes_to_its_fields() {
    for (want, bytes) in all() {
        let got = decode_one(&bytes).unwrap_or_else(|e| panic!("{want:?}: {e}"));
        assert_eq!(got, want);
    }
}

#[test]
fn every_golden_frame_encodes_to_its_bytes() {
    for (frame, want) in all() {
        assert_eq!(frame.buffer_len().unwrap(), want.len(), "{frame:?}");
        let mut buf = vec![0xaa; want.len() + 7];
        let n = frame.emit(&mut buf).unwrap();
        assert_eq!(&buf[..n], &want[..], "{frame:?}");
        assert!(buf[n..].iter().all(|&b| b == 0xaa), "wrote past the frame");
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

#[test]
fn the_handshake_fields_read_back() {
    let bytes = handshake_bytes();
    let Frame::Handshake(h) = decode_one(&bytes).unwrap() else {
        panic!("not a handshake")
    };
    assert_eq!(h.source, 1);
    assert_eq!(h.uuid, Some(UUID));
    assert_eq!(h.labels.get("host"), Some("a"));
    assert_eq!(h.labels.get("hos"), None);
    assert_eq!(h.labels.get("hz"), None);
    assert_eq!(h.labels.len(), 1);
    assert!(h.metadata.is_empty());
    assert_eq!(h.clock_anchor_wall_ns, 1);
    assert!(h.complete);
    // The uuid borrows from the buffer: no copy was made.
    let at = bytes
        .windows(36)
        .position(|w| w == UUID.as_bytes())
        .unwrap();
    assert!(std::ptr::eq(h.uuid.unwrap().as_ptr(), bytes[at..].as_ptr()));
}

#[test]
fn the_rows_fields_read_back() {
    let bytes = rows_bytes();
    let Frame::Rows(r) = decode_one(&bytes).unwrap() else {
        panic!("not rows")
    };
    assert_eq!((r.source, r.seq, r.index_state), (0, 7, (1, 2)));
    let rows: Vec<Row<'_>> = r.rows.iter().collect();
    assert_eq!(rows, vec![ROW]);
    assert_eq!(r.rows.iter().len(), 1);
    assert!(std::ptr::eq(rows[0].row.as_ptr(), bytes[64..].as_ptr()));
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
fn absent_and_empty_are_different_bytes() {
    let empty = Segment {
        caller_index: Some(&[]),
        ..segment()
    };
    let absent = Segment {
        caller_index: None,
        ..segment()
    };
    let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
    let na = empty.emit(&mut a).unwrap();
    let nb = absent.emit(&mut b).unwrap();
    assert_ne!(&a[..na], &b[..nb]);
    assert_eq!(decode_one(&a[..na]).unwrap(), Frame::Segment(empty));
    assert_eq!(decode_one(&b[..nb]).unwrap(), Frame::Segment(absent));
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
fn a_builder_with_no_rows_is_the_keepalive() {
    let mut buf = [0u8; 37];
    let b = RowsBuilder::new(
        &mut buf[..],
        RowsHeader {
            source: 4,
            seq: u64::MAX,
            index_state: NO_INDEX_STATE,
        },
    )
    .unwrap();
    let n = b.finish().unwrap();
    assert_eq!(&buf[..n], &empty_rows_bytes()[..]);
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
