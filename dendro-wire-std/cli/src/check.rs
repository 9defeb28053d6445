//! `dendro-wire check`: read a stream, apply the subscriber's rules to it as
//! a collector would (the library's `SinkSubscriber`, into a sink that only
//! counts), and summarize.

use std::io::{Read, Write};
use std::path::PathBuf;

use dendro_wire_std::{CountingSink, FrameReader, Position, SinkSubscriber, Tally};
use serde::Serialize;

use crate::inputs::{each_input, prefix, Report};
use crate::Failure;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The streams to read, each checked and reported in turn; `-` or
    /// nothing for standard input.
    paths: Vec<PathBuf>,
    /// One JSON object instead of a table, and an error as one too.
    #[arg(long)]
    json: bool,
    /// Fail (exit 1) on a stream that keeps every rule but lost frames
    /// (gaps), skipped rows, or went back in seq.
    #[arg(long)]
    strict: bool,
}

/// A stream that broke a rule, as `--json` reports it: what, and where.
#[derive(Serialize)]
struct Broken<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    error: String,
    /// The frame, from 1; 0 for the preamble; absent if unknown.
    frame: Option<u64>,
    /// The stream offset the frame starts at.
    offset: Option<u64>,
}

/// A stream's counts as `--json` reports them, with the input's path when
/// there are several.
#[derive(Serialize)]
struct Checked<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(flatten)]
    tally: Tally,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    each_input("check", &args.paths, |label, input| {
        one(&args, label, input)
    })
}

/// Check `input` as one stream.
fn one(args: &Args, label: Option<&str>, input: Box<dyn Read>) -> Result<(), Failure> {
    let mut out = Report::new();
    let tally = match check(input) {
        Ok(tally) => tally,
        Err((message, at)) => {
            if args.json {
                let broken = Broken {
                    path: label,
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
    if args.json {
        let checked = Checked { path: label, tally };
        serde_json::to_writer(&mut out, &checked)?;
        writeln!(out)?;
    } else {
        table(&mut out, &prefix(label), "", &tally)?;
    }
    out.flush()?;
    strict(args, &tally)
}

/// The counts, one `key value` line each.
fn table(out: &mut impl Write, prefix: &str, indent: &str, tally: &Tally) -> std::io::Result<()> {
    for (key, value) in Tally::NAMES.iter().zip(tally.counts()) {
        writeln!(out, "{prefix}{indent}{key:<16} {value}")?;
    }
    Ok(())
}

/// Under `--strict`, a stream that lost frames, skipped rows or went back
/// in seq fails, saying which.
fn strict(args: &Args, t: &Tally) -> Result<(), Failure> {
    if !args.strict || (t.gaps == 0 && t.rows_skipped == 0 && t.seq_regressions == 0) {
        return Ok(());
    }
    Err(Failure(format!(
        "--strict: {} gap(s) ({} frame(s) lost), {} row(s) skipped, {} seq regression(s)",
        t.gaps, t.frames_lost, t.rows_skipped, t.seq_regressions
    )))
}

/// The subscriber's rules over the whole stream; what broke and where.
fn check(input: impl Read) -> Result<Tally, (String, Option<Position>)> {
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
