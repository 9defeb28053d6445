//! The streams the benchmarks measure, built once and shared by the
//! criterion benches (`benches/wire.rs`) and `cargo xtask bench-report`.
//!
//! The realistic agent stream: one source, one `Full` index entry (sixteen
//! CPUs, each online), then interval after interval of `Rows` frames of 64
//! rows each (six stream names such as `cpu/usage`, 32-byte rows), with a
//! 256 KiB `Segment` every 500 frames. It is what the core's publisher
//! machine sends for that agent, byte for byte.
//!
//! What each benchmark runs over it: the readers of `decode.rs` and the
//! writers of `encode.rs`, all re-exported here.

mod decode;
mod encode;
mod python;

pub use decode::*;
pub use encode::*;
pub use python::print_python_routes;

use std::collections::BTreeMap;

use dendro_wire_core::{
    Frame, Handshake, Index, IndexKind, IndexState, Map, Row, RowsBuilder, RowsHeader, Segment,
    SlotSetHash, SourceDecl,
};

/// The six stream names the rows cycle through.
pub const STREAMS: [&str; 6] = [
    "cpu/usage",
    "cpu/irq",
    "cpu/steal",
    "mem/used",
    "net/rx_bytes",
    "net/tx_bytes",
];
/// Rows per `Rows` frame.
pub const ROWS_PER_FRAME: usize = 64;
/// Bytes per row.
pub const ROW_BYTES: usize = 32;
/// A `Segment` every this many `Rows` frames.
pub const SEGMENT_EVERY: usize = 500;
/// Bytes per segment.
pub const SEGMENT_BYTES: usize = 256 * 1024;

/// The source of the realistic stream, as its publisher declares it.
pub fn source_decl() -> SourceDecl<'static> {
    SourceDecl {
        uuid: Some("0b5e2c1a-7d43-4f6e-9a10-3c2b1d0e4f5a"),
        labels: Map::from_pairs(&[("host", "web-01"), ("source", "agent")]),
        metadata: Map::from_pairs(&[("encoder", "bench-1")]),
        clock_anchor_wall_ns: 1_700_000_000_000_000_000,
        complete: false,
        streams: &STREAMS,
        index_stream: Some("cpu/slots"),
    }
}

/// The index slots of the realistic stream: sixteen CPUs, each online, in
/// key order.
pub fn slots() -> BTreeMap<String, &'static str> {
    (0..16).map(|c| (format!("cpu{c}"), "online")).collect()
}

/// The Full blob of [`slots`] (`u32 len | key | u32 len | value` each, in
/// key order) and its state, the [`SlotSetHash`] of those slot bytes.
fn full_entry() -> (Vec<u8>, IndexState) {
    let mut blob = Vec::new();
    let mut hash = SlotSetHash::new();
    for (k, v) in slots() {
        let slot = [
            &(k.len() as u32).to_le_bytes()[..],
            k.as_bytes(),
            &(v.len() as u32).to_le_bytes(),
            v.as_bytes(),
        ]
        .concat();
        hash.insert(&slot);
        blob.extend_from_slice(&slot);
    }
    (blob, hash.state())
}

/// A stream and what is in it.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The whole stream: preamble, then frames.
    pub bytes: Vec<u8>,
    /// Where each frame starts and ends in `bytes`.
    pub frames: Vec<std::ops::Range<usize>>,
    /// The rows in all its `Rows` frames.
    pub rows: u64,
}

impl Stream {
    /// The frames alone, after the preamble.
    pub fn body(&self) -> &[u8] {
        &self.bytes[dendro_wire_core::PREAMBLE_BYTES..]
    }

    /// Only the `Rows` frames, back to back.
    pub fn rows_only(&self) -> Stream {
        let mut bytes = self.bytes[..dendro_wire_core::PREAMBLE_BYTES].to_vec();
        let mut frames = Vec::new();
        for r in &self.frames {
            if self.bytes[r.start + 4] == dendro_wire_core::kind::ROWS {
                let start = bytes.len();
                bytes.extend_from_slice(&self.bytes[r.clone()]);
                frames.push(start..bytes.len());
            }
        }
        Stream {
            bytes,
            frames,
            rows: self.rows,
        }
    }
}

