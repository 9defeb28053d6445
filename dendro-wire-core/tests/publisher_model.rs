//! A program that only calls the publisher cannot send a stream that breaks
//! rules 1 to 9 (docs/PROTOCOL.md §5): random call sequences — rows, slot
//! changes between rows, intervals polled whole or in part, connections
//! opened and lost, frames sent by hand, sources declared late — under
//! tight frame and storage bounds, and every frame checked on arrival by
//! the core `Subscriber` and by a model of the rules written from the
//! spec and PROTOCOL.md §5.2, not from the machine. The model says, frame
//! by frame, what must come next: handshakes first (rule 1), then each
//! source's frames in turn, every entry before the rows that need it
//! (rules 2, 4, 7), stamped no later than they are (rule 5), each `Rows`
//! frame under the slots its rows were observed against (rule 9), with the
//! next `seq` (rule 6), and a connection's first carrying the latest row
//! of every other stream still valid (rule 3). Frames not polled before
//! the interval after theirs ends are lost in transit, and every reading
//! is counted once, sent, dropped or unsent.

use std::collections::{BTreeMap, VecDeque};

use dendro_wire_core::*;
use dendro_wire_test_support::grow::Grow;
// Deterministic, so a failure is the same every run.
use dendro_wire_test_support::xorshift::XorShift;

const NAMES: [&str; 6] = [
    "a",
    "bb",
    "cpu/usage",
    "net/eth0/rx_bytes",
    "é温",
    "a-stream-name-well-past-sixteen-bytes",
];
const LABELS: [&str; 3] = ["host", "rack", "zone"];
const SOURCES: usize = 4;

/// A row as the model keeps it: its stream's place, `ts`, `wall_offset`,
/// bytes.
type Row = (usize, i64, i64, Vec<u8>);

/// A frame the model expects from a source, in the order it is due.
#[derive(Debug)]
enum Item {
    Entry {
        /// A `Full` is due; else a `Delta`, or a `Full` if the storage
        /// could not keep the changes.
        full: bool,
        full_blob: Vec<u8>,
        delta_blob: Vec<u8>,
        state: IndexState,
        ts: i64,
        /// The source's `ends` when it was made.
        made_at: u64,
    },
    Rows {
        seq: u64,
        rows: Vec<Row>,
        /// Of `rows`, those observed in it (the rest repeated by rule 3).
        observed: usize,
        state: IndexState,
        opening: bool,
        /// `Rows` frames lost between the one before it and it: the gap
        /// the subscriber must see.
        lost_before: u64,
    },
}

#[derive(Debug, Default)]
struct Link {
    handshake_due: bool,
    handshake_sent: bool,
    opening_due: bool,
    rows_sent: bool,
    full_needed: bool,
}

#[derive(Debug)]
struct Source {
    streams: Vec<&'static str>,
    indexed: bool,
    labels: Vec<(String, String)>,
    /// Each stream's latest row and the `seq` of the frame it was in.
    latest: Vec<Option<(Row, u64)>>,
    last_ts: Option<i64>,
    /// The earliest `ts` a row may be observed at (PROTOCOL.md §8): just
    /// after every row before the last slot change (`after_change`), and
    /// no earlier than an entry that brought slots in (`after_entry`).
    after_change: Option<i64>,
    after_entry: Option<i64>,
    /// `after_entry` before the last entry raised it, for an entry lost
    /// at once for storage.
    after_entry_before: Option<i64>,
    under_way: Vec<Row>,
    slots: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Changes since the last entry made due on this connection.
    changed: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    next_seq: u64,
    valid_from: u64,
    since_full: u64,
    /// Intervals ended since the source was declared.
    ends: u64,
    link: Link,
    /// What is due, in order; each flagged if it was made due before the
    /// interval under way began.
    queue: VecDeque<(Item, bool)>,
    /// `Rows` frames lost after the last one queued on this connection:
    /// the gap before the next.
    gap: u64,
    /// What this source's frames cost when dropped, as the machine counts.
    frames_dropped: u64,
    frames_unsent: u64,
    rows_dropped: u64,
    rows_unsent: u64,
    rows_observed: u64,
}

