//! `dendro-wire listen --metrics`: what it serves, and that whoever reaches
//! the port cannot hold it. (A real Prometheus scrapes it in `cargo xtask
//! metrics`.)

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use dendro_wire_test_support::fixtures::testdata;
use dendro_wire_test_support::process::Tool;

const TOOL: Tool = Tool::new(env!("CARGO_BIN_EXE_dendro-wire"));

/// One HTTP/1.1 GET on a connection of its own: the status line and the
/// body.
fn get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.lines().next().unwrap_or_default().to_string();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// The value of the series `name` (no labels) in an exposition.
fn value(exposition: &str, name: &str) -> Option<u64> {
    exposition.lines().find_map(|l| {
        let (series, v) = l.split_once(' ')?;
        (series == name).then(|| v.parse().ok())?
    })
}

/// `listen --metrics 127.0.0.1:0`, and the address of its metrics.
fn listen_with_metrics() -> (dendro_wire_test_support::process::Listening, String) {
    let mut listening = TOOL.listen(&[
        OsStr::new("--bind"),
        OsStr::new("127.0.0.1:0"),
        OsStr::new("--metrics"),
        OsStr::new("127.0.0.1:0"),
    ]);
    let line = listening.next_line();
    let metrics = line
        .strip_prefix("metrics on http://")
        .and_then(|l| l.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    (listening, metrics)
}

/// Poll `/metrics` until `name` reads `want`, for at most ten seconds.
fn wait_for(metrics: &str, name: &str, want: u64) -> String {
    let started = Instant::now();
    loop {
        let (status, body) = get(metrics, "/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        if value(&body, name) == Some(want) || started.elapsed() > Duration::from_secs(10) {
            return body;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn metrics_count_what_the_listener_applied_and_ready_says_when_it_stops() {
    let (listening, metrics) = listen_with_metrics();
    let (status, body) = get(&metrics, "/ready");
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "ready\n")
    );
    let sent = TOOL.run(
        [
            OsStr::new("replay"),
            OsStr::new("--connect"),
            OsStr::new(listening.addr()),
            testdata("sample.dwr").as_os_str(),
        ],
        b"",
    );
    assert!(sent.status.success(), "{sent:?}");
    // sample.dwr: 4 rows applied, 1 skipped, one gap of 2 frames.
    let body = wait_for(
        &metrics,
        "dendro_wire_connections_ended_total{reason=\"clean\"}",
        1,
    );
    for (name, want) in [
        ("dendro_wire_connections_accepted_total", 1),
        ("dendro_wire_connections_ended_total{reason=\"clean\"}", 1),
        ("dendro_wire_connections_live", 0),
        ("dendro_wire_frames_total", 13),
        ("dendro_wire_bytes_received_total", 916),
        ("dendro_wire_rows_applied_total", 4),
        ("dendro_wire_rows_skipped_total", 1),
        ("dendro_wire_gaps_total", 1),
        ("dendro_wire_frames_lost_total", 2),
        ("dendro_wire_memory_limit_bytes", 256 << 20),
    ] {
        assert_eq!(value(&body, name), Some(want), "{name} in\n{body}");
    }
    let (status, _) = get(&metrics, "/nothing");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert!(listening.terminate());
    let done = listening.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let summary = done.lines.last().cloned().unwrap_or_default();
    assert!(
        summary.contains("rows 4 applied 1 skipped"),
        "the summary and the metrics agree: {summary}"
    );
}

#[test]
fn idle_connections_to_the_metrics_port_cannot_keep_a_scraper_out() {
    let (listening, metrics) = listen_with_metrics();
    // Far more connections than are served at once, each sending nothing:
    // every one past the cap closes the oldest, so a scraper gets in.
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(&metrics).unwrap())
        .collect();
    let (status, body) = get(&metrics, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(value(&body, "dendro_wire_connections_live"), Some(0));
    // The oldest were closed: reading one ends at once rather than waiting.
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert_eq!(first.read(&mut byte).unwrap_or(0), 0, "closed");
    drop(idle);
    assert!(listening.terminate());
    assert!(listening.finish().status.success());
}

/// A stream of `lines` of JSON, through the tool's own encoder.
fn encoded(lines: &[&str]) -> Vec<u8> {
    let out = TOOL.run(["encode"], lines.join("\n").as_bytes());
    assert!(out.status.success(), "{out:?}");
    out.stdout
}

/// A `seq` of 0 and then 2^64-1 is no loss of 1.8e19 frames: the jump is
/// one the connection could not have produced, counted as a regression in
/// /metrics and the summaries and said once, while the real gap beside it
/// is counted exactly.
#[test]
fn a_seq_jump_no_connection_could_produce_is_a_regression_not_frames_lost() {
    let (listening, metrics) = listen_with_metrics();
    let handshake = |source: u32| {
        format!(
            r#"{{"frame":"handshake","source":{source},"uuid":null,"labels":{{}},"metadata":{{}},"clock_anchor_wall_ns":0,"complete":false}}"#
        )
    };
    let rows = |source: u32, seq: u64| {
        format!(r#"{{"frame":"rows","source":{source},"seq":{seq},"index_state":[0,0],"rows":[]}}"#)
    };
    let lines = [
        handshake(0),
        rows(0, 0),
        rows(0, u64::MAX),
        handshake(1),
        rows(1, 5),
        rows(1, 8), // 2 frames lost, honestly
        rows(0, 3), // a regression proper
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let mut peer = TcpStream::connect(listening.addr()).unwrap();
    peer.write_all(&encoded(&lines)).unwrap();
    drop(peer);
    let body = wait_for(
        &metrics,
        "dendro_wire_connections_ended_total{reason=\"clean\"}",
        1,
    );
    for (name, want) in [
        ("dendro_wire_connections_ended_total{reason=\"clean\"}", 1),
        ("dendro_wire_frames_total", 7),
        ("dendro_wire_sources_opened_total", 2),
        ("dendro_wire_gaps_total", 1),
        ("dendro_wire_frames_lost_total", 2),
        ("dendro_wire_seq_regressions_total", 2),
    ] {
        assert_eq!(value(&body, name), Some(want), "{name} in\n{body}");
    }
    assert!(listening.terminate());
    let done = listening.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let connection = &done.lines[done.lines.len() - 2];
    assert!(
        connection.ends_with("gaps 1 (2 frames lost); seq regressions 2; ended cleanly"),
        "{connection}"
    );
    let summary = done.lines.last().unwrap();
    assert!(
        summary.contains("gaps 1 (2 frames lost), seq regressions 2"),
        "{summary}"
    );
    let said = "source 0: Rows seq 18446744073709551615 jumps further than this connection \
                could have lost frames";
    assert_eq!(done.stderr.matches(said).count(), 1, "{}", done.stderr);
    assert_eq!(
        done.stderr.matches("jumps further").count(),
        1,
        "{}",
        done.stderr
    );
}
