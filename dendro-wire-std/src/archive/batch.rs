//! What the writer path holds between connections and dendro: the work a
//! connection hands over ([`Work`]), what it knows of each open source
//! ([`Open`]), and the batch being made, in layers ([`Batch`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use dendro::archive::{CallerRow, SegmentMeta, SourceMeta, WalRow};
use dendro::writer::SourceWriter;

/// The streams whose last timestamp is kept for one source; rows of any
/// stream past these are each treated as not advancing, so a source that
/// names streams without end costs itself commits, not the writer path
/// memory.
const STREAMS_TRACKED: usize = 4096;

/// What a connection's source is known by on the writer path: unique for
/// the archive's life, unlike a connection's ordinal.
pub(super) type SourceKey = u64;

/// One piece of work handed over by a connection.
pub(super) struct Work {
    pub(super) key: SourceKey,
    /// When it was handed over.
    pub(super) at: Instant,
    /// What holding it costs, as the backlog counts it.
    pub(super) bytes: usize,
    pub(super) what: What,
}

/// What the work is: one frame's worth, or a source's start and end.
pub(super) enum What {
    Open {
        meta: SourceMeta,
        uuid: Option<String>,
        fate: Arc<Fate>,
    },
    Rows(Vec<WalRow>),
    Index {
        stream: String,
        row: CallerRow,
    },
    Segment {
        stream: String,
        meta: SegmentMeta,
        bytes: Vec<u8>,
        caller_index: Option<Vec<u8>>,
    },
    ClockOffset {
        ts: i64,
        offset_ns: i64,
    },
    Update {
        labels: BTreeMap<String, String>,
        metadata: BTreeMap<String, String>,
    },
    End {
        complete: bool,
        last_offset: Option<(i64, i64)>,
    },
}

impl What {
    /// What it is, in a word.
    #[cfg(test)]
    pub(super) fn name(&self) -> &'static str {
        match self {
            What::Open { .. } => "open",
            What::Rows(_) => "rows",
            What::Index { .. } => "index",
            What::Segment { .. } => "segment",
            What::ClockOffset { .. } => "clock_offset",
            What::Update { .. } => "update",
            What::End { .. } => "end",
        }
    }
}

impl Work {
    /// The rows it carries.
    pub(super) fn rows(&self) -> usize {
        match &self.what {
            What::Rows(rows) => rows.len(),
            _ => 0,
        }
    }
}

/// How a connection learns that the writer path could not apply one of its
/// frames: the next frame it hands over is refused with why, and the
/// connection ends.
#[derive(Debug, Default)]
pub(super) struct Fate(Mutex<Option<String>>);

impl Fate {
    pub(super) fn fail(&self, why: String) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(why);
    }

    pub(super) fn failed(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A source open on the writer path.
pub(super) struct Open {
    pub(super) writer: SourceWriter,
    /// Its dendro id.
    pub(super) id: i64,
    /// Its connection, told if one of its frames cannot be applied.
    pub(super) fate: Arc<Fate>,
    /// Each stream's last timestamp handed to a batch.
    pub(super) last_ts: HashMap<String, i64>,
}

impl Open {
    /// Whether `row` goes after its stream's last row; if so it is now the
    /// last.
    pub(super) fn advances(&mut self, row: &WalRow) -> bool {
        if let Some(last) = self.last_ts.get_mut(row.stream.as_str()) {
            let advances = row.ts > *last;
            *last = (*last).max(row.ts);
            return advances;
        }
        if self.last_ts.len() < STREAMS_TRACKED {
            self.last_ts.insert(row.stream.clone(), row.ts);
            return true;
        }
        false
    }
}

/// What waits to be committed, in layers: each layer's rows go in one
/// transaction (those whose stream's timestamp did not advance in one of
/// their source's own), then its frames of other kinds, in the order they
/// arrived. A source's rows go into its current layer; a frame of another
/// kind behind rows of its source follows that layer, and the source's
/// next rows go into the next: so each source's frames reach dendro in
/// stream order, while every source's rows share each layer's commit.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) layers: Vec<Layer>,
    /// Each source with work in the batch: the layer its next rows go
    /// into.
    pub(super) place: HashMap<SourceKey, usize>,
    /// Rows in all layers.
    pub(super) rows: usize,
    /// Of those, rows kept apart.
    pub(super) apart: usize,
    /// Bytes of rows' work, given back to the backlog once committed.
    pub(super) held: usize,
    /// When its oldest work was handed over.
    pub(super) oldest: Option<Instant>,
}

/// One layer of a [`Batch`].
#[derive(Default)]
pub(super) struct Layer {
    /// Rows whose stream's timestamp advanced, by dendro source id (so a
    /// transaction inserts each source's rows together, in the order of
    /// the archive's keys).
    pub(super) rows: BTreeMap<i64, Vec<WalRow>>,
    /// Rows whose stream's timestamp did not, each source's committed in a
    /// transaction of its own.
    pub(super) apart: BTreeMap<i64, Vec<WalRow>>,
    /// Frames of other kinds, applied after this layer's rows.
    pub(super) then: Vec<Work>,
}

impl Batch {
    pub(super) fn layer(&mut self, n: usize) -> &mut Layer {
        if self.layers.len() <= n {
            self.layers.resize_with(n + 1, Layer::default);
        }
        &mut self.layers[n]
    }

    pub(super) fn touch(&mut self, at: Instant) {
        self.oldest = Some(self.oldest.map_or(at, |oldest| oldest.min(at)));
    }

    /// `rows` of the source `key` (dendro id `open.id`) into its layer.
    pub(super) fn push_rows(
        &mut self,
        key: SourceKey,
        open: &mut Open,
        rows: Vec<WalRow>,
        work: (Instant, usize),
    ) {
        let n = *self.place.entry(key).or_insert(0);
        let (at, bytes) = work;
        self.touch(at);
        self.held += bytes;
        let count = rows.len();
        let layer = self.layer(n);
        let mut apart = 0;
        for row in rows {
            if open.advances(&row) {
                layer.rows.entry(open.id).or_default().push(row);
            } else {
                layer.apart.entry(open.id).or_default().push(row);
                apart += 1;
            }
        }
        self.rows += count;
        self.apart += apart;
    }

    /// Keep `work`, a frame of another kind from the source `key` (dendro
    /// id `id`), behind that source's rows; or give it back, to apply at
    /// once, if the batch holds nothing of that source.
    pub(super) fn push_then(&mut self, key: SourceKey, id: i64, work: Work) -> Option<Work> {
        let Some(&n) = self.place.get(&key) else {
            return Some(work);
        };
        self.touch(work.at);
        let behind_rows = self
            .layers
            .get(n)
            .is_some_and(|l| l.rows.contains_key(&id) || l.apart.contains_key(&id));
        if behind_rows {
            self.layer(n).then.push(work);
            self.place.insert(key, n + 1);
        } else {
            // Its last work here is a frame of another kind: this one goes
            // right after it.
            self.layer(n.saturating_sub(1)).then.push(work);
        }
        None
    }

    pub(super) fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}
