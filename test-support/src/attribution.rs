//! Rule 9 from the sending side: a row is carried under the slot set it
//! was observed against, whatever the order of `observe`, `set_slot`,
//! `end_interval`, polls, drops and reconnects. A model drives a publisher
//! (the core's in Rust, or the same machine through the C API) with random
//! interleavings of those calls, feeds every frame it sends to the core
//! `Subscriber`, and checks, for every row the subscriber admits, that the
//! state it is attributed to (the `index_state` of its frame, which the
//! subscriber holds as it admits it) equals the slot set when the row was
//! observed. The model knows the slot set from its own calls and hashes it
//! as PROTOCOL.md §9.4 says; each row carries its own number, so the state
//! it was observed against is looked up, never inferred from the frame.
//!
//! Read by time as well (rule 5, as an archive's reader does): the last
//! index entry of the row's source at or before the row's `ts`, of every
//! entry received on any connection (ties in the order they arrived), holds
//! the slot set the row was observed against. Readings share a `ts` now
//! and then, a slot change among them (a millisecond clock); a row observed
//! after a change at or before the newest row before it is refused, since
//! no stamp of the change's entry could lie between them, and nothing
//! else is.
//!
//! Besides: no row is ever skipped (rules 4 and 9: every entry a frame needs
//! comes before it), and every row the publisher counts as sent or
//! repeated is admitted.

use std::collections::BTreeMap;

use dendro_wire_core::{
    decode, Admitted, Frame, IndexState, SlotSetHash, Status, Subscriber, NO_INDEX_STATE,
};

use crate::xorshift::XorShift;

/// The stream names every source declares: short, at the fast path's
/// bounds, and long.
pub const STREAMS: [&str; 5] = [
    "env/rh",
    "cpu/usage",
    "power/rail0/current",
    "power/rail3/milliamp-x",
    "a-stream-name-of-thirty-two-byte",
];

/// The index stream of an indexed source.
pub const INDEX_STREAM: &str = "rails";

/// The counts a publisher keeps that the model checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub rows_observed: u64,
    pub rows_sent: u64,
    pub rows_repeated: u64,
    pub rows_dropped: u64,
    pub rows_unsent: u64,
    pub rows_refused: u64,
}

/// What the model drives: a publisher with `sources()` sources declared,
/// the first `indexed()` of them keeping an index on [`INDEX_STREAM`],
/// each declaring every stream of [`STREAMS`].
pub trait Machine {
    fn sources(&self) -> usize;
    fn indexed(&self) -> usize;
    /// Whether the row was taken, `Refused::Early` for a row not later than
    /// the rows before a slot change (each refusal counted in
    /// `rows_refused`).
    fn observe(&mut self, source: usize, stream: usize, ts: i64, row: &[u8]) -> Taken;
    /// Set (`Some`) or remove (`None`); whether the change was taken.
    fn set_slot(&mut self, source: usize, key: &[u8], value: Option<&[u8]>) -> bool;
    fn end_interval(&mut self);
    fn connected(&mut self);
    fn disconnected(&mut self);
    fn drop_waiting(&mut self);
    /// The next frame due, into `buf`: its length, or `None` when none is.
    fn poll(&mut self, buf: &mut [u8]) -> Option<usize>;
    fn counts(&self) -> Counts;
}

/// What became of a row given to [`Machine::observe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    Yes,
    /// Refused for its size.
    TooLarge,
    /// Refused: not later than the newest row observed before a slot
    /// change since (PROTOCOL.md §8).
    Early,
}

/// `u32 len | key | u32 len | value`: a slot as PROTOCOL.md §9.4 hashes it.
fn slot_record(k: &[u8], v: &[u8]) -> Vec<u8> {
    [
        &(k.len() as u32).to_le_bytes()[..],
        k,
        &(v.len() as u32).to_le_bytes(),
        v,
    ]
    .concat()
}

/// How often each case came up, so a run is known to reach them.
pub type Seen = BTreeMap<&'static str, u64>;

fn bump(seen: &mut Seen, case: &'static str) {
    *seen.entry(case).or_default() += 1;
}

