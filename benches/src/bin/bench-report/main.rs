//! `cargo xtask bench-report`: one table of throughput for ours, dendro
//! 0.6.1 and `memcpy` on the same bytes, measured in one run.
//!
//! The machines are shared and noisy, so each figure is the best of several
//! rounds, and the three sides of a line are measured round-robin within
//! each round rather than one after the other: noise that lands on a round
//! lands on all three.

mod page;

use page::{machine_guard, write_page};
use std::hint::black_box;
use std::time::{Duration, Instant};

use dendro_wire_benches::{
    decode_all, dendro_read_all, encode_dendro, encode_machine, encode_ours, encode_unchecked,
    memcpy, print_python_routes, reader_all, realistic, stream_heads, subscribe, EncodeInput,
    MachineEncoder, Stream,
};

/// Seconds per second of one side, as best-of-`rounds`.
struct Measure {
    rounds: usize,
    per_sample: Duration,
}

impl Measure {
    /// The best time per call of each function, measured round-robin.
    fn best(&self, fs: &mut [&mut dyn FnMut() -> u64]) -> Vec<f64> {
        let mut best = vec![f64::INFINITY; fs.len()];
        for _ in 0..self.rounds {
            for (i, f) in fs.iter_mut().enumerate() {
                let start = Instant::now();
                let mut n = 0u64;
                while start.elapsed() < self.per_sample {
                    black_box(f());
                    n += 1;
                }
                best[i] = best[i].min(start.elapsed().as_secs_f64() / n as f64);
            }
        }
        best
    }
}

/// The frames whose rows the encoding line encodes, over and over.
const ENCODE_FRAMES: usize = 200;

struct Line {
    what: &'static str,
    bytes: usize,
    rows: u64,
    ours: f64,
    dendro: Option<f64>,
    memcpy: f64,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let m = Measure {
        rounds: if quick { 3 } else { 7 },
        per_sample: Duration::from_millis(if quick { 100 } else { 250 }),
    };
    let stream = realistic(5000);
    let rows_only = stream.rows_only();
    let body = stream.body().to_vec();
    let mut dst = vec![0u8; stream.bytes.len()];
    let mut lines = Vec::new();

    // dendro's FrameReader and decode_payload build every row as owned
    // values; ours is measured both ways: producing the checked views, and
    // producing them and reading every row.
    for (visit, what) in [
        (false, "decode, realistic stream (sans-IO)"),
        (true, "decode + read every row, realistic stream"),
    ] {
        let t = m.best(&mut [
            &mut || decode_all(&body, visit),
            &mut || dendro_read_all(&stream.bytes),
            &mut || memcpy(&mut dst, &body),
        ]);
        lines.push(Line {
            what,
            bytes: body.len(),
            rows: stream.rows,
            ours: t[0],
            dendro: Some(t[1]),
            memcpy: t[2],
        });
    }

    // The same decoding through the C API, from C, with the Rust decoder
    // measured again beside it.
    let mut c_batch_rows = None;
    let from_c = arg_after("--c-bench-binary").map(|binary| {
        let (c_decode, c_visit, c_batch) = decode_from_c(&binary, &body, &m);
        c_batch_rows = Some(stream.rows as f64 / c_batch);
        let t = m.best(&mut [
            &mut || decode_all(&body, false),
            &mut || decode_all(&body, true),
            &mut || memcpy(&mut dst, &body),
        ]);
        for (ours, what) in [
            (c_decode, "decode through the C API, from C (dw_decode)"),
            (
                c_visit,
                "decode + read every row through the C API, from C (dw_rows_next)",
            ),
            (
                c_batch,
                "decode + read every row through the C API, from C, in batches (dw_rows_next_batch)",
            ),
        ] {
            lines.push(Line {
                what,
                bytes: body.len(),
                rows: stream.rows,
                ours,
                dendro: None,
                memcpy: t[2],
            });
        }
        format!(
            "From C through the C API, as a share of the Rust decoder's rate measured just \
             after: decode {:.2}, decode + read every row {:.2} a row a call, {:.2} in batches.",
            t[0] / c_decode,
            t[1] / c_visit,
            t[1] / c_batch
        )
    });

