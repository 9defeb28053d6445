//! `dendro-wire dump`: one line per frame, for a person or as JSON Lines;
//! with `--scan`, every stream found in the input.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use dendro_wire_std::scan::{Found, Scanner};
use dendro_wire_std::{Frame, FrameReader, OwnedFrame};

use crate::failure::Failure;
use crate::files::{is_broken_pipe, stdout};
use crate::inputs::{each_input, prefix};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The streams to read, each printed in turn (each line labelled with
    /// its path when there are several); `-` or nothing for standard input.
    paths: Vec<PathBuf>,
    /// JSON Lines (docs/PROTOCOL.md §10) instead of one human-readable line
    /// per frame; with several paths each line has a `path` key too.
    #[arg(long)]
    json: bool,
    /// Find every stream in the input by its preamble (captures cut or
    /// concatenated, a connection's raw bytes) and print each, with where
    /// it starts and ends and the bytes in none.
    #[arg(long)]
    scan: bool,
}

/// Where the lines go: labelled, in the form asked for.
struct Lines<'a> {
    out: io::BufWriter<io::StdoutLock<'static>>,
    json: bool,
    label: Option<&'a str>,
    prefix: String,
}

impl Lines<'_> {
    fn frame(&mut self, number: u64, frame: &Frame<'_>) -> io::Result<()> {
        if !self.json {
            return writeln!(self.out, "{}{number:>6}  {frame}", self.prefix);
        }
        let owned = OwnedFrame::from(frame);
        match self.label {
            None => serde_json::to_writer(&mut self.out, &owned)?,
            Some(path) => {
                let mut value = serde_json::to_value(&owned)?;
                if let Some(map) = value.as_object_mut() {
                    map.insert("path".into(), path.into());
                }
                serde_json::to_writer(&mut self.out, &value)?;
            }
        }
        self.out.write_all(b"\n")
    }

    /// A line of `--scan`'s own: `text` for a person, `json` (with the
    /// path) for a program.
    fn note(&mut self, text: std::fmt::Arguments<'_>, json: serde_json::Value) -> io::Result<()> {
        if !self.json {
            return writeln!(self.out, "{}{text}", self.prefix);
        }
        let mut json = json;
        if let (Some(path), Some(map)) = (self.label, json.as_object_mut()) {
            map.insert("path".into(), path.into());
        }
        writeln!(self.out, "{json}")
    }
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    each_input("dump", &args.paths, |label, input| {
        let input = input?;
        let mut lines = Lines {
            out: stdout(),
            json: args.json,
            label,
            prefix: prefix(label),
        };
        let result = if args.scan {
            scan(&mut lines, input)
        } else {
            one(&mut lines, input)
        };
        // The frames before an error are out before it is said; a reader
        // that went away (`| head`) ends the command quietly.
        match (result, lines.out.flush()) {
            (Err(Ended::Pipe), _) => Ok(()),
            (Err(Ended::Failed(f)), _) => Err(f),
            (Ok(()), Err(e)) if !is_broken_pipe(&e) => Err(e.into()),
            (Ok(()), _) => Ok(()),
        }
    })
}

/// Why printing stopped early.
enum Ended {
    /// The reader of the output went away.
    Pipe,
    Failed(Failure),
}

impl From<io::Error> for Ended {
    fn from(e: io::Error) -> Self {
        if is_broken_pipe(&e) {
            Ended::Pipe
        } else {
            Ended::Failed(e.into())
        }
    }
}

impl From<dendro_wire_std::ReadError> for Ended {
    fn from(e: dendro_wire_std::ReadError) -> Self {
        Ended::Failed(e.into())
    }
}

/// Print `input` as one stream.
fn one(lines: &mut Lines<'_>, input: Box<dyn Read>) -> Result<(), Ended> {
    let mut reader = FrameReader::new(input)?.yield_unknown(true);
    while let Some((frame, at)) = reader.next_frame_at()? {
        lines.frame(at.frame, &frame)?;
    }
    Ok(())
}

/// Print every stream found in `input`, and the bytes in none.
fn scan(lines: &mut Lines<'_>, input: Box<dyn Read>) -> Result<(), Ended> {
    let mut scanner = Scanner::new(input).yield_unknown(true);
    let (mut streams, mut broken) = (0u64, 0u64);
    while let Some(found) = scanner.next()? {
        match found {
            Found::Unread { offset, len } => lines.note(
                format_args!("unread {len} byte(s) at byte {offset}"),
                serde_json::json!({ "scan": "unread", "offset": offset, "len": len }),
            )?,
            Found::Stream { offset } => {
                streams += 1;
                lines.note(
                    format_args!("stream at byte {offset}"),
                    serde_json::json!({ "scan": "stream", "offset": offset }),
                )?;
            }
            Found::Frame(frame, at) => lines.frame(at.frame, &frame)?,
            Found::End(end) => {
                let error = end.error.as_ref().map(ToString::to_string);
                broken += u64::from(error.is_some());
                let (offset, len, frames) = (end.offset, end.len, end.frames);
                lines.note(
                    format_args!(
                        "end of the stream at byte {offset}: {len} bytes, {frames} frame(s), {}",
                        error.as_deref().unwrap_or("clean")
                    ),
                    serde_json::json!({
                        "scan": "end", "offset": offset, "len": len, "frames": frames,
                        "error": error,
                    }),
                )?;
            }
        }
    }
    match (streams, broken) {
        (0, _) => Err(Ended::Failed(Failure(
            "no stream found: no preamble in the input".into(),
        ))),
        (_, 0) => Ok(()),
        (n, broken) => Err(Ended::Failed(Failure(format!(
            "{broken} of {n} stream(s) found broke a rule"
        )))),
    }
}
