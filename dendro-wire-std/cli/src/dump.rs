//! `dendro-wire dump`: one line per frame, for a person or as JSON Lines.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use dendro_wire_std::{Frame, FrameReader, OwnedFrame};

use crate::inputs::{each_input, prefix};
use crate::{is_broken_pipe, stdout, Failure};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The streams to read, each printed in turn (each line labelled with
    /// its path when there are several); `-` or nothing for standard input.
    paths: Vec<PathBuf>,
    /// JSON Lines (docs/PROTOCOL.md §10) instead of one human-readable line
    /// per frame; with several paths each line has a `path` key too.
    #[arg(long)]
    json: bool,
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
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    each_input("dump", &args.paths, |label, input| {
        let mut lines = Lines {
            out: stdout(),
            json: args.json,
            label,
            prefix: prefix(label),
        };
        let result = one(&mut lines, input);
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
