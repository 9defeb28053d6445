//! Zero heap allocations while decoding and encoding a stream holding every
//! kind, iterating every row and map, and running both state machines —
//! proven with a counting global allocator. The only test in this binary, so
//! nothing else allocates while it counts.

mod common;

#[path = "common/counting.rs"]
mod counting;

use dendro_wire_core::*;

/// Everything the core does on a stream, over `stream`, with `out` as the
/// encoder's buffer. Returns a checksum so nothing is optimized away.
fn work(stream: &[u8], out: &mut [u8]) -> u64 {
    let mut sum = 0u64;
    let mut sub = Subscriber::<8>::new();
    let mut publisher = Publisher::<8>::new();
    let mut at = match check_preamble(stream).unwrap() {
        Status::Complete(n) => n,
        Status::Incomplete { .. } => unreachable!(),
    };
    while let Status::Complete((frame, used)) = decode(&stream[at..]).unwrap() {
        at += used;
        match frame {
            Frame::Rows(r) => {
                for row in r.rows {
                    sum += row.ts as u64 + row.stream.len() as u64 + row.row.len() as u64;
                }
            }
            Frame::Handshake(h) => {
                for (k, v) in h.labels.iter().chain(h.metadata) {
                    sum += (k.len() + v.len()) as u64;
                }
                // Give the stream's sources to the publisher in order.
                let _ = publisher.handshake(0);
            }
            _ => {}
        }
        let _ = sub.admit(&frame);
        let n = frame.emit(out).unwrap();
        assert_eq!(&out[..n], &stream[at - used..at]);
        sum += frame.buffer_len().unwrap() as u64;
    }
    let mut b = RowsBuilder::new(out, 0, 0, NO_INDEX_STATE).unwrap();
    b.push(&common::ROW).unwrap();
    sum += b.finish().unwrap() as u64;
    let mut hash = SlotSetHash::new();
    hash.insert(b"cpu0");
    sum += hash.state().0 & 1;
    sum += emit_preamble(out).unwrap() as u64;
    sum
}

#[test]
fn decoding_and_encoding_every_kind_allocates_nothing() {
    let mut stream = b"dendro-repl\0\x01\x00".to_vec();
    // Handshakes for every ordinal the golden frames name, then every kind.
    for source in 0..6u32 {
        let h = Handshake {
            source,
            ..common::handshake()
        };
        let mut buf = vec![0; h.buffer_len().unwrap()];
        h.emit(&mut buf).unwrap();
        stream.extend_from_slice(&buf);
    }
    stream.extend_from_slice(&common::stream_body());
    let mut out = vec![0u8; 4096];
    work(&stream, &mut out); // warm up anything lazily initialized

    let (sum, allocations) = counting::count(|| work(&stream, &mut out));
    assert!(sum > 0);
    assert_eq!(allocations, 0, "heap allocations on the core's path");
}
