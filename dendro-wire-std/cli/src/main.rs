//! `dendro-wire`: read, write and check dendro replication streams.
//!
//! Exit codes: 0 success, 1 a bad stream or bad input, 2 bad usage.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod agent;
mod check;
mod demo;
mod dump;
mod encode;
mod listen;
mod replay;
mod tls_args;

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
    /// The main job in one command: an agent streams to a subscriber on
    /// loopback, and a summary of what arrived.
    Demo(demo::Args),
    /// Sample this machine's /proc every interval and publish it.
    Agent(agent::Args),
    /// Accept publishers, apply their streams, and say how each ended.
    Listen(listen::Args),
    /// Send a capture to a subscriber, frame for frame.
    Replay(replay::Args),
    /// Print a stream, one line per frame.
    Dump(dump::Args),
    /// Turn JSON Lines into a stream.
    Encode(encode::Args),
    /// Apply the subscriber's rules to a stream, and summarize it.
    Check(check::Args),
}

/// A duration as a number and a unit: `500ms`, `60s`, `1m 30s`.
pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e}; write e.g. 500ms, 60s or 2m"))
}

/// A duration above zero.
pub(crate) fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err("the interval must be above zero".into()),
        d => Ok(d),
    }
}

/// A size in bytes, with an optional unit: `1048576`, `64KiB`, `256MiB`,
/// `1GiB`.
pub(crate) fn parse_size(s: &str) -> Result<usize, String> {
    let size: bytesize::ByteSize = s
        .parse()
        .map_err(|e| format!("{s:?}: {e}; write e.g. 256MiB or 1GiB"))?;
    usize::try_from(size.as_u64()).map_err(|_| format!("{s:?} is more than this machine holds"))
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

/// Warnings from the library (a gap, logged once per source; a connection
/// that ended) on stderr, as the tool's own messages are.
struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            eprintln!("dendro-wire: {}", record.args());
        }
    }

    fn flush(&self) {}
}

fn main() -> ExitCode {
    let _ = log::set_logger(&Stderr).map(|()| log::set_max_level(log::LevelFilter::Warn));
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Agent(args) => agent::run(args),
        Command::Listen(args) => listen::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Dump(args) => dump::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Check(args) => check::run(args),
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
