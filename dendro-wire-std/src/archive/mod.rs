//! Frames into a dendro 0.6.1 archive through dendro's own writer, from any
//! number of connections at once, so what is received is an archive dendro
//! opens and reads. Feature `archive`.
//!
//! [`SharedArchive`] is the archive and its one writer path
//! (`commit/`): a thread that takes what every connection hands over and
//! commits rows from all of them together, in batches bounded by size and
//! age, each source's other frames kept in order against its own rows.
//! [`ArchiveSink`] (`sink.rs`) is one connection's sink into it: it hands
//! work over and never waits on a commit. What the writer path has done
//! is [`ArchiveStats`] (`stats.rs`); what the connections and the writer
//! path share is `shared.rs`, how it batches [`ArchiveConfig`]
//! (`config.rs`), and the work and batches it holds `batch.rs`. The
//! sources connections may create in it are bounded, in all and per
//! client address (`bounds.rs`); the encoding its rows are stored in, and
//! the opening of dendro's writer, are `encoder.rs`.
//!
//! Every hand-off to dendro's writer is a commit (one transaction, and at
//! dendro's `synchronous=FULL` one fsync), so a fleet of small agents, each
//! sending a frame a second, would be thousands of small commits a second
//! if each connection committed its own. One path for all of them makes it
//! a few large ones.
//!
//! # A commit that fails
//!
//! dendro 0.6.1's writer retries a commit that fails on a condition that
//! may clear (a full disk, a failed write or fsync, a lock), then drops the
//! tick, answers success, and says so only as a `tracing` warning.
//! [`DendroEvents`] (`events.rs`) hears it: install it (or forward dendro's
//! events to it), or a dropped tick is seen only when dendro stops after
//! 30 in a row. The writer path waits for each tick and checks it
//! (`checks.rs`): a tick dropped, an error from dendro's writer, or the
//! archive's file removed or replaced is a failed commit. The writer path
//! does not retry it (a full disk or a lost file does not clear on its
//! own, and holding rows for a retry would only keep the backlog full): it
//! stops at the first, and every connection's next hand-over is refused.
//! Rows committed before it stay counted in
//! [`rows_committed`](ArchiveStats::rows_committed); the failed tick's,
//! the rest of its batch's and all handed over after are counted in
//! [`rows_dropped`](ArchiveStats::rows_dropped), never dropped uncounted;
//! [`commit_failures`](ArchiveStats::commit_failures) and
//! [`failed`](ArchiveStats::failed) say that it happened and why, and
//! [`finish`](SharedArchive::finish) returns the failure.

mod batch;
mod bounds;
mod checks;
mod commit;
mod config;
mod encoder;
mod events;
mod shared;
mod sink;
mod stats;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex};

use dendro::archive::Archive;

use crate::receive::{Backlog, SinkError};
use bounds::{Bounds, SharedBounds};
use commit::Committer;
pub use config::ArchiveConfig;
pub use encoder::RawRowsEncoder;
pub use events::DendroEvents;
use events::Watch;
use shared::ArchiveState;
pub use shared::SharedArchive;
pub use sink::ArchiveSink;
use stats::Counters;
pub use stats::{ArchiveStats, CommitSeconds, COMMIT_BUCKETS};

fn sink_error(e: dendro::Error) -> SinkError {
    Box::new(e)
}

impl SharedArchive {
    /// Create an archive at `path` (opened if it exists) for rows in
    /// `encoder`, with the default [`ArchiveConfig`]; a publisher whose
    /// sources declare another encoder is refused.
    pub fn create(path: &Path, encoder: &str) -> Result<Self, SinkError> {
        Self::with_config(path, encoder, ArchiveConfig::default())
    }

