//! `dendro-wire replay`: a capture sent to a subscriber, frame for frame.

use std::io::{BufWriter, Write};
use std::net::TcpStream;
use std::path::PathBuf;

use dendro_wire_core::PREAMBLE;
use dendro_wire_std::FrameReader;

use crate::tls_args::ClientTls;
use crate::{open_input, Failure};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The capture to send; `-` or nothing for standard input.
    path: Option<PathBuf>,
    /// The subscriber (`host:port`).
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::host_port)]
    connect: String,
    #[command(flatten)]
    tls: ClientTls,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    // Every frame is checked on the way, so a damaged capture stops at the
    // damage rather than sending it on.
    crate::terminal::warn_if_terminal_input("replay", args.path.as_deref());
    let mut reader = FrameReader::new(open_input(args.path.as_deref())?)?.yield_unknown(true);
    let connect = &args.connect;
    let conn: Box<dyn Write> = match args.tls.client(connect)? {
        None => Box::new(
            TcpStream::connect(connect)
                .map_err(|e| Failure(format!("cannot connect to {connect}: {e}")))?,
        ),
        Some((client, server_name)) => {
            Box::new(client.connect(crate::resolve(connect)?, &server_name)?)
        }
    };
    let mut out = BufWriter::with_capacity(256 * 1024, conn);
    out.write_all(&PREAMBLE)?;
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
