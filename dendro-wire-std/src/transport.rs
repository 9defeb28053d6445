//! Moving bytes: a publisher's queue to a connection (TCP, a Unix socket, a
//! file), and a connection's stream into a subscriber. The protocol is not
//! here; these loops only read, write, connect and count.

use std::io::{self, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dendro_wire_core::{emit_preamble, PREAMBLE_BYTES};

use crate::queue::FrameQueue;
use crate::reader::{FrameReader, Position, ReadError};
use crate::subscriber::{Applied, Sink, SubscribeError, Subscriber};

/// How long to wait between attempts to connect: doubling from `initial` up
/// to `max`, back to `initial` after a connection succeeds.
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

/// What a publishing transport did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Connections opened.
    pub connections: u64,
    /// Attempts to connect that failed.
    pub failed_connects: u64,
    /// Frames written.
    pub frames: u64,
    /// Bytes written, preambles included.
    pub bytes: u64,
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
pub fn drain_queue<W: Write>(
    queue: &FrameQueue,
    mut connect: impl FnMut() -> io::Result<W>,
    backoff: Backoff,
    once: bool,
    stop: &AtomicBool,
) -> io::Result<TransportStats> {
    let mut stats = TransportStats::default();
    let mut delay = backoff.initial;
    let done = |queue: &FrameQueue| stop.load(Ordering::Relaxed) || queue.is_closed();
    while !done(queue) {
        let conn = match connect() {
            Ok(conn) => conn,
            Err(e) if once => return Err(e),
            Err(e) => {
                stats.failed_connects += 1;
                log::debug!("connect failed ({e}); next try in {delay:?}");
                std::thread::sleep(delay);
                delay = (delay * 2).min(backoff.max);
                continue;
            }
        };
        delay = backoff.initial;
        stats.connections += 1;
        let result = write_connection(queue, conn, &mut stats, stop);
        queue.disconnected();
        match result {
            Ok(()) => return Ok(stats),
            Err(e) if once => return Err(e),
            Err(e) => log::info!("connection ended ({e}); reconnecting"),
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
    let mut preamble = [0u8; PREAMBLE_BYTES];
    emit_preamble(&mut preamble).map_err(io::Error::other)?;
    w.write_all(&preamble)?;
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
            let s = TcpStream::connect(addr)?;
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
        let connect = || std::os::unix::net::UnixStream::connect(&path);
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

/// Why a connection's stream stopped being applied.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The stream could not be read: the transport failed, or the bytes
    /// broke a rule of the spec.
    Read(ReadError),
    /// A frame broke a protocol rule, or the sink failed.
    Subscribe(Position, SubscribeError),
    /// The capture file could not be created.
    Capture(io::Error),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Read(e) => write!(f, "{e}"),
            ServeError::Subscribe(at, e) => write!(f, "{at}: {e}"),
            ServeError::Capture(e) => write!(f, "the capture could not be created: {e}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// Live counts of one connection, updated as it is served.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Frames read.
    pub frames: u64,
    /// Stream bytes read.
    pub bytes: u64,
    /// What the frames did.
    pub applied: Applied,
    /// Whether the connection is still open.
    pub open: bool,
    /// Why it ended, if not at a clean end of stream.
    pub error: Option<String>,
}

/// Read one connection's stream and apply it to `subscriber` until a clean
/// end or an error, publishing counts to `stats` (every frame is counted,
/// shared at most every 100 ms).
pub fn serve<R: Read, S: Sink>(
    reader: R,
    subscriber: &mut Subscriber<S>,
    stats: Option<&Mutex<ConnectionStats>>,
) -> Result<(), ServeError> {
    let share = |frames: &FrameReader<R>, subscriber: &Subscriber<S>, open: bool| {
        if let Some(stats) = stats {
            let mut s = stats.lock().unwrap_or_else(|e| e.into_inner());
            s.frames = frames.frames();
            s.bytes = frames.offset();
            s.applied = subscriber.applied();
            s.open = open;
        }
    };
    let mut frames = FrameReader::new(reader).map_err(ServeError::Read)?;
    let mut shared_at = Instant::now();
    let result = loop {
        match frames.next_frame_at() {
            Ok(Some((frame, at))) => {
                if let Err(e) = subscriber.apply(&frame) {
                    break Err(ServeError::Subscribe(at, e));
                }
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(ServeError::Read(e)),
        }
        if shared_at.elapsed() > Duration::from_millis(100) {
            share(&frames, subscriber, true);
            shared_at = Instant::now();
        }
    };
    share(&frames, subscriber, false);
    result
}

/// A TCP listener serving many publishers at once, one thread each, each
/// connection into its own sink from `make_sink`.
///
/// ```
/// use std::net::TcpListener;
/// use std::sync::{atomic::AtomicBool, Arc};
/// use std::time::Duration;
/// use dendro_wire_std::transport::{publish_tcp, Backoff, Server};
/// use dendro_wire_std::{CountingSink, Publisher, PublisherConfig, SourceConfig};
///
/// let (tx, rx) = std::sync::mpsc::channel();
/// let server = Server::start(
///     TcpListener::bind("127.0.0.1:0")?,
///     |_| CountingSink::default(),
///     16,
///     None,
///     move |_, _sink, applied, _result| tx.send(applied).unwrap(),
/// )?;
///
/// let mut publisher = Publisher::new(PublisherConfig::default());
/// let s = publisher.add_source(SourceConfig::new().stream("x"))?;
/// let queue = publisher.queue();
/// let stop = Arc::new(AtomicBool::new(false));
/// let transport = publish_tcp(queue.clone(), server.local_addr(), Backoff::default(), stop);
/// while queue.stats().connections == 0 { std::thread::sleep(Duration::from_millis(1)); }
/// for ts in 0..10 {
///     publisher.observe(s, "x", ts, 0, &[1])?;
///     publisher.end_interval();
/// }
/// queue.close();
/// transport.join().unwrap()?;
/// let applied = rx.recv()?;
/// assert_eq!(applied.rows, 10);
/// server.shutdown(Duration::from_secs(5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<Connection>>>,
    accept: Option<JoinHandle<()>>,
}

/// A connection's counts, and a handle to close it at shutdown.
struct Connection {
    stats: Arc<Mutex<ConnectionStats>>,
    stream: Option<TcpStream>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

impl Server {
    /// Listen on `listener`; every connection gets a [`Subscriber`] over
    /// `make_sink(n)` (`n` counts connections from 0), limited to
    /// `source_limit` sources, and `done(n, sink, applied, result)` when it
    /// ends, with everything its frames did.
    /// With `record`, each connection's bytes are also captured, as they
    /// arrived, to `record/connection-N.dwr`.
    pub fn start<S, M, D>(
        listener: TcpListener,
        make_sink: M,
        source_limit: usize,
        record: Option<std::path::PathBuf>,
        done: D,
    ) -> io::Result<Server>
    where
        S: Sink + Send + 'static,
        M: Fn(u64) -> S + Send + 'static,
        D: Fn(u64, S, Applied, Result<(), ServeError>) + Send + Sync + 'static,
    {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let connections: Arc<Mutex<Vec<Connection>>> = Arc::default();
        let done = Arc::new(done);
        let accept = {
            let (stop, connections) = (stop.clone(), connections.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                let mut workers = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let stream = match listener.accept() {
                        Ok((stream, _)) => stream,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(10));
                            continue;
                        }
                        Err(e) => {
                            log::warn!("accept failed: {e}");
                            continue;
                        }
                    };
                    let stats = Arc::new(Mutex::new(ConnectionStats {
                        open: true,
                        ..ConnectionStats::default()
                    }));
                    connections
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(Connection {
                            stats: stats.clone(),
                            stream: stream.try_clone().ok(),
                        });
                    let mut subscriber =
                        Subscriber::new(make_sink(n)).with_source_limit(source_limit);
                    let (done, id) = (done.clone(), n);
                    let capture = record
                        .as_ref()
                        .map(|dir| dir.join(format!("connection-{n}.dwr")));
                    workers.push(std::thread::spawn(move || {
                        let _ = stream.set_nonblocking(false);
                        let result = match capture.map(std::fs::File::create) {
                            None => serve(&stream, &mut subscriber, Some(&stats)),
                            Some(Ok(file)) => {
                                let tee = Tee::new(&stream, BufWriter::new(file));
                                serve(tee, &mut subscriber, Some(&stats))
                            }
                            Some(Err(e)) => Err(ServeError::Capture(e)),
                        };
                        if let Err(e) = &result {
                            stats.lock().unwrap_or_else(|e| e.into_inner()).error =
                                Some(e.to_string());
                        }
                        let applied = subscriber.applied();
                        match subscriber.finish() {
                            Ok(sink) => done(id, sink, applied, result),
                            Err(e) => log::warn!("connection {id}: the sink failed to end: {e}"),
                        }
                    }));
                    n += 1;
                }
                for w in workers {
                    let _ = w.join();
                }
            })
        };
        Ok(Server {
            addr,
            stop,
            connections,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every connection so far, in the order they were accepted.
    pub fn connections(&self) -> Vec<ConnectionStats> {
        self.connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|c| c.stats.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }

    /// Stop accepting; give open connections `grace` to end on their own,
    /// then close them; wait for every connection's `done`.
    pub fn shutdown(mut self, grace: Duration) {
        self.stop.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + grace;
        while self.connections().iter().any(|c| c.open) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        for c in self
            .connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter_mut()
        {
            if let Some(stream) = c.stream.take() {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        }
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// A reader that copies everything it reads into `copy`: a capture of a
/// connection, byte for byte, preamble included.
#[derive(Debug)]
pub struct Tee<R, W> {
    inner: R,
    copy: W,
}

impl<R, W> Tee<R, W> {
    /// Read from `inner`, copying into `copy`.
    pub fn new(inner: R, copy: W) -> Self {
        Tee { inner, copy }
    }

    /// The copy.
    pub fn into_copy(self) -> W {
        self.copy
    }
}

impl<R: Read, W: Write> Read for Tee<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.copy.write_all(&buf[..n])?;
        Ok(n)
    }
}
