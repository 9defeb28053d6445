//! The archive's one writer path: a thread that takes the work every
//! connection hands over, in the order it arrived, and commits rows from
//! all of them together.
//!
//! - **Rows** of every source go into one batch, committed as one dendro
//!   `wal_tick` (one transaction) once it holds
//!   [`commit_rows`](super::ArchiveConfig::commit_rows) rows or its oldest
//!   row has waited [`commit_age`](super::ArchiveConfig::commit_age). A
//!   commit is waited for (dendro's `sync`) before the next batch is made,
//!   so what arrives during a commit makes the next one larger: the batch
//!   grows with how far behind the writer is.
//! - **Other frames** (an index entry, a segment, a clock offset, a source
//!   update, a source's end) are applied as they are taken if the batch
//!   holds nothing of their source; else they follow its rows in the batch,
//!   whose next rows go into a later layer of the same batch ([`Batch`]).
//!   Each source's frames reach dendro in stream order, every source's rows
//!   share each layer's transaction, and no source waits a whole commit for
//!   each frame of another kind it sends (dendro commits each such frame on
//!   its own, so a fleet's clock offsets are transactions of their own).
//! - **A row whose stream's timestamp did not advance** (the same or an
//!   earlier `ts` than that stream's last row from this source) goes into a
//!   batch of its source's own, committed after the shared one. dendro
//!   refuses a row repeating a `(stream, ts)` its source holds by
//!   re-committing the whole transaction source by source; kept apart, such
//!   a row costs its own source a commit, never every source in the batch.
//! - **A commit that failed** is never counted as committed: dendro's
//!   writer answering an error, or dropping a tick after its retries (which
//!   it answers as a success, and says only as a `tracing` warning: see
//!   [`DendroEvents`](super::DendroEvents)), or the archive's file gone,
//!   stops the writer path at once. Every tick is waited for before the
//!   next is handed over, so the rows committed before the failure are
//!   counted committed, and those of the failed tick and after it, with
//!   everything still queued, are counted not committed.
//! - **Sources whose connections ended** are let go by dendro's writer
//!   only when finalized, which is for a source its publisher said was
//!   complete; until then the writer bumps each one's heartbeat every few
//!   seconds, for ever. So once no source is open, and some ended ones are
//!   still beating, the writer path joins dendro's writer and opens the
//!   archive again (at most once every [`REOPEN_EVERY`]): an idle
//!   collector then beats nothing, and a reader sees those sources'
//!   writer stopped, which is the truth.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dendro::archive::WalRow;
use dendro::writer::Writer;

use super::batch::{Batch, Layer, Open, SourceKey, What, Work};
use super::checks::Checks;
use super::config::ArchiveConfig;
use super::encoder::open_writer;
use super::events::{DendroEvents, Watch};
use super::shared::ArchiveState;

/// How often at most dendro's writer is opened again to let go of the
/// sources whose connections ended: opening reads the archive's catalog.
const REOPEN_EVERY: Duration = Duration::from_secs(10);

/// Why the writer path cannot go on: dendro's writer failed.
struct Fatal(String);

/// The writer path's state: dendro's writer, the sources open, and the
/// batch being made.
pub(super) struct Committer {
    inner: Arc<ArchiveState>,
    writer: Writer,
    open: HashMap<SourceKey, Open>,
    batch: Batch,
    /// When the last commit ended.
    last_commit: Instant,
    /// What dendro's answers do not say.
    checks: Checks,
    /// Told of the ticks dendro's writer thread drops, whichever it is.
    watch: Arc<Watch>,
    /// Sources dendro's writer heartbeats: added to it and not finalized.
    beating: u64,
    /// When dendro's writer was last opened again.
    reopened: Option<Instant>,
}

/// How far a batch got: rows of it committed, of those apart, and
/// transactions.
#[derive(Default)]
struct Progress {
    rows: usize,
    apart: usize,
    commits: u64,
}

impl Committer {
    pub(super) fn new(inner: Arc<ArchiveState>, writer: Writer, watch: Arc<Watch>) -> Self {
        let checks = Checks::new(watch.clone(), inner.path.clone());
        Committer {
            inner,
            writer,
            open: HashMap::new(),
            batch: Batch::default(),
            last_commit: Instant::now(),
            checks,
            watch,
            beating: 0,
            reopened: None,
        }
    }

