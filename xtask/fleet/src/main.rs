//! `fleet`: what `cargo xtask fleet` runs beside the collectors.
//!
//! - `fleet agents`: N agents on one runtime, each from its own 127/8
//!   address over its own connection ([`agent`]), for a while; then where
//!   every row went, for each agent (a file) and in all (stdout).
//! - `fleet ceiling`: dendro 0.6.1's own `Writer` at its best, in the same
//!   run: one source, rows handed over in large batches, rows a second
//!   committed.
//! - `fleet read`: the rows each source uuid holds in some archives, read
//!   back with dendro 0.6.1.

mod agent;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use dendro::archive::{SourceMeta, WalRow};
use dendro::writer::Writer;
use dendro_wire_std::archive::{contents, RawRowsEncoder};

const USAGE: &str = "\
fleet agents --target HOST:PORT --agents N [--interval-ms 1000] [--rows 20] [--row-bytes 32]
             [--seconds 60] [--ramp-seconds 0] [--clock-every 10] [--full-every 600]
             [--run ID] [--out FILE]
fleet ceiling --path ARCHIVE [--rows 1048576] [--batch 65536] [--sources 1]
fleet read ARCHIVE...";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("agents") => agents(&args[1..]),
        Some("ceiling") => ceiling(&args[1..]),
        Some("read") => read(&args[1..]),
        _ => Err(USAGE.to_string()),
    };
    if let Err(e) = result {
        eprintln!("fleet: {e}");
        std::process::exit(1);
    }
}

/// `--name value` pairs.
fn flags(args: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut flags = BTreeMap::new();
    let mut it = args.iter();
    while let Some(name) = it.next() {
        let name = name
            .strip_prefix("--")
            .ok_or_else(|| format!("{name}: expected a --flag\n{USAGE}"))?;
        let value = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
        flags.insert(name.to_string(), value.clone());
    }
    Ok(flags)
}

fn number<T: std::str::FromStr>(
    flags: &BTreeMap<String, String>,
    name: &str,
    default: Option<T>,
) -> Result<T, String> {
    match flags.get(name) {
        Some(v) => v.parse().map_err(|_| format!("--{name} {v}: not a number")),
        None => default.ok_or_else(|| format!("--{name} is required")),
    }
}

fn agents(args: &[String]) -> Result<(), String> {
    let flags = flags(args)?;
    let target: SocketAddr = flags
        .get("target")
        .ok_or("--target is required")?
        .parse()
        .map_err(|e| format!("--target: {e}"))?;
    let n: usize = number(&flags, "agents", None)?;
    let interval = Duration::from_millis(number(&flags, "interval-ms", Some(1000))?);
    let rows: usize = number(&flags, "rows", Some(20))?;
    let row_bytes: usize = number(&flags, "row-bytes", Some(32))?;
    let seconds: f64 = number(&flags, "seconds", Some(60.0))?;
    let ramp: f64 = number(&flags, "ramp-seconds", Some(0.0))?;
    let run: u32 = number(&flags, "run", Some(1))?;
    let clock_every: i64 = number(&flags, "clock-every", Some(10))?;
    let full_every: u64 = number(&flags, "full-every", Some(600))?;
    let out = flags.get("out").map(PathBuf::from);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let now = Instant::now() + Duration::from_millis(200);
    let stop = now + Duration::from_secs_f64(seconds);
    let plans: Vec<agent::Plan> = (0..n)
        .map(|index| agent::Plan {
            index,
            local: agent::address(index),
            target,
            interval,
            rows,
            row_bytes,
            // Arrivals spread evenly over the ramp.
            start: now + Duration::from_secs_f64(ramp * index as f64 / n.max(1) as f64),
            stop,
            run,
            clock_every,
            full_every,
        })
        .collect();
    let started = Instant::now();
    let all: Vec<agent::Counts> = runtime.block_on(async {
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                let tasks: Vec<_> = plans
                    .into_iter()
                    .map(|plan| tokio::task::spawn_local(agent::run(plan)))
                    .collect();
                // The moment the agents stop observing, and what they had
                // written whole by then: what the collector is measured
                // against.
                tokio::task::spawn_local(async move {
                    tokio::time::sleep_until(stop.into()).await;
                    let written = agent::WRITTEN.load(std::sync::atomic::Ordering::Relaxed);
                    println!("stopping written {written}");
                    let _ = std::io::stdout().flush();
                });
                let mut all = Vec::with_capacity(tasks.len());
                for task in tasks {
                    all.push(task.await.unwrap_or_default());
                }
                all
            })
            .await
    });
    let took = started.elapsed();
    let mut total = agent::Counts {
        clean_end: true,
        ..agent::Counts::default()
    };
    let mut lines = String::new();
    for (index, c) in all.iter().enumerate() {
        total += *c;
        lines.push_str(&format!(
            "{} {} {} {} {} {} {} {} {} {} {}\n",
            index,
            agent::uuid(run, index),
            c.observed,
            c.sent,
            c.written,
            c.dropped,
            c.unsent,
            c.lost_unwritten,
            c.in_doubt,
            c.connections,
            u8::from(c.clean_end),
        ));
    }
    if let Some(out) = out {
        std::fs::write(&out, lines).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let clean = all.iter().filter(|c| c.clean_end).count();
    println!(
        "agents {n} seconds {:.1} observed {} sent {} written {} dropped {} unsent {} \
         lost_unwritten {} in_doubt {} repeated {} connections {} connect_failures {} \
         ended_by_peer {} clean_ends {clean}",
        took.as_secs_f64(),
        total.observed,
        total.sent,
        total.written,
        total.dropped,
        total.unsent,
        total.lost_unwritten,
        total.in_doubt,
        total.repeated,
        total.connections,
        total.connect_failures,
        total.ended_by_peer,
    );
    Ok(())
}

