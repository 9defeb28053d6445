//! A firmware agent: two sources (one with an index of channel slots), a
//! few hundred intervals of rows and slot changes, one disconnect and
//! reconnect, each connection's stream written to the host as
//! `connection-N.dwr`.
//!
//! The link it sends over loses the Rows frames it is told to (the command
//! line's `gaps=G`: G gaps, some of two frames), as a lossy link would, and
//! the program prints, per connection, what `dendro-wire check --json`
//! must then say about the stream. `cargo xtask firmware` runs it under
//! QEMU and compares. Every sending rule is the core's publisher machine's,
//! driven from `publish.rs`, for the sources `sources.rs` declares; this
//! file is the workload, the link and the report.

#![no_std]
#![no_main]

mod publish;
mod sources;

use dendro_wire_core::{emit_preamble, kind, PublishError, SourceId, Transmit, PREAMBLE_BYTES};
use dendro_wire_firmware::{
    command_line, command_line_number, entry, exit, stack, Console, ExpectedCounts, HostFile,
};

use publish::{Parts, Publishing, FRAME_BUFFER};
use sources::{ADC, DECLARED, POWER, SOURCES, START_NS};

const INTERVALS: u32 = 300;
const INTERVAL_NS: i64 = 10_000_000;
/// The link goes down before this interval ...
const DISCONNECT: u32 = 150;
/// ... and a new connection opens before this one (rule 8).
const RECONNECT: u32 = 156;
/// A `Full` index every this many intervals (rule 7).
const FULL_EVERY: u32 = 50;

/// The gaps the link can be told to cause: each at an interval where both
/// ends of it are on one connection.
const MAX_GAPS: u32 = 6;

/// Whether the link loses this interval's Rows frame of a source, and
/// whose: gap `k` starts at interval 17 + 53k and loses one frame (`k`
/// even, the ADC's) or two in a row (`k` odd, the power source's).
#[inline(never)]
fn lost_in(interval: u32, gaps: u32) -> Option<u32> {
    (0..gaps).find_map(|k| {
        let first = 17 + 53 * k;
        (first..first + 1 + k % 2)
            .contains(&interval)
            .then_some(k % 2)
    })
}

const CHANNELS: [&[u8]; 3] = [b"ch0", b"ch1", b"ch2"];
const GAINS: [&[u8]; 4] = [b"gain=1", b"gain=2", b"gain=4", b"gain=8"];

/// One interval's index changes and observations.
fn workload(i: u32, p: &mut Publishing, ids: &[SourceId; SOURCES]) -> Result<u32, PublishError> {
    // A channel's gain every 11 intervals, and an auxiliary channel that
    // comes and goes.
    if i % 11 == 5 {
        let step = (i / 11) as usize;
        p.set_slot(ids[ADC], CHANNELS[step % 3], GAINS[step % 4])?;
    }
    match i % 60 {
        20 => p.set_slot(ids[ADC], b"aux", b"on")?,
        45 => p.remove_slot(ids[ADC], b"aux")?,
        _ => {}
    }
    let ts = START_NS + i64::from(i) * INTERVAL_NS;
    let mut observed = 0;
    // Every seventh interval the ADC observes nothing: its frame is empty
    // (rule 6). Channel 2 is read every third interval.
    if i % 7 != 3 {
        for ch in 0..3u32 {
            if ch < 2 || i.is_multiple_of(3) {
                let value = (i * 37 + ch * 1000) as i32 - 2000;
                let mut row = [0u8; 8];
                row[..4].copy_from_slice(&value.to_le_bytes());
                row[4..].copy_from_slice(&i.to_le_bytes());
                p.observe(ids[ADC].stream(ch), ts + i64::from(ch) * 1000, 12, &row)?;
                observed += 1;
            }
        }
    }
    if i.is_multiple_of(2) {
        let millivolts = 3300 - (i % 100) as u16;
        p.observe(
            ids[POWER].stream(1),
            ts + 5000,
            -40,
            &millivolts.to_le_bytes(),
        )?;
        observed += 1;
    }
    if i.is_multiple_of(5) {
        let decidegrees = 215 + (i % 13) as i16;
        p.observe(
            ids[POWER].stream(0),
            ts + 6000,
            -40,
            &decidegrees.to_le_bytes(),
        )?;
        observed += 1;
    }
    Ok(observed)
}

/// A link to the host: one file per connection, preamble first; it loses
/// the Rows frames it is told to and keeps count of what the subscriber
/// will see.
struct Link {
    file: Option<HostFile>,
    connections: u32,
    /// What the stream must check as, for the frames the link let through.
    expected: ExpectedCounts,
    /// The source whose Rows frame is lost this interval.
    losing: Option<u32>,
    /// Per source, Rows frames lost since its last one arrived.
    lost_run: [u32; SOURCES],
    /// Over all connections.
    gaps: u32,
    frames_lost: u32,
    rows_lost: u32,
    /// Frames the machine wrote while there was no connection: its bug.
    frames_offline: u32,
    /// Rows frames naming no declared source: its bug too.
    unreadable: u32,
    host_failed: bool,
}

impl Link {
    #[inline(never)]
    fn connect(&mut self) -> bool {
        let mut name = *b"connection-?.dwr\0";
        let Some(digit) = u8::try_from(self.connections).ok().filter(|n| *n < 10) else {
            return false;
        };
        name[11] = b'0' + digit;
        let Some(mut file) = HostFile::create(&name) else {
            return false;
        };
        let mut preamble = [0u8; PREAMBLE_BYTES];
        if emit_preamble(&mut preamble).is_err() || !file.write_all(&preamble) {
            return false;
        }
        self.file = Some(file);
        self.expected = ExpectedCounts::default();
        self.lost_run = [0; SOURCES];
        true
    }

