//! [`Server`]: many publishers at once on tokio, each connection bounded in
//! memory, time and count; and the async loop that serves one connection.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dendro_wire_core::{FrameDecoder, MAX_FRAME_BYTES};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::buffer::{FrameBuffer, MemoryBudget, Next};
use super::error::ServeError;
use super::sink::Sink;
use super::subscriber::{Applied, SinkSubscriber, SubscribeError};
use crate::read_error::{Position, ReadErrorKind};
use crate::throttle::Throttle;

/// How a [`Server`] bounds what its connections may cost.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Connections served at once; one more is closed as soon as it is
    /// accepted, and counted.
    pub max_connections: usize,
    /// Bytes that every connection's receive buffer may hold together. A
    /// frame that would take them past it ends its connection; the others go
    /// on.
    pub max_memory: usize,
    /// End a connection that has sent no whole frame for this long. A
    /// publisher sends one every interval, even an empty one (rule 6), so
    /// set it well above the slowest publisher's interval.
    pub idle_timeout: Duration,
    /// End a connection whose frame has started arriving and is not whole
    /// this long after.
    pub frame_timeout: Duration,
    /// The largest frame accepted (at most the protocol's 64 MiB).
    pub max_frame_bytes: u32,
    /// The most sources one connection may open.
    pub max_sources: usize,
    /// Capture each connection's bytes, as they arrive, in this directory:
    /// `connection-N.dwr`, `N` the first number whose name is free.
    pub record: Option<PathBuf>,
    /// Worker threads serving connections (at least 1).
    pub threads: usize,
    /// TLS for every TCP connection: a connection whose client certificate
    /// does not chain to the configured CA is ended at the handshake
    /// ([`tls::server_config`](crate::tls::server_config)).
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The label every source a TLS client opens or updates must carry,
    /// with its certificate's identity as the value
    /// ([`SinkSubscriber::bind_identity`]).
    #[cfg(feature = "tls")]
    pub bind_identity: Option<String>,
    /// On a Unix socket, the user ids allowed to connect, checked against the
    /// peer's credentials; `None` allows whoever the socket's permissions
    /// let in.
    #[cfg(unix)]
    pub allow_uids: Option<Vec<u32>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_connections: 10_000,
            max_memory: 256 << 20,
            idle_timeout: Duration::from_secs(60),
            frame_timeout: Duration::from_secs(60),
            max_frame_bytes: MAX_FRAME_BYTES,
            max_sources: 256,
            record: None,
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "tls")]
            bind_identity: None,
            #[cfg(unix)]
            allow_uids: None,
        }
    }
}

/// Who a connection is, as its sink is made and its end reported.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionInfo {
    /// The connection's number, from 0, in the order they were accepted.
    pub id: u64,
    /// Who connected.
    pub peer: Peer,
    /// The identity its TLS client certificate proves, if it has one.
    pub identity: Option<String>,
    /// Where its bytes are captured.
    pub capture: Option<PathBuf>,
}

/// Who is at the other end of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Peer {
    /// A TCP peer's address.
    Tcp(SocketAddr),
    /// A peer on a Unix socket, with the credentials the system gives for it.
    Unix {
        /// Its user id.
        uid: Option<u32>,
        /// Its process id.
        pid: Option<i32>,
    },
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Tcp(addr) => write!(f, "{addr}"),
            Peer::Unix { uid, pid } => {
                f.write_str("a Unix socket")?;
                if let Some(uid) = uid {
                    write!(f, " (uid {uid}")?;
                    if let Some(pid) = pid {
                        write!(f, ", pid {pid}")?;
                    }
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }
}

/// What a [`Server`] listens on.
#[derive(Debug)]
#[non_exhaustive]
pub enum Listener {
    /// A TCP listener.
    Tcp(std::net::TcpListener),
    /// A Unix socket listener ([`bind_unix`](super::bind_unix) makes one only its owner can
    /// reach).
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixListener),
}

impl From<std::net::TcpListener> for Listener {
    fn from(listener: std::net::TcpListener) -> Self {
        Listener::Tcp(listener)
    }
}