impl Source {
    fn floor(&self) -> Option<i64> {
        self.after_change.max(self.after_entry)
    }

    fn state(&self) -> IndexState {
        if !self.indexed {
            return NO_INDEX_STATE;
        }
        let mut h = SlotSetHash::new();
        for (k, v) in &self.slots {
            h.insert(&full_record(k, v));
        }
        h.state()
    }

    fn full_blob(&self) -> Vec<u8> {
        self.slots
            .iter()
            .flat_map(|(k, v)| full_record(k, v))
            .collect()
    }

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

    /// Close the frame under way (PROTOCOL.md §5.2).
    fn close(&mut self, connected: bool, full_every: u64, frame_buffer: usize) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let rows = std::mem::take(&mut self.under_way);
        self.rows_observed += rows.len() as u64;
        for row in &rows {
            self.latest[row.0] = Some((row.clone(), seq));
            self.last_ts = Some(self.last_ts.map_or(row.1, |t| t.max(row.1)));
        }
        if !connected {
            self.rows_unsent += rows.len() as u64;
            return;
        }
        let opening = !self.link.opening_due;
        let mut all = rows.clone();
        if opening {
            for latest in self.latest.iter().flatten() {
                let (row, seen) = latest;
                if *seen != seq && *seen >= self.valid_from {
                    all.push(row.clone());
                }
            }
        }
        // An entry that brings slots in: a change, or a Full that must be.
        let owed = self.link.full_needed || !self.changed.is_empty();
        let ts = match (all.iter().map(|r| r.1).min(), self.last_ts) {
            (Some(first), _) => first,
            (None, Some(_)) if owed && self.floor().is_some() => self.floor().unwrap(),
            (None, Some(last)) => last + 1,
            (None, None) => 0,
        };
        self.after_entry_before = self.after_entry;
        if self.indexed {
            let overhead = 42 + "slots".len();
            let delta = self.delta_blob();
            let full = self.link.full_needed
                || self.since_full >= full_every
                || overhead + delta.len() > frame_buffer;
            if full || !self.changed.is_empty() {
                if owed && self.last_ts.is_some() {
                    self.after_entry = Some(self.after_entry.map_or(ts, |f| f.max(ts)));
                }
                self.queue.push_back((
                    Item::Entry {
                        full,
                        full_blob: self.full_blob(),
                        delta_blob: delta,
                        state: self.state(),
                        ts,
                        made_at: self.ends,
                    },
                    false,
                ));
                if full {
                    self.link.full_needed = false;
                    self.since_full = 0;
                }
                self.changed.clear();
            }
        }
        if opening {
            self.link.opening_due = true;
        }
        let observed = rows.len();
        self.queue.push_back((
            Item::Rows {
                seq,
                rows: all,
                observed,
                state: self.state(),
                opening,
                lost_before: std::mem::take(&mut self.gap),
            },
            false,
        ));
    }

    /// The connection ends: the frames dropped after the last `Rows` frame
    /// it carried were counted as gaps, but no later frame will show them.
    fn unseen_at_end(&mut self) {
        let queued: u64 = self
            .queue
            .iter()
            .map(|(item, _)| match item {
                Item::Rows { lost_before, .. } => *lost_before,
                Item::Entry { .. } => 0,
            })
            .sum();
        let unseen = std::mem::take(&mut self.gap) + queued;
        self.frames_dropped -= unseen;
        self.frames_unsent += unseen;
    }

    /// Drop the queue's front `n` items, counted as lost on a connection
    /// that goes on (`lost`) or unsent.
    fn drop_front(&mut self, n: usize, lost: bool) {
        self.drop_at(0, n, lost);
    }

    /// The items a slow link may not drop: the connection's first `Rows`
    /// frame while it waits, and the entries before it.
    fn kept(&self) -> usize {
        if self.link.rows_sent || !self.link.opening_due {
            return 0;
        }
        let first = self
            .queue
            .iter()
            .position(|(i, _)| matches!(i, Item::Rows { .. }));
        first.map_or(0, |at| at + 1)
    }

    /// Drop `n` items from the queue's `at`, counted as lost on a
    /// connection that goes on (`lost`) or unsent.
    fn drop_at(&mut self, at: usize, n: usize, lost: bool) {
        // The gap the frames dropped leave, seen at the next Rows frame.
        let mut carry = 0;
        // A Rows frame of the connection went, or waits before them.
        let seen = self.link.rows_sent || self.link.opening_due;
        for _ in 0..n {
            let Some((item, _)) = self.queue.remove(at) else {
                break;
            };
            match item {
                Item::Entry { .. } => {
                    self.frames_unsent += 1;
                    self.link.full_needed = true;
                }
                Item::Rows {
                    observed,
                    opening,
                    lost_before,
                    ..
                } => {
                    if opening {
                        self.link.opening_due = false;
                    }
                    match (lost, seen) {
                        (true, true) => {
                            self.frames_dropped += 1;
                            carry += lost_before + 1;
                        }
                        _ => self.frames_unsent += 1,
                    }
                    match lost {
                        true => self.rows_dropped += observed as u64,
                        false => self.rows_unsent += observed as u64,
                    }
                }
            }
        }
        self.carry(at, carry);
    }

    /// A gap of `n` frames before the next `Rows` frame queued from `at`,
    /// or the next closed if none is.
    fn carry(&mut self, at: usize, n: u64) {
        let next = self
            .queue
            .iter_mut()
            .skip(at)
            .find_map(|(item, _)| match item {
                Item::Rows { lost_before, .. } => Some(lost_before),
                Item::Entry { .. } => None,
            });
        match next {
            Some(lost_before) => *lost_before += n,
            None => self.gap += n,
        }
    }

    /// The frame just closed (and the entry before it) lost at once for
    /// storage the machine could not grow: seen as a gap if a `Rows` frame
    /// of the connection went, or waits, before it.
    fn lose_last(&mut self) {
        let Some((
            Item::Rows {
                observed,
                lost_before,
                opening,
                ..
            },
            _,
        )) = self.queue.pop_back()
        else {
            panic!("a drop the model has no frame for");
        };
        if let Some((Item::Entry { .. }, _)) = self.queue.back() {
            self.queue.pop_back();
            self.after_entry = self.after_entry_before;
            self.frames_unsent += 1;
            self.link.full_needed = true;
        }
        if opening {
            self.link.opening_due = false;
        }
        let queued = self
            .queue
            .iter()
            .any(|(i, _)| matches!(i, Item::Rows { .. }));
        match self.link.rows_sent || queued {
            true => {
                self.frames_dropped += 1;
                self.gap += lost_before + 1;
            }
            false => self.frames_unsent += 1,
        }
        self.rows_dropped += observed as u64;
    }

    /// The end of an interval: what was due before it began and is still
    /// unpolled is lost, but for a waiting first `Rows` frame of the
    /// connection and the entries before it; and all after it if an entry
    /// is among it.
    fn drop_earlier(&mut self) {
        let kept = self.kept();
        let earlier = self.queue.iter().take_while(|(_, e)| *e).count();
        let earlier = earlier.saturating_sub(kept);
        let all = self
            .queue
            .iter()
            .skip(kept)
            .take(earlier)
            .any(|(item, _)| matches!(item, Item::Entry { .. }));
        let n = if all {
            self.queue.len() - kept
        } else {
            earlier
        };
        self.drop_at(kept, n, true);
    }
}

