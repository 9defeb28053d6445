//! `cargo xtask wireshark`: the Wireshark dissector
//! (`tools/wireshark/dendro.lua`) checked with tshark against
//! `dendro-wire dump --json`.
//!
//! - Synthetic captures, written here: the committed sample and a stream of
//!   every kind, each cut into TCP segments at random points (a preamble or
//!   a length split anywhere, many frames in one segment), the two
//!   connections' segments interleaved; once on the dissector's port and
//!   once on another, where only its heuristic finds them. tshark's kind,
//!   source, seq and row count must equal dump's, frame for frame.
//! - A damaged capture: each problem the dissector can see must show as its
//!   expert info.
//! - A live capture on loopback (`dissector_live.rs`), where dumpcap may
//!   capture.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::pcap::{split, Pcap, Rng};
use crate::steps::{fresh_dir, output, root, target_dir};
use crate::tshark::{checked, compare_stream, dissected, dumped, experts, Counts, Frame};
use crate::{dissector_live, tshark};

/// The dissector's port in the synthetic captures, and one it does not
/// know (its heuristic's).
const PORT: u16 = 7070;
const OTHER_PORT: u16 = 5999;

/// One frame of every kind (docs/PROTOCOL.md §10), for `dendro-wire encode`.
const EVERY_KIND: &str = r#"{"frame":"handshake","source":0,"uuid":"3f2b1c4d-0000-4000-8000-00000000abcd","labels":{"host":"a"},"metadata":{"encoder":"le-u32"},"clock_anchor_wall_ns":1700000000000000000,"complete":false}
{"frame":"index","source":0,"stream":"cpu/slots","ts":1000,"kind":"full","state":[3812034424351027592,8726669433981808818],"blob":"0400000063707530060000006f6e6c696e65"}
{"frame":"rows","source":0,"seq":18446744073709551614,"index_state":[3812034424351027592,8726669433981808818],"rows":[{"stream":"cpu/usage","ts":1000,"wall_offset":-3,"row":"2a000000"},{"stream":"cpu/irq","ts":-9223372036854775808,"wall_offset":9223372036854775807,"row":""}]}
{"frame":"rows","source":0,"seq":18446744073709551615,"index_state":[3812034424351027592,8726669433981808818],"rows":[]}
{"frame":"segment","source":0,"stream":"cpu/usage","rows":3,"first_ts":-1,"last_ts":2,"bytes":"50415231","caller_index":null}
{"frame":"segment","source":0,"stream":"cpu/usage","rows":18446744073709551615,"first_ts":-1,"last_ts":2,"bytes":"","caller_index":""}
{"frame":"clock_offset","source":0,"ts":2000,"offset_ns":-3}
{"frame":"source_update","source":0,"ts":1700000001000000000,"labels":{"host":"a","rack":"r7"},"metadata":{"encoder":"le-u32"}}
{"frame":"unknown","kind":9,"payload":"abcd"}
{"frame":"unknown","kind":200,"payload":""}
{"frame":"handshake","source":7,"uuid":null,"labels":{},"metadata":{},"clock_anchor_wall_ns":-1,"complete":true}
{"frame":"rows","source":7,"seq":0,"index_state":[0,0],"rows":[]}
"#;

/// Two sources' `Rows` frames with gaps and regressions, each followed by
/// frames judged from the seq it took (as `dendro-wire check` judges them).
const SEQS: &[(u32, u64)] = &[
    (0, 5),
    (1, 100),
    (0, 6),
    (0, 9),
    (1, 101),
    (0, 8),
    (0, 9),
    (0, 10),
    (1, 99),
    (1, 102),
    (0, 20),
    (0, 3),
    (0, 4),
];

