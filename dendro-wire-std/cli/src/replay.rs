//! `dendro-wire replay`: a capture sent to a subscriber, frame for frame.

use std::io::{BufWriter, Write};
use std::net::TcpStream;
use std::path::PathBuf;

use dendro_wire_core::PREAMBLE;
use dendro_wire_std::send::closed_by_subscriber;
use dendro_wire_std::FrameReader;

use crate::failure::Failure;
use crate::files::open_input;
use crate::tls_args::ClientTls;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The capture to send; `-` or nothing for standard input.
    path: Option<PathBuf>,
    /// The subscriber (`host:port`).
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::values::host_port)]
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
    // Over plain TCP, a second handle on the socket, to see at the end
    // whether the collector refused what was written.
    let mut watch = None;
    let conn: Box<dyn Write> = match args.tls.client(connect)? {
        None => {
            let stream = TcpStream::connect(connect)
                .map_err(|e| Failure(format!("cannot connect to {connect}: {e}")))?;
            watch = stream.try_clone().ok();
            Box::new(stream)
        }
        Some((client, server_name)) => {
            Box::new(client.connect(crate::values::resolve(connect)?, &server_name)?)
        }
    };
    let mut out = BufWriter::with_capacity(256 * 1024, conn);
    out.write_all(&PREAMBLE)?;
    while let Some((_, bytes)) = reader.next_frame_with_bytes()? {
        out.write_all(bytes)?;
    }
    out.flush()?;
    if let Some(refused) = watch.as_ref().and_then(closed_by_subscriber) {
        return Err(Failure(format!(
            "the collector at {connect} closed the connection on {} frames, {} bytes written: \
             {refused}; they may not have been applied",
            reader.frames(),
            reader.offset()
        )));
    }
    eprintln!(
        "dendro-wire replay: {} frames, {} bytes written to {connect}",
        reader.frames(),
        reader.offset()
    );
    Ok(())
}
