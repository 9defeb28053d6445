//! The soak's honest agent, streaming at full rate beside each case: its
//! rate in rows/s, and alone, to set the case's against; and the short
//! honest stream the cases send among their junk.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dendro_wire_std::send::{publish_tcp, DrainOptions};
use dendro_wire_std::{AgentConfig, AgentPublisher, SourceConfig};

use super::listener::Listener;

/// An honest agent at full rate: one source, eight streams, a row of 32
/// bytes on each every interval, paced to what the transport takes.
pub(crate) struct Honest {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(u64, u64, Duration)>,
}

impl Honest {
    pub(crate) fn start(addr: SocketAddr) -> Honest {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || honest(addr, &stop))
        };
        Honest { stop, thread }
    }

    /// Stop it: rows queued, rows delivered, and for how long.
    pub(crate) fn stop(self) -> (u64, u64, Duration) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the honest agent")
    }
}

fn honest(addr: SocketAddr, stop: &AtomicBool) -> (u64, u64, Duration) {
    const STREAMS: [&str; 8] = [
        "cpu/usage",
        "cpu/irq",
        "cpu/steal",
        "mem/used",
        "mem/free",
        "net/rx",
        "net/tx",
        "disk/io",
    ];
    let mut p = AgentPublisher::new(
        AgentConfig::default()
            .full_every(10_000)
            .queue_frames(16_384)
            .queue_bytes(32 << 20),
    );
    let mut config = SourceConfig::new().label("host", "honest");
    for s in STREAMS {
        config = config.stream(s);
    }
    let source = p.add_source(config).expect("a source");
    let queue = p.queue();
    let transport = publish_tcp(queue.clone(), addr, DrainOptions::default());
    let connected = queue.wait_connected(Duration::from_secs(10));
    assert!(connected, "the honest agent cannot connect");
    let started = Instant::now();
    let mut row = [0u8; 32];
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        while queue.len().frames > 2048 {
            std::thread::sleep(Duration::from_micros(50));
        }
        row[..8].copy_from_slice(&n.to_le_bytes());
        for s in STREAMS {
            p.observe(source, s, n as i64, 0, &row)
                .expect("a declared stream");
        }
        p.end_interval();
        n += 1;
    }
    queue.close();
    let sent = transport.join().expect("transport").expect("transport");
    (p.stats().rows_queued, sent.rows, started.elapsed())
}

/// The honest agent's rows/s alone against a fresh listener, for `secs`:
/// measured beside each case, since a shared machine's speed drifts.
pub(crate) fn rate_alone(bin: &Path, secs: Duration) -> f64 {
    let l = Listener::start(bin, &["--max-connections", "30000"]);
    let agent = Honest::start(l.addr);
    std::thread::sleep(secs);
    let (rate, _) = rate(agent.stop());
    std::thread::sleep(Duration::from_millis(200));
    l.stop();
    rate
}

/// The rows/s of a run, and whether every row queued was written.
pub(crate) fn rate((queued, delivered, took): (u64, u64, Duration)) -> (f64, bool) {
    (delivered as f64 / took.as_secs_f64(), queued == delivered)
}

/// A short honest stream: a handshake and one empty Rows frame.
pub(crate) fn small_stream() -> Vec<u8> {
    use dendro_wire_core::{RowsHeader, NO_INDEX_STATE};
    use dendro_wire_test_support::fixtures::handshake;
    let mut w = dendro_wire_std::FrameWriter::new(Vec::new()).unwrap();
    w.write_frame(&handshake(0)).unwrap();
    w.write_rows(
        RowsHeader {
            source: 0,
            seq: 0,
            index_state: NO_INDEX_STATE,
        },
        std::iter::empty(),
    )
    .unwrap();
    w.into_inner()
}
