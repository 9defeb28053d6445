//! A program that only calls the publisher cannot send a stream that breaks
//! rules 1 to 8 (docs/PROTOCOL.md §5): random call sequences — rows, slot changes,
//! intervals polled whole or in part, connections opened and lost, frames
//! sent by hand, sources declared late — under tight frame and storage
//! bounds, and every frame checked on arrival by the core `Subscriber` and
//! by a model of the rules written from the spec, not from the machine.
//! Frames not polled before the next interval ends are lost in transit,
//! as on a slow link: rows and slot changes made meanwhile belong to the
//! next interval, and every reading is counted once, sent, dropped or
//! unsent.

use std::collections::BTreeMap;

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

type Row = (usize, i64, i64, Vec<u8>);

/// What one interval owes a source on the connection, as the rules say.
#[derive(Debug)]
struct Batch {
    seq: u64,
    /// The rows its `Rows` frame carries, in order.
    rows: Vec<Row>,
    /// The rows observed in the interval (not those of rule 3).
    observed: usize,
    full_due: bool,
    index_due: bool,
    index_seen: bool,
    rows_seen: bool,
    /// The slot set as the interval ended: what its entry and rows carry,
    /// whatever changes after.
    state: IndexState,
    full_blob: Vec<u8>,
    delta_blob: Vec<u8>,
}

#[derive(Debug)]
struct Source {
    streams: Vec<&'static str>,
    indexed: bool,
    labels: Vec<(String, String)>,
    latest: Vec<Option<(i64, i64, Vec<u8>)>>,
    interval: Vec<Row>,
    slots: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Changes since the last entry sent on this connection, up to the
    /// interval that ended last.
    changed: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Changes since the interval that ended last: the next interval's.
    changing: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    next_seq: u64,
    // On this connection:
    handshaken: bool,
    full_seen: bool,
    rows_seen: bool,
    intervals_since_full: u64,
    /// `Rows` frames of this connection never sent since the last one that
    /// was: the gap the subscriber must see.
    unsent_frames: u64,
    /// The `ts` of the last index entry sent (rule 5).
    entry_ts: Option<i64>,
    batch: Option<Batch>,
}

impl Source {
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

    fn set(&mut self, key: &[u8], value: Option<&[u8]>, connected: bool) {
        let old = self.slots.get(key).map(Vec::as_slice);
        if old == value {
            return;
        }
        match value {
            Some(v) => self.slots.insert(key.to_vec(), v.to_vec()),
            None => self.slots.remove(key),
        };
        if connected {
            self.changing
                .insert(key.to_vec(), value.map(<[u8]>::to_vec));
        }
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
    sub: Subscriber<8>,
    /// An index entry or rows have arrived since the interval ended.
    past_handshakes: bool,
    last_handshake: Option<u32>,
    rows_refused: u64,
    rows_observed: u64,
    rows_unsent: u64,
    rows_dropped: u64,
    frames_dropped: u64,
    slots_refused: u64,
}

impl Model {
    /// What a due batch leaves behind when it is dropped: `lost` on a
    /// connection that goes on, else at a change of connection.
    fn drop_batch(&mut self, i: usize, lost: bool) {
        let s = &mut self.sources[i];
        if let Some(b) = s.batch.take() {
            if !b.rows_seen {
                match lost {
                    true => {
                        self.rows_dropped += b.observed as u64;
                        self.frames_dropped += u64::from(s.rows_seen);
                        bump(&mut self.seen, "batches dropped", 1);
                    }
                    false => self.rows_unsent += b.observed as u64,
                }
                // A gap shows against the frame before it, if any.
                s.unsent_frames += u64::from(s.rows_seen);
            }
        }
    }

    fn drop_batches(&mut self, lost: bool) {
        for i in 0..self.sources.len() {
            self.drop_batch(i, lost);
        }
    }

