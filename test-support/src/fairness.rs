//! Which sources a slow link loses, over every capacity a user may pick: a
//! publisher (the core's in Rust, or the same machine through the C API)
//! with two or three sources of different shapes (indexed and not, rows of
//! different sizes, one slot switched every 50 intervals), each observing
//! one reading a stream every interval, drained over a link that takes a
//! fixed number of bytes an interval, from 5% to 100% of what the sources
//! produce. A frame polled is the link's: it goes out over as many
//! intervals as it takes. Halfway, once the frame on the link has gone,
//! the connection is replaced by a new one (rule 8: what was due on the
//! old one is never sent). Every frame that
//! arrives goes through the core `Subscriber`.
//!
//! Held at every capacity ([`sweep`]):
//! - **no source starves:** none delivers 0 rows while another delivers;
//! - **fair:** each source's share of its rows delivered is within 10
//!   points of every other's;
//! - **nothing lost unseen:** every `Rows` frame a source made on a
//!   connection and did not deliver is a `seq` the subscriber saw skipped
//!   (rule 6), but for those after the last it delivered there: its first
//!   delivered frame on a connection is its first made there, and
//!   delivered plus lost is every frame it made there up to the last
//!   delivered. The frames the publisher counts as dropped are the frames
//!   the subscriber counts as lost, for each source where the publisher
//!   says per source, and in all;
//! - no row is skipped (rules 4 and 9).

use dendro_wire_core::{decode, Admitted, Frame, Status, Subscriber};

/// A source's shape: its streams, whether it keeps an index (four slots,
/// one switched every 50 intervals), and the size of each reading.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub streams: &'static [&'static str],
    pub indexed: bool,
    pub row: usize,
}

/// The index stream of an indexed shape.
pub const INDEX_STREAM: &str = "rails";
const RAILS: [&[u8]; 4] = [b"rail0", b"rail1", b"rail2", b"rail3"];

/// An environment sensor: three streams of 8-byte readings, no index.
pub const ENV: Shape = Shape {
    streams: &["env/rh", "env/temp_mc", "env/pressure_pa"],
    indexed: false,
    row: 8,
};
/// A power monitor: four streams of 12-byte readings, its rails indexed.
pub const POWER: Shape = Shape {
    streams: &[
        "power/rail0/ma",
        "power/rail1/ma",
        "power/rail2/current",
        "power/rail3/milliamp",
    ],
    indexed: true,
    row: 12,
};
/// One stream of 40-byte readings, indexed.
pub const SPECTRUM: Shape = Shape {
    streams: &["rf/spectrum"],
    indexed: true,
    row: 40,
};

/// The sets of sources the sweep runs.
pub const SETS: [&[Shape]; 3] = [&[ENV, POWER], &[POWER, SPECTRUM], &[ENV, POWER, SPECTRUM]];

/// Intervals a run lasts.
pub const INTERVALS: u32 = 400;
/// The interval the second connection opens at.
pub const RECONNECT: u32 = 200;

/// What the sweep drives: a publisher, declared by [`Machine::declare`]
/// in the order of its shapes, ordinals from 0.
pub trait Machine {
    fn declare(&mut self, shape: &Shape);
    fn set_slot(&mut self, source: u32, key: &[u8], value: &[u8]);
    fn observe(&mut self, source: u32, stream: u32, ts: i64, row: &[u8]);
    fn connected(&mut self);
    fn end_interval(&mut self);
    /// The next frame due, into `buf`: its length, or `None` when none is.
    fn poll(&mut self, buf: &mut [u8]) -> Option<usize>;
    /// `Rows` frames dropped on the connection, in all.
    fn frames_dropped(&self) -> u64;
    /// `Rows` frames dropped on the connection by `source`, where the
    /// machine says per source.
    fn source_frames_dropped(&self, source: u32) -> Option<u64>;
}

/// What a source did on one connection, seen from both ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub rows_observed: u64,
    pub rows_delivered: u64,
    pub frames_delivered: u64,
    /// Frames the subscriber counted lost: the `seq`s it saw skipped.
    pub frames_lost: u64,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
}

impl Seen {
    fn share(&self) -> f64 {
        self.rows_delivered as f64 / self.rows_observed as f64
    }

    fn add(&mut self, o: &Seen) {
        self.rows_observed += o.rows_observed;
        self.rows_delivered += o.rows_delivered;
        self.frames_delivered += o.frames_delivered;
        self.frames_lost += o.frames_lost;
    }
}

/// A frame that arrived, admitted by `sub` and counted in `seen`.
fn arrive(sub: &mut Subscriber<4>, bytes: &[u8], seen: &mut [Seen]) {
    let Ok(Status::Complete((frame, _))) = decode(bytes) else {
        panic!("not a frame: {bytes:?}");
    };
    let verdict = sub.admit(&frame).expect("the subscriber's rules");
    if let (Frame::Rows(r), Admitted::Rows(v)) = (frame, verdict) {
        assert_eq!(v.skip, None, "rows skipped (rules 4 and 9): {v:?}");
        let s = &mut seen[r.source as usize];
        s.rows_delivered += r.rows.len() as u64;
        s.frames_delivered += 1;
        s.frames_lost += v.lost;
        s.first_seq.get_or_insert(r.seq);
        s.last_seq = Some(r.seq);
    }
}

