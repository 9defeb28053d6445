//! One test per refusal: each names its rule, its field and where.

mod common;

use common::*;
use dendro_wire_core::*;
use dendro_wire_test_support::grow::Grow;

/// The header of a `Rows` frame of source 0, of no index state.
const HEADER: RowsHeader = RowsHeader {
    source: 0,
    seq: 0,
    index_state: NO_INDEX_STATE,
};

/// Decode bytes that must be refused, returning the error.
fn refused(bytes: &[u8]) -> Error {
    match decode(bytes) {
        Err(e) => e,
        Ok(other) => panic!("accepted: {other:?}"),
    }
}

/// `bytes` with the byte at `at` set to `value`, which must be refused.
fn refused_with(mut bytes: Vec<u8>, at: usize, value: u8) -> Error {
    bytes[at] = value;
    refused(&bytes)
}

/// Replace the length prefix with the bytes that actually follow it.
fn fix_len(mut bytes: Vec<u8>) -> Vec<u8> {
    let len = (bytes.len() - 4) as u32;
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    bytes
}

fn assert_error(e: Error, rule: Rule, field: Field, offset: usize) {
    assert_eq!(
        (e.rule(), e.field(), e.offset()),
        (rule, field, offset),
        "{e}"
    );
}

#[test]
fn a_wrong_magic_is_not_a_dendro_stream() {
    let e = check_preamble(b"GET / HTTP/1.1\r\n").unwrap_err();
    assert_error(e, Rule::NotADendroStream, Field::Magic, 0);
    assert!(
        e.to_string().contains("not a dendro replication stream"),
        "{e}"
    );
    // Refused as soon as the bytes in hand differ, before the rest arrives.
    assert_eq!(
        check_preamble(b"dendrX").unwrap_err().rule(),
        Rule::NotADendroStream
    );
}

#[test]
fn another_version_is_refused_by_number() {
    let e = check_preamble(b"dendro-repl\0\x07\x01").unwrap_err();
    assert_error(
        e,
        Rule::UnsupportedVersion { version: 263 },
        Field::Version,
        12,
    );
    assert!(e.to_string().contains("protocol version 263"), "{e}");
}

#[test]
fn a_zero_length_is_refused_from_the_prefix_alone() {
    assert_error(refused(&[0, 0, 0, 0]), Rule::ZeroLength, Field::Length, 0);
}

#[test]
fn a_length_above_the_limit_is_refused_from_the_prefix_alone() {
    let e = refused(&u32::MAX.to_le_bytes());
    assert_error(
        e,
        Rule::FrameTooLarge {
            len: u32::MAX as usize,
            limit: MAX_FRAME_BYTES,
        },
        Field::Length,
        0,
    );
    // Exactly the limit is allowed: it is only incomplete.
    assert_eq!(
        decode(&MAX_FRAME_BYTES.to_le_bytes()).unwrap(),
        Status::Incomplete {
            needed: MAX_FRAME_BYTES as usize
        }
    );
    // A small device lowers the limit.
    let small = FrameDecoder::new().with_max_frame_bytes(64);
    assert_eq!(small.max_frame_bytes(), 64);
    let index = index_bytes();
    let e = small.decode(&index[..4]).unwrap();
    assert_eq!(e, Status::Incomplete { needed: 43 });
    let e = small.decode(&65u32.to_le_bytes()).unwrap_err();
    assert_eq!(e.rule(), Rule::FrameTooLarge { len: 65, limit: 64 });
    // And cannot raise it.
    assert_eq!(
        FrameDecoder::new()
            .with_max_frame_bytes(u32::MAX)
            .max_frame_bytes(),
        MAX_FRAME_BYTES
    );
}

