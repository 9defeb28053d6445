//! [`Scanner`]: every stream found in bytes that are not one clean stream —
//! a capture cut before its preamble, captures concatenated (`cat a.dwr
//! b.dwr`), a raw dump of a connection's payload — each read as a stream
//! from its preamble on, and every byte that is in none of them said so.
//!
//! Nothing is guessed: a stream starts only at a whole preamble (the magic
//! and version 1, found with `memchr::memmem`), and is read by the same cut
//! as every receiver's ([`FrameReader`](crate::FrameReader)'s), frame by
//! frame, every rule of the spec checked. A stream ends cleanly at the end
//! of the input or where the next preamble starts, each at a frame
//! boundary; any other end is its error, and the bytes from the frame it
//! broke at are searched again for the next preamble, so a stream cut
//! short and followed by another is found too. The bytes before the first
//! preamble, between a stream's error and the next preamble, and after the
//! last stream are reported as [`Found::Unread`]: where and how many, never
//! read as frames.
//!
//! Every preamble starts a stream, one inside the bytes a frame's length
//! claims too: a stream cut inside a frame can have the next stream's
//! first bytes fill that frame's claimed length, so a frame whose bytes
//! hold the start of a preamble is taken as cut there (its stream ends,
//! truncated) and the next stream is read from its preamble. Whether
//! bytes that follow such a frame would read as frames is not asked: random
//! bytes often do, so it would be a guess. A frame that carries the 14
//! bytes of a preamble as its own (a row or a file holding one) is so cut
//! too; the scan is for bytes that are not one clean stream, and
//! `dump`/`check` without `--scan` read a stream as one.

use std::io::{self, Read};

use dendro_wire_core::{Frame, FrameDecoder, Status, PREAMBLE, PREAMBLE_BYTES};
use memchr::memmem;

use crate::cut::{Cut, Cutter};
use crate::read_error::{Position, ReadError, ReadErrorKind};

/// How much is read at a time: large enough that the search runs over long
/// runs of bytes, small enough to stay in a core's cache.
const CHUNK: usize = 256 * 1024;

/// What a [`Scanner`] found next, in the order of the input.
#[derive(Debug)]
pub enum Found<'a> {
    /// `len` bytes from `offset` (in the input) that are in no stream: before
    /// the first preamble, from the frame a stream broke at to the next
    /// preamble, or after the last stream.
    Unread {
        /// Where they start in the input.
        offset: u64,
        /// How many.
        len: u64,
    },
    /// A preamble at `offset` in the input: a stream starts there, and its
    /// frames come next.
    Stream {
        /// Where its preamble starts in the input.
        offset: u64,
    },
    /// The next frame of the stream found last, borrowed from the scanner's
    /// buffer, and where it stood in that stream (its number from 1, and its
    /// offset from the stream's preamble: add the stream's `offset` for the
    /// input's).
    Frame(Frame<'a>, Position),
    /// The stream found last has ended: how, and what it held.
    End(StreamEnd),
}

/// How a stream found by a [`Scanner`] ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct StreamEnd {
    /// Where its preamble starts in the input.
    pub offset: u64,
    /// Its bytes read as a stream: the preamble and every whole frame before
    /// the end (or before the frame it broke at).
    pub len: u64,
    /// Frames cut from it, unknown kinds (and a frame it broke at) included.
    pub frames: u64,
    /// Frames of an unknown kind among them.
    pub unknown: u64,
    /// `None` for a clean end: the input ended, or the next preamble
    /// started, at a frame boundary. Otherwise what broke the stream and
    /// where in it (as [`FrameReader`](crate::FrameReader) would say); the
    /// bytes from there are searched for the next preamble.
    pub error: Option<ReadError>,
}

/// Every stream in the bytes of a `Read`, each from its preamble, and what
/// lies between them.
///
/// [`next`](Self::next) hands out what comes next in the input: bytes in no
/// stream ([`Found::Unread`]), a stream's start ([`Found::Stream`]), its
/// frames one at a time ([`Found::Frame`]), its end ([`Found::End`]), and
/// so on to the end of the input. Memory follows the bytes that arrived:
/// 256 KiB at a time while searching, and as much as the frame in hand
/// reaches while reading a stream (the protocol's 64 MiB limit checked
/// first).
///
/// ```
/// use dendro_wire_std::scan::{Found, Scanner};
/// use dendro_wire_std::{ClockOffset, Frame, FrameWriter};
///
/// let mut w = FrameWriter::new(Vec::new())?;
/// w.write_frame(&Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 }))?;
/// let stream = w.into_inner();
/// // Garbage, two captures back to back, and a cut one.
/// let blob = [&b"garbage"[..], &stream, &stream, &stream[..stream.len() - 3]].concat();
///
/// let mut scanner = Scanner::new(&blob[..]);
/// let mut seen = Vec::new();
/// while let Some(found) = scanner.next()? {
///     seen.push(match found {
///         Found::Unread { offset, len } => format!("{len} unread at {offset}"),
///         Found::Stream { offset } => format!("stream at {offset}"),
///         Found::Frame(_, at) => format!("frame {}", at.frame),
///         Found::End(end) => format!("end, {}", if end.error.is_none() { "clean" } else { "broken" }),
///     });
/// }
/// assert_eq!(seen, [
///     "7 unread at 0",
///     "stream at 7", "frame 1", "end, clean",
///     "stream at 46", "frame 1", "end, clean",
///     "stream at 85", "end, broken", "22 unread at 99",
/// ]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Scanner<R> {
    input: R,
    finder: memmem::Finder<'static>,
    decoder: FrameDecoder,
    yield_unknown: bool,
    buf: Vec<u8>,
    /// The first byte not yet consumed.
    start: usize,
    /// The end of the bytes read.
    end: usize,
    /// The input's offset of `buf[start]`.
    at: u64,
    /// Bytes of the frame handed out last, consumed at the next call.
    pending: usize,
    eof: bool,
    state: State,
}