/// One run of `shapes` on `m` over a link taking `capacity` bytes an
/// interval (`None`: everything): each source's counts on each of the two
/// connections, and the bytes made due in all.
pub fn run(
    m: &mut impl Machine,
    shapes: &[Shape],
    capacity: Option<usize>,
) -> ([Vec<Seen>; 2], usize) {
    for shape in shapes {
        m.declare(shape);
    }
    for (s, shape) in shapes.iter().enumerate() {
        for rail in RAILS.iter().filter(|_| shape.indexed) {
            m.set_slot(s as u32, rail, b"on");
        }
    }
    m.connected();
    let mut conns = [
        vec![Seen::default(); shapes.len()],
        vec![Seen::default(); shapes.len()],
    ];
    let mut sub: Subscriber<4> = Subscriber::new();
    let mut buf = vec![0u8; 1 << 16];
    // The frame on the link: its bytes, and how many have gone.
    let (mut frame, mut sent) = (Vec::new(), 0);
    let mut produced = 0;
    for i in 0..=INTERVALS {
        let last = i == INTERVALS;
        if i == RECONNECT {
            // The frame on the link arrives whole first (a frame cut by a
            // connection's end is counted apart, as `frames_cut`).
            if sent < frame.len() {
                arrive(&mut sub, &frame, &mut conns[0]);
                (frame, sent) = (Vec::new(), 0);
            }
            m.connected();
            sub.reset();
        }
        let seen = &mut conns[usize::from(i >= RECONNECT)];
        if !last {
            for (s, shape) in shapes.iter().enumerate() {
                if shape.indexed && i % 50 == 25 {
                    let on: &[u8] = if (i / 50) % 2 == 0 { b"off" } else { b"on" };
                    m.set_slot(s as u32, RAILS[(i / 50) as usize % 4], on);
                }
                let ts = i64::from(i) * 1_000_000;
                for (k, _) in shape.streams.iter().enumerate() {
                    let row = vec![i as u8; shape.row];
                    m.observe(s as u32, k as u32, ts + k as i64, &row);
                    seen[s].rows_observed += 1;
                }
            }
        }
        m.end_interval();
        // The last interval's frames all go: nothing is left after the
        // last frame delivered.
        let mut budget = match last {
            true => usize::MAX,
            false => capacity.unwrap_or(usize::MAX),
        };
        while budget > 0 {
            if sent == frame.len() {
                let Some(n) = m.poll(&mut buf) else { break };
                produced += n;
                (frame, sent) = (buf[..n].to_vec(), 0);
            }
            let took = (frame.len() - sent).min(budget);
            sent += took;
            budget -= took;
            if sent == frame.len() {
                arrive(&mut sub, &frame, seen);
            }
        }
    }
    (conns, produced)
}

/// [`run`] over every capacity from 5% to 100% in steps of 5, for every
/// set of [`SETS`], each on a fresh machine from `make`; every promise of
/// this module's heading held, and each source's share said.
pub fn sweep<M: Machine>(make: impl Fn() -> M) {
    for shapes in SETS {
        let (_, produced) = run(&mut make(), shapes, None);
        let per_interval = produced / INTERVALS as usize;
        for percent in (5..=100).step_by(5) {
            let capacity = per_interval * percent / 100;
            let mut m = make();
            let (conns, _) = run(&mut m, shapes, Some(capacity));
            let at = format!(
                "{} sources at {percent}% ({capacity} B an interval)",
                shapes.len()
            );
            let mut seen = conns[0].clone();
            for (s, o) in seen.iter_mut().zip(&conns[1]) {
                s.add(o);
            }
            let shares: Vec<f64> = seen.iter().map(Seen::share).collect();
            eprintln!(
                "{at}: shares {:?}",
                shares
                    .iter()
                    .map(|s| (s * 1000.0).round() / 10.0)
                    .collect::<Vec<_>>()
            );
            let delivered = seen.iter().filter(|s| s.rows_delivered > 0).count();
            assert!(
                delivered == 0 || delivered == seen.len(),
                "{at}: a source starved while another delivered: {seen:?}"
            );
            let (lo, hi) = shares
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), &s| (lo.min(s), hi.max(s)));
            assert!(
                hi - lo <= 0.10,
                "{at}: shares {shares:?} more than 10 points apart: {seen:?}"
            );
            // Nothing lost unseen: on each connection the first frame made
            // there arrived, and every one after it to the last delivered
            // arrived or left a gap. A source's `seq` is its interval's:
            // one frame an interval, no slot changed between readings.
            for (c, first) in [0, u64::from(RECONNECT)].into_iter().enumerate() {
                for (s, got) in conns[c].iter().enumerate() {
                    let at = format!("{at}, connection {}, source {s}", c + 1);
                    assert_eq!(got.first_seq, Some(first), "{at}: {got:?}");
                    let made = got.last_seq.map_or(0, |l| l + 1 - first);
                    assert_eq!(
                        got.frames_delivered + got.frames_lost,
                        made,
                        "{at}: frames not delivered that no gap shows: {got:?}"
                    );
                }
            }
            for (s, got) in seen.iter().enumerate() {
                if let Some(dropped) = m.source_frames_dropped(s as u32) {
                    assert_eq!(
                        dropped, got.frames_lost,
                        "{at}: source {s}: dropped as the publisher counts, lost as the \
                         subscriber does: {got:?}"
                    );
                }
            }
            let lost: u64 = seen.iter().map(|s| s.frames_lost).sum();
            assert_eq!(m.frames_dropped(), lost, "{at}: {seen:?}");
        }
    }
}