#[test]
fn a_field_past_the_end_of_the_frame_is_refused() {
    // A ClockOffset whose len covers only the kind and 3 bytes: it ends in
    // `source`, which needs 4.
    let e = refused(&[4, 0, 0, 0, 5, 1, 2, 3]);
    assert_error(e, Rule::EndsEarly { needed: 4, left: 3 }, Field::Source, 5);
    assert_eq!(e.frame_kind(), Some(kind::CLOCK_OFFSET));
    // One that ends 6 bytes into `ts`: named by the field it ends in, at
    // that field's offset, not by the run it is part of.
    let e = refused(&[11, 0, 0, 0, 5, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6]);
    assert_error(e, Rule::EndsEarly { needed: 8, left: 6 }, Field::Ts, 9);
    // And one whose `ts` is whole, so it ends at the start of `offset_ns`.
    let mut b = vec![13, 0, 0, 0, 5, 1, 0, 0, 0];
    b.extend_from_slice(&7i64.to_le_bytes());
    let e = refused(&b);
    assert_error(
        e,
        Rule::EndsEarly { needed: 8, left: 0 },
        Field::OffsetNs,
        17,
    );
    // A blob whose length runs past the frame: reported at its length field.
    let e = refused_with(index_bytes(), 41, 3); // blob len 2 -> 3
    assert_error(e, Rule::EndsEarly { needed: 3, left: 2 }, Field::Blob, 41);
}

#[test]
fn a_bool_presence_byte_or_index_kind_other_than_0_or_1_is_refused() {
    // The frame, the byte's offset, the value written there, the rule and
    // the field, which starts at that byte.
    #[rustfmt::skip]
    let cases = [
        (handshake_bytes(), 79, 2, Rule::NotABool { value: 2 }, Field::Complete), // the last byte
        (handshake_bytes(), 9, 255, Rule::NotAPresenceByte { value: 255 }, Field::Uuid),
        (segment_bytes(), 46, 2, Rule::NotAPresenceByte { value: 2 }, Field::CallerIndex),
        (index_bytes(), 24, 2, Rule::NotAnIndexKind { value: 2 }, Field::IndexKind),
    ];
    for (bytes, at, value, rule, field) in cases {
        assert_error(refused_with(bytes, at, value), rule, field, at);
    }
}

#[test]
fn a_string_that_is_not_utf8_is_refused() {
    let e = refused_with(index_bytes(), 13, 0xff); // first byte of "cpu"
    assert_error(e, Rule::NotUtf8, Field::Stream, 9);

    // In the second row of a Rows frame: the error names the row.
    let rows = [
        ROW,
        Row {
            stream: "cpv",
            ..ROW
        },
    ];
    let frame = Rows {
        rows: RowList::from_slice(&rows),
        ..common::rows()
    };
    let mut b = vec![0; frame.buffer_len().unwrap()];
    frame.emit(&mut b).unwrap();
    let second = 37 + ROW.wire_len();
    b[second + 4 + 2] = 0xc0; // a lone lead byte in "cpv"
    let e = refused(&b);
    assert_error(e, Rule::NotUtf8, Field::Stream, second);
    assert_eq!(e.item(), Some(1));
    assert!(e.to_string().contains("row 1"), "{e}");

    // In a map value.
    let e = refused_with(source_update_bytes(), 30, 0x80); // "1", the value of label a
    assert_error(e, Rule::NotUtf8, Field::Labels, 26);
    assert_eq!(e.item(), Some(0));
}

#[test]
fn a_uuid_that_is_not_canonical_is_refused() {
    for bad in [
        "3F2B1C4D-0000-4000-8000-00000000ABCD", // uppercase
        "3f2b1c4d00004000800000000000abcd",     // no hyphens
        "3f2b1c4d-0000-4000-8000-00000000abcg", // not hex
        "{3f2b1c4d-0000-4000-8000-00000000abc}",
        "",
    ] {
        let b = fix_len(cat(&[
            &handshake_bytes()[..10],
            &(bad.len() as u32).to_le_bytes(),
            bad.as_bytes(),
            &handshake_bytes()[50..],
        ]));
        assert_error(refused(&b), Rule::NotACanonicalUuid, Field::Uuid, 9);
    }
    let h = Handshake {
        uuid: Some("3F2B1C4D-0000-4000-8000-00000000ABCD"),
        ..handshake()
    };
    let e = h.buffer_len().unwrap_err();
    assert!(e.is_encoding());
    assert_error(e, Rule::NotACanonicalUuid, Field::Uuid, 9);
}