#[cfg(unix)]
impl From<std::os::unix::net::UnixListener> for Listener {
    fn from(listener: std::os::unix::net::UnixListener) -> Self {
        Listener::Unix(listener)
    }
}

/// A live connection's counts, as of its last read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LiveConnection {
    /// The connection's number.
    pub id: u64,
    /// Who connected.
    pub peer: Peer,
    /// Frames read, unknown kinds included.
    pub frames: u64,
    /// Stream bytes received.
    pub bytes: u64,
    /// What its frames did.
    pub applied: Applied,
}

/// A connection that ended: what it did, and why it ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct Ended {
    /// Who it was.
    pub info: ConnectionInfo,
    /// Frames read, unknown kinds included.
    pub frames: u64,
    /// Stream bytes received.
    pub bytes: u64,
    /// What its frames did.
    pub applied: Applied,
    /// How long it was served.
    pub duration: Duration,
    /// `Ok` for a clean end at a frame boundary; else why it ended.
    pub result: Result<(), ServeError>,
}

impl std::fmt::Display for Ended {
    /// One line: the peer, frames, rows applied and skipped, gaps, and why
    /// it ended.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = &self.applied;
        write!(
            f,
            "connection {} from {}{}: {} frames, {} bytes in {:.1} s; sources {}, rows {} applied \
             {} skipped, index entries {}, segments {}, gaps {} ({} frames lost); ",
            self.info.id,
            self.info.peer,
            match &self.info.identity {
                Some(identity) => format!(" ({identity})"),
                None => String::new(),
            },
            self.frames,
            self.bytes,
            self.duration.as_secs_f64(),
            a.sources,
            a.rows,
            a.rows_skipped,
            a.index_entries,
            a.segments,
            a.gaps,
            a.frames_lost,
        )?;
        match &self.result {
            Ok(()) => f.write_str("ended cleanly")?,
            Err(e) => write!(f, "ended: {e}")?,
        }
        if let Some(capture) = &self.info.capture {
            write!(f, "; captured in {}", capture.display())?;
        }
        Ok(())
    }
}

/// What a server has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Connections accepted and served.
    pub accepted: u64,
    /// Connections closed at once because `max_connections` were live.
    pub refused: u64,
    /// Accepts that failed (out of file descriptors, say).
    pub accept_errors: u64,
    /// Connections live now.
    pub live: u64,
    /// Connections that ended.
    pub ended: u64,
    /// Bytes the connections' buffers hold now.
    pub memory_in_use: usize,
}

/// Everything the accept loop, the connections and the handle share.
struct Shared {
    config: ServerConfig,
    budget: Arc<MemoryBudget>,
    live: Mutex<BTreeMap<u64, Arc<Mutex<LiveConnection>>>>,
    accepted: AtomicU64,
    refused: AtomicU64,
    accept_errors: AtomicU64,
    ended: AtomicU64,
    /// The next capture number to try.
    capture_number: AtomicU64,
}

