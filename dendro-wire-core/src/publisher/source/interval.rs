//! A source through connections and frames: what a new connection resets,
//! and what closing the frame under way does, at the end of an interval or
//! when a slot changes under rows already observed. A close keeps each
//! stream's latest row (rule 3), spends a `seq` (rule 6), and on a
//! connection queues the index entry the frame's rows need before it
//! (rules 2, 4 and 7), stamped no later than they are (rule 5), then the
//! frame, under the slot set its rows were observed against (rule 9).

use core::ops::Range;

use super::slots::write_index;
use super::{OnLink, Source};
use crate::codec::copy;
use crate::index::IndexKind;
use crate::kind::ROWS;
use crate::publisher::bytes::move_bytes;
use crate::publisher::config::PublisherConfig;
use crate::publisher::regions::Region;
use crate::publisher::row_path::TRACKS_NEWEST;
use crate::publisher::stats::count;
use crate::publisher::stream_rec::StreamRec;
use crate::rows::{split_row, tail, write_rows_head, ROWS_HEAD_BYTES};
use crate::storage::Storage;

impl<S: Storage> Source<S> {
    /// A new connection: nothing has gone out on it; its handshake is due
    /// at once, and its first entry is a `Full` (rules 1, 2, 8). Changes
    /// kept for a `Delta` of the last are moot.
    pub(in crate::publisher) fn connection_opened(&mut self) {
        self.link = OnLink {
            handshake_due: true,
            full_needed: self.indexed,
            ..OnLink::default()
        };
        self.clear_delta();
    }

    /// The connection ended: changes kept for a `Delta` are moot.
    pub(in crate::publisher) fn connection_closed(&mut self) {
        self.link = OnLink::default();
        self.clear_delta();
    }

    /// The index entry the frame under way needs before it, if any: a
    /// `Full` when one is owed (the connection's first, rule 2; every
    /// `full_every` intervals, rule 7; after an entry was lost, or when the
    /// changes outgrew what a `Delta` keeps), else a `Delta` if slots
    /// changed since the last entry.
    fn entry_due(&self, config: &PublisherConfig) -> Option<IndexKind> {
        if !self.indexed {
            return None;
        }
        let delta = self.regions.len(Region::Delta);
        let full = self.link.full_needed
            || self.delta_lost
            || u64::from(self.intervals_since_full) >= config.full_every
            || self.index_overhead + delta > config.frame_buffer;
        match (full, delta > 0) {
            (true, _) => Some(IndexKind::Full),
            (false, true) => Some(IndexKind::Delta),
            (false, false) => None,
        }
    }

    /// The end of an interval: the frames made due before it began and
    /// still unpolled are lost in transit, and the frame under way closes.
    pub(in crate::publisher) fn end_interval(&mut self, connected: bool, config: &PublisherConfig) {
        self.drop_earlier();
        self.intervals_since_full = self.intervals_since_full.saturating_add(1);
        self.close_frame(connected, config);
        self.regions.interval_ended();
    }

