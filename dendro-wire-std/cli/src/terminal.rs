//! What the tool does when a terminal is on the other end: it refuses to
//! write a binary stream to one (as zstd and gzip do), and says so when it
//! is about to read a stream from one.

use std::io::{self, IsTerminal};
use std::path::Path;

use crate::failure::Failure;

/// Standard output for a binary stream: refused when it is a terminal,
/// unless `force` (the command's `--force`). Every command that writes a
/// stream to standard output asks here first.
pub(crate) fn binary_stdout(force: bool) -> Result<io::Stdout, Failure> {
    let out = io::stdout();
    if out.is_terminal() && !force {
        return Err(Failure(
            "not writing a binary stream to a terminal: redirect it to a file (> FILE), pipe it \
             (| dendro-wire dump), or pass --force"
                .into(),
        ));
    }
    Ok(out)
}

/// Whether `path` (or no path) names standard input.
pub(crate) fn is_stdin(path: Option<&Path>) -> bool {
    path.is_none_or(|p| p.as_os_str() == "-")
}

/// Say on stderr that a stream is about to be read from a terminal, which
/// waits for keys rather than failing: `command` reads standard input
/// because no path was given.
pub(crate) fn warn_if_terminal_input(command: &str, path: Option<&Path>) {
    if is_stdin(path) && io::stdin().is_terminal() {
        eprintln!(
            "dendro-wire {command}: reading a stream from standard input, which is a terminal; \
             give a path, or pipe a stream in (Ctrl-D ends the input)"
        );
    }
}
