//! [`ServerWatch`]: a running server's counts, readable from any thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::report::{LiveConnection, ServerStats};
use super::shared::ServerShared;

/// A running [`Server`](super::Server)'s counts, readable from any thread:
/// [`Server::watch`](super::Server::watch).
#[derive(Clone)]
pub struct ServerWatch {
    pub(super) shared: Arc<ServerShared>,
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