/// The realistic agent stream with `rows_frames` `Rows` frames.
pub fn realistic(rows_frames: usize) -> Stream {
    let mut bytes = dendro_wire_core::PREAMBLE.to_vec();
    let mut frames = Vec::new();
    let push = |bytes: &mut Vec<u8>, frames: &mut Vec<_>, frame: &Frame<'_>| {
        let start = bytes.len();
        dendro_wire_std::write_frame_to(bytes, frame).expect("a valid frame");
        frames.push(start..bytes.len());
    };
    let decl = source_decl();
    let (blob, state) = full_entry();
    push(
        &mut bytes,
        &mut frames,
        &Frame::Handshake(Handshake {
            source: 0,
            uuid: decl.uuid,
            labels: decl.labels,
            metadata: decl.metadata,
            clock_anchor_wall_ns: decl.clock_anchor_wall_ns,
            complete: decl.complete,
        }),
    );
    push(
        &mut bytes,
        &mut frames,
        &Frame::Index(Index {
            source: 0,
            stream: "cpu/slots",
            ts: 0,
            kind: IndexKind::Full,
            state,
            blob: &blob,
        }),
    );
    let segment = vec![0x5a; SEGMENT_BYTES];
    let mut row = [0u8; ROW_BYTES];
    let mut buf = vec![0u8; 8192];
    let mut rows = 0;
    for f in 0..rows_frames {
        if f > 0 && f % SEGMENT_EVERY == 0 {
            push(
                &mut bytes,
                &mut frames,
                &Frame::Segment(Segment {
                    source: 0,
                    stream: STREAMS[f / SEGMENT_EVERY % STREAMS.len()],
                    rows: 5000,
                    first_ts: 0,
                    last_ts: 1,
                    bytes: &segment,
                    caller_index: None,
                }),
            );
        }
        let mut b = RowsBuilder::new(
            &mut buf[..],
            RowsHeader {
                source: 0,
                seq: f as u64,
                index_state: state,
            },
        )
        .expect("8 KiB");
        for i in 0..ROWS_PER_FRAME {
            let ts = (f * ROWS_PER_FRAME + i) as i64;
            row[..8].copy_from_slice(&ts.to_le_bytes());
            b.push(&Row {
                stream: STREAMS[i % STREAMS.len()],
                ts,
                wall_offset: -3,
                row: &row,
            })
            .expect("8 KiB holds 64 rows");
        }
        rows += ROWS_PER_FRAME as u64;
        let len = b.finish().expect("finished");
        let start = bytes.len();
        bytes.extend_from_slice(&buf[..len]);
        frames.push(start..bytes.len());
    }
    Stream {
        bytes,
        frames,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use dendro_wire_core::{decode, Status};

    use super::*;

    /// What `encode` wrote for each frame must be the stream's own bytes,
    /// for every encoder, or the comparison measures different work.
    #[test]
    fn every_encoder_writes_the_streams_bytes() {
        let s = realistic(SEGMENT_EVERY + 3).rows_only();
        let heads = stream_heads();
        let input = EncodeInput::new(&s, &heads);
        assert_eq!(input.ours.len(), s.frames.len());
        let one = |i: usize| EncodeInput {
            ours: input.ours[i..=i].to_vec(),
            dendro: input.dendro[i..=i].to_vec(),
            unchecked: input.unchecked[i..=i].to_vec(),
            machine: input.machine[i..=i].to_vec(),
        };
        for (i, r) in s.frames.iter().enumerate() {
            let want = &s.bytes[r.clone()];
            let input = one(i);
            let mut out = vec![0xee; 8192];
            let n = encode_ours(&input, &mut out) as usize;
            assert_eq!(&out[..n], want, "ours, frame {i}");
            let mut out = vec![0xee; 8192];
            let n = encode_unchecked(&input, &mut out) as usize;
            assert_eq!(&out[..n], want, "unchecked, frame {i}");
            let mut theirs = Vec::new();
            encode_dendro(&input, &mut theirs);
            assert_eq!(theirs, want, "dendro, frame {i}");
        }
    }

    /// What the publisher machine's benchmark encodes is the stream's own
    /// bytes, frame for frame, as one agent's intervals: the first one the
    /// connection's, whose rows carry no earlier latest row.
    #[test]
    fn the_machine_writes_the_streams_rows_frames() {
        let s = realistic(SEGMENT_EVERY + 3).rows_only();
        let heads = stream_heads();
        let input = EncodeInput::new(&s, &heads);
        for observer in [true, false] {
            let mut frames = Vec::new();
            let mut machine = MachineEncoder::new();
            let n = machine.encode_with(&input, observer, |f| frames.push(f.to_vec()));
            assert_eq!(n as usize, s.body().len());
            assert_eq!(frames.len(), s.frames.len());
            for (i, (got, r)) in frames.iter().zip(&s.frames).enumerate() {
                assert_eq!(got, &s.bytes[r.clone()], "frame {i}, observer {observer}");
            }
        }
    }

    /// The whole realistic stream — handshake, Full, rows, segments — is
    /// what the publisher machine sends for its agent.
    #[test]
    fn the_realistic_stream_is_what_the_machine_sends() {
        let s = realistic(SEGMENT_EVERY + 3);
        let mut machine = MachineEncoder::new();
        let mut out = s.bytes[..dendro_wire_core::PREAMBLE_BYTES].to_vec();
        let mut buf = vec![0u8; SEGMENT_BYTES + 4096];
        for r in &s.frames {
            let Ok(Status::Complete((frame, _))) = decode(&s.bytes[r.clone()]) else {
                panic!("a valid stream");
            };
            match frame {
                // Sent by the machine itself, at the first interval.
                Frame::Handshake(_) | Frame::Index(_) => {}
                Frame::Segment(_) => {
                    let n = machine
                        .publisher
                        .encode_passthrough(&frame, &mut buf)
                        .unwrap();
                    out.extend_from_slice(&buf[..n]);
                }
                Frame::Rows(rows) => {
                    for row in rows.rows {
                        let i = STREAMS.iter().position(|s| *s == row.stream).unwrap();
                        let stream = machine.source.stream(i as u32);
                        let (ts, wall) = (row.ts, row.wall_offset);
                        machine
                            .publisher
                            .observe(stream, ts, wall, row.row)
                            .unwrap();
                    }
                    machine.publisher.end_interval();
                    while let Some((bytes, _)) = machine.publisher.poll_transmit(&mut buf).unwrap()
                    {
                        out.extend_from_slice(bytes);
                    }
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(out.len(), s.bytes.len());
        assert!(out == s.bytes, "the machine's stream differs");
    }
}

/// The repository README's examples, compiled and run as doctests (here,
/// since no published crate may reach outside its package for them).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct RepositoryReadme;

/// The book's Rust examples, compiled and run as doctests the same way:
/// every chapter with a `rust` block is here (`cargo xtask book` fails on
/// a chapter with one that is not).
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../../book/src/decoding.md")]
    struct Decoding;
    #[doc = include_str!("../../book/src/publishing.md")]
    struct Publishing;
    #[doc = include_str!("../../book/src/firmware.md")]
    struct Firmware;
    #[doc = include_str!("../../book/src/collecting.md")]
    struct Collecting;
}
