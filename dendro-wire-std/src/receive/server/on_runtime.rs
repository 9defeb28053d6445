//! [`Serving`]: the same server on the caller's tokio runtime, stopped by a
//! future of the caller's, as hyper, axum and tonic serve.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

use super::accept::{accept_loop, Accepting, Listener};
use super::config::ServerConfig;
use super::report::{ConnectionInfo, Ended, ServerStats};
use super::server_watch::ServerWatch;
use super::shared::ServerShared;
use crate::receive::sink::Sink;

/// A [`Server`](super::Server) that runs on the caller's tokio runtime
/// rather than one of its own: every bound of [`ServerConfig`] holds as it
/// does there (but `threads`: the runtime's are the caller's), and it stops
/// when a future of the caller's completes.
///
/// ```
/// use std::time::Duration;
/// use dendro_wire_std::receive::{ServerConfig, Serving};
/// use dendro_wire_std::CountingSink;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let serving = Serving::new(
///     listener,
///     ServerConfig::default(),
///     |_| CountingSink::default(),
///     |ended, _sink| println!("{ended}"),
/// )?;
/// let watch = serving.watch(); // its counts, from anywhere
/// // Serve until the future completes (here: at once); then each
/// // connection applies what has arrived and ends.
/// let stats = serving.run_until(tokio::time::sleep(Duration::ZERO)).await;
/// assert_eq!((stats.accepted, stats.live), (0, 0));
/// assert_eq!(watch.stats(), stats);
/// # Ok(())
/// # }
/// ```
pub struct Serving<M, D> {
    addr: Option<SocketAddr>,
    accepting: Accepting,
    shared: Arc<ServerShared>,
    handlers: Arc<(M, D)>,
}

impl<M, D> std::fmt::Debug for Serving<M, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl<S, M, D> Serving<M, D>
where
    S: Sink + Send + 'static,
    M: Fn(&ConnectionInfo) -> S + Send + Sync + 'static,
    D: Fn(Ended, S) + Send + Sync + 'static,
{
    /// Ready to serve `listener` on the current runtime (call it from
    /// within one), as [`Server::start`](super::Server::start) would:
    /// `make_sink` and `done` are its.
    pub fn new(
        listener: impl Into<Listener>,
        config: ServerConfig,
        make_sink: M,
        done: D,
    ) -> io::Result<Self> {
        let listener = listener.into();
        let addr = listener.prepare(&config)?;
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|e| io::Error::other(format!("Serving::new needs a tokio runtime: {e}")))?;
        Ok(Serving {
            addr,
            accepting: Accepting::new(listener, &handle)?,
            shared: ServerShared::new(config)?,
            handlers: Arc::new((make_sink, done)),
        })
    }

    /// The address it listens on; `None` on a Unix socket.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Its counts, readable from any thread or task while it runs.
    pub fn watch(&self) -> ServerWatch {
        ServerWatch {
            shared: self.shared.clone(),
        }
    }

    /// Serve until `shutdown` completes; then stop accepting, have each
    /// live connection apply what has arrived of its stream and end (each
    /// `done` called), and return what the server did.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> ServerStats {
        let (stop, stopped) = watch::channel(false);
        let serving = accept_loop(self.accepting, self.shared.clone(), self.handlers, stopped);
        tokio::pin!(serving);
        tokio::select! {
            () = &mut serving => {}
            () = shutdown => {
                stop.send_replace(true);
                serving.await;
            }
        }
        ServerWatch {
            shared: self.shared,
        }
        .stats()
    }
}
