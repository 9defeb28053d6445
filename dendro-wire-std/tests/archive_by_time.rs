//! Rule 5 and rule 9 agree in dendro 0.6.1's own archive (feature
//! `archive`; PROTOCOL.md §8.16): the core's publisher is driven by random
//! programs on a millisecond clock, where readings share a timestamp and a
//! slot changes between two readings of the same one, intervals end, a link
//! polls all, part or none of what is due, and the publisher reconnects.
//! Every connection's stream lands in an archive, through dendro's own
//! `Subscriber` and through this crate's `SharedArchive`; then dendro's
//! reader reads each row back *by time*, as an archive's reader does: the
//! last `caller_rows` entry of its source at or before its `ts` (ties in
//! insertion order, as `read_caller_rows` orders them), the slot set
//! rebuilt from the entries' blobs (§9.2, §9.3). That slot set must be the
//! one the row was observed against, which the row's own bytes name.
//!
//! dendro's WAL keeps one row per `(source, stream, ts)` and refuses a
//! second, so each stream's timestamps advance here; readings of different
//! streams share them, which is what puts a slot change between readings
//! of one timestamp. A connection's repeated rows (rule 3) land in the
//! source that connection opened, so they repeat nothing their source
//! holds.

#![cfg(feature = "archive")]

use std::collections::BTreeMap;
use std::path::Path;

use dendro::archive::Archive;
use dendro::replicate::wire::FrameReader as DReader;
use dendro::replicate::Subscriber as DSubscriber;
use dendro::writer::Writer;
use dendro_wire_std::archive::{RawRowsEncoder, SharedArchive};
use dendro_wire_std::dendro_wire_core::{
    Map, PublishError, Publisher, PublisherConfig, SourceDecl, SourceId, PREAMBLE,
};
use dendro_wire_std::receive::serve;
use dendro_wire_std::SinkSubscriber;
use dendro_wire_test_support::grow::Grow;
use dendro_wire_test_support::scratch;
use dendro_wire_test_support::xorshift::XorShift;

const ENCODER: &str = "test-raw-1";
const STREAMS: [&str; 4] = [
    "env/rh",
    "cpu/usage",
    "power/rail0/current",
    "power/rail3/mA",
];
const INDEX_STREAM: &str = "rails";
const UUIDS: [&str; 3] = [
    "00000000-0000-4000-8000-000000000001",
    "00000000-0000-4000-8000-000000000002",
    "00000000-0000-4000-8000-000000000003",
];
/// The first two sources keep an index; the third declares none.
const INDEXED: usize = 2;
/// What a row of the source with no index names as its slot set.
const NO_INDEX: u32 = u32::MAX;

type Slots = BTreeMap<Vec<u8>, Vec<u8>>;

/// How often each case came up, over every program.
type Seen = BTreeMap<&'static str, u64>;

fn bump(seen: &mut Seen, case: &'static str) {
    *seen.entry(case).or_default() += 1;
}

/// One program's run: the streams it sent, and what a row's number names.
struct Run {
    /// Each connection's bytes, preamble first.
    connections: Vec<Vec<u8>>,
    /// Every slot set a row was observed against; a row names its index.
    sets: Vec<Slots>,
    /// Rows the publisher counts as sent or repeated: what the archive
    /// must hold.
    rows_landed: u64,
}

/// The program's view of one source.
#[derive(Default)]
struct Src {
    slots: Slots,
    /// The index in `sets` of `slots`.
    set: u32,
    /// The newest `ts` taken, and whether the slots changed since.
    newest: Option<i64>,
    changed_since: bool,
    /// Each stream's newest `ts` taken: the next is later (dendro's WAL).
    last: [Option<i64>; STREAMS.len()],
}

struct Program {
    p: Publisher<Grow, 3>,
    ids: Vec<SourceId>,
    src: Vec<Src>,
    sets: Vec<Slots>,
    known: BTreeMap<Slots, u32>,
    connections: Vec<Vec<u8>>,
    connected: bool,
    next_row: u64,
}

impl Program {
    fn new(seed: u64) -> Self {
        let config = PublisherConfig {
            // 0: every entry a `Full`; else `Delta`s between them.
            full_every: [0, 1, 3, 60][seed as usize % 4],
            frame_buffer: [700, 4096][seed as usize / 4 % 2],
        };
        let mut p = Publisher::new(config);
        let names = ["s0", "s1", "s2"];
        let ids = (0..3)
            .map(|i| {
                let labels = [("source", names[i])];
                let metadata = [("encoder", ENCODER)];
                let decl = SourceDecl {
                    uuid: Some(UUIDS[i]),
                    labels: Map::from_pairs(&labels),
                    metadata: Map::from_pairs(&metadata),
                    streams: &STREAMS,
                    index_stream: (i < INDEXED).then_some(INDEX_STREAM),
                    ..SourceDecl::default()
                };
                p.add_source(&decl, Grow::new(1 << 20)).unwrap()
            })
            .collect();
        let mut program = Program {
            p,
            ids,
            src: (0..3).map(|_| Src::default()).collect(),
            sets: Vec::new(),
            known: BTreeMap::new(),
            connections: Vec::new(),
            connected: false,
            next_row: 0,
        };
        let empty = program.set_of(&Slots::new());
        for s in &mut program.src {
            s.set = empty;
        }
        program
    }