    // Our FrameReader over an in-memory reader, the copy included.
    for (visit, what) in [
        (false, "FrameReader, realistic stream"),
        (true, "FrameReader + read every row, realistic stream"),
    ] {
        let t = m.best(&mut [
            &mut || reader_all(&stream.bytes, visit),
            &mut || dendro_read_all(&stream.bytes),
            &mut || memcpy(&mut dst, &stream.bytes),
        ]);
        lines.push(Line {
            what,
            bytes: stream.bytes.len(),
            rows: stream.rows,
            ours: t[0],
            dendro: Some(t[1]),
            memcpy: t[2],
        });
    }

    // Rows frames alone: decode against dendro's decode_payload.
    let frames: Vec<&[u8]> = rows_only
        .frames
        .iter()
        .map(|r| &rows_only.bytes[r.clone()])
        .collect();
    let rows_body = rows_only.body().to_vec();
    for (visit, what) in [
        (false, "decode, Rows frames alone"),
        (true, "decode + read every row, Rows frames alone"),
    ] {
        let t = m.best(&mut [
            &mut || decode_all(&rows_body, visit),
            &mut || {
                let mut sum = 0u64;
                for f in &frames {
                    if let Ok(dendro::replicate::Frame::Rows { rows, .. }) =
                        dendro::replicate::wire::decode_payload(&f[4..])
                    {
                        sum = sum.wrapping_add(rows.len() as u64);
                    }
                }
                sum
            },
            &mut || memcpy(&mut dst, &rows_body),
        ]);
        lines.push(Line {
            what,
            bytes: rows_body.len(),
            rows: rows_only.rows,
            ours: t[0],
            dendro: Some(t[1]),
            memcpy: t[2],
        });
    }

    // Encoding the Rows frames as a publisher does: each frame into one
    // reused buffer (RowsBuilder against encode_frame into a cleared Vec),
    // and memcpy of each frame's bytes into one reused buffer.
    // A publisher encodes rows it has just observed, hot in its cache, so
    // the sources here are the rows of 200 frames (about 1 MB), encoded
    // over and over, for both sides.
    let hot = realistic(ENCODE_FRAMES).rows_only();
    let heads = stream_heads();
    let input = EncodeInput::new(&hot, &heads);
    let frames: Vec<&[u8]> = hot.frames.iter().map(|r| &hot.bytes[r.clone()]).collect();
    let (mut out, mut out2) = (vec![0u8; 8192], vec![0u8; 8192]);
    let mut theirs = Vec::with_capacity(8192);
    let mut frame_dst = vec![0u8; 8192];
    // The publisher machine encodes each row into the frame of its interval
    // behind the stream's name as encoded at declaration, and the frame is
    // taken where it was built.
    let mut machine = MachineEncoder::new();
    let t = m.best(&mut [
        &mut || encode_ours(&input, &mut out),
        &mut || encode_dendro(&input, &mut theirs),
        &mut || frames.iter().map(|f| memcpy(&mut frame_dst, f)).sum(),
        &mut || encode_unchecked(&input, &mut out2),
        &mut || encode_machine(&input, &mut machine),
    ]);
    let machine_share = t[3] / t[4];
    let reference = format!(
        "Against the reference writer, in the same rounds: the publisher machine {:.2}, \
         RowsBuilder {:.2}.",
        t[3] / t[4],
        t[3] / t[0]
    );
    for (ours, what) in [
        (t[0], "encode, Rows frames, each into a reused buffer"),
        (
            t[4],
            "encode, Rows frames through the publisher machine (stream names prepared once)",
        ),
        (
            t[3],
            "reference, not ours: the same bytes with nothing checked, every copy fixed-size",
        ),
    ] {
        lines.push(Line {
            what,
            bytes: hot.body().len(),
            rows: hot.rows,
            ours,
            dendro: Some(t[1]),
            memcpy: t[2],
        });
    }