    fn connected(&mut self) {
        self.drop_batches(false);
        self.connected = true;
        self.sub.reset();
        for s in &mut self.sources {
            s.handshaken = false;
            s.full_seen = false;
            s.rows_seen = false;
            s.unsent_frames = 0;
            s.entry_ts = None;
            s.changed.clear();
            s.changing.clear();
        }
    }

    fn disconnected(&mut self) {
        self.drop_batches(false);
        self.connected = false;
        for s in &mut self.sources {
            s.changed.clear();
            s.changing.clear();
        }
    }

    fn end_interval(&mut self) {
        self.drop_batches(true);
        self.past_handshakes = false;
        self.last_handshake = None;
        for s in &mut self.sources {
            let seq = s.next_seq;
            s.next_seq += 1;
            let observed: Vec<Row> = std::mem::take(&mut s.interval);
            self.rows_observed += observed.len() as u64;
            for (stream, ts, wall, row) in &observed {
                s.latest[*stream] = Some((*ts, *wall, row.clone()));
            }
            let changing = std::mem::take(&mut s.changing);
            s.changed.extend(changing);
            if !self.connected {
                self.rows_unsent += observed.len() as u64;
                continue;
            }
            // Rule 3: a connection's first Rows frame carries the latest
            // row of every stream.
            let mut rows = Vec::new();
            if !s.rows_seen {
                for (i, latest) in s.latest.iter().enumerate() {
                    let seen = observed.iter().any(|r| r.0 == i);
                    if let (Some((ts, wall, row)), false) = (latest, seen) {
                        rows.push((i, *ts, *wall, row.clone()));
                    }
                }
            }
            let n = observed.len();
            rows.extend(observed);
            let mut full_due = false;
            if s.indexed {
                s.intervals_since_full += 1;
                full_due = !s.full_seen || s.intervals_since_full >= self.full_every;
            }
            s.batch = Some(Batch {
                seq,
                rows,
                observed: n,
                full_due,
                index_due: full_due || !s.changed.is_empty(),
                index_seen: false,
                rows_seen: false,
                state: s.state(),
                full_blob: s.full_blob(),
                delta_blob: s.delta_blob(),
            });
        }
    }