    /// Close the `Rows` frame under way and start an
    /// empty one: at the end of every interval (rule 6), and before a slot
    /// changes under rows already observed, so that those go out under the
    /// slots they were observed against (rule 9). On a connection the
    /// frame is queued, the entry its rows need first, and on the
    /// connection's first the latest row of every other stream after its
    /// own (rule 3); with none, its rows belong to no connection.
    pub(super) fn close_frame(&mut self, connected: bool, config: &PublisherConfig) {
        let seq = self.seq;
        self.seq = seq.wrapping_add(1);
        let rows = self.rows;
        self.rows = 0;
        count(&mut self.stats.rows_observed, u64::from(rows));
        // The newest of them all: kept by the row path, or found here (and
        // the earliest with it, for the entry's stamp).
        self.observed |= rows > 0;
        let span = match TRACKS_NEWEST {
            true => None,
            false => {
                let frame = self.storage.bytes().get(self.regions.frame());
                Some(ts_span(frame.unwrap_or(&[]), rows))
            }
        };
        if let Some((_, newest)) = span {
            self.last_ts = self.last_ts.max(newest);
        }
        self.keep_latest(seq);
        if !connected {
            count(&mut self.stats.rows_unsent, u64::from(rows));
            self.regions.discard_frame();
            return;
        }
        let kind = self.entry_due(config);
        let opening = !self.link.opening_due;
        // The latest rows a connection's first frame carries beside its
        // own: of streams not in it, observed against the slots as they
        // are (rule 3 yields to rule 9). Only on a connection's first frame:
        // reading every record at every other cost the machine 3% of its
        // instructions on the host.
        let (mut extra_len, mut extra_rows, mut earliest) = (0, 0u32, i64::MAX);
        for i in (0..self.streams).filter(|_| opening) {
            let Some((slot, ts)) = self.repeatable(i, seq) else {
                continue;
            };
            earliest = earliest.min(ts);
            extra_len += slot.len();
            extra_rows += 1;
        }
        let frame = self.regions.frame();
        // The rows' earliest `ts` stamps the entry before them, if one is
        // due: the frame is walked for it then, and only then.
        if kind.is_some() {
            let bytes = self.storage.bytes().get(frame.clone()).unwrap_or(&[]);
            earliest = earliest.min(span.unwrap_or_else(|| ts_span(bytes, rows)).0);
        }
        // An entry that brings in slots the subscriber may lack (a change,
        // a `Full` for a lost entry or a new connection), as against rule
        // 7's `Full` of slots unchanged.
        let owed = self.link.full_needed || self.delta_lost || self.regions.len(Region::Delta) > 0;
        // Rule 5: no later than any row after it; with none, after every
        // row read against other slots (the floor, once the slots changed
        // after a row), or just after the newest row before it.
        let stamp = match (rows + extra_rows, self.observed) {
            (0, true) if owed && self.floor != i64::MIN => self.floor,
            (0, true) => self.last_ts.saturating_add(1),
            (0, false) => 0,
            _ => earliest,
        };
        let entry = kind.map_or(0, |k| self.index_len(k));
        let (head_at, frame_len) = (frame.start + entry, frame.len() + extra_len);
        let laid = self.ensure(head_at + frame_len).is_ok()
            && self
                .lay_out(seq, kind.map(|k| (k, stamp)), (rows, extra_rows), opening)
                .is_some();
        if !laid {
            // Storage smaller than sizing says it needs: the frame is lost
            // in transit, as on a link too slow for it.
            self.frame_lost(rows, kind.is_some());
            self.regions.discard_frame();
            return;
        }
        // Queued first: emptying the Delta region moves what follows it.
        self.regions.enqueue(entry + frame_len);
        if let Some(kind) = kind {
            // A row after an entry owed is not earlier than it: read by
            // time (rule 5) it would fall under whatever entry came before,
            // which may hold other slots.
            if owed && self.observed {
                self.floor = self.floor.max(stamp);
            }
            if kind == IndexKind::Full {
                self.link.full_needed = false;
                self.delta_lost = false;
                self.intervals_since_full = 0;
            }
            self.clear_delta();
        }
        if opening {
            self.link.opening_due = true;
            self.repeated = extra_rows;
        }
    }

    /// Write the closing frame into the storage, which holds it: the entry
    /// of `kind` stamped `stamp` at the frame's place, the frame's rows
    /// moved after it, then on an `opening` the latest rows it repeats, and
    /// its head (`rows` observed, and repeated).
    fn lay_out(
        &mut self,
        seq: u64,
        entry: Option<(IndexKind, i64)>,
        (rows, extra_rows): (u32, u32),
        opening: bool,
    ) -> Option<()> {
        let frame = self.regions.frame();
        let entry_len = entry.map_or(0, |(k, _)| self.index_len(k));
        let head_at = frame.start + entry_len;
        let area = self.regions.area_at();
        if entry_len > 0 && frame.len() > ROWS_HEAD_BYTES {
            let rows = frame.start + ROWS_HEAD_BYTES..frame.end;
            move_bytes(self.storage.bytes_mut(), rows, head_at + ROWS_HEAD_BYTES);
        }
        let mut at = head_at + frame.len();
        for i in (0..self.streams).filter(|_| opening) {
            let Some((slot, _)) = self.repeatable(i, seq) else {
                continue;
            };
            let (front, back) = self.storage.bytes_mut().split_at_mut_checked(area)?;
            let dst = back.get_mut(at - area..at - area + slot.len())?;
            copy(dst, front.get(slot.clone())?)?;
            at += slot.len();
        }
        let bytes = self.storage.bytes_mut();
        let head = bytes.get_mut(head_at..at)?;
        write_rows_head(
            head,
            self.ordinal,
            seq,
            self.state,
            rows + extra_rows,
            at - head_at,
        )?;
        if let Some((kind, stamp)) = entry {
            let (front, back) = bytes.split_at_mut_checked(area)?;
            let buf = back.get_mut(frame.start - area..head_at - area)?;
            let entry = (kind, stamp, self.state);
            write_index(
                front,
                &self.regions,
                self.ordinal,
                entry,
                self.index_overhead,
                buf,
            )
            .ok()?;
        }
        Some(())
    }

