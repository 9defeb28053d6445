//! A source's frames due: taking the next one polled, counting what
//! waits, and dropping what a slow link or a new connection loses. A frame
//! not polled before the interval after its own ends is lost in transit:
//! its `seq` stays spent (rule 6), and so is every frame after an entry
//! lost with it, whose rows no subscriber could match (rule 9). A
//! connection's first `Rows` frame, and the entries before it, are never
//! dropped while the connection lasts: the frames after them are, so that
//! every `Rows` frame lost leaves a gap the subscriber sees (a `seq`
//! skipped after one it has).

use core::ops::Range;

use super::{Dropped, Source};
use crate::kind;
use crate::publisher::bytes::{frame_len_at, le_u32};
use crate::publisher::config::Transmit;
use crate::publisher::error::PublishError;
use crate::publisher::regions::Region;
use crate::publisher::stats::{count, Waiting};
use crate::rows::ROWS_HEAD_BYTES;
use crate::storage::Storage;
use crate::LENGTH_PREFIX_BYTES;

/// Where a `Rows` frame's count of rows is, from its length prefix on.
const COUNT_AT: usize = ROWS_HEAD_BYTES - 4;
/// Where the low word of its `seq` is: after the length, the kind and the
/// source.
const SEQ_AT: usize = LENGTH_PREFIX_BYTES + 1 + 4;

impl<S: Storage> Source<S> {
    /// Its handshake is due (rules 1, 8).
    pub(in crate::publisher) fn handshake_due(&self) -> bool {
        self.link.handshake_due
    }

    /// Where its handshake is.
    pub(in crate::publisher) fn handshake(&self) -> Range<usize> {
        self.regions.range(Region::Handshake)
    }

    /// Frames wait in its queue.
    pub(in crate::publisher) fn has_queued(&self) -> bool {
        !self.regions.unpolled().is_empty()
    }

    /// Where the next frame of its queue is.
    pub(in crate::publisher) fn next_queued(&self) -> Range<usize> {
        let unpolled = self.regions.unpolled();
        // Storage that shrank under the queue is found by `take`.
        let queued = self.storage.bytes().get(unpolled.clone());
        let len = queued.and_then(frame_len_at).unwrap_or(unpolled.len());
        unpolled.start..unpolled.start + len
    }

    /// Take the frame due at `range`, its handshake if `handshake`: record
    /// that it went out, and say what it is.
    pub(in crate::publisher) fn take(
        &mut self,
        handshake: bool,
        range: Range<usize>,
    ) -> Result<Transmit, PublishError> {
        let shrank = self.shrank();
        let frame = self.storage.bytes().get(range).ok_or(shrank)?;
        let mut t = Transmit {
            len: frame.len(),
            kind: kind::HANDSHAKE,
            source: self.ordinal,
            rows: 0,
        };
        count(&mut self.stats.frames_sent, 1);
        if handshake {
            self.link.handshake_due = false;
            self.link.handshake_sent = true;
            return Ok(t);
        }
        t.kind = *frame.get(LENGTH_PREFIX_BYTES).ok_or(shrank)?;
        if t.kind == kind::ROWS {
            // The frames dropped between the last polled and it are a gap
            // the subscriber sees (on the connection's first there are
            // none: what was dropped while it waited came after it).
            let seq = le_u32(frame.get(SEQ_AT..SEQ_AT + 4).ok_or(shrank)?);
            if self.link.rows_sent {
                let shown = seq.wrapping_sub(self.polled_seq).wrapping_sub(1);
                self.unseen_gap = self.unseen_gap.saturating_sub(shown);
            }
            self.polled_seq = seq;
            t.rows = le_u32(frame.get(COUNT_AT..COUNT_AT + 4).ok_or(shrank)?);
            let mut rows_sent = self.link.rows_sent;
            let repeated = self.repeated_in(&mut rows_sent);
            self.link.rows_sent = true;
            count(&mut self.stats.rows_sent, u64::from(t.rows - repeated));
            count(&mut self.stats.rows_repeated, u64::from(repeated));
        }
        self.regions.polled(t.len);
        Ok(t)
    }

    /// Drop every frame due, counting it as `why` says; on a connection
    /// that goes on, but its first `Rows` frame and the entries before it.
    pub(in crate::publisher) fn drop_due(&mut self, why: Dropped) {
        let unpolled = self.regions.unpolled();
        let from = match why {
            Dropped::Lost => unpolled.start + self.opening_len(),
            Dropped::Unsent => unpolled.start,
        };
        self.drop_queued(from.min(unpolled.end)..unpolled.end, why);
        if why == Dropped::Unsent {
            // Dropped after the last Rows frame the connection carried:
            // no subscriber saw them lost.
            let unseen = u64::from(core::mem::take(&mut self.unseen_gap));
            self.stats.frames_dropped = self.stats.frames_dropped.saturating_sub(unseen);
            count(&mut self.stats.frames_unsent, unseen);
            // A handshake stays due on a connection that goes on.
            count(
                &mut self.stats.frames_unsent,
                u64::from(self.link.handshake_due),
            );
        }
    }

    /// What it has due and not yet polled, added to `w`.
    pub(in crate::publisher) fn add_waiting(&self, w: &mut Waiting) {
        if self.link.handshake_due {
            w.frames += 1;
            w.bytes += self.regions.len(Region::Handshake);
        }
        let unpolled = self.regions.unpolled();
        w.bytes += unpolled.len();
        let mut rows_sent = self.link.rows_sent;
        self.walk(unpolled, |kind, count| {
            w.frames += 1;
            if kind == kind::ROWS {
                w.rows += u64::from(count - self.repeated_in(&mut rows_sent));
            }
        });
    }