enum State {
    /// Looking for a preamble; bytes in no stream began at `from`.
    Searching { from: u64 },
    /// A preamble found at `offset` and not yet handed out as a stream.
    Found { offset: u64 },
    /// Reading the stream whose preamble is at `offset`.
    Reading { offset: u64, cutter: Cutter },
    /// A stream ended by [`Scanner::end_stream`], its end not yet handed
    /// out.
    Ending(StreamEnd),
    /// The input has ended and everything in it was handed out.
    Done,
}

impl<R> std::fmt::Debug for Scanner<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanner")
            .field("offset", &self.at)
            .field("buffer", &self.buf.len())
            .finish_non_exhaustive()
    }
}

impl<R: Read> Scanner<R> {
    /// A scanner of `input`, with the protocol's frame limit.
    pub fn new(input: R) -> Self {
        Self::with_decoder(input, FrameDecoder::new())
    }

    /// A scanner whose streams' frames are decoded by `decoder`, whose
    /// limit bounds a frame.
    pub fn with_decoder(input: R, decoder: FrameDecoder) -> Self {
        Scanner {
            input,
            finder: memmem::Finder::new(&PREAMBLE).into_owned(),
            decoder,
            yield_unknown: false,
            buf: Vec::new(),
            start: 0,
            end: 0,
            at: 0,
            pending: 0,
            eof: false,
            state: State::Searching { from: 0 },
        }
    }

    /// Hand out frames of unknown kinds as [`Frame::Unknown`] instead of
    /// skipping them, as [`FrameReader::yield_unknown`](crate::FrameReader::yield_unknown)
    /// does. Either way they are counted in [`StreamEnd::unknown`].
    pub fn yield_unknown(mut self, yield_unknown: bool) -> Self {
        self.yield_unknown = yield_unknown;
        self
    }

    /// Bytes of the input consumed so far: what has been handed out.
    pub fn offset(&self) -> u64 {
        self.at + self.pending as u64
    }

    /// End the stream being read at the frame handed out last, as if it
    /// had broken there (a caller's own rule refused it, say): that frame
    /// and what follows are searched for the next preamble, and reported as
    /// unread up to it. The next call to [`next`](Self::next) hands out the
    /// stream's [`Found::End`], with `error` as given.
    pub fn end_stream(&mut self, error: Option<ReadError>) {
        if let State::Reading { .. } = self.state {
            // The frame handed out last is not consumed: its start is `at`.
            self.pending = 0;
            self.state = State::Ending(ended(&mut self.state, self.at, error));
        }
    }

