//! Accepting: what a server listens on ([`Listener`]), the loop that
//! accepts, caps the live connections and says so at most once a second,
//! and the guard that takes a connection off the live list.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;

use super::config::ServerConfig;
use super::connection::{serve_connection, Io};
use super::report::{ConnectionInfo, Ended, Peer};
use super::shared::{Live, ServerShared};
use crate::cut::Held;
use crate::receive::session::stopped;
use crate::receive::sink::Sink;
use crate::throttle::Throttle;

/// What a [`Server`](super::Server) listens on.
#[derive(Debug)]
#[non_exhaustive]
pub enum Listener {
    /// A TCP listener.
    Tcp(std::net::TcpListener),
    /// A Unix socket listener ([`bind_unix`](crate::receive::bind_unix) makes one
    /// only its owner can reach).
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

/// How many connections may wait to be accepted: a fleet reconnecting at
/// once should queue, not be refused by the kernel.
const BACKLOG: i32 = 4096;

impl Listener {
    /// Ready to accept on a runtime: room for a fleet reconnecting at once
    /// (a listener made with std's default backlog of 128 is given more),
    /// the receive buffer `config` asks of each connection, and
    /// non-blocking. The TCP address it listens on.
    pub(super) fn prepare(&self, config: &ServerConfig) -> io::Result<Option<SocketAddr>> {
        match self {
            Listener::Tcp(tcp) => {
                let socket = socket2::SockRef::from(tcp);
                // Set on the listener, so that each connection has it from
                // its first segment (its window's scale is agreed then).
                if let Some(bytes) = config.receive_buffer {
                    socket.set_recv_buffer_size(bytes)?;
                }
                socket.listen(BACKLOG)?;
                tcp.set_nonblocking(true)?;
                Ok(Some(tcp.local_addr()?))
            }
            #[cfg(unix)]
            Listener::Unix(unix) => {
                socket2::SockRef::from(unix).listen(BACKLOG)?;
                unix.set_nonblocking(true)?;
                Ok(None)
            }
        }
    }
}

/// The listener, on the runtime.
pub(super) enum Accepting {
    Tcp(tokio::net::TcpListener),
    #[cfg(unix)]
    Unix(tokio::net::UnixListener),
}

impl Accepting {
    /// `listener`, [prepared](Listener::prepare), moved onto `runtime`.
    pub(super) fn new(listener: Listener, runtime: &Handle) -> io::Result<Accepting> {
        let _entered = runtime.enter();
        Ok(match listener {
            Listener::Tcp(tcp) => Accepting::Tcp(tokio::net::TcpListener::from_std(tcp)?),
            #[cfg(unix)]
            Listener::Unix(unix) => Accepting::Unix(tokio::net::UnixListener::from_std(unix)?),
        })
    }

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

/// Accept connections until `stop`, each served on a task of its own, and
/// close those past the cap at once; then wait for every connection to end.
pub(super) async fn accept_loop<S, M, D>(
    listener: Accepting,
    shared: Arc<ServerShared>,
    handlers: Arc<(M, D)>,
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
        let id = next_id;
        // Through a load balancer the peer is known once its PROXY header
        // is read: counted against its address's share then.
        let proxied = shared.config.expects_proxy_header(&peer);
        let admitted = admit(&shared, id, &peer, !proxied);
        let (held, live) = match admitted {
            Ok(admitted) => admitted,
            Err(why) => {
                shared.refused.fetch_add(1, Ordering::Relaxed);
                drop(stream);
                if let Some(held) = refusals.hit() {
                    log::warn!(
                        "closed a connection from {peer} at once: {why} ({held} more refused \
                         since last said)"
                    );
                }
                continue;
            }
        };
        next_id += 1;
        shared.accepted.fetch_add(1, Ordering::Relaxed);
        let guard = LiveGuard {
            shared: shared.clone(),
            id,
            _held: held,
        };
        let (handlers, stop) = (handlers.clone(), stop.clone());
        connections.spawn(async move {
            let (make_sink, done) = &*handlers;
            let info = ConnectionInfo {
                id,
                peer,
                identity: None,
                capture: None,
            };
            let (ended, sink) =
                serve_connection(stream, info, proxied, &guard.shared, &live, make_sink, stop)
                    .await;
            // Gone from the live connections before `done` hears of it.
            drop(guard);
            done(ended, sink);
        });
        // The new connection reads its first bytes before the next is
        // accepted: under a flood, an honest peer's Handshake is applied
        // before newer connections can make it the oldest yet to open a
        // source.
        tokio::task::yield_now().await;
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Admit connection `id` from `peer`, or say why not: its address has its
/// share, the cap on every connection is reached and none live may be told
/// to go, or the memory budget cannot hold one more. To admit it, the
/// connection that gives least (of the same address, if that is the cap
/// reached) is told to go, as [`room`](super::room) chooses; past the cap
/// of connections yet to open a source, while each is within its grace
/// ([`ServerConfig::eviction_grace`]), it is admitted all the same.
fn admit(
    shared: &ServerShared,
    id: u64,
    peer: &Peer,
    count_address: bool,
) -> Result<(Held, Arc<Live>), String> {
    let config = &shared.config;
    let mut table = shared.live();
    let address = peer.address().filter(|_| count_address);
    // Room made for it by one that is going.
    let made_room = match address {
        Some(address) => shared.room_from(&mut table, address)?,
        None => false,
    };
    let full = table.unopened.len() >= config.max_unopened_connections.max(1)
        || table.len() >= config.max_connections;
    // Past the cap of connections yet to open a source, while every one of
    // them is within its grace (a fleet reconnecting at once), the new one
    // is admitted all the same, up to the cap on every connection.
    if full
        && !made_room
        && !shared.make_room(&mut table, address)
        && table.len() >= config.max_connections
    {
        return Err(format!(
            "{} connections are live ({} yet to open a source), the cap, each having opened a \
             source and delivered within the last {:?}, being closed to make room, or accepted \
             within it",
            table.len(),
            table.unopened.len(),
            config.eviction_grace
        ));
    }
    let Some(held) = shared.budget.hold(config.connection_state()) else {
        return Err(format!(
            "the memory budget of {} bytes is full",
            shared.budget.limit()
        ));
    };
    let live = Arc::new(Live {
        peer: Mutex::new(peer.clone()),
        counted: Mutex::new(address),
        accepted: std::time::Instant::now(),
        progress: Mutex::default(),
        evict: Notify::new(),
    });
    table.join(id, live.clone(), address);
    Ok((held, live))
}

impl ServerShared {
    /// Connection `id`, accepted from a load balancer, is from `peer`, as
    /// its PROXY header says: counted under its address from now on, if
    /// that address has room for it (else why not, and it is counted as
    /// refused).
    pub(super) fn proxied(&self, id: u64, peer: &Peer) -> Result<(), String> {
        let mut table = self.live();
        if let Some(address) = peer.address() {
            if let Err(why) = self.room_from(&mut table, address) {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return Err(why);
            }
            table.count_under(id, address);
        }
        if let Some(live) = table.connections.get(&id) {
            *live.peer.lock().unwrap_or_else(|e| e.into_inner()) = peer.clone();
        }
        Ok(())
    }
}

/// Takes a connection off the live list, and gives back what it held of
/// the memory budget, when its task ends, however it ends.
struct LiveGuard {
    shared: Arc<ServerShared>,
    id: u64,
    _held: Held,
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.shared.live().leave(self.id);
        self.shared.ended.fetch_add(1, Ordering::Relaxed);
        self.shared.left.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The receive buffer asked for is the listener's before it listens, so
    /// that every connection accepted has it from its first segment.
    #[test]
    fn the_receive_buffer_asked_for_is_set_before_listening() {
        let sized = |asked: Option<usize>| {
            let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let config = match asked {
                Some(bytes) => ServerConfig::default().receive_buffer(bytes),
                None => ServerConfig::default(),
            };
            let listener = Listener::Tcp(tcp);
            listener.prepare(&config).unwrap();
            let Listener::Tcp(tcp) = &listener else {
                unreachable!()
            };
            socket2::SockRef::from(tcp).recv_buffer_size().unwrap()
        };
        let small = sized(Some(16 << 10));
        // Linux keeps twice what is asked, for its own bookkeeping.
        assert!((16 << 10..=32 << 10).contains(&small), "{small}");
        assert!(sized(None) > small, "the system's default is larger");
    }
}