impl Shared {
    fn live(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Mutex<LiveConnection>>>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live_count(&self) -> usize {
        self.live().len()
    }
}

/// A TCP listener serving many publishers at once: each connection's stream
/// applied to its own sink under the subscriber's rules, on a tokio runtime
/// of its own (so callers need not be async).
///
/// Every connection is bounded ([`ServerConfig`]): its buffer grows with
/// the bytes that arrived against a memory budget shared by all; an idle
/// connection and an unfinished frame are ended by timeouts; connections
/// past the cap are closed at once. Each that ends closes its socket, frees
/// its buffer and task, and is handed to `done` with why it ended.
///
/// ```
/// use std::net::TcpListener;
/// use std::time::Duration;
/// use dendro_wire_std::receive::{Server, ServerConfig};
/// use dendro_wire_std::send::{publish_tcp, DrainOptions};
/// use dendro_wire_std::{AgentConfig, AgentPublisher, CountingSink, SourceConfig};
///
/// let (tx, rx) = std::sync::mpsc::channel();
/// let server = Server::start(
///     TcpListener::bind("127.0.0.1:0")?,
///     ServerConfig::default(),
///     |_| CountingSink::default(),
///     move |ended, _sink| tx.send(ended).unwrap(),
/// )?;
///
/// let mut publisher = AgentPublisher::new(AgentConfig::default());
/// let s = publisher.add_source(SourceConfig::new().stream("x"))?;
/// let queue = publisher.queue();
/// let addr = server.local_addr().expect("a TCP server");
/// let transport = publish_tcp(queue.clone(), addr, DrainOptions::default());
/// while queue.stats().connections == 0 { std::thread::sleep(Duration::from_millis(1)); }
/// for ts in 0..10 {
///     publisher.observe(s, "x", ts, 0, &[1])?;
///     publisher.end_interval();
/// }
/// queue.close();
/// transport.join().unwrap()?;
/// let ended = rx.recv()?;
/// assert_eq!(ended.applied.rows, 10);
/// assert!(ended.result.is_ok(), "{ended}");
/// server.shutdown(Duration::from_secs(5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Server {
    addr: Option<SocketAddr>,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// How many connections may wait to be accepted: a fleet reconnecting at
/// once should queue, not be refused by the kernel.
const BACKLOG: i32 = 4096;

/// A stream a connection is served over: TCP, a Unix socket, or TLS over
/// TCP.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// The listener, on the runtime.
enum Accepting {
    Tcp(tokio::net::TcpListener),
    #[cfg(unix)]
    Unix(tokio::net::UnixListener),
}

impl Accepting {
    async fn accept(&self) -> io::Result<(Box<dyn Io>, Peer)> {
        match self {
            Accepting::Tcp(listener) => {
                let (stream, addr) = listener.accept().await?;
                let _ = stream.set_nodelay(true);
                Ok((Box::new(stream), Peer::Tcp(addr)))
            }
            #[cfg(unix)]
            Accepting::Unix(listener) => {
                let (stream, _) = listener.accept().await?;
                let cred = stream.peer_cred().ok();
                let peer = Peer::Unix {
                    uid: cred.map(|c| c.uid()),
                    pid: cred.and_then(|c| c.pid()),
                };
                Ok((Box::new(stream), peer))
            }
        }
    }
}

impl Server {
    /// Serve `listener` (TCP, or a Unix socket) as `config` bounds it. Every
    /// connection gets a [`SinkSubscriber`] over `make_sink(&info)`, and
    /// `done(ended, sink)` once it has ended and its socket is closed.
    pub fn start<S, M, D>(
        listener: impl Into<Listener>,
        config: ServerConfig,
        make_sink: M,
        done: D,
    ) -> io::Result<Server>
    where
        S: Sink + Send + 'static,
        M: Fn(&ConnectionInfo) -> S + Send + Sync + 'static,
        D: Fn(Ended, S) + Send + Sync + 'static,
    {
        let listener = listener.into();
        let addr = match &listener {
            Listener::Tcp(tcp) => {
                // A listener made with std's default backlog of 128 is given
                // room for a fleet reconnecting at once.
                socket2::SockRef::from(tcp).listen(BACKLOG)?;
                tcp.set_nonblocking(true)?;
                Some(tcp.local_addr()?)
            }
            #[cfg(unix)]
            Listener::Unix(unix) => {
                socket2::SockRef::from(unix).listen(BACKLOG)?;
                unix.set_nonblocking(true)?;
                None
            }
        };
        if let Some(dir) = &config.record {
            std::fs::create_dir_all(dir)?;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads.max(1))
            .thread_name("dendro-wire-server")
            .enable_all()
            .build()?;
        let accepting = {
            let _entered = runtime.enter();
            match listener {
                Listener::Tcp(tcp) => Accepting::Tcp(tokio::net::TcpListener::from_std(tcp)?),
                #[cfg(unix)]
                Listener::Unix(unix) => Accepting::Unix(tokio::net::UnixListener::from_std(unix)?),
            }
        };
        let shared = Arc::new(Shared {
            budget: Arc::new(MemoryBudget::new(config.max_memory)),
            config,
            live: Mutex::default(),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            capture_number: AtomicU64::new(0),
        });
        let (shutdown, stop) = watch::channel(false);
        let thread = {
            let shared = shared.clone();
            let serve = Arc::new((make_sink, done));
            std::thread::Builder::new()
                .name("dendro-wire-accept".into())
                .spawn(move || runtime.block_on(accept_loop(accepting, shared, serve, stop)))?
        };
        Ok(Server {
            addr,
            shared,
            shutdown,
            thread: Some(thread),
        })
    }

