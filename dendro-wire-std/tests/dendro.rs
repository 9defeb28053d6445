//! Differential tests against dendro 0.6.1: generated streams read and write
//! the same on both sides, and damaged streams are refused by both or read
//! the same by both, except where docs/PROTOCOL.md §8 says this project is stricter.

use dendro::replicate::wire::{encode_frame, write_preamble, FrameReader as DReader};
use dendro::replicate::Frame as DFrame;
use dendro_wire_core::Rule;
use dendro_wire_std::{FrameReader, FrameWriter, OwnedFrame, ReadErrorKind};
use dendro_wire_test_support::dendro_map::with_view;
use dendro_wire_test_support::gen::Gen;

/// dendro's frame as ours: through the one mapping to a view, then the
/// library's own.
fn from_dendro(d: &DFrame) -> OwnedFrame {
    with_view(d, |view| OwnedFrame::from(view))
}

/// A generated stream: its frames, and dendro's bytes for it (an unknown
/// frame, which dendro cannot write, is appended to its bytes by hand).
fn generated(g: &mut Gen, n: usize) -> (Vec<OwnedFrame>, Vec<u8>) {
    let mut bytes = Vec::new();
    write_preamble(&mut bytes).unwrap();
    let mut frames = Vec::new();
    for _ in 0..n {
        if g.below(10) == 0 {
            let (kind, payload) = g.unknown();
            bytes.extend_from_slice(&(payload.len() as u32 + 1).to_le_bytes());
            bytes.push(kind);
            bytes.extend_from_slice(&payload);
            frames.push(OwnedFrame::Unknown { kind, payload });
        } else {
            let d = g.frame();
            encode_frame(&d, &mut bytes).unwrap();
            frames.push(from_dendro(&d));
        }
    }
    (frames, bytes)
}

/// What a reader made of a stream: the known frames before any error, the
/// unknown frames skipped, and the error.
#[derive(Debug)]
struct Outcome<E> {
    frames: Vec<OwnedFrame>,
    skipped: u64,
    error: Option<E>,
}

