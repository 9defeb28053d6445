//! The streams the benchmarks measure, built once and shared by the
//! criterion benches (`benches/wire.rs`) and `cargo xtask bench-report`.
//!
//! The realistic agent stream: one source, one `Full` index entry, then
//! interval after interval of `Rows` frames of 64 rows each (six stream
//! names such as `cpu/usage`, 32-byte rows), with a 256 KiB `Segment` every
//! 500 frames.

use std::hint::black_box;

use dendro_wire_core::{
    decode, Admitted, Frame, Handshake, Index, IndexKind, Map, Row, RowsBuilder, Segment, Status,
    Subscriber,
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
    let mut bytes = b"dendro-repl\0\x01\x00".to_vec();
    let mut frames = Vec::new();
    let push = |bytes: &mut Vec<u8>, frames: &mut Vec<_>, frame: &Frame<'_>| {
        let start = bytes.len();
        let len = frame.buffer_len().expect("a valid frame");
        bytes.resize(start + len, 0);
        frame.emit(&mut bytes[start..]).expect("sized");
        frames.push(start..bytes.len());
    };
    let state = (0x9e37_79b9_7f4a_7c15, 0x6a09_e667_f3bc_c908);
    push(
        &mut bytes,
        &mut frames,
        &Frame::Handshake(Handshake {
            source: 0,
            uuid: Some("0b5e2c1a-7d43-4f6e-9a10-3c2b1d0e4f5a"),
            labels: Map::from_pairs(&[("host", "web-01"), ("source", "agent")]),
            metadata: Map::from_pairs(&[("encoder", "bench-1")]),
            clock_anchor_wall_ns: 1_700_000_000_000_000_000,
            complete: false,
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
            blob: &[7; 256],
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
        let mut b = RowsBuilder::new(&mut buf, 0, f as u64, state).expect("8 KiB");
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

/// A checksum over what a caller reads of a decoded frame: with `visit`,
/// every row's stream, timestamp and bytes; without, the row count only.
#[inline(always)]
fn touch(frame: &Frame<'_>, visit: bool) -> u64 {
    match frame {
        Frame::Rows(r) if visit => r.rows.iter().fold(0u64, |sum, row| {
            sum.wrapping_add(row.ts as u64 ^ row.row.len() as u64 ^ row.stream.len() as u64)
        }),
        Frame::Rows(r) => r.rows.len() as u64,
        _ => 1,
    }
}

/// Decode every frame of a stream body with the sans-IO decoder; with
/// `visit`, read every row as a parser would. Returns a checksum.
pub fn decode_all(body: &[u8], visit: bool) -> u64 {
    let mut at = 0;
    let mut sum = 0u64;
    while let Ok(Status::Complete((frame, used))) = dendro_wire_core::decode(&body[at..]) {
        at += used;
        sum = sum.wrapping_add(touch(&frame, visit));
    }
    sum
}

/// Read a whole stream with dendro 0.6.1's `FrameReader`, touching every
/// row. Returns a checksum.
pub fn dendro_read_all(bytes: &[u8]) -> u64 {
    let mut reader = dendro::replicate::wire::FrameReader::new(bytes).expect("a stream");
    let mut sum = 0u64;
    while let Some(frame) = reader.next_frame().expect("a valid stream") {
        if let dendro::replicate::Frame::Rows { rows, .. } = frame {
            for row in rows {
                sum = sum
                    .wrapping_add(row.ts as u64 ^ row.row.len() as u64 ^ row.stream.len() as u64);
            }
        }
    }
    sum
}

/// Read a whole stream with our `FrameReader` over an in-memory reader (the
/// copy into its buffer included); with `visit`, read every row.
pub fn reader_all(bytes: &[u8], visit: bool) -> u64 {
    let mut reader = dendro_wire_std::FrameReader::new(bytes).expect("a stream");
    let mut sum = 0u64;
    while let Some(frame) = reader.next_frame().expect("a valid stream") {
        sum = sum.wrapping_add(touch(&frame, visit));
    }
    sum
}

/// The physical limit each line is set against: a plain copy of the same
/// bytes. Returns a byte of the copy, so it cannot be optimized away.
pub fn memcpy(dst: &mut [u8], src: &[u8]) -> u64 {
    dst[..src.len()].copy_from_slice(black_box(src));
    black_box(dst[src.len() / 2]) as u64
}

/// Run the subscriber's rules over every frame of a stream body, as a
/// subscriber does before it applies a frame. Returns the rows it admits.
pub fn subscribe(body: &[u8]) -> u64 {
    let mut sub = Subscriber::<4>::new();
    let mut at = 0;
    let mut applied = 0u64;
    while let Ok(Status::Complete((frame, used))) = decode(&body[at..]) {
        at += used;
        if let Ok(Admitted::Rows(v)) = sub.admit(&frame) {
            if v.skip.is_none() {
                if let Frame::Rows(r) = frame {
                    applied += r.rows.len() as u64;
                }
            }
        }
    }
    applied
}

/// A `Rows` frame's head (source, seq, index state) and its rows.
pub type RowsOf<R> = (u32, u64, (u64, u64), Vec<R>);

/// What the encoders are given: each `Rows` frame of a stream as each
/// side's caller holds it.
pub struct EncodeInput<'a> {
    /// Ours: the frame's head and its rows as [`Row`]s.
    pub ours: Vec<RowsOf<Row<'a>>>,
    /// dendro 0.6.1: the frame as its owned `Frame`.
    pub dendro: Vec<dendro::replicate::Frame>,
    /// The check-free reference writer: see [`encode_unchecked`].
    pub unchecked: Vec<RowsOf<UncheckedRow<'a>>>,
}

/// A row as the check-free reference writer takes it: the stream name's
/// length prefix and bytes as one 16-byte word, and a row of exactly
/// [`ROW_BYTES`].
#[derive(Clone, Copy)]
pub struct UncheckedRow<'a> {
    /// The length prefix and the name, zero-padded to 16 bytes.
    pub head: &'a [u8; 16],
    /// The name's length, at most 12.
    pub name_len: usize,
    /// The timestamp.
    pub ts: i64,
    /// The wall-clock offset.
    pub wall_offset: i64,
    /// The row.
    pub row: &'a [u8; ROW_BYTES],
}

/// Each of [`STREAMS`] as the check-free writer's 16-byte head.
pub fn stream_heads() -> Vec<[u8; 16]> {
    STREAMS
        .iter()
        .map(|s| {
            assert!(s.len() <= 12, "{s} fits a 16-byte head");
            let mut head = [0u8; 16];
            head[..4].copy_from_slice(&(s.len() as u32).to_le_bytes());
            head[4..4 + s.len()].copy_from_slice(s.as_bytes());
            head
        })
        .collect()
}

impl<'a> EncodeInput<'a> {
    /// The `Rows` frames of `s` (which holds only `Rows` frames), for each
    /// encoder; `heads` is [`stream_heads`].
    pub fn new(s: &'a Stream, heads: &'a [[u8; 16]]) -> Self {
        let mut input = EncodeInput {
            ours: Vec::new(),
            dendro: Vec::new(),
            unchecked: Vec::new(),
        };
        for r in &s.frames {
            let bytes = &s.bytes[r.clone()];
            let Ok(Status::Complete((Frame::Rows(rows), _))) = decode(bytes) else {
                panic!("a stream of Rows frames only");
            };
            let head = (rows.source, rows.seq, rows.index_state);
            let views: Vec<Row<'a>> = rows.rows.iter().collect();
            let unchecked = views
                .iter()
                .map(|row| {
                    let i = STREAMS.iter().position(|s| *s == row.stream);
                    UncheckedRow {
                        head: &heads[i.expect("one of STREAMS")],
                        name_len: row.stream.len(),
                        ts: row.ts,
                        wall_offset: row.wall_offset,
                        row: row.row.try_into().expect("rows of ROW_BYTES"),
                    }
                })
                .collect();
            input.unchecked.push((head.0, head.1, head.2, unchecked));
            input.ours.push((head.0, head.1, head.2, views));
            let owned = dendro::replicate::wire::decode_payload(&bytes[4..]).expect("valid");
            input.dendro.push(owned);
        }
        input
    }
}

/// Encode every frame with our `RowsBuilder`, each into `out` in turn, as a
/// publisher does. Returns the bytes written.
pub fn encode_ours(input: &EncodeInput<'_>, out: &mut [u8]) -> u64 {
    let mut n = 0;
    for (source, seq, state, rows) in &input.ours {
        let mut b = RowsBuilder::new(out, *source, *seq, *state).expect("room");
        for row in rows {
            b.push(row).expect("room");
        }
        n += b.finish().expect("finished");
        black_box(&out[..]);
    }
    n as u64
}

/// Encode every frame with dendro 0.6.1's `encode_frame`, each into `out`
/// (cleared, its capacity kept) in turn. Returns the bytes written.
pub fn encode_dendro(input: &EncodeInput<'_>, out: &mut Vec<u8>) -> u64 {
    let mut n = 0;
    for frame in &input.dendro {
        out.clear();
        dendro::replicate::wire::encode_frame(frame, out).expect("encodes");
        n += out.len() as u64;
        black_box(&out[..]);
    }
    n
}

/// A reference, not an encoder anyone should use: the same bytes written
/// with nothing checked that an encoder must check. One bounds check per
/// row, every copy of a fixed size: a name and its length prefix as one
/// 16-byte word, a row of exactly [`ROW_BYTES`]. It shows how fast these
/// bytes can be written from these inputs on this machine, which bounds
/// what any encoder of them can reach. Returns the bytes written.
pub fn encode_unchecked(input: &EncodeInput<'_>, out: &mut [u8]) -> u64 {
    const HEAD: usize = 37;
    let mut n = 0;
    for (source, seq, state, rows) in &input.unchecked {
        out[4] = dendro_wire_core::kind::ROWS;
        out[5..9].copy_from_slice(&source.to_le_bytes());
        out[9..17].copy_from_slice(&seq.to_le_bytes());
        out[17..25].copy_from_slice(&state.0.to_le_bytes());
        out[25..33].copy_from_slice(&state.1.to_le_bytes());
        out[33..37].copy_from_slice(&(rows.len() as u32).to_le_bytes());
        let mut at = HEAD;
        // The most a row can reach: the length prefix, a name masked to 15
        // bytes, then the fixed run and the row.
        const TAIL: usize = 20 + ROW_BYTES;
        const WINDOW: usize = 4 + 15 + TAIL;
        for r in rows {
            let dst: &mut [u8; WINDOW] = (&mut out[at..at + WINDOW]).try_into().expect("room");
            dst[..16].copy_from_slice(r.head);
            let name = r.name_len & 15;
            let dst: &mut [u8; TAIL] = (&mut dst[4 + name..4 + name + TAIL])
                .try_into()
                .expect("in");
            dst[..8].copy_from_slice(&r.ts.to_le_bytes());
            dst[8..16].copy_from_slice(&r.wall_offset.to_le_bytes());
            dst[16..20].copy_from_slice(&(ROW_BYTES as u32).to_le_bytes());
            dst[20..52].copy_from_slice(r.row);
            at += 4 + name + 20 + ROW_BYTES;
        }
        out[..4].copy_from_slice(&((at - 4) as u32).to_le_bytes());
        n += at;
        black_box(&out[..]);
    }
    n as u64
}

#[cfg(test)]
mod tests {
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
}