    /// The address it listens on; `None` on a Unix socket.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The connections live now, in the order they were accepted.
    pub fn live(&self) -> Vec<LiveConnection> {
        self.shared
            .live()
            .values()
            .map(|c| c.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }

    /// What the server has done so far.
    pub fn stats(&self) -> ServerStats {
        let s = &self.shared;
        ServerStats {
            accepted: s.accepted.load(Ordering::Relaxed),
            refused: s.refused.load(Ordering::Relaxed),
            accept_errors: s.accept_errors.load(Ordering::Relaxed),
            live: s.live_count() as u64,
            ended: s.ended.load(Ordering::Relaxed),
            memory_in_use: s.budget.in_use(),
        }
    }

    /// Stop accepting; give live connections up to `grace` to end on their
    /// own; then end each after applying what has arrived of its stream;
    /// return once every connection's `done` has run.
    pub fn shutdown(mut self, grace: Duration) -> ServerStats {
        let deadline = Instant::now() + grace;
        while self.shared.live_count() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stop();
        self.stats()
    }

    fn stop(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    /// A server dropped without [`shutdown`](Server::shutdown) shuts down
    /// with no grace.
    fn drop(&mut self) {
        self.stop();
    }
}

async fn accept_loop<S, M, D>(
    listener: Accepting,
    shared: Arc<Shared>,
    serve: Arc<(M, D)>,
    mut stop: watch::Receiver<bool>,
) where
    S: Sink + Send + 'static,
    M: Fn(&ConnectionInfo) -> S + Send + Sync + 'static,
    D: Fn(Ended, S) + Send + Sync + 'static,
{
    let mut connections = JoinSet::new();
    let mut next_id = 0u64;
    let mut refusals = Throttle::new(Duration::from_secs(1));
    let mut accept_errors = Throttle::new(Duration::from_secs(1));
    loop {
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            biased;
            _ = stopped(&mut stop) => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                shared.accept_errors.fetch_add(1, Ordering::Relaxed);
                if let Some(held) = accept_errors.hit() {
                    log::warn!("accepting a connection failed: {e} ({held} more since last said)");
                }
                // Out of file descriptors, say: give connections time to end
                // rather than spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if shared.live_count() >= shared.config.max_connections {
            shared.refused.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            if let Some(held) = refusals.hit() {
                log::warn!(
                    "closed a connection from {peer} at once: {} connections are live, the most \
                     allowed ({held} more refused since last said)",
                    shared.config.max_connections
                );
            }
            continue;
        }
        let id = next_id;
        next_id += 1;
        shared.accepted.fetch_add(1, Ordering::Relaxed);
        let live = Arc::new(Mutex::new(LiveConnection {
            id,
            peer: peer.clone(),
            frames: 0,
            bytes: 0,
            applied: Applied::default(),
        }));
        shared.live().insert(id, live.clone());
        let guard = LiveGuard {
            shared: shared.clone(),
            id,
        };
        let (serve, stop) = (serve.clone(), stop.clone());
        connections.spawn(async move {
            let (make_sink, done) = &*serve;
            let info = ConnectionInfo {
                id,
                peer,
                identity: None,
                capture: None,
            };
            let (ended, sink) =
                connection(stream, info, &guard.shared, &live, make_sink, stop).await;
            // Gone from the live connections before `done` hears of it.
            drop(guard);
            done(ended, sink);
        });
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Takes a connection off the live list when its task ends, however it
/// ends.
struct LiveGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.shared.live().remove(&self.id);
        self.shared.ended.fetch_add(1, Ordering::Relaxed);
    }
}

/// Whether the peer may be served at all, before a byte of its stream is
/// read: a Unix peer's user id, and a TLS client's certificate (the
/// handshake, bounded by the idle timeout). The stream to read, and the
/// identity the certificate proves.
async fn admit(
    stream: Box<dyn Io>,
    info: &ConnectionInfo,
    config: &ServerConfig,
) -> Result<(Box<dyn Io>, Option<String>), ServeError> {
    #[cfg(unix)]
    if let (Peer::Unix { uid, .. }, Some(allowed)) = (&info.peer, &config.allow_uids) {
        if !uid.is_some_and(|uid| allowed.contains(&uid)) {
            return Err(ServeError::NotAllowed(match uid {
                Some(uid) => format!("user id {uid} is not one of those allowed {allowed:?}"),
                None => "the peer's user id is unknown".into(),
            }));
        }
    }
    #[cfg(feature = "tls")]
    if let (Peer::Tcp(_), Some(tls)) = (&info.peer, &config.tls) {
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
        let handshake = tokio::time::timeout(config.idle_timeout, acceptor.accept(stream));
        let tls = match handshake.await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => return Err(ServeError::Tls(e)),
            Err(_) => {
                return Err(ServeError::Tls(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "not finished within {:?}, the idle timeout",
                        config.idle_timeout
                    ),
                )))
            }
        };
        let (_, session) = tls.get_ref();
        let identity = session
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(crate::tls::identity);
        return Ok((Box::new(tls), identity));
    }
    let _ = (info, config);
    Ok((stream, None))
}