    fn set_of(&mut self, slots: &Slots) -> u32 {
        if let Some(&i) = self.known.get(slots) {
            return i;
        }
        let i = self.sets.len() as u32;
        self.sets.push(slots.clone());
        self.known.insert(slots.clone(), i);
        i
    }

    /// One reading of `stream` at `ts`: whether it was taken, a refusal
    /// for its size aside.
    fn observe(&mut self, rng: &mut XorShift, source: usize, stream: usize, ts: i64) -> bool {
        let set = if source < INDEXED {
            self.src[source].set
        } else {
            NO_INDEX
        };
        let mut row = set.to_le_bytes().to_vec();
        row.extend(self.next_row.to_le_bytes());
        row.extend(rng.bytes(24));
        self.next_row += 1;
        let id = self.ids[source].stream(stream as u32);
        match self.p.observe(id, ts, 0, &row) {
            Ok(()) => {
                let s = &mut self.src[source];
                s.newest = Some(s.newest.map_or(ts, |n| n.max(ts)));
                s.last[stream] = Some(ts);
                s.changed_since = false;
                true
            }
            Err(PublishError::NotAfterSlotChange { source: at }) => {
                assert_eq!(at as usize, source);
                false
            }
            Err(PublishError::FrameTooLarge { .. }) => true,
            Err(e) => panic!("{e}"),
        }
    }

    /// A new connection, closing the one open.
    fn connect(&mut self, seen: &mut Seen) {
        if self.connected {
            self.p.disconnected();
            bump(seen, "reconnects");
        }
        self.p.connected();
        self.connected = true;
        self.connections.push(PREAMBLE.to_vec());
        bump(seen, "connections");
    }

    /// Poll up to `most` frames onto the connection.
    fn poll(&mut self, most: usize) {
        let mut buf = vec![0u8; 1 << 16];
        let Some(wire) = self.connections.last_mut().filter(|_| self.connected) else {
            return;
        };
        for _ in 0..most {
            match self.p.poll_transmit(&mut buf).unwrap() {
                Some((bytes, _)) => wire.extend_from_slice(bytes),
                None => break,
            }
        }
    }
}

/// One random program of `ops` calls, seeded by `seed`.
fn run(seed: u64, ops: usize, seen: &mut Seen) -> Run {
    let mut rng = XorShift::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut g = Program::new(seed);
    // A millisecond clock: readings often share its value.
    let mut clock = 1_000i64;
    g.connect(seen);
    for _ in 0..ops {
        match rng.below(100) {
            0..=44 => {
                let (source, stream) = (rng.below(3), rng.below(STREAMS.len()));
                clock += [0, 0, 0, 1, 2][rng.below(5)];
                // A stream's next reading is later than its last: dendro's
                // WAL holds one row per (stream, ts).
                if let Some(last) = g.src[source].last[stream] {
                    clock = clock.max(last + 1);
                }
                let s = &g.src[source];
                let shared = s.changed_since && s.newest == Some(clock);
                let newest = s.newest;
                if shared {
                    bump(seen, "readings at the ts of one before a slot change");
                }
                if g.observe(&mut rng, source, stream, clock) {
                    // No stamp of the change's entry could lie between the
                    // two readings (§8.16).
                    assert!(
                        !shared,
                        "seed {seed}: a reading at {clock}, the ts of one before a slot \
                         change, taken after it"
                    );
                    continue;
                }
                // Refused only at or before a reading taken: a clock that
                // goes forward is refused only at a tie.
                assert!(
                    newest.is_some_and(|n| clock <= n),
                    "seed {seed}: a reading at {clock} refused, the newest taken {newest:?}"
                );
                bump(seen, "readings refused");
                if shared {
                    bump(seen, "readings refused at a shared ts after a change");
                }
                // A caller on a coarse clock stamps it later, just past the
                // newest reading: that is never refused.
                if rng.chance(50) {
                    clock = clock.max(newest.map_or(clock, |n| n + 1));
                    assert!(
                        g.observe(&mut rng, source, stream, clock),
                        "seed {seed}: a reading at {clock}, after the newest, refused"
                    );
                    bump(seen, "readings stamped later after a refusal");
                }
            }
            45..=64 => {
                let source = rng.below(INDEXED);
                let key = format!("rail{}", rng.below(4)).into_bytes();
                let value = [None, Some(&b"on"[..]), Some(&b"off"[..])][rng.below(3)];
                let id = g.ids[source];
                match value {
                    Some(v) => g.p.set_slot(id, &key, v).unwrap(),
                    None => g.p.remove_slot(id, &key).unwrap(),
                }
                let slots = &mut g.src[source].slots;
                let changed = match value {
                    Some(v) => slots.insert(key, v.to_vec()).as_deref() != Some(v),
                    None => slots.remove(&key).is_some(),
                };
                if changed {
                    let slots = g.src[source].slots.clone();
                    g.src[source].set = g.set_of(&slots);
                    g.src[source].changed_since = true;
                    bump(seen, "slot changes");
                }
            }
            65..=77 => {
                g.p.end_interval();
                // An interval takes time, or ends within the millisecond
                // of its last reading.
                clock += rng.below(2) as i64;
                // A link that keeps up, or falls behind and loses frames.
                let most = match rng.below(10) {
                    0..=5 => usize::MAX,
                    6..=8 => rng.below(4),
                    _ => 0,
                };
                g.poll(most);
            }
            78..=91 => g.poll(1 + rng.below(3)),
            92..=95 => {
                g.p.drop_waiting();
                bump(seen, "drops");
            }
            // A reconnect or two a program (rule 8), now and then a while
            // with no connection.
            96..=98 if rng.chance(if g.connected { 20 } else { 60 }) => g.connect(seen),
            99 if g.connected && rng.chance(20) => {
                g.p.disconnected();
                g.connected = false;
            }
            _ => {}
        }
    }
    g.p.end_interval();
    g.poll(usize::MAX);
    g.p.end_interval();
    g.p.disconnected();
    let stats = g.p.stats();
    Run {
        connections: g.connections,
        sets: g.sets,
        rows_landed: stats.rows_sent + stats.rows_repeated,
    }
}

