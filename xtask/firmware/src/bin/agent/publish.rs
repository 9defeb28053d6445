//! The agent's publishing logic: the one part of this program that knows a
//! sending rule of WIRE.md §5.
//!
//! Its surface is the core publisher machine's (issue 14): sources, streams
//! and slots declared up front; inputs [`connected`](Publishing::connected),
//! [`observe`](Publishing::observe), [`set_slot`](Publishing::set_slot),
//! [`remove_slot`](Publishing::remove_slot) and
//! [`end_interval`](Publishing::end_interval); frames out, each handed to a
//! [`Transmit`] as soon as it is written. Until that machine is in the core,
//! the rules are kept here over what the core has: the `Publisher<N>`
//! ledger (ordinals, `seq`, no `Delta` before a `Full`), the encoders and
//! `SlotSetHash`. Moving onto the machine replaces this file's body and
//! nothing else: `end_interval` becomes the machine's `end_interval(ts)`
//! then `while let Some(n) = poll_transmit(buf) { out.transmit(&buf[..n]) }`.
//!
//! What it holds is fixed at build time (the capacities below); what does
//! not fit is refused and counted in [`Dropped`], never lost silently.
//! Nothing here indexes where it could panic: what might not fit is a `get`
//! and a refusal, which also keeps `core::fmt` (the formatting of a bounds
//! panic) out of the build.

use dendro_wire_core::{
    Handshake, Index, IndexKind, IndexState, Map, Publisher, Row, RowsBuilder, SlotSetHash,
    NO_INDEX_STATE,
};
use heapless::Vec;

/// The sources this agent declares.
pub const SOURCES: usize = 2;
/// The streams one source may declare.
const STREAMS: usize = 4;
/// The rows one source may observe in one interval.
const PENDING: usize = 4;
/// The largest row.
const ROW_BYTES: usize = 8;
/// The slots one source's index may hold.
const SLOTS: usize = 6;
/// The largest slot key and value.
const KEY_BYTES: usize = 8;
const VALUE_BYTES: usize = 8;
/// The most a slot takes in a `Full` blob, `u32 len | key | u32 len |
/// value`, and what the hash takes of every slot.
const SLOT_BYTES: usize = 4 + KEY_BYTES + 4 + VALUE_BYTES;
/// The largest index blob: every slot, each as a `Delta` writes it (one
/// byte more than a `Full`).
const BLOB_BYTES: usize = SLOTS * (SLOT_BYTES + 1);

/// One source as the agent declares it, fixed at build time.
pub struct Declared {
    /// The source's identity across connections: canonical lowercase uuid.
    pub uuid: &'static str,
    /// The source's name, in key order.
    pub labels: &'static [(&'static str, &'static str)],
    /// Everything else (the rows' `encoder`), in key order.
    pub metadata: &'static [(&'static str, &'static str)],
    /// The anchor that pins the source's timeline.
    pub clock_anchor_wall_ns: i64,
    /// The streams rows are observed on, named by their position here.
    pub streams: &'static [&'static str],
    /// The `caller_rows` stream of the source's index, if it keeps one.
    pub index_stream: Option<&'static str>,
}

/// Where frames go: a transport, which may lose them.
pub trait Transmit {
    /// One whole frame, length prefix included.
    fn transmit(&mut self, frame: &[u8]);
}

/// A call refused: the agent asked for something it did not declare or
/// that does not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No source, stream or index by that position.
    Undeclared,
    /// A row, key or value larger than this build holds.
    TooLarge,
    /// This interval's rows, or the index's slots, are full.
    Full,
}

/// What was refused or could not be sent, by kind; all zero in a run that
/// lost nothing on this side.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dropped {
    /// Rows observed that no frame carried.
    pub rows: u32,
    /// Slot changes refused.
    pub slots: u32,
    /// Frames the encoders or the rules refused, not sent.
    pub frames: u32,
}

/// Bytes appended to a buffer: what does not fit is refused, not a panic.
struct Put<'b> {
    buf: &'b mut [u8],
    at: usize,
    fits: bool,
}

