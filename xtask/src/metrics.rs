//! `cargo xtask metrics`: a real Prometheus scrapes `dendro-wire listen
//! --metrics`, and its own query of the rows applied must equal what the
//! listener printed. `promtool check metrics` vets the exposition first.
//!
//! Debian's `prometheus` package gives both programs; installed here when
//! this runs as root, as CI does, and asked for otherwise.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::setup;
use crate::steps::{root, run, target_dir};

/// How many times `sample.dwr` is replayed into the listener.
const REPLAYS: u64 = 3;
/// Rows `sample.dwr` lands (the tool's own tests hold this figure).
const ROWS_PER_REPLAY: u64 = 4;

pub(crate) fn run_metrics(tool: &Path) -> Result<(), String> {
    eprintln!("==> metrics: a real Prometheus scrapes `listen --metrics`");
    setup::ensure("metrics", &[setup::METRICS])?;
    let dir = target_dir().join("xtask-metrics");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;

    let mut listen = Command::new(tool)
        .args([
            "listen",
            "--bind",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", tool.display()))?;
    let result = with_listener(tool, &mut listen, &dir);
    let _ = listen.kill();
    let _ = listen.wait();
    result
}

fn with_listener(tool: &Path, listen: &mut Child, dir: &Path) -> Result<(), String> {
    let mut stdout = listen.stdout.take().ok_or("listen has no stdout")?;
    let mut head = String::new();
    // The first two lines say where it listens and where its metrics are.
    let mut byte = [0u8; 1];
    while head.matches('\n').count() < 2 {
        match stdout.read(&mut byte) {
            Ok(1) => head.push(byte[0] as char),
            _ => return Err(format!("listen stopped before saying where: {head}")),
        }
    }
    let addr = after(&head, "listening on ")?;
    let metrics = after(&head, "metrics on http://")?
        .trim_end_matches("/metrics")
        .to_string();

    for _ in 0..REPLAYS {
        run(
            "replay sample.dwr",
            Command::new(tool)
                .args(["replay", "--connect", &addr])
                .arg(root().join("testdata/sample.dwr")),
        )?;
    }
    let want = REPLAYS * ROWS_PER_REPLAY;

    let exposition = get(&metrics, "/metrics")?;
    let file = dir.join("exposition.txt");
    std::fs::write(&file, &exposition).map_err(|e| format!("{}: {e}", file.display()))?;
    run(
        "promtool check metrics",
        Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::fs::File::open(&file).map_err(|e| e.to_string())?),
    )?;

    let web = free_port()?;
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: dendro-wire\n    \
             static_configs:\n      - targets: ['{metrics}']\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let mut prometheus = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{web}"))
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(dir.join("prometheus.log")).map_err(|e| e.to_string())?,
        ))
        .spawn()
        .map_err(|e| format!("cannot start prometheus: {e}"))?;
    let queried = query_until(web, "dendro_wire_rows_applied_total", want);
    let _ = prometheus.kill();
    let _ = prometheus.wait();
    let queried = queried?;

    // SIGTERM: the listener's summary line, to hold the query to.
    let _ = Command::new("kill")
        .args(["-TERM", &listen.id().to_string()])
        .status();
    let mut rest = String::new();
    let _ = stdout.read_to_string(&mut rest);
    let summary = rest
        .lines()
        .find(|l| l.starts_with("listener:"))
        .ok_or_else(|| format!("listen printed no summary: {rest}"))?;
    let said = format!("rows {queried} applied");
    if !summary.contains(&said) {
        return Err(format!(
            "Prometheus says {queried} rows applied; the listener says: {summary}"
        ));
    }
    eprintln!(
        "    Prometheus's query of dendro_wire_rows_applied_total: {queried}, as the \
         listener's summary says ({summary})"
    );
    Ok(())
}

/// The rest of the line after `label` in `text`.
fn after(text: &str, label: &str) -> Result<String, String> {
    text.lines()
        .find_map(|l| l.strip_prefix(label))
        .map(str::to_string)
        .ok_or_else(|| format!("no {label:?} in {text:?}"))
}

/// A loopback port free now.
pub(crate) fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// One HTTP GET's body (status 200 only).
fn get(addr: &str, path: &str) -> Result<String, String> {
    match http_get(addr, path)? {
        (200, body) => Ok(body),
        (status, body) => Err(format!("{addr}{path}: {status} {body}")),
    }
}

/// One HTTP GET: its status and body.
pub(crate) fn http_get(addr: &str, path: &str) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("{addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text)
        .map_err(|e| format!("{addr}{path}: {e}"))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{addr}{path}: not an HTTP answer: {head}"))?;
    Ok((status, body.to_string()))
}

/// Ask Prometheus for `query` until it answers `want`, for at most a minute
/// (it starts, then scrapes every second): the last answer.
fn query_until(port: u16, query: &str, want: u64) -> Result<u64, String> {
    let started = Instant::now();
    let mut last = String::from("no answer");
    while started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(500));
        let Ok(body) = get(
            &format!("127.0.0.1:{port}"),
            &format!("/api/v1/query?query={query}"),
        ) else {
            continue;
        };
        // {"status":"success","data":{"resultType":"vector","result":
        //  [{"metric":{...},"value":[<time>,"<value>"]}]}}
        if let Some(v) = body
            .rsplit_once("\"value\":[")
            .and_then(|(_, v)| v.split('"').nth(1))
            .and_then(|v| v.parse::<u64>().ok())
        {
            if v == want {
                return Ok(v);
            }
        }
        last = body;
    }
    Err(format!(
        "Prometheus never answered {want} for {query} within a minute; its last answer: {last}"
    ))
}
