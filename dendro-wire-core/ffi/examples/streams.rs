//! `cargo run -p dendro-wire-ffi --example streams -- DIR`: write the
//! streams `cargo xtask c` runs `dump.c` and `dendro-wire dump --json` over,
//! side by side: generated ones (every kind, names that stress a JSON
//! writer, unknown kinds), and damaged ones (cut at every kind of place,
//! bytes flipped, a wrong magic or version, lying lengths).
//!
//! The same seeds give the same streams, so a difference reproduces.

use std::collections::HashSet;
use std::path::Path;

use dendro_wire_core::{Frame, Map, Publisher, PublisherConfig, SourceDecl, PREAMBLE};
use dendro_wire_test_support::dendro_map::with_view;
use dendro_wire_test_support::fixtures;
use dendro_wire_test_support::gen::Gen;
use dendro_wire_test_support::xorshift::XorShift;

/// Generated streams, each the damaged ones' source too.
const STREAMS: u64 = 40;

fn emit(frame: &Frame<'_>, out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(
        at + frame.buffer_len().expect("a generated frame encodes"),
        0,
    );
    frame.emit(&mut out[at..]).expect("sized by buffer_len");
}

/// A stream of `frames` generated frames, one in eight of an unknown kind,
/// each source handshaken before its first other frame so the
/// subscriber's rules hold up to the damage; and where each frame starts.
fn generated(seed: u64, frames: u64) -> (Vec<u8>, Vec<usize>) {
    let mut g = Gen::new(seed);
    let mut out = PREAMBLE.to_vec();
    let mut starts = Vec::new();
    let mut open = HashSet::new();
    while (starts.len() as u64) < frames {
        if g.below(8) == 0 {
            let (kind, payload) = g.unknown();
            starts.push(out.len());
            emit(
                &Frame::Unknown {
                    kind,
                    payload: &payload,
                },
                &mut out,
            );
            continue;
        }
        let frame = g.frame();
        with_view(&frame, |f| {
            let source = f.source().expect("a known kind names its source");
            let handshake = matches!(f, Frame::Handshake(_));
            if !open.insert(source) && handshake {
                return; // a second handshake: another frame instead
            }
            if !handshake {
                starts.push(out.len());
                emit(&fixtures::handshake(source), &mut out);
            }
            starts.push(out.len());
            emit(f, &mut out);
        });
    }
    (out, starts)
}

/// Twelve sources from the core's publisher, every third with an index
/// whose slots change, over 40 intervals, two intervals' frames dropped on
/// purpose (gaps the subscriber sees): more than a table of eight holds.
fn twelve_sources() -> Vec<u8> {
    const SOURCES: usize = 12;
    let mut p: Publisher<[u8; 2048], SOURCES> = Publisher::new(PublisherConfig {
        full_every: 8,
        frame_buffer: 1024,
    });
    let names: Vec<[String; 2]> = (0..SOURCES)
        .map(|s| [format!("s{s}/a"), format!("s{s}/b")])
        .collect();
    let mut ids = Vec::new();
    for (s, streams) in names.iter().enumerate() {
        let streams = [streams[0].as_str(), streams[1].as_str()];
        let label = format!("{s}");
        let labels = [("host", "twelve"), ("source", label.as_str())];
        let decl = SourceDecl {
            uuid: None,
            labels: Map::from_pairs(&labels),
            metadata: Map::EMPTY,
            clock_anchor_wall_ns: 0,
            complete: false,
            streams: &streams,
            index_stream: (s % 3 == 0).then_some("slots"),
        };
        ids.push(p.add_source(&decl, [0; 2048]).expect("a source that fits"));
    }
    let mut out = PREAMBLE.to_vec();
    let mut frame = [0u8; 1024];
    p.connected();
    for interval in 0..40i64 {
        for (s, id) in ids.iter().enumerate() {
            if s % 3 == 0 && interval % 10 == 0 {
                let slot = format!("slot{}", interval / 10);
                p.set_slot(*id, slot.as_bytes(), b"on")
                    .expect("a slot that fits");
            }
            let row = interval.to_le_bytes();
            p.observe(id.stream((interval % 2) as u32), interval, 0, &row)
                .expect("a row that fits");
        }
        p.end_interval();
        if interval == 17 || interval == 29 {
            p.drop_waiting();
        }
        while let Some((bytes, _)) = p.poll_transmit(&mut frame).expect("the frame buffer") {
            out.extend_from_slice(bytes);
        }
    }
    out
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: streams DIR");
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).expect("the directory can be made");
    let mut x = XorShift::new(0x005e_ed0f_c0de);
    for seed in 1..=STREAMS {
        let (stream, starts) = generated(seed, 1 + seed % 13);
        write(dir, &format!("gen-{seed:02}.dwr"), &stream);
        // Cut inside the preamble, right after it (a clean, empty stream),
        // inside a length prefix, inside a frame, one byte short.
        let last = *starts.last().expect("at least one frame");
        let cuts = [
            1 + x.below(13),
            PREAMBLE.len(),
            last + 1 + x.below(3),
            last + 4 + x.below(stream.len() - last - 4),
            stream.len() - 1,
        ];
        for (k, cut) in cuts.into_iter().enumerate() {
            write(dir, &format!("cut-{seed:02}-{k}.dwr"), &stream[..cut]);
        }
        // A byte changed past the preamble: anything from a lying length
        // to a bad bool, or nothing a decoder can see.
        for k in 0..3 {
            let mut flipped = stream.clone();
            let at = PREAMBLE.len() + x.below(stream.len() - PREAMBLE.len());
            flipped[at] ^= 1 << x.below(8);
            write(dir, &format!("flip-{seed:02}-{k}.dwr"), &flipped);
        }
        // A frame's length one more than its payload, and a byte after
        // it: trailing bytes, or another field read past.
        let mut long = stream.clone();
        let len = u32::from_le_bytes(long[last..last + 4].try_into().unwrap());
        long[last..last + 4].copy_from_slice(&(len + 1).to_le_bytes());
        long.push(0);
        write(dir, &format!("long-{seed:02}.dwr"), &long);
    }
    let (sample, _) = generated(7, 3);
    let body = &sample[PREAMBLE.len()..];
    let with_preamble = |preamble: &[u8], frames: &[u8]| [preamble, frames].concat();
    write(dir, "empty.dwr", &[]);
    write(dir, "twelve-sources.dwr", &twelve_sources());
    write(dir, "not-dendro.dwr", b"HTTP/1.1 200 OK\r\n\r\n");
    write(
        dir,
        "version-2.dwr",
        &with_preamble(b"dendro-repl\0\x02\x00", body),
    );
    write(
        dir,
        "zero-length.dwr",
        &with_preamble(&PREAMBLE, &[0, 0, 0, 0, 3]),
    );
    write(
        dir,
        "too-large.dwr",
        &with_preamble(&PREAMBLE, &(64u32 << 20 | 1).to_le_bytes()),
    );
    write(
        dir,
        "claims-more.dwr",
        &with_preamble(&PREAMBLE, &[0, 0, 1, 0, 3, 0]),
    );
}
