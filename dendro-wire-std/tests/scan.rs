//! The scanner over bytes that are not one clean stream: garbage around
//! streams, captures back to back, a stream cut and followed by another, a
//! preamble split across reads, and a preamble inside a frame's payload,
//! which starts a stream as every preamble does.

use std::io::Read;

use dendro_wire_core::PREAMBLE;
use dendro_wire_std::scan::{Found, Scanner};
use dendro_wire_std::{FrameWriter, OwnedFrame, OwnedRow, ReadErrorKind, NO_INDEX_STATE};
use dendro_wire_test_support::chunked::Chunked;

/// One stream: a handshake, then rows whose one row holds `row`.
fn stream(row: &[u8]) -> Vec<u8> {
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_owned(&OwnedFrame::Handshake {
        source: 0,
        uuid: None,
        labels: [("host".to_string(), "a".to_string())].into(),
        metadata: Default::default(),
        clock_anchor_wall_ns: 0,
        complete: false,
    })
    .unwrap();
    w.write_owned(&OwnedFrame::Rows {
        source: 0,
        seq: 1,
        index_state: NO_INDEX_STATE,
        rows: vec![OwnedRow {
            stream: "s".into(),
            ts: 1,
            wall_offset: 0,
            row: row.to_vec(),
        }],
    })
    .unwrap();
    w.into_inner()
}

/// What the scanner said, one line per event; a stream's end with its
/// length, frames and whether it broke.
fn scan(input: impl Read) -> Vec<String> {
    let mut scanner = Scanner::new(input);
    let mut seen = Vec::new();
    while let Some(found) = scanner.next().unwrap() {
        seen.push(match found {
            Found::Unread { offset, len } => format!("unread {offset}+{len}"),
            Found::Stream { offset } => format!("stream {offset}"),
            Found::Frame(_, at) => format!("frame {} at {}", at.frame, at.offset),
            Found::End(end) => format!(
                "end {}+{} frames {} {}",
                end.offset,
                end.len,
                end.frames,
                match &end.error {
                    None => "clean".to_string(),
                    Some(e) => match e.kind() {
                        ReadErrorKind::Truncated { .. } => "truncated".to_string(),
                        other => format!("{other:?}"),
                    },
                }
            ),
        });
    }
    seen
}

#[test]
fn streams_back_to_back_are_each_found_whole_and_clean() {
    let one = stream(b"row");
    let n = one.len();
    let blob = [&one[..], &one[..]].concat();
    let seen = scan(&blob[..]);
    // Each stream: its start, its two frames, its clean end at the next
    // preamble or the end of the input.
    assert_eq!(seen.len(), 8, "{seen:?}");
    assert_eq!(seen[0], "stream 0");
    assert_eq!(seen[1], "frame 1 at 14");
    assert!(seen[2].starts_with("frame 2 at "), "{seen:?}");
    assert_eq!(seen[3], format!("end 0+{n} frames 2 clean"));
    assert_eq!(seen[4], format!("stream {n}"));
    assert_eq!(seen[7], format!("end {n}+{n} frames 2 clean"));
}

#[test]
fn garbage_before_between_and_after_is_reported_never_read() {
    let one = stream(b"row");
    let n = one.len() as u64;
    let blob = [&b"junk"[..], &one, b"xy", &one, b"tail!"].concat();
    let seen = scan(&blob[..]);
    assert_eq!(seen[0], "unread 0+4");
    assert_eq!(seen[1], "stream 4");
    // After the first stream's second frame come "xy": not a frame (its
    // length prefix is not whole or claims too much), so the stream breaks
    // there and the two bytes are unread up to the next preamble.
    let end = &seen[4];
    assert!(end.starts_with(&format!("end 4+{n} frames")), "{seen:?}");
    assert!(!end.ends_with("clean"), "{seen:?}");
    assert_eq!(seen[5], format!("unread {}+2", 4 + n));
    assert_eq!(seen[6], format!("stream {}", 6 + n));
    assert_eq!(seen[10], format!("unread {}+5", 6 + 2 * n), "{seen:?}");
    assert_eq!(seen.len(), 11, "{seen:?}");
}

