//! [`Publisher`]: frames for an agent that has no archive to tail, over the
//! core's publisher rules, into a bounded [`FrameQueue`].

use std::collections::BTreeMap;
use std::ops::Range;

use dendro_wire_core::{
    is_canonical_uuid, write_uuid, ClockOffset, Frame, Handshake, Index, IndexKind, Map,
    Publisher as Rules, Row, RowsBuilder, Rule, Segment, SlotSetHash, SourceUpdate, NO_INDEX_STATE,
};

use crate::queue::{FrameQueue, Pushed};

/// The most sources one publisher declares.
pub const MAX_SOURCES: usize = 1024;

/// How a [`Publisher`] paces full index state and bounds its queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublisherConfig {
    /// Re-send an indexed source's `Full` every this many intervals (rule 7),
    /// besides the one every connection opens with (rule 2).
    pub full_every: u64,
    /// The most frames waiting for the transport.
    pub queue_frames: usize,
    /// The most bytes waiting for the transport.
    pub queue_bytes: usize,
}

impl Default for PublisherConfig {
    fn default() -> Self {
        PublisherConfig {
            full_every: 60,
            queue_frames: 4096,
            queue_bytes: 16 << 20,
        }
    }
}

/// A source to declare: its identity, its streams, and whether it keeps an
/// index of slots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceConfig {
    /// The source's identity across connections; minted (a random v4 uuid)
    /// when `None`.
    pub uuid: Option<String>,
    /// The source's name.
    pub labels: BTreeMap<String, String>,
    /// Everything else; put the rows' `encoder` here.
    pub metadata: BTreeMap<String, String>,
    /// The anchor that pins the source's timeline.
    pub clock_anchor_wall_ns: i64,
    /// The streams rows are observed on.
    pub streams: Vec<String>,
    /// The `caller_rows` stream index entries land in, for a source that
    /// keeps an index; `None` for one that does not (its rows declare
    /// `NO_INDEX_STATE`).
    pub index_stream: Option<String>,
}

impl SourceConfig {
    /// An empty declaration.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Add a metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Add a stream.
    pub fn stream(mut self, name: impl Into<String>) -> Self {
        self.streams.push(name.into());
        self
    }

    /// Keep an index, whose entries land in `stream`.
    pub fn index(mut self, stream: impl Into<String>) -> Self {
        self.index_stream = Some(stream.into());
        self
    }

    /// Set the uuid.
    pub fn uuid(mut self, uuid: impl Into<String>) -> Self {
        self.uuid = Some(uuid.into());
        self
    }

    /// Set the clock anchor.
    pub fn clock_anchor(mut self, wall_ns: i64) -> Self {
        self.clock_anchor_wall_ns = wall_ns;
        self
    }
}

/// A declared source, by the order it was declared in; it is also the
/// ordinal its handshake takes on every connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceId(usize);

impl SourceId {
    /// The ordinal the source's frames carry.
    pub fn ordinal(self) -> u32 {
        self.0 as u32
    }
}

/// What a publisher has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PublisherStats {
    /// Intervals ended.
    pub intervals: u64,
    /// Connections opened with handshakes and full state.
    pub connections: u64,
    /// Rows in `Rows` frames queued for the transport.
    pub rows_queued: u64,
    /// Rows in `Rows` frames dropped: the queue was full or disconnected.
    pub rows_dropped: u64,
    /// `Rows` frames dropped.
    pub rows_frames_dropped: u64,
    /// Index entries too large to encode, not sent.
    pub index_entries_dropped: u64,
}

/// One declared source and what it must remember between intervals.
struct Source {
    config: SourceConfig,
    /// The seq of the next `Rows` frame; it outlives connections so that
    /// every interval has its own number.
    next_seq: u64,
    /// This interval's rows: stream, ts, wall_offset, and their bytes in
    /// `row_bytes`. Reused, so observing does not allocate once warm.
    pending: Vec<(usize, i64, i64, Range<usize>)>,
    row_bytes: Vec<u8>,
    /// The latest observation of every stream, for a connection's first
    /// `Rows` frame (rule 3).
    latest: Vec<Option<(i64, i64, Vec<u8>)>>,
    index: Option<SlotIndex>,
    /// The newest timestamp observed, for an index entry in an interval
    /// that observed nothing.
    last_ts: i64,
    intervals_since_full: u64,
    /// Whether a `Full` went out on this connection; a `Delta` goes only
    /// after one.
    full_sent: bool,
}

