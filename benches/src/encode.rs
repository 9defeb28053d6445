//! What the encoding benchmarks run: the realistic stream's `Rows` frames
//! encoded again by `RowsBuilder`, by the core's publisher machine, by
//! dendro 0.6.1, and by a reference writer that checks nothing.

use dendro_wire_core::{
    decode, kind, Frame, Publisher, PublisherConfig, Row, RowsBuilder, RowsHeader, SourceId, Status,
};

use std::hint::black_box;

use super::{slots, source_decl, RowsOf, Stream, ROW_BYTES, STREAMS};

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
    pub(crate) publisher: Box<Publisher<[u8; MACHINE_STORAGE], 1>>,
    pub(crate) source: SourceId,
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
        MachineEncoder { publisher, source }
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
            while let Some((bytes, t)) = self.publisher.poll_frame().expect("room") {
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