/// `u32 len | key | u32 len | value`: a slot in a Full blob, and as the
/// hash sees it.
fn full_record(k: &[u8], v: &[u8]) -> Vec<u8> {
    [
        &(k.len() as u32).to_le_bytes()[..],
        k,
        &(v.len() as u32).to_le_bytes(),
        v,
    ]
    .concat()
}

/// How often each case came up, by name, so the test is known to reach
/// them.
type Seen = BTreeMap<&'static str, u64>;

fn bump(seen: &mut Seen, case: &'static str, by: u64) {
    *seen.entry(case).or_default() += by;
}

struct Model {
    seen: Seen,
    sources: Vec<Source>,
    connected: bool,
    full_every: u64,
    frame_buffer: usize,
    round_robin: bool,
    turn: usize,
    next_turn: usize,
    sub: Subscriber<8>,
    rows_refused: u64,
    slots_refused: u64,
}

impl Model {
    fn connected(&mut self) {
        for s in &mut self.sources {
            s.unseen_at_end();
            let n = s.queue.len();
            s.drop_front(n, false);
            s.frames_unsent += u64::from(s.link.handshake_due);
            s.link = Link {
                handshake_due: true,
                full_needed: s.indexed,
                ..Link::default()
            };
            s.changed.clear();
            s.gap = 0;
        }
        self.connected = true;
        self.sub.reset();
    }

