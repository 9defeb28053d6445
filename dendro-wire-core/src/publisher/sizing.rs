//! What a source's storage and the frame buffer must hold, computed from a
//! declaration and the most it is given in an interval: the layout of
//! `regions.rs` added up, in `const fn`s a firmware sizes its arrays with.

use super::config::{SourceDecl, StreamNames};
use super::stream_rec::{FAST_NAME_BYTES, FAST_ROW_BYTES, FAST_WINDOW_BYTES, REC};
use crate::codec::LEN_BYTES;
use crate::framing::HEAD_BYTES;
use crate::rows::{ROWS_HEAD_BYTES, TAIL_BYTES};

/// The most a source is given in one interval, for [`SourceDecl::sizing`].
///
/// ```
/// use dendro_wire_core::{Budget, Map, Publisher, PublisherConfig, SourceDecl};
///
/// const DECL: SourceDecl<'static> = SourceDecl {
///     uuid: Some("6f1c2e3d-4b5a-4697-8877-665544332211"),
///     labels: Map::from_pairs(&[("device", "sensor-7")]),
///     metadata: Map::EMPTY,
///     clock_anchor_wall_ns: 0,
///     complete: false,
///     streams: &["adc/ch0", "adc/ch1"],
///     index_stream: None,
/// };
/// // Each stream read once an interval, 2 bytes a reading.
/// const SIZE: dendro_wire_core::Sizing = DECL.sizing(&Budget::rows(2, 2));
/// assert_eq!((SIZE.storage, SIZE.frame_buffer), (680, 224));
///
/// let mut storage = [0u8; SIZE.storage]; // on a device, a `static`
/// let mut p: Publisher<&mut [u8], 1> = Publisher::new(PublisherConfig {
///     full_every: 60,
///     frame_buffer: SIZE.frame_buffer,
/// });
/// let s = p.add_source(&DECL, &mut storage[..])?;
/// # Ok::<(), dendro_wire_core::PublishError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Budget {
    /// The longest `row` any of the source's streams is given, in bytes.
    pub largest_row: usize,
    /// The most rows observed on the source in one interval, all its
    /// streams together.
    pub rows_per_interval: usize,
    /// The most index slots the source holds at once (0 without an index).
    pub slots: usize,
    /// The longest slot, its key and value together, in bytes.
    pub largest_slot: usize,
    /// The most slots set or removed in one interval.
    pub slot_changes_per_interval: usize,
}

impl Budget {
    /// A source without index slots: at most `rows_per_interval` rows an
    /// interval, none longer than `largest_row` bytes.
    pub const fn rows(largest_row: usize, rows_per_interval: usize) -> Budget {
        Budget {
            largest_row,
            rows_per_interval,
            slots: 0,
            largest_slot: 0,
            slot_changes_per_interval: 0,
        }
    }

    /// This budget, with up to `slots` index slots of up to `largest_slot`
    /// bytes (key and value), `changes` of them set or removed an interval.
    pub const fn with_slots(self, slots: usize, largest_slot: usize, changes: usize) -> Budget {
        Budget {
            slots,
            largest_slot,
            slot_changes_per_interval: changes,
            ..self
        }
    }
}

/// What one source needs, from [`SourceDecl::sizing`]: the bytes of its
/// [`Storage`](crate::Storage), and the
/// [`frame_buffer`](crate::PublisherConfig::frame_buffer) that holds every
/// frame it makes (a publisher's is the largest of its sources').
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Sizing {
    /// The bytes of the source's storage.
    pub storage: usize,
    /// The frame buffer its frames need, length prefixes included.
    pub frame_buffer: usize,
    /// Of `frame_buffer`, the room a connection's first `Rows` frame keeps
    /// for the latest row of every stream (rule 3).
    pub latest_rows: usize,
    /// Of `storage` and of `frame_buffer` each, the room kept past the
    /// last row of an interval for the row path's fixed window
    /// ([`FAST_WINDOW_BYTES`](crate::FAST_WINDOW_BYTES)), so that every row
    /// takes the short path; 0 if no row within the budget can (every name
    /// longer than [`FAST_NAME_BYTES`](crate::FAST_NAME_BYTES), or rows
    /// longer than [`FAST_ROW_BYTES`](crate::FAST_ROW_BYTES)). Without it
    /// nothing is refused, but the last rows go the slow way.
    pub fast_path_room: usize,
}

