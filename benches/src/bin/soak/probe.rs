//! The soak's probe of admission: an honest agent from a 127/8 address of
//! its own, a Rows frame every 100 ms on one connection (a new one if the
//! listener closes it), and how long it waited to get in: from its first
//! connect to the listener's first count of its rows, read from
//! `--metrics`. The attackers beside it apply no rows, so every row the
//! listener counts is the agent's.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dendro_wire_test_support::streams::{honest_stream, ROWS_PER_FRAME};

use super::listener::Listener;

pub(crate) use dendro_wire_test_support::peers::{closed, connect_from};
pub(crate) use dendro_wire_test_support::streams::rows_frame;

/// The value of `dendro_wire_NAME` the listener's metrics say now.
pub(crate) fn scrape(at: SocketAddr, name: &str) -> Option<u64> {
    let mut s = TcpStream::connect_timeout(&at, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let key = format!("dendro_wire_{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}

/// Wait until the listener's metric `name` reaches `n`, for at most
/// `within`: whether it did, and its highest value seen.
pub(crate) fn wait_metric(l: &Listener, name: &str, n: u64, within: Duration) -> (bool, u64) {
    let deadline = Instant::now() + within;
    let mut most = 0;
    loop {
        most = most.max(scrape(l.metrics_at(), name).unwrap_or(0));
        if most >= n || Instant::now() >= deadline {
            return (most >= n, most);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One visit of the agent: how long it waited to get in (none: not in
/// its time), the rows it wrote, and the connections it made.
#[derive(Clone, Copy)]
pub(crate) struct Visit {
    pub(crate) wait: Option<Duration>,
    pub(crate) sent: u64,
    pub(crate) connections: u32,
}

/// The agent from `from` against `l` for `secs`, then its connection
/// closed and its end awaited, so that the listener has applied all it
/// will.
pub(crate) fn visit(l: &Listener, from: [u8; 4], secs: Duration) -> Visit {
    let metrics = l.metrics_at();
    let base = scrape(metrics, "rows_applied_total").unwrap_or(0);
    let started = Instant::now();
    let seen: Arc<Mutex<Option<Duration>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, done) = (seen.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if scrape(metrics, "rows_applied_total").is_some_and(|n| n > base) {
                    *seen.lock().unwrap() = Some(started.elapsed());
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let (mut sent, mut connections, mut seq) = (0u64, 0u32, 0u64);
    let mut conn: Option<TcpStream> = None;
    while started.elapsed() < secs {
        let tick = Instant::now();
        if conn.as_ref().is_some_and(closed) {
            conn = None;
        }
        if conn.is_none() {
            connections += 1;
            conn = connect_from(from, l.addr)
                .and_then(|mut s| s.write_all(&honest_stream(0)).map(|()| s))
                .ok();
        }
        if let Some(s) = conn.as_mut() {
            if s.write_all(&rows_frame(seq, ROWS_PER_FRAME)).is_ok() {
                sent += ROWS_PER_FRAME;
                seq += 1;
            } else {
                conn = None;
            }
        }
        std::thread::sleep(Duration::from_millis(100).saturating_sub(tick.elapsed()));
    }
    if let Some(mut s) = conn {
        let _ = s.shutdown(std::net::Shutdown::Write);
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = s.read(&mut [0; 8]);
    }
    // Its last rows counted, if it got in late.
    std::thread::sleep(Duration::from_millis(50));
    done.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    let wait = *seen.lock().unwrap();
    Visit {
        wait,
        sent,
        connections,
    }
}
