//! `dendro-wire encode`: JSON Lines in, a stream out.

use std::fs::{self, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use dendro_wire_std::{FrameWriter, OwnedFrame};

use crate::{open_input, stdout, Failure};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The JSON Lines to read; `-` or nothing for standard input.
    path: Option<PathBuf>,
    /// Where to write the stream; `-` or nothing for standard output. A file
    /// is replaced whole or not at all; a link is followed to its target; a
    /// device or FIFO is written in place.
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

/// Write `input`'s stream to `out` as `cp` would treat what is there, and
/// never leave part of a stream behind: a symbolic link is followed to the
/// file it names (and stays a link); a regular file, or a new one, is
/// written whole beside it under an unguessable name created exclusively,
/// then renamed over it (a new one only if the name is still free); anything
/// else (a device, a FIFO) is written in place, once the whole stream is
/// encoded.
fn to_file(input: impl BufRead, out: &Path) -> Result<(), Failure> {
    let target =
        follow_links(out).map_err(|e| Failure(format!("cannot resolve {}: {e}", out.display())))?;
    match fs::metadata(&target) {
        Ok(meta) if meta.is_file() => replace(input, &target, Some(meta.permissions())),
        Ok(meta) if meta.is_dir() => Err(Failure(format!("{} is a directory", out.display()))),
        Ok(_) => {
            let mut stream = Vec::new();
            encode(input, &mut stream)?;
            OpenOptions::new()
                .write(true)
                .open(&target)
                .and_then(|mut f| f.write_all(&stream).and_then(|()| f.flush()))
                .map_err(|e| Failure(format!("cannot write {}: {e}", target.display())))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => replace(input, &target, None),
        Err(e) => Err(Failure(format!("cannot write {}: {e}", target.display()))),
    }
}

/// The path a chain of symbolic links at `path` ends at (the last
/// component's; the system follows those in the directories).
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut at = path.to_path_buf();
    // As many links as the system itself follows before it gives up.
    for _ in 0..40 {
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let next = fs::read_link(&at)?;
                at = match at.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Encode into a new file beside `target`, then rename it over `target`
/// (`permissions` is what it had), or link it there if `target` did not
/// exist and still does not.
fn replace(
    input: impl BufRead,
    target: &Path,
    permissions: Option<fs::Permissions>,
) -> Result<(), Failure> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .ok_or_else(|| Failure(format!("{} is not a file name", target.display())))?;
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    if permissions.is_none() {
        // What a new file gets from `File::create`: 0666 less the umask.
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let tmp = builder
        .tempfile_in(dir)
        .map_err(|e| Failure(format!("cannot create a file in {}: {e}", dir.display())))?;
    // On any failure from here `tmp` is dropped, and removed with it.
    let mut w = BufWriter::new(tmp);
    encode(input, &mut w)?;
    let tmp = w.into_inner().map_err(|e| Failure(e.error().to_string()))?;
    if let Some(permissions) = permissions {
        fs::set_permissions(tmp.path(), permissions)?;
    }
    tmp.as_file().sync_all()?;
    let persisted = match fs::symlink_metadata(target) {
        Ok(_) => tmp.persist(target).map(drop),
        Err(_) => tmp.persist_noclobber(target).map(drop),
    };
    persisted.map_err(|e| Failure(format!("cannot write {}: {}", target.display(), e.error)))
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
