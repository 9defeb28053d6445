//! Which source a slow link loses, over every link capacity from 5% to
//! 100% of what the sources produce (the model is
//! `dendro_wire_test_support::fairness`; the C API runs the same model in
//! the ffi crate's tests). Round robin, the default, shares the losses and
//! starves no source, and every frame lost is a gap the subscriber sees;
//! declaration order loses the last declared first, as chosen.

use dendro_wire_core::*;
use dendro_wire_test_support::fairness::{self, Machine, Shape, ENV, INDEX_STREAM, POWER};
use dendro_wire_test_support::grow::Grow;

struct Core {
    p: Publisher<Grow, 4>,
    ids: Vec<SourceId>,
}

impl Core {
    fn new(policy: DropPolicy) -> Self {
        let mut p = Publisher::new(PublisherConfig {
            full_every: 100,
            frame_buffer: 2048,
        });
        p.set_drop_policy(policy);
        Core { p, ids: Vec::new() }
    }
}

impl Machine for Core {
    fn declare(&mut self, shape: &Shape) {
        let decl = SourceDecl {
            streams: shape.streams,
            index_stream: shape.indexed.then_some(INDEX_STREAM),
            ..SourceDecl::default()
        };
        self.ids
            .push(self.p.add_source(&decl, Grow::new(1 << 16)).unwrap());
    }
    fn set_slot(&mut self, source: u32, key: &[u8], value: &[u8]) {
        self.p
            .set_slot(self.ids[source as usize], key, value)
            .unwrap();
    }
    fn observe(&mut self, source: u32, stream: u32, ts: i64, row: &[u8]) {
        let id = self.ids[source as usize].stream(stream);
        self.p.observe(id, ts, 0, row).unwrap();
    }
    fn connected(&mut self) {
        self.p.connected();
    }
    fn end_interval(&mut self) {
        self.p.end_interval();
    }
    fn poll(&mut self, buf: &mut [u8]) -> Option<usize> {
        self.p.poll_transmit(buf).unwrap().map(|(b, _)| b.len())
    }
    fn frames_dropped(&self) -> u64 {
        self.p.stats().frames_dropped
    }
    fn source_frames_dropped(&self, source: u32) -> Option<u64> {
        let stats = self.p.source_stats(self.ids[source as usize]).unwrap();
        // Every frame lost on a connection that went on is a gap.
        Some(stats.frames_dropped)
    }
}

#[test]
fn at_every_link_capacity_no_source_starves_and_every_frame_lost_is_seen() {
    fairness::sweep(|| Core::new(DropPolicy::RoundRobin));
}

#[test]
fn declaration_order_loses_the_last_declared_source_first() {
    let (_, produced) = fairness::run(
        &mut Core::new(DropPolicy::DeclarationOrder),
        &[ENV, POWER],
        None,
    );
    let capacity = produced / fairness::INTERVALS as usize * 74 / 100;
    let mut m = Core::new(DropPolicy::DeclarationOrder);
    let (conns, _) = fairness::run(&mut m, &[ENV, POWER], Some(capacity));
    let env = m.p.source_stats(m.ids[0]).unwrap();
    let power = m.p.source_stats(m.ids[1]).unwrap();
    assert_eq!(env.frames_dropped, 0, "{conns:?}");
    // All of env's rows but those due when the connection changed.
    let delivered: u64 = conns.iter().map(|c| c[0].rows_delivered).sum();
    assert_eq!(delivered + env.rows_unsent, env.rows_observed, "{env:?}");
    assert!(power.frames_dropped > 100, "{power:?}");
}
