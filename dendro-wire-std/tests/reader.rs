//! FrameReader and FrameWriter over std::io: chunked delivery, truncation at
//! every offset, limits, unknown kinds, and where errors say they are.

use std::io::{self, Read};

use dendro_wire_core::{
    kind, ClockOffset, Frame, FrameDecoder, Row, RowsHeader, Rule, NO_INDEX_STATE,
};
use dendro_wire_std::{FrameReader, FrameWriter, OwnedFrame, OwnedRow, ReadErrorKind};
use dendro_wire_test_support::chunked::Chunked;
use dendro_wire_test_support::streams::{frames_with_unknown, read_all};

/// A small stream holding an unknown frame; `row_len` sizes its one row.
fn frames_with(row_len: usize) -> Vec<OwnedFrame> {
    let handshake = OwnedFrame::Handshake {
        source: 0,
        uuid: None,
        labels: [("host".to_string(), "ü".to_string())].into(),
        metadata: Default::default(),
        clock_anchor_wall_ns: -1,
        complete: false,
    };
    let row = OwnedRow {
        stream: "cpu/usage".into(),
        ts: 5,
        wall_offset: 0,
        row: vec![7; row_len],
    };
    frames_with_unknown(handshake, vec![row])
}

/// With a row larger than the reader's minimum buffer, so it must grow.
fn frames() -> Vec<OwnedFrame> {
    frames_with(100_000)
}

fn stream(frames: &[OwnedFrame]) -> Vec<u8> {
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    for f in frames {
        w.write_owned(f).unwrap();
    }
    w.into_inner()
}

#[test]
fn frames_read_back_in_order_whatever_the_chunk_size() {
    let want = frames();
    let bytes = stream(&want);
    for chunk in [1, 2, 3, 5, 13, 4096, usize::MAX] {
        let (got, err) = read_all(Chunked::new(&bytes, chunk).interrupted());
        assert!(err.is_none(), "chunk {chunk}: {err:?}");
        assert_eq!(got, want, "chunk {chunk}");
    }
}

#[test]
fn a_stream_cut_anywhere_but_a_frame_boundary_is_an_error() {
    let want = frames_with(300);
    let bytes = stream(&want);
    let mut boundaries = vec![14];
    for f in &want {
        let len = f.with_view(|view| view.buffer_len().unwrap());
        boundaries.push(boundaries.last().unwrap() + len);
    }
    for cut in 0..bytes.len() {
        let (got, err) = read_all(&bytes[..cut]);
        let whole = boundaries
            .iter()
            .filter(|&&b| b <= cut)
            .count()
            .saturating_sub(1);
        assert_eq!(got, want[..whole], "cut at {cut}");
        if boundaries.contains(&cut) {
            assert!(err.is_none(), "cut at boundary {cut}: {err:?}");
            continue;
        }
        let err = err.unwrap_or_else(|| panic!("cut at {cut} read as a clean end"));
        let ReadErrorKind::Truncated { have, .. } = err.kind() else {
            panic!("cut at {cut}: {err}")
        };
        let start = boundaries.iter().rev().find(|&&b| b <= cut).copied();
        match start {
            Some(start) => {
                assert_eq!(*have, cut - start, "cut at {cut}");
                assert_eq!(err.frame(), whole as u64 + 1);
                assert_eq!(err.offset(), start as u64);
            }
            None => assert_eq!(err.frame(), 0, "inside the preamble"),
        }
    }
}

#[test]
fn one_to_three_bytes_of_a_length_prefix_are_a_truncated_frame() {
    let mut bytes = stream(&frames()[..1]);
    let boundary = bytes.len();
    bytes.extend_from_slice(&[9, 0, 0]);
    for extra in 1..=3 {
        let (got, err) = read_all(&bytes[..boundary + extra]);
        assert_eq!(got.len(), 1);
        let err = err.expect("a partial length prefix is not a clean end");
        assert!(
            matches!(err.kind(), ReadErrorKind::Truncated { have, needed: 4 } if *have == extra),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "frame 2 (stream byte {boundary}): the stream ends inside this frame: \
                 {extra} of at least 4 byte(s) arrived"
            )
        );
    }
}

