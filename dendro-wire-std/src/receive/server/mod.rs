//! [`Server`]: many publishers at once on tokio, each connection bounded in
//! memory, time and count. This is the handle (start, what it has done,
//! shutdown); the bounds are [`config`], the reports [`report`], accepting
//! [`accept`] and one connection, from its peer check to its session's end,
//! [`connection`].

mod accept;
mod config;
mod connection;
mod on_runtime;
mod proxied;
mod report;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::{watch, Notify};

use super::capture::Recorder;
use super::session::SessionCounts;
use super::sink::Sink;
use crate::cut::MemoryBudget;
pub use accept::Listener;
use accept::{accept_loop, Accepting};
pub use config::ServerConfig;
pub use on_runtime::Serving;
pub use report::{ConnectionInfo, Ended, LiveConnection, Peer, ServerStats};

/// Everything the accept loop, the connections and the handle share.
struct Shared {
    config: ServerConfig,
    budget: Arc<MemoryBudget>,
    live: Mutex<Table>,
    /// Notified each time a connection leaves `live`: what a shutdown's
    /// grace waits on.
    left: Condvar,
    accepted: AtomicU64,
    refused: AtomicU64,
    accept_errors: AtomicU64,
    evicted: AtomicU64,
    ended: AtomicU64,
    /// Where connections are recorded, if they are.
    recorder: Option<Arc<Recorder>>,
}

/// The live connections, and what admitting the next one weighs.
#[derive(Default)]
struct Table {
    /// By number: the order they were accepted.
    connections: BTreeMap<u64, Arc<Live>>,
    /// Those that have not opened a source and are not yet told to go,
    /// oldest first.
    unopened: BTreeSet<u64>,
    /// Of those, the ones that have sent a whole frame and opened no
    /// source with it: an honest publisher's first frame is its
    /// `Handshake`, so these have shown they are not opening one, and go
    /// first, grace or not.
    spoke: BTreeSet<u64>,
    /// Live connections from each remote address.
    per_peer: HashMap<IpAddr, usize>,
}

impl Table {
    fn len(&self) -> usize {
        self.connections.len()
    }

    fn is_empty(&self) -> bool {
        self.connections.is_empty()
    }

    /// Tell a connection yet to open a source (from `address`, if given)
    /// to go, and take it off those lists at once, so it is told only once;
    /// whether there was one. It is the oldest that has sent a frame and
    /// opened no source with it; else the oldest, if it has had `grace` to
    /// open one. A connection that has sent nothing whole and is younger
    /// than `grace` is never told: it may simply not have been read yet.
    fn evict_oldest_from(&mut self, address: Option<IpAddr>, grace: Duration) -> bool {
        let connections = &self.connections;
        let from = |id: &u64| {
            address.is_none()
                || connections
                    .get(id)
                    .is_some_and(|live| live.counted_as() == address)
        };
        let spoke = self.spoke.iter().copied().find(from);
        let chosen = spoke.or_else(|| {
            // The oldest is the first accepted: if it is within its grace,
            // so is every other.
            self.unopened.iter().copied().find(from).filter(|oldest| {
                connections
                    .get(oldest)
                    .is_none_or(|live| live.accepted.elapsed() >= grace)
            })
        });
        let Some(chosen) = chosen else {
            return false;
        };
        self.unopened.remove(&chosen);
        self.spoke.remove(&chosen);
        if let Some(live) = connections.get(&chosen) {
            live.evict.notify_one();
        }
        true
    }
}

/// A live connection, as the server holds it: who connected, where its
/// session shares what it has done, and how it is told to make room.
struct Live {
    /// Who it is: known from accept, or for a connection through a load
    /// balancer, once its PROXY header is read.
    peer: Mutex<Peer>,
    /// The address it is counted under in the table's `per_peer`, once it
    /// is.
    counted: Mutex<Option<IpAddr>>,
    /// When it was accepted.
    accepted: Instant,
    progress: Mutex<SessionCounts>,
    /// Told once, if it is closed to admit a newer connection.
    evict: Notify,
}