/// Serve one accepted connection to its end; the socket is closed when this
/// returns.
async fn connection<S: Sink, M: Fn(&ConnectionInfo) -> S>(
    stream: Box<dyn Io>,
    mut info: ConnectionInfo,
    shared: &Shared,
    live: &Mutex<LiveConnection>,
    make_sink: &M,
    stop: watch::Receiver<bool>,
) -> (Ended, S) {
    let started = Instant::now();
    let config = &shared.config;
    let admitted = admit(stream, &info, config).await;
    if let Ok((_, identity)) = &admitted {
        info.identity = identity.clone();
    }
    // A capture only for a connection that got in.
    let capture = match (&admitted, config.record.as_deref()) {
        (Ok(_), Some(dir)) => Some(create_capture(dir, &shared.capture_number)),
        _ => None,
    };
    info.capture = capture
        .as_ref()
        .and_then(|c| c.as_ref().ok())
        .map(|(path, _)| path.clone());
    let mut subscriber =
        SinkSubscriber::new(make_sink(&info)).with_source_limit(config.max_sources);
    #[cfg(feature = "tls")]
    if let (Some(label), Some(identity)) = (&config.bind_identity, &info.identity) {
        subscriber = subscriber.bind_identity(label.clone(), identity.clone());
    }
    let limits = Limits::from(config);
    let mut frames = FrameBuffer::new(limits.decoder, Some(shared.budget.clone()));
    let result = match (admitted, capture.transpose()) {
        (Err(e), _) => Err(e),
        (_, Err(e)) => Err(ServeError::Capture(e)),
        (Ok((mut stream, _)), Ok(mut capture)) => {
            let file = capture.as_mut().map(|(_, file)| file);
            let ties = Ties {
                capture: file,
                live: Some(live),
                stop: Some(stop),
            };
            serve_async(&mut stream, &mut subscriber, &mut frames, &limits, ties).await
        }
    };
    let (frames_read, bytes) = (frames.frames(), frames.received());
    drop(frames);
    let applied = subscriber.applied();
    let id = info.id;
    let (sink, finished) = subscriber.end();
    let result = match (result, finished) {
        (Ok(()), Err(e)) => Err(ServeError::Subscribe(
            Position {
                frame: frames_read,
                offset: bytes,
            },
            SubscribeError::Sink(e),
        )),
        (result, Err(e)) => {
            log::warn!("connection {id}: the sink failed to end the connection: {e}");
            result
        }
        (result, Ok(())) => result,
    };
    let ended = Ended {
        info,
        frames: frames_read,
        bytes,
        applied,
        duration: started.elapsed(),
        result,
    };
    (ended, sink)
}

