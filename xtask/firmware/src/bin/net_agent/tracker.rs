//! Which frames the collector has: each frame handed to the socket is a
//! byte range of the connection, and the stack says how many of those
//! bytes are still unacknowledged (`send_queue`), so a frame is delivered
//! once the acknowledged bytes reach its end, and lost if the connection
//! ends first.
//!
//! It also predicts what the collector's capture of each connection checks
//! as: the frames, handshakes, index entries and rows delivered, and the
//! gaps the machine's dropped frames leave between them.

use dendro_wire_core::{kind, PublisherStats, Transmit};
use dendro_wire_firmware::{Console, ExpectedCounts};
use heapless::Deque;

/// Frames handed over and not yet acknowledged: more than the send buffer
/// holds of the smallest frames an interval makes.
const IN_FLIGHT: usize = 64;

/// One frame handed to the socket.
#[derive(Clone, Copy)]
struct Handed {
    /// Where its bytes end in the connection's, preamble included.
    end: u32,
    kind: u8,
    /// Rows observed in it, and rows rule 3 carries again in it.
    rows: u32,
    repeated: u32,
    /// Rows frames the machine dropped just before it: a gap the collector
    /// sees if this frame arrives.
    dropped_before: u32,
}

/// The frames of the connection under way, and the run's totals.
#[derive(Default)]
pub struct Tracker {
    in_flight: Deque<Handed, IN_FLIGHT>,
    /// The connection's bytes handed to the socket, and acknowledged.
    handed: u32,
    acked: u32,
    /// Where the last frame polled ends, and the last delivered.
    polled_end: u32,
    delivered_end: u32,
    /// Rows frames dropped since the last one polled on this connection.
    dropped_since: u32,
    /// What `check --json --cut-ok` must say of the connection's capture,
    /// as the acknowledgements predict it.
    capture: ExpectedCounts,
    /// Connections ended.
    pub connections: u32,
    rows_delivered: u32,
    rows_repeated_delivered: u32,
    rows_unacked: u32,
    /// Rows frames dropped just before a frame polled that did not arrive.
    frames_dropped_unseen: u32,
}

/// The run's figures, with the machine's.
pub struct Totals {
    pub rows_delivered: u32,
    pub rows_repeated_delivered: u32,
    pub rows_unacked: u32,
    pub rows_lost_at_disconnect: u32,
    pub frames_dropped_unseen: u32,
}

impl Tracker {
    /// A connection is established, and `preamble` bytes of it written.
    pub fn connected(&mut self, preamble: usize) {
        self.in_flight.clear();
        self.handed = preamble as u32;
        self.acked = 0;
        self.polled_end = self.handed;
        self.delivered_end = 0;
        self.dropped_since = 0;
        self.capture = ExpectedCounts::default();
    }

    /// Whether another frame may be polled: its range has room.
    pub fn has_room(&self) -> bool {
        !self.in_flight.is_full()
    }

    /// The machine wrote `frame` into the outbox: `before` and `after` are
    /// its stats around the poll, which say the rows in it.
    pub fn polled(&mut self, frame: &Transmit, before: &PublisherStats, after: &PublisherStats) {
        self.polled_end += frame.len as u32;
        let dropped_before = match frame.kind {
            kind::ROWS => core::mem::take(&mut self.dropped_since),
            _ => 0,
        };
        let handed = Handed {
            end: self.polled_end,
            kind: frame.kind,
            rows: (after.rows_sent - before.rows_sent) as u32,
            repeated: (after.rows_repeated - before.rows_repeated) as u32,
            dropped_before,
        };
        // `has_room` was asked first.
        let _ = self.in_flight.push_back(handed);
    }

    /// The socket took `n` more bytes.
    pub fn handed(&mut self, n: usize) {
        self.handed += n as u32;
    }

    /// The machine dropped `n` Rows frames at the end of an interval.
    pub fn dropped(&mut self, n: u64) {
        self.dropped_since += n as u32;
    }

    /// The socket holds `queued` bytes not yet acknowledged: every frame
    /// that ends before them has arrived.
    pub fn acked(&mut self, queued: usize) {
        self.acked = self.handed.saturating_sub(queued as u32);
        while let Some(f) = self.in_flight.front().copied() {
            if f.end > self.acked {
                break;
            }
            self.in_flight.pop_front();
            self.delivered_end = f.end;
            let c = &mut self.capture;
            c.frames += 1;
            match f.kind {
                kind::HANDSHAKE => c.sources += 1,
                kind::INDEX => c.index_entries += 1,
                kind::ROWS => {
                    c.rows_applied += f.rows + f.repeated;
                    if f.dropped_before > 0 {
                        c.gaps += 1;
                        c.frames_lost += f.dropped_before;
                    }
                }
                _ => {}
            }
            self.rows_delivered += f.rows;
            self.rows_repeated_delivered += f.repeated;
        }
    }

    /// Whether every byte handed over is acknowledged.
    pub fn all_acked(&self) -> bool {
        self.in_flight.is_empty() && self.acked == self.handed
    }

    /// The connection ended: the frames not acknowledged are lost with it,
    /// and so are the gaps of drops before them, which no frame that
    /// arrived showed. (Those dropped after the last frame polled the
    /// machine itself moves from `frames_dropped` to `frames_unsent`.) Say
    /// what its capture must check as.
    pub fn disconnected(&mut self, out: &mut Console) {
        while let Some(f) = self.in_flight.pop_front() {
            self.rows_unacked += f.rows;
            self.frames_dropped_unseen += f.dropped_before;
        }
        self.dropped_since = 0;
        self.capture
            .print(out, self.connections)
            .field("bytes", self.acked)
            .field(
                "cut_bytes",
                self.acked.saturating_sub(self.delivered_end.max(14)),
            )
            .str("\n");
        self.connections += 1;
    }

    /// The run's figures: `stats` are the machine's at its end.
    pub fn totals(&self, stats: &PublisherStats) -> Totals {
        Totals {
            rows_delivered: self.rows_delivered,
            rows_repeated_delivered: self.rows_repeated_delivered,
            rows_unacked: self.rows_unacked,
            rows_lost_at_disconnect: self.rows_unacked + stats.rows_unsent as u32,
            frames_dropped_unseen: self.frames_dropped_unseen,
        }
    }
}