    // The subscriber's rules, over decoded frames.
    let t = m.best(&mut [&mut || subscribe(&body), &mut || memcpy(&mut dst, &body)]);
    lines.push(Line {
        what: "decode + subscriber rules",
        bytes: body.len(),
        rows: stream.rows,
        ours: t[0],
        dendro: None,
        memcpy: t[1],
    });

    let table = print_table(&stream, &lines, quick);
    println!();
    println!("{reference}");
    // A loss like the publisher machine's of half its speed, which went
    // unseen for a round, fails the report when it lands: held to the
    // book's page as the last full run wrote it, before this one writes.
    let guard = machine_guard(machine_share);
    if !quick {
        write_page(&table, &reference);
    }
    if let Some(from_c) = from_c {
        println!("{from_c}");
    }

    if let Some(binary) = arg_after("--check-binary") {
        check_process(&binary, quick);
        if let Some(python) = arg_after("--python") {
            let c_bench = arg_after("--c-bench-binary");
            python_columns(
                &binary,
                &python,
                c_bench.as_deref(),
                &m,
                quick,
                c_batch_rows,
            );
        }
        demo_over_tls(&binary, quick);
    }
    if let Err(why) = guard {
        eprintln!("bench-report: {why}");
        std::process::exit(1);
    }
}

/// What the Python package times in its own process: the best seconds of
/// reading the capture with every rule checked and taking source 0's rows
/// as numpy columns, from the file and from its bytes in memory; of copying
/// those columns into fresh arrays (the least any reader that writes them
/// spends: the kernel zeroes fresh pages, and then they are written); the
/// rows it took, and the columns' bytes.
const PYTHON_COLUMNS: &str = r#"
import sys, time
import dendro_wire
path, rounds = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
best = {"file": 1e9, "bytes": 1e9, "copy": 1e9}
for _ in range(rounds):
    for what, source in (("file", path), ("bytes", data)):
        start = time.perf_counter()
        rows = dendro_wire.read(source).rows(0)
        n = len(rows)
        best[what] = min(best[what], time.perf_counter() - start)
    columns = (rows.ts, rows.wall_offset, rows.stream, rows.offsets, rows.data)
    start = time.perf_counter()
    copies = [c.copy() for c in columns]
    best["copy"] = min(best["copy"], time.perf_counter() - start)
    del copies
print(best["file"], best["bytes"], best["copy"], n, sum(c.nbytes for c in columns))
"#;

