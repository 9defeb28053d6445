//! The encoders of `bench-report`'s encoding lines over the same hot
//! frames, one at a time, for what a full report is too slow and too noisy
//! to compare:
//!
//! - `encode-profile ENCODER PASSES` runs one encoder (`machine`, the
//!   publisher machine through an `Observer`; `machine-each`, through
//!   `Publisher::observe` a row at a time; `builder`, `reference`, `dendro`)
//!   over the frames PASSES times, to count instructions per row under
//!   callgrind, collecting only inside the encoding call
//!   (`--toggle-collect=dendro_wire_benches::encode_machine`,
//!   `encode_machine_each`, `encode_ours`, `encode_unchecked`,
//!   `encode_dendro`): the count over the passes' rows is the cost of a
//!   row, setup excluded.
//! - `encode-profile time ROUNDS` times all four round-robin, best of
//!   ROUNDS, and prints each one's rate beside the others'.

use std::hint::black_box;
use std::time::{Duration, Instant};

use dendro_wire_benches::{
    encode_dendro, encode_machine, encode_machine_each, encode_ours, encode_unchecked, realistic,
    stream_heads, EncodeInput, MachineEncoder,
};

/// As `bench-report`'s encoding lines: the rows of 200 frames.
const ENCODE_FRAMES: usize = 200;

const ENCODERS: [&str; 5] = ["machine", "machine-each", "builder", "reference", "dendro"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(which), Some(count)) = (args.get(1), args.get(2).and_then(|n| n.parse().ok())) else {
        eprintln!("usage: encode-profile ENCODER PASSES | time ROUNDS (encoders: {ENCODERS:?})");
        std::process::exit(2);
    };
    let hot = realistic(ENCODE_FRAMES).rows_only();
    let heads = stream_heads();
    let input = EncodeInput::new(&hot, &heads);
    let mut out = vec![0u8; 8192];
    let mut theirs = Vec::with_capacity(8192);
    let mut machine = MachineEncoder::new();
    let mut encode = |name: &str| match name {
        "machine" => encode_machine(&input, &mut machine),
        "machine-each" => encode_machine_each(&input, &mut machine),
        "builder" => encode_ours(&input, &mut out),
        "reference" => encode_unchecked(&input, &mut out),
        "dendro" => encode_dendro(&input, &mut theirs),
        other => {
            eprintln!("encode-profile: no encoder `{other}`");
            std::process::exit(2);
        }
    };
    if which != "time" {
        let bytes: u64 = (0..count).map(|_| encode(which)).sum();
        black_box(bytes);
        println!("{which}: {count} pass(es) of {} rows", hot.rows);
        return;
    }
    let mut best = [f64::INFINITY; ENCODERS.len()];
    for _ in 0..count {
        for (i, name) in ENCODERS.iter().enumerate() {
            let start = Instant::now();
            let mut n = 0u32;
            while start.elapsed() < Duration::from_millis(100) {
                black_box(encode(name));
                n += 1;
            }
            best[i] = best[i].min(start.elapsed().as_secs_f64() / f64::from(n));
        }
    }
    let bytes = hot.body().len() as f64;
    for (name, t) in ENCODERS.iter().zip(best) {
        println!(
            "{name:>9}: {:6.0} MB/s, {:.2} of the reference, {:.2}x dendro",
            bytes / t / 1e6,
            best[3] / t,
            best[4] / t
        );
    }
}