/// The program's streams applied by dendro's own `Subscriber`, every
/// connection in turn into one archive.
fn land_by_dendro(run: &Run, path: &Path, seed: u64) {
    let writer = Writer::create(path, Box::new(RawRowsEncoder::new(ENCODER))).unwrap();
    let mut sub = DSubscriber::new(writer);
    let (mut rows, mut skipped) = (0, 0);
    for bytes in &run.connections {
        let mut reader = DReader::new(&bytes[..]).unwrap();
        while let Some(frame) = reader.next_frame().unwrap() {
            let a = sub
                .apply(frame)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            rows += a.rows as u64;
            skipped += a.rows_skipped;
        }
    }
    sub.sync().unwrap();
    sub.finish().unwrap();
    assert_eq!((rows, skipped), (run.rows_landed, 0), "seed {seed}");
}

/// The program's streams applied through this crate's `SharedArchive`,
/// each connection a connection of its own.
fn land_by_shared_archive(run: &Run, path: &Path, seed: u64) {
    let archive = SharedArchive::create(path, ENCODER).unwrap();
    let mut rows = 0;
    for bytes in &run.connections {
        let mut sub = SinkSubscriber::new(archive.connection());
        serve(&bytes[..], &mut sub).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let tally = sub.tally();
        assert_eq!(tally.rows_skipped, 0, "seed {seed}");
        rows += tally.rows_applied;
        sub.finish().unwrap();
    }
    let stats = archive.finish().unwrap();
    assert_eq!(
        (rows, stats.rows_committed),
        (run.rows_landed, run.rows_landed),
        "seed {seed}"
    );
}

fn u32_at(blob: &[u8], at: &mut usize) -> usize {
    let n = u32::from_le_bytes(blob[*at..*at + 4].try_into().unwrap());
    *at += 4;
    n as usize
}

fn bytes_at(blob: &[u8], at: &mut usize) -> Vec<u8> {
    let n = u32_at(blob, at);
    *at += n;
    blob[*at - n..*at].to_vec()
}

/// `slots` after an entry: a `Full` blob (§9.2) replaces them, a `Delta`
/// blob (§9.3) sets and removes keys. `caller_rows` keeps no kind, so the
/// blob's shape tells: a `Full` record is a key and a value, a `Delta`
/// record a key, a presence byte and maybe a value. With this program's
/// keys and values (`railN`, `on`, `off`), a `Delta` never reads whole as
/// a `Full`: the presence byte and the length after it make a length far
/// past the blob's end.
fn apply_entry(slots: &mut Slots, blob: &[u8]) {
    let mut at = 0;
    if reads_as_full(blob) {
        slots.clear();
        while at < blob.len() {
            let key = bytes_at(blob, &mut at);
            slots.insert(key, bytes_at(blob, &mut at));
        }
        return;
    }
    while at < blob.len() {
        let key = bytes_at(blob, &mut at);
        at += 1;
        match blob[at - 1] {
            1 => slots.insert(key, bytes_at(blob, &mut at)),
            _ => slots.remove(&key),
        };
    }
}

