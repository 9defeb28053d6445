//! A stream read as `check` reads it, its rows into each source's columns,
//! whole or a batch at a time: runs of frames with the GIL released, and
//! between them, with it held, columns made or grown for the frame that
//! found no room.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::io;

use dendro_wire_std::{
    Frame, FrameReader, Handshake, OwnedFrame, Position, ReadError, Rows, Sink, SinkError,
    SinkSubscriber, SliceReader, Tally,
};
use pyo3::prelude::*;

use crate::columns::{Columns, Fill, Room, Taken, ROW_FIXED};
use crate::error::Broken;

/// A stream's frames in order: from a file through a reader's buffer, or
/// from bytes in memory where they lie.
pub(crate) trait Frames: Send {
    fn next_frame_at(&mut self) -> Result<Option<(Frame<'_>, Position)>, ReadError>;
    /// Frames cut so far, unknown ones included.
    fn frames(&self) -> u64;
    /// Frames of an unknown kind skipped so far.
    fn unknown(&self) -> u64;
    /// Stream bytes cut so far.
    fn offset(&self) -> u64;
}

impl<R: io::Read + Send> Frames for FrameReader<R> {
    fn next_frame_at(&mut self) -> Result<Option<(Frame<'_>, Position)>, ReadError> {
        FrameReader::next_frame_at(self)
    }
    fn frames(&self) -> u64 {
        FrameReader::frames(self)
    }
    fn unknown(&self) -> u64 {
        FrameReader::unknown(self)
    }
    fn offset(&self) -> u64 {
        FrameReader::offset(self)
    }
}

impl Frames for SliceReader<'_> {
    fn next_frame_at(&mut self) -> Result<Option<(Frame<'_>, Position)>, ReadError> {
        SliceReader::next_frame_at(self)
    }
    fn frames(&self) -> u64 {
        SliceReader::frames(self)
    }
    fn unknown(&self) -> u64 {
        SliceReader::unknown(self)
    }
    fn offset(&self) -> u64 {
        SliceReader::offset(self)
    }
}

/// What the subscriber's rules did with the frame just applied, as far as
/// columns care: whose rows they let through, and how many sources are
/// open.
#[derive(Default)]
struct Applied {
    rows_of: Option<u32>,
    open: usize,
}

impl Sink for Applied {
    fn open_source(&mut self, _: u32, _: &Handshake<'_>) -> Result<(), SinkError> {
        self.open += 1;
        Ok(())
    }

    fn rows(&mut self, source: u32, _: &Rows<'_>) -> Result<(), SinkError> {
        self.rows_of = Some(source);
        Ok(())
    }
}

/// Where a stream ended inside a frame, read with `cut_ok`: the frame's
/// number (from 1), the stream offset it starts at, and the bytes of it
/// that arrived (`check --cut-ok`'s `cut_bytes`).
#[derive(Clone, Copy)]
pub(crate) struct Cut {
    pub(crate) frame: u64,
    pub(crate) offset: u64,
    pub(crate) bytes: u64,
}

/// How much of a stream one call of [`Reading::read`] takes.
#[derive(Clone, Copy)]
pub(crate) enum Budget {
    /// All of it; about this many bytes are left to read.
    Whole { stream_bytes: u64 },
    /// Frames until at least this many rows are applied (a frame's rows
    /// are never split), or the stream ends.
    Rows(usize),
}

/// A stream being read: the subscriber's rules and what they let through
/// so far, kept between calls that each take some of its rows.
pub(crate) struct Reading {
    subscriber: SinkSubscriber<Applied>,
    /// Each handshake, in the order the sources opened.
    pub(crate) handshakes: Vec<(u32, OwnedFrame)>,
    cut_ok: bool,
    /// Where the stream ended inside a frame, if it did under `cut_ok`.
    pub(crate) cut: Option<Cut>,
    ended: bool,
}

/// Why a run of frames stopped.
enum Stop {
    /// The stream ended, cleanly or (under `cut_ok`) inside a frame.
    End,
    /// The budget's rows were applied.
    Full,
    /// `source`'s columns, or its lack of any, had no room for the rows of
    /// `frame`, which the rules let through: they wait for room.
    Room {
        source: u32,
        frame: OwnedFrame,
        /// The rows the source is likely to be given yet.
        more: usize,
    },
}

impl Reading {
    /// A stream about to be read; with `cut_ok`, one that ends inside a
    /// frame (not its preamble) ends there, as under `check --cut-ok`.
    pub(crate) fn new(cut_ok: bool) -> Reading {
        Reading {
            subscriber: SinkSubscriber::new(Applied::default()),
            handshakes: Vec::new(),
            cut_ok,
            cut: None,
            ended: false,
        }
    }

    /// Whether the stream has ended.
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// The counts so far, as `check` counts them: the reader skips unknown
    /// kinds before the subscriber sees them, and counts every frame.
    pub(crate) fn tally(&self, frames: &impl Frames) -> Tally {
        let mut tally = self.subscriber.tally();
        tally.frames = frames.frames();
        tally.unknown_skipped = frames.unknown();
        tally
    }