/// A source's slots, their hash, and what changed since the last entry.
#[derive(Default)]
struct SlotIndex {
    slots: BTreeMap<Vec<u8>, Vec<u8>>,
    hash: SlotSetHash,
    changed: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl SlotIndex {
    /// A slot as the hash sees it: key and value, length-prefixed so that no
    /// two different slots are the same bytes.
    fn slot_bytes(key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut b = Vec::with_capacity(8 + key.len() + value.len());
        b.extend_from_slice(&(key.len() as u32).to_le_bytes());
        b.extend_from_slice(key);
        b.extend_from_slice(&(value.len() as u32).to_le_bytes());
        b.extend_from_slice(value);
        b
    }

    fn set(&mut self, key: &[u8], value: &[u8]) {
        let new = Self::slot_bytes(key, value);
        match self.slots.insert(key.to_vec(), value.to_vec()) {
            Some(old) if old == value => return,
            Some(old) => self.hash.replace(&Self::slot_bytes(key, &old), &new),
            None => self.hash.insert(&new),
        }
        self.changed.insert(key.to_vec(), Some(value.to_vec()));
    }

    fn remove(&mut self, key: &[u8]) {
        if let Some(old) = self.slots.remove(key) {
            self.hash.remove(&Self::slot_bytes(key, &old));
            self.changed.insert(key.to_vec(), None);
        }
    }

    /// A `Full` blob: every slot, `u32 len | key | u32 len | value` each.
    fn full_blob(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for (k, v) in &self.slots {
            b.extend_from_slice(&Self::slot_bytes(k, v));
        }
        b
    }

    /// A `Delta` blob: each changed slot as `u32 len | key | u8 present`,
    /// then `u32 len | value` when present.
    fn delta_blob(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for (k, v) in &self.changed {
            b.extend_from_slice(&(k.len() as u32).to_le_bytes());
            b.extend_from_slice(k);
            match v {
                Some(v) => {
                    b.push(1);
                    b.extend_from_slice(&(v.len() as u32).to_le_bytes());
                    b.extend_from_slice(v);
                }
                None => b.push(0),
            }
        }
        b
    }
}

/// The publisher for an agent that has no archive to tail.
///
/// The agent declares its sources, then, every interval, observes rows and
/// changes index slots and calls [`end_interval`](Self::end_interval). Per
/// source, that sends index changes first (a `Delta` whose `state` is the
/// [`SlotSetHash`] of the whole slot set, or a `Full` every
/// [`full_every`](PublisherConfig::full_every) intervals), then exactly one
/// `Rows` frame, empty when nothing was observed (rules 4, 6, 7). A new
/// connection opens with every handshake from ordinal 0, a `Full` for every
/// indexed source, and a `Rows` frame carrying the latest observation of
/// every stream (rules 2, 3, 8).
///
/// It never waits on the transport: frames go into a bounded
/// [`FrameQueue`](crate::FrameQueue) that a transport thread drains, and a
/// frame that does not fit is dropped and counted, which the subscriber sees
/// as a `seq` gap.
///
/// ```
/// use dendro_wire_std::{FrameQueue, Publisher, PublisherConfig, SourceConfig};
///
/// let mut publisher = Publisher::new(PublisherConfig::default());
/// let cpu = publisher.add_source(
///     SourceConfig::new().label("source", "cpu").stream("cpu/usage").index("cpu/slots"),
/// )?;
/// let queue: FrameQueue = publisher.queue();
/// queue.connected(); // what a transport does when it connects
///
/// publisher.set_slot(cpu, b"cpu0", b"online");
/// publisher.observe(cpu, "cpu/usage", 1_000, 0, &[0; 32])?;
/// publisher.end_interval();
/// // Handshake, Full, and the first Rows frame.
/// assert_eq!(queue.len().0, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Publisher {
    config: PublisherConfig,
    queue: FrameQueue,
    sources: Vec<Source>,
    rules: Box<Rules<MAX_SOURCES>>,
    /// The sources handshaken on the current connection: a source declared
    /// after it opened is handshaken at the next interval.
    opened: usize,
    stats: PublisherStats,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("sources", &self.sources.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// A call the publisher refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublishError {
    /// More sources than [`MAX_SOURCES`].
    TooManySources,
    /// A stream the source did not declare.
    UnknownStream(String),
    /// A source's uuid that is not canonical lowercase 8-4-4-4-12 hex.
    NotACanonicalUuid(String),
    /// A frame the encoder refuses: labels, metadata or a segment too large
    /// for a frame (64 MiB).
    Encode(dendro_wire_core::Error),
}

impl std::fmt::Display for PublishError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PublishError::TooManySources => {
                write!(f, "a publisher declares at most {MAX_SOURCES} sources")
            }
            PublishError::UnknownStream(s) => {
                write!(f, "the source declared no stream named {s:?}")
            }
            PublishError::Encode(e) => write!(f, "{e}"),
            PublishError::NotACanonicalUuid(u) => write!(
                f,
                "the uuid {u:?} is not canonical lowercase 8-4-4-4-12 hex, the only form a \
                 handshake carries"
            ),
        }
    }
}