    /// Check one frame the publisher sent, and apply it.
    fn check(&mut self, bytes: &[u8], t: Transmit) {
        bump(&mut self.seen, "frames", 1);
        let Ok(Status::Complete((frame, used))) = decode(bytes) else {
            panic!("not one frame: {bytes:?}");
        };
        assert_eq!((used, t.len), (bytes.len(), bytes.len()));
        assert_eq!((frame.kind(), frame.source()), (t.kind, Some(t.source)));
        let verdict = self.sub.admit(&frame).expect("the subscriber's rules");
        let ordinal = t.source;
        let s = &mut self.sources[ordinal as usize];
        match frame {
            Frame::Handshake(h) => {
                // Rules 1 and 8: every source, from 0 in order, before any
                // other frame of the interval.
                assert!(!s.handshaken, "a second handshake for {ordinal}");
                assert!(!self.past_handshakes, "a handshake after other frames");
                assert!(self.last_handshake.is_none_or(|l| l < ordinal));
                assert!(s.batch.is_some(), "a handshake with no interval ended");
                self.last_handshake = Some(ordinal);
                let labels: Vec<(String, String)> =
                    h.labels.iter().map(|(k, v)| (k.into(), v.into())).collect();
                assert_eq!(labels, s.labels);
                s.handshaken = true;
                return;
            }
            Frame::Index(_) | Frame::Rows(_) => self.past_handshakes = true,
            _ => {}
        }
        assert!(s.handshaken, "rule 1: a frame before the handshake");
        match frame {
            Frame::Index(i) => {
                let b = s.batch.as_mut().expect("an entry outside an interval");
                assert!(b.index_due, "an entry with nothing to say");
                assert!(!b.index_seen, "two entries in one interval");
                assert!(!b.rows_seen, "rule 4: an entry after the rows");
                b.index_seen = true;
                let first = b.rows.iter().map(|r| r.1).min();
                assert_eq!(i.state, b.state);
                match i.kind {
                    // Rules 2 and 7: every slot.
                    IndexKind::Full => {
                        bump(&mut self.seen, "fulls", 1);
                        assert_eq!(i.blob, b.full_blob);
                        s.full_seen = true;
                        s.intervals_since_full = 0;
                    }
                    IndexKind::Delta => {
                        bump(&mut self.seen, "deltas", 1);
                        assert!(!b.full_due, "rules 2 and 7: a Delta where a Full is due");
                        assert_eq!(i.blob, b.delta_blob);
                    }
                }
                // Rule 5: no later than the rows that follow it.
                if let Some(first) = first {
                    assert!(i.ts <= first, "rule 5: entry at {}, a row at {first}", i.ts);
                }
                assert!(s.entry_ts.is_none_or(|e| e <= i.ts));
                s.entry_ts = Some(i.ts);
                s.changed.clear();
            }
            Frame::Rows(r) => {
                let Admitted::Rows(v) = verdict else {
                    panic!("{verdict:?}")
                };
                let b = s.batch.as_mut().expect("rows outside an interval");
                assert!(!b.rows_seen, "rule 6: two Rows frames in one interval");
                assert!(
                    !b.index_due || b.index_seen,
                    "rule 4: rows before their entry"
                );
                b.rows_seen = true;
                assert_eq!(r.seq, b.seq, "rule 6: seq");
                assert_eq!(r.index_state, b.state);
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
                assert_eq!(got, b.rows, "rules 3 and 6: the rows");
                let latest = b.rows.len() > b.observed;
                bump(
                    &mut self.seen,
                    "openings with rule 3 rows",
                    u64::from(latest),
                );
                bump(&mut self.seen, "gaps", u64::from(v.lost > 0));
                for row in &got {
                    assert!(s.entry_ts.is_none_or(|e| e <= row.1), "rule 5");
                }
                assert_eq!(v.skip, None, "rule 9 skipped rows: {v:?}");
                assert_eq!(
                    v.lost, s.unsent_frames,
                    "a gap is exactly the frames not sent"
                );
                assert!(!v.regression);
                s.unsent_frames = 0;
                s.rows_seen = true;
            }
            Frame::ClockOffset(_) | Frame::SourceUpdate(_) => {}
            other => panic!("{other:?}"),
        }
    }

    /// Check a frame sent by hand, not polled.
    fn check_sent(&mut self, bytes: &[u8], kind: u8, source: usize) {
        let t = Transmit {
            len: bytes.len(),
            kind,
            source: source as u32,
            rows: 0,
        };
        self.check(bytes, t);
    }

