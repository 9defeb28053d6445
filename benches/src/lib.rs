//! The streams the benchmarks measure, built once and shared by the
//! criterion benches (`benches/wire.rs`) and `cargo xtask bench-report`.
//!
//! The realistic agent stream: one source, one `Full` index entry (sixteen
//! CPUs, each online), then interval after interval of `Rows` frames of 64
//! rows each (six stream names such as `cpu/usage`, 32-byte rows), with a
//! 256 KiB `Segment` every 500 frames. It is what the core's publisher
//! machine sends for that agent, byte for byte.

use std::collections::BTreeMap;
use std::hint::black_box;

use dendro_wire_core::{
    decode, kind, Admitted, Frame, Handshake, Index, IndexKind, IndexState, Map, Publisher,
    PublisherConfig, Row, RowsBuilder, RowsHeader, Segment, SlotSetHash, SourceDecl, SourceId,
    Status, Subscriber,
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
    /// The publisher machine: each frame's rows, each on its stream's
    /// place in [`STREAMS`].
    pub machine: Vec<Vec<MachineRow<'a>>>,
}

/// A row as an agent hands it to the publisher machine: its stream's place
/// among the declared ones, `ts`, `wall_offset`, and the row.
pub type MachineRow<'a> = (u32, i64, i64, &'a [u8]);

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
            machine: Vec::new(),
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
            let machine = views
                .iter()
                .map(|row| {
                    let i = STREAMS.iter().position(|s| *s == row.stream);
                    let i = i.expect("one of STREAMS") as u32;
                    (i, row.ts, row.wall_offset, row.row)
                })
                .collect();
            input.machine.push(machine);
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
        let mut b = RowsBuilder::new(
            out,
            RowsHeader {
                source: *source,
                seq: *seq,
                index_state: *state,
            },
        )
        .expect("room");
        for row in rows {
            b.push(row).expect("room");
        }
        n += b.finish().expect("finished");
        black_box(&out[..]);
    }
    n as u64
}

/// The storage of the machine's one source: the realistic stream's frames
/// are about 4.3 KiB.
const MACHINE_STORAGE: usize = 16 * 1024;

/// Rows encoded as an agent's publisher machine encodes them: the source
/// declared once (its stream names encoded then), each frame's rows
/// observed on their streams, the interval ended, and the frame taken in
/// place from the machine's storage, as a transport that writes it out
/// takes it.
pub struct MachineEncoder {
    publisher: Box<Publisher<[u8; MACHINE_STORAGE], 1>>,
    source: SourceId,
    scratch: Vec<u8>,
}

impl Default for MachineEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl MachineEncoder {
    /// The realistic stream's source, declared with its slots, on a new
    /// connection: its first interval sends the handshake and the Full.
    pub fn new() -> Self {
        let mut publisher = Box::new(Publisher::new(PublisherConfig {
            full_every: u64::MAX,
            ..PublisherConfig::DEFAULT
        }));
        let source = publisher
            .add_source(&source_decl(), [0; MACHINE_STORAGE])
            .expect("declared");
        for (k, v) in slots() {
            publisher
                .set_slot(source, k.as_bytes(), v.as_bytes())
                .expect("a slot");
        }
        publisher.connected();
        MachineEncoder {
            publisher,
            source,
            scratch: vec![0; 8192],
        }
    }

    /// Every frame of `input` through the machine, one interval each: each
    /// `Rows` frame's bytes go to `sent`, and any other frame the machine
    /// sends is taken too. Returns the bytes of the `Rows` frames.
    #[inline]
    pub fn encode(&mut self, input: &EncodeInput<'_>, sent: impl FnMut(&[u8])) -> u64 {
        self.encode_with(input, true, sent)
    }

    /// [`encode`](Self::encode) with each row given to
    /// `Publisher::observe` instead of an `Observer`, as the std
    /// publisher gives them (`observer` false).
    #[inline]
    pub fn encode_with(
        &mut self,
        input: &EncodeInput<'_>,
        observer: bool,
        mut sent: impl FnMut(&[u8]),
    ) -> u64 {
        let mut n = 0;
        for rows in &input.machine {
            if observer {
                let mut observer = self.publisher.observer(self.source).expect("drained");
                for &(stream, ts, wall_offset, row) in rows {
                    let stream = self.source.stream(stream);
                    observer
                        .observe(stream, ts, wall_offset, row)
                        .expect("room");
                }
            } else {
                for &(stream, ts, wall_offset, row) in rows {
                    let stream = self.source.stream(stream);
                    self.publisher
                        .observe(stream, ts, wall_offset, row)
                        .expect("room");
                }
            }
            self.publisher.end_interval();
            while let Some((bytes, t)) = self.publisher.poll_frame(&mut self.scratch).expect("room")
            {
                if t.kind == kind::ROWS {
                    n += bytes.len();
                    sent(bytes);
                }
            }
        }
        n as u64
    }
}

/// Encode every frame through the publisher machine, as an agent does:
/// see [`MachineEncoder`]. Returns the bytes written.
pub fn encode_machine(input: &EncodeInput<'_>, machine: &mut MachineEncoder) -> u64 {
    machine.encode(input, |frame| {
        black_box(frame);
    })
}

/// [`encode_machine`] with each row given to `Publisher::observe`, as the
/// std publisher gives them. Returns the bytes written.
pub fn encode_machine_each(input: &EncodeInput<'_>, machine: &mut MachineEncoder) -> u64 {
    machine.encode_with(input, false, |frame| {
        black_box(frame);
    })
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
