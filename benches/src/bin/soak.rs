//! `cargo xtask soak`: `dendro-wire listen` under the heavy version of every
//! hostile case, with an honest agent streaming at full rate throughout, and
//! a table of what it cost: the listener's peak RSS, its file descriptors
//! before and after, the honest agent's rows/s against running alone, and
//! the connections that ended and why. Against peers that speak the
//! protocol correctly and hold the table (`soak/holders.rs`), what is set
//! beside running alone is an agent's rows delivered and its wait to get
//! in, the two interleaved round by round.
//!
//! The listener runs as its own process (the release build given by
//! `--bin`), so what is measured is what an operator runs. Not part of `cargo
//! xtask ci`: it opens tens of thousands of connections.

use std::io::Write;
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dendro_wire_core::PREAMBLE;
use honest::{rate, rate_alone, small_stream, Honest};
use listener::Listener;
use report::Row;

#[path = "soak/attacks.rs"]
mod attacks;
#[path = "soak/holders.rs"]
mod holders;
#[path = "soak/honest.rs"]
mod honest;
#[path = "soak/listener.rs"]
mod listener;
#[path = "soak/probe.rs"]
mod probe;
#[path = "soak/report.rs"]
mod report;

struct Options {
    bin: PathBuf,
    seconds: f64,
    idle: usize,
    liars: usize,
    sequential: usize,
    holders: holders::Scale,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        bin: PathBuf::new(),
        seconds: 10.0,
        idle: 10_000,
        liars: 1_000,
        sequential: 5_000,
        // The defaults' table; the red team's flood scaled to it (2,000 a
        // second against a table of 500).
        holders: holders::Scale {
            table: 10_000,
            rounds: 3,
            trickles: 1_000,
            half_rate: 40_000,
        },
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--bin" => o.bin = PathBuf::from(value()?),
            "--seconds" => o.seconds = value()?.parse().map_err(|e| format!("{e}"))?,
            "--quick" => {
                o.seconds = 3.0;
                o.idle = 1_000;
                o.liars = 100;
                o.sequential = 500;
                o.holders = holders::Scale {
                    table: 1_000,
                    rounds: 2,
                    trickles: 100,
                    half_rate: 4_000,
                };
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.bin.as_os_str().is_empty() {
        return Err("--bin PATH (a release build of dendro-wire) is required".into());
    }
    Ok(o)
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(2);
        }
    };
    let secs = Duration::from_secs_f64(o.seconds);
    let mut table: Vec<Row> = Vec::new();
    // Every peer here connects from 127.0.0.1, and these cases measure
    // holding many connections, not the caps on those yet to open a source
    // (tests/collector_admission.rs has those).
    let limit = "--max-connections 30000 --max-connections-per-peer 30000 \
                 --max-unopened-connections 30000 --handshake-timeout 3600s";
    println!(
        "Each case's honest rate is set beside the same agent alone against a fresh listener, \
         measured just before it."
    );

    // The honest agent alone, as a case of its own.
    eprintln!("soak: the honest agent alone, {secs:?}");
    let first = rate_alone(&o.bin, secs);
    let l = Listener::start(&o.bin, &[limit]);
    let agent = Honest::start(l.addr);
    std::thread::sleep(secs);
    let run = agent.stop();
    let (again, delivered_all) = rate(run);
    std::thread::sleep(Duration::from_millis(500));
    let s = l.stop();
    table.push(Row::new(
        "honest agent alone, twice".into(),
        &s,
        "—".into(),
        format!(
            "{:.2} then {:.2} M rows/s ({:.2}x)",
            first / 1e6,
            again / 1e6,
            again / first
        ),
        s.clean_exit && delivered_all && s.rows_applied == run.1,
    ));

    // Liars: each claims a 64 MiB frame and sends nothing more.
    eprintln!("soak: {} clients claiming 64 MiB frames, {secs:?}", o.liars);
    let alone = rate_alone(&o.bin, secs);
    let l = Listener::start(&o.bin, &[limit]);
    let mut liars = Vec::new();
    for _ in 0..o.liars {
        let mut c = TcpStream::connect(l.addr).expect("connect");
        c.write_all(&PREAMBLE).unwrap();
        c.write_all(&(64u32 << 20).to_le_bytes()).unwrap();
        liars.push(c);
    }
    let agent = Honest::start(l.addr);
    std::thread::sleep(secs);
    let run = agent.stop();
    let (with_liars, delivered_all) = rate(run);
    std::thread::sleep(Duration::from_millis(500));
    let s = l.stop();
    drop(liars);
    table.push(Row::new(
        format!(
            "{} clients claiming a 64 MiB frame, sending nothing",
            o.liars
        ),
        &s,
        "—".into(),
        format!(
            "{:.2} M rows/s ({:.2}x alone)",
            with_liars / 1e6,
            with_liars / alone
        ),
        s.clean_exit
            && delivered_all
            && s.rows_applied == run.1
            && s.peak_rss < 256 << 20
            && with_liars >= 0.8 * alone,
    ));

    // Ten thousand idle connections, each having sent its preamble.
    eprintln!("soak: {} idle connections", o.idle);
    let alone = rate_alone(&o.bin, secs);
    let l = Listener::start(&o.bin, &[limit]);
    let agent = Honest::start(l.addr);
    let base = l.fds();
    let started = Instant::now();
    let mut idle = Vec::with_capacity(o.idle);
    for _ in 0..o.idle {
        match TcpStream::connect(l.addr) {
            Ok(mut c) => {
                let _ = c.write_all(&PREAMBLE);
                idle.push(c);
            }
            Err(e) => {
                eprintln!("soak: connect failed after {} connections: {e}", idle.len());
                break;
            }
        }
    }
    let mut accepted_in = None;
    while started.elapsed() < Duration::from_secs(30) {
        if l.fds() >= base + o.idle {
            accepted_in = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(secs);
    let run = agent.stop();
    let (with_idle, delivered_all) = rate(run);
    std::thread::sleep(Duration::from_millis(500));
    let s = l.stop();
    drop(idle);
    table.push(Row::new(
        format!(
            "{} idle connections (preamble sent), accepted in {}",
            o.idle,
            accepted_in.map_or("more than 30 s".into(), |t| format!(
                "{:.2} s",
                t.as_secs_f64()
            ))
        ),
        &s,
        "—".into(),
        format!(
            "{:.2} M rows/s ({:.2}x alone)",
            with_idle / 1e6,
            with_idle / alone
        ),
        s.clean_exit
            && delivered_all
            && s.rows_applied == run.1
            && s.peak_rss < 256 << 20
            && accepted_in.is_some_and(|t| t < Duration::from_secs(10)),
    ));

    // Sequential reconnects: every descriptor comes back.
    eprintln!("soak: {} sequential connections", o.sequential);
    let alone = rate_alone(&o.bin, secs);
    let l = Listener::start(&o.bin, &[limit]);
    let agent = Honest::start(l.addr);
    std::thread::sleep(Duration::from_millis(200));
    let before = l.fds();
    let stream = small_stream();
    for i in 0..o.sequential {
        if let Ok(mut c) = TcpStream::connect(l.addr) {
            // Every third one a stranger, refused; the rest a short stream.
            let _ = c.write_all(if i % 3 == 0 { b"hello" } else { &stream });
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while l.fds() != before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = l.fds();
    let run = agent.stop();
    let (with_seq, delivered_all) = rate(run);
    std::thread::sleep(Duration::from_millis(500));
    let s = l.stop();
    table.push(Row::new(
        format!("{} sequential connections", o.sequential),
        &s,
        format!("{before} → {after}"),
        format!(
            "{:.2} M rows/s ({:.2}x alone)",
            with_seq / 1e6,
            with_seq / alone
        ),
        s.clean_exit && delivered_all && s.rows_applied == run.1 && after == before,
    ));

    // A reconnect storm against a cap: many clients at once, connecting,
    // sending a little, vanishing.
    let cap = 1_000;
    eprintln!("soak: a reconnect storm against a cap of {cap}, {secs:?}");
    let alone = rate_alone(&o.bin, secs);
    let caps = format!("--max-connections {cap} --max-connections-per-peer {cap}");
    let l = Listener::start(&o.bin, &[&caps]);
    let agent = Honest::start(l.addr);
    let storming = Arc::new(AtomicBool::new(true));
    let made = Arc::new(AtomicU64::new(0));
    let storm: Vec<_> = (0..8)
        .map(|t| {
            let (storming, made, addr) = (storming.clone(), made.clone(), l.addr);
            std::thread::spawn(move || {
                let mut held = std::collections::VecDeque::new();
                let mut i = 0u64;
                while storming.load(Ordering::Relaxed) {
                    if let Ok(mut c) = TcpStream::connect(addr) {
                        let _ = c.write_all(&PREAMBLE[..(i as usize + t) % PREAMBLE.len()]);
                        held.push_back(c);
                        made.fetch_add(1, Ordering::Relaxed);
                    }
                    // Each thread holds its last 200 open, so the cap is hit.
                    if held.len() > 200 {
                        held.pop_front();
                    }
                    i += 1;
                }
            })
        })
        .collect();
    std::thread::sleep(secs);
    storming.store(false, Ordering::Relaxed);
    for t in storm {
        let _ = t.join();
    }
    let run = agent.stop();
    let (with_storm, delivered_all) = rate(run);
    std::thread::sleep(Duration::from_millis(500));
    let s = l.stop();
    table.push(Row::new(
        format!(
            "reconnect storm: {} connections by 8 clients against a cap of {cap}",
            made.load(Ordering::Relaxed)
        ),
        &s,
        "—".into(),
        format!(
            "{:.2} M rows/s ({:.2}x alone)",
            with_storm / 1e6,
            with_storm / alone
        ),
        s.clean_exit && delivered_all && s.rows_applied == run.1,
    ));

    // Against the defaults: peers that aim at the bounds themselves.
    table.push(attacks::hoarders(&o.bin, secs));
    table.push(attacks::cap_holders(&o.bin, o.idle, secs));
    table.push(attacks::unread_stdout(&o.bin, secs));

    // Peers that speak the protocol correctly, the honest agent's rows and
    // its wait to get in beside each, alone and attacked in turn.
    table.push(holders::keepalive_holders(&o.bin, &o.holders, secs));
    table.push(holders::half_handshakes(&o.bin, &o.holders, secs));
    table.push(holders::silent_neighbours(&o.bin, &o.holders, secs));
    table.push(holders::trickles(&o.bin, &o.holders, secs));

    let all = report::print(&table);
    if !all {
        eprintln!("soak: a case broke its bound (see the last column)");
        std::process::exit(1);
    }
}