/// Read a whole stream with either reader: `open` reads the preamble,
/// `next` the next known frame, `skipped` counts the unknown ones.
fn read_with<R, E>(
    open: Result<R, E>,
    mut next: impl FnMut(&mut R) -> Result<Option<OwnedFrame>, E>,
    skipped: impl Fn(&R) -> u64,
) -> Outcome<E> {
    let mut frames = Vec::new();
    let mut reader = match open {
        Ok(r) => r,
        Err(e) => {
            return Outcome {
                frames,
                skipped: 0,
                error: Some(e),
            }
        }
    };
    let error = loop {
        match next(&mut reader) {
            Ok(Some(f)) => frames.push(f),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    Outcome {
        frames,
        skipped: skipped(&reader),
        error,
    }
}

fn ours(bytes: &[u8]) -> Outcome<dendro_wire_std::ReadError> {
    read_with(
        FrameReader::new(bytes),
        |r| Ok(r.next_frame()?.map(|f| OwnedFrame::from(&f))),
        FrameReader::unknown,
    )
}

fn theirs(bytes: &[u8]) -> Outcome<dendro::Error> {
    read_with(
        DReader::new(bytes),
        |r| Ok(r.next_frame()?.map(|f| from_dendro(&f))),
        DReader::skipped,
    )
}

#[test]
fn generated_streams_read_and_write_as_dendro_does() {
    let mut g = Gen::new(0x2545_f491_4f6c_dd1d);
    for round in 0..200 {
        let n = 1 + g.below(30) as usize;
        let (frames, dendro_bytes) = generated(&mut g, n);
        // Ours writes dendro's bytes.
        let mut w = FrameWriter::new(Vec::new()).unwrap();
        for f in &frames {
            w.write_owned(f).unwrap();
        }
        assert_eq!(w.into_inner(), dendro_bytes, "round {round}");
        // Ours reads dendro's bytes to the same frames, and skips as it does.
        let (o, t) = (ours(&dendro_bytes), theirs(&dendro_bytes));
        assert!(o.error.is_none(), "round {round}: {:?}", o.error);
        assert!(t.error.is_none(), "round {round}: {:?}", t.error);
        let known: Vec<_> = frames
            .into_iter()
            .filter(|f| !matches!(f, OwnedFrame::Unknown { .. }))
            .collect();
        assert_eq!(o.frames, known, "round {round}");
        assert_eq!(o.frames, t.frames, "round {round}");
        assert_eq!(o.skipped, t.skipped, "round {round}");
    }
}

/// One way to damage a stream, chosen and placed by the generator.
fn damage(g: &mut Gen, bytes: &mut Vec<u8>) -> String {
    match g.below(3) {
        0 => {
            let at = g.below(bytes.len() as u64) as usize;
            let bit = g.below(8);
            bytes[at] ^= 1 << bit;
            format!("bit {bit} flipped at {at}")
        }
        1 => {
            let at = g.below(bytes.len() as u64) as usize;
            bytes.truncate(at);
            format!("cut at {at}")
        }
        _ => {
            // Walk to a random frame and change its length prefix.
            let mut at = 14;
            let mut starts = Vec::new();
            while at + 4 <= bytes.len() {
                starts.push(at);
                at += 4 + u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            }
            let Some(&start) = starts.get(g.below(starts.len().max(1) as u64) as usize) else {
                return "nothing to alter".into();
            };
            let len = u32::from_le_bytes(bytes[start..start + 4].try_into().unwrap());
            let new = match g.below(4) {
                0 => len.wrapping_add(1 + g.below(8) as u32),
                1 => len.saturating_sub(1 + g.below(8) as u32),
                2 => 0,
                _ => g.next_u64() as u32,
            };
            bytes[start..start + 4].copy_from_slice(&new.to_le_bytes());
            format!("length at {start} changed from {len} to {new}")
        }
    }
}

/// Whether an error of ours is one docs/PROTOCOL.md §8 says this project raises where
/// dendro does not: map key order, a canonical uuid, and a stream that ends
/// inside a length prefix (dendro calls that a clean end).
fn stricter(e: &dendro_wire_std::ReadError) -> bool {
    match e.kind() {
        ReadErrorKind::Truncated { needed: 4, have } => (1..=3).contains(have),
        _ => matches!(
            e.wire_error().map(|w| w.rule()),
            Some(Rule::KeysNotAscending | Rule::NotACanonicalUuid)
        ),
    }
}

#[test]
fn damaged_streams_are_refused_or_read_alike() {
    let mut g = Gen::new(0xdead_beef_cafe_f00d);
    let (mut both_refuse, mut both_read, mut stricter_refusals) = (0, 0, 0);
    for round in 0..3000 {
        let n = 1 + g.below(12) as usize;
        let (_, mut bytes) = generated(&mut g, n);
        let what = damage(&mut g, &mut bytes);
        let (o, t) = (ours(&bytes), theirs(&bytes));
        let ctx = format!(
            "round {round}, {what}: ours {:?}, dendro's {:?}",
            o.error, t.error
        );
        match (&o.error, &t.error) {
            (None, None) => {
                both_read += 1;
                assert_eq!(o.frames, t.frames, "{ctx}");
                assert_eq!(o.skipped, t.skipped, "{ctx}");
            }
            (Some(_), Some(_)) => {
                both_refuse += 1;
                // Ours may stop earlier, on a stricter rule, never later.
                assert!(t.frames.starts_with(&o.frames), "{ctx}");
            }
            (Some(e), None) => {
                assert!(
                    stricter(e),
                    "{ctx}: only ours refused, on a rule dendro shares"
                );
                assert!(t.frames.starts_with(&o.frames), "{ctx}");
                stricter_refusals += 1;
            }
            (None, Some(_)) => panic!("{ctx}: dendro refused what ours accepted"),
        }
    }
    // The generator must reach every outcome, or this test proves little.
    assert!(both_refuse > 100, "{both_refuse} refused by both");
    assert!(both_read > 100, "{both_read} read by both");
    assert!(
        stricter_refusals > 10,
        "{stricter_refusals} refused by ours alone"
    );
}
