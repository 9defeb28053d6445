//! Moving a publisher's frames: its queue drained into a connection (TCP, a
//! Unix socket, a file), reconnecting when one fails. The protocol is not
//! here; these loops only connect, write and count. The receiving end is
//! [`server`](crate::server).

use std::io::{self, BufWriter, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use dendro_wire_core::{Rows, PREAMBLE, PREAMBLE_BYTES};

use crate::queue::FrameQueue;
use crate::throttle::Throttle;

/// How long to wait between attempts to connect: doubling from `initial` up
/// to `max`, each wait jittered between half and all of that (so a fleet of
/// agents that lost one collector together do not all come back at once);
/// back to `initial` after a connection succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The first wait.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(5),
        }
    }
}

impl Backoff {
    /// The waits, one per failed attempt, without end.
    ///
    /// ```
    /// use std::time::Duration;
    /// use dendro_wire_std::transport::Backoff;
    ///
    /// let backoff = Backoff { initial: Duration::from_millis(100), max: Duration::from_secs(1) };
    /// for wait in backoff.delays().take(20) {
    ///     assert!(wait >= Duration::from_millis(50) && wait <= Duration::from_secs(1), "{wait:?}");
    /// }
    /// ```
    pub fn delays(&self) -> impl Iterator<Item = Duration> {
        use backon::BackoffBuilder;
        // backon adds up to the wait again as jitter: half the waits, and
        // their jitter, make the waits asked for.
        backon::ExponentialBuilder::default()
            .with_min_delay(self.initial / 2)
            .with_max_delay(self.max.max(self.initial) / 2)
            .with_jitter()
            .without_max_times()
            .build()
    }
}

/// What a publishing transport did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Connections opened.
    pub connections: u64,
    /// Attempts to connect that failed.
    pub failed_connects: u64,
    /// Frames written.
    pub frames: u64,
    /// Rows in the `Rows` frames written.
    pub rows: u64,
    /// Bytes written, preambles included.
    pub bytes: u64,
    /// The last failure to connect or to write, if any: what to tell a
    /// user whose frames went nowhere.
    pub last_error: Option<String>,
}

/// Drain `queue` into connections that `connect` opens, until the queue is
/// closed and empty, or `stop` is set.
///
/// Closing the queue ([`FrameQueue::close`]) is the graceful end: every frame
/// queued is written first. Setting `stop` ends the transport as soon as it
/// sees it, and frames still queued are dropped (counted in the queue's
/// `dropped_disconnected`).
///
/// Each connection starts with the preamble and tells the queue, which asks
/// the publisher for handshakes and full state (rule 8); a write error ends
/// the connection, and the next is tried after `backoff`. With `once`, the
/// first connection is the only one (a file).
///
/// A failed connect and a lost connection are logged as warnings, at most
/// once a second with a count of the rest, and a reconnect once it
/// succeeds, so an operator sees a publisher whose frames go nowhere.
pub fn drain_queue<W: Write>(
    queue: &FrameQueue,
    mut connect: impl FnMut() -> io::Result<W>,
    backoff: Backoff,
    once: bool,
    stop: &AtomicBool,
) -> io::Result<TransportStats> {
    let mut stats = TransportStats::default();
    let mut delays = backoff.delays();
    let mut failures = Throttle::new(Duration::from_secs(1));
    let mut failed_since_connected = 0u64;
    let done = |queue: &FrameQueue| stop.load(Ordering::Relaxed) || queue.is_closed();
    while !done(queue) {
        let conn = match connect() {
            Ok(conn) => conn,
            Err(e) if once => return Err(e),
            Err(e) => {
                let delay = delays.next().unwrap_or(backoff.max);
                stats.failed_connects += 1;
                failed_since_connected += 1;
                if let Some(held) = failures.hit() {
                    log::warn!(
                        "{e}; trying again in {delay:?} ({} failed attempt(s) in all, {held} not \
                         said since the last)",
                        stats.failed_connects
                    );
                }
                stats.last_error = Some(e.to_string());
                std::thread::sleep(delay);
                continue;
            }
        };
        if stats.connections > 0 || failed_since_connected > 0 {
            log::warn!(
                "connected again after {failed_since_connected} failed attempt(s); the \
                 subscriber gets every handshake and full state anew (rule 8)"
            );
        }
        failed_since_connected = 0;
        delays = backoff.delays();
        stats.connections += 1;
        let result = write_connection(queue, conn, &mut stats, stop);
        queue.disconnected();
        match result {
            Ok(()) => return Ok(stats),
            Err(e) if once => return Err(e),
            Err(e) => {
                log::warn!(
                    "the connection was lost ({e}); frames queued for it are dropped, and the \
                     next connection starts over"
                );
                stats.last_error = Some(e.to_string());
            }
        }
    }
    Ok(stats)
}

