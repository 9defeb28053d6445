//! `dendro-wire encode`: JSON Lines in, a stream out.

use std::io::{self, BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use dendro_wire_std::{FrameWriter, OwnedFrame};

use crate::failure::Failure;
use crate::files::{open_input, open_output, stdout};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The JSON Lines to read; `-` or nothing for standard input.
    path: Option<PathBuf>,
    /// Where to write the stream; `-` or nothing for standard output. The
    /// stream is encoded whole first; then the path is opened as `cp` opens
    /// it (the system follows links; one naming nothing is refused) and
    /// written in place, so a file keeps its owner, mode and hard links.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Write the stream to standard output even when it is a terminal.
    #[arg(long)]
    force: bool,
}

pub(crate) fn run(
    Args {
        path,
        output,
        force,
    }: Args,
) -> Result<(), Failure> {
    match output.as_deref() {
        Some(out) if out.as_os_str() != "-" => {
            to_file(BufReader::new(open_input(path.as_deref())?), out)
        }
        _ => {
            crate::terminal::binary_stdout(force)?;
            let input = BufReader::new(open_input(path.as_deref())?);
            let mut w = stdout();
            encode(input, &mut w)?;
            w.flush()?;
            Ok(())
        }
    }
}

/// Write `input`'s stream to `out` as `cp` does. The path is opened, and
/// the system follows any links on it (with its own rules for them,
/// `fs.protected_symlinks` among them), never this tool. What is there is
/// written in place: a file keeps its owner, its mode and its hard links
/// (every name of it sees the new stream), and a file the user may not
/// write is refused, not replaced. A new file is made only where nothing
/// is, so a link that names nothing is refused rather than its target
/// made. The stream is encoded whole first, into an unnamed temporary
/// file, so a bad line leaves what is there untouched; a write that fails
/// (a full disk) can leave it part-written, as with `cp`.
fn to_file(input: impl BufRead, out: &Path) -> Result<(), Failure> {
    let mut stream =
        tempfile::tempfile().map_err(|e| Failure(format!("cannot make a temporary file: {e}")))?;
    {
        let mut w = BufWriter::new(&mut stream);
        encode(input, &mut w)?;
        w.flush()?;
    }
    stream.seek(SeekFrom::Start(0))?;
    let mut file = open_output(out)?;
    io::copy(&mut stream, &mut file)
        .and_then(|_| file.flush())
        .map_err(|e| Failure(format!("cannot write {}: {e}", out.display())))?;
    Ok(())
}

fn encode(input: impl BufRead, out: impl Write) -> Result<(), Failure> {
    let mut writer = FrameWriter::new(out)?;
    for (i, line) in input.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| Failure(format!("line {n}: {e}")))?;
        if line.trim().is_empty() {
            return Err(Failure(format!(
                "line {n}: a blank line; each line is one JSON object, one frame"
            )));
        }
        let frame: OwnedFrame =
            serde_json::from_str(&line).map_err(|e| Failure(format!("line {n}: {e}")))?;
        writer
            .write_owned(&frame)
            .map_err(|e| Failure(format!("line {n}: {e}")))?;
    }
    writer.flush()?;
    Ok(())
}