impl<'b> Put<'b> {
    fn new(buf: &'b mut [u8]) -> Self {
        Put {
            buf,
            at: 0,
            fits: true,
        }
    }

    fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        match self
            .buf
            .get_mut(self.at..)
            .and_then(|r| r.get_mut(..bytes.len()))
        {
            Some(room) => {
                room.copy_from_slice(bytes);
                self.at += bytes.len();
            }
            None => self.fits = false,
        }
        self
    }

    /// A `u32 len` then the bytes: WIRE.md's `bytes`.
    fn sized(&mut self, bytes: &[u8]) -> &mut Self {
        self.bytes(&(bytes.len() as u32).to_le_bytes()).bytes(bytes)
    }

    /// The bytes written, if all of them fit.
    fn end(&self) -> Option<usize> {
        self.fits.then_some(self.at)
    }
}

/// One observation, kept until the interval ends.
#[derive(Clone, Copy)]
struct Observation {
    stream: u8,
    len: u8,
    ts: i64,
    wall_offset: i64,
    row: [u8; ROW_BYTES],
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Free,
    /// Live, and sent as it is.
    Live,
    /// Live, and added or changed since the last entry.
    Changed,
    /// Removed since the last entry, which must say so.
    Removed,
}

/// One entry of a source's slot table. A table rather than a sorted list:
/// nothing moves when a slot comes or goes.
struct Slot {
    state: SlotState,
    key: Vec<u8, KEY_BYTES>,
    value: Vec<u8, VALUE_BYTES>,
}

impl Slot {
    const FREE: Slot = Slot {
        state: SlotState::Free,
        key: Vec::new(),
        value: Vec::new(),
    };

    /// The live slot with this key, if any.
    fn live<'s>(slots: &'s mut [Slot], key: &[u8]) -> Option<&'s mut Slot> {
        slots
            .iter_mut()
            .find(|s| matches!(s.state, SlotState::Live | SlotState::Changed) && s.key == key)
    }

    /// The slot as the hash sees it: `u32 len | key | u32 len | value`,
    /// each part padded to its largest, so no two slots are the same bytes
    /// and the hash always takes the same length, which lets the compiler
    /// leave out the hash's paths for longer input (4 KiB of flash).
    fn hashed(key: &[u8], value: &[u8]) -> [u8; SLOT_BYTES] {
        let mut out = [0u8; SLOT_BYTES];
        let (k, v) = out.split_at_mut(4 + KEY_BYTES);
        for (part, room) in [(key, k), (value, v)] {
            if let Some((len, bytes)) = room.split_first_chunk_mut::<4>() {
                *len = (part.len() as u32).to_le_bytes();
                bytes.iter_mut().zip(part).for_each(|(b, p)| *b = *p);
            }
        }
        out
    }
}

/// A source's slots, their hash, and what changed since the last entry.
struct SlotIndex {
    stream: &'static str,
    slots: [Slot; SLOTS],
    /// A change a `Delta` cannot say (a removal whose entry was reused
    /// before it was sent): the next entry is a `Full`.
    full_due: bool,
    hash: SlotSetHash,
    intervals_since_full: u32,
}

impl SlotIndex {
    fn changed(&self) -> bool {
        self.full_due
            || self
                .slots
                .iter()
                .any(|s| matches!(s.state, SlotState::Changed | SlotState::Removed))
    }