    /// Close the connection and say what its stream must check as.
    fn disconnect(&mut self, out: &mut Console) {
        let Some(file) = self.file.take() else {
            return;
        };
        self.host_failed |= !file.close();
        self.expected.print(out, self.connections).str("\n");
        self.connections += 1;
    }
}

impl publish::Link for Link {
    #[inline(never)]
    fn transmit(&mut self, frame: &[u8], what: &Transmit) {
        let Some(file) = self.file.as_mut() else {
            self.frames_offline += 1;
            return;
        };
        let e = &mut self.expected;
        match what.kind {
            kind::HANDSHAKE => e.sources += 1,
            kind::INDEX => e.index_entries += 1,
            kind::ROWS => {
                let Some(run) = self.lost_run.get_mut(what.source as usize) else {
                    self.unreadable += 1;
                    return;
                };
                if self.losing == Some(what.source) {
                    *run += 1;
                    self.rows_lost += what.rows;
                    return;
                }
                // The frame after a loss is where the subscriber sees it.
                if *run > 0 {
                    e.gaps += 1;
                    e.frames_lost += *run;
                    self.gaps += 1;
                    self.frames_lost += *run;
                    *run = 0;
                }
                e.rows_applied += what.rows;
            }
            _ => {}
        }
        e.frames += 1;
        self.host_failed |= !file.write_all(frame);
    }
}

#[entry]
fn main() -> ! {
    stack::paint();
    let mut out = Console::open();
    let mut line = [0u8; 64];
    // No `gaps=` on the command line: cause none.
    let ok = match command_line_number(command_line(&mut line), "gaps") {
        Ok(told) if told.unwrap_or(0) <= MAX_GAPS => run(told.unwrap_or(0), &mut out),
        Ok(_) => {
            out.str("agent: gaps= is more than ").num(MAX_GAPS);
            out.str(", the most this run can cause\n");
            false
        }
        Err(_) => {
            out.str("agent: gaps= takes a whole number\n");
            false
        }
    };
    stack::report(&mut out, FRAME_BUFFER)
        .field("publisher_state", core::mem::size_of::<Publishing>() as u32)
        .str("\n");
    exit(ok)
}

fn run(gaps: u32, out: &mut Console) -> bool {
    // SAFETY: the one call: `run` runs once.
    let Parts {
        publisher,
        storages: [adc, power],
        frame: buf,
    } = unsafe { publish::take(FULL_EVERY) };
    let declared = [
        publisher.add_source(&DECLARED[ADC], adc),
        publisher.add_source(&DECLARED[POWER], power),
    ];
    let ids = match declared {
        [Ok(adc), Ok(power)] => [adc, power],
        _ => {
            out.str("agent: the declarations do not fit this build\n");
            return false;
        }
    };
    let mut link = Link {
        file: None,
        connections: 0,
        expected: ExpectedCounts::default(),
        losing: None,
        lost_run: [0; SOURCES],
        gaps: 0,
        frames_lost: 0,
        rows_lost: 0,
        frames_offline: 0,
        unreadable: 0,
        host_failed: false,
    };
    let mut observed = 0;
    let mut refused = 0;
    let mut polled = true;
    // The channels the index starts with.
    for ch in CHANNELS {
        refused += u32::from(publisher.set_slot(ids[ADC], ch, GAINS[0]).is_err());
    }
    for i in 0..INTERVALS {
        if i == 0 || i == RECONNECT {
            if !link.connect() {
                out.str("agent: the host would not take connection-N.dwr\n");
                return false;
            }
            publisher.connected();
        }
        if i == DISCONNECT {
            link.disconnect(out);
            publisher.disconnected();
        }
        match workload(i, publisher, &ids) {
            Ok(n) => observed += n,
            Err(_) => refused += 1,
        }
        link.losing = lost_in(i, gaps);
        polled &= publish::end_interval(publisher, buf, &mut link);
    }
    link.disconnect(out);
    let stats = publisher.stats();
    out.str("agent")
        .field("intervals", INTERVALS)
        .field("connections", link.connections)
        .field("told_gaps", gaps)
        .field("gaps", link.gaps)
        .field("frames_lost", link.frames_lost)
        .field("rows_observed", observed)
        .field("rows_lost", link.rows_lost)
        .field("rows_unsent_offline", stats.rows_unsent as u32)
        .field("frames_offline", link.frames_offline)
        .field("unreadable", link.unreadable)
        .field("refused", refused)
        .field("rows_refused", stats.rows_refused as u32)
        .field("slots_refused", stats.slot_changes_refused as u32)
        .field("frames_unsent", stats.frames_unsent as u32)
        .str("\n");
    let clean = refused == 0
        && polled
        && stats.rows_refused == 0
        && stats.slot_changes_refused == 0
        && stats.frames_unsent == 0;
    if !clean || link.unreadable > 0 || link.frames_offline > 0 {
        out.str("agent: the publisher refused, dropped or garbled what this run sends\n");
    }
    if link.host_failed {
        out.str("agent: a write to the host failed\n");
    }
    clean
        && link.unreadable == 0
        && link.frames_offline == 0
        && !link.host_failed
        && link.gaps == gaps
}