/// Whether `blob` reads whole as a `Full` (every record a key and a value).
fn reads_as_full(blob: &[u8]) -> bool {
    let mut at = 0;
    while at < blob.len() {
        for _ in 0..2 {
            let Some(n) = blob.get(at..at + 4) else {
                return false;
            };
            at += 4 + u32::from_le_bytes(n.try_into().unwrap()) as usize;
        }
    }
    at == blob.len()
}

/// A slot set as `key=value` pairs.
fn show(slots: &Slots) -> String {
    let pair = |(k, v): (&Vec<u8>, &Vec<u8>)| {
        format!(
            "{}={}",
            String::from_utf8_lossy(k),
            String::from_utf8_lossy(v)
        )
    };
    slots.iter().map(pair).collect::<Vec<_>>().join(", ")
}

/// Every row of the archive at `path`, read by time against its source's
/// entries, is read against the slot set it was observed against; the
/// rows read.
fn read_by_time(run: &Run, path: &Path, seed: u64, seen: &mut Seen) -> u64 {
    let db = Archive::open(path).unwrap();
    let mut rows = 0;
    for source in db.read_sources().unwrap() {
        let label = &source.meta.labels["source"];
        // Every entry, oldest first and in insertion order within a
        // timestamp; each with the slots as a reader replaying them holds.
        let mut slots = Slots::new();
        let entries: Vec<(i64, Slots)> = db
            .read_caller_rows(source.id, INDEX_STREAM, i64::MIN, i64::MAX)
            .unwrap()
            .into_iter()
            .map(|e| {
                if !reads_as_full(&e.blob) {
                    bump(seen, "Delta entries replayed");
                }
                apply_entry(&mut slots, &e.blob);
                (e.ts, slots.clone())
            })
            .collect();
        for stream in db.all_streams(source.id).unwrap() {
            for row in db.live_wal(source.id, &stream).unwrap() {
                let set = u32::from_le_bytes(row.row[..4].try_into().unwrap());
                let id = u64::from_le_bytes(row.row[4..12].try_into().unwrap());
                rows += 1;
                if set == NO_INDEX {
                    assert!(entries.is_empty(), "seed {seed}: {label} keeps no index");
                    continue;
                }
                let by_time = entries.iter().rev().find(|(ts, _)| *ts <= row.ts);
                let Some((at, read)) = by_time else {
                    panic!(
                        "seed {seed}: {label} row {id} at ts {} has no entry at or before it \
                         (rule 5)",
                        row.ts
                    );
                };
                let observed = &run.sets[set as usize];
                assert!(
                    read == observed,
                    "seed {seed}: {label} row {id} at ts {} observed against {{{}}}, read by time \
                     against {{{}}} (rule 5 against rule 9); entries at {:?}",
                    row.ts,
                    show(observed),
                    show(read),
                    entries.iter().map(|(ts, _)| ts).collect::<Vec<_>>()
                );
                bump(seen, "rows read by time");
                if *at == row.ts {
                    bump(seen, "rows read against an entry at their own ts");
                }
            }
        }
    }
    rows
}

#[test]
fn every_row_read_back_by_time_is_read_against_the_slots_it_was_observed_against() {
    let dir = scratch!("archive-by-time");
    let mut seen = Seen::new();
    for seed in 0..48 {
        let run = run(seed, 500, &mut seen);
        for (how, land) in [
            ("dendro", land_by_dendro as fn(&Run, &Path, u64)),
            ("shared", land_by_shared_archive),
        ] {
            let path = dir.join(format!("{seed}-{how}.dendro"));
            land(&run, &path, seed);
            let rows = read_by_time(&run, &path, seed, &mut seen);
            assert_eq!(rows, run.rows_landed, "seed {seed}: {how}: rows read back");
            bump(&mut seen, "archives read");
        }
    }
    eprintln!("{seen:?}");
    for (case, least) in [
        ("rows read by time", 5_000),
        ("rows read against an entry at their own ts", 100),
        ("readings at the ts of one before a slot change", 100),
        ("readings refused at a shared ts after a change", 100),
        ("readings stamped later after a refusal", 50),
        ("slot changes", 1_000),
        ("Delta entries replayed", 100),
        ("drops", 100),
        ("connections", 100),
        ("reconnects", 30),
    ] {
        let n = seen.get(case).copied().unwrap_or(0);
        assert!(n >= least, "{case}: {n} < {least}: {seen:?}");
    }
}