/// dendro's own `Writer` with nothing between: `--sources` sources (1 by
/// default: its best case), each a row on each of 20 streams a second of
/// its clock, handed over `--batch` rows a transaction (`wal_tick`, every
/// source's rows of a batch together, each in key order), then a barrier;
/// rows a second committed. Opening the sources is not timed.
fn ceiling(args: &[String]) -> Result<(), String> {
    let flags = flags(args)?;
    let path = PathBuf::from(flags.get("path").ok_or("--path is required")?);
    let rows: usize = number(&flags, "rows", Some(1 << 20))?;
    let batch: usize = number(&flags, "batch", Some(1 << 16))?;
    let sources: usize = number(&flags, "sources", Some(1))?;
    let _ = std::fs::remove_file(&path);
    let fail = |e: dendro::Error| e.to_string();
    let mut writer =
        Writer::create(&path, Box::new(RawRowsEncoder::new(agent::ENCODER))).map_err(fail)?;
    let mut handles = Vec::with_capacity(sources);
    for i in 0..sources {
        let meta = SourceMeta {
            labels: BTreeMap::from([("host".to_string(), format!("ceiling-{i}"))]),
            metadata: BTreeMap::new(),
            clock_anchor_wall_ns: 0,
        };
        handles.push(writer.add_source(meta).map_err(fail)?);
    }
    let ids: Vec<i64> = handles.iter().map(|h| h.source_id()).collect();
    // Row n: source n/20 % sources, stream n % 20, second n/(20 sources).
    let row = |n: usize| {
        let second = n / (20 * sources);
        let stream = n % 20;
        WalRow {
            stream: format!("sensor/channel-{stream:02}"),
            ts: second as i64 * 1_000_000_000,
            wall_offset: 1_000,
            row: vec![0x5a; 32],
        }
    };
    let batches: Vec<Vec<(i64, Vec<WalRow>)>> = (0..rows.div_ceil(batch))
        .map(|b| {
            let mut by_source: BTreeMap<i64, Vec<WalRow>> = BTreeMap::new();
            for n in b * batch..((b + 1) * batch).min(rows) {
                let source = ids[n / 20 % sources];
                by_source.entry(source).or_default().push(row(n));
            }
            by_source
                .into_iter()
                .map(|(id, mut rows)| {
                    rows.sort_by(|a, b| (a.stream.as_str(), a.ts).cmp(&(b.stream.as_str(), b.ts)));
                    (id, rows)
                })
                .collect()
        })
        .collect();
    let started = Instant::now();
    for b in batches {
        writer.wal_tick(b).map_err(fail)?;
    }
    handles[0].sync().map_err(fail)?;
    let took = started.elapsed();
    let writer_cpu = thread_cpu(std::process::id(), "dendro-writer");
    drop(handles);
    writer.join().map_err(fail)?;
    println!(
        "ceiling sources {sources} rows {rows} seconds {:.3} rows_per_second {:.0} writer_cpu {writer_cpu:.2}",
        took.as_secs_f64(),
        rows as f64 / took.as_secs_f64()
    );
    Ok(())
}

/// The CPU seconds the threads of process `pid` named `name` have used.
pub fn thread_cpu(pid: u32, name: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    let mut seconds = 0.0;
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        if head.rsplit_once('(').map(|(_, comm)| comm) != Some(name) {
            continue;
        }
        // utime and stime: the 12th and 13th fields after the name, in
        // clock ticks (100 a second).
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        seconds += (ticks(11) + ticks(12)) / 100.0;
    }
    seconds
}

/// Each source uuid's rows over the archives given, read back with dendro:
/// `uuid rows sources` a line.
fn read(args: &[String]) -> Result<(), String> {
    let mut by_uuid: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for path in args {
        for source in contents(path.as_ref()).map_err(|e| format!("{path}: {e}"))? {
            let uuid = source
                .uuid
                .unwrap_or_else(|| format!("no-uuid-{}", source.id));
            let entry = by_uuid.entry(uuid).or_default();
            entry.0 += source.wal_rows;
            entry.1 += 1;
        }
    }
    let mut out = std::io::stdout().lock();
    for (uuid, (rows, sources)) in by_uuid {
        writeln!(out, "{uuid} {rows} {sources}").map_err(|e| e.to_string())?;
    }
    Ok(())
}