    /// Take and commit work until asked to stop with nothing left, or until
    /// a commit fails; then join dendro's writer.
    pub(super) fn run(mut self) {
        if !DendroEvents::watching() {
            log::warn!(
                "dendro's tracing events are not watched (archive::DendroEvents): a tick \
                 dendro drops after its retries is seen only once it has dropped 30 in a row"
            );
        }
        let result = self.serve();
        if result.is_err() {
            // What the batch still holds was never handed to dendro.
            let batch = std::mem::take(&mut self.batch);
            self.inner.counters.not_committed(batch.rows as u64);
            self.inner.backlog.remove(batch.held);
        }
        let joined = self.writer.join();
        // dendro's writer thread has ended: all it had to say is said.
        let late = self.checks.check();
        let failed = match (result, joined, late) {
            (Err(Fatal(why)), _, _) => Some(why),
            (Ok(()), Err(e), _) => Some(format!("dendro's writer failed: {e}")),
            (Ok(()), Ok(()), Err(why)) => Some(why),
            (Ok(()), Ok(()), Ok(())) => None,
        };
        if let Some(why) = failed {
            self.inner.counters.commit_failed();
            log::error!("the archive's writer path stopped: {why}");
            self.inner.fail(why);
        }
        self.inner.backlog.close();
    }

    fn serve(&mut self) -> Result<(), Fatal> {
        let config = self.inner.config.clone();
        loop {
            let room = config.commit_rows.saturating_sub(self.batch.rows);
            let deadline = self.batch.oldest.map(|oldest| oldest + config.commit_age);
            // Idle, it wakes to let go of the sources that ended, too.
            let deadline = match (deadline, self.reopen_at()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let (taken, stopping) = self.take(room, deadline);
            let mut taken = taken.into_iter();
            while let Some(work) = taken.next() {
                // A source opened or a frame applied at once waits on
                // dendro: a batch that falls due meanwhile is committed
                // first, and the rest follows; but no sooner than its age
                // after the last commit, so that thousands of sources
                // opening at once are not each a commit of their own.
                let mut done = Ok(());
                if self.last_commit.elapsed() >= config.commit_age && self.due(&config) {
                    done = self.commit();
                }
                done = match done {
                    Ok(()) => self.accept(work),
                    Err(fatal) => {
                        self.drop_work(&work);
                        Err(fatal)
                    }
                };
                if let Err(fatal) = done {
                    // What was taken and not yet reached is not committed.
                    taken.for_each(|work| self.drop_work(&work));
                    return Err(fatal);
                }
                self.inner.counters.set_oldest_taken(self.batch.oldest);
            }
            if stopping || self.due(&config) {
                self.commit()?;
                self.inner.counters.set_oldest_taken(self.batch.oldest);
            }
            if stopping && self.batch.is_empty() && self.inner.lock().items.is_empty() {
                return Ok(());
            }
            if !stopping {
                self.let_go_of_ended()?;
            }
        }
    }

    /// When dendro's writer is to be opened again, if it is: no source is
    /// open, nothing waits to be committed, and some sources that ended
    /// are still beating.
    fn reopen_at(&self) -> Option<Instant> {
        if self.beating == 0 || !self.open.is_empty() || !self.batch.is_empty() {
            return None;
        }
        Some(
            self.reopened
                .map_or_else(Instant::now, |at| at + REOPEN_EVERY),
        )
    }

    /// Once [due](Self::reopen_at), join dendro's writer and open the
    /// archive again: the new writer beats none of the sources that ended.
    fn let_go_of_ended(&mut self) -> Result<(), Fatal> {
        if self.reopen_at().is_none_or(|at| at > Instant::now()) {
            return Ok(());
        }
        // Only the file it opened: a file removed or replaced is a failure,
        // never a new archive.
        self.checks.check().map_err(Fatal)?;
        self.writer
            .join()
            .map_err(|e| Fatal(format!("dendro's writer failed: {e}")))?;
        self.checks.check().map_err(Fatal)?;
        self.writer = open_writer(&self.inner.path, &self.inner.encoder, &self.watch, false)
            .map_err(|e| {
                Fatal(format!(
                    "dendro's writer could not open the archive again: {e}"
                ))
            })?;
        log::debug!(
            "archive: dendro's writer opened again, letting go of {} source(s) whose connections ended",
            self.beating
        );
        self.beating = 0;
        self.reopened = Some(Instant::now());
        self.inner.counters.set_beating(0);
        self.inner.counters.writer_reopened();
        Ok(())
    }

    /// Whether the batch is to be committed now: it is full, or its oldest
    /// work has waited its age.
    fn due(&self, config: &ArchiveConfig) -> bool {
        self.batch.rows >= config.commit_rows
            || self
                .batch
                .oldest
                .is_some_and(|oldest| oldest.elapsed() >= config.commit_age)
    }

    /// Wait for work (until `deadline`, if a batch is waiting to be
    /// committed) and take what has arrived, up to about `room` rows;
    /// whether the archive is finishing.
    fn take(&self, room: usize, deadline: Option<Instant>) -> (Vec<Work>, bool) {
        let mut queue = self.inner.lock();
        while queue.items.is_empty() && !queue.stopping {
            let wait = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                // Nothing waits to be committed: sleep until work comes.
                None => Duration::from_secs(1),
            };
            if deadline.is_some() && wait.is_zero() {
                break;
            }
            let (woken, _) = self
                .inner
                .work
                .wait_timeout(queue, wait)
                .unwrap_or_else(|e| e.into_inner());
            queue = woken;
        }
        let mut taken = Vec::new();
        let mut rows = 0;
        while rows < room.max(1) {
            let Some(work) = queue.items.pop_front() else {
                break;
            };
            rows += work.rows();
            taken.push(work);
        }
        (taken, queue.stopping)
    }