    /// What comes next in the input, or `None` once all of it has been
    /// handed out. An error is the input's own (a read that failed), and
    /// ends the scan; a stream's errors are in its [`Found::End`].
    // Not `Iterator`: a frame borrows the scanner's buffer.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> io::Result<Option<Found<'_>>> {
        let handed_out = std::mem::take(&mut self.pending);
        self.consume(handed_out);
        loop {
            match &mut self.state {
                State::Done => return Ok(None),
                State::Searching { from } => {
                    let from = *from;
                    let held = &self.buf[self.start..self.end];
                    if let Some(i) = self.finder.find(held) {
                        let offset = self.at + i as u64;
                        self.consume(i);
                        self.state = State::Found { offset };
                        if offset > from {
                            return Ok(Some(unread(from, offset)));
                        }
                    } else if self.eof {
                        let n = held.len();
                        let to = self.at + n as u64;
                        self.consume(n);
                        self.state = State::Done;
                        if to > from {
                            return Ok(Some(unread(from, to)));
                        }
                    } else {
                        // A preamble may start in the last bytes held and
                        // end in the next read.
                        let n = held.len();
                        self.consume(n - n.min(PREAMBLE_BYTES - 1));
                        self.fill()?;
                    }
                }
                State::Ending(_) => {
                    let next = State::Searching { from: self.at };
                    let State::Ending(end) = std::mem::replace(&mut self.state, next) else {
                        unreachable!("matched above");
                    };
                    return Ok(Some(Found::End(end)));
                }
                State::Found { offset } => {
                    let offset = *offset;
                    let mut cutter = Cutter::new(self.decoder);
                    cutter.set_yield_unknown(self.yield_unknown);
                    self.state = State::Reading { offset, cutter };
                    return Ok(Some(Found::Stream { offset }));
                }
                State::Reading { cutter, .. } => {
                    let held = &self.buf[self.start..self.end];
                    // At a frame boundary: the next stream's preamble ends
                    // this one. No frame starts with the magic (as a length
                    // it is above any limit), so this is never a guess.
                    if cutter.preamble_read() {
                        let n = held.len().min(PREAMBLE_BYTES);
                        if n > 0 && held[..n] == PREAMBLE[..n] {
                            if n < PREAMBLE_BYTES && !self.eof {
                                self.fill()?;
                                continue;
                            }
                            // A whole preamble, or the start of one cut by
                            // the end of the input: either way not a frame.
                            let end = ended(&mut self.state, self.at, None);
                            return Ok(Some(Found::End(end)));
                        }
                    }
                    // A preamble may start inside the next frame and end
                    // past it: have its bytes in hand before cutting.
                    if cutter.preamble_read() && !self.eof {
                        if let Ok(Status::Complete(total)) = self.decoder.frame_len(held) {
                            let want = total + PREAMBLE_BYTES - 1;
                            if held.len() >= total && held.len() < want {
                                self.fill()?;
                                continue;
                            }
                        }
                    }
                    let cut = cutter.cut(held);
                    // A frame whose bytes hold a preamble was cut short by
                    // the next stream, whose first bytes filled its claimed
                    // length: the stream ends inside it, and the search
                    // starts again at its first byte (so finds that
                    // preamble).
                    let framed = match &cut {
                        Ok(Cut::Frame(n, at)) => Some((*n, *at)),
                        // An unknown kind skipped (the preamble's own skip
                        // comes first, before any frame).
                        Ok(Cut::Skip(n)) if cutter.frames() > 0 => {
                            let at = Position {
                                frame: cutter.frames(),
                                offset: cutter.offset() - *n as u64,
                            };
                            Some((*n, at))
                        }
                        _ => None,
                    };
                    // From its second byte (its length prefix is never the
                    // magic, checked above) to a preamble that starts in it
                    // and ends past it.
                    let inside = framed.and_then(|(n, at)| {
                        let window = held.get(1..(n + PREAMBLE_BYTES - 1).min(held.len()))?;
                        let i = self.finder.find(window)? + 1;
                        Some((n, at, i))
                    });
                    if let Some((n, at, have)) = inside {
                        let error = ReadError::new(
                            ReadErrorKind::Truncated { needed: n, have },
                            at.frame,
                            at.offset,
                        );
                        let end = ended(&mut self.state, self.at, Some(error));
                        return Ok(Some(Found::End(end)));
                    }
                    let error = match cut {
                        Ok(Cut::Skip(n)) => {
                            self.consume(n);
                            continue;
                        }
                        Ok(Cut::Need(_)) if !self.eof => {
                            self.fill()?;
                            continue;
                        }
                        Ok(Cut::Need(needed)) => cutter.end_of_stream(held.len(), needed).err(),
                        Ok(Cut::Frame(n, at)) => {
                            let bytes = &self.buf[self.start..self.start + n];
                            match cutter.decode(bytes, at) {
                                Ok(frame) => {
                                    self.pending = n;
                                    return Ok(Some(Found::Frame(frame, at)));
                                }
                                Err(e) => Some(e),
                            }
                        }
                        Err(e) => Some(e),
                    };
                    // Only fields apart from the buffer change here: a frame
                    // of it may have been handed out on the other path.
                    let end = ended(&mut self.state, self.at, error);
                    return Ok(Some(Found::End(end)));
                }
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.at += n as u64;
    }

    /// Read once more, into room for at least [`CHUNK`] bytes: the buffer
    /// is compacted first, and grows (doubling) only when the bytes held
    /// fill it. Sets `eof` at the end of the input.
    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 && self.buf.len() - self.end < CHUNK {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < CHUNK {
            let len = (2 * self.buf.len()).max(self.end + CHUNK);
            self.buf.resize(len, 0);
        }
        loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// The stream being read ends at `at`, where the bytes not yet consumed
/// start; they are searched next.
fn ended(state: &mut State, at: u64, error: Option<ReadError>) -> StreamEnd {
    match std::mem::replace(state, State::Searching { from: at }) {
        State::Reading { offset, cutter } => StreamEnd {
            offset,
            len: at - offset,
            frames: cutter.frames(),
            unknown: cutter.unknown(),
            error,
        },
        _ => unreachable!("a stream ends only while one is read"),
    }
}

fn unread(from: u64, to: u64) -> Found<'static> {
    Found::Unread {
        offset: from,
        len: to - from,
    }
}
