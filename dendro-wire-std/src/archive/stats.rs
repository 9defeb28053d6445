//! [`ArchiveStats`]: what an archive's writer path has done, and how far
//! behind it is, read from any thread while it runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::batch::Work;
use crate::receive::Backlog;

/// The upper bounds of [`CommitSeconds`]' buckets, in seconds.
pub const COMMIT_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// How long each batch took to commit: a histogram of their durations,
/// from the batch's first transaction handed to dendro's writer to dendro
/// saying everything is committed, the frames of other kinds applied
/// among its rows included.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct CommitSeconds {
    /// Commits in each bucket of [`COMMIT_BUCKETS`] (not cumulative), then
    /// those longer than the last.
    pub buckets: [u64; COMMIT_BUCKETS.len() + 1],
    /// Their durations added, in seconds.
    pub sum: f64,
    /// How many.
    pub count: u64,
}

impl CommitSeconds {
    fn observe(&mut self, took: Duration) {
        let seconds = took.as_secs_f64();
        let bucket = COMMIT_BUCKETS
            .iter()
            .position(|&le| seconds <= le)
            .unwrap_or(COMMIT_BUCKETS.len());
        self.buckets[bucket] += 1;
        self.sum += seconds;
        self.count += 1;
    }
}

/// What an archive's writer path has done, and how far behind it is:
/// [`SharedArchive::stats`](super::SharedArchive::stats), and what
/// [`finish`](super::SharedArchive::finish) returns.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ArchiveStats {
    /// Rows connections handed over.
    pub rows_handed_over: u64,
    /// Of those, rows in batches dendro committed.
    pub rows_committed: u64,
    /// Of those, rows whose stream's timestamp did not advance, committed
    /// in a batch of their source's own (dendro drops any that repeat a
    /// `(stream, ts)` their source already holds, and logs it).
    pub rows_committed_apart: u64,
    /// Rows handed over and not committed: their source could not be
    /// opened, or a commit failed (dendro's writer answered an error or
    /// dropped the tick) and the writer path stopped, taking with it the
    /// rows of that commit and all those handed over after.
    pub rows_dropped: u64,
    /// Rows handed over and not yet committed.
    pub rows_pending: u64,
    /// Bytes handed over and not yet done, against
    /// [`backlog_limit`](Self::backlog_limit).
    pub backlog_bytes: usize,
    /// The backlog's bound.
    pub backlog_limit: usize,
    /// The most the backlog has held: its bound, plus at most a frame from
    /// each connection that had opened a source.
    pub backlog_peak: usize,
    /// Connections waiting now for room in the backlog.
    pub connections_waiting: usize,
    /// How many times a connection waited for room.
    pub waits: u64,
    /// How long the oldest work handed over and not yet done has waited:
    /// how far behind the archive is now.
    pub lag: Duration,
    /// The most it has been: the longest any committed row waited from
    /// being handed over to being committed, or the lag now if longer.
    pub max_lag: Duration,
    /// Transactions of rows committed.
    pub commits: u64,
    /// Commits that failed: dendro's writer answered an error, or dropped
    /// what it was handed after its retries (a full disk, a failed write or
    /// fsync), or the archive's file was gone. The first stops the writer
    /// path, so this is 0 or 1; [`failed`](Self::failed) says why.
    pub commit_failures: u64,
    /// How long each batch took to commit.
    pub commit_seconds: CommitSeconds,
    /// Sources opened in the archive.
    pub sources_opened: u64,
    /// Handshakes refused a source: the archive held
    /// [`max_sources`](super::ArchiveConfig::max_sources), or their
    /// client address had created
    /// [`max_sources_per_address`](super::ArchiveConfig::max_sources_per_address).
    /// Each ended its connection.
    pub sources_refused: u64,
    /// Sources the archive holds, as its bounds count them: those it held
    /// when opened, and those created since.
    pub sources_held: u64,
    /// Sources whose heartbeat dendro's writer bumps now (every few
    /// seconds, one row update each): those opened since it was last
    /// opened and not finalized. Those whose connections ended are let go
    /// when no source is open.
    pub sources_beating: u64,
    /// Times dendro's writer was joined and opened again, with no source
    /// open, to stop beating the sources whose connections had ended.
    pub writer_reopens: u64,
    /// Segments added to the archive.
    pub segments_added: u64,
    /// Segments the archive already held, and kept.
    pub segments_held: u64,
    /// Why the writer path stopped before it was asked to, if it did.
    pub failed: Option<String>,
}