/// The Python package (`dendro_wire`, its wheel installed for `python`)
/// over the ~100 MB realistic agent capture, rows into numpy columns,
/// beside `dendro-wire check` over the same file in the same rounds, the
/// columns' bytes copied into fresh memory, and the C API's batch stepping
/// (`c_bench`) over the same capture's frames; `c_batch_rows` is the batch
/// rate of the table above.
fn python_columns(
    check: &str,
    python: &str,
    c_bench: Option<&str>,
    m: &Measure,
    quick: bool,
    c_batch_rows: Option<f64>,
) {
    let stream = realistic(if quick { 2_000 } else { 21_000 });
    let path =
        std::env::temp_dir().join(format!("dendro-wire-bench-py-{}.dwr", std::process::id()));
    std::fs::write(&path, &stream.bytes).expect("the capture is written");
    // A Python process a round; each read is short, so the noise of a shared
    // machine needs more rounds than the table's.
    let rounds = if quick { 2 } else { 10 };
    let mut checked = f64::INFINITY;
    let [mut from_file, mut from_bytes, mut copied] = [f64::INFINITY; 3];
    let (mut rows, mut column_bytes) = (0u64, 0.0);
    for _ in 0..rounds {
        let start = Instant::now();
        let out = std::process::Command::new(check)
            .args(["check", "--json"])
            .arg(&path)
            .output()
            .expect("dendro-wire runs");
        checked = checked.min(start.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A process a round: memory a read freed is not handed to the next.
        let out = std::process::Command::new(python)
            .args(["-c", PYTHON_COLUMNS])
            .arg(&path)
            .arg("1")
            .output()
            .expect("python runs");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let figures: Vec<f64> = said
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        let [file, bytes, copy, n, columns] = figures[..] else {
            panic!("the Python timing printed {said}");
        };
        from_file = from_file.min(file);
        from_bytes = from_bytes.min(bytes);
        copied = copied.min(copy);
        rows = n as u64;
        column_bytes = columns;
    }
    assert_eq!(rows, stream.rows, "every row of the capture into columns");
    let mrows = |t: f64| rows as f64 / t / 1e6;
    println!();
    println!(
        "Python (`dendro_wire.read(...).rows(0)`, numpy columns) over a {:.0} MB capture of {} \
         rows, best of {rounds}: from the file {:.1} M rows/s, from its bytes {:.1} M rows/s; \
         `dendro-wire check` over the same file, whole process, in the same rounds: {:.1} M \
         rows/s; Python from the file at {:.2}x check",
        stream.bytes.len() as f64 / 1e6,
        rows,
        mrows(from_file),
        mrows(from_bytes),
        mrows(checked),
        checked / from_file,
    );
    // The same capture's frames through the C API's batch call, beside
    // the table's smaller stream, which the caches hold more of.
    let c_here = c_bench.map(|binary| {
        let (_, _, batch) = decode_from_c(binary, stream.body(), m);
        batch
    });
    if let (Some(table), Some(here)) = (c_batch_rows, c_here) {
        let (table, here) = (table / 1e6, mrows(here));
        // Stepping every row as the C batch does, then writing the columns
        // as the copy above does: the time Python's read cannot beat but by
        // overlapping the two.
        let both = 1.0 / (1.0 / here + 1.0 / mrows(copied));
        println!(
            "The C API's batch stepping: {table:.1} M rows/s in the table above, {here:.1} M \
             rows/s over this capture; Python from bytes at {:.2}x and {:.2}x of them. The \
             columns' {:.0} MB copied into fresh memory: {:.1} M rows/s; that copy after the C \
             batch's stepping over this capture: {both:.1} M rows/s, and Python from bytes \
             reaches {:.2}x of it",
            mrows(from_bytes) / table,
            mrows(from_bytes) / here,
            column_bytes / 1e6,
            mrows(copied),
            mrows(from_bytes) / both,
        );
    }
    print_python_routes(python, &path, rows, if quick { 1 } else { 3 });
    let _ = std::fs::remove_file(&path);
}

fn arg_after(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The best seconds per pass of `examples/bench.c` (the C API from C) over
/// `body`: frames only, every row read a call each, and in batches.
fn decode_from_c(binary: &str, body: &[u8], m: &Measure) -> (f64, f64, f64) {
    use std::io::Write;
    let path =
        std::env::temp_dir().join(format!("dendro-wire-bench-c-{}.body", std::process::id()));
    let _ = std::fs::remove_file(&path);
    // A new file, never one planted at the name.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| f.write_all(body))
        .expect("the body is written");
    let out = std::process::Command::new(binary)
        .arg(&path)
        .arg(m.rounds.to_string())
        .arg(m.per_sample.as_millis().to_string())
        .output()
        .expect("bench.c runs");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seconds = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|s| s.trim().parse::<f64>().ok())
            .expect("bench.c's line")
    };
    (seconds("decode "), seconds("visit "), seconds("batch "))
}