    fn disconnected(&mut self) {
        for s in &mut self.sources {
            s.unseen_at_end();
            let n = s.queue.len();
            s.drop_front(n, false);
            s.frames_unsent += u64::from(s.link.handshake_due);
            s.link = Link::default();
            s.changed.clear();
        }
        self.connected = false;
    }

    fn end_interval(&mut self) {
        for s in &mut self.sources {
            s.drop_earlier();
            s.since_full += 1;
            s.ends += 1;
            s.close(self.connected, self.full_every, self.frame_buffer);
            for (_, earlier) in &mut s.queue {
                *earlier = true;
            }
        }
        // The first polled moves on by one every interval.
        self.turn = self.next_turn;
        self.next_turn = (self.turn + 1) % self.sources.len().max(1);
    }

    /// The source whose frame is polled next, as the rules and the policy
    /// say.
    fn next_source(&self) -> Option<usize> {
        if let Some(i) = self.sources.iter().position(|s| s.link.handshake_due) {
            return Some(i);
        }
        // Round robin: the source that has lost the fewest frames last, ties
        // in turn from this interval's first.
        let n = self.sources.len();
        let first = if self.round_robin { self.turn } else { 0 };
        let lost = |s: &Source| {
            if self.round_robin {
                s.frames_dropped + s.frames_unsent
            } else {
                0
            }
        };
        let due = (0..n)
            .map(|k| (first + k) % n)
            .filter(|&i| !self.sources[i].queue.is_empty());
        due.fold(None, |best: Option<usize>, i| match best {
            Some(b) if lost(&self.sources[b]) >= lost(&self.sources[i]) => Some(b),
            _ => Some(i),
        })
    }

    /// Check one frame the publisher sent, and apply it.
    fn check(&mut self, bytes: &[u8], t: Transmit) {
        bump(&mut self.seen, "frames", 1);
        let Ok(Status::Complete((frame, used))) = decode(bytes) else {
            panic!("not one frame: {bytes:?}");
        };
        assert_eq!((used, t.len), (bytes.len(), bytes.len()));
        assert_eq!((frame.kind(), frame.source()), (t.kind, Some(t.source)));
        let ordinal = t.source as usize;
        assert_eq!(Some(ordinal), self.next_source(), "the order frames go in");
        let verdict = self.sub.admit(&frame).expect("the subscriber's rules");
        let s = &mut self.sources[ordinal];
        if let Frame::Handshake(h) = frame {
            // Rules 1 and 8: every source's before its other frames.
            assert!(s.link.handshake_due, "a handshake not due");
            let labels: Vec<(String, String)> =
                h.labels.iter().map(|(k, v)| (k.into(), v.into())).collect();
            assert_eq!(labels, s.labels);
            (s.link.handshake_due, s.link.handshake_sent) = (false, true);
            return;
        }
        assert!(
            s.link.handshake_sent,
            "rule 1: a frame before the handshake"
        );
        let (item, _) = s.queue.pop_front().expect("a frame nothing made due");
        match (frame, item) {
            (
                Frame::Index(i),
                Item::Entry {
                    full,
                    full_blob,
                    delta_blob,
                    state,
                    ts,
                    made_at,
                },
            ) => {
                assert_eq!(i.state, state);
                // Rule 5: no later than the rows after it.
                assert_eq!(i.ts, ts, "rule 5: the entry's stamp");
                match i.kind {
                    // Rules 2 and 7: every slot.
                    IndexKind::Full => {
                        bump(&mut self.seen, "fulls", 1);
                        assert_eq!(i.blob, full_blob);
                        if !full {
                            // Changes the storage could not keep for a
                            // Delta: a Full, which rule 7 counts from.
                            bump(&mut self.seen, "fulls for changes not kept", 1);
                            s.since_full = s.ends - made_at;
                        }
                    }
                    IndexKind::Delta => {
                        bump(&mut self.seen, "deltas", 1);
                        assert!(!full, "rules 2 and 7: a Delta where a Full is due");
                        assert_eq!(i.blob, delta_blob);
                    }
                }
            }
            (
                Frame::Rows(r),
                Item::Rows {
                    seq,
                    rows,
                    observed,
                    state,
                    opening,
                    lost_before,
                },
            ) => {
                let Admitted::Rows(v) = verdict else {
                    panic!("{verdict:?}")
                };
                assert_eq!(r.seq, seq, "rule 6: seq");
                assert_eq!(r.index_state, state, "rule 9: the rows' state");
                let got: Vec<Row> = r
                    .rows
                    .iter()
                    .map(|row| {
                        let stream = s.streams.iter().position(|n| *n == row.stream);
                        (
                            stream.expect("a declared stream"),
                            row.ts,
                            row.wall_offset,
                            row.row.to_vec(),
                        )
                    })
                    .collect();
                assert_eq!(got, rows, "rules 3 and 6: the rows");
                bump(
                    &mut self.seen,
                    "openings with rule 3 rows",
                    u64::from(opening && rows.len() > observed),
                );
                bump(&mut self.seen, "gaps", u64::from(v.lost > 0));
                assert_eq!(v.skip, None, "rule 9 skipped rows: {v:?}");
                // The first Rows frame of a connection has nothing to show
                // a gap against.
                let gap = if s.link.rows_sent { lost_before } else { 0 };
                assert_eq!(v.lost, gap, "a gap is exactly the frames not sent");
                assert!(!v.regression);
                s.link.rows_sent = true;
            }
            (frame, item) => panic!("{frame:?} where the model has {item:?} due"),
        }
    }

