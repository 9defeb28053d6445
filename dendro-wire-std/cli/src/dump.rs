//! `dendro-wire dump`: one line per frame, for a person or as JSON Lines.

use std::io::Write;
use std::path::PathBuf;

use dendro_wire_std::{FrameReader, OwnedFrame};

use crate::{is_broken_pipe, open_input, stdout, Failure};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The stream to read; `-` or nothing for standard input.
    path: Option<PathBuf>,
    /// JSON Lines (docs/PROTOCOL.md §10) instead of one human-readable line
    /// per frame.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(Args { path, json }: Args) -> Result<(), Failure> {
    let mut reader = FrameReader::new(open_input(path.as_deref())?)?.yield_unknown(true);
    let mut out = stdout();
    let result = (|| -> Result<(), Failure> {
        loop {
            let (frame, at) = match reader.next_frame_at() {
                Ok(Some(next)) => next,
                Ok(None) => return Ok(()),
                Err(e) => {
                    // The frames before the error are out before it is said.
                    out.flush().map_err(|e| Failure(e.to_string()))?;
                    return Err(e.into());
                }
            };
            let written = if json {
                serde_json::to_writer(&mut out, &OwnedFrame::from(&frame))
                    .map_err(std::io::Error::from)
                    .and_then(|()| out.write_all(b"\n"))
            } else {
                writeln!(out, "{:>6}  {frame}", at.frame)
            };
            if let Err(e) = written {
                return if is_broken_pipe(&e) {
                    Ok(())
                } else {
                    Err(e.into())
                };
            }
        }
    })();
    match out.flush() {
        Err(e) if !is_broken_pipe(&e) && result.is_ok() => Err(e.into()),
        _ => result,
    }
}