    /// The entry's blob: every live slot for a `Full`; for a `Delta`, each
    /// changed slot as `u32 len | key | 1 | u32 len | value` and each removed
    /// one as `u32 len | key | 0`.
    fn blob<'b>(&self, kind: IndexKind, out: &'b mut [u8; BLOB_BYTES]) -> Option<&'b [u8]> {
        let mut put = Put::new(out);
        for s in &self.slots {
            match (kind, s.state) {
                (_, SlotState::Free) => {}
                (IndexKind::Full, SlotState::Removed) => {}
                (IndexKind::Full, _) => {
                    put.sized(&s.key).sized(&s.value);
                }
                (IndexKind::Delta, SlotState::Changed) => {
                    put.sized(&s.key).bytes(&[1]).sized(&s.value);
                }
                (IndexKind::Delta, SlotState::Removed) => {
                    put.sized(&s.key).bytes(&[0]);
                }
                (IndexKind::Delta, SlotState::Live) => {}
            }
        }
        let len = put.end();
        len.and_then(|n| out.get(..n))
    }

    fn sent(&mut self, kind: IndexKind) {
        for s in &mut self.slots {
            s.state = match s.state {
                SlotState::Changed => SlotState::Live,
                SlotState::Removed => SlotState::Free,
                other => other,
            };
        }
        if kind == IndexKind::Full {
            self.full_due = false;
            self.intervals_since_full = 0;
        }
    }
}

struct Source {
    declared: &'static Declared,
    /// The `seq` of the next `Rows` frame; it outlives connections, so each
    /// interval has its own number.
    next_seq: u64,
    pending: Vec<Observation, PENDING>,
    /// The latest observation of every stream, for a connection's first
    /// `Rows` frame (rule 3).
    latest: [Option<Observation>; STREAMS],
    /// The newest timestamp observed, for an entry in an interval that
    /// observed nothing (rule 5).
    last_ts: i64,
    index: Option<SlotIndex>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Connection {
    /// Never connected: there is no one to send to.
    None,
    /// Connected since the last interval: it opens with handshakes and full
    /// state (rules 2, 3, 8).
    Opening,
    Open,
}

/// The agent's publisher: the sending rules over today's core.
pub struct Publishing {
    sources: Vec<Source, SOURCES>,
    rules: Publisher<SOURCES>,
    connection: Connection,
    /// A `Full` every this many intervals (rule 7).
    full_every: u32,
    dropped: Dropped,
}

impl Publishing {
    /// A publisher with no sources; `full_every` paces the periodic
    /// `Full`. A `const fn`, so it is built where it lives rather than
    /// moved there: the publisher is most of this program's RAM.
    pub const fn new(full_every: u32) -> Self {
        Publishing {
            sources: Vec::new(),
            rules: Publisher::new(),
            connection: Connection::None,
            full_every,
            dropped: Dropped {
                rows: 0,
                slots: 0,
                frames: 0,
            },
        }
    }

    /// Declare a source, before the first connection; its ordinal (its
    /// position among the declared) is what `observe` and the slot calls
    /// name it by.
    pub fn declare(&mut self, d: &'static Declared) -> Result<usize, Refused> {
        if d.streams.len() > STREAMS {
            return Err(Refused::TooLarge);
        }
        let index = d.index_stream.map(|stream| SlotIndex {
            stream,
            slots: [Slot::FREE; SLOTS],
            full_due: false,
            hash: SlotSetHash::new(),
            intervals_since_full: 0,
        });
        let source = Source {
            declared: d,
            next_seq: 0,
            pending: Vec::new(),
            latest: [None; STREAMS],
            last_ts: 0,
            index,
        };
        self.sources.push(source).map_err(|_| Refused::Full)?;
        Ok(self.sources.len() - 1)
    }

    /// What was refused or not sent so far.
    pub fn dropped(&self) -> Dropped {
        self.dropped
    }

    /// A new connection: it opens at the end of this interval.
    pub fn connected(&mut self) {
        self.connection = Connection::Opening;
    }

    /// One row on a declared stream, for this interval's `Rows` frame.
    pub fn observe(
        &mut self,
        source: usize,
        stream: usize,
        ts: i64,
        wall_offset: i64,
        row: &[u8],
    ) -> Result<(), Refused> {
        let source = self.sources.get_mut(source).ok_or(Refused::Undeclared);
        let result = source.and_then(|s| {
            if stream >= s.declared.streams.len() {
                return Err(Refused::Undeclared);
            }
            let latest = s.latest.get_mut(stream).ok_or(Refused::Undeclared)?;
            let mut kept = Observation {
                stream: stream as u8,
                len: row.len() as u8,
                ts,
                wall_offset,
                row: [0; ROW_BYTES],
            };
            kept.row
                .get_mut(..row.len())
                .ok_or(Refused::TooLarge)?
                .copy_from_slice(row);
            *latest = Some(kept);
            s.last_ts = s.last_ts.max(ts);
            s.pending.push(kept).map_err(|_| Refused::Full)
        });
        if result.is_err() {
            self.dropped.rows += 1;
        }
        result
    }