#[test]
fn a_length_above_the_limit_is_refused_before_the_buffer_grows() {
    let mut bytes = stream(&[]);
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut reader = FrameReader::new(&bytes[..]).unwrap();
    let err = reader.next_frame().unwrap_err();
    assert!(
        matches!(
            err.wire_error().map(|e| e.rule()),
            Some(Rule::FrameTooLarge { .. })
        ),
        "{err}"
    );
    assert!(
        reader.buffer_len() <= 64 * 1024,
        "grew to {}",
        reader.buffer_len()
    );

    // A lower limit of the caller's own.
    let bytes = stream(&frames());
    let mut reader =
        FrameReader::with_decoder(&bytes[..], FrameDecoder::new().with_max_frame_bytes(1024))
            .unwrap();
    reader.next_frame().unwrap();
    let err = reader.next_frame().unwrap_err();
    assert_eq!(err.frame(), 3, "the unknown frame is frame 2");
    assert!(
        err.to_string().contains("above the 1024-byte limit"),
        "{err}"
    );
}

#[test]
fn unknown_kinds_are_skipped_and_counted_unless_asked_for() {
    let bytes = stream(&frames());
    let mut reader = FrameReader::new(&bytes[..]).unwrap();
    let mut kinds = Vec::new();
    while let Some(f) = reader.next_frame().unwrap() {
        kinds.push(f.kind());
    }
    assert_eq!(kinds, [kind::HANDSHAKE, kind::ROWS, kind::CLOCK_OFFSET]);
    assert_eq!((reader.frames(), reader.unknown()), (4, 1));
    assert_eq!(reader.offset(), bytes.len() as u64);
}

#[test]
fn a_malformed_frame_is_named_by_number_and_offset() {
    let mut bytes = stream(&frames()[..1]);
    let at = bytes.len();
    // A ClockOffset with a trailing byte.
    bytes.extend_from_slice(&[22, 0, 0, 0, 5]);
    bytes.extend_from_slice(&[0; 21]);
    let (_, err) = read_all(&bytes[..]);
    let err = err.unwrap();
    assert_eq!((err.frame(), err.offset()), (2, at as u64));
    assert_eq!(
        err.to_string(),
        format!(
            "frame 2 (stream byte {at}): malformed ClockOffset frame: `payload` at byte 25: \
             1 byte(s) left over after the last field"
        )
    );
}

#[test]
fn a_wrong_preamble_says_so() {
    let (_, err) = read_all(&b"GET / HTTP/1.1\r\n\r\n"[..]);
    let err = err.unwrap();
    assert_eq!(err.frame(), 0);
    assert!(
        err.to_string()
            .starts_with("preamble: this is not a dendro replication stream"),
        "{err}"
    );
    let (_, err) = read_all(&b"dendro-repl\0\x02\x00"[..]);
    assert!(err.unwrap().to_string().contains("protocol version 2"));
    let (_, err) = read_all(&b"dendro"[..]);
    assert!(matches!(
        err.unwrap().kind(),
        ReadErrorKind::Truncated {
            have: 6,
            needed: 14
        }
    ));
}

#[test]
fn the_writer_builds_rows_in_place_growing_its_buffer() {
    let big = vec![3u8; 10_000];
    let rows: Vec<Row<'_>> = (0..5)
        .map(|i| Row {
            stream: "disk",
            ts: i,
            wall_offset: -i,
            row: &big[..(i as usize) * 2000],
        })
        .collect();
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_rows(
        RowsHeader {
            source: 2,
            seq: 9,
            index_state: (4, 4),
        },
        rows.iter().copied(),
    )
    .unwrap();
    w.write_frame(&Frame::ClockOffset(ClockOffset {
        source: 2,
        ts: 0,
        offset_ns: 0,
    }))
    .unwrap();
    assert_eq!(w.frames(), 2);
    let bytes = w.into_inner();
    let mut r = FrameReader::new(&bytes[..]).unwrap();
    let Some(Frame::Rows(got)) = r.next_frame().unwrap() else {
        panic!("not rows")
    };
    assert_eq!((got.source, got.seq, got.index_state), (2, 9, (4, 4)));
    assert_eq!(got.rows.iter().collect::<Vec<_>>(), rows);
}

/// Hands out `bytes` `chunk` at a time, then (if `stall`) ends as if the
/// peer stopped; records the room each read was offered.
struct Watched {
    bytes: Vec<u8>,
    at: usize,
    chunk: usize,
    offered: Vec<(usize, usize)>,
}