/// The writer path's counts, kept as they change.
#[derive(Default)]
pub(super) struct Counters {
    handed_over: AtomicU64,
    committed: AtomicU64,
    committed_apart: AtomicU64,
    dropped: AtomicU64,
    commits: AtomicU64,
    commit_failures: AtomicU64,
    sources_opened: AtomicU64,
    sources_beating: AtomicU64,
    writer_reopens: AtomicU64,
    segments_added: AtomicU64,
    segments_held: AtomicU64,
    timing: Mutex<Timing>,
}

/// What the writer path keeps of time.
#[derive(Default)]
struct Timing {
    commit_seconds: CommitSeconds,
    max_lag: Duration,
    /// When the oldest work the writer path has taken and not yet done was
    /// handed over.
    oldest_taken: Option<Instant>,
}

impl Counters {
    fn timing(&self) -> std::sync::MutexGuard<'_, Timing> {
        self.timing.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn handed_over(&self, work: &Work) {
        add(&self.handed_over, work.rows() as u64);
    }

    pub(super) fn dropped(&self, work: &Work) {
        add(&self.dropped, work.rows() as u64);
    }

    /// `rows` taken from the queue and not committed.
    pub(super) fn not_committed(&self, rows: u64) {
        add(&self.dropped, rows);
    }

    pub(super) fn commit_failed(&self) {
        add(&self.commit_failures, 1);
    }

    pub(super) fn source_opened(&self) {
        add(&self.sources_opened, 1);
    }

    /// dendro's writer heartbeats `beating` sources now.
    pub(super) fn set_beating(&self, beating: u64) {
        self.sources_beating.store(beating, Ordering::Relaxed);
    }

    pub(super) fn writer_reopened(&self) {
        add(&self.writer_reopens, 1);
    }

    pub(super) fn segment(&self, added: bool) {
        add(
            if added {
                &self.segments_added
            } else {
                &self.segments_held
            },
            1,
        );
    }

    /// `rows` committed (`apart` of them in batches of their source's own)
    /// in `commits` transactions that took `took`, the oldest of them
    /// having waited `waited` since it was handed over.
    pub(super) fn committed(
        &self,
        rows: u64,
        apart: u64,
        commits: u64,
        took: Duration,
        waited: Duration,
    ) {
        add(&self.committed, rows);
        add(&self.committed_apart, apart);
        add(&self.commits, commits);
        let mut timing = self.timing();
        timing.commit_seconds.observe(took);
        timing.max_lag = timing.max_lag.max(waited);
    }

    pub(super) fn set_oldest_taken(&self, oldest: Option<Instant>) {
        self.timing().oldest_taken = oldest;
    }

    /// The stats now; `queued_since` is when the oldest work not yet taken
    /// was handed over.
    pub(super) fn stats(
        &self,
        backlog: &Backlog,
        queued_since: Option<Instant>,
        failed: Option<String>,
        (refused, held): (u64, u64),
    ) -> ArchiveStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let timing = self.timing();
        let since = match (timing.oldest_taken, queued_since) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let lag = waited(since, Instant::now());
        let (handed_over, committed, dropped) = (
            load(&self.handed_over),
            load(&self.committed),
            load(&self.dropped),
        );
        ArchiveStats {
            rows_handed_over: handed_over,
            rows_committed: committed,
            rows_committed_apart: load(&self.committed_apart),
            rows_dropped: dropped,
            rows_pending: handed_over.saturating_sub(committed + dropped),
            backlog_bytes: backlog.bytes(),
            backlog_limit: backlog.limit(),
            backlog_peak: backlog.peak(),
            connections_waiting: backlog.waiting(),
            waits: backlog.waits(),
            lag,
            max_lag: timing.max_lag.max(lag),
            commits: load(&self.commits),
            commit_failures: load(&self.commit_failures),
            commit_seconds: timing.commit_seconds.clone(),
            sources_opened: load(&self.sources_opened),
            sources_refused: refused,
            sources_held: held,
            sources_beating: load(&self.sources_beating),
            writer_reopens: load(&self.writer_reopens),
            segments_added: load(&self.segments_added),
            segments_held: load(&self.segments_held),
            failed,
        }
    }
}

/// `now - since`, or nothing if `since` is not before now.
fn waited(since: Option<Instant>, now: Instant) -> Duration {
    since.map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
}

/// Counts kept with an `Ordering` that needs no other memory to be seen.
fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}
