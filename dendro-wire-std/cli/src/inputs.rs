//! The inputs of `dump` and `check`: one path or several, each read and
//! reported in turn, labelled when there are several (as ripgrep labels a
//! match with its file), the exit code the worst of them.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::failure::Failure;
use crate::files::open_input;
use crate::terminal::warn_if_terminal_input;

/// Run `each` on every input in order: standard input when `paths` is
/// empty. `each` gets the input's label (`None` when there is only one, so
/// one input reads as it always has) and its bytes.
///
/// With one input, its failure is the command's. With several, a failure is
/// said on stderr with the input's path and the others are still read; the
/// command then fails (exit 1) saying how many did.
pub(crate) fn each_input(
    command: &str,
    paths: &[PathBuf],
    mut each: impl FnMut(Option<&str>, Result<Box<dyn Read>, Failure>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let one = paths.len() <= 1;
    let paths: Vec<Option<&Path>> = if paths.is_empty() {
        vec![None]
    } else {
        paths.iter().map(|p| Some(p.as_path())).collect()
    };
    let mut failed = 0;
    for path in &paths {
        warn_if_terminal_input(command, *path);
        let label = path.map_or("-".into(), |p| p.display().to_string());
        // An input that cannot be opened is handed on as its failure, for
        // a report that says one line per input (`check --json`).
        let result = each((!one).then_some(&label), open_input(*path));
        match result {
            Ok(()) => {}
            Err(failure) if one => return Err(failure),
            Err(Failure(message)) => {
                failed += 1;
                eprintln!("dendro-wire: {label}: {message}");
            }
        }
    }
    match failed {
        0 => Ok(()),
        n => Err(Failure(format!("{n} of {} inputs failed", paths.len()))),
    }
}

/// What goes before each line of an input's report: its label and a
/// colon, or nothing for a lone input.
pub(crate) fn prefix(label: Option<&str>) -> String {
    label.map_or(String::new(), |l| format!("{l}:"))
}

/// Standard output for a report that goes on when its reader goes away
/// (`check a b | head -n 1`): once a write finds the pipe closed, the rest
/// of the report goes nowhere, and the command still reads every input for
/// its exit code.
pub(crate) struct Report {
    out: std::io::BufWriter<std::io::StdoutLock<'static>>,
    closed: bool,
}

impl Report {
    pub(crate) fn new() -> Self {
        Report {
            out: crate::files::stdout(),
            closed: false,
        }
    }

    fn quiet_pipe(&mut self, result: std::io::Result<()>) -> std::io::Result<()> {
        match result {
            Err(e) if crate::files::is_broken_pipe(&e) => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

impl std::io::Write for Report {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.out.write_all(buf);
        self.quiet_pipe(result).map(|()| buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.out.flush();
        self.quiet_pipe(result)
    }
}
