//! SliceReader against FrameReader over the same bytes: the same frames at
//! the same places, the same counts, and the same error, said the same way,
//! wherever a stream is cut or damaged.

use dendro_wire_core::FrameDecoder;
use dendro_wire_std::{
    FrameReader, FrameWriter, OwnedFrame, OwnedRow, Position, ReadError, SliceReader,
};
use dendro_wire_test_support::fixtures::handshake;
use dendro_wire_test_support::streams::frames_with_unknown;

/// A small stream holding an unknown frame and rows of two streams.
fn stream() -> Vec<u8> {
    let rows = ["cpu/usage", "cpu/irq", "cpu/usage"]
        .iter()
        .enumerate()
        .map(|(i, s)| OwnedRow {
            stream: s.to_string(),
            ts: i as i64,
            wall_offset: -1,
            row: vec![i as u8; 40],
        })
        .collect();
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    for f in &frames_with_unknown(OwnedFrame::from(&handshake(0)), rows) {
        w.write_owned(f).unwrap();
    }
    w.into_inner()
}

/// What a reader made of a stream: each frame with where it stood, then the
/// counts, then the error if any, with its place.
#[derive(Debug, PartialEq)]
struct Read {
    frames: Vec<(OwnedFrame, Position)>,
    counts: (u64, u64, u64),
    error: Option<(String, u64, u64)>,
}

/// Read every frame of a reader that `made` (or could not make), `next`
/// handing each out owned, and count as `counts` says.
fn read_all<R>(
    made: Result<R, ReadError>,
    mut next: impl FnMut(&mut R) -> Result<Option<(OwnedFrame, Position)>, ReadError>,
    counts: impl Fn(&R) -> (u64, u64, u64),
) -> Read {
    let said = |e: ReadError| Some((e.to_string(), e.frame(), e.offset()));
    let mut reader = match made {
        Ok(r) => r,
        Err(e) => {
            return Read {
                frames: Vec::new(),
                counts: (0, 0, 0),
                error: said(e),
            }
        }
    };
    let mut frames = Vec::new();
    let error = loop {
        match next(&mut reader) {
            Ok(Some(frame)) => frames.push(frame),
            Ok(None) => break None,
            Err(e) => break said(e),
        }
    };
    Read {
        frames,
        counts: counts(&reader),
        error,
    }
}

fn by_frame_reader(bytes: &[u8], yield_unknown: bool, decoder: FrameDecoder) -> Read {
    read_all(
        FrameReader::with_decoder(bytes, decoder).map(|r| r.yield_unknown(yield_unknown)),
        |r| Ok(r.next_frame_at()?.map(|(f, at)| (OwnedFrame::from(&f), at))),
        |r| (r.frames(), r.unknown(), r.offset()),
    )
}

fn by_slice_reader(bytes: &[u8], yield_unknown: bool, decoder: FrameDecoder) -> Read {
    read_all(
        SliceReader::with_decoder(bytes, decoder).map(|r| r.yield_unknown(yield_unknown)),
        |r| Ok(r.next_frame_at()?.map(|(f, at)| (OwnedFrame::from(&f), at))),
        |r| (r.frames(), r.unknown(), r.offset()),
    )
}

fn agree(bytes: &[u8], what: &str) {
    for yield_unknown in [false, true] {
        let want = by_frame_reader(bytes, yield_unknown, FrameDecoder::new());
        let got = by_slice_reader(bytes, yield_unknown, FrameDecoder::new());
        assert_eq!(got, want, "{what}, yield_unknown {yield_unknown}");
    }
}

#[test]
fn a_whole_stream_reads_as_frame_reader_reads_it() {
    let bytes = stream();
    agree(&bytes, "whole");
    let read = by_slice_reader(&bytes, false, FrameDecoder::new());
    assert_eq!(read.frames.len(), 3, "the unknown frame skipped");
    assert_eq!(read.counts, (4, 1, bytes.len() as u64));
    assert_eq!(read.error, None);
}

#[test]
fn a_stream_cut_anywhere_says_what_frame_reader_says() {
    let bytes = stream();
    for cut in 0..bytes.len() {
        agree(&bytes[..cut], &format!("cut at {cut}"));
    }
    // Cut inside the Rows frame: a truncation, placed at that frame.
    let read = by_slice_reader(&bytes[..bytes.len() - 30], false, FrameDecoder::new());
    let (message, frame, _) = read.error.expect("a truncation");
    assert_eq!(frame, 3);
    assert!(
        message.contains("the stream ends inside this frame"),
        "{message}"
    );
}

#[test]
fn a_damaged_stream_says_what_frame_reader_says() {
    let bytes = stream();
    for at in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[at] ^= flip;
            agree(&damaged, &format!("byte {at} ^ {flip:#x}"));
        }
    }
    agree(b"GET / HTTP/1.1\r\n\r\n", "not a stream");
}

#[test]
fn the_callers_limit_is_the_same_limit() {
    let bytes = stream();
    let limit = || FrameDecoder::new().with_max_frame_bytes(64);
    let want = by_frame_reader(&bytes, false, limit());
    let got = by_slice_reader(&bytes, false, limit());
    assert_eq!(got, want);
    let (message, _, _) = got.error.expect("the Rows frame is above 64 bytes");
    assert!(message.contains("above the 64-byte limit"), "{message}");
}

#[test]
fn frames_borrow_the_bytes_and_outlive_the_reader() {
    let bytes = stream();
    let frames: Vec<_> = {
        let mut reader = SliceReader::new(&bytes).unwrap();
        std::iter::from_fn(|| reader.next_frame().unwrap()).collect()
    };
    assert_eq!(frames.len(), 3);
}