impl SourceDecl<'_> {
    /// The storage and frame buffer this source needs for `budget`, so
    /// that nothing it is given within it is refused: the sum of what
    /// [`add_source`](crate::Publisher::add_source) keeps for it (its
    /// handshake and index stream name, a record of 64 bytes a stream, the
    /// latest row of each stream at its largest), its slots (the `Full`
    /// blob and the changes of an interval for the `Delta`), and the frames
    /// of two intervals: those that wait to be polled and the next
    /// interval's under way, whose last entry is made only as its frame
    /// closes, once the others are gone; and a connection's first `Rows`
    /// frame, which waits until it is polled however many intervals go by.
    /// An interval's frames are a `Rows` frame, one more for each slot
    /// change between its rows (rule 9), the
    /// entries before them, and on a connection's first the latest row of
    /// every other stream (rule 3). Both also keep room for the row path's
    /// fixed window past an interval's last row, so that every row of up
    /// to [`FAST_ROW_BYTES`](crate::FAST_ROW_BYTES) on a name of up to
    /// [`FAST_NAME_BYTES`](crate::FAST_NAME_BYTES) takes the short path.
    ///
    /// ```text
    /// latest   = Σ streams (4 + name + 20 + largest_row)
    /// row      = 4 + longest name + 20 + largest_row
    /// rows     = 37 + rows_per_interval × row             (one Rows frame)
    /// changes  = slot_changes_per_interval
    /// frames   = rows + changes × 37                      (an interval's Rows frames)
    /// full     = slots × (8 + largest_slot)
    /// delta    = changes × (9 + largest_slot)
    /// index    = 42 + index name + max(full, delta)        (0 without an index)
    /// entries  = (2 × changes + 1) × (42 + index name)
    ///            + 2 × (full + delta)                     (two intervals'; 0 without)
    /// repeated = latest − row, or latest with no rows     (rule 3's, once)
    /// opening  = rows                                     (a first frame waiting)
    /// fast     = max(0, 88 − row), or 0 if no row can take the short path
    /// storage  = handshake + index name + 64 × streams + latest
    ///            + full + delta + 2 × frames + entries + opening + repeated + fast
    /// frame_buffer = max(handshake, index, rows + latest + fast)
    /// ```
    ///
    /// A link that drops entries makes the next a `Full`; storage that
    /// cannot keep the changes of several intervals for a `Delta` does too,
    /// and nothing is refused. `tests/sizing.rs` holds these figures to the
    /// machine: within them nothing is refused, on a link that keeps up or
    /// one that drops; and a byte less of storage for a source's rows, or
    /// of frame buffer, is refused at the budget's worst.
    pub const fn sizing(&self, budget: &Budget) -> Sizing {
        let mut names = Names::NONE;
        let mut i = 0;
        while i < self.streams.len() {
            names = names.and(self.streams[i].len());
            i += 1;
        }
        self.sized(names, budget)
    }

    /// [`sizing`](Self::sizing), the streams named by `streams` in place of
    /// `self.streams`, as [`Publisher::add_source_named`](crate::Publisher::add_source_named)
    /// declares them.
    pub fn sizing_named<N: StreamNames + ?Sized>(&self, streams: &N, budget: &Budget) -> Sizing {
        let mut names = Names::NONE;
        for i in 0..streams.count() {
            names = names.and(streams.name(i).len());
        }
        self.sized(names, budget)
    }

    const fn sized(&self, names: Names, budget: &Budget) -> Sizing {
        let handshake = HEAD_BYTES
            + LEN_BYTES
            + match self.uuid {
                Some(uuid) => 1 + LEN_BYTES + uuid.len(),
                None => 1,
            }
            + self.labels.wire_bytes()
            + self.metadata.wire_bytes()
            + 8
            + 1;
        let Names {
            count,
            bytes,
            longest,
            shortest,
        } = names;
        let latest = bytes + count * (LEN_BYTES + TAIL_BYTES + budget.largest_row);
        let row = LEN_BYTES + longest + TAIL_BYTES + budget.largest_row;
        let rows = ROWS_HEAD_BYTES + budget.rows_per_interval * row;
        let changes = budget.slot_changes_per_interval;
        let frames = rows + changes * ROWS_HEAD_BYTES;
        let (index_name, full, delta, index, entries) = match self.index_stream {
            Some(name) => {
                let full = budget.slots * (2 * LEN_BYTES + budget.largest_slot);
                let delta = changes * (2 * LEN_BYTES + 1 + budget.largest_slot);
                let blob = if full > delta { full } else { delta };
                let overhead = index_bytes(name.len());
                let entries = (2 * changes + 1) * overhead + 2 * (full + delta);
                (name.len(), full, delta, overhead + blob, entries)
            }
            None => (0, 0, 0, 0, 0),
        };
        // A connection's first Rows frame waits however many intervals go
        // by before it is polled: a third interval's rows beside the two.
        // (The Full before it is one of `entries`.)
        let opening = rows;
        let repeated = match budget.rows_per_interval {
            0 => latest,
            _ => latest.saturating_sub(row),
        };
        // The window past the last row's start, less the row itself.
        let fast = match shortest <= FAST_NAME_BYTES && budget.largest_row <= FAST_ROW_BYTES {
            true => FAST_WINDOW_BYTES.saturating_sub(row),
            false => 0,
        };
        let storage = handshake
            + index_name
            + REC * count
            + latest
            + full
            + delta
            + 2 * frames
            + entries
            + opening
            + repeated
            + fast;
        let mut frame_buffer = rows + latest + fast;
        if handshake > frame_buffer {
            frame_buffer = handshake;
        }
        if index > frame_buffer {
            frame_buffer = index;
        }
        Sizing {
            storage,
            frame_buffer,
            latest_rows: latest,
            fast_path_room: fast,
        }
    }
}

/// What [`SourceDecl::sizing`] needs of a source's stream names.
#[derive(Clone, Copy)]
struct Names {
    count: usize,
    /// The names' bytes together.
    bytes: usize,
    longest: usize,
    /// `usize::MAX` for no names.
    shortest: usize,
}

impl Names {
    const NONE: Names = Names {
        count: 0,
        bytes: 0,
        longest: 0,
        shortest: usize::MAX,
    };

    /// These and one more name of `len` bytes.
    const fn and(self, len: usize) -> Names {
        Names {
            count: self.count + 1,
            bytes: self.bytes + len,
            longest: if len > self.longest {
                len
            } else {
                self.longest
            },
            shortest: if len < self.shortest {
                len
            } else {
                self.shortest
            },
        }
    }
}

/// An `Index` frame's bytes but its blob, on an index stream of
/// `name` bytes: the frame head, `source`, the name, `ts`, the kind, the
/// state and the blob's length.
pub(super) const fn index_bytes(name: usize) -> usize {
    HEAD_BYTES + 4 + LEN_BYTES + name + 8 + 1 + 16 + LEN_BYTES
}
