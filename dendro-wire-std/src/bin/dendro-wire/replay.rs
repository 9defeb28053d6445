//! `dendro-wire replay`: a capture sent to a subscriber, frame for frame.

use std::io::{BufWriter, Write};
use std::net::TcpStream;
use std::path::Path;

use dendro_wire_core::{emit_preamble, PREAMBLE_BYTES};
use dendro_wire_std::FrameReader;

use crate::{open_input, Failure};

pub(crate) fn run(path: Option<&Path>, connect: &str) -> Result<(), Failure> {
    // Every frame is checked on the way, so a damaged capture stops at the
    // damage rather than sending it on.
    let mut reader = FrameReader::new(open_input(path)?)?;
    reader.set_yield_unknown(true);
    let conn = TcpStream::connect(connect)
        .map_err(|e| Failure(format!("cannot connect to {connect}: {e}")))?;
    let mut out = BufWriter::with_capacity(256 * 1024, conn);
    let mut preamble = [0u8; PREAMBLE_BYTES];
    emit_preamble(&mut preamble).map_err(|e| Failure(e.to_string()))?;
    out.write_all(&preamble)?;
    while let Some((_, bytes)) = reader.next_frame_with_bytes()? {
        out.write_all(bytes)?;
    }
    out.flush()?;
    eprintln!(
        "dendro-wire replay: {} frames, {} bytes sent to {connect}",
        reader.frames(),
        reader.offset()
    );
    Ok(())
}
