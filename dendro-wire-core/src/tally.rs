//! [`Tally`]: what a received stream did, counted frame by frame from the
//! subscriber's verdicts, in one vocabulary for every receiver.

use crate::frame::Frame;
use crate::subscriber::Admitted;

/// What a stream's frames did, as a subscriber judged them: the counts a
/// collector reports for a connection, `dendro-wire check` prints for a
/// capture and a device's decoder keeps, under the same names everywhere.
///
/// [`count`](Self::count) takes one [`Subscriber::admit`](crate::Subscriber::admit)
/// verdict; [`NAMES`](Self::NAMES) and [`counts`](Self::counts) list the
/// counts by name in the order they are reported. It holds twelve counters
/// and nothing else, so a device keeps one on its stack.
///
/// ```
/// use dendro_wire_core::{Frame, Handshake, Map, RowList, Rows, Subscriber, Tally};
///
/// let mut rules = Subscriber::<4>::new();
/// let mut tally = Tally::default();
/// let hs = Handshake { source: 0, uuid: None, labels: Map::EMPTY, metadata: Map::EMPTY,
///                      clock_anchor_wall_ns: 0, complete: false };
/// let keepalive = Rows { source: 0, seq: 0, index_state: (0, 0), rows: RowList::EMPTY };
/// for frame in [Frame::Handshake(hs), Frame::Rows(keepalive)] {
///     tally.count(&frame, rules.admit(&frame).unwrap());
/// }
/// assert_eq!((tally.frames, tally.sources, tally.rows_applied), (2, 1, 0));
/// ```
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tally {
    /// Frames read, unknown kinds included.
    pub frames: u64,
    /// Sources opened by a `Handshake`.
    pub sources: u64,
    /// `Index` entries applied.
    pub index_entries: u64,
    /// Rows applied.
    pub rows_applied: u64,
    /// Rows not applied: before their source's first `Full`, or built
    /// against another index state (rule 9).
    pub rows_skipped: u64,
    /// `Segment` frames applied.
    pub segments: u64,
    /// `ClockOffset` observations applied.
    pub clock_offsets: u64,
    /// `SourceUpdate` frames applied.
    pub source_updates: u64,
    /// Frames of a kind this build does not read, skipped (§7).
    pub unknown_skipped: u64,
    /// `seq` jumps: each a run of frames lost in transit.
    pub gaps: u64,
    /// Frames lost in those jumps: never more a source than its subscriber
    /// allows ([`SubscriberIn::allow_lost`](crate::SubscriberIn::allow_lost)).
    pub frames_lost: u64,
    /// `seq` regressions ([protocol §8.5](crate::protocol)), and jumps
    /// further than the connection could have lost frames (§8.17).
    pub seq_regressions: u64,
}

impl Tally {
    /// Count one frame that broke no rule, with the subscriber's verdict on
    /// it ([`Subscriber::admit`](crate::Subscriber::admit)).
    pub fn count(&mut self, frame: &Frame<'_>, admitted: Admitted) {
        self.frames += 1;
        match (admitted, frame) {
            (Admitted::Opened { .. }, _) => self.sources += 1,
            (Admitted::Index { .. }, _) => self.index_entries += 1,
            (Admitted::Rows(verdict), Frame::Rows(rows)) => {
                let n = rows.rows.len() as u64;
                match verdict.skip {
                    None => self.rows_applied += n,
                    Some(_) => self.rows_skipped += n,
                }
                if verdict.lost > 0 {
                    self.gaps += 1;
                    // A peer chooses its `seq`, and so how many frames it
                    // claims were lost.
                    self.frames_lost = self.frames_lost.saturating_add(verdict.lost);
                }
                self.seq_regressions += u64::from(verdict.regression);
            }
            (Admitted::Apply { .. }, Frame::Segment(_)) => self.segments += 1,
            (Admitted::Apply { .. }, Frame::ClockOffset(_)) => self.clock_offsets += 1,
            (Admitted::Apply { .. }, Frame::SourceUpdate(_)) => self.source_updates += 1,
            (Admitted::Unknown { .. }, _) => self.unknown_skipped += 1,
            // The verdict always fits its frame; nothing else to count.
            _ => {}
        }
    }

    /// The counts' names, in the order every report gives them (with the
    /// `serde` feature, the keys it serializes under): the one place they
    /// are written.
    pub const NAMES: [&'static str; 12] = [
        "frames",
        "sources",
        "index_entries",
        "rows_applied",
        "rows_skipped",
        "segments",
        "clock_offsets",
        "source_updates",
        "unknown_skipped",
        "gaps",
        "frames_lost",
        "seq_regressions",
    ];

    /// The counts, in the order of [`NAMES`](Self::NAMES): a report zips the
    /// two.
    pub fn counts(&self) -> [u64; 12] {
        [
            self.frames,
            self.sources,
            self.index_entries,
            self.rows_applied,
            self.rows_skipped,
            self.segments,
            self.clock_offsets,
            self.source_updates,
            self.unknown_skipped,
            self.gaps,
            self.frames_lost,
            self.seq_regressions,
        ]
    }
}

/// Sums tallies: a collector's connections, say.
impl core::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.frames += o.frames;
        self.sources += o.sources;
        self.index_entries += o.index_entries;
        self.rows_applied += o.rows_applied;
        self.rows_skipped += o.rows_skipped;
        self.segments += o.segments;
        self.clock_offsets += o.clock_offsets;
        self.source_updates += o.source_updates;
        self.unknown_skipped += o.unknown_skipped;
        self.gaps += o.gaps;
        self.frames_lost = self.frames_lost.saturating_add(o.frames_lost);
        self.seq_regressions += o.seq_regressions;
    }
}

/// One object keyed by [`Tally::NAMES`], in that order: what
/// `dendro-wire check --json` prints.
#[cfg(feature = "serde")]
impl serde::Serialize for Tally {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("Tally", Tally::NAMES.len())?;
        for (name, count) in Tally::NAMES.into_iter().zip(self.counts()) {
            out.serialize_field(name, &count)?;
        }
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_counts_line_up() {
        let tally = Tally {
            frames: 1,
            sources: 2,
            index_entries: 3,
            rows_applied: 4,
            rows_skipped: 5,
            segments: 6,
            clock_offsets: 7,
            source_updates: 8,
            unknown_skipped: 9,
            gaps: 10,
            frames_lost: 11,
            seq_regressions: 12,
        };
        let counts = tally.counts();
        assert_eq!(counts, core::array::from_fn(|i| i as u64 + 1));
        assert_eq!(
            (Tally::NAMES[3], Tally::NAMES[8]),
            ("rows_applied", "unknown_skipped")
        );
    }
}