    /// Add or change an index slot; sent at the end of the interval.
    pub fn set_slot(&mut self, source: usize, key: &[u8], value: &[u8]) -> Result<(), Refused> {
        let result = self.index(source).and_then(|index| {
            let value = Vec::from_slice(value).map_err(|_| Refused::TooLarge)?;
            let key = Vec::<u8, KEY_BYTES>::from_slice(key).map_err(|_| Refused::TooLarge)?;
            if let Some(slot) = Slot::live(&mut index.slots, &key) {
                if slot.value != value {
                    let was = Slot::hashed(&key, &slot.value);
                    index.hash.replace(&was, &Slot::hashed(&key, &value));
                    slot.value = value;
                    slot.state = SlotState::Changed;
                }
                return Ok(());
            }
            // A new slot: in its own entry if it was removed since the last
            // entry (the Delta then carries it as set), else in a free one,
            // else in one whose removal is not sent yet, which only a Full
            // can then say.
            let entry = |want: SlotState, key: Option<&[u8]>| {
                let matches = |s: &Slot| s.state == want && key.is_none_or(|k| s.key == k);
                index.slots.iter().position(matches)
            };
            let at = entry(SlotState::Removed, Some(&key))
                .or_else(|| entry(SlotState::Free, None))
                .or_else(|| {
                    let at = entry(SlotState::Removed, None)?;
                    index.full_due = true;
                    Some(at)
                });
            let slot = at
                .and_then(|at| index.slots.get_mut(at))
                .ok_or(Refused::Full)?;
            index.hash.insert(&Slot::hashed(&key, &value));
            *slot = Slot {
                state: SlotState::Changed,
                key,
                value,
            };
            Ok(())
        });
        if result.is_err() {
            self.dropped.slots += 1;
        }
        result
    }

    /// Remove an index slot; sent at the end of the interval. Removing one
    /// that is not there changes nothing.
    pub fn remove_slot(&mut self, source: usize, key: &[u8]) -> Result<(), Refused> {
        let index = self.index(source)?;
        let Some(slot) = Slot::live(&mut index.slots, key) else {
            return Ok(());
        };
        slot.state = SlotState::Removed;
        index.hash.remove(&Slot::hashed(&slot.key, &slot.value));
        Ok(())
    }

    fn index(&mut self, source: usize) -> Result<&mut SlotIndex, Refused> {
        let s = self.sources.get_mut(source).ok_or(Refused::Undeclared)?;
        s.index.as_mut().ok_or(Refused::Undeclared)
    }

    /// End the interval: on a new connection its opening (every handshake,
    /// a `Full` per indexed source, a `Rows` frame per source with the
    /// latest of every stream); otherwise, per source, index changes first,
    /// then exactly one `Rows` frame, empty when nothing was observed
    /// (rules 4, 6, 7). Each frame is written into `buf`, then transmitted.
    pub fn end_interval(&mut self, buf: &mut [u8], out: &mut impl Transmit) {
        let mut wire = Wire {
            rules: &mut self.rules,
            dropped: &mut self.dropped,
            buf,
            out,
        };
        let opening = self.connection == Connection::Opening;
        if opening {
            wire.rules.reset();
            for s in &self.sources {
                wire.handshake(s);
            }
            self.connection = Connection::Open;
        }
        for (ordinal, s) in (0u32..).zip(&mut self.sources) {
            if self.connection == Connection::None {
                wire.dropped.rows += s.pending.len() as u32;
            } else {
                wire.index_entry(ordinal, s, opening, self.full_every);
                wire.rows(ordinal, s, opening);
            }
            s.pending.clear();
        }
    }
}

/// What a frame is written with and sent through.
struct Wire<'a, T> {
    rules: &'a mut Publisher<SOURCES>,
    dropped: &'a mut Dropped,
    buf: &'a mut [u8],
    out: &'a mut T,
}

