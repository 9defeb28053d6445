//! A firmware-style agent: one frame buffer, the source kept in a fixed
//! array, both sized by `SourceDecl::sizing`, no allocator, frames out over an `embedded_io::Write` (here
//! a pretend UART that records what it sent and drops the link once).
//!
//! The agent never decides which frame comes next: it tells the publisher
//! what happened — connected, a reading, a channel switched, the interval
//! ended — and sends what the publisher has due with `io::send_due`, through
//! an `Outbox` that keeps a frame the UART took only part of. The
//! handshake, the Full index, a Rows frame per interval (closed early when a
//! channel switches between two readings, so each reading goes under the
//! channels it was taken with), the latest reading of every stream on a
//! reconnect: the publisher's rules, not the agent's. The same calls build in `cargo xtask no-std`, a
//! program with no allocator.
//!
//! Run with `cargo run -p dendro-wire-core --example firmware_agent --features embedded-io`.

use dendro_wire_core::io::{send_due, write_preamble};
use dendro_wire_core::{Budget, Map, Outbox, Publisher, PublisherConfig, Sizing, SourceDecl};

/// The source, fixed at build time.
const ADC: SourceDecl<'static> = SourceDecl {
    uuid: Some("6f1c2e3d-4b5a-4697-8877-665544332211"),
    labels: Map::from_pairs(&[("device", "sensor-7"), ("source", "adc")]),
    metadata: Map::from_pairs(&[("encoder", "adc-4ch-v1")]),
    clock_anchor_wall_ns: 1_764_672_000_000_000_000,
    complete: false,
    streams: &["adc/raw"],
    index_stream: Some("adc/channels"),
};

/// Ten 16-byte readings an interval; four channels of `chN` = `on`/`off`,
/// one switched at a time.
const SIZE: Sizing = ADC.sizing(&Budget::rows(16, 10).with_slots(4, 6, 1));

/// A UART: counts what it was asked to send, keeps the first bytes, takes
/// at most 40 bytes a write, and fails one write to show a link going
/// down.
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
        let buf = &buf[..buf.len().min(40)];
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
    let mut frame = [0u8; SIZE.frame_buffer];
    let mut publisher: Publisher<[u8; SIZE.storage], 1> = Publisher::new(PublisherConfig {
        full_every: 60,
        frame_buffer: SIZE.frame_buffer,
    });
    let adc = publisher.add_source(&ADC, [0; SIZE.storage]).unwrap();
    let raw = adc.stream(0);
    for ch in [b"ch0", b"ch1", b"ch2", b"ch3"] {
        publisher.set_slot(adc, ch, b"on").unwrap();
    }

    let mut out = Outbox::new(&mut frame);
    let mut link_up = false;
    for interval in 0..100u32 {
        if !link_up && write_preamble(&mut uart).is_ok() {
            link_up = true;
            publisher.connected();
        }
        for tick in 0..10 {
            let t = interval * 10 + tick;
            // Never refused within its budget; sampling goes on whatever the
            // link does.
            let _ = publisher.observe(raw, i64::from(t) * 1_000_000, 0, &sample(t));
        }
        if interval == 50 {
            publisher.set_slot(adc, b"ch3", b"off").unwrap();
        }
        publisher.end_interval();
        if send_due(&mut uart, &mut publisher, &mut out).is_err() {
            // The frame cut off is given up; the next connection starts
            // over with handshakes and full state.
            out.abandon(&mut publisher);
            link_up = false;
            publisher.disconnected();
        }
    }
    let stats = publisher.stats();
    println!(
        "sent {} bytes over {} connections: {} frames polled, {} of {} rows observed in them \
         ({} in a frame the link cut off), {} rows in no frame; from one {}-byte frame buffer \
         and {} bytes of storage; first bytes {:02x?}",
        uart.sent,
        stats.connections,
        stats.frames_sent,
        stats.rows_sent,
        stats.rows_observed,
        stats.rows_cut,
        stats.rows_unsent,
        SIZE.frame_buffer,
        SIZE.storage,
        &uart.head[..14]
    );
}
