//! `dendro-wire`: read, write and check dendro replication streams.
//!
//! Exit codes: 0 success, 1 a bad stream or bad input, 2 bad usage.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod check;
mod dump;
mod encode;

#[derive(Parser)]
#[command(
    name = "dendro-wire",
    version,
    about = "Read, write and check dendro replication streams (protocol v1)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a stream, one line per frame.
    Dump {
        /// The stream to read; `-` or nothing for standard input.
        path: Option<PathBuf>,
        /// JSON Lines (NOTES.md, "The JSON Lines form of a stream") instead
        /// of one human-readable line per frame.
        #[arg(long)]
        json: bool,
    },
    /// Turn JSON Lines into a stream: the preamble, then one frame per line.
    Encode {
        /// The JSON Lines to read; `-` or nothing for standard input.
        path: Option<PathBuf>,
        /// Where to write the stream; `-` or nothing for standard output. A
        /// file is written whole or not at all.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Read a stream, apply the subscriber's rules, and summarize it.
    Check {
        /// The stream to read; `-` or nothing for standard input.
        path: Option<PathBuf>,
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// A failure to report on stderr, with exit code 1. Usage errors never get
/// here: clap reports them and exits 2.
pub(crate) struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

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

pub(crate) fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::with_capacity(64 * 1024, io::stdout().lock())
}

/// Output to a reader that went away (`dendro-wire dump | head`) ends the
/// command quietly rather than as an error.
pub(crate) fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Dump { path, json } => dump::run(path.as_deref(), json),
        Command::Encode { path, output } => encode::run(path.as_deref(), output.as_deref()),
        Command::Check { path, json } => check::run(path.as_deref(), json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            let _ = io::stdout().flush();
            eprintln!("dendro-wire: {message}");
            ExitCode::from(1)
        }
    }
}