struct Model {
    slots: Vec<BTreeMap<Vec<u8>, Vec<u8>>>,
    indexed: usize,
    /// Each row observed: its source and the state it was observed against.
    rows: Vec<(usize, IndexState)>,
    sub: Subscriber<8>,
    connected: bool,
    admitted: u64,
    seen: Seen,
    /// Each source's index entries as received, on every connection: `ts`
    /// and state, in the order they arrived.
    entries: Vec<Vec<(i64, IndexState)>>,
    /// Each source's newest `ts` taken, and the floor below which a row
    /// is refused: just after the newest row before the last slot change.
    newest: Vec<Option<i64>>,
    floor: Vec<Option<i64>>,
    /// Each row of an indexed source admitted: its source, `ts`, the state
    /// it was observed against, and its number.
    delivered: Vec<(usize, i64, IndexState, usize)>,
}

impl Model {
    /// Every row admitted, read by time once every entry has arrived, as an
    /// archive's reader does: the last entry of its source at or before
    /// its `ts` (ties in the order they arrived) holds the slots it was
    /// observed against (rule 5).
    fn read_by_time(&mut self, seed: u64) {
        for &(source, ts, observed, id) in &self.delivered {
            let entries = &self.entries[source];
            let by_time = entries.iter().rev().find(|(at, _)| *at <= ts);
            assert_eq!(
                by_time.map(|&(_, state)| state),
                Some(observed),
                "seed {seed}: row {id} at ts {ts} observed against one slot set, read by time \
                 against another (rule 5); entries {entries:?}"
            );
            bump(&mut self.seen, "rows read by time");
        }
    }

    fn state(&self, source: usize) -> IndexState {
        if source >= self.indexed {
            return NO_INDEX_STATE;
        }
        let mut h = SlotSetHash::new();
        for (k, v) in &self.slots[source] {
            h.insert(&slot_record(k, v));
        }
        h.state()
    }

    /// One frame the publisher sent, judged and checked.
    fn check(&mut self, bytes: &[u8], seed: u64) {
        let Ok(Status::Complete((frame, used))) = decode(bytes) else {
            panic!(
                "seed {seed}: the publisher sent bytes that are not one frame: {:?} {bytes:?}",
                decode(bytes)
            );
        };
        assert_eq!(used, bytes.len(), "seed {seed}");
        assert!(self.connected, "seed {seed}: a frame with no connection");
        let verdict = self
            .sub
            .admit(&frame)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        if let Frame::Index(i) = &frame {
            self.entries[i.source as usize].push((i.ts, i.state));
        }
        let (Frame::Rows(rows), Admitted::Rows(v)) = (frame, verdict) else {
            return;
        };
        assert_eq!(v.skip, None, "seed {seed}: rows skipped (rules 4 and 9)");
        for row in rows.rows {
            let id = u64::from_le_bytes(row.row[..8].try_into().unwrap()) as usize;
            let (source, observed) = self.rows[id];
            assert_eq!(source as u32, rows.source, "seed {seed}: row {id}");
            assert_eq!(
                rows.index_state, observed,
                "seed {seed}: row {id} observed against one slot set, carried under another \
                 (rule 9)"
            );
            self.admitted += 1;
            bump(&mut self.seen, "rows admitted");
            if source < self.indexed {
                self.delivered.push((source, row.ts, observed, id));
            }
            if observed != self.state(source) {
                // Carried under a state the slots have since left.
                bump(&mut self.seen, "rows admitted under a state since changed");
            }
        }
    }
}

