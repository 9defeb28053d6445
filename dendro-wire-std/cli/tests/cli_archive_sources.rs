//! `listen --archive` against peers that open source after source from
//! several addresses: the archive holds no more than its bounds, each
//! refusal is counted, and an honest agent from another address lands its
//! rows, reconnecting too.
#![cfg(feature = "archive")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dendro_wire_std::dendro_wire_core::{Frame, Handshake, Map};
use dendro_wire_std::FrameWriter;
use dendro_wire_test_support::peers::connect_from;
use dendro_wire_test_support::process::wait;
use dendro_wire_test_support::scratch;
use dendro_wire_test_support::streams::{write_rows_frame, ROWS_PER_FRAME};

const TOOL: &str = env!("CARGO_BIN_EXE_dendro-wire");
const PER_ADDRESS: u64 = 8;
const TOTAL: u64 = 45;
/// Handshakes each hostile connection sends.
const HANDSHAKES: u32 = 20;
const HONEST_UUID: &str = "0b5e2c1a-7d43-4f6e-9a10-3c2b1d0e4f5a";

fn uuid(n: u64) -> String {
    format!("{n:08x}-0000-4000-8000-{n:012x}")
}

/// Send `stream` from `from`, end it, and wait until the collector closes
/// its side (a refused connection is closed before it has read it all).
fn send(from: [u8; 4], addr: SocketAddr, stream: &[u8]) {
    let mut peer = connect_from(from, addr).unwrap();
    let _ = peer.write_all(stream);
    let _ = peer.shutdown(std::net::Shutdown::Write);
    peer.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = peer.read_to_end(&mut Vec::new());
}

/// `HANDSHAKES` Handshakes, each a new source named `uuid(first + i)`.
fn handshakes(first: u64) -> Vec<u8> {
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    for i in 0..HANDSHAKES {
        let uuid = uuid(first + u64::from(i));
        w.write_frame(&Frame::Handshake(Handshake {
            source: i,
            uuid: Some(&uuid),
            labels: Map::EMPTY,
            metadata: Map::EMPTY,
            clock_anchor_wall_ns: 0,
            complete: false,
        }))
        .unwrap();
    }
    w.into_inner()
}

/// The honest agent's source, frames `seqs` of its rows.
fn honest(seqs: std::ops::Range<u64>) -> Vec<u8> {
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_frame(&Frame::Handshake(Handshake {
        source: 0,
        uuid: Some(HONEST_UUID),
        labels: Map::EMPTY,
        metadata: Map::EMPTY,
        clock_anchor_wall_ns: 0,
        complete: false,
    }))
    .unwrap();
    for seq in seqs {
        write_rows_frame(&mut w, seq, ROWS_PER_FRAME, &[7u8; 32]);
    }
    w.into_inner()
}

/// GET /metrics from `at`, a `host:port`.
fn metrics(at: &str) -> String {
    let mut s = TcpStream::connect(at).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// The value of the metric `name` (a line `name value`).
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name} in {text}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn sources_past_the_bounds_are_refused_and_counted_and_an_honest_agent_lands() {
    let dir = scratch!("archive-sources");
    let path = dir.join("a.dendro");
    let mut listen = Command::new(TOOL)
        .args(["listen", "--bind", "127.0.0.1:0"])
        .args(["--metrics", "127.0.0.1:0", "--archive"])
        .arg(&path)
        .args(["--archive-max-sources", &TOTAL.to_string()])
        .args([
            "--archive-max-sources-per-address",
            &PER_ADDRESS.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(listen.stdout.take().unwrap());
    let mut stderr = listen.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .parse()
        .unwrap();
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let metrics_at = line
        .trim()
        .strip_prefix("metrics on http://")
        .and_then(|l| l.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let summary = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });

    // Five addresses, four connections each, every connection opening
    // source after source: each address creates its bound, and each of its
    // connections is closed at its first source past it.
    let mut next = 0;
    for host in 2..=6u8 {
        for _ in 0..4 {
            send([127, 0, 0, host], addr, &handshakes(next));
            next += u64::from(HANDSHAKES);
        }
    }
    // The honest agent, from an address of its own.
    send([127, 0, 0, 9], addr, &honest(0..5));
    // Two more addresses fill the archive's bound in all.
    for host in 7..=8u8 {
        for _ in 0..2 {
            send([127, 0, 0, host], addr, &handshakes(next));
            next += u64::from(HANDSHAKES);
        }
    }
    // The archive is full: the honest agent reconnects all the same.
    send([127, 0, 0, 9], addr, &honest(5..10));

    let refused = 5 * 4 + 2 * 2;
    let started = Instant::now();
    let text = loop {
        let text = metrics(&metrics_at);
        // Once no source is open, the sources that ended stop beating.
        if metric(&text, "dendro_wire_archive_sources_beating") == 0
            || started.elapsed() > Duration::from_secs(30)
        {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        metric(&text, "dendro_wire_archive_sources_refused_total"),
        refused,
        "{text}"
    );
    assert_eq!(
        metric(&text, "dendro_wire_archive_sources"),
        TOTAL,
        "{text}"
    );
    assert_eq!(
        metric(&text, "dendro_wire_archive_sources_beating"),
        0,
        "{text}"
    );

    assert!(Command::new("kill")
        .args(["-TERM", &listen.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = wait(&mut listen);
    let (summary, stderr) = (summary.join().unwrap(), stderr.join().unwrap());
    assert!(status.success(), "{summary}\n{stderr}");
    assert!(
        summary.contains(&format!(
            "sources   {} opened, {refused} refused",
            TOTAL + 1
        )),
        "{summary}"
    );
    // Refusals are logged at most once every ten seconds, not once each.
    let lines = stderr.matches("a source refused").count();
    assert!((1..=3).contains(&lines), "{lines} lines:\n{stderr}");

    // Read back with dendro: each address's first connection opened its
    // bound and no more, then the bound in all took the last address's
    // first four; the honest agent's rows all landed. Its reconnect is a
    // row of its own under its uuid (dendro 0.6.1 adds a source anew),
    // not counted again.
    let db = dendro::archive::Archive::open(&path).unwrap();
    let sources = db.read_sources().unwrap();
    let mut want: Vec<String> = (0..5u64)
        .flat_map(|a| (0..PER_ADDRESS).map(move |i| uuid(a * 4 * u64::from(HANDSHAKES) + i)))
        .chain((0..TOTAL - 5 * PER_ADDRESS - 1).map(|i| uuid(5 * 4 * u64::from(HANDSHAKES) + i)))
        .collect();
    want.push(HONEST_UUID.to_string());
    want.sort();
    let mut got: Vec<String> = sources.iter().filter_map(|s| s.uuid.clone()).collect();
    got.sort();
    got.dedup();
    assert_eq!(got, want);
    assert_eq!(sources.len() as u64, TOTAL + 1);
    let mut honest_rows = 0;
    for source in &sources {
        if source.uuid.as_deref() != Some(HONEST_UUID) {
            continue;
        }
        for stream in db.all_streams(source.id).unwrap() {
            honest_rows += db.live_wal_span(source.id, &stream).unwrap().rows;
        }
    }
    assert_eq!(honest_rows, 10 * ROWS_PER_FRAME);
}
