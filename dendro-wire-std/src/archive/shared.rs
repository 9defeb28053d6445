//! What an archive's connections and its writer path share: the
//! [`SharedArchive`] handle, the state behind it ([`ArchiveState`]) and the work
//! handed over and not yet taken ([`WorkQueue`]).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::batch::Work;
use super::bounds::SharedBounds;
use super::config::ArchiveConfig;
use super::stats::{ArchiveStats, Counters};
use crate::receive::{Backlog, SinkError};

/// One archive, written by one dendro `Writer` on one writer path, shared
/// by every connection that lands in it.
///
/// ```no_run
/// use dendro_wire_std::archive::{DendroEvents, SharedArchive};
/// use dendro_wire_std::receive::serve;
/// use dendro_wire_std::SinkSubscriber;
///
/// DendroEvents::install(); // a commit dendro drops is then seen at once
/// let archive = SharedArchive::create("copy.dendro".as_ref(), "dendro-wire-agent-1")?;
/// let mut subscriber = SinkSubscriber::new(archive.connection());
/// let capture = std::fs::File::open("agent.dwr")?;
/// serve(capture, &mut subscriber)?; // waits for the writer when it falls behind
/// subscriber.finish()?;
/// let stats = archive.finish()?; // everything committed; open it with dendro::archive::Archive
/// println!("{} rows committed", stats.rows_committed);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
#[derive(Clone)]
pub struct SharedArchive {
    pub(super) inner: Arc<ArchiveState>,
}

/// What the connections' sinks and the writer path share.
pub(super) struct ArchiveState {
    pub(super) path: PathBuf,
    pub(super) encoder: String,
    pub(super) config: ArchiveConfig,
    /// The sources connections may create.
    pub(super) bounds: SharedBounds,
    pub(super) queue: Mutex<WorkQueue>,
    /// The writer path waits here for work.
    pub(super) work: Condvar,
    pub(super) backlog: Backlog,
    pub(super) counters: Counters,
    /// The next key a connection's source is known by on the writer path.
    pub(super) next_key: AtomicU64,
    pub(super) thread: Mutex<Option<JoinHandle<()>>>,
    /// What the writer path did, in order, for the tests to read.
    #[cfg(test)]
    pub(super) journal: Mutex<Vec<String>>,
}

/// Work handed over and not yet taken by the writer path, in the order it
/// arrived.
#[derive(Default)]
pub(super) struct WorkQueue {
    pub(super) items: VecDeque<Work>,
    /// No more work is taken: what is queued is committed and the writer
    /// joined.
    pub(super) stopping: bool,
    /// Why the writer path stopped before it was asked to, if it did: every
    /// connection ends with it.
    failed: Option<String>,
}

impl std::fmt::Debug for SharedArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedArchive")
            .field("path", &self.inner.path)
            .field("encoder", &self.inner.encoder)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl ArchiveState {
    pub(super) fn lock(&self) -> MutexGuard<'_, WorkQueue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hand `work` over, unless the writer path has stopped.
    pub(super) fn hand_over(&self, work: Work) -> Result<(), SinkError> {
        let mut queue = self.lock();
        if let Some(why) = &queue.failed {
            return Err(format!("the archive's writer failed: {why}").into());
        }
        if queue.stopping {
            return Err("the archive is finished: it takes nothing more".into());
        }
        self.counters.handed_over(&work);
        self.backlog.add(work.bytes);
        queue.items.push_back(work);
        drop(queue);
        self.work.notify_one();
        Ok(())
    }

    /// The writer path stopped for `why`: every connection ends with it, and
    /// what was queued is dropped and counted.
    pub(super) fn fail(&self, why: String) {
        let dropped: Vec<Work> = {
            let mut queue = self.lock();
            queue.failed.get_or_insert(why);
            queue.items.drain(..).collect()
        };
        for work in dropped {
            self.counters.dropped(&work);
            self.backlog.remove(work.bytes);
        }
        self.backlog.close();
    }

    pub(super) fn stats(&self) -> ArchiveStats {
        let (failed, queued_since) = {
            let queue = self.lock();
            (queue.failed.clone(), queue.items.front().map(|w| w.at))
        };
        let sources = {
            let bounds = self.bounds.lock();
            (bounds.refused(), bounds.total() as u64)
        };
        self.counters
            .stats(&self.backlog, queued_since, failed, sources)
    }
}