/// A stream of `jsonl` lines, encoded by the tool, at `dir/name.dwr`.
fn encode(tool: &Path, dir: &Path, name: &str, jsonl: &str) -> Result<PathBuf, String> {
    let (from, to) = (
        dir.join(format!("{name}.jsonl")),
        dir.join(format!("{name}.dwr")),
    );
    std::fs::write(&from, jsonl).map_err(|e| format!("{}: {e}", from.display()))?;
    output(
        "dendro-wire encode",
        Command::new(tool)
            .arg("encode")
            .arg(&from)
            .arg("-o")
            .arg(&to),
    )?;
    Ok(to)
}

pub(crate) fn run(tool: &Path) -> Result<(), String> {
    let dir = target_dir().join("wireshark");
    fresh_dir(&dir)?;
    let lua = tshark::dissector();
    let mut seqs = String::new();
    for source in 0..2 {
        seqs += &format!(
            "{{\"frame\":\"handshake\",\"source\":{source},\"uuid\":null,\"labels\":{{}},\
             \"metadata\":{{}},\"clock_anchor_wall_ns\":0,\"complete\":false}}\n"
        );
    }
    for (source, seq) in SEQS {
        seqs += &format!(
            "{{\"frame\":\"rows\",\"source\":{source},\"seq\":{seq},\
             \"index_state\":[0,0],\"rows\":[]}}\n"
        );
    }
    let streams = [
        root().join("testdata/sample.dwr"),
        encode(tool, &dir, "every-kind", EVERY_KIND)?,
        encode(tool, &dir, "seqs", &seqs)?,
    ];
    let seed = std::env::var("DENDRO_SPLIT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("==> the Wireshark dissector on streams cut at random (DENDRO_SPLIT_SEED={seed})");
    let mut rng = Rng::new(seed);
    let want: Vec<(Vec<Frame>, Counts)> = streams
        .iter()
        .map(|s| Ok((dumped(tool, s)?, checked(tool, s)?)))
        .collect::<Result<_, String>>()?;
    for round in 0..4 {
        let (port, on, how) = match round % 2 {
            0 => (PORT, Some(PORT), "on its port"),
            _ => (OTHER_PORT, None, "by its heuristic"),
        };
        let capture = dir.join(format!("split-{round}.pcap"));
        // Round 3's first segments hold 1 to 3 bytes: the heuristic must
        // claim a connection on a preamble's first bytes.
        let first_cut = (round == 3).then(|| 1 + rng.below(3) as usize);
        write_split(&streams, port, &mut rng, first_cut, &capture)?;
        let shown = dissected(&lua, &capture, on)?;
        if shown.len() != streams.len() {
            return Err(format!(
                "{}: the dissector found frames in {} TCP stream(s), not {} (seed {seed})",
                capture.display(),
                shown.len(),
                streams.len()
            ));
        }
        for ((tcp, shown), (path, (frames, counts))) in shown.iter().zip(streams.iter().zip(&want))
        {
            let what = format!(
                "{} cut at random (seed {seed}, round {round}), TCP stream {tcp}, {how}",
                path.file_name().unwrap_or_default().to_string_lossy()
            );
            compare_stream(&what, shown, frames, counts)?;
        }
        let frames: Vec<String> = want.iter().map(|(f, _)| f.len().to_string()).collect();
        eprintln!(
            "    round {round}, {how}: {} frames as dump --json; gaps, frames lost, seq \
             regressions and unknown kinds as check --json",
            frames.join(", ")
        );
    }
    hostile(&lua, &dir, &streams, &mut rng, seed)?;
    damaged(&lua, &dir)?;
    dissector_live::run(tool, &lua, &dir)
}

/// Streams of damaged bytes, each a valid stream with bytes overwritten at
/// random or random bytes after a preamble: the dissector may show them
/// as it likes, but must not fail (a Lua error, a read past the bytes).
fn hostile(
    lua: &Path,
    dir: &Path,
    streams: &[PathBuf],
    rng: &mut Rng,
    seed: u64,
) -> Result<(), String> {
    eprintln!("==> the Wireshark dissector on damaged bytes");
    let mut damaged = Vec::new();
    for i in 0..60 {
        let mut bytes = std::fs::read(&streams[i % streams.len()]).map_err(|e| e.to_string())?;
        if i % 3 == 0 {
            bytes.truncate(PREAMBLE.len());
            bytes.extend((0..rng.below(300)).map(|_| rng.below(256) as u8));
        } else {
            for _ in 0..1 + rng.below(4) {
                let at = PREAMBLE.len() + rng.below((bytes.len() - PREAMBLE.len()) as u64) as usize;
                // Small values, 0 to 2 and 255 most often: the lengths,
                // counts and flags that matter.
                bytes[at] = match rng.below(4) {
                    0 => rng.below(3) as u8,
                    1 => 255,
                    _ => rng.below(256) as u8,
                };
            }
        }
        damaged.push(bytes);
    }
    let capture = dir.join("hostile.pcap");
    write_streams(&damaged, PORT, rng, None, &capture)?;
    dissected(lua, &capture, Some(PORT)).map_err(|e| format!("{e} (seed {seed})"))?;
    experts(lua, &capture, Some(PORT)).map_err(|e| format!("{e} (seed {seed})"))?;
    eprintln!("    {} streams, no failure", damaged.len());
    Ok(())
}

/// The preamble and frames of `streams`, each on its own connection, cut
/// at random and their segments interleaved; the connections closed.
fn write_split(
    streams: &[PathBuf],
    port: u16,
    rng: &mut Rng,
    first_cut: Option<usize>,
    capture: &Path,
) -> Result<(), String> {
    let bytes: Vec<Vec<u8>> = streams
        .iter()
        .map(|s| std::fs::read(s).map_err(|e| format!("{}: {e}", s.display())))
        .collect::<Result<_, _>>()?;
    write_streams(&bytes, port, rng, first_cut, capture)
}

/// `streams` on a connection each, cut at random (the first segment
/// `first_cut` bytes, if given) and their segments interleaved.
fn write_streams(
    streams: &[Vec<u8>],
    port: u16,
    rng: &mut Rng,
    first_cut: Option<usize>,
    capture: &Path,
) -> Result<(), String> {
    let mut pcap = Pcap::new();
    let mut conns: Vec<_> = (0..streams.len())
        .map(|i| pcap.open(2 + (i % 250) as u8, 40_000 + i as u16, port))
        .collect();
    let mut pieces: Vec<std::collections::VecDeque<&[u8]>> = streams
        .iter()
        .map(|b| {
            let (head, tail) = b.split_at(first_cut.unwrap_or(0).min(b.len()));
            let mut pieces = split(tail, rng);
            if !head.is_empty() {
                pieces.insert(0, head);
            }
            pieces.into()
        })
        .collect();
    while pieces.iter().any(|p| !p.is_empty()) {
        let i = rng.below(pieces.len() as u64) as usize;
        if let Some(piece) = pieces[i].pop_front() {
            pcap.send(&mut conns[i], piece);
        }
    }
    for c in &mut conns {
        pcap.close(c);
    }
    std::fs::write(capture, pcap.into_bytes()).map_err(|e| format!("{}: {e}", capture.display()))
}

/// Little-endian writers for the damaged streams.
fn u32le(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn str_field(out: &mut Vec<u8>, s: &str) {
    u32le(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

/// A frame of `kind` around `payload`.
fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    u32le(&mut out, payload.len() as u32 + 1);
    out.push(kind);
    out.extend_from_slice(payload);
    out
}

fn rows_frame(source: u32, seq: u64) -> Vec<u8> {
    let mut p = Vec::new();
    u32le(&mut p, source);
    p.extend_from_slice(&seq.to_le_bytes());
    p.extend_from_slice(&[0; 16]);
    u32le(&mut p, 0);
    frame(3, &p)
}

fn handshake(source: u32, labels: &[(&str, &str)], complete: u8) -> Vec<u8> {
    let mut p = Vec::new();
    u32le(&mut p, source);
    p.push(0);
    u32le(&mut p, labels.len() as u32);
    for (k, v) in labels {
        str_field(&mut p, k);
        str_field(&mut p, v);
    }
    u32le(&mut p, 0);
    p.extend_from_slice(&1_700_000_000_000_000_000i64.to_le_bytes());
    p.push(complete);
    frame(1, &p)
}

const PREAMBLE: &[u8] = b"dendro-repl\0\x01\x00";

/// What the damaged capture must show: each expert info's words.
const EXPECTED: &[&str] = &[
    "Labels: key \"a\" is not above the key before it, \"b\"",
    "complete is 2, neither 0 nor 1",
    "seq gap on source 0: 2 frame(s) lost after seq 7",
    "seq regression on source 0: not above the previous 10",
    "unknown kind 9, skipped (2 payload bytes)",
    "3 byte(s) left over after the fields of ClockOffset",
    "source 4 has no handshake before this frame",
    "caller_index presence is 2, neither 0 nor 1",
    "length 83886080 is over the limit of 67108864 bytes",
    "the stream stopped at the refused frame",
    "length 1684956516 is over the limit of 67108864 bytes",
    "the frame that starts in this packet: it has 37 bytes with its length, 13 of them",
];

/// Three connections: one with a problem a frame, ending in a length over
/// the limit and bytes after it; one whose capture stops inside a frame;
/// one with a second preamble.
fn damaged(lua: &Path, dir: &Path) -> Result<(), String> {
    eprintln!("==> the Wireshark dissector's expert infos on a damaged capture");
    let mut a = PREAMBLE.to_vec();
    a.extend(handshake(0, &[("b", "1"), ("a", "2")], 2));
    for seq in [7, 10, 9] {
        a.extend(rows_frame(0, seq));
    }
    a.extend(frame(9, &[0xab, 0xcd]));
    let mut clock = Vec::new();
    u32le(&mut clock, 0);
    clock.extend_from_slice(&[0; 16]);
    clock.extend_from_slice(&[1, 2, 3]);
    a.extend(frame(5, &clock));
    a.extend(rows_frame(4, 0));
    let mut segment = Vec::new();
    u32le(&mut segment, 0);
    str_field(&mut segment, "cpu/usage");
    segment.extend_from_slice(&[0; 24]);
    u32le(&mut segment, 0);
    segment.push(2);
    a.extend(frame(4, &segment));
    u32le(&mut a, 80 << 20);
    a.push(3);
    let after = b"bytes after a refused length".to_vec();

    let mut b = PREAMBLE.to_vec();
    b.extend(handshake(0, &[], 0));
    b.extend(rows_frame(0, 0));
    let cut = rows_frame(0, 1);

    let mut pcap = Pcap::new();
    let mut ca = pcap.open(2, 40_000, PORT);
    let mut cb = pcap.open(3, 40_001, PORT);
    let (head, tail) = a.split_at(20);
    pcap.send(&mut ca, head);
    pcap.send(&mut ca, tail);
    pcap.send(&mut ca, &after);
    pcap.close(&mut ca);
    pcap.send(&mut cb, &b);
    pcap.send(&mut cb, &cut[..13]);
    // A second preamble is a length over the limit, as a reader reads it.
    let mut c = PREAMBLE.to_vec();
    c.extend(handshake(0, &[], 0));
    c.extend_from_slice(PREAMBLE);
    let mut cc = pcap.open(4, 40_002, PORT);
    pcap.send(&mut cc, &c[..3]);
    pcap.send(&mut cc, &c[3..]);
    let capture = dir.join("damaged.pcap");
    std::fs::write(&capture, pcap.into_bytes()).map_err(|e| e.to_string())?;
    let shown = experts(lua, &capture, Some(PORT))?;
    let missing: Vec<&str> = EXPECTED
        .iter()
        .filter(|want| !shown.contains(*want))
        .copied()
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{}: expert infos missing: {missing:?}; the dissector showed:\n{shown}",
            capture.display()
        ));
    }
    eprintln!("    {} expert infos, as expected", EXPECTED.len());
    Ok(())
}
