//! What a server's accept loop, its connections and its handle share
//! ([`ServerShared`]): the bounds, the memory budget, the counts and the table of
//! live connections ([`Table`], each a [`Live`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::net::IpAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

use super::config::ServerConfig;
use super::report::Peer;
use crate::cut::MemoryBudget;
use crate::receive::capture::Recorder;
use crate::receive::session::SessionCounts;

/// Everything the accept loop, the connections and the handle share.
pub(super) struct ServerShared {
    pub(super) config: ServerConfig,
    pub(super) budget: Arc<MemoryBudget>,
    live: Mutex<Table>,
    /// Notified each time a connection leaves `live`: what a shutdown's
    /// grace waits on.
    pub(super) left: Condvar,
    pub(super) accepted: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) accept_errors: AtomicU64,
    pub(super) evicted: AtomicU64,
    pub(super) ended: AtomicU64,
    /// Where connections are recorded, if they are.
    pub(super) recorder: Option<Arc<Recorder>>,
}

/// The live connections, and what admitting the next one weighs (how
/// room is made is in [`room`](super::room)).
#[derive(Default)]
pub(super) struct Table {
    /// By number: the order they were accepted.
    pub(super) connections: BTreeMap<u64, Arc<Live>>,
    /// Those that have not opened a source and are not yet told to go,
    /// oldest first.
    pub(super) unopened: BTreeSet<u64>,
    /// Of those, the ones that have sent a whole frame and opened no
    /// source with it: an honest publisher's first frame is its
    /// `Handshake`, so these have shown they are not opening one, and go
    /// first, grace or not.
    pub(super) spoke: BTreeSet<u64>,
    /// Live connections from each remote address.
    pub(super) members: HashMap<IpAddr, BTreeSet<u64>>,
    /// Of those, the ones yet to open a source, not yet told to go.
    pub(super) unopened_from: HashMap<IpAddr, BTreeSet<u64>>,
    /// The addresses in `unopened_from`, by how many each holds.
    pub(super) by_unopened: BTreeSet<(usize, IpAddr)>,
    /// Connections that opened a source and are not yet told to go, by
    /// when they last delivered (rows or a segment; at first, when they
    /// opened it), as last looked: a lower bound of it, stalest first.
    pub(super) giving: BTreeSet<(Instant, u64)>,
    /// Each one's place in `giving`.
    pub(super) gave_at: HashMap<u64, Instant>,
}

impl Table {
    pub(super) fn len(&self) -> usize {
        self.connections.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.connections.is_empty()
    }
}

/// A live connection, as the server holds it: who connected, where its
/// session shares what it has done, and how it is told to make room.
pub(super) struct Live {
    /// Who it is: known from accept, or for a connection through a load
    /// balancer, once its PROXY header is read.
    pub(super) peer: Mutex<Peer>,
    /// The address it is counted under in the table's `per_peer`, once it
    /// is.
    pub(super) counted: Mutex<Option<IpAddr>>,
    /// When it was accepted.
    pub(super) accepted: Instant,
    pub(super) progress: Mutex<SessionCounts>,
    /// Told once, if it is closed to admit a newer connection.
    pub(super) evict: Notify,
}

impl Live {
    pub(super) fn peer(&self) -> Peer {
        self.peer.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn counted_as(&self) -> Option<IpAddr> {
        *self.counted.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ServerShared {
    /// What a server starts with under `config`; its capture directory
    /// made, and what it already holds counted.
    pub(super) fn new(config: ServerConfig) -> io::Result<Arc<ServerShared>> {
        let recorder = match &config.record {
            Some(dir) => Some(Arc::new(Recorder::new(
                dir,
                config.record_max,
                config.record_max_per_connection,
            )?)),
            None => None,
        };
        Ok(Arc::new(ServerShared {
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

    pub(super) fn live(&self) -> MutexGuard<'_, Table> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn live_count(&self) -> usize {
        self.live().len()
    }

    /// Connection `id` opened a source: from now on it is weighed by what
    /// it delivers.
    pub(super) fn opened(&self, id: u64) {
        self.live().opened(id);
    }

    /// Connection `id`, yet to open a source, sent a whole frame that did
    /// not open one: the first to go when room is needed.
    pub(super) fn spoke(&self, id: u64) {
        let mut table = self.live();
        if table.unopened.contains(&id) {
            table.spoke.insert(id);
        }
    }
}
