//! `dendro-wire check`: read a stream, apply the subscriber's rules to it as
//! a collector would (the library's `SinkSubscriber`, into a sink that only
//! counts), and summarize.

use std::io::Write;
use std::path::PathBuf;

use dendro_wire_std::{CountingSink, FrameReader, Position, ReadErrorKind, SinkSubscriber, Tally};
use serde::Serialize;

use crate::{open_input, stdout, Failure};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The stream to read; `-` or nothing for standard input.
    path: Option<PathBuf>,
    /// One JSON object instead of a table, and an error as one too.
    #[arg(long)]
    json: bool,
    /// A stream that ends inside a frame (the capture of a connection cut
    /// off) is checked up to that frame, not refused: the bytes of the cut
    /// frame are reported as `cut_bytes`. A cut preamble is still an error.
    #[arg(long)]
    cut_ok: bool,
}

/// What `--cut-ok` prints: the tally, and the bytes of a frame the stream
/// ended inside (0 if it ended at a frame boundary).
#[derive(Serialize)]
struct CutTally {
    #[serde(flatten)]
    tally: Tally,
    cut_bytes: u64,
}

/// A stream that broke a rule, as `--json` reports it: what, and where.
#[derive(Serialize)]
struct Broken {
    error: String,
    /// The frame, from 1; 0 for the preamble; absent if unknown.
    frame: Option<u64>,
    /// The stream offset the frame starts at.
    offset: Option<u64>,
}

pub(crate) fn run(Args { path, json, cut_ok }: Args) -> Result<(), Failure> {
    let checked = check(open_input(path.as_deref())?, cut_ok);
    let mut out = stdout();
    // `--json` prints the tally's keys, in its order.
    let (tally, cut_bytes) = match checked {
        Ok(checked) => checked,
        Err((message, at)) => {
            if json {
                let broken = Broken {
                    error: message.clone(),
                    frame: at.map(|at| at.frame),
                    offset: at.map(|at| at.offset),
                };
                serde_json::to_writer(&mut out, &broken)?;
                writeln!(out)?;
                out.flush()?;
            }
            return Err(Failure(message));
        }
    };
    match (json, cut_ok) {
        (true, false) => serde_json::to_writer(&mut out, &tally)?,
        (true, true) => serde_json::to_writer(&mut out, &CutTally { tally, cut_bytes })?,
        (false, _) => {
            for (key, value) in Tally::NAMES.iter().zip(tally.counts()) {
                writeln!(out, "{key:<16} {value}")?;
            }
            if cut_ok {
                write!(out, "{:<16} {cut_bytes}", "cut_bytes")?;
            }
        }
    }
    if json || cut_ok {
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// The subscriber's rules over the whole stream, and the bytes of a frame
/// it ended inside if `cut_ok`; what broke and where.
fn check(
    input: impl std::io::Read,
    cut_ok: bool,
) -> Result<(Tally, u64), (String, Option<Position>)> {
    let read = |e: dendro_wire_std::ReadError| (e.to_string(), e.position());
    let mut reader = FrameReader::new(input).map_err(read)?;
    let mut subscriber = SinkSubscriber::new(CountingSink::default());
    let mut cut_bytes = 0;
    loop {
        let (frame, at) = match reader.next_frame_at() {
            Ok(Some(next)) => next,
            Ok(None) => break,
            Err(e) => match (e.kind(), e.position()) {
                // Frame 0 is the preamble: a stream cut there is no stream.
                (ReadErrorKind::Truncated { have, .. }, Some(at)) if cut_ok && at.frame > 0 => {
                    cut_bytes = *have as u64;
                    break;
                }
                _ => return Err(read(e)),
            },
        };
        subscriber
            .apply(&frame)
            .map_err(|e| (format!("{at}: {e}"), Some(at)))?;
    }
    let mut tally = subscriber.tally();
    // The reader skips unknown kinds before the subscriber sees them, and
    // counts every frame.
    tally.frames = reader.frames();
    tally.unknown_skipped = reader.unknown();
    Ok((tally, cut_bytes))
}