    /// Every frame of the interval has arrived.
    fn interval_done(&self) {
        for (i, s) in self.sources.iter().enumerate() {
            if let Some(b) = &s.batch {
                assert!(s.handshaken, "source {i} never handshaken");
                assert_eq!(b.index_seen, b.index_due, "source {i}: {b:?}");
                assert!(b.rows_seen, "rule 6: source {i} sent no Rows frame");
            }
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
    let mut m = Model {
        seen: Seen::new(),
        sources: Vec::new(),
        connected: false,
        full_every: config.full_every,
        sub: Subscriber::new(),
        past_handshakes: false,
        last_handshake: None,
        rows_refused: 0,
        rows_observed: 0,
        rows_unsent: 0,
        rows_dropped: 0,
        frames_dropped: 0,
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
            uuid: None,
            labels: Map::from_pairs(&[("host", "h")]),
            metadata: Map::EMPTY,
            clock_anchor_wall_ns: 0,
            complete: false,
            streams: &streams,
            index_stream: indexed.then_some("slots"),
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
                    interval: Vec::new(),
                    slots: BTreeMap::new(),
                    changed: BTreeMap::new(),
                    changing: BTreeMap::new(),
                    next_seq: 0,
                    handshaken: false,
                    full_seen: false,
                    rows_seen: false,
                    intervals_since_full: 0,
                    unsent_frames: 0,
                    entry_ts: None,
                    batch: None,
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
                    // Time does not go back: rule 5 orders entries against
                    // rows by it.
                    clock += rng.below(3) as i64;
                    let wall = rng.below(5) as i64 - 2;
                    let max = if rng.chance(5) { 400 } else { 40 };
                    rows.push((stream, clock, wall, rng.bytes(max)));
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
                    match got {
                        Ok(()) => {
                            // Never refused for frames waiting to be polled:
                            // the row is the next interval's.
                            if s.batch.as_ref().is_some_and(|b| !b.rows_seen) {
                                bump(&mut m.seen, "rows while frames wait", 1);
                            }
                            s.interval.push((stream, ts, wall, row))
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
                let waiting = m.sources[i]
                    .batch
                    .as_ref()
                    .is_some_and(|b| b.index_due && !b.index_seen);
                let dropped = p.stats().rows_dropped + p.stats().frames_unsent;
                let got = match &value {
                    Some(v) => p.set_slot(ids[i], &key, v),
                    None => p.remove_slot(ids[i], &key),
                };
                if p.stats().rows_dropped + p.stats().frames_unsent != dropped {
                    // The entry due could not be kept as it was before the
                    // change: it and its rows are lost in transit.
                    assert!(waiting, "frames dropped with no entry waiting");
                    m.drop_batch(i, true);
                    bump(&mut m.seen, "entries dropped for storage", 1);
                }
                let s = &mut m.sources[i];
                match got {
                    Ok(()) => {
                        if waiting && s.batch.is_some() {
                            bump(&mut m.seen, "slot changes while an entry waits", 1);
                        }
                        s.set(&key, value.as_deref(), m.connected)
                    }
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
                let whole = rng.chance(90);
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
                            m.interval_done();
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
                    Ok(n) => {
                        assert!(m.sources[i].handshaken);
                        m.check_sent(&buf[..n], kind::CLOCK_OFFSET, i);
                    }
                    Err(PublishError::NotHandshaken { .. }) => {
                        assert!(!m.sources[i].handshaken);
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
                        assert_eq!(sent.is_some(), s.handshaken);
                        if let Some(n) = sent {
                            m.check_sent(&buf[..n], kind::SOURCE_UPDATE, i);
                        }
                    }
                    Err(PublishError::StorageFull { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            91..=92 => declare(&mut rng, &mut p, &mut m, &mut ids),
            _ => {
                if let Some((bytes, t)) = p.poll_transmit(&mut buf).unwrap() {
                    m.check(bytes, t);
                }
            }
        }
    }
    let stats = p.stats();
    assert_eq!(stats.rows_refused, m.rows_refused);
    bump(&mut m.seen, "rows refused", m.rows_refused);
    assert_eq!(stats.slot_changes_refused, m.slots_refused);
    // Rows still in an interval under way, or in one due, are neither.
    p.end_interval();
    m.end_interval();
    p.disconnected();
    m.disconnected();
    let stats = p.stats();
    assert_eq!(stats.rows_unsent, m.rows_unsent);
    assert_eq!(stats.rows_dropped, m.rows_dropped);
    assert_eq!(stats.frames_dropped, m.frames_dropped);
    assert_eq!(stats.rows_observed, m.rows_observed);
    // Every reading counted once: refused, or sent, dropped or unsent.
    assert_eq!(
        stats.rows_sent + stats.rows_dropped + stats.rows_unsent,
        stats.rows_observed,
        "{stats:?}"
    );
    assert_eq!(p.waiting(), Waiting::default());
    bump(&mut m.seen, "rows dropped", m.rows_dropped);
    m.seen
}

#[test]
fn random_programs_send_only_streams_that_keep_rules_1_to_8() {
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
        "slots refused",
        "rows while frames wait",
        "slot changes while an entry waits",
        "batches dropped",
        "rows dropped",
        "entries dropped for storage",
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