#[test]
fn map_keys_out_of_order_or_repeated_are_refused() {
    // Labels {b: 2, a: 1}: swap the two entries of the golden update.
    let b = source_update_bytes();
    let swapped = fix_len(cat(&[&b[..21], &b[31..41], &b[21..31], &b[41..]]));
    let e = refused(&swapped);
    assert_error(e, Rule::KeysNotAscending, Field::Labels, 31);
    assert_eq!(e.item(), Some(1));

    // {a: 1, a: 1}: a duplicate is refused too.
    let dup = fix_len(cat(&[&b[..21], &b[21..31], &b[21..31], &b[41..]]));
    assert_eq!(refused(&dup).rule(), Rule::KeysNotAscending);

    // The encoder refuses the same, naming the entry.
    let u = SourceUpdate {
        metadata: Map::from_pairs(&[("z", ""), ("encoder", "v3")]),
        ..source_update()
    };
    let e = u.emit(&mut [0; 128]).unwrap_err();
    assert_error(e, Rule::KeysNotAscending, Field::Metadata, 54);
    assert_eq!(e.item(), Some(1));
    assert!(
        e.to_string()
            .starts_with("cannot encode SourceUpdate frame"),
        "{e}"
    );
}

#[test]
fn a_count_that_cannot_fit_is_refused_without_iterating() {
    // Rows: count u32::MAX over no row bytes at all.
    let mut b = empty_rows_bytes();
    b[33..37].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_error(
        refused(&b),
        Rule::CountTooLarge {
            count: u32::MAX,
            left: 0,
        },
        Field::Count,
        33,
    );
    // Two rows declared, bytes for one.
    assert_error(
        refused_with(rows_bytes(), 33, 2),
        Rule::CountTooLarge { count: 2, left: 29 },
        Field::Count,
        33,
    );
    // A map count.
    assert_eq!(
        refused_with(source_update_bytes(), 17, 200).rule(),
        Rule::CountTooLarge {
            count: 200,
            left: 41
        }
    );
}

#[test]
fn trailing_bytes_are_refused() {
    let b = fix_len(cat(&[&clock_offset_bytes(), &[0]]));
    assert_error(
        refused(&b),
        Rule::TrailingBytes { count: 1 },
        Field::Payload,
        25,
    );
    let b = fix_len(cat(&[&empty_rows_bytes(), &[1, 2, 3]]));
    assert_error(
        refused(&b),
        Rule::TrailingBytes { count: 3 },
        Field::Payload,
        37,
    );
}

#[test]
fn an_unknown_frame_with_a_known_kind_is_not_encoded() {
    let f = Frame::Unknown {
        kind: kind::ROWS,
        payload: &[],
    };
    let e = f.emit(&mut [0; 16]).unwrap_err();
    assert_error(e, Rule::KnownKindAsUnknown, Field::FrameKind, 4);
}

#[test]
fn a_small_buffer_says_how_big_it_must_be_and_is_left_alone() {
    for (frame, bytes) in all() {
        let mut buf = vec![0x55; bytes.len() - 1];
        let e = frame.emit(&mut buf).unwrap_err();
        assert_eq!(
            e.rule(),
            Rule::BufferTooSmall {
                needed: bytes.len(),
                have: bytes.len() - 1
            }
        );
        assert!(buf.iter().all(|&b| b == 0x55), "wrote into a short buffer");
    }
    assert!(matches!(
        emit_preamble(&mut [0; 13]).unwrap_err().rule(),
        Rule::BufferTooSmall { needed: 14, .. }
    ));
    assert!(RowsBuilder::new(&mut [0; 36], HEADER).is_err());
}