    /// Frames of `frames` under the subscriber's rules, as many as `budget`
    /// takes; the rows they let through, as each source's columns.
    pub(crate) fn read(
        &mut self,
        py: Python<'_>,
        frames: &mut impl Frames,
        budget: Budget,
    ) -> PyResult<BTreeMap<u32, Taken>> {
        let mut columns: BTreeMap<u32, Columns<'_>> = BTreeMap::new();
        let mut applied = 0;
        loop {
            let mut fills: BTreeMap<u32, Fill<'_>> =
                columns.iter_mut().map(|(&s, c)| (s, c.fill())).collect();
            let stop = py.detach(|| self.run(frames, &mut fills, budget, &mut applied));
            drop(fills);
            let stop = match stop {
                Ok(stop) => stop,
                Err(e) => {
                    self.ended = true;
                    return Err(e.into());
                }
            };
            let Stop::Room {
                source,
                frame,
                more,
            } = stop
            else {
                self.ended |= matches!(stop, Stop::End);
                break;
            };
            frame.with_view(|frame| {
                let Frame::Rows(rows) = frame else {
                    unreachable!("only a Rows frame waits for room")
                };
                let columns = match columns.entry(source) {
                    Entry::Occupied(e) => {
                        let c = e.into_mut();
                        c.resize(room(c.written(), rows, more))?;
                        c
                    }
                    Entry::Vacant(e) => {
                        e.insert(Columns::new(py, room(Room::default(), rows, more)))
                    }
                };
                columns.fill().write(&rows.rows);
                applied += rows.rows.len();
                PyResult::Ok(())
            })?;
        }
        columns
            .into_iter()
            .map(|(s, c)| Ok((s, c.into_python()?)))
            .collect()
    }

    /// Frames applied and their rows written until the stream ends, the
    /// budget is spent, or a source's columns have no room for a frame's
    /// rows; `applied` counts the rows written.
    fn run(
        &mut self,
        frames: &mut impl Frames,
        fills: &mut BTreeMap<u32, Fill<'_>>,
        budget: Budget,
        applied: &mut usize,
    ) -> Result<Stop, Broken> {
        loop {
            if matches!(budget, Budget::Rows(rows) if *applied >= rows) {
                return Ok(Stop::Full);
            }
            let (frame, at) = match frames.next_frame_at() {
                Ok(Some(next)) => next,
                Ok(None) => return Ok(Stop::End),
                Err(e) => match e.cut_frame_bytes() {
                    Some(have) if self.cut_ok => {
                        self.cut = Some(Cut {
                            frame: e.frame(),
                            offset: e.offset(),
                            bytes: have as u64,
                        });
                        return Ok(Stop::End);
                    }
                    _ => return Err(e.into()),
                },
            };
            self.subscriber
                .apply(&frame)
                .map_err(|e| Broken::rule(at, e))?;
            let rows = match &frame {
                Frame::Handshake(h) => {
                    self.handshakes.push((h.source, OwnedFrame::from(&frame)));
                    continue;
                }
                Frame::Rows(rows) => rows,
                _ => continue,
            };
            let Some(source) = self.subscriber.sink_mut().rows_of.take() else {
                continue;
            };
            match fills.get_mut(&source) {
                Some(fill) if fill.fits(Room::at_most(rows)) => {
                    fill.write(&rows.rows);
                    *applied += rows.rows.len();
                }
                _ => {
                    let row_bytes = Room::at_most(rows).bytes.div_ceil(rows.rows.len().max(1));
                    let frame = OwnedFrame::from(&frame);
                    let open = self.subscriber.sink().open.max(1);
                    let more = match budget {
                        // The source's share of the stream left (its bytes
                        // over the sources open), at these rows' bytes a row,
                        // and an eighth more: room never written is memory
                        // never touched, and room grown later is (numpy
                        // zeroes it).
                        Budget::Whole { stream_bytes } => {
                            let left = stream_bytes.saturating_sub(frames.offset());
                            let share = usize::try_from(left).unwrap_or(usize::MAX)
                                / (row_bytes + ROW_FIXED)
                                / open;
                            share.saturating_add(share / 8)
                        }
                        Budget::Rows(rows) => rows.saturating_sub(*applied) / open,
                    };
                    return Ok(Stop::Room {
                        source,
                        frame,
                        more,
                    });
                }
            }
        }
    }
}

/// The room a source's columns are given when `rows` find too little: what
/// they hold, these rows, and `more` rows at these rows' bytes a row, or, if
/// that is less, a quarter of what they hold (a stream of unknown length
/// grows its columns by a quarter at a time: numpy zeroes what a resize
/// adds, so room grown is memory touched, and a quarter is the most a
/// source's columns then hold unused).
fn room(written: Room, rows: &Rows<'_>, more: usize) -> Room {
    let exactly = Room::exactly(rows);
    let n = exactly.rows.max(1);
    let row_bytes = Room::at_most(rows).bytes.div_ceil(n);
    let more = more.max(written.rows / 4).max(FIRST_ROWS);
    Room {
        rows: written.rows + exactly.rows + more,
        bytes: (written.bytes + exactly.bytes).saturating_add(more.saturating_mul(row_bytes)),
    }
}

/// The fewest rows columns are made or grown by: a few pages of each array.
const FIRST_ROWS: usize = 1024;