impl Read for Watched {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.offered.push((self.at, buf.len()));
        let n = self.chunk.min(buf.len()).min(self.bytes.len() - self.at);
        buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn memory_follows_the_bytes_that_arrived_not_what_a_length_claims() {
    // A 64 MiB length, 1000 bytes of its frame, then the end.
    let mut liar = b"dendro-repl\0\x01\x00".to_vec();
    liar.extend_from_slice(&(64u32 << 20).to_le_bytes());
    liar.extend_from_slice(&[3; 1000]);
    let mut r = FrameReader::new(Watched {
        bytes: liar,
        at: 0,
        chunk: 100,
        offered: Vec::new(),
    })
    .unwrap();
    let err = r.next_frame().map(|_| ()).unwrap_err();
    assert!(matches!(
        err.kind(),
        ReadErrorKind::Truncated { needed, have: 1004 } if *needed == 4 + (64 << 20)
    ));
    assert_eq!(r.buffer_len(), 4096, "grown past the bytes that arrived");

    // A real 1 MiB frame arriving 10 KiB at a time: the buffer is never
    // more than twice what arrived (and the 4 KiB start), and it ends the
    // frame's size, not a byte more than it reached.
    let big = vec![0xab; 1 << 20];
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_rows(
        RowsHeader {
            source: 0,
            seq: 0,
            index_state: NO_INDEX_STATE,
        },
        [Row {
            stream: "s",
            ts: 0,
            wall_offset: 0,
            row: &big,
        }],
    )
    .unwrap();
    let stream = w.into_inner();
    let mut r = FrameReader::new(Watched {
        bytes: stream.clone(),
        at: 0,
        chunk: 10 << 10,
        offered: Vec::new(),
    })
    .unwrap();
    assert!(matches!(r.next_frame().unwrap(), Some(Frame::Rows(_))));
    assert!(r.next_frame().unwrap().is_none());
    assert_eq!(r.buffer_len(), stream.len() - 14, "one frame's size");
    let watched = r.get_ref();
    for &(arrived, room) in &watched.offered {
        let buffer = arrived.saturating_sub(14) + room;
        assert!(
            buffer <= 2 * arrived + 4096,
            "a buffer of {buffer} with {arrived} bytes arrived"
        );
    }
}

#[test]
fn a_transport_that_fails_inside_the_preamble_is_placed_at_the_preamble() {
    struct FailsAfter(&'static [u8]);
    impl Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::Error::other("reset by peer"));
            }
            let n = buf.len().min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let err = FrameReader::new(FailsAfter(b"dendro")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "preamble: the transport failed: reset by peer"
    );
    assert_eq!(err.frame(), 0);
}

#[test]
fn write_encoded_forwards_one_whole_frame_and_refuses_anything_else() {
    let bytes = stream(&frames_with(10));
    let mut reader = FrameReader::new(&bytes[..]).unwrap().yield_unknown(true);
    let mut out = FrameWriter::new(Vec::new()).unwrap();
    let mut pieces = Vec::new();
    while let Some((_, frame)) = reader.next_frame_with_bytes().unwrap() {
        out.write_encoded(frame).unwrap();
        pieces.push(frame.to_vec());
    }
    // Every frame, the unknown kind among them, forwarded byte for byte.
    assert_eq!(out.frames(), 4);
    assert_eq!(out.into_inner(), bytes);

    let mut w = FrameWriter::new(Vec::new()).unwrap();
    let two = [&pieces[0][..], &pieces[1]].concat();
    let refused = |r: Result<(), dendro_wire_std::WriteError>| r.unwrap_err().to_string();
    assert_eq!(
        refused(w.write_encoded(&two)),
        format!(
            "{} bytes given as one frame, and its length prefix says {}",
            two.len(),
            pieces[0].len()
        )
    );
    let short = &pieces[0][..pieces[0].len() - 1];
    assert!(refused(w.write_encoded(short)).contains("bytes given as one frame"));
    // A whole frame by its length whose fields break a rule.
    let mut bad = pieces[3].clone(); // the ClockOffset
    let last = bad.len() - 1;
    bad.truncate(last);
    bad[..4].copy_from_slice(&(last as u32 - 4).to_le_bytes());
    assert!(matches!(
        w.write_encoded(&bad),
        Err(dendro_wire_std::WriteError::Malformed(_))
    ));
    // Nothing refused was written.
    assert_eq!(w.frames(), 0);
    assert_eq!(w.into_inner(), dendro_wire_core::PREAMBLE);
}
