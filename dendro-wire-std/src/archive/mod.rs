//! Frames into a dendro 0.6.1 archive through dendro's own writer, from any
//! number of connections at once, so what is received is an archive dendro
//! opens and reads. Feature `archive`.
//!
//! [`SharedArchive`] is the archive and its one writer path
//! (`commit.rs`): a thread that takes what every connection hands over and
//! commits rows from all of them together, in batches bounded by size and
//! age, each source's other frames kept in order against its own rows.
//! [`ArchiveSink`] (`sink.rs`) is one connection's sink into it: it hands
//! work over and never waits on a commit. What the writer path has done
//! is [`ArchiveStats`] (`stats.rs`).
//!
//! Every hand-off to dendro's writer is a commit (one transaction, and at
//! dendro's `synchronous=FULL` one fsync), so a fleet of small agents, each
//! sending a frame a second, would be thousands of small commits a second
//! if each connection committed its own. One path for all of them makes it
//! a few large ones.

mod batch;
mod commit;
mod sink;
mod stats;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dendro::archive::{Archive, WalRow};
use dendro::segment::{EncodeContext, EncodeResult, Segment as DSegment, SegmentEncoder};
use dendro::writer::Writer;

use crate::receive::{Backlog, SinkError};
use batch::Work;
use commit::Committer;
pub use sink::ArchiveSink;
use stats::Counters;
pub use stats::{ArchiveStats, CommitSeconds, COMMIT_BUCKETS};

/// The segment encoding for rows this project does not interpret: each row
/// as `i64 ts | i64 wall_offset | u32 len | row`, little-endian, in order.
/// Its version is the `encoder` name the rows' publisher declares, so the
/// archive records it and every read path checks it.
#[derive(Clone, Debug)]
pub struct RawRowsEncoder {
    version: String,
}

impl RawRowsEncoder {
    /// An encoder for rows a publisher declares as `version`.
    pub fn new(version: impl Into<String>) -> Self {
        RawRowsEncoder {
            version: version.into(),
        }
    }
}

impl SegmentEncoder for RawRowsEncoder {
    fn encode(&self, _: &EncodeContext<'_>, rows: &[WalRow]) -> EncodeResult {
        let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        for r in rows {
            bytes.extend_from_slice(&r.ts.to_le_bytes());
            bytes.extend_from_slice(&r.wall_offset.to_le_bytes());
            bytes.extend_from_slice(&(r.row.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&r.row);
        }
        Ok(Some(DSegment {
            bytes,
            rows: rows.len() as u64,
            first_ts: first.ts,
            last_ts: last.ts,
            index: None,
        }))
    }

    fn version(&self) -> Option<&str> {
        Some(&self.version)
    }
}

/// How a [`SharedArchive`]'s writer path batches its commits, and how much
/// it may hold that is not yet committed. Every field has a setter of its
/// name.
///
/// ```
/// use std::time::Duration;
/// use dendro_wire_std::archive::ArchiveConfig;
///
/// let config = ArchiveConfig::default().commit_age(Duration::from_millis(250));
/// assert_eq!(config.commit_rows, 1 << 20, "the rest as they default");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ArchiveConfig {
    /// A batch is committed once it holds this many rows (default
    /// 1,048,576), however young. What arrives while a commit is under way
    /// goes into the next, so a writer that falls behind commits larger
    /// batches, and larger batches commit more rows a second: a commit's
    /// cost is mostly the index pages it writes, one for each stream of
    /// each source it touches, shared by that stream's rows in the batch.
    /// This bounds one commit's size and time; the
    /// [backlog](Self::backlog_bytes) bounds memory.
    pub commit_rows: usize,
    /// A batch is committed once its oldest row has waited this long
    /// (default 100 ms), however few rows it holds.
    pub commit_age: Duration,
    /// What may be handed over and not yet committed, in bytes (default 64
    /// MiB; an estimate: each row's bytes, its stream's name, and what
    /// holding them costs). Past it, connections are not read until
    /// commits make room ([`Backlog`]).
    pub backlog_bytes: usize,
}

impl Default for ArchiveConfig {
    fn default() -> Self {
        ArchiveConfig {
            commit_rows: 1 << 20,
            commit_age: Duration::from_millis(100),
            backlog_bytes: 64 << 20,
        }
    }
}

impl ArchiveConfig {
    /// Set [`commit_rows`](Self::commit_rows) (at least 1).
    pub fn commit_rows(mut self, rows: usize) -> Self {
        self.commit_rows = rows.max(1);
        self
    }

    /// Set [`commit_age`](Self::commit_age).
    pub fn commit_age(mut self, age: Duration) -> Self {
        self.commit_age = age;
        self
    }

    /// Set [`backlog_bytes`](Self::backlog_bytes).
    pub fn backlog_bytes(mut self, bytes: usize) -> Self {
        self.backlog_bytes = bytes;
        self
    }
}

/// One archive, written by one dendro `Writer` on one writer path, shared
/// by every connection that lands in it.
///
/// ```no_run
/// use dendro_wire_std::archive::SharedArchive;
/// use dendro_wire_std::receive::serve;
/// use dendro_wire_std::SinkSubscriber;
///
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
    inner: Arc<Inner>,
}

/// What the connections' sinks and the writer path share.
struct Inner {
    path: PathBuf,
    encoder: String,
    config: ArchiveConfig,
    queue: Mutex<Queue>,
    /// The writer path waits here for work.
    work: Condvar,
    backlog: Backlog,
    counters: Counters,
    /// The next key a connection's source is known by on the writer path.
    next_key: AtomicU64,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// What the writer path did, in order, for the tests to read.
    #[cfg(test)]
    journal: Mutex<Vec<String>>,
}

/// Work handed over and not yet taken by the writer path, in the order it
/// arrived.
#[derive(Default)]
struct Queue {
    items: VecDeque<Work>,
    /// No more work is taken: what is queued is committed and the writer
    /// joined.
    stopping: bool,
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
        let encoder_box = Box::new(RawRowsEncoder::new(encoder));
        let writer = if path.exists() {
            Writer::open(path, encoder_box)
        } else {
            Writer::create(path, encoder_box)
        }
        .map_err(sink_error)?;
        let inner = Arc::new(Inner {
            path: path.to_path_buf(),
            encoder: encoder.to_string(),
            backlog: Backlog::new(config.backlog_bytes),
            config,
            queue: Mutex::default(),
            work: Condvar::new(),
            counters: Counters::default(),
            next_key: AtomicU64::new(0),
            thread: Mutex::new(None),
            #[cfg(test)]
            journal: Mutex::default(),
        });
        let committer = Committer::new(inner.clone(), writer);
        let thread = std::thread::Builder::new()
            .name("dendro-wire-archive".into())
            .spawn(move || committer.run())?;
        *inner.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread);
        Ok(SharedArchive { inner })
    }

    /// A sink for one connection.
    pub fn connection(&self) -> ArchiveSink {
        ArchiveSink::new(self.clone())
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

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hand `work` over, unless the writer path has stopped.
    fn hand_over(&self, work: Work) -> Result<(), SinkError> {
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
    fn fail(&self, why: String) {
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

    fn stats(&self) -> ArchiveStats {
        let (failed, queued_since) = {
            let queue = self.lock();
            (queue.failed.clone(), queue.items.front().map(|w| w.at))
        };
        self.counters.stats(&self.backlog, queued_since, failed)
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

/// `now - since`, or nothing if `since` is not before now.
fn waited(since: Option<Instant>, now: Instant) -> Duration {
    since.map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
}

/// Counts kept with an `Ordering` that needs no other memory to be seen.
fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}
