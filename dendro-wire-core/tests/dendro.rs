//! Against the reference: dendro 0.6.1 writes the golden bytes for the golden
//! frames, and for many generated frames our encoder writes what dendro
//! writes and our decoder reads back what dendro meant.

mod common;

use dendro_wire_test_support::dendro_map::{to_dendro, with_view};
use dendro_wire_test_support::gen::Gen;

use dendro::replicate::wire::{decode_payload, encode};
use dendro_wire_core::*;

#[test]
fn dendro_writes_the_golden_bytes() {
    for (frame, bytes) in common::all() {
        if let Frame::Unknown { .. } = frame {
            continue;
        }
        assert_eq!(encode(&to_dendro(&frame)).unwrap(), bytes, "{frame:?}");
        assert_eq!(decode_payload(&bytes[4..]).unwrap(), to_dendro(&frame));
    }
}

#[test]
fn generated_frames_encode_and_decode_as_dendro_does() {
    let mut g = Gen::new(0x9e37_79b9_7f4a_7c15);
    for i in 0..5000 {
        let d = g.frame();
        let theirs = encode(&d).unwrap();
        with_view(&d, |ours| {
            let mut buf = vec![0; ours.buffer_len().unwrap()];
            ours.emit(&mut buf).unwrap();
            assert_eq!(buf, theirs, "frame {i}: {d:?}");
        });
        let Status::Complete((view, used)) = decode(&theirs).unwrap() else {
            panic!("frame {i} incomplete")
        };
        assert_eq!(used, theirs.len());
        assert_eq!(to_dendro(&view), d, "frame {i}");
    }
}
