//! A firmware-style agent: one 4 KiB frame buffer, the source kept in a
//! fixed array, no allocator, frames out over an `embedded_io::Write` (here
//! a pretend UART that records what it sent and drops the link once).
//!
//! The agent never decides which frame comes next: it tells the publisher
//! what happened — connected, a reading, a channel switched, the interval
//! ended — and sends what [`Publisher::poll_transmit`] gives it. The
//! handshake, the Full index, the one Rows frame per interval, the latest
//! reading of every stream on a reconnect: the publisher's rules, not the
//! agent's. The same calls build in `cargo xtask no-std`, a program with no
//! allocator.
//!
//! Run with `cargo run -p dendro-wire-core --example firmware_agent --features embedded-io`.

use dendro_wire_core::io::write_preamble;
use dendro_wire_core::{Map, Publisher, PublisherConfig, SourceDecl};

/// A UART: counts what it was asked to send, keeps the first bytes, and
/// fails one write to show a link going down.
struct Uart {
    sent: usize,
    writes: usize,
    fail_at: usize,
    head: [u8; 64],
}

impl embedded_io::ErrorType for Uart {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Write for Uart {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.writes += 1;
        if self.writes == self.fail_at {
            return Err(embedded_io::ErrorKind::BrokenPipe);
        }
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
        writes: 0,
        fail_at: 40,
        head: [0; 64],
    };
    let mut frame = [0u8; 4096];
    let mut publisher: Publisher<[u8; 1024], 1> = Publisher::new(PublisherConfig {
        full_every: 60,
        frame_buffer: frame.len(),
    });
    let adc = publisher
        .add_source(
            &SourceDecl {
                uuid: Some("6f1c2e3d-4b5a-4697-8877-665544332211"),
                labels: Map::from_pairs(&[("device", "sensor-7"), ("source", "adc")]),
                metadata: Map::from_pairs(&[("encoder", "adc-4ch-v1")]),
                clock_anchor_wall_ns: 1_764_672_000_000_000_000,
                complete: false,
                streams: &["adc/raw"],
                index_stream: Some("adc/channels"),
            },
            [0; 1024],
        )
        .unwrap();
    let raw = adc.stream(0);
    for ch in [b"ch0", b"ch1", b"ch2", b"ch3"] {
        publisher.set_slot(adc, ch, b"on").unwrap();
    }

    let mut link_up = false;
    for interval in 0..100u32 {
        if !link_up && write_preamble(&mut uart).is_ok() {
            link_up = true;
            publisher.connected();
        }
        for tick in 0..10 {
            let t = interval * 10 + tick;
            // What does not fit is refused and counted; sampling goes on.
            let _ = publisher.observe(raw, i64::from(t) * 1_000_000, 0, &sample(t));
        }
        if interval == 50 {
            publisher.set_slot(adc, b"ch3", b"off").unwrap();
        }
        publisher.end_interval();
        while let Some((bytes, _)) = publisher.poll_transmit(&mut frame).unwrap() {
            if embedded_io::Write::write_all(&mut uart, bytes).is_err() {
                // The rest of the interval is dropped and counted; the next
                // connection starts over with handshakes and full state.
                link_up = false;
                publisher.disconnected();
                break;
            }
        }
    }
    let stats = publisher.stats();
    println!(
        "sent {} bytes over {} connections: {} frames polled, {} rows in them, {} rows in no \
         frame; from one {}-byte frame buffer and 1 KiB of storage; first bytes {:02x?}",
        uart.sent,
        stats.connections,
        stats.frames_sent,
        stats.rows_sent,
        stats.rows_unsent,
        frame.len(),
        &uart.head[..14]
    );
}