impl std::error::Error for PublishError {}

impl Publisher {
    /// A publisher with no sources and an unconnected queue.
    pub fn new(config: PublisherConfig) -> Self {
        Publisher {
            config,
            queue: FrameQueue::new(config.queue_frames, config.queue_bytes),
            sources: Vec::new(),
            rules: Box::new(Rules::new()),
            opened: 0,
            stats: PublisherStats::default(),
        }
    }

    /// The queue a transport drains.
    pub fn queue(&self) -> FrameQueue {
        self.queue.clone()
    }

    /// What the publisher has done so far.
    pub fn stats(&self) -> PublisherStats {
        self.stats
    }

    /// Declare a source. Its handshake goes out when the next connection
    /// opens; declare every source before the first interval.
    pub fn add_source(&mut self, mut config: SourceConfig) -> Result<SourceId, PublishError> {
        if self.sources.len() >= MAX_SOURCES {
            return Err(PublishError::TooManySources);
        }
        let uuid = config.uuid.get_or_insert_with(mint_uuid);
        // Refused here rather than at every handshake.
        if !is_canonical_uuid(uuid.as_bytes()) {
            return Err(PublishError::NotACanonicalUuid(uuid.clone()));
        }
        // A handshake that could not be encoded would stop every connection
        // from opening; it is refused now instead.
        handshake_of(&config, 0, |h| h.buffer_len()).map_err(PublishError::Encode)?;
        let streams = config.streams.len();
        let index = config.index_stream.as_ref().map(|_| SlotIndex::default());
        self.sources.push(Source {
            config,
            next_seq: 0,
            pending: Vec::new(),
            row_bytes: Vec::new(),
            latest: vec![None; streams],
            index,
            last_ts: 0,
            intervals_since_full: 0,
            full_sent: false,
        });
        Ok(SourceId(self.sources.len() - 1))
    }

