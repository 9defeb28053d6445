//! A source through connections and intervals: what a new connection
//! resets, and what ending an interval keeps (each stream's latest row,
//! rule 3), spends (a `seq`, rule 6), schedules (the handshake, a `Full` or
//! `Delta`, the `Rows` frame: rules 1, 2, 6 and 7) and stamps (rule 5).

use zerocopy::little_endian::{U32, U64};
use zerocopy::FromBytes;

use super::config::PublisherConfig;
use super::regions::{Region, StreamRec, REC, UNSEEN};
use super::source::{Due, Sent, Source};
use crate::codec::copy;
use crate::index::IndexKind;
use crate::rows::{split_row, tail, write_rows_head, ROWS_HEAD_BYTES};
use crate::storage::Storage;

impl<S: Storage> Source<S> {
    /// A new connection: nothing has gone out on it, and changes kept for
    /// a `Delta` of the last are moot, since it opens with a `Full`.
    pub(super) fn connection_opened(&mut self) {
        self.sent = Sent::default();
        self.clear_delta();
    }

    /// The connection ended: changes kept for a `Delta` are moot.
    pub(super) fn connection_closed(&mut self) {
        self.clear_delta();
    }

    /// End the interval for this source, whose frames of the last are all
    /// gone (polled or dropped); `false` if no connection took its rows.
    pub(super) fn end_interval(
        &mut self,
        source: u32,
        interval: u64,
        connected: bool,
        config: &PublisherConfig,
    ) -> bool {
        self.release_held();
        let seq = self.seq;
        self.seq = seq.wrapping_add(1);
        let opening = connected && !self.sent.rows;
        // The latest rows a connection's first frame carries beside this
        // interval's: their size, count, and earliest timestamp.
        let (mut extra_len, mut extra_rows, mut earliest) = (0, 0u32, i64::MAX);
        let parts = self.regions.latest_and_frame(self.storage.bytes_mut());
        if let Some((table, slots, frame)) = parts {
            for rec in table.chunks_exact_mut(REC).take(self.streams as usize) {
                let Ok(rec) = StreamRec::mut_from_bytes(rec) else {
                    break;
                };
                let slot = rec.slot.get() as usize;
                if rec.last_at.get() != UNSEEN {
                    // This interval's last row of the stream is its latest
                    // now (rule 3).
                    let from = rec.last_at.get() as usize;
                    rec.last_at = U32::new(UNSEEN);
                    rec.seen = U64::new(interval);
                    let Some((len, ts)) = frame.get(from..).and_then(row_at) else {
                        continue;
                    };
                    let src = frame.get(from..from + len);
                    let dst = slots.get_mut(slot..slot + len);
                    if let Some(()) = src.zip(dst).and_then(|(src, dst)| copy(dst, src)) {
                        rec.len = U32::new(len as u32);
                        self.last_ts = self.last_ts.max(ts);
                    }
                } else if opening && rec.len.get() > 0 {
                    if let Some((len, ts)) = slots.get(slot..).and_then(row_at) {
                        earliest = earliest.min(ts);
                        extra_len += len;
                        extra_rows += 1;
                    }
                }
            }
        }
        if !connected {
            self.reset_rows();
            return false;
        }
        let regions = &self.regions;
        let frame_len = regions.frame_len();
        let mut due = Due {
            handshake: !self.sent.handshake,
            index: None,
            index_encoded: false,
            rows: true,
            opening,
            seq,
            stamp: self.last_ts,
            state: self.state(),
            // An opening carries the latest rows beside the interval's;
            // for any other frame there are none.
            rows_len: frame_len + extra_len,
            rows_count: self.rows + extra_rows,
            rows_observed: self.rows,
        };
        if self.indexed {
            self.intervals_since_full += 1;
            let delta = regions.len(Region::Delta);
            let full = !self.sent.full
                || self.intervals_since_full >= config.full_every
                || self.delta_lost
                || self.index_overhead + delta > config.frame_buffer;
            due.index = if full {
                Some(IndexKind::Full)
            } else if delta > 0 {
                Some(IndexKind::Delta)
            } else {
                None
            };
            if due.index.is_some() {
                // Rule 5: the entry is stamped no later than any row sent
                // after it — this frame's, and on an opening the latest of
                // every stream — and with nothing observed, the newest row
                // before it.
                let frame = self.storage.bytes().get(regions.frame());
                due.stamp = match frame.and_then(|f| earliest_ts(f, self.rows, earliest)) {
                    Some(ts) if self.rows > 0 || extra_rows > 0 => ts,
                    _ if extra_rows > 0 => earliest,
                    _ => self.last_ts,
                };
            }
        }
        if !opening {
            let (state, count) = (self.state(), self.rows);
            let head = self.storage.bytes_mut().get_mut(regions.frame());
            let _ = head.and_then(|h| write_rows_head(h, source, seq, state, count, frame_len));
        }
        self.due = due;
        // Held for polling; the next interval's rows go in after it.
        self.regions.hold_frame();
        self.rows = 0;
        true
    }
}

/// The encoded size and the `ts` of the row at the front of `bytes`. Out
/// of line: inlined where it is used, it was 100 bytes more of a device's
/// flash (the agent's flash as `cargo xtask firmware` prints it).
#[inline(never)]
fn row_at(bytes: &[u8]) -> Option<(usize, i64)> {
    let mut rest = bytes;
    let (_, fixed, _) = split_row(&mut rest)?;
    Some((bytes.len() - rest.len(), tail(fixed).ts.get()))
}

/// The earliest of `earliest` and the `ts` of the `count` rows of the
/// `Rows` frame `frame`.
fn earliest_ts(frame: &[u8], count: u32, mut earliest: i64) -> Option<i64> {
    let mut rest = frame.get(ROWS_HEAD_BYTES..)?;
    for _ in 0..count {
        let (_, fixed, _) = split_row(&mut rest)?;
        earliest = earliest.min(tail(fixed).ts.get());
    }
    Some(earliest)
}
