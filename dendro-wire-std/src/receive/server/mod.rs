//! [`Server`]: many publishers at once on tokio, each connection bounded in
//! memory, time and count. This is the handle (start, what it has done,
//! shutdown); the bounds are [`config`], the reports [`report`], accepting
//! [`accept`] and one connection, from its peer check to its session's end,
//! [`connection`]; what they all share is [`shared`], which connection makes
//! room for a newcomer [`room`], and the counts another thread reads
//! [`server_watch`].

mod accept;
mod config;
mod connection;
mod on_runtime;
mod proxied;
mod report;
mod room;
mod server_watch;
mod shared;
#[cfg(feature = "tls")]
mod tls_charge;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::sink::Sink;
pub use accept::Listener;
use accept::{accept_loop, Accepting};
pub use config::ServerConfig;
pub use on_runtime::Serving;
pub use report::{ConnectionInfo, Ended, LiveConnection, Peer, ServerStats};
pub use server_watch::ServerWatch;
use shared::ServerShared;

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
    shared: Arc<ServerShared>,
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
        let shared = ServerShared::new(config)?;
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

impl Drop for Server {
    /// A server dropped without [`shutdown`](Server::shutdown) shuts down
    /// with no grace.
    fn drop(&mut self) {
        self.stop();
    }
}