/// One connection: the preamble, then frames until the queue is closed and
/// empty (`Ok`) or a write fails (`Err`).
fn write_connection<W: Write>(
    queue: &FrameQueue,
    conn: W,
    stats: &mut TransportStats,
    stop: &AtomicBool,
) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(256 * 1024, conn);
    w.write_all(&PREAMBLE)?;
    w.flush()?;
    stats.bytes += PREAMBLE_BYTES as u64;
    queue.connected();
    loop {
        // Flush only when nothing is waiting, so a busy stream goes out in
        // large writes and an idle one without delay.
        let frame = match queue.pop(Duration::ZERO) {
            Some(frame) => frame,
            None => {
                w.flush()?;
                if stop.load(Ordering::Relaxed) || (queue.is_closed() && queue.is_empty()) {
                    return Ok(());
                }
                match queue.pop(Duration::from_millis(50)) {
                    Some(frame) => frame,
                    None => continue,
                }
            }
        };
        w.write_all(&frame)?;
        stats.frames += 1;
        stats.rows += Rows::count_in_frame(&frame).map_or(0, u64::from);
        stats.bytes += frame.len() as u64;
        queue.recycle(frame);
    }
}

/// Start a thread draining `queue` to `addr` over TCP, reconnecting with
/// `backoff`, until the queue is closed and drained (or `stop` is set; see
/// [`drain_queue`]).
pub fn publish_tcp(
    queue: FrameQueue,
    addr: SocketAddr,
    backoff: Backoff,
    stop: Arc<AtomicBool>,
) -> JoinHandle<io::Result<TransportStats>> {
    std::thread::spawn(move || {
        let connect = || {
            let s = TcpStream::connect(addr)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot connect to {addr}: {e}")))?;
            s.set_nodelay(true)?;
            Ok(s)
        };
        drain_queue(&queue, connect, backoff, false, &stop)
    })
}

/// Start a thread draining `queue` to the Unix socket at `path`.
#[cfg(unix)]
pub fn publish_unix(
    queue: FrameQueue,
    path: std::path::PathBuf,
    backoff: Backoff,
    stop: Arc<AtomicBool>,
) -> JoinHandle<io::Result<TransportStats>> {
    std::thread::spawn(move || {
        let connect = || {
            std::os::unix::net::UnixStream::connect(&path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot connect to {}: {e}", path.display()),
                )
            })
        };
        drain_queue(&queue, connect, backoff, false, &stop)
    })
}

/// Start a thread draining `queue` into one writer (a capture file).
pub fn publish_to_writer<W: Write + Send + 'static>(
    queue: FrameQueue,
    writer: W,
    stop: Arc<AtomicBool>,
) -> JoinHandle<io::Result<TransportStats>> {
    std::thread::spawn(move || {
        let mut writer = Some(writer);
        let connect = || {
            writer
                .take()
                .ok_or_else(|| io::Error::other("a capture is written once"))
        };
        drain_queue(&queue, connect, Backoff::default(), true, &stop)
    })
}
