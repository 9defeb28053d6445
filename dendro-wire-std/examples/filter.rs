//! A zero-copy filter: read a stream, forward only some sources' frames,
//! untouched, to another.
//!
//! Each frame is decoded in place (every rule checked) and, if it names a
//! source to keep, its own bytes are written out as they arrived
//! (`FrameWriter::write_encoded`, which checks they are one whole frame):
//! nothing is re-encoded or copied out of the reader's buffer. Frames of kinds this
//! build does not read are forwarded too, since they may matter downstream.
//! The output is a valid stream: it keeps the preamble, and a dropped
//! source's handshake goes with its frames.
//!
//! ```sh
//! cargo run -p dendro-wire-std --example filter -- 1 < testdata/sample.dwr > only-source-1.dwr
//! ```
//! Between sockets, the same loop reads a `TcpStream` and writes another.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use dendro_wire_std::{FrameReader, FrameWriter};

fn main() -> ExitCode {
    let keep: Result<Vec<u32>, _> = std::env::args().skip(1).map(|a| a.parse()).collect();
    let Ok(keep) = keep.map_err(|e| eprintln!("filter: sources are ordinals: {e}")) else {
        return ExitCode::from(2);
    };
    match filter(io::stdin().lock(), io::stdout().lock(), &keep) {
        Ok((read, kept)) => {
            eprintln!("filter: {kept} of {read} frames forwarded");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("filter: {e}");
            ExitCode::from(1)
        }
    }
}

/// Forward the frames of the sources in `keep`; returns frames read and
/// frames forwarded.
fn filter(
    input: impl io::Read,
    output: impl Write,
    keep: &[u32],
) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let mut reader = FrameReader::new(input)?.yield_unknown(true);
    // The writer starts the output with the preamble.
    let mut out = FrameWriter::new(BufWriter::new(output))?;
    while let Some((frame, bytes)) = reader.next_frame_with_bytes()? {
        if frame.source().is_none_or(|s| keep.contains(&s)) {
            out.write_encoded(bytes)?;
        }
    }
    out.flush()?;
    Ok((reader.frames(), out.frames()))
}