/// A new capture file in `dir`: created, never opened if anything (a file, a
/// planted link) has the name; a taken name gets the next number.
fn create_capture(dir: &Path, next: &AtomicU64) -> io::Result<(PathBuf, File)> {
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("connection-{n}.dwr"));
        // `create_new` is O_CREAT | O_EXCL: it fails on any existing name,
        // a symbolic link included, and so never follows one.
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot create {}: {e}", path.display()),
                ))
            }
        }
    }
}

/// How long a connection may stay quiet, and how large its frames may be.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) decoder: FrameDecoder,
    pub(crate) idle_timeout: Duration,
    pub(crate) frame_timeout: Duration,
}

impl From<&ServerConfig> for Limits {
    fn from(config: &ServerConfig) -> Self {
        Limits {
            decoder: FrameDecoder::new().with_max_frame_bytes(config.max_frame_bytes),
            idle_timeout: config.idle_timeout,
            frame_timeout: config.frame_timeout,
        }
    }
}

/// How long a connection stays quiet before its grown buffer is given back.
const QUIET: Duration = Duration::from_secs(1);

/// What woke a connection.
enum Event {
    Read(io::Result<usize>),
    /// Nothing arrived for [`QUIET`].
    Quiet,
    Timeout,
    Stop,
}

/// What a served connection is tied to beyond its subscriber, each part
/// absent for a lone connection ([`serve_async`](super::serve_async)).
#[derive(Default)]
pub(crate) struct Ties<'a> {
    /// Where its bytes are captured as they arrive.
    pub(crate) capture: Option<&'a mut File>,
    /// Where its counts are shared after every read.
    pub(crate) live: Option<&'a Mutex<LiveConnection>>,
    /// What tells it the server is shutting down.
    pub(crate) stop: Option<watch::Receiver<bool>>,
}

/// Serve one connection's stream into `subscriber`: read as bytes arrive,
/// cut and apply every whole frame, capture the bytes, and share counts,
/// until a clean end, a broken rule, a timeout, or `stop`, after which what
/// has already arrived is applied.
pub(crate) async fn serve_async<IO: AsyncRead + Unpin, S: Sink>(
    io: &mut IO,
    subscriber: &mut SinkSubscriber<S>,
    frames: &mut FrameBuffer,
    limits: &Limits,
    ties: Ties<'_>,
) -> Result<(), ServeError> {
    let Ties {
        mut capture,
        live,
        mut stop,
    } = ties;
    let mut last_frame = Instant::now();
    // When the frame in hand (or the preamble) started arriving.
    let mut frame_started: Option<Instant> = None;
    loop {
        let before = frames.frames();
        let needed = apply_whole_frames(frames, subscriber)?;
        let now = Instant::now();
        if frames.frames() > before {
            last_frame = now;
            frame_started = None;
        }
        if frames.uncut() == 0 {
            frame_started = None;
        } else {
            frame_started.get_or_insert(now);
        }
        if let Some(live) = live {
            let mut l = live.lock().unwrap_or_else(|e| e.into_inner());
            l.frames = frames.frames();
            l.bytes = frames.received();
            l.applied = subscriber.applied();
        }
        let deadline = match frame_started {
            Some(started) => after(started, limits.frame_timeout),
            None => after(last_frame, limits.idle_timeout),
        };
        // A buffer that grew for a busy spell is given back once the
        // connection has been quiet for a while, not at every frame
        // boundary: a fast stream would otherwise shrink and regrow it.
        let quiet = frames
            .can_release()
            .then(|| (now + QUIET).min(deadline))
            .filter(|&quiet| quiet < deadline);
        let room = frames.spare(needed).map_err(ServeError::Read)?;
        let event = tokio::select! {
            biased;
            _ = stopped_opt(&mut stop) => Event::Stop,
            read = tokio::time::timeout_at(quiet.unwrap_or(deadline).into(), io.read(room)) => {
                match read {
                    Ok(read) => Event::Read(read),
                    Err(_) if quiet.is_some() => Event::Quiet,
                    Err(_) => Event::Timeout,
                }
            }
        };
        match event {
            Event::Quiet => frames.release(),
            Event::Read(read) => {
                if took(read, frames, needed, capture.as_deref_mut())?.is_break() {
                    return Ok(());
                }
            }
            Event::Timeout => {
                let at = frames.position();
                return Err(match frame_started {
                    Some(_) => ServeError::FrameTimeout {
                        after: limits.frame_timeout,
                        at,
                        have: frames.uncut(),
                    },
                    None => ServeError::IdleTimeout {
                        after: limits.idle_timeout,
                        at,
                    },
                });
            }
            Event::Stop => return drain(io, subscriber, frames, needed, capture).await,
        }
    }
}

