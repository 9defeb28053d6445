//! Zero heap allocations while decoding and encoding a stream holding every
//! kind, iterating every row and map, and running both state machines — the
//! publisher's row path included — proven with a counting global allocator.
//! The only test in this binary, so nothing else allocates while it counts.

mod common;

use dendro_wire_core::*;
use dendro_wire_test_support::counting::{self, Counting};

#[global_allocator]
static COUNTING: Counting = Counting;

/// Everything the core does on a stream, over `stream`, with `out` as the
/// encoder's buffer. Returns a checksum so nothing is optimized away.
fn work(stream: &[u8], out: &mut [u8]) -> u64 {
    let mut sum = 0u64;
    let mut sub = Subscriber::<8>::new();
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
            }
            _ => {}
        }
        let _ = sub.admit(&frame);
        let n = frame.emit(out).unwrap();
        assert_eq!(&out[..n], &stream[at - used..at]);
        sum += frame.buffer_len().unwrap() as u64;
    }
    let mut b = RowsBuilder::new(
        out,
        RowsHeader {
            source: 0,
            seq: 0,
            index_state: NO_INDEX_STATE,
        },
    )
    .unwrap();
    b.push(&common::ROW).unwrap();
    sum += b.finish().unwrap() as u64;
    let mut hash = SlotSetHash::new();
    hash.insert(b"cpu0");
    sum += hash.state().0 & 1;
    sum += emit_preamble(out).unwrap() as u64;
    sum + publish(out)
}

/// The publisher machine as an agent drives it: declared sources in fixed
/// arrays, a connection, intervals of rows and slot changes, every frame
/// polled (copied out and lent), frames sent by hand, a reconnect.
fn publish(out: &mut [u8]) -> u64 {
    let mut p: Publisher<[u8; 4096], 2> = Publisher::new(PublisherConfig {
        full_every: 3,
        frame_buffer: out.len(),
    });
    let decl = SourceDecl {
        uuid: Some(common::UUID),
        labels: Map::from_pairs(&[("host", "a")]),
        metadata: Map::EMPTY,
        clock_anchor_wall_ns: 0,
        complete: false,
        streams: &["cpu/usage", "cpu/irq", "a-name-longer-than-sixteen-bytes"],
        index_stream: Some("cpu/slots"),
    };
    let cpu = p.add_source(&decl, [0; 4096]).unwrap();
    let mem = p
        .add_source(
            &SourceDecl {
                streams: &["mem/used"],
                index_stream: None,
                ..decl
            },
            [0; 4096],
        )
        .unwrap();
    let mut sum = 0u64;
    for interval in 0..12i64 {
        if interval % 5 == 0 {
            p.connected();
        }
        for i in 0..30 {
            let ts = interval * 100 + i;
            p.observe(cpu.stream((i % 3) as u32), ts, -1, &[i as u8; 32])
                .unwrap();
        }
        p.observe(mem.stream(0), interval, 0, &[1; 16]).unwrap();
        p.set_slot(cpu, &[b'c', (interval % 4) as u8], &[interval as u8])
            .unwrap();
        if interval % 3 == 0 {
            p.remove_slot(cpu, &[b'c', 1]).unwrap();
        }
        p.end_interval();
        if interval % 2 == 0 {
            while let Some((bytes, _)) = p.poll_transmit(out).unwrap() {
                sum += bytes.len() as u64;
            }
        } else {
            while let Some((bytes, t)) = p.poll_frame().unwrap() {
                sum += bytes.len() as u64 + u64::from(t.rows);
            }
        }
        let offset = Frame::ClockOffset(ClockOffset {
            source: 0,
            ts: interval,
            offset_ns: 1,
        });
        sum += p.encode_passthrough(&offset, out).unwrap() as u64;
    }
    let labels = Map::from_pairs(&[("host", "b")]);
    sum += p
        .update_source(cpu, 0, labels, Map::EMPTY, out)
        .unwrap()
        .unwrap_or(0) as u64;
    assert_eq!(p.stats().rows_refused, 0);
    sum + p.stats().rows_sent
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