/// One random program of `ops` calls on `m`, seeded by `seed`; what came up.
pub fn run(m: &mut impl Machine, seed: u64, ops: usize) -> Seen {
    let mut rng = XorShift::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut model = Model {
        slots: vec![BTreeMap::new(); m.sources()],
        indexed: m.indexed(),
        rows: Vec::new(),
        sub: Subscriber::new(),
        connected: false,
        admitted: 0,
        seen: Seen::new(),
        entries: vec![Vec::new(); m.sources()],
        newest: vec![None; m.sources()],
        floor: vec![None; m.sources()],
        delivered: Vec::new(),
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut clock = 0i64;
    let mut poll =
        |m: &mut dyn FnMut(&mut [u8]) -> Option<usize>, model: &mut Model, most: usize| {
            for _ in 0..most {
                let Some(n) = m(&mut buf) else { break };
                model.check(&buf[..n], seed);
            }
        };
    for _ in 0..ops {
        let op = rng.below(100);
        match op {
            0..=44 => {
                let source = rng.below(m.sources());
                let stream = rng.below(STREAMS.len());
                // Time goes forward between calls, or stays (a millisecond
                // clock): rule 5 orders entries and rows by it.
                clock += [0, 0, 1, 2][rng.below(4)];
                let mut row = (model.rows.len() as u64).to_le_bytes().to_vec();
                let most = if rng.chance(10) { 60 } else { 24 };
                row.extend(rng.bytes(most));
                let state = model.state(source);
                let early = model.floor[source].is_some_and(|f| clock < f);
                match m.observe(source, stream, clock, &row) {
                    Taken::Yes => {
                        assert!(
                            !early,
                            "seed {seed}: a row at {clock} taken below the floor"
                        );
                        model.rows.push((source, state));
                        let newest = &mut model.newest[source];
                        *newest = Some(newest.map_or(clock, |n| n.max(clock)));
                        if model.floor[source].is_some() && state != NO_INDEX_STATE {
                            bump(&mut model.seen, "rows taken after a change");
                        }
                    }
                    Taken::Early => {
                        assert!(
                            early,
                            "seed {seed}: a row at {clock} refused above the floor"
                        );
                        bump(&mut model.seen, "rows refused at a change");
                    }
                    Taken::TooLarge => {}
                }
            }
            45..=64 => {
                let source = rng.below(m.sources());
                if source >= model.indexed {
                    continue;
                }
                // At the time of the reading before it: the next may be
                // too.
                let key = format!("rail{}", rng.below(4)).into_bytes();
                let value = match rng.below(3) {
                    0 => None,
                    1 => Some(b"on".to_vec()),
                    _ => Some(b"off".to_vec()),
                };
                if m.set_slot(source, &key, value.as_deref()) {
                    let slots = &mut model.slots[source];
                    let changed = match value {
                        Some(v) => slots.insert(key, v.clone()) != Some(v),
                        None => slots.remove(&key).is_some(),
                    };
                    if changed {
                        // A row after it is later than every row before it.
                        if let Some(newest) = model.newest[source] {
                            model.floor[source] = Some(newest + 1);
                        }
                    }
                    bump(&mut model.seen, "slot changes");
                }
            }
            65..=77 => {
                m.end_interval();
                // An interval takes time.
                clock += 1;
                // Poll all, part or none of what is due: a link that keeps
                // up, or falls behind and loses frames.
                let most = match rng.below(10) {
                    0..=5 => usize::MAX,
                    6..=8 => rng.below(4),
                    _ => 0,
                };
                if model.connected {
                    poll(&mut |b| m.poll(b), &mut model, most);
                }
            }
            78..=85 => {
                // A poll between intervals: what a slot change made due.
                if model.connected {
                    poll(&mut |b| m.poll(b), &mut model, 1 + rng.below(3));
                }
            }
            86..=89 => {
                m.drop_waiting();
                bump(&mut model.seen, "drops");
            }
            90..=94 => {
                m.connected();
                model.sub.reset();
                model.connected = true;
                bump(&mut model.seen, "connections");
            }
            _ => {
                m.disconnected();
                model.connected = false;
            }
        }
    }
    m.end_interval();
    if model.connected {
        poll(&mut |b| m.poll(b), &mut model, usize::MAX);
    }
    m.end_interval();
    m.disconnected();
    model.read_by_time(seed);
    let c = m.counts();
    assert_eq!(c.rows_observed, model.rows.len() as u64, "seed {seed}");
    assert_eq!(
        c.rows_sent + c.rows_dropped + c.rows_unsent,
        c.rows_observed,
        "seed {seed}: every reading counted once: {c:?}"
    );
    assert_eq!(
        c.rows_sent + c.rows_repeated,
        model.admitted,
        "seed {seed}: every row sent is admitted: {c:?}"
    );
    model.seen
}

/// [`run`] over `seeds`, each on a fresh machine from `make`; every case
/// the checks guard must come up at least `least` times.
pub fn run_many<M: Machine>(
    seeds: std::ops::Range<u64>,
    ops: usize,
    least: u64,
    make: impl Fn(u64) -> M,
) {
    let mut total = Seen::new();
    for seed in seeds {
        let mut m = make(seed);
        for (case, n) in run(&mut m, seed, ops) {
            *total.entry(case).or_default() += n;
        }
    }
    eprintln!("{total:?}");
    for case in [
        "rows admitted",
        "rows read by time",
        "rows taken after a change",
        "rows refused at a change",
        "rows admitted under a state since changed",
        "slot changes",
        "drops",
        "connections",
    ] {
        assert!(
            total.get(case).copied().unwrap_or(0) >= least,
            "{case}: {total:?}"
        );
    }
}
