//! A stream read from a buffer that fills up: "incomplete" is exact, never an
//! error, until each frame is whole; a frame cut inside is refused.

mod common;

use common::*;
use dendro_wire_core::*;

/// Decode every whole frame at the start of `buf`; return the frames and
/// what the decoder said about the rest.
fn decode_all(buf: &[u8]) -> (Vec<Frame<'_>>, Status<()>, usize) {
    let mut frames = Vec::new();
    let mut at = 0;
    loop {
        match decode(&buf[at..]).unwrap_or_else(|e| panic!("at {at}: {e}")) {
            Status::Complete((frame, used)) => {
                frames.push(frame);
                at += used;
            }
            Status::Incomplete { needed } => return (frames, Status::Incomplete { needed }, at),
        }
    }
}

#[test]
fn a_stream_cut_at_every_offset_is_incomplete_until_each_frame_is_whole() {
    let body = stream_body();
    let golden = all();
    // The offset at which each frame ends.
    let ends: Vec<usize> = golden
        .iter()
        .scan(0, |end, (_, b)| {
            *end += b.len();
            Some(*end)
        })
        .collect();
    for cut in 0..=body.len() {
        let (frames, status, at) = decode_all(&body[..cut]);
        let whole = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(frames.len(), whole, "cut at {cut}");
        for (got, (want, _)) in frames.iter().zip(&golden) {
            assert_eq!(got, want);
        }
        let Status::Incomplete { needed } = status else {
            unreachable!()
        };
        let partial = cut - at;
        let want = if partial < 4 {
            4 - partial
        } else {
            ends[whole] - cut
        };
        if cut < body.len() {
            assert_eq!(needed, want, "cut at {cut}");
        } else {
            assert_eq!((needed, partial), (4, 0), "a clean end");
        }
    }
}

#[test]
fn a_frame_whose_length_stops_inside_its_fields_is_refused_at_every_cut() {
    for (frame, bytes) in all() {
        if let Frame::Unknown { .. } = frame {
            continue; // an unknown payload has no fields to cut
        }
        for len in 1..bytes.len() - 4 {
            let mut cut = bytes[..4 + len].to_vec();
            cut[..4].copy_from_slice(&(len as u32).to_le_bytes());
            let e = decode(&cut).expect_err(&format!("{frame:?} cut to len {len}"));
            assert!(
                matches!(
                    e.rule(),
                    Rule::EndsEarly { .. } | Rule::CountTooLarge { .. }
                ),
                "{frame:?} cut to len {len}: {e}"
            );
        }
    }
}

#[test]
fn a_frame_delivered_one_byte_at_a_time_needs_exactly_what_is_missing() {
    for (want, bytes) in all() {
        for have in 0..bytes.len() {
            let need = if have < 4 {
                4 - have
            } else {
                bytes.len() - have
            };
            assert_eq!(
                decode(&bytes[..have]).unwrap(),
                Status::Incomplete { needed: need }
            );
        }
        assert_eq!(decode_one(&bytes).unwrap(), want);
    }
}

#[test]
fn frame_len_reads_only_the_prefix() {
    let d = FrameDecoder::new();
    let rows = rows_bytes();
    assert_eq!(d.frame_len(&rows[..4]), Ok(Status::Complete(66)));
    assert_eq!(
        d.frame_len(&rows[..1]),
        Ok(Status::Incomplete { needed: 3 })
    );
}