    /// Check a frame sent by hand, not polled.
    fn check_sent(&mut self, bytes: &[u8], source: usize) {
        let (frame, _) = decode(bytes).unwrap().complete().unwrap();
        assert_eq!(frame.source(), Some(source as u32));
        assert!(self.sources[source].link.handshake_sent);
        self.sub.admit(&frame).expect("the subscriber's rules");
    }

    /// What the machine dropped for storage it could not grow: a frame
    /// closed and lost at once, which the model cannot size. Called after
    /// every call that closes a frame, before anything is polled.
    fn reconcile(&mut self, p: &Publisher<Grow, SOURCES>, ids: &[SourceId]) {
        for (i, s) in self.sources.iter_mut().enumerate() {
            let st = p.source_stats(ids[i]).unwrap();
            if st.frames_dropped + st.frames_unsent > s.frames_dropped + s.frames_unsent {
                bump(&mut self.seen, "frames lost for storage", 1);
                s.lose_last();
            }
            assert_eq!(
                (st.frames_dropped, st.frames_unsent),
                (s.frames_dropped, s.frames_unsent),
                "source {i}"
            );
        }
    }

    /// Every frame due has been polled.
    fn all_polled(&self) {
        for (i, s) in self.sources.iter().enumerate() {
            assert!(!s.link.handshake_due, "source {i}: a handshake left");
            assert!(s.queue.is_empty(), "source {i}: {:?} left", s.queue);
        }
    }
}