    /// Take one piece of work into the batch, or apply it at once if
    /// nothing of its source waits there.
    fn accept(&mut self, work: Work) -> Result<(), Fatal> {
        let Some(open) = self.open.get_mut(&work.key) else {
            return self.open_source(work);
        };
        if let What::Rows(rows) = work.what {
            self.batch
                .push_rows(work.key, open, rows, (work.at, work.bytes));
            return Ok(());
        }
        let id = open.id;
        match self.batch.push_then(work.key, id, work) {
            Some(work) => self.apply(work),
            None => Ok(()),
        }
    }

    /// The first work of a source the writer path has not opened: its
    /// opening, or work for a source whose opening failed (dropped, and
    /// counted).
    fn open_source(&mut self, work: Work) -> Result<(), Fatal> {
        let What::Open { meta, uuid, fate } = work.what else {
            self.drop_work(&work);
            return Ok(());
        };
        match self.writer.add_source_with_uuid(meta, uuid.as_deref()) {
            Ok(writer) => {
                let id = writer.source_id();
                self.open.insert(
                    work.key,
                    Open {
                        writer,
                        id,
                        fate,
                        last_ts: HashMap::new(),
                    },
                );
                self.inner.counters.source_opened();
                self.beating += 1;
                self.inner.counters.set_beating(self.beating);
            }
            Err(e) => {
                fate.fail(format!("the archive could not open the source: {e}"));
                self.check_alive()?;
            }
        }
        self.inner.backlog.remove(work.bytes);
        Ok(())
    }

    /// Apply a frame of another kind than rows, or end a source.
    fn apply(&mut self, work: Work) -> Result<(), Fatal> {
        #[cfg(test)]
        self.journal(work.key, work.what.name());
        let Some(open) = self.open.get_mut(&work.key) else {
            self.drop_work(&work);
            return Ok(());
        };
        let applied = match work.what {
            What::Open { fate, .. } => {
                fate.fail("a source was opened twice on the writer path".into());
                Ok(())
            }
            What::Rows(_) => unreachable!("rows go into a batch"),
            What::Index { stream, row } => open.writer.caller_rows(stream, vec![row]),
            What::Segment {
                stream,
                meta,
                bytes,
                caller_index,
            } => open
                .writer
                .adopt_segment(&stream, &meta, &bytes, caller_index.as_deref())
                .map(|added| self.inner.counters.segment(added)),
            What::ClockOffset { ts, offset_ns } => open.writer.clock_offset(ts, offset_ns),
            What::Update { labels, metadata } => open.writer.set_identity(labels, metadata),
            What::End {
                complete,
                last_offset,
            } => {
                let open = self.open.remove(&work.key);
                match open {
                    // A source whose publisher said it was complete is
                    // finalized at the newest clock observation seen, as
                    // dendro's own subscriber does; the rest stay open,
                    // which is the truth for a live tail.
                    Some(open) if complete => {
                        let finalized = open.writer.finalize(last_offset.unwrap_or((0, 0)));
                        if finalized.is_ok() {
                            self.beating = self.beating.saturating_sub(1);
                            self.inner.counters.set_beating(self.beating);
                        }
                        finalized
                    }
                    _ => Ok(()),
                }
            }
        };
        self.inner.backlog.remove(work.bytes);
        if let Err(e) = applied {
            if let Some(open) = self.open.get(&work.key) {
                open.fate.fail(format!("the archive refused a frame: {e}"));
            }
            self.check_alive()?;
        }
        Ok(())
    }

