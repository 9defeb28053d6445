//! A whole stream read as `check` reads it, its rows into each source's
//! columns: runs of frames with the GIL released, and between them, with
//! it held, columns made or grown for the frame that found no room.

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

/// A stream read whole: its counts, each handshake in the order the
/// sources opened, and each source's columns.
pub(crate) struct Whole {
    pub(crate) tally: Tally,
    pub(crate) handshakes: Vec<(u32, OwnedFrame)>,
    pub(crate) columns: BTreeMap<u32, Taken>,
}

/// Why a run of frames stopped.
enum Stop {
    /// The stream ended cleanly.
    End,
    /// `source`'s columns, or its lack of any, had no room for the rows of
    /// `frame`, which the rules let through: they wait for room.
    Room {
        source: u32,
        frame: OwnedFrame,
        /// Stream bytes after the frame, if the stream's length is known.
        left: u64,
        open: usize,
    },
}

/// Every frame of a stream of about `stream_bytes`, under the subscriber's
/// rules, its rows into columns.
pub(crate) fn read_whole(
    py: Python<'_>,
    mut frames: impl Frames,
    stream_bytes: u64,
) -> PyResult<Whole> {
    let mut subscriber = SinkSubscriber::new(Applied::default());
    let mut handshakes = Vec::new();
    let mut columns: BTreeMap<u32, Columns<'_>> = BTreeMap::new();
    loop {
        let mut fills: BTreeMap<u32, Fill<'_>> =
            columns.iter_mut().map(|(&s, c)| (s, c.fill())).collect();
        let stop = py.detach(|| {
            run(
                &mut frames,
                &mut subscriber,
                &mut handshakes,
                &mut fills,
                stream_bytes,
            )
        })?;
        drop(fills);
        let Stop::Room {
            source,
            frame,
            left,
            open,
        } = stop
        else {
            break;
        };
        frame.with_view(|frame| {
            let Frame::Rows(rows) = frame else {
                unreachable!("only a Rows frame waits for room")
            };
            let columns = match columns.entry(source) {
                std::collections::btree_map::Entry::Occupied(e) => {
                    let c = e.into_mut();
                    c.resize(room(c.written(), rows, left, open))?;
                    c
                }
                std::collections::btree_map::Entry::Vacant(e) => e.insert(Columns::new(
                    py,
                    room(Room { rows: 0, bytes: 0 }, rows, left, open),
                )),
            };
            columns.fill().write(&rows.rows);
            PyResult::Ok(())
        })?;
    }
    let mut tally = subscriber.tally();
    // As `check` counts: the reader skips unknown kinds before the
    // subscriber sees them, and counts every frame.
    tally.frames = frames.frames();
    tally.unknown_skipped = frames.unknown();
    Ok(Whole {
        tally,
        handshakes,
        columns: columns
            .into_iter()
            .map(|(s, c)| Ok((s, c.into_python()?)))
            .collect::<PyResult<_>>()?,
    })
}

/// Frames applied and their rows written until the stream ends or a
/// source's columns have no room for a frame's rows.
fn run(
    frames: &mut impl Frames,
    subscriber: &mut SinkSubscriber<Applied>,
    handshakes: &mut Vec<(u32, OwnedFrame)>,
    fills: &mut BTreeMap<u32, Fill<'_>>,
    stream_bytes: u64,
) -> Result<Stop, Broken> {
    loop {
        let Some((frame, at)) = frames.next_frame_at()? else {
            return Ok(Stop::End);
        };
        subscriber.apply(&frame).map_err(|e| Broken {
            message: format!("{at}: {e}"),
            at: Some(at),
        })?;
        match &frame {
            Frame::Handshake(h) => handshakes.push((h.source, OwnedFrame::from(&frame))),
            Frame::Rows(rows) => {
                let Some(source) = subscriber.sink_mut().rows_of.take() else {
                    continue;
                };
                match fills.get_mut(&source) {
                    Some(fill) if fill.fits(Room::at_most(rows)) => fill.write(&rows.rows),
                    _ => {
                        return Ok(Stop::Room {
                            source,
                            frame: OwnedFrame::from(&frame),
                            left: stream_bytes.saturating_sub(frames.offset()),
                            open: subscriber.sink().open,
                        })
                    }
                }
            }
            _ => {}
        }
    }
}

/// The room a source's columns are given when `rows` find too little: what
/// they hold, these rows, and the source's share of the stream left (its
/// bytes over the sources open) at these rows' bytes a row, or, if that is
/// less, twice what they hold. The guess errs large: room in columns just
/// made is memory not touched until written, and what is left is cut off at
/// the end.
fn room(written: Room, rows: &Rows<'_>, left: u64, open: usize) -> Room {
    let exactly = Room::exactly(rows);
    let n = exactly.rows.max(1);
    let row_bytes = Room::at_most(rows).bytes.div_ceil(n);
    // The stream's bytes a row such as these takes.
    let wire = row_bytes + ROW_FIXED;
    let share = usize::try_from(left).unwrap_or(usize::MAX) / wire / open.max(1);
    let more = share.max(written.rows);
    Room {
        rows: written.rows + exactly.rows + more,
        bytes: (written.bytes + exactly.bytes).saturating_add(more.saturating_mul(row_bytes)),
    }
}
