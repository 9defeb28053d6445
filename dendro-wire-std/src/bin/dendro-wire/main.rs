//! `dendro-wire`: read, write and check dendro replication streams.
//!
//! Exit codes: 0 success, 1 a bad stream or bad input, 2 bad usage.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dendro_wire_std::server::ServerConfig;

mod agent;
mod check;
mod demo;
mod dump;
mod encode;
mod listen;
mod replay;

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
    /// The main job, in one command: a subscriber listening on loopback, a
    /// synthetic agent with several sources streaming to it (index changes,
    /// a few frames dropped on purpose), a progress line, and a summary.
    Demo {
        /// How long to stream.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Land what arrives in a dendro archive at this path.
        #[cfg(feature = "archive")]
        #[arg(long)]
        archive: Option<PathBuf>,
    },
    /// Sample this machine's /proc (per-CPU /proc/stat, /proc/meminfo,
    /// per-interface /proc/net/dev) every interval and publish it.
    Agent {
        /// Publish to a subscriber over TCP (`host:port`).
        #[arg(long, group = "target")]
        connect: Option<String>,
        /// Publish to a subscriber on a Unix socket.
        #[cfg(unix)]
        #[arg(long, group = "target")]
        unix: Option<PathBuf>,
        /// Write the stream to a file (a capture).
        #[arg(short, long, group = "target")]
        output: Option<PathBuf>,
        /// How often to sample: a number and a unit (e.g. 500ms, 1s, 1m).
        #[arg(long, default_value = "1s", value_parser = parse_interval)]
        interval: std::time::Duration,
        /// Stop after this many intervals.
        #[arg(long)]
        intervals: Option<u64>,
    },
    /// Accept publishers over TCP and apply their streams, with live
    /// per-connection counts on stderr.
    Listen {
        /// The address to listen on (`127.0.0.1:0` picks a port; the first
        /// line printed says which).
        #[arg(long)]
        bind: String,
        /// Also capture each connection's bytes to DIR/connection-N.dwr.
        #[arg(long, value_name = "DIR")]
        record: Option<PathBuf>,
        /// Land what arrives in a dendro archive at this path.
        #[cfg(feature = "archive")]
        #[arg(long)]
        archive: Option<PathBuf>,
        /// The encoder the archive stores rows for; a source declaring
        /// another is refused.
        #[cfg(feature = "archive")]
        #[arg(long, default_value = agent::ENCODER)]
        encoder: String,
        /// Exit once this many connections have ended, with a summary.
        #[arg(long)]
        connections: Option<u64>,
        /// The most sources one connection may open.
        #[arg(long, default_value_t = 256)]
        max_sources: usize,
        /// Connections served at once; one more is closed as soon as it is
        /// accepted.
        #[arg(long, default_value_t = 10_000)]
        max_connections: usize,
        /// Memory all connections' buffers may hold together (e.g. 256MiB,
        /// 1GiB); a frame that would cross it ends its connection.
        #[arg(long, default_value = "256MiB", value_parser = parse_size)]
        max_memory: usize,
        /// End a connection that sends no whole frame for this long (a
        /// publisher sends one every interval, even an empty one).
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        idle_timeout: std::time::Duration,
        /// End a connection whose frame has started and is not whole this
        /// long after.
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        frame_timeout: std::time::Duration,
    },
    /// Send a capture to a subscriber over TCP, frame for frame, as its
    /// publisher sent it.
    Replay {
        /// The capture to send; `-` or nothing for standard input.
        path: Option<PathBuf>,
        /// The subscriber (`host:port`).
        #[arg(long)]
        connect: String,
    },
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

/// A duration as a number and a unit: `500ms`, `60s`, `1m 30s`.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e}; write e.g. 500ms, 60s or 2m"))
}

/// A duration above zero.
fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err("the interval must be above zero".into()),
        d => Ok(d),
    }
}

/// A size in bytes, with an optional unit: `1048576`, `64KiB`, `256MiB`,
/// `1GiB`.
fn parse_size(s: &str) -> Result<usize, String> {
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
        Command::Demo {
            seconds,
            #[cfg(feature = "archive")]
            archive,
        } => demo::run(demo::Options {
            seconds,
            #[cfg(feature = "archive")]
            archive,
        }),
        Command::Agent {
            connect,
            #[cfg(unix)]
            unix,
            output,
            interval,
            intervals,
        } => {
            let target = match (connect, output) {
                (Some(addr), _) => Some(agent::Target::Tcp(addr)),
                (_, Some(path)) => Some(agent::Target::File(path)),
                _ => None,
            };
            #[cfg(unix)]
            let target = target.or(unix.map(agent::Target::Unix));
            match target {
                Some(target) => agent::run(agent::Options {
                    target,
                    interval,
                    intervals,
                }),
                None => {
                    eprintln!("dendro-wire agent: say where to publish: --connect, --unix or -o");
                    return ExitCode::from(2);
                }
            }
        }
        Command::Listen {
            bind,
            record,
            #[cfg(feature = "archive")]
            archive,
            #[cfg(feature = "archive")]
            encoder,
            connections,
            max_sources,
            max_connections,
            max_memory,
            idle_timeout,
            frame_timeout,
        } => listen::run(listen::Options {
            bind,
            record,
            #[cfg(feature = "archive")]
            archive,
            #[cfg(feature = "archive")]
            encoder,
            connections,
            server: {
                let mut config = ServerConfig::default();
                config.max_sources = max_sources;
                config.max_connections = max_connections;
                config.max_memory = max_memory;
                config.idle_timeout = idle_timeout;
                config.frame_timeout = frame_timeout;
                config
            },
        }),
        Command::Replay { path, connect } => replay::run(path.as_deref(), &connect),
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