impl Live {
    fn peer(&self) -> Peer {
        self.peer.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn counted_as(&self) -> Option<IpAddr> {
        *self.counted.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Shared {
    /// What a server starts with under `config`; its capture directory
    /// made, and what it already holds counted.
    fn new(config: ServerConfig) -> io::Result<Arc<Shared>> {
        let recorder = match &config.record {
            Some(dir) => Some(Arc::new(Recorder::new(
                dir,
                config.record_max,
                config.record_max_per_connection,
            )?)),
            None => None,
        };
        Ok(Arc::new(Shared {
            budget: Arc::new(MemoryBudget::new(config.max_memory)),
            config,
            live: Mutex::default(),
            left: Condvar::new(),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            recorder,
        }))
    }

    fn live(&self) -> MutexGuard<'_, Table> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live_count(&self) -> usize {
        self.live().len()
    }

    /// Connection `id` opened a source: it is no longer closed to make room.
    fn opened(&self, id: u64) {
        let mut table = self.live();
        table.unopened.remove(&id);
        table.spoke.remove(&id);
    }

    /// Connection `id`, yet to open a source, sent a whole frame that did
    /// not open one: the first to go when room is needed.
    fn spoke(&self, id: u64) {
        let mut table = self.live();
        if table.unopened.contains(&id) {
            table.spoke.insert(id);
        }
    }
}

/// A TCP listener serving many publishers at once: each connection's stream
/// applied to its own sink under the subscriber's rules, on a tokio runtime
/// of its own (so callers need not be async).
///
/// Every connection is bounded ([`ServerConfig`]): its buffer grows with
/// the bytes that arrived against a memory budget shared fairly by all; an
/// idle connection, an unfinished frame and a connection that opens no
/// source in time are ended by timeouts; the oldest connection yet to open
/// a source makes room for a new one at a cap, and past it the new one is
/// closed at once. Each that ends closes its socket, frees its buffer and
/// task, and is handed to `done` with why it ended.
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
/// assert!(queue.wait_connected(Duration::from_secs(10)), "the server accepts");
/// for ts in 0..10 {
///     publisher.observe(s, "x", ts, 0, &[1])?;
///     publisher.end_interval();
/// }
/// queue.close();
/// transport.join().unwrap()?;
/// let ended = rx.recv()?;
/// assert_eq!(ended.tally.rows_applied, 10);
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

impl Server {
    /// Serve `listener` (TCP, or a Unix socket) as `config` bounds it. Every
    /// connection gets a [`SinkSubscriber`](super::SinkSubscriber) over `make_sink(&info)`, and
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
        let addr = listener.prepare(&config)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads.max(1))
            .thread_name("dendro-wire-server")
            .enable_all()
            .build()?;
        let accepting = Accepting::new(listener, runtime.handle())?;
        let shared = Shared::new(config)?;
        let (shutdown, stop) = watch::channel(false);
        let thread = {
            let shared = shared.clone();
            let handlers = Arc::new((make_sink, done));
            std::thread::Builder::new()
                .name("dendro-wire-accept".into())
                .spawn(move || runtime.block_on(accept_loop(accepting, shared, handlers, stop)))?
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
        self.watch().live()
    }

    /// What the server has done so far.
    pub fn stats(&self) -> ServerStats {
        self.watch().stats()
    }

    /// A handle on the server's counts that another thread can keep (a
    /// metrics endpoint, say) while this one owns the server; it reads the
    /// same counts as [`live`](Self::live) and [`stats`](Self::stats), and
    /// after a shutdown, the last of them.
    pub fn watch(&self) -> ServerWatch {
        ServerWatch {
            shared: self.shared.clone(),
        }
    }

    /// Stop accepting; give live connections up to `grace` to end on their
    /// own; then end each after applying what has arrived of its stream;
    /// return once every connection's `done` has run.
    pub fn shutdown(mut self, grace: Duration) -> ServerStats {
        let started = Instant::now();
        let mut live = self.shared.live();
        while !live.is_empty() {
            let Some(left) = grace
                .checked_sub(started.elapsed())
                .filter(|d| !d.is_zero())
            else {
                break;
            };
            // Woken as each connection leaves the live list.
            let (woken, _) = self
                .shared
                .left
                .wait_timeout(live, left)
                .unwrap_or_else(|e| e.into_inner());
            live = woken;
        }
        drop(live);
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

/// A running [`Server`]'s counts, readable from any thread:
/// [`Server::watch`].
#[derive(Clone)]
pub struct ServerWatch {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ServerWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerWatch")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl ServerWatch {
    /// The connections live now, in the order they were accepted.
    pub fn live(&self) -> Vec<LiveConnection> {
        self.shared
            .live()
            .connections
            .iter()
            .map(|(&id, live)| {
                let progress = *live.progress.lock().unwrap_or_else(|e| e.into_inner());
                LiveConnection {
                    id,
                    peer: live.peer(),
                    bytes: progress.bytes,
                    tally: progress.tally,
                }
            })
            .collect()
    }

    /// What the server has done so far.
    pub fn stats(&self) -> ServerStats {
        let s = &self.shared;
        ServerStats {
            accepted: s.accepted.load(Ordering::Relaxed),
            refused: s.refused.load(Ordering::Relaxed),
            accept_errors: s.accept_errors.load(Ordering::Relaxed),
            evicted: s.evicted.load(Ordering::Relaxed),
            live: s.live_count() as u64,
            ended: s.ended.load(Ordering::Relaxed),
            memory_in_use: s.budget.in_use(),
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
