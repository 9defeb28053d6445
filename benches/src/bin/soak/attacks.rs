//! The soak's cases against the listener's defaults from peers that aim at
//! its bounds themselves: hoarders of the memory budget, holders of the
//! connection cap that never send a `Handshake`, and a stdout nobody reads
//! under a flood of junk connections.

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dendro_wire_core::PREAMBLE;
use dendro_wire_test_support::streams::segment_stream;

use super::honest::{rate, rate_alone, small_stream, Honest};
use super::listener::{Listener, Stopped};
use super::report::Row;

/// A frame of an unknown kind with nothing in it: five bytes that keep a
/// connection from the idle timeout and open nothing.
const KEEPALIVE: [u8; 5] = [1, 0, 0, 0, 0xee];

/// What a case is: its listener and the honest agent's rate alone, the
/// peers it runs beside and the flag that stops them, and whether stdout is
/// read only from the end of the run on.
struct Case {
    l: Listener,
    alone: f64,
    stop: Arc<AtomicBool>,
    peers: Vec<std::thread::JoinHandle<()>>,
    read_late: bool,
}

impl Case {
    /// The honest agent for `secs` beside the peers, then the peers stopped
    /// and the listener: the row, held if every row was applied at 0.8x the
    /// rate alone and `bounded` says the rest held.
    fn run(
        self,
        secs: Duration,
        name: impl FnOnce() -> String,
        bounded: impl FnOnce(&Stopped) -> bool,
    ) -> Row {
        let agent = Honest::start(self.l.addr);
        std::thread::sleep(secs);
        if self.read_late {
            // So the honest agent's line, printed as it ends, finds room.
            self.l.read();
        }
        let run = agent.stop();
        let (with, delivered_all) = rate(run);
        self.stop.store(true, Ordering::Relaxed);
        for peer in self.peers {
            let _ = peer.join();
        }
        let s = self.l.stop();
        let honest = format!(
            "{:.2} M rows/s ({:.2}x alone)",
            with / 1e6,
            with / self.alone
        );
        let ok = s.clean_exit
            && delivered_all
            && s.rows_applied == run.1
            && with >= 0.8 * self.alone
            && bounded(&s);
        Row::new(name(), &s, "—".into(), honest, ok)
    }
}

/// Four peers each send a frame near the 64 MiB limit (together the whole
/// default budget), then a keepalive every half second.
pub(crate) fn hoarders(bin: &Path, secs: Duration) -> Row {
    eprintln!("soak: 4 hoarders of the memory budget, {secs:?}");
    let alone = rate_alone(bin, secs);
    let l = Listener::start(bin, &[]);
    let stream = Arc::new(segment_stream(1, (64 << 20) - (4 << 10)));
    let stop = Arc::new(AtomicBool::new(false));
    let hoarders: Vec<_> = (0..4)
        .map(|_| {
            let (stream, stop, addr) = (stream.clone(), stop.clone(), l.addr);
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(addr).expect("connect");
                let _ = c.write_all(&stream);
                while !stop.load(Ordering::Relaxed) && c.write_all(&KEEPALIVE).is_ok() {
                    std::thread::sleep(Duration::from_millis(500));
                }
            })
        })
        .collect();
    // Their frames sent first: about a second.
    std::thread::sleep(Duration::from_secs(2));
    let case = Case {
        l,
        alone,
        stop,
        peers: hoarders,
        read_late: false,
    };
    case.run(
        secs,
        || "4 hoarders: a frame of 64 MiB each, then a keepalive every 0.5 s".into(),
        |s| s.peak_rss < (256 + 64) << 20,
    )
}

/// `count` peers that send the preamble and then a keepalive every 5 s,
/// never a `Handshake`, held by 8 threads (1,250 each by default),
/// reconnecting as they are closed.
pub(crate) fn cap_holders(bin: &Path, count: usize, secs: Duration) -> Row {
    eprintln!("soak: {count} cap holders, never a Handshake, {secs:?}");
    let alone = rate_alone(bin, secs);
    let l = Listener::start(bin, &[]);
    let stop = Arc::new(AtomicBool::new(false));
    let made = Arc::new(AtomicU64::new(0));
    let each = count / 8;
    let holders: Vec<_> = (0..8)
        .map(|_| {
            let (stop, made, addr) = (stop.clone(), made.clone(), l.addr);
            std::thread::spawn(move || {
                let mut held: Vec<(TcpStream, Instant)> = Vec::with_capacity(each);
                while !stop.load(Ordering::Relaxed) {
                    held.retain_mut(|(c, last)| {
                        if last.elapsed() < Duration::from_secs(5) {
                            return true;
                        }
                        *last = Instant::now();
                        c.write_all(&KEEPALIVE).is_ok()
                    });
                    while held.len() < each && !stop.load(Ordering::Relaxed) {
                        let Ok(mut c) = TcpStream::connect(addr) else {
                            break;
                        };
                        let _ = c
                            .write_all(&PREAMBLE)
                            .and_then(|()| c.write_all(&KEEPALIVE));
                        made.fetch_add(1, Ordering::Relaxed);
                        held.push((c, Instant::now()));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let case = Case {
        l,
        alone,
        stop,
        peers: holders,
        read_late: false,
    };
    let name = || {
        format!(
            "cap holders: {} connections, keepalives every 5 s, never a Handshake",
            made.load(Ordering::Relaxed)
        )
    };
    case.run(secs, name, |_| true)
}

/// Nobody reads the listener's stdout while 1,000 connections a second
/// arrive: half junk, half a short honest stream (each of those gets a
/// line of its own, so the pipe fills).
pub(crate) fn unread_stdout(bin: &Path, secs: Duration) -> Row {
    eprintln!("soak: a stdout nobody reads, 1,000 connections a second, {secs:?}");
    let alone = rate_alone(bin, secs);
    let l = Listener::start_reading(bin, &[], false);
    let stop = Arc::new(AtomicBool::new(false));
    let made = Arc::new(AtomicU64::new(0));
    let flood = {
        let (stop, made, addr) = (stop.clone(), made.clone(), l.addr);
        std::thread::spawn(move || {
            let short = small_stream();
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let n = made.load(Ordering::Relaxed);
                // 1,000 a second, on average.
                let due = started + Duration::from_millis(n);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                if let Ok(mut c) = TcpStream::connect(addr) {
                    let bytes: &[u8] = if n % 2 == 0 {
                        &short
                    } else {
                        b"GET / HTTP/1.1\r\n\r\n"
                    };
                    let _ = c.write_all(bytes);
                }
                made.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let case = Case {
        l,
        alone,
        stop,
        peers: vec![flood],
        read_late: true,
    };
    let name = || {
        format!(
            "a stdout nobody reads; {} connections at 1,000 a second",
            made.load(Ordering::Relaxed)
        )
    };
    case.run(secs, name, |_| true)
}
