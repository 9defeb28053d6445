//! `dendro-wire check`: read a stream, apply the subscriber's rules to it as
//! a collector would (the library's `SinkSubscriber`, into a sink that only
//! counts), and summarize; with `--scan`, every stream found in the input.

use std::io::{Read, Write};
use std::path::PathBuf;

use dendro_wire_std::scan::{Found, Scanner};
use dendro_wire_std::{CountingSink, FrameReader, Position, SinkSubscriber, Tally};
use serde::Serialize;

use crate::failure::Failure;
use crate::inputs::{each_input, prefix, Report};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The streams to read, each checked and reported in turn; `-` or
    /// nothing for standard input.
    paths: Vec<PathBuf>,
    /// One JSON object instead of a table, and an error as one too.
    #[arg(long)]
    json: bool,
    /// Fail (exit 1) on a stream that keeps every rule but lost frames
    /// (gaps), skipped rows, or went back in seq; with `--scan`, also on
    /// bytes in no stream.
    #[arg(long)]
    strict: bool,
    /// Find every stream in the input by its preamble (captures cut or
    /// concatenated, a connection's raw bytes) and check each.
    #[arg(long)]
    scan: bool,
    /// A stream that ends inside a frame (the capture of a connection cut
    /// off) is checked up to that frame, not refused: the bytes of the cut
    /// frame are reported as `cut_bytes`. A cut preamble is still an error.
    /// (`--scan` reports a cut stream as one that broke, with where.)
    #[arg(long, conflicts_with = "scan")]
    cut_ok: bool,
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
/// there are several, and where a scanned stream was found.
#[derive(Serialize)]
struct CheckedJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(flatten)]
    tally: Tally,
    /// Under `--cut-ok`, the bytes of a frame the stream ended inside (0 if
    /// it ended at a frame boundary).
    #[serde(skip_serializing_if = "Option::is_none")]
    cut_bytes: Option<u64>,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    each_input("check", &args.paths, |label, input| {
        let input = match input {
            Ok(input) => input,
            Err(failure) => {
                if args.json {
                    broken(&mut Report::new(), label, &failure.0, None)?;
                }
                return Err(failure);
            }
        };
        if args.scan {
            scan(&args, label, input)
        } else {
            one(&args, label, input)
        }
    })
}

/// `--json`'s line for an input that broke (or could not be opened): what,
/// and where if known.
fn broken(
    out: &mut Report,
    label: Option<&str>,
    error: &str,
    at: Option<Position>,
) -> Result<(), Failure> {
    let broken = Broken {
        path: label,
        error: error.to_string(),
        frame: at.map(|at| at.frame),
        offset: at.map(|at| at.offset),
    };
    serde_json::to_writer(&mut *out, &broken)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Check `input` as one stream.
fn one(args: &Args, label: Option<&str>, input: Box<dyn Read>) -> Result<(), Failure> {
    let mut out = Report::new();
    let (tally, cut_bytes) = match check(input, args.cut_ok) {
        Ok(checked) => checked,
        Err((message, at)) => {
            if args.json {
                broken(&mut out, label, &message, at)?;
            }
            return Err(Failure(message));
        }
    };
    if args.json {
        let checked = CheckedJson {
            path: label,
            stream: None,
            error: None,
            tally,
            cut_bytes: args.cut_ok.then_some(cut_bytes),
        };
        serde_json::to_writer(&mut out, &checked)?;
        writeln!(out)?;
    } else {
        let prefix = prefix(label);
        table(&mut out, &prefix, "", &tally)?;
        if args.cut_ok {
            writeln!(out, "{prefix}{:<16} {cut_bytes}", "cut_bytes")?;
        }
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

/// The subscriber's rules over the whole stream, and the bytes of a frame
/// it ended inside if `cut_ok`; what broke and where.
fn check(input: impl Read, cut_ok: bool) -> Result<(Tally, u64), (String, Option<Position>)> {
    let read = |e: dendro_wire_std::ReadError| (e.to_string(), e.position());
    let mut reader = FrameReader::new(input).map_err(read)?;
    let mut subscriber = SinkSubscriber::new(CountingSink::default());
    let mut cut_bytes = 0;
    loop {
        let (frame, at) = match reader.next_frame_at() {
            Ok(Some(next)) => next,
            Ok(None) => break,
            Err(e) => match e.cut_frame_bytes() {
                Some(have) if cut_ok => {
                    cut_bytes = have as u64;
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

/// Check every stream found in `input`, each under its own subscriber (a
/// new connection's rules), and say where each was and what lay between.
fn scan(args: &Args, label: Option<&str>, input: Box<dyn Read>) -> Result<(), Failure> {
    let mut out = Report::new();
    let prefix = prefix(label);
    let mut scanner = Scanner::new(input);
    let mut subscriber = SinkSubscriber::new(CountingSink::default());
    // The subscriber's refusal of the stream being read, if any.
    let mut refused: Option<String> = None;
    let (mut streams, mut broken, mut unread) = (0u64, 0u64, 0u64);
    let mut failures = Vec::new();
    while let Some(found) = scanner.next()? {
        match found {
            Found::Stream { .. } => {
                subscriber = SinkSubscriber::new(CountingSink::default());
                refused = None;
                streams += 1;
            }
            Found::Frame(frame, at) => {
                if let Err(e) = subscriber.apply(&frame) {
                    refused = Some(format!("{at}: {e}"));
                    scanner.end_stream(None);
                }
            }
            Found::Unread { offset, len } => {
                unread += len;
                if args.json {
                    let line = serde_json::json!({ "path": label, "unread": offset, "len": len });
                    writeln!(out, "{line}")?;
                } else {
                    writeln!(out, "{prefix}unread {len} byte(s) at byte {offset}")?;
                }
            }
            Found::End(end) => {
                let mut tally = subscriber.tally();
                tally.frames = end.frames;
                tally.unknown_skipped = end.unknown;
                let error = end.error.map(|e| e.to_string()).or(refused.take());
                broken += u64::from(error.is_some());
                if args.json {
                    let checked = CheckedJson {
                        path: label,
                        stream: Some(end.offset),
                        error: error.as_deref(),
                        tally,
                        cut_bytes: None,
                    };
                    serde_json::to_writer(&mut out, &checked)?;
                    writeln!(out)?;
                } else {
                    let how = error.as_deref().unwrap_or("clean");
                    let (at, len) = (end.offset, end.len);
                    writeln!(out, "{prefix}stream at byte {at} ({len} bytes): {how}")?;
                    table(&mut out, &prefix, "  ", &tally)?;
                }
                if let Err(Failure(why)) = strict(args, &tally) {
                    failures.push(format!("the stream at byte {}: {why}", end.offset));
                }
            }
        }
    }
    out.flush()?;
    if broken > 0 {
        return Err(Failure(format!(
            "{broken} of {streams} stream(s) found broke a rule"
        )));
    }
    if args.strict && unread > 0 {
        failures.push(format!("--strict: {unread} byte(s) in no stream"));
    }
    match failures.is_empty() {
        true if streams == 0 => Err(Failure("no stream found: no preamble in the input".into())),
        true => Ok(()),
        false => Err(Failure(failures.join("; "))),
    }
}
