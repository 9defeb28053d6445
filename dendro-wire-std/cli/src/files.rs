//! Where the commands read and write: a path or standard input opened for
//! reading, a path opened for writing as `cp` opens it, standard output
//! buffered, and the error of a reader that went away.

use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::path::Path;

use crate::failure::Failure;

/// `-`, or no path at all, is standard input.
pub(crate) fn open_input(path: Option<&Path>) -> Result<Box<dyn Read>, Failure> {
    match path {
        None => Ok(Box::new(io::stdin().lock())),
        Some(p) if p.as_os_str() == "-" => Ok(Box::new(io::stdin().lock())),
        Some(p) => File::open(p)
            .map(|f| Box::new(f) as Box<dyn Read>)
            .map_err(|e| Failure(format!("cannot open {}: {e}", p.display()))),
    }
}

/// `out`, opened for writing as `cp` opens it: the system follows any links
/// on the path (with its own rules for them), never this tool; an existing
/// file is emptied and written in place (its owner, mode and hard links
/// kept), a device or FIFO is written as it is, and a new file is made only
/// where nothing is, so a link naming nothing is refused.
pub(crate) fn open_output(out: &Path) -> Result<File, Failure> {
    let cannot = |e: io::Error| Failure(format!("cannot write {}: {e}", out.display()));
    match std::fs::OpenOptions::new().write(true).open(out) {
        Ok(file) => {
            if file.metadata().map_err(cannot)?.is_file() {
                file.set_len(0).map_err(cannot)?;
            }
            return Ok(file);
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(cannot(e)),
    }
    // Nothing there, or a link naming nothing: `create_new` (O_EXCL) makes
    // only the first, and never follows a link.
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
    {
        Ok(file) => Ok(file),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match std::fs::read_link(out) {
            Ok(to) => Err(Failure(format!(
                "{} is a symbolic link to {}, which does not exist; what is written goes \
                 through a link, but what a link names is not made",
                out.display(),
                to.display()
            ))),
            Err(_) => Err(cannot(e)),
        },
        Err(e) => Err(cannot(e)),
    }
}

pub(crate) fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::with_capacity(64 * 1024, io::stdout().lock())
}

/// Output to a reader that went away (`dendro-wire dump | head`) ends the
/// command quietly rather than as an error.
pub(crate) fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}