    /// Call `f` with the kind and (for `Rows`) the row count of each frame
    /// queued in `range`, in order.
    pub(super) fn walk(&self, range: Range<usize>, mut f: impl FnMut(u8, u32)) {
        let Some(mut rest) = self.storage.bytes().get(range) else {
            return;
        };
        while let Some(len) = frame_len_at(rest) {
            let (Some(frame), Some(tail)) = (rest.get(..len), rest.get(len..)) else {
                return;
            };
            let kind = frame.get(LENGTH_PREFIX_BYTES).copied().unwrap_or(0);
            let count = frame.get(COUNT_AT..COUNT_AT + 4).map_or(0, le_u32);
            f(kind, if kind == kind::ROWS { count } else { 0 });
            rest = tail;
        }
    }

    /// The rows rule 3 repeated in the next `Rows` frame of the queue, given
    /// whether one was polled on the connection before it (`rows_sent`,
    /// which it then sets): only the connection's first repeats any.
    fn repeated_in(&self, rows_sent: &mut bool) -> u32 {
        let first = !core::mem::replace(rows_sent, true);
        match first && self.link.opening_due {
            true => self.repeated,
            false => 0,
        }
    }

    /// The bytes at the front of the unpolled queue a slow link may not
    /// drop: the connection's first `Rows` frame while it waits, and the
    /// entries before it. Dropped, it would take with it the only `seq` a
    /// subscriber could see the frames after it lost against, and the
    /// repeats of rule 3.
    fn opening_len(&self) -> usize {
        if self.link.rows_sent || !self.link.opening_due {
            return 0;
        }
        // The connection's first Rows frame is the first it closed: only
        // its own entry, if any, can be before it.
        let Some(queued) = self.storage.bytes().get(self.regions.unpolled()) else {
            return 0;
        };
        let first = frame_len_at(queued).unwrap_or(0);
        match queued.get(LENGTH_PREFIX_BYTES) {
            Some(&kind::INDEX) => first + queued.get(first..).and_then(frame_len_at).unwrap_or(0),
            _ => first,
        }
    }

    /// The end of an interval: the frames made due before it began and
    /// still unpolled are lost in transit, but for a connection's first
    /// `Rows` frame and the entries before it; and with them every frame
    /// after an entry among them (their rows could no longer be matched).
    /// The polled frames' room is given back.
    pub(super) fn drop_earlier(&mut self) {
        let earlier = self.regions.unpolled_earlier();
        let from = (earlier.start + self.opening_len()).min(earlier.end);
        let earlier = from..earlier.end;
        let mut all = false;
        self.walk(earlier.clone(), |kind, _| all |= kind == kind::INDEX);
        let range = match all {
            true => from..self.regions.unpolled().end,
            false => earlier,
        };
        self.drop_queued(range, Dropped::Lost);
        self.regions.release_polled(self.storage.bytes_mut());
    }

    /// Drop the frames queued in `range` (whole frames of the unpolled
    /// queue, after its kept opening if any), counting them as `why` says.
    fn drop_queued(&mut self, range: Range<usize>, why: Dropped) {
        // Most intervals find all polled: nothing to walk or count.
        if range.is_empty() {
            return;
        }
        // `Rows` frames, their rows, and index entries.
        let mut dropped = (0u64, 0u64, 0u64);
        // After a kept opening, none of them is the connection's first.
        let mut rows_sent = self.link.rows_sent || range.start != self.regions.unpolled().start;
        self.walk(range.clone(), |kind, count| match kind {
            kind::ROWS => {
                dropped.0 += 1;
                dropped.1 += u64::from(count - self.repeated_in(&mut rows_sent));
            }
            _ => dropped.2 += 1,
        });
        let (frames, rows, entries) = dropped;
        if entries > 0 {
            // The subscriber may lack what they carried.
            self.link.full_needed = true;
        }
        let queued = frames + entries;
        // A `Rows` frame of the connection went, or waits before them: the
        // subscriber sees their `seq`s skipped. (Only a new connection
        // drops its first; it starts over.)
        let seen = self.link.rows_sent || self.link.opening_due;
        let (gap, unseen) = match (why, seen) {
            (Dropped::Lost, true) => (frames, queued - frames),
            _ => (0, queued),
        };
        count(&mut self.stats.frames_dropped, gap);
        count(&mut self.stats.frames_unsent, unseen);
        self.unseen_gap = self.unseen_gap.saturating_add(gap as u32);
        match why {
            Dropped::Lost => count(&mut self.stats.rows_dropped, rows),
            Dropped::Unsent => count(&mut self.stats.rows_unsent, rows),
        }
        self.regions.remove(self.storage.bytes_mut(), range);
    }

    /// A `Rows` frame of `rows` lost in transit before it was queued, a gap
    /// a subscriber sees if `seen`.
    pub(super) fn count_dropped_rows(&mut self, seen: bool, rows: u32) {
        match seen {
            true => {
                count(&mut self.stats.frames_dropped, 1);
                self.unseen_gap = self.unseen_gap.saturating_add(1);
            }
            false => count(&mut self.stats.frames_unsent, 1),
        }
        count(&mut self.stats.rows_dropped, u64::from(rows));
    }
}