    /// [`create`](Self::create), its writer path batching and bounded as
    /// `config` says.
    pub fn with_config(
        path: &Path,
        encoder: &str,
        config: ArchiveConfig,
    ) -> Result<Self, SinkError> {
        let watch = Arc::new(Watch::default());
        // What the archive holds already counts toward its bound.
        let held = match path.exists() {
            true => contents(path)?.into_iter().map(|s| s.uuid).collect(),
            false => Vec::new(),
        };
        let bounds = Bounds::new(config.max_sources, config.max_sources_per_address, held);
        let writer = encoder::open_writer(path, encoder, &watch, true).map_err(sink_error)?;
        let inner = Arc::new(ArchiveState {
            path: path.to_path_buf(),
            encoder: encoder.to_string(),
            backlog: Backlog::new(config.backlog_bytes),
            config,
            bounds: SharedBounds::new(bounds),
            queue: Mutex::default(),
            work: Condvar::new(),
            counters: Counters::default(),
            next_key: AtomicU64::new(0),
            thread: Mutex::new(None),
            #[cfg(test)]
            journal: Mutex::default(),
        });
        let committer = Committer::new(inner.clone(), writer, watch);
        let thread = std::thread::Builder::new()
            .name("dendro-wire-archive".into())
            .spawn(move || committer.run())?;
        *inner.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread);
        Ok(SharedArchive { inner })
    }

    /// A sink for one connection, from an address not known: only the
    /// bound on sources in all applies to it
    /// ([`ArchiveConfig::max_sources`]).
    pub fn connection(&self) -> ArchiveSink {
        ArchiveSink::new(self.clone(), None)
    }

    /// A sink for one connection from the client `address`, whose sources
    /// count toward its bound ([`ArchiveConfig::max_sources_per_address`])
    /// as well as toward the bound in all.
    pub fn connection_from(&self, address: Option<IpAddr>) -> ArchiveSink {
        ArchiveSink::new(self.clone(), address)
    }

    /// The archive's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// What may be handed over and not yet committed: the connections are
    /// not read while it is full.
    pub fn backlog(&self) -> &Backlog {
        &self.inner.backlog
    }

    /// What the writer path has done so far.
    pub fn stats(&self) -> ArchiveStats {
        self.inner.stats()
    }

    /// Commit everything handed over, stop the writer path and dendro's
    /// writer, and say what was done; an error if either failed. Call once
    /// every connection has ended (work handed over after this is
    /// refused); then [`contents`] reads back what landed.
    pub fn finish(self) -> Result<ArchiveStats, SinkError> {
        self.inner.lock().stopping = true;
        self.inner.work.notify_all();
        let thread = self
            .inner
            .thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                self.inner
                    .fail("the archive's writer path panicked".to_string());
            }
        }
        let stats = self.inner.stats();
        match &stats.failed {
            Some(why) => Err(why.clone().into()),
            None => Ok(stats),
        }
    }
}

/// One source of an archive, as dendro's own reader sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceContents {
    /// The id that names the source within the archive.
    pub id: i64,
    /// The uuid that names the source everywhere.
    pub uuid: Option<String>,
    /// The labels it was opened with.
    pub labels: BTreeMap<String, String>,
    /// The rows in its live WAL, over all its streams.
    pub wal_rows: u64,
}

/// What the archive at `path` holds, read back with dendro 0.6.1's reader
/// (`Archive::open`, `read_sources`, `all_streams`, `live_wal`): proof that
/// what landed through a [`SharedArchive`] is an archive dendro reads.
pub fn contents(path: &Path) -> Result<Vec<SourceContents>, SinkError> {
    let db = Archive::open(path).map_err(sink_error)?;
    let mut sources = Vec::new();
    for source in db.read_sources().map_err(sink_error)? {
        let mut wal_rows = 0;
        for stream in db.all_streams(source.id).map_err(sink_error)? {
            wal_rows += db
                .live_wal_span(source.id, &stream)
                .map_err(sink_error)?
                .rows;
        }
        sources.push(SourceContents {
            id: source.id,
            uuid: source.uuid,
            labels: source.meta.labels,
            wal_rows,
        });
    }
    Ok(sources)
}
