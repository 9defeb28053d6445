//! Resource bounds under hostile input, with a counting allocator: the only
//! test in this binary, so nothing else allocates while it counts.

use std::io::Read;

use dendro_wire_core::{Frame, ProtocolError, RowList, Rows, Rule};
use dendro_wire_std::{
    write_frame_to, CountingSink, FrameReader, ReadErrorKind, SinkSubscriber, SubscribeError,
};
use dendro_wire_test_support::counting::{self, Counting};
use dendro_wire_test_support::fixtures::{frame_bytes, handshake};

#[global_allocator]
static COUNTING: Counting = Counting;

const PREAMBLE: &[u8] = b"dendro-repl\0\x01\x00";

/// A stream made on the fly: the preamble, then frame `i` for i in 1..n,
/// handed out at most `chunk` bytes per read. Nothing of it is held but the
/// frame being handed out, written into one buffer that is reused, so once
/// that buffer is large enough the stream itself allocates nothing.
struct Generated<F> {
    frame: F,
    n: u64,
    i: u64,
    pending: Vec<u8>,
    at: usize,
    chunk: usize,
}

impl<F: FnMut(u64) -> Frame<'static>> Generated<F> {
    fn new(frame: F, n: u64, chunk: usize) -> Self {
        let mut pending = Vec::with_capacity(256);
        pending.extend_from_slice(PREAMBLE);
        Generated {
            frame,
            n,
            i: 1,
            pending,
            at: 0,
            chunk,
        }
    }
}

impl<F: FnMut(u64) -> Frame<'static>> Read for Generated<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.pending.len() {
            if self.i == self.n {
                return Ok(0);
            }
            self.pending.clear();
            write_frame_to(&mut self.pending, &(self.frame)(self.i)).unwrap();
            self.at = 0;
            self.i += 1;
        }
        let n = self.chunk.min(buf.len()).min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn keepalive(seq: u64) -> Frame<'static> {
    Frame::Rows(Rows {
        source: 0,
        seq,
        index_state: (0, 0),
        rows: RowList::EMPTY,
    })
}

#[test]
fn hostile_streams_cost_no_more_than_their_bounds() {
    // A 4 GiB length is refused without allocating anything for it.
    let mut stream = PREAMBLE.to_vec();
    stream.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut reader = FrameReader::new(&stream[..]).unwrap();
    let (err, allocations) = counting::count(|| reader.next_frame().map(|_| ()).unwrap_err());
    assert!(matches!(
        err.wire_error().map(|e| e.rule()),
        Some(Rule::FrameTooLarge { .. })
    ));
    assert_eq!(allocations, 0, "allocated for a 4 GiB length");

    // A Rows count of u32::MAX over no rows is refused at the count.
    let mut frame = frame_bytes(&keepalive(0));
    frame[33..37].copy_from_slice(&u32::MAX.to_le_bytes());
    let (rule, allocations) =
        counting::count(|| dendro_wire_core::decode(&frame).unwrap_err().rule());
    assert_eq!(
        rule,
        Rule::CountTooLarge {
            count: u32::MAX,
            left: 0
        }
    );
    assert_eq!(allocations, 0);

    // A million handshakes: refused past the source limit, and nothing grows
    // on the way there.
    let million = Generated::new(|i| handshake(i as u32 - 1), 1_000_001, 4096);
    let mut reader = FrameReader::new(million).unwrap();
    let mut sub = SinkSubscriber::new(CountingSink::default()).with_source_limit(100);
    let (refused_at, allocations) = counting::count(|| loop {
        let frame = reader.next_frame().unwrap().unwrap();
        if let Err(e) = sub.apply(&frame) {
            assert!(matches!(
                e,
                SubscribeError::Protocol(ProtocolError::TooManySources { limit: 100 })
            ));
            break reader.frames();
        }
    });
    assert_eq!(refused_at, 101);
    // The subscriber's table of sources grows twice (past 4, past 64
    // sources), and nothing else allocates.
    assert_eq!(allocations, 2, "{allocations} allocations");
    assert_eq!(sub.sink().sources, 100);

    // A publisher that sends one byte at a time costs its buffer, no more.
    let trickle = Generated::new(keepalive, 2_001, 1);
    let mut reader = FrameReader::new(trickle).unwrap();
    let size = reader.buffer_len();
    let (frames, allocations) = counting::count(|| {
        let mut n = 0;
        while reader.next_frame().unwrap().is_some() {
            n += 1;
        }
        n
    });
    assert_eq!(frames, 2_000);
    assert_eq!(reader.buffer_len(), size, "the buffer grew");
    assert_eq!(
        allocations, 0,
        "allocated for frames that came a byte at a time"
    );

    // A stream of only empty frames costs no allocation at all.
    let mut stream = PREAMBLE.to_vec();
    write_frame_to(&mut stream, &handshake(0)).unwrap();
    for seq in 0..100_000 {
        write_frame_to(&mut stream, &keepalive(seq)).unwrap();
    }
    let mut reader = FrameReader::new(&stream[..]).unwrap();
    let mut sub = SinkSubscriber::new(CountingSink::default());
    let (applied, allocations) = counting::count(|| {
        while let Some(frame) = reader.next_frame().unwrap() {
            sub.apply(&frame).unwrap();
        }
        sub.tally()
    });
    assert_eq!(allocations, 0, "allocations on empty frames");
    assert_eq!(
        (applied.sources, applied.rows_applied, applied.gaps),
        (1, 0, 0)
    );

    // A truncated length prefix after all that is still an error.
    stream.extend_from_slice(&[1, 0]);
    let mut reader = FrameReader::new(&stream[..]).unwrap();
    let err = loop {
        match reader.next_frame() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a clean end"),
            Err(e) => break e,
        }
    };
    assert!(matches!(
        err.kind(),
        ReadErrorKind::Truncated { have: 2, .. }
    ));
}
