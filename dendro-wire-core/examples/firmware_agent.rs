//! A firmware-style agent: one 4 KiB buffer, no allocator, frames out over
//! an `embedded_io::Write` (here a pretend UART that records what it sent).
//!
//! Everything the agent does — the publisher's rules, the index hash, the
//! Rows frame built in place, the writes — uses only the stack; the same
//! calls build in `cargo xtask no-std`, a program with no allocator.
//!
//! Run with `cargo run -p dendro-wire-core --example firmware_agent --features embedded-io`.

use dendro_wire_core::io::{write_frame, write_preamble};
use dendro_wire_core::{
    Frame, Handshake, Index, IndexKind, Map, Publisher, Row, RowsBuilder, SlotSetHash,
};

/// A UART: counts what it was asked to send and keeps the first bytes.
struct Uart {
    sent: usize,
    head: [u8; 64],
}

impl embedded_io::ErrorType for Uart {
    type Error = core::convert::Infallible;
}

impl embedded_io::Write for Uart {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        for (i, b) in buf.iter().enumerate() {
            if let Some(slot) = self.head.get_mut(self.sent + i) {
                *slot = *b;
            }
        }
        self.sent += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A sensor reading: four 32-bit channels, little-endian.
fn sample(tick: u32) -> [u8; 16] {
    let mut row = [0u8; 16];
    for (i, ch) in row.chunks_exact_mut(4).enumerate() {
        ch.copy_from_slice(&(tick * 10 + i as u32).to_le_bytes());
    }
    row
}

fn main() {
    let mut uart = Uart {
        sent: 0,
        head: [0; 64],
    };
    let mut buf = [0u8; 4096];
    let mut rules = Publisher::<1>::new();

    // Connect: the preamble, the handshake, the index in full.
    write_preamble(&mut uart).unwrap();
    let source = rules.handshake(0).unwrap();
    let handshake = Frame::Handshake(Handshake {
        source,
        uuid: Some("6f1c2e3d-4b5a-4697-8877-665544332211"),
        labels: Map::from_pairs(&[("device", "sensor-7"), ("source", "adc")]),
        metadata: Map::from_pairs(&[("encoder", "adc-4ch-v1")]),
        clock_anchor_wall_ns: 1_764_672_000_000_000_000,
        complete: false,
    });
    write_frame(&mut uart, &handshake, &mut buf).unwrap();
    let mut slots = SlotSetHash::new();
    for ch in [b"ch0", b"ch1", b"ch2", b"ch3"] {
        slots.insert(ch);
    }
    rules.index(source, IndexKind::Full).unwrap();
    let full = Frame::Index(Index {
        source,
        stream: "adc/channels",
        ts: 0,
        kind: IndexKind::Full,
        state: slots.state(),
        blob: b"ch0,ch1,ch2,ch3",
    });
    write_frame(&mut uart, &full, &mut buf).unwrap();

    // Every interval: exactly one Rows frame, built in the one buffer.
    let mut rows_sent = 0;
    for interval in 0..100u32 {
        let seq = rules.next_seq(source).unwrap();
        let mut rows = RowsBuilder::new(&mut buf, source, seq, slots.state()).unwrap();
        for tick in 0..10 {
            let t = interval * 10 + tick;
            let reading = sample(t);
            rows.push(&Row {
                stream: "adc/raw",
                ts: i64::from(t) * 1_000_000,
                wall_offset: 0,
                row: &reading,
            })
            .unwrap();
        }
        rows_sent += rows.row_count();
        let len = rows.finish().unwrap();
        embedded_io::Write::write_all(&mut uart, &buf[..len]).unwrap();
    }
    println!(
        "sent {} bytes: preamble, handshake, a Full index, 100 Rows frames of {} rows in all, \
         from one {}-byte buffer; first bytes {:02x?}",
        uart.sent,
        rows_sent,
        buf.len(),
        &uart.head[..14]
    );
}