fn run(seed: u64) -> Seen {
    let mut rng = XorShift::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let config = PublisherConfig {
        full_every: [1, 2, 3, 5, 60][rng.below(5)],
        frame_buffer: [180, 400, 1000, 64 << 10][rng.below(4)],
    };
    let max_storage = [400, 900, 3000, 1 << 20][rng.below(4)];
    let mut p: Publisher<Grow, SOURCES> = Publisher::new(config);
    let round_robin = rng.chance(80);
    if !round_robin {
        p.set_drop_policy(DropPolicy::DeclarationOrder);
    }
    let mut m = Model {
        seen: Seen::new(),
        sources: Vec::new(),
        connected: false,
        full_every: config.full_every,
        frame_buffer: config.frame_buffer,
        round_robin,
        turn: 0,
        next_turn: 0,
        sub: Subscriber::new(),
        rows_refused: 0,
        slots_refused: 0,
    };
    let mut ids: Vec<SourceId> = Vec::new();
    let mut clock = 0i64;
    let mut buf = vec![0u8; config.frame_buffer];
    let declare = |rng: &mut XorShift,
                   p: &mut Publisher<Grow, SOURCES>,
                   m: &mut Model,
                   ids: &mut Vec<SourceId>| {
        let mut streams: Vec<&'static str> =
            NAMES.iter().copied().filter(|_| rng.chance(50)).collect();
        if streams.is_empty() {
            streams.push(NAMES[rng.below(NAMES.len())]);
        }
        let indexed = rng.chance(70);
        let decl = SourceDecl {
            labels: Map::from_pairs(&[("host", "h")]),
            streams: &streams,
            index_stream: indexed.then_some("slots"),
            ..SourceDecl::default()
        };
        let storage = Grow::new(max_storage);
        match p.add_source(&decl, storage) {
            Ok(id) => {
                assert_eq!(id.ordinal() as usize, m.sources.len());
                bump(&mut m.seen, "late sources", u64::from(m.connected));
                ids.push(id);
                m.sources.push(Source {
                    latest: vec![None; streams.len()],
                    streams,
                    indexed,
                    labels: vec![("host".into(), "h".into())],
                    last_ts: None,
                    after_change: None,
                    after_entry: None,
                    after_entry_before: None,
                    under_way: Vec::new(),
                    slots: BTreeMap::new(),
                    changed: BTreeMap::new(),
                    next_seq: 0,
                    valid_from: 0,
                    since_full: 0,
                    ends: 0,
                    link: Link {
                        handshake_due: m.connected,
                        full_needed: m.connected && indexed,
                        ..Link::default()
                    },
                    queue: VecDeque::new(),
                    gap: 0,
                    frames_dropped: 0,
                    frames_unsent: 0,
                    rows_dropped: 0,
                    rows_unsent: 0,
                    rows_observed: 0,
                });
            }
            Err(PublishError::TooManySources { .. }) => assert_eq!(m.sources.len(), SOURCES),
            Err(PublishError::FrameTooLarge { .. } | PublishError::StorageFull { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    };
    for _ in 0..1 + rng.below(3) {
        declare(&mut rng, &mut p, &mut m, &mut ids);
    }
    for _ in 0..250 {
        let op = rng.below(100);
        let pick = |rng: &mut XorShift| (!ids.is_empty()).then(|| rng.below(ids.len()));
        match op {
            0..=39 => {
                let Some(i) = pick(&mut rng) else { continue };
                // One row by itself, or a few through the source's observer.
                let batch = if rng.chance(30) { 1 + rng.below(6) } else { 0 };
                let mut rows = Vec::new();
                for _ in 0..batch.max(1) {
                    let n = m.sources[i].streams.len();
                    let past = usize::from(rng.chance(3));
                    let stream = rng.below(n + past);
                    // Time goes forward, a reading now and then at the
                    // time of the one before it (a millisecond clock) or
                    // before it: rule 5 orders entries against rows by it.
                    clock += rng.below(3) as i64;
                    let ts = match rng.chance(10) {
                        true => clock - rng.below(4) as i64,
                        false => clock,
                    };
                    let wall = rng.below(5) as i64 - 2;
                    let max = if rng.chance(5) { 400 } else { 40 };
                    rows.push((stream, ts, wall, rng.bytes(max)));
                }
                let mut results = Vec::new();
                if batch == 0 {
                    let (stream, ts, wall, row) = &rows[0];
                    results.push(p.observe(ids[i].stream(*stream as u32), *ts, *wall, row));
                } else {
                    match p.observer(ids[i]) {
                        Ok(mut observer) => {
                            bump(&mut m.seen, "rows through an observer", rows.len() as u64);
                            for (stream, ts, wall, row) in &rows {
                                let id = ids[i].stream(*stream as u32);
                                results.push(observer.observe(id, *ts, *wall, row));
                            }
                        }
                        Err(e) => results.resize(rows.len(), Err(e)),
                    }
                }
                for ((stream, ts, wall, row), got) in rows.into_iter().zip(results) {
                    let s = &mut m.sources[i];
                    let below = s.floor().is_some_and(|f| ts < f) && stream < s.streams.len();
                    if below {
                        // Read by time it would fall under other slots.
                        let want = PublishError::NotAfterSlotChange { source: i as u32 };
                        assert_eq!(got, Err(want));
                        m.rows_refused += 1;
                        bump(&mut m.seen, "rows refused before the floor", 1);
                        continue;
                    }
                    match got {
                        Ok(()) => {
                            // Never refused for frames waiting to be polled.
                            if !s.queue.is_empty() {
                                bump(&mut m.seen, "rows while frames wait", 1);
                            }
                            s.under_way.push((stream, ts, wall, row))
                        }
                        Err(PublishError::UnknownStream { .. }) => {
                            assert_eq!(stream, s.streams.len());
                            m.rows_refused += 1;
                        }
                        Err(
                            PublishError::FrameTooLarge { .. } | PublishError::StorageFull { .. },
                        ) => m.rows_refused += 1,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            40..=61 => {
                let Some(i) = pick(&mut rng) else { continue };
                let key = [b'k', rng.below(6) as u8];
                let max = if rng.chance(5) { 300 } else { 6 };
                let value = (op < 55).then(|| rng.bytes(max));
                clock += 1;
                let got = match &value {
                    Some(v) => p.set_slot(ids[i], &key, v),
                    None => p.remove_slot(ids[i], &key),
                };
                let (connected, full_every, frame_buffer) =
                    (m.connected, m.full_every, m.frame_buffer);
                let s = &mut m.sources[i];
                let change = s.indexed && s.slots.get(&key[..]) != value.as_ref();
                match got {
                    Ok(()) | Err(PublishError::StorageFull { .. }) if change => {
                        // Rule 9: the rows observed before the change close
                        // their frame first.
                        if !s.under_way.is_empty() {
                            bump(&mut m.seen, "frames closed by a slot change", 1);
                            s.close(connected, full_every, frame_buffer);
                        }
                        s.valid_from = s.next_seq;
                    }
                    _ => {}
                }
                match got {
                    Ok(()) if change => {
                        if let Some(last) = s.last_ts {
                            s.after_change = Some(last + 1);
                        }
                        match &value {
                            Some(v) => s.slots.insert(key.to_vec(), v.clone()),
                            None => s.slots.remove(&key[..]),
                        };
                        if connected {
                            s.changed.insert(key.to_vec(), value.clone());
                        }
                    }
                    Ok(()) => {}
                    Err(PublishError::NoIndex { .. }) => assert!(!s.indexed),
                    Err(PublishError::FrameTooLarge { .. } | PublishError::StorageFull { .. }) => {
                        assert!(value.is_some(), "a removal always fits");
                        m.slots_refused += 1;
                        bump(&mut m.seen, "slots refused", 1);
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            62..=79 => {
                p.end_interval();
                m.end_interval();
                m.reconcile(&p, &ids);
                let whole = rng.chance(85);
                let mut left = rng.below(4);
                loop {
                    if !whole {
                        if left == 0 {
                            break;
                        }
                        left -= 1;
                    }
                    // Now and then a buffer a byte short: refused, kept.
                    if let Some(needed) = p.next_frame_len() {
                        if rng.chance(10) {
                            let e = p.poll_transmit(&mut buf[..needed - 1]).unwrap_err();
                            assert_eq!(
                                e,
                                PublishError::BufferTooSmall {
                                    needed,
                                    have: needed - 1
                                }
                            );
                            bump(&mut m.seen, "buffers too small", 1);
                        }
                    }
                    match p.poll_transmit(&mut buf).unwrap() {
                        Some((bytes, t)) => m.check(bytes, t),
                        None => {
                            m.all_polled();
                            break;
                        }
                    }
                }
            }
            80..=83 => {
                p.connected();
                m.connected();
            }
            84..=85 => {
                p.disconnected();
                m.disconnected();
            }
            86..=88 => {
                let Some(i) = pick(&mut rng) else { continue };
                let frame = Frame::ClockOffset(ClockOffset {
                    source: i as u32,
                    ts: clock,
                    offset_ns: 1,
                });
                match p.encode_passthrough(&frame, &mut buf) {
                    Ok(n) => m.check_sent(&buf[..n], i),
                    Err(PublishError::NotHandshaken { .. }) => {
                        assert!(!m.sources[i].link.handshake_sent);
                        bump(&mut m.seen, "not handshaken", 1);
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            89..=90 => {
                let Some(i) = pick(&mut rng) else { continue };
                let labels: Vec<(&str, &str)> = LABELS
                    .iter()
                    .filter(|_| rng.chance(60))
                    .map(|k| (*k, "v"))
                    .collect();
                match p.update_source(
                    ids[i],
                    clock,
                    Map::from_pairs(&labels),
                    Map::EMPTY,
                    &mut buf,
                ) {
                    Ok(sent) => {
                        let s = &mut m.sources[i];
                        s.labels = labels
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect();
                        assert_eq!(sent.is_some(), s.link.handshake_sent);
                        if let Some(n) = sent {
                            m.check_sent(&buf[..n], i);
                        }
                    }
                    Err(PublishError::StorageFull { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            91..=92 => declare(&mut rng, &mut p, &mut m, &mut ids),
            93..=94 => {
                p.drop_waiting();
                for s in &mut m.sources {
                    let kept = s.kept();
                    let n = s.queue.len() - kept;
                    s.drop_at(kept, n, true);
                }
                bump(&mut m.seen, "drops by the caller", 1);
            }
            _ => {
                // A poll between intervals: what a slot change made due.
                if let Some((bytes, t)) = p.poll_transmit(&mut buf).unwrap() {
                    m.check(bytes, t);
                }
            }
        }
        m.reconcile(&p, &ids);
    }
    let stats = p.stats();
    assert_eq!(stats.rows_refused, m.rows_refused);
    bump(&mut m.seen, "rows refused", m.rows_refused);
    assert_eq!(stats.slot_changes_refused, m.slots_refused);
    // Rows still in a frame under way, or in one due, are neither.
    p.end_interval();
    m.end_interval();
    m.reconcile(&p, &ids);
    p.disconnected();
    m.disconnected();
    let stats = p.stats();
    let sum = |f: fn(&Source) -> u64| m.sources.iter().map(f).sum::<u64>();
    assert_eq!(stats.rows_unsent, sum(|s| s.rows_unsent));
    assert_eq!(stats.rows_dropped, sum(|s| s.rows_dropped));
    assert_eq!(stats.frames_dropped, sum(|s| s.frames_dropped));
    assert_eq!(stats.rows_observed, sum(|s| s.rows_observed));
    // Every reading counted once: refused, or sent, dropped or unsent.
    assert_eq!(
        stats.rows_sent + stats.rows_dropped + stats.rows_unsent,
        stats.rows_observed,
        "{stats:?}"
    );
    assert_eq!(p.waiting(), Waiting::default());
    bump(&mut m.seen, "rows dropped", stats.rows_dropped);
    m.seen
}

#[test]
fn random_programs_send_only_streams_that_keep_rules_1_to_9() {
    let mut total = Seen::new();
    for seed in 0..1500 {
        let seen = match std::panic::catch_unwind(|| run(seed)) {
            Ok(seen) => seen,
            Err(e) => {
                eprintln!("seed {seed} failed");
                std::panic::resume_unwind(e);
            }
        };
        for (case, n) in seen {
            bump(&mut total, case, n);
        }
    }
    // Every case the checks guard came up, many times over.
    eprintln!("{total:?}");
    assert!(total["frames"] > 50_000, "{total:?}");
    for case in [
        "fulls",
        "deltas",
        "openings with rule 3 rows",
        "gaps",
        "rows refused",
        "rows refused before the floor",
        "slots refused",
        "rows while frames wait",
        "frames closed by a slot change",
        "rows dropped",
        "drops by the caller",
        "buffers too small",
        "late sources",
        "not handshaken",
        "rows through an observer",
    ] {
        assert!(
            total.get(case).copied().unwrap_or(0) >= 100,
            "{case}: {total:?}"
        );
    }
}
