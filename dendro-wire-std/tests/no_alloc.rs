//! FrameReader allocates nothing per frame once its buffer has grown to the
//! largest frame: proven with a counting global allocator. The only test in
//! this binary, so nothing else allocates while it counts.

use dendro_wire_core::{Frame, Subscriber};
use dendro_wire_std::{FrameReader, FrameWriter, OwnedFrame};
use dendro_wire_test_support::counting::{self, Counting};
use dendro_wire_test_support::fixtures::handshake;
use dendro_wire_test_support::streams::write_rows_frame;

#[global_allocator]
static COUNTING: Counting = Counting;

#[test]
fn reading_frames_in_steady_state_allocates_nothing() {
    let row = [5u8; 32];
    let big = vec![1u8; 200_000];
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_owned(&OwnedFrame::from(&handshake(0))).unwrap();
    for seq in 0..2000u64 {
        // The largest frame comes first, so the buffer is grown after it.
        let row: &[u8] = if seq == 0 { &big } else { &row };
        write_rows_frame(&mut w, seq, 64, row);
        if seq % 100 == 0 {
            w.write_owned(&OwnedFrame::Unknown {
                kind: 99,
                payload: vec![0; 10],
            })
            .unwrap();
        }
    }
    let bytes = w.into_inner();

    let mut reader = FrameReader::new(&bytes[..]).unwrap();
    let mut subscriber = Subscriber::<8>::new();
    let mut count = |reader: &mut FrameReader<&[u8]>, frames: usize| {
        let mut rows = 0;
        for _ in 0..frames {
            let frame = reader.next_frame().unwrap().unwrap();
            subscriber.admit(&frame).unwrap();
            if let Frame::Rows(r) = frame {
                rows += r.rows.iter().map(|r| r.row.len()).sum::<usize>();
            }
        }
        rows
    };
    count(&mut reader, 3);
    let (rows, allocations) = counting::count(|| count(&mut reader, 1900));
    assert!(rows > 0);
    assert_eq!(allocations, 0, "allocations while reading 1900 frames");
    assert!(
        reader.unknown() > 0,
        "unknown frames were skipped on the way"
    );

    // The tokio codec encodes borrowed frames in place: once its buffer has
    // room, no allocation per frame.
    #[cfg(feature = "tokio")]
    {
        use tokio_util::codec::Encoder;
        let mut reader = FrameReader::new(&bytes[..]).unwrap();
        let mut codec = dendro_wire_std::tokio_codec::FrameCodec::new();
        let mut out = bytes::BytesMut::with_capacity(2 * bytes.len());
        // The handshake and the largest frame first, so the reader's buffer
        // has grown before counting.
        for _ in 0..2 {
            let frame = reader.next_frame().unwrap().unwrap();
            codec.encode(&frame, &mut out).unwrap();
        }
        let (encoded, allocations) = counting::count(|| {
            let mut n = 2;
            while let Some(frame) = reader.next_frame().unwrap() {
                codec.encode(&frame, &mut out).unwrap();
                n += 1;
            }
            n
        });
        assert!(encoded > 1900);
        assert_eq!(
            allocations, 0,
            "allocations while encoding {encoded} frames"
        );
        assert_eq!(
            out.len(),
            bytes.len() - 20 * 15,
            "the stream less its unknown frames"
        );
    }
}
