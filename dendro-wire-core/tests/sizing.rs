//! `SourceDecl::sizing` held to the machine: a source given storage and a
//! frame buffer of exactly the sizes it computes takes the most its budget
//! allows, interval after interval, on a link that keeps up and on one
//! that lets frames wait and drop, and refuses nothing; a byte less of
//! either, and the worst interval is refused.

use dendro_wire_core::*;
use dendro_wire_test_support::xorshift::XorShift;

const NAMES: [&str; 5] = [
    "a",
    "cpu/usage",
    "twelve-bytes",
    "é温/x",
    "a-longer-stream-name-here",
];

/// A declaration drawn from `rng`: some of the names, maybe an index.
struct Drawn {
    streams: Vec<&'static str>,
    indexed: bool,
    uuid: bool,
    labels: Vec<(&'static str, &'static str)>,
}

impl Drawn {
    fn new(rng: &mut XorShift) -> Drawn {
        let mut streams: Vec<&'static str> =
            NAMES.iter().copied().filter(|_| rng.chance(60)).collect();
        if streams.is_empty() {
            streams.push(NAMES[rng.below(NAMES.len())]);
        }
        let labels = [("host", "h"), ("rack", "r-17"), ("zone", "eu-west")];
        Drawn {
            streams,
            indexed: rng.chance(60),
            uuid: rng.chance(50),
            labels: labels.iter().copied().filter(|_| rng.chance(50)).collect(),
        }
    }

    fn decl(&self) -> SourceDecl<'_> {
        SourceDecl {
            uuid: self.uuid.then_some("0b5e2c1a-7d43-4f6e-9a10-3c2b1d0e4f5a"),
            labels: Map::from_pairs(&self.labels),
            streams: &self.streams,
            index_stream: self.indexed.then_some("slots"),
            ..SourceDecl::default()
        }
    }
}

/// Run a source at the limits of `budget`: every interval the most rows,
/// each of the largest size, first on each stream once, then all on the
/// one with the longest name, and the most slot changes of the largest
/// size; `poll` says whether the link takes an interval's frames, and at
/// `RECONNECT` a new connection opens, whose first frame carries the
/// latest row of every other stream beside the interval's. The
/// publisher's stats at the end.
fn run(
    decl: &SourceDecl<'_>,
    budget: &Budget,
    storage: usize,
    frame_buffer: usize,
    poll: impl Fn(usize) -> bool,
) -> PublisherStats {
    let mut bytes = vec![0u8; storage];
    let mut p: Publisher<&mut [u8], 1> = Publisher::new(PublisherConfig {
        full_every: 3,
        frame_buffer,
    });
    let Ok(s) = p.add_source(decl, &mut bytes[..]) else {
        return PublisherStats::default();
    };
    let longest = (0..decl.streams.len())
        .max_by_key(|&i| decl.streams[i].len())
        .unwrap() as u32;
    let mut buf = vec![0u8; frame_buffer];
    let slot = |n: usize| {
        // A key and value of `largest_slot` bytes together, the key unique.
        let key = format!("{:0w$}", n, w = budget.largest_slot.min(6));
        let value = vec![n as u8; budget.largest_slot - key.len()];
        (key, value)
    };
    p.connected();
    for interval in 0..16usize {
        if interval == RECONNECT {
            p.connected();
        }
        // First every stream's latest row at the largest size, then every
        // row on the longest-named stream.
        for i in 0..budget.rows_per_interval {
            let first = interval * budget.rows_per_interval + i;
            let stream = match first < decl.streams.len() {
                true => first as u32,
                false => longest,
            };
            let row = vec![i as u8; budget.largest_row];
            let _ = p.observe(s.stream(stream), interval as i64, 0, &row);
        }
        if decl.index_stream.is_some() {
            for c in 0..budget.slot_changes_per_interval {
                // Changes over a rotating set of at most `slots` keys, some
                // of them removals.
                let n = (interval * budget.slot_changes_per_interval + c) % budget.slots;
                let (key, value) = slot(n);
                let _ = match (interval + c) % 4 == 3 {
                    true => p.remove_slot(s, key.as_bytes()),
                    false => p.set_slot(s, key.as_bytes(), &value),
                };
            }
        }
        p.end_interval();
        if poll(interval) {
            while let Some((bytes, _)) = p.poll_transmit(&mut buf).unwrap() {
                assert!(bytes.len() <= frame_buffer);
            }
        }
    }
    p.stats()
}

/// The interval a second connection opens at: after every stream has a
/// latest row, on an interval a slow link does not take, so that its
/// opening frame waits while the next fill (the worst for storage).
const RECONNECT: usize = 8;

fn budget(rng: &mut XorShift, indexed: bool) -> Budget {
    let rows = Budget::rows(1 + rng.below(40), 1 + rng.below(12));
    match indexed {
        true => rows.with_slots(1 + rng.below(8), 7 + rng.below(20), 1 + rng.below(4)),
        false => rows,
    }
}

/// The link takes every interval, or every other, or one in three.
const LINKS: [fn(usize) -> bool; 3] = [|_| true, |i| i % 2 == 1, |i| i % 3 == 2];

#[test]
fn a_source_sized_by_its_budget_refuses_nothing_within_it() {
    let mut rng = XorShift::new(0x5eed_51e5);
    for _ in 0..300 {
        let drawn = Drawn::new(&mut rng);
        let decl = drawn.decl();
        let budget = budget(&mut rng, drawn.indexed);
        let size = decl.sizing(&budget);
        for (l, link) in LINKS.iter().enumerate() {
            let stats = run(&decl, &budget, size.storage, size.frame_buffer, link);
            assert_eq!(stats.intervals, 16, "{budget:?} {size:?}: not declared");
            assert_eq!(
                (stats.rows_refused, stats.slot_changes_refused),
                (0, 0),
                "{budget:?} {size:?} link {l}: {stats:?}"
            );
            // Nothing dropped for want of storage: only what the link left.
            if l == 0 {
                assert_eq!(stats.frames_dropped + stats.rows_dropped, 0, "{stats:?}");
            }
        }
    }
}

