//! `dendro-wire check`: read a stream, apply the subscriber's rules to it as
//! a collector would (the library's `SinkSubscriber`, into a sink that only
//! counts), and summarize.

use std::io::Write;
use std::path::PathBuf;

use dendro_wire_std::{Applied, CountingSink, FrameReader, Position, SinkSubscriber};
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

/// The summary; `--json` prints exactly these keys, in this order.
#[derive(Serialize)]
struct Summary {
    frames: u64,
    sources: u64,
    index_entries: u64,
    rows_applied: u64,
    rows_skipped: u64,
    segments: u64,
    clock_offsets: u64,
    source_updates: u64,
    unknown_skipped: u64,
    gaps: u64,
    frames_lost: u64,
    seq_regressions: u64,
}

impl Summary {
    fn new(frames: u64, a: Applied) -> Summary {
        Summary {
            frames,
            sources: a.sources,
            index_entries: a.index_entries,
            rows_applied: a.rows,
            rows_skipped: a.rows_skipped,
            segments: a.segments + a.segments_held,
            clock_offsets: a.clock_offsets,
            source_updates: a.source_updates,
            unknown_skipped: a.unknown,
            gaps: a.gaps,
            frames_lost: a.frames_lost,
            seq_regressions: a.seq_regressions,
        }
    }

    /// The fields in order, for the table.
    fn fields(&self) -> [(&'static str, u64); 12] {
        [
            ("frames", self.frames),
            ("sources", self.sources),
            ("index_entries", self.index_entries),
            ("rows_applied", self.rows_applied),
            ("rows_skipped", self.rows_skipped),
            ("segments", self.segments),
            ("clock_offsets", self.clock_offsets),
            ("source_updates", self.source_updates),
            ("unknown_skipped", self.unknown_skipped),
            ("gaps", self.gaps),
            ("frames_lost", self.frames_lost),
            ("seq_regressions", self.seq_regressions),
        ]
    }
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
    let summary = match checked {
        Ok(summary) => summary,
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
        serde_json::to_writer(&mut out, &summary)?;
        writeln!(out)?;
    } else {
        for (key, value) in summary.fields() {
            writeln!(out, "{key:<16} {value}")?;
        }
    }
    out.flush()?;
    Ok(())
}

/// The subscriber's rules over the whole stream; what broke and where.
fn check(input: impl std::io::Read) -> Result<Summary, (String, Option<Position>)> {
    let read = |e: dendro_wire_std::ReadError| (e.to_string(), e.position());
    let mut reader = FrameReader::new(input).map_err(read)?;
    let mut subscriber = SinkSubscriber::new(CountingSink::default());
    while let Some((frame, at)) = reader.next_frame_at().map_err(read)? {
        subscriber
            .apply(&frame)
            .map_err(|e| (format!("{at}: {e}"), Some(at)))?;
    }
    let mut applied = subscriber.applied();
    applied.unknown = reader.unknown();
    Ok(Summary::new(reader.frames(), applied))
}