    /// Work that is not applied (its source never opened): given back to
    /// the backlog, and its rows counted as dropped.
    fn drop_work(&self, work: &Work) {
        self.inner.counters.dropped(work);
        self.inner.backlog.remove(work.bytes);
    }

    /// dendro's writer still answers, or it has failed for good; and what
    /// it was handed before is in the archive, or it is not and the writer
    /// path stops. Without a source open there is nothing to wait on: what
    /// dendro says is checked as it is, and once more when it is joined.
    fn check_alive(&mut self) -> Result<(), Fatal> {
        if let Some(open) = self.open.values_mut().next() {
            open.writer
                .sync()
                .map_err(|e| Fatal(format!("dendro's writer failed: {e}")))?;
        }
        self.checks.check().map_err(Fatal)
    }

    /// Commit the batch, layer by layer, and wait until dendro has; the rows
    /// of a commit that failed, and all after it, are counted not committed.
    fn commit(&mut self) -> Result<(), Fatal> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        let batch = std::mem::take(&mut self.batch);
        let oldest = batch.oldest.unwrap_or(started);
        let mut done = Progress::default();
        let result = self.commit_layers(batch.layers, &mut done);
        let now = Instant::now();
        self.inner.counters.committed(
            done.rows as u64,
            done.apart as u64,
            done.commits,
            now - started,
            now.saturating_duration_since(oldest),
        );
        self.inner.backlog.remove(batch.held);
        self.last_commit = Instant::now();
        let (sources, ops) = result.inspect_err(|_| {
            self.inner
                .counters
                .not_committed((batch.rows - done.rows) as u64);
        })?;
        log::debug!(
            "archive: committed {} rows of {sources} source(s) ({} apart) in {} \
             transaction(s) and {ops} other frame(s) in {:?}, the oldest handed over {:?} before",
            batch.rows,
            batch.apart,
            done.commits,
            now - started,
            now.saturating_duration_since(oldest),
        );
        Ok(())
    }

    /// Hand the batch's layers to dendro, each tick waited for and checked
    /// before the next; how many sources' rows and other frames it held.
    fn commit_layers(
        &mut self,
        layers: Vec<Layer>,
        done: &mut Progress,
    ) -> Result<(usize, usize), Fatal> {
        // A frame applied at once since the last commit, and dropped by
        // dendro, stops the writer path before these rows are handed over.
        self.check_alive()?;
        let (mut sources, mut ops) = (0, 0);
        let taking = |e: dendro::Error| Fatal(format!("dendro's writer failed to take rows: {e}"));
        for layer in layers {
            #[cfg(test)]
            for (id, rows) in layer.rows.iter().chain(layer.apart.iter()) {
                let key = self.open.iter().find(|(_, o)| o.id == *id).map(|(k, _)| *k);
                self.journal(key.unwrap_or(u64::MAX), &format!("{} rows", rows.len()));
            }
            if !layer.rows.is_empty() {
                sources += layer.rows.len();
                let mut ticks: Vec<(i64, Vec<WalRow>)> = layer.rows.into_iter().collect();
                // Each stream's rows of a source together, in time order:
                // they go into the same index pages.
                for (_, rows) in &mut ticks {
                    rows.sort_by(|a, b| (a.stream.as_str(), a.ts).cmp(&(b.stream.as_str(), b.ts)));
                }
                let rows: usize = ticks.iter().map(|(_, rows)| rows.len()).sum();
                self.writer.wal_tick(ticks).map_err(taking)?;
                // dendro's writer takes what it is handed in order: once it
                // has answered this barrier, the tick is committed, or
                // dendro has said it dropped it.
                self.check_alive()?;
                done.rows += rows;
                done.commits += 1;
            }
            for (id, rows) in layer.apart {
                let n = rows.len();
                self.writer.wal_tick(vec![(id, rows)]).map_err(taking)?;
                self.check_alive()?;
                done.rows += n;
                done.apart += n;
                done.commits += 1;
            }
            for work in layer.then {
                ops += 1;
                self.apply(work)?;
            }
        }
        self.check_alive()?;
        Ok((sources, ops))
    }

    #[cfg(test)]
    fn journal(&self, key: SourceKey, what: &str) {
        let mut journal = self.inner.journal.lock().unwrap_or_else(|e| e.into_inner());
        journal.push(format!("{key} {what}"));
    }
}

#[cfg(test)]
mod tests;