impl<T: Transmit> Wire<'_, T> {
    /// Transmit the frame an encoder wrote into the buffer, or count it
    /// dropped.
    fn send(&mut self, written: Result<usize, dendro_wire_core::Error>) -> bool {
        match written.ok().and_then(|n| self.buf.get(..n)) {
            Some(frame) => {
                self.out.transmit(frame);
                true
            }
            None => {
                self.dropped.frames += 1;
                false
            }
        }
    }

    fn handshake(&mut self, s: &Source) {
        let Ok(ordinal) = self.rules.handshake(s.next_seq) else {
            self.dropped.frames += 1;
            return;
        };
        let d = s.declared;
        let handshake = Handshake {
            source: ordinal,
            uuid: Some(d.uuid),
            labels: Map::from_pairs(d.labels),
            metadata: Map::from_pairs(d.metadata),
            clock_anchor_wall_ns: d.clock_anchor_wall_ns,
            complete: false,
        };
        let written = handshake.emit(self.buf);
        self.send(written);
    }

    /// The source's index entry, if one is due: a `Full` when a connection
    /// opens or every `full_every` intervals, else a `Delta` when slots
    /// changed.
    fn index_entry(&mut self, ordinal: u32, s: &mut Source, opening: bool, full_every: u32) {
        let Some(index) = s.index.as_mut() else {
            return;
        };
        index.intervals_since_full += 1;
        let kind = if opening || index.full_due || index.intervals_since_full >= full_every {
            IndexKind::Full
        } else if index.changed() {
            IndexKind::Delta
        } else {
            return;
        };
        // Rule 5: a row is read against entries at or before its
        // timestamp, so the entry is stamped no later than any row sent
        // after it in this interval.
        let rows_after = if opening {
            s.latest.iter().flatten().map(|o| o.ts).min()
        } else {
            s.pending.iter().map(|o| o.ts).min()
        };
        let mut blob = [0u8; BLOB_BYTES];
        let Some(blob) = index.blob(kind, &mut blob) else {
            self.dropped.frames += 1;
            return;
        };
        // The ledger refuses a Delta before this connection's Full.
        if self.rules.index(ordinal, kind).is_err() {
            self.dropped.frames += 1;
            return;
        }
        let entry = Index {
            source: ordinal,
            stream: index.stream,
            ts: rows_after.unwrap_or(s.last_ts),
            kind,
            state: index.hash.state(),
            blob,
        };
        let written = entry.emit(self.buf);
        if self.send(written) {
            index.sent(kind);
        }
    }

    /// The source's one `Rows` frame: this interval's rows, or on a new
    /// connection the latest of every stream (rule 3).
    fn rows(&mut self, ordinal: u32, s: &mut Source, opening: bool) {
        let state: IndexState = s.index.as_ref().map_or(NO_INDEX_STATE, |i| i.hash.state());
        let built = self.rules.next_seq(ordinal).ok().and_then(|seq| {
            s.next_seq = seq.wrapping_add(1);
            RowsBuilder::new(self.buf, ordinal, seq, state).ok()
        });
        let Some(mut frame) = built else {
            self.dropped.frames += 1;
            self.dropped.rows += s.pending.len() as u32;
            return;
        };
        let streams = s.declared.streams;
        let dropped = &mut *self.dropped;
        let mut push = |o: &Observation| {
            let row = Row {
                stream: streams.get(usize::from(o.stream)).copied().unwrap_or(""),
                ts: o.ts,
                wall_offset: o.wall_offset,
                row: o.row.get(..usize::from(o.len)).unwrap_or(&[]),
            };
            if frame.push(&row).is_err() {
                dropped.rows += 1;
            }
        };
        if opening {
            s.latest.iter().flatten().for_each(&mut push);
        } else {
            s.pending.iter().for_each(&mut push);
        }
        let written = frame.finish();
        self.send(written);
    }
}