    /// Stream `i`'s latest row, if a connection's first frame of `seq`
    /// repeats it (rule 3): observed, not in this frame, and against the
    /// slots as they are. Where it lies, and its `ts`.
    fn repeatable(&self, i: u32, seq: u64) -> Option<(Range<usize>, i64)> {
        let bytes = self.storage.bytes();
        let rec = self.regions.record(bytes, i)?;
        let seen = rec.seen();
        if rec.latest_len() == 0 || seen == seq || seen < self.valid_from {
            return None;
        }
        let slot = self.regions.slot(rec.slot(), 0, rec.latest_len());
        let (_, ts) = bytes.get(slot.clone()).and_then(row_at)?;
        Some((slot, ts))
    }

    /// The last row of each stream in the frame under way, `seq`'s, is its
    /// latest now (rule 3): copied into its slot.
    fn keep_latest(&mut self, seq: u64) {
        let Some((table, slots, frame)) = self.regions.latest_and_frame(self.storage.bytes_mut())
        else {
            return;
        };
        for rec in StreamRec::all_mut(table).take(self.streams as usize) {
            let Some(from) = rec.take_last_at() else {
                continue;
            };
            let slot = rec.slot();
            let Some((len, _)) = frame.get(from..).and_then(row_at) else {
                continue;
            };
            let (Some(src), Some(dst)) =
                (frame.get(from..from + len), slots.get_mut(slot..slot + len))
            else {
                continue;
            };
            if let Some(()) = copy(dst, src) {
                rec.set_latest(len, seq);
            }
        }
    }

    /// A closing frame of `rows` the storage could not hold, after an entry
    /// if `entry`: both lost in transit, counted as the frames dropped on a
    /// slow link are, and the next entry a `Full`.
    fn frame_lost(&mut self, rows: u32, entry: bool) {
        // Seen as a gap if a Rows frame of the connection went or waits
        // before it.
        let mut queued = self.link.rows_sent;
        self.walk(self.regions.unpolled(), |kind, _| queued |= kind == ROWS);
        self.count_dropped_rows(queued, rows);
        if entry {
            count(&mut self.stats.frames_unsent, 1);
            self.link.full_needed = true;
        }
    }
}

/// The encoded size and the `ts` of the row at the front of `bytes`. Out
/// of line: inlined where it is used, it took more of a device's flash
/// (`cargo xtask firmware` prints the footprint).
#[inline(never)]
fn row_at(bytes: &[u8]) -> Option<(usize, i64)> {
    let mut rest = bytes;
    let (_, fixed, _) = split_row(&mut rest)?;
    Some((bytes.len() - rest.len(), tail(fixed).ts.get()))
}

/// The earliest and the newest `ts` of the `count` rows of the `Rows`
/// frame `frame`: `(i64::MAX, i64::MIN)` if it has none.
fn ts_span(frame: &[u8], count: u32) -> (i64, i64) {
    let (mut at, mut earliest, mut newest) = (ROWS_HEAD_BYTES, i64::MAX, i64::MIN);
    for _ in 0..count {
        let Some((len, ts)) = frame.get(at..).and_then(row_at) else {
            break;
        };
        earliest = earliest.min(ts);
        newest = newest.max(ts);
        at += len;
    }
    (earliest, newest)
}