#[test]
fn a_frame_above_the_limit_is_not_encoded() {
    let big = vec![0u8; MAX_FRAME_BYTES as usize];
    let s = Segment {
        bytes: &big,
        ..segment()
    };
    let e = s.buffer_len().unwrap_err();
    assert!(matches!(e.rule(), Rule::FrameTooLarge { .. }), "{e}");

    // A builder refuses the row that would cross it, and keeps the rest.
    let mut buf = vec![0; MAX_FRAME_BYTES as usize + 1024];
    let mut b = RowsBuilder::new(&mut buf[..], HEADER).unwrap();
    b.push(&Row {
        row: &big[..MAX_FRAME_BYTES as usize - 100],
        ..ROW
    })
    .unwrap();
    let e = b
        .push(&Row {
            row: &big[..100],
            ..ROW
        })
        .unwrap_err();
    assert!(matches!(e.rule(), Rule::FrameTooLarge { .. }), "{e}");
    assert_eq!(b.row_count(), 1);
    let n = b.finish().unwrap();
    assert!(matches!(decode(&buf[..n]), Ok(Status::Complete(_))));

    // A frame of exactly the limit is built; one byte more is not.
    let empty = Row { row: &[], ..ROW };
    for over in [0, 1] {
        let mut b = RowsBuilder::new(&mut buf[..], HEADER).unwrap();
        let fill = MAX_FRAME_BYTES as usize + 4 - b.frame_len() - empty.wire_len() + over;
        let pushed = b.push(&Row {
            row: &big[..fill],
            ..ROW
        });
        if over == 0 {
            pushed.unwrap();
            assert_eq!(b.frame_len() - 4, MAX_FRAME_BYTES as usize);
        } else {
            let e = pushed.unwrap_err();
            let len = MAX_FRAME_BYTES as usize + 1;
            assert_eq!(
                e.rule(),
                Rule::FrameTooLarge {
                    len,
                    limit: MAX_FRAME_BYTES
                },
                "{e}"
            );
        }
    }

    // Over storage that grows, a builder grows it for each row, up to the
    // storage's own bound, and still refuses a frame past the limit.
    let mut storage = Grow::new(4096);
    let mut b = RowsBuilder::new(&mut storage, HEADER).unwrap();
    let mut pushed = 0;
    while b.push(&ROW).is_ok() {
        pushed += 1;
    }
    let e = b.push(&ROW).unwrap_err();
    let end = b.frame_len() + ROW.wire_len();
    assert_eq!(
        e.rule(),
        Rule::BufferTooSmall {
            needed: end,
            have: 4096
        },
        "{e}"
    );
    assert!(end > 4096 && b.frame_len() <= 4096);
    let len = b.finish().unwrap();
    let Ok(Status::Complete((Frame::Rows(r), _))) = decode(&storage.bytes()[..len]) else {
        panic!("the grown frame does not decode")
    };
    assert_eq!(r.rows.len(), pushed);
    let mut unbounded = Grow::new(usize::MAX);
    let mut b = RowsBuilder::new(&mut unbounded, HEADER).unwrap();
    let e = b
        .push(&Row {
            row: &big[..MAX_FRAME_BYTES as usize],
            ..ROW
        })
        .unwrap_err();
    assert!(matches!(e.rule(), Rule::FrameTooLarge { .. }), "{e}");
    assert_eq!((b.frame_len(), b.row_count()), (37, 0));
}

#[test]
fn errors_read_as_sentences_naming_frame_field_and_place() {
    assert_eq!(
        refused_with(handshake_bytes(), 79, 7).to_string(),
        "malformed Handshake frame: `complete` at byte 79: 7 is not a bool; it must be 0 or 1"
    );
    assert_eq!(
        refused(&[0, 0, 0, 0]).to_string(),
        "malformed frame: `len` at byte 0: a frame length of 0; every frame has at least its kind byte"
    );
}
