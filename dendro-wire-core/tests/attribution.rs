//! Rule 9 from the sending side, on the core's publisher: a row is carried
//! under the slot set it was observed against, whatever the order of the
//! calls (the model is `dendro_wire_test_support::attribution`; the C API
//! runs the same model in the ffi crate's tests).

use dendro_wire_core::{PublishError, Publisher, PublisherConfig, SourceDecl, SourceId};
use dendro_wire_test_support::attribution::{
    run_many, Counts, Machine, Taken, INDEX_STREAM, STREAMS,
};
use dendro_wire_test_support::grow::Grow;

struct Core {
    p: Publisher<Grow, 3>,
    ids: Vec<SourceId>,
    indexed: usize,
}

impl Core {
    fn new(seed: u64) -> Self {
        let config = PublisherConfig {
            full_every: [1, 3, 60][seed as usize % 3],
            frame_buffer: [700, 4096][seed as usize / 3 % 2],
        };
        let mut p = Publisher::new(config);
        let indexed = 1 + seed as usize % 2;
        let ids = (0..3)
            .map(|i| {
                let decl = SourceDecl {
                    streams: &STREAMS,
                    index_stream: (i < indexed).then_some(INDEX_STREAM),
                    ..SourceDecl::default()
                };
                p.add_source(&decl, Grow::new(1 << 20)).unwrap()
            })
            .collect();
        Core { p, ids, indexed }
    }
}

impl Machine for Core {
    fn sources(&self) -> usize {
        self.ids.len()
    }
    fn indexed(&self) -> usize {
        self.indexed
    }
    fn observe(&mut self, source: usize, stream: usize, ts: i64, row: &[u8]) -> Taken {
        let id = self.ids[source].stream(stream as u32);
        match self.p.observe(id, ts, 0, row) {
            Ok(()) => Taken::Yes,
            Err(PublishError::FrameTooLarge { .. }) => Taken::TooLarge,
            Err(PublishError::NotAfterSlotChange { source: at }) => {
                assert_eq!(at as usize, source);
                Taken::Early
            }
            Err(e) => panic!("{e}"),
        }
    }
    fn set_slot(&mut self, source: usize, key: &[u8], value: Option<&[u8]>) -> bool {
        let id = self.ids[source];
        let r = match value {
            Some(v) => self.p.set_slot(id, key, v),
            None => self.p.remove_slot(id, key),
        };
        r.map_err(|e| panic!("{e}")).is_ok()
    }
    fn end_interval(&mut self) {
        self.p.end_interval();
    }
    fn connected(&mut self) {
        self.p.connected();
    }
    fn disconnected(&mut self) {
        self.p.disconnected();
    }
    fn drop_waiting(&mut self) {
        self.p.drop_waiting();
    }
    fn poll(&mut self, buf: &mut [u8]) -> Option<usize> {
        self.p.poll_transmit(buf).unwrap().map(|(b, _)| b.len())
    }
    fn counts(&self) -> Counts {
        let s = self.p.stats();
        Counts {
            rows_observed: s.rows_observed,
            rows_sent: s.rows_sent,
            rows_repeated: s.rows_repeated,
            rows_dropped: s.rows_dropped,
            rows_unsent: s.rows_unsent,
            rows_refused: s.rows_refused,
        }
    }
}

#[test]
fn every_row_is_carried_under_the_slot_set_it_was_observed_against() {
    run_many(0..600, 400, 500, Core::new);
}