#[test]
fn a_byte_less_of_either_is_refused_at_the_budgets_worst() {
    let mut rng = XorShift::new(0xb17e_1e55);
    for _ in 0..200 {
        let drawn = Drawn::new(&mut rng);
        let decl = drawn.decl();
        let budget = budget(&mut rng, false);
        let size = decl.sizing(&budget);
        // The room kept for the row path's window refuses nothing without
        // it; less than the rest is refused.
        let (storage, frame_buffer) = (
            size.storage - size.fast_path_room,
            size.frame_buffer - size.fast_path_room,
        );
        // The worst: an interval's frame waits while the next fills, and a
        // connection's first frame waits through two more (it is never
        // dropped while its connection lasts).
        let slow = |i: usize| i % 2 == 1 && i != RECONNECT + 1;
        let stats = run(&decl, &budget, storage, frame_buffer, slow);
        assert_eq!(stats.rows_refused, 0, "{budget:?} {size:?} {stats:?}");
        // A byte less loses something for want of it: a row refused, or a
        // frame lost as it closes.
        let lost = |s: &PublisherStats| s.frames_dropped + s.frames_unsent;
        let short = run(&decl, &budget, storage - 1, frame_buffer, slow);
        assert!(
            short.rows_refused > 0 || lost(&short) > lost(&stats) || short.intervals == 0,
            "storage {storage} is more than needed: {:?} {budget:?} {short:?}",
            drawn.streams
        );
        let short = run(&decl, &budget, storage, frame_buffer - 1, slow);
        assert!(
            short.rows_refused > 0 || short.intervals == 0,
            "frame buffer {frame_buffer} is more than needed: {budget:?} {short:?}"
        );
    }
}

#[test]
fn the_frame_buffer_holds_every_slot_and_no_more() {
    // An indexed source whose Full is its largest frame: a byte less of
    // frame buffer, and the last of its slots is refused.
    let decl = SourceDecl {
        streams: &["t"],
        index_stream: Some("slots"),
        ..SourceDecl::default()
    };
    let budget = Budget::rows(1, 1).with_slots(20, 30, 0);
    let size = decl.sizing(&budget);
    assert_eq!(size.frame_buffer, 42 + 5 + 20 * (8 + 30), "{size:?}");
    for (frame_buffer, refused) in [(size.frame_buffer, 0), (size.frame_buffer - 1, 1)] {
        let mut storage = vec![0u8; size.storage];
        let mut p: Publisher<&mut [u8], 1> = Publisher::new(PublisherConfig {
            full_every: 60,
            frame_buffer,
        });
        let s = p.add_source(&decl, &mut storage[..]).unwrap();
        for n in 0..20u8 {
            let key = [b'k', b'0' + n / 10, b'0' + n % 10];
            let _ = p.set_slot(s, &key, &[n; 27]);
        }
        assert_eq!(p.stats().slot_changes_refused, refused);
    }
}

/// Names kept apart from any `[&str]`, as the C API keeps them.
struct Apart(Vec<String>);

impl StreamNames for Apart {
    fn count(&self) -> usize {
        self.0.len()
    }

    fn name(&self, index: usize) -> &str {
        &self.0[index]
    }
}

#[test]
fn streams_named_apart_are_declared_and_sized_as_in_the_declaration() {
    let mut rng = XorShift::new(0x5a3e_a9a7);
    for _ in 0..200 {
        let drawn = Drawn::new(&mut rng);
        let decl = drawn.decl();
        let apart = Apart(drawn.streams.iter().map(|s| s.to_string()).collect());
        let budget = budget(&mut rng, drawn.indexed);
        let size = decl.sizing(&budget);
        let bare = SourceDecl {
            streams: &[],
            ..decl
        };
        assert_eq!(
            bare.sizing_named(&apart, &budget),
            size,
            "{:?}",
            drawn.streams
        );
        // The same frames, byte for byte, for the same calls.
        let frames = |named: bool| {
            let mut storage = vec![0u8; size.storage];
            let mut p: Publisher<&mut [u8], 1> = Publisher::new(PublisherConfig {
                full_every: 3,
                frame_buffer: size.frame_buffer,
            });
            let s = match named {
                true => p.add_source_named(&bare, &apart, &mut storage[..]),
                false => p.add_source(&decl, &mut storage[..]),
            }
            .unwrap();
            p.connected();
            let mut out = Vec::new();
            let mut buf = vec![0u8; size.frame_buffer];
            for interval in 0..4i64 {
                for stream in 0..apart.count() as u32 {
                    let row = vec![stream as u8; budget.largest_row];
                    let _ = p.observe(s.stream(stream), interval, 0, &row);
                }
                p.end_interval();
                while let Some((bytes, _)) = p.poll_transmit(&mut buf).unwrap() {
                    out.extend_from_slice(bytes);
                }
            }
            out
        };
        assert_eq!(frames(true), frames(false), "{:?}", drawn.streams);
    }
    // A stream named twice is refused as in a declaration.
    let twice = Apart(vec!["a".into(), "b".into(), "a".into()]);
    let mut p: Publisher<[u8; 4096], 1> = Publisher::new(PublisherConfig::DEFAULT);
    assert_eq!(
        p.add_source_named(&SourceDecl::default(), &twice, [0; 4096]),
        Err(PublishError::DuplicateStream {
            source: 0,
            stream: 2
        })
    );
}
