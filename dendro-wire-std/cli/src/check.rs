//! `dendro-wire check`: read a stream, apply the subscriber's rules to it as
//! a collector would (the library's `SinkSubscriber`, into a sink that only
//! counts), and summarize.

use std::io::Write;
use std::path::PathBuf;

use dendro_wire_std::{CountingSink, FrameReader, Position, SinkSubscriber, Tally};
use serde::Serialize;

use crate::{open_input, stdout, Failure};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The stream to read; `-` or nothing for standard input.
    path: Option<PathBuf>,
    /// One JSON object instead of a table, and an error as one too.
    #[arg(long)]
    json: bool,
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

pub(crate) fn run(Args { path, json }: Args) -> Result<(), Failure> {
    let checked = check(open_input(path.as_deref())?);
    let mut out = stdout();
    // `--json` prints the tally's keys, in its order.
    let tally = match checked {
        Ok(tally) => tally,
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
    if json {
        serde_json::to_writer(&mut out, &tally)?;
        writeln!(out)?;
    } else {
        for (key, value) in Tally::NAMES.iter().zip(tally.counts()) {
            writeln!(out, "{key:<16} {value}")?;
        }
    }
    out.flush()?;
    Ok(())
}

/// The subscriber's rules over the whole stream; what broke and where.
fn check(input: impl std::io::Read) -> Result<Tally, (String, Option<Position>)> {
    let read = |e: dendro_wire_std::ReadError| (e.to_string(), e.position());
    let mut reader = FrameReader::new(input).map_err(read)?;
    let mut subscriber = SinkSubscriber::new(CountingSink::default());
    while let Some((frame, at)) = reader.next_frame_at().map_err(read)? {
        subscriber
            .apply(&frame)
            .map_err(|e| (format!("{at}: {e}"), Some(at)))?;
    }
    let mut tally = subscriber.tally();
    // The reader skips unknown kinds before the subscriber sees them, and
    // counts every frame.
    tally.frames = reader.frames();
    tally.unknown_skipped = reader.unknown();
    Ok(tally)
}
