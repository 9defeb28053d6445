//! Peers of a collector on this machine, each from a 127/8 address of its
//! own, as hosts would be: a connection from an address, whether the
//! collector has closed one, and attackers that speak the protocol
//! correctly (valid Handshakes holding the table, half-Handshakes closed
//! before their grace). Shared by the collector's tests and the soak, which
//! plays the same attacks at scale.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dendro_wire_core::PREAMBLE;

use crate::streams::{honest_stream, rows_frame};

/// A TCP connection to `to` from the address `from` (any port).
pub fn connect_from(from: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.bind(&SocketAddr::from((from, 0)).into())?;
    s.connect(&to.into())?;
    Ok(s.into())
}

/// Whether the collector has closed `s` (or reset it): a read that finds
/// its end, or an error other than that nothing has come. `s` is left
/// blocking, as it was.
pub fn closed(s: &TcpStream) -> bool {
    if s.set_nonblocking(true).is_err() {
        return true;
    }
    let mut reading = s;
    let ended = match reading.read(&mut [0; 64]) {
        Ok(_) => true,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    };
    ended || s.set_nonblocking(false).is_err()
}

/// Attackers, each on a thread of its own, that stop when the attack is
/// finished or dropped; `made` counts the connections they opened.
pub struct Attack {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    made: Arc<AtomicU64>,
}

impl Default for Attack {
    fn default() -> Self {
        Attack::new()
    }
}

impl Attack {
    pub fn new() -> Attack {
        Attack {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            made: Arc::default(),
        }
    }

    /// Run `peer` on a thread of its own, with the attack's stop flag and
    /// its count of connections made.
    pub fn spawn(&mut self, peer: impl FnOnce(&AtomicBool, &AtomicU64) + Send + 'static) {
        let (stop, made) = (self.stop.clone(), self.made.clone());
        self.threads
            .push(std::thread::spawn(move || peer(&stop, &made)));
    }

    /// `n` connections from `from`, each opening its source with a whole
    /// Handshake and then sending an empty Rows frame every `keepalive`
    /// (or nothing, if none); each one closed (or not opened) is opened
    /// again at once, as an attacker holding the table does.
    pub fn hold(&mut self, to: SocketAddr, from: [u8; 4], n: usize, keepalive: Option<Duration>) {
        self.spawn(move |stop, made| {
            let open = || {
                let mut s = connect_from(from, to).ok()?;
                s.write_all(&honest_stream(0)).ok()?;
                made.fetch_add(1, Ordering::Relaxed);
                Some((s, 0u64))
            };
            let mut held: Vec<Option<(TcpStream, u64)>> = (0..n).map(|_| open()).collect();
            let mut last = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let beat = keepalive.is_some_and(|every| last.elapsed() >= every);
                if beat {
                    last = Instant::now();
                }
                for one in &mut held {
                    match one {
                        Some((s, _)) if closed(s) => *one = open(),
                        Some((s, seq)) if beat => {
                            let _ = s.write_all(&rows_frame(*seq, 0));
                            *seq += 1;
                        }
                        Some(_) => {}
                        None => *one = open(),
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
    }

    /// From each of `from`, in turn, connections that each send the
    /// preamble and half a Handshake, `per_second` of them, each closed
    /// `after` it was opened.
    pub fn half_handshakes(
        &mut self,
        to: SocketAddr,
        from: Vec<[u8; 4]>,
        per_second: u64,
        after: Duration,
    ) {
        self.spawn(move |stop, made| {
            let opening = honest_stream(0);
            let half = &opening[..PREAMBLE.len() + (opening.len() - PREAMBLE.len()) / 2];
            let started = Instant::now();
            let mut open: VecDeque<(Instant, TcpStream)> = VecDeque::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                while open.front().is_some_and(|(at, _)| at.elapsed() >= after) {
                    open.pop_front();
                }
                let due = started.elapsed().as_millis() as u64 * per_second / 1000;
                if n >= due {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                if let Ok(mut s) = connect_from(from[n as usize % from.len()], to) {
                    let _ = s.write_all(half);
                    open.push_back((Instant::now(), s));
                    made.fetch_add(1, Ordering::Relaxed);
                }
                n += 1;
            }
        });
    }

    /// Stop the attackers (those that end themselves, once they have):
    /// the connections they made.
    pub fn finish(mut self) -> u64 {
        self.stop_and_join();
        self.made.load(Ordering::Relaxed)
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for Attack {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