/// `dendro-wire check` over a ~400 MB capture, as a whole process, against
/// dendro's FrameReader decoding the same bytes already in memory.
fn check_process(binary: &str, quick: bool) {
    let stream = realistic(if quick { 4_000 } else { 85_000 });
    let path = std::env::temp_dir().join(format!("dendro-wire-bench-{}.dwr", std::process::id()));
    std::fs::write(&path, &stream.bytes).expect("the capture is written");
    let mut process = f64::INFINITY;
    let mut dendro = f64::INFINITY;
    for _ in 0..3 {
        let start = Instant::now();
        let out = std::process::Command::new(binary)
            .args(["check", "--json"])
            .arg(&path)
            .output()
            .expect("dendro-wire runs");
        process = process.min(start.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let start = Instant::now();
        black_box(dendro_read_all(&stream.bytes));
        dendro = dendro.min(start.elapsed().as_secs_f64());
    }
    let _ = std::fs::remove_file(&path);
    let mb = stream.bytes.len() as f64 / 1e6;
    println!();
    println!(
        "`dendro-wire check` over a {mb:.0} MB capture, whole process: {process:.3} s \
         ({:.0} MB/s); dendro's FrameReader over the same bytes in memory: {dendro:.3} s \
         ({:.0} MB/s); ours is {:.1}x faster",
        mb / process,
        mb / dendro,
        dendro / process
    );
}

/// Print the table, and give it back as Markdown for the book's page.
fn print_table(stream: &Stream, lines: &[Line], quick: bool) -> String {
    use std::fmt::Write as _;
    let mut table = String::new();
    println!(
        "dendro-wire bench report ({}): realistic agent stream of {:.1} MB, {} frames, {} rows \
         (64 rows of 32 bytes per Rows frame, six stream names, a 256 KiB Segment every 500 frames)",
        if quick { "quick" } else { "full" },
        stream.bytes.len() as f64 / 1e6,
        stream.frames.len(),
        stream.rows
    );
    println!();
    table.push_str(
        "| what | ours MB/s | ours Mrows/s | dendro 0.6.1 MB/s | memcpy MB/s | ours/dendro | ours/memcpy |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for l in lines {
        let mbs = |t: f64| l.bytes as f64 / t / 1e6;
        let _ = writeln!(
            table,
            "| {} | {:.0} | {:.1} | {} | {:.0} | {} | {:.2} |",
            l.what,
            mbs(l.ours),
            l.rows as f64 / l.ours / 1e6,
            l.dendro.map_or("—".into(), |d| format!("{:.0}", mbs(d))),
            mbs(l.memcpy),
            l.dendro
                .map_or("—".into(), |d| format!("{:.1}x", d / l.ours)),
            l.memcpy / l.ours,
        );
    }
    print!("{table}");
    table
}

/// The demo's rows/s over TLS 1.3 beside plaintext: the whole main job
/// (agent, transport, collector) as processes, alternating, best of each.
fn demo_over_tls(binary: &str, quick: bool) {
    let (rounds, seconds) = if quick { (1, "2") } else { (3, "5") };
    let rate = |tls: bool| {
        let mut cmd = std::process::Command::new(binary);
        cmd.args(["demo", "--seconds", seconds]);
        if tls {
            cmd.arg("--tls");
        }
        let out = cmd.output().expect("dendro-wire runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix("throughput"))
            .and_then(|l| l.split(", ").nth(1))
            .and_then(|l| l.strip_suffix(" M rows/s"))
            .and_then(|n| n.trim().parse::<f64>().ok())
            .expect("the demo's throughput line")
    };
    let (mut plain, mut tls) = (0f64, 0f64);
    for _ in 0..rounds {
        plain = plain.max(rate(false));
        tls = tls.max(rate(true));
    }
    println!();
    println!(
        "`dendro-wire demo` (agent, loopback transport and collector), best of {rounds} runs of \
         {seconds} s, alternating: plaintext {plain:.2} M rows/s, TLS 1.3 {tls:.2} M rows/s; \
         TLS runs at {:.2}x plaintext",
        tls / plain
    );
}