#[test]
fn a_stream_cut_inside_a_frame_then_another_stream_is_found() {
    let one = stream(&[7; 300]);
    let n = one.len();
    // Cut inside the handshake: the handshake's length claims bytes the
    // next stream begins with, its preamble among them, so the handshake
    // is truncated where that preamble starts.
    let cut = &one[..20];
    let blob = [cut, &one[..]].concat();
    let seen = scan(&blob[..]);
    assert_eq!(seen[0], "stream 0");
    assert_eq!(seen[1], "end 0+14 frames 1 truncated", "{seen:?}");
    // The search resumes at the frame the stream broke at.
    assert_eq!(seen[2], "unread 14+6");
    assert_eq!(seen[3], "stream 20");
    assert_eq!(seen.last().unwrap(), &format!("end 20+{n} frames 2 clean"));
    assert_eq!(seen.len(), 7, "{seen:?}");
}

#[test]
fn a_stream_cut_at_the_end_of_the_input_is_truncated() {
    let one = stream(&[7; 300]);
    let cut = &one[..one.len() - 100];
    let seen = scan(cut);
    let end = &seen[seen.len() - 2];
    assert!(end.ends_with("truncated"), "{seen:?}");
    assert!(seen.last().unwrap().starts_with("unread "), "{seen:?}");
}

#[test]
fn a_preamble_inside_a_frame_starts_a_stream_and_cuts_the_frame() {
    let one = stream(&[PREAMBLE, PREAMBLE].concat());
    let seen = scan(&one[..]);
    // The Rows frame holding the preambles is cut where the first starts;
    // a stream is read from each.
    assert_eq!(seen[0], "stream 0");
    assert_eq!(seen[1], "frame 1 at 14");
    assert!(seen[2].ends_with("frames 2 truncated"), "{seen:?}");
    assert!(
        seen.iter().filter(|l| l.starts_with("stream ")).count() == 3,
        "{seen:?}"
    );
}

#[test]
fn a_preamble_split_across_reads_and_the_buffer_is_found() {
    let one = stream(b"row");
    // Past the scanner's 256 KiB reads, with the preamble across the
    // boundary, read one odd chunk at a time.
    let pad = vec![0xAB; 256 * 1024 - 5];
    let blob = [&pad[..], &one[..]].concat();
    for chunk in [usize::MAX, 4093, 7] {
        let seen = scan(Chunked::new(&blob, chunk));
        assert_eq!(seen[0], format!("unread 0+{}", pad.len()), "chunk {chunk}");
        assert_eq!(seen[1], format!("stream {}", pad.len()), "chunk {chunk}");
        assert_eq!(
            seen.last().unwrap(),
            &format!("end {}+{} frames 2 clean", pad.len(), one.len()),
            "chunk {chunk}"
        );
    }
}

#[test]
fn no_preamble_at_all_is_one_unread_run_and_empty_input_is_nothing() {
    assert_eq!(scan(&[0u8; 1000][..]), ["unread 0+1000"]);
    assert!(scan(&[][..]).is_empty());
    // A preamble's first bytes at the very end are not a stream.
    assert_eq!(scan(&PREAMBLE[..10]), ["unread 0+10"]);
}

/// A stream cut at any byte and followed by another: the other is found
/// whole, though the cut frame's claimed length runs into its preamble.
#[test]
fn a_stream_cut_anywhere_then_another_is_found_whole() {
    let one = stream(&[7; 40]);
    let n = one.len();
    for cut in 15..n {
        let blob = [&one[..cut], &one[..]].concat();
        let seen = scan(&blob[..]);
        assert_eq!(
            seen.last().unwrap(),
            &format!("end {cut}+{n} frames 2 clean"),
            "cut at {cut}: {seen:?}"
        );
        assert!(
            seen.contains(&format!("stream {cut}")),
            "cut at {cut}: {seen:?}"
        );
    }
}