    /// Observe one row on a declared stream, for this interval's `Rows`
    /// frame.
    pub fn observe(
        &mut self,
        source: SourceId,
        stream: &str,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Result<(), PublishError> {
        let s = &mut self.sources[source.0];
        let Some(i) = s.config.streams.iter().position(|n| n == stream) else {
            return Err(PublishError::UnknownStream(stream.to_string()));
        };
        s.last_ts = s.last_ts.max(ts);
        let at = s.row_bytes.len();
        s.row_bytes.extend_from_slice(row);
        s.pending.push((i, ts, wall_offset, at..at + row.len()));
        let latest = s.latest[i].get_or_insert_with(|| (ts, wall_offset, Vec::new()));
        latest.0 = ts;
        latest.1 = wall_offset;
        latest.2.clear();
        latest.2.extend_from_slice(row);
        Ok(())
    }

    /// Set an index slot (add it or change it); sent as a `Delta` at the end
    /// of the interval. A source declared without an index ignores it.
    pub fn set_slot(&mut self, source: SourceId, key: &[u8], value: &[u8]) {
        if let Some(index) = &mut self.sources[source.0].index {
            index.set(key, value);
        }
    }

    /// Remove an index slot.
    pub fn remove_slot(&mut self, source: SourceId, key: &[u8]) {
        if let Some(index) = &mut self.sources[source.0].index {
            index.remove(key);
        }
    }

    /// The source's index state now.
    pub fn index_state(&self, source: SourceId) -> (u64, u64) {
        match &self.sources[source.0].index {
            Some(index) => index.hash.state(),
            None => NO_INDEX_STATE,
        }
    }

    /// Send one clock-drift observation now.
    pub fn clock_offset(
        &mut self,
        source: SourceId,
        ts: i64,
        offset_ns: i64,
    ) -> Result<Pushed, PublishError> {
        let frame = Frame::ClockOffset(ClockOffset {
            source: source.ordinal(),
            ts,
            offset_ns,
        });
        self.push_frame(&frame)
    }

    /// Replace the source's labels and metadata, and send a `SourceUpdate`
    /// carrying both whole. Maps too large for a frame are refused, and the
    /// source keeps its identity.
    pub fn update_identity(
        &mut self,
        source: SourceId,
        labels: BTreeMap<String, String>,
        metadata: BTreeMap<String, String>,
    ) -> Result<Pushed, PublishError> {
        let pushed = {
            let (l, m) = (pairs(&labels), pairs(&metadata));
            self.push_frame(&Frame::SourceUpdate(SourceUpdate {
                source: source.ordinal(),
                ts: wall_now_ns(),
                labels: Map::from_pairs(&l),
                metadata: Map::from_pairs(&m),
            }))?
        };
        let s = &mut self.sources[source.0];
        s.config.labels = labels;
        s.config.metadata = metadata;
        Ok(pushed)
    }

    /// Pass a sealed segment through, for catch-up.
    pub fn segment(&mut self, segment: &Segment<'_>) -> Result<Pushed, PublishError> {
        self.push_frame(&Frame::Segment(*segment))
    }

    /// Queue a frame now. The queue refuses it while a new connection waits
    /// for its opening sequence, which it would otherwise precede; a frame
    /// for a source not yet handshaken on this connection is dropped too.
    fn push_frame(&self, frame: &Frame<'_>) -> Result<Pushed, PublishError> {
        let mut buf = self.queue.buffer();
        encode_into(frame, &mut buf).map_err(PublishError::Encode)?;
        if frame.source().is_some_and(|s| s as usize >= self.opened) {
            return Ok(Pushed::Disconnected);
        }
        Ok(self.queue.push(buf))
    }

    /// End the interval: per source, index changes first, then exactly one
    /// `Rows` frame. On a new connection, the opening sequence instead.
    pub fn end_interval(&mut self) {
        self.stats.intervals += 1;
        if let Some(epoch) = self.queue.pending_opening() {
            self.rules.reset();
            let frames = self.open(0);
            if self.queue.push_opening(epoch, frames) {
                self.stats.connections += 1;
                self.opened = self.sources.len();
            } else {
                self.opened = 0;
            }
        } else {
            let was_open = self.opened;
            if was_open < self.sources.len() && self.queue.is_open() {
                // Sources declared since the connection opened: a handshake
                // may come at any point in a stream.
                let frames = self.open(was_open);
                self.queue.push_all(frames);
                self.opened = self.sources.len();
            }
            for i in 0..was_open {
                self.interval(i);
            }
            // With no connection ever opened, no frame is built; the rows
            // are dropped all the same, and counted.
            for s in &self.sources[self.opened..] {
                self.stats.rows_dropped += s.pending.len() as u64;
            }
        }
        for s in &mut self.sources {
            s.pending.clear();
            s.row_bytes.clear();
        }
    }

    /// The opening of sources `from..`: their handshakes in ordinal order, a
    /// `Full` per indexed source, then a `Rows` frame per source with the
    /// latest observation of every stream.
    fn open(&mut self, from: usize) -> Vec<Vec<u8>> {
        let mut frames = Vec::new();
        for (i, s) in self.sources.iter_mut().enumerate().skip(from) {
            let ordinal = self
                .rules
                .handshake(s.next_seq)
                .expect("at most MAX_SOURCES");
            debug_assert_eq!(ordinal as usize, i);
            let mut buf = self.queue.buffer();
            // Checked when the source was declared; it cannot fail here.
            let encoded = handshake_of(&s.config, ordinal, |h| {
                encode_into(&Frame::Handshake(*h), &mut buf)
            });
            if let Err(e) = encoded {
                log::warn!("source {i}: its handshake cannot be encoded: {e}");
            }
            s.full_sent = false;
            frames.push(buf);
        }
        for i in from..self.sources.len() {
            if let Some(full) = self.index_frame(i, true) {
                frames.push(full);
            }
            let s = &mut self.sources[i];
            let seq = self.rules.next_seq(i as u32).expect("handshaken above");
            s.next_seq = seq + 1;
            let state = s.index.as_ref().map_or(NO_INDEX_STATE, |x| x.hash.state());
            let mut buf = self.queue.buffer();
            let rows = s.latest.iter().enumerate().filter_map(|(stream, latest)| {
                latest.as_ref().map(|(ts, wall_offset, row)| Row {
                    stream: &s.config.streams[stream],
                    ts: *ts,
                    wall_offset: *wall_offset,
                    row,
                })
            });
            let (n, refused) = build_rows(&mut buf, i as u32, seq, state, rows);
            self.stats.rows_queued += n;
            self.stats.rows_dropped += refused;
            frames.push(buf);
        }
        frames
    }

    /// The index frame a source sends now, if any: a `Full` when a
    /// connection is `opening`, when one is due, or when none has been sent
    /// on this connection; else a `Delta` when slots changed.
    fn index_frame(&mut self, i: usize, opening: bool) -> Option<Vec<u8>> {
        let s = &mut self.sources[i];
        let index = s.index.as_mut()?;
        s.intervals_since_full += 1;
        let full = opening || !s.full_sent || s.intervals_since_full >= self.config.full_every;
        if !full && index.changed.is_empty() {
            return None;
        }
        let (kind, blob) = if full {
            (IndexKind::Full, index.full_blob())
        } else {
            (IndexKind::Delta, index.delta_blob())
        };
        // Rule 5: a row is read against entries at or before its timestamp,
        // so the entry is stamped no later than any row sent after it: the
        // latest of every stream on an opening, this interval's otherwise.
        let ts = if opening {
            s.latest.iter().flatten().map(|l| l.0).min()
        } else {
            s.pending.iter().map(|p| p.1).min()
        }
        .unwrap_or(s.last_ts);
        let mut buf = self.queue.buffer();
        let encoded = encode_into(
            &Frame::Index(Index {
                source: i as u32,
                stream: s.config.index_stream.as_deref().unwrap_or_default(),
                ts,
                kind,
                state: index.hash.state(),
                blob: &blob,
            }),
            &mut buf,
        );
        if let Err(e) = encoded {
            // An index too large for a frame: the entry is not sent, the
            // rows that follow are skipped by the subscriber (rule 9), and a
            // Full is tried again next interval.
            log::warn!("source {i}: an index entry cannot be encoded: {e}");
            self.stats.index_entries_dropped += 1;
            s.full_sent &= !full;
            return None;
        }
        index.changed.clear();
        if full {
            s.intervals_since_full = 0;
            s.full_sent = true;
        }
        self.rules
            .index(i as u32, kind)
            .expect("a Delta goes only after a Full on this connection");
        Some(buf)
    }

    fn interval(&mut self, i: usize) {
        if let Some(index) = self.index_frame(i, false) {
            self.queue.push(index);
        }
        let seq = self
            .rules
            .next_seq(i as u32)
            .expect("handshaken on connect");
        let s = &mut self.sources[i];
        s.next_seq = seq + 1;
        let state = s.index.as_ref().map_or(NO_INDEX_STATE, |x| x.hash.state());
        let mut buf = self.queue.buffer();
        let rows = s
            .pending
            .iter()
            .map(|(stream, ts, wall_offset, bytes)| Row {
                stream: &s.config.streams[*stream],
                ts: *ts,
                wall_offset: *wall_offset,
                row: &s.row_bytes[bytes.clone()],
            });
        let (n, refused) = build_rows(&mut buf, i as u32, seq, state, rows);
        self.stats.rows_dropped += refused;
        match self.queue.push(buf) {
            Pushed::Queued => self.stats.rows_queued += n,
            Pushed::Full | Pushed::Disconnected => {
                self.stats.rows_dropped += n;
                self.stats.rows_frames_dropped += 1;
            }
        }
    }
}

fn pairs(m: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
    m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// Encode a frame into `buf`, sized to fit it.
fn encode_into(frame: &Frame<'_>, buf: &mut Vec<u8>) -> Result<(), dendro_wire_core::Error> {
    buf.resize(frame.buffer_len()?, 0);
    frame.emit(buf).map(drop)
}

/// The handshake of a declared source, lent to `f`.
fn handshake_of<T>(config: &SourceConfig, ordinal: u32, f: impl FnOnce(&Handshake<'_>) -> T) -> T {
    let (labels, metadata) = (pairs(&config.labels), pairs(&config.metadata));
    f(&Handshake {
        source: ordinal,
        uuid: config.uuid.as_deref(),
        labels: Map::from_pairs(&labels),
        metadata: Map::from_pairs(&metadata),
        clock_anchor_wall_ns: config.clock_anchor_wall_ns,
        complete: false,
    })
}

/// Build a `Rows` frame in `buf`, growing it as rows need; returns the rows
/// in the frame, and the rows refused because they would take it past the
/// frame size limit (logged, and counted as dropped).
fn build_rows<'r>(
    buf: &mut Vec<u8>,
    source: u32,
    seq: u64,
    state: (u64, u64),
    rows: impl Iterator<Item = Row<'r>>,
) -> (u64, u64) {
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let mut b = RowsBuilder::new(buf, source, seq, state).expect("4 KiB holds a header");
    let mut refused = 0;
    for row in rows {
        if let Err(e) = b.push(&row) {
            let Rule::BufferTooSmall { needed, .. } = e.rule() else {
                // A row that would take the frame past 64 MiB: left out of
                // the frame, which keeps the rows it has.
                log::warn!("source {source}: a row on {:?} left out: {e}", row.stream);
                refused += 1;
                continue;
            };
            let (len, count) = (b.len(), b.row_count());
            buf.resize(needed.max(2 * buf.len()), 0);
            b = RowsBuilder::resume(buf, len, count).expect("the same frame, moved");
            b.push(&row).expect("grown to fit");
        }
    }
    let n = b.row_count() as u64;
    let len = b.finish().expect("a started frame finishes");
    buf.truncate(len);
    (n, refused)
}

fn wall_now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// A random version-4 uuid, from the randomness std's hash maps are seeded
/// with, the clock and a counter: unique per process and across processes,
/// which is all an identity here needs.
fn mint_uuid() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut words = [0u64; 2];
    for (i, w) in words.iter_mut().enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_i64(wall_now_ns());
        h.write_usize(i);
        h.write_u32(std::process::id());
        *w = h.finish();
    }
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&words[0].to_le_bytes());
    b[8..].copy_from_slice(&words[1].to_le_bytes());
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    write_uuid(&b, &mut [0; 36]).to_string()
}