/// Cut and apply every whole frame in hand; then how many more bytes the
/// next one needs.
fn apply_whole_frames<S: Sink>(
    frames: &mut FrameBuffer,
    subscriber: &mut SinkSubscriber<S>,
) -> Result<usize, ServeError> {
    loop {
        match frames.next().map_err(ServeError::Read)? {
            Next::Frame(range, at) => {
                let frame = frames.decode(range, at).map_err(ServeError::Read)?;
                subscriber
                    .apply(&frame)
                    .map_err(|e| ServeError::Subscribe(at, e))?;
            }
            Next::Need(needed) => return Ok(needed),
        }
    }
}

/// One read of a connection, live or draining at shutdown: what arrived is
/// captured and kept (`Continue`, as after an interrupted read); an end
/// (`Break`) is clean only at a frame boundary. A TLS peer that closes
/// without a close_notify has ended its stream as a plaintext one does
/// (the protocol has no end marker).
fn took(
    read: io::Result<usize>,
    frames: &mut FrameBuffer,
    needed: usize,
    capture: Option<&mut File>,
) -> Result<ControlFlow<()>, ServeError> {
    let ended = match read {
        Ok(0) => true,
        Ok(n) => {
            let arrived = frames.filled(n);
            if let Some(file) = capture {
                file.write_all(arrived).map_err(ServeError::Capture)?;
            }
            false
        }
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => true,
        Err(e) if e.kind() == io::ErrorKind::Interrupted => false,
        Err(e) => return Err(ServeError::Read(frames.error(ReadErrorKind::Io(e)))),
    };
    if !ended {
        return Ok(ControlFlow::Continue(()));
    }
    frames.end_of_stream(needed).map_err(ServeError::Read)?;
    Ok(ControlFlow::Break(()))
}

/// At shutdown: read what has already arrived, without waiting, apply its
/// whole frames, and end.
async fn drain<IO: AsyncRead + Unpin, S: Sink>(
    io: &mut IO,
    subscriber: &mut SinkSubscriber<S>,
    frames: &mut FrameBuffer,
    mut needed: usize,
    mut capture: Option<&mut File>,
) -> Result<(), ServeError> {
    loop {
        let room = frames.spare(needed).map_err(ServeError::Read)?;
        // A zero timeout polls the read once: data already here is taken,
        // none is waited for.
        match tokio::time::timeout(Duration::ZERO, io.read(room)).await {
            Ok(read) => {
                if took(read, frames, needed, capture.as_deref_mut())?.is_break() {
                    return Ok(());
                }
                needed = apply_whole_frames(frames, subscriber)?;
            }
            Err(_) => {
                return Err(ServeError::Shutdown {
                    at: frames.position(),
                    cut: frames.uncut(),
                })
            }
        }
    }
}

/// `from + wait`, or a time too far off to matter if that is past what an
/// `Instant` holds (`Duration::MAX` means no timeout).
fn after(from: Instant, wait: Duration) -> Instant {
    from.checked_add(wait)
        .unwrap_or_else(|| from + Duration::from_secs(100 * 365 * 86_400))
}

/// Resolves once the server is told to stop (or is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|&stopped| stopped).await;
}

async fn stopped_opt(stop: &mut Option<watch::Receiver<bool>>) {
    match stop {
        Some(stop) => stopped(stop).await,
        None => std::future::pending().await,
    }
}
