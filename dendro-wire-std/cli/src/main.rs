//! `dendro-wire`: read, write and check dendro replication streams.
//!
//! Exit codes: 0 success, 1 a bad stream or bad input, 2 bad usage.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dendro_wire_std::LineQueue;

mod agent;
#[cfg(feature = "archive")]
mod archive;
mod check;
mod demo;
mod dump;
mod encode;
mod ended;
mod failure;
mod files;
mod inputs;
mod listen;
mod metrics;
mod progress;
mod replay;
mod terminal;
mod tls_args;
mod values;

use failure::Failure;
use files::{is_broken_pipe, stdout};

#[derive(Parser)]
#[command(
    name = "dendro-wire",
    version,
    about = "Read, write and check dendro replication streams (protocol v1)"
)]
struct Cli {
    #[command(flatten)]
    verbosity: clap_verbosity_flag::Verbosity<clap_verbosity_flag::WarnLevel>,
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
    Listen(Box<listen::Args>),
    /// Send a capture to a subscriber, frame for frame.
    Replay(replay::Args),
    /// Print a stream, one line per frame.
    Dump(dump::Args),
    /// Turn JSON Lines into a stream.
    Encode(encode::Args),
    /// Apply the subscriber's rules to a stream, and summarize it.
    Check(check::Args),
    /// Print a shell's completions for this tool.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// The library's messages (a gap, logged once per source; a reconnect) on
/// stderr as the tool's own are: warnings by default, fewer with `-q`, more
/// with `-v`, or as `RUST_LOG` says. They go through a bounded queue written
/// by a thread of its own ([`LineQueue`]): a collector logs where it serves
/// connections, and a stderr nobody reads must not stop it.
fn log_to_stderr(level: log::LevelFilter) {
    let Ok(queue) = LineQueue::spawn("stderr", io::stderr(), 1 << 20) else {
        return;
    };
    let _ = STDERR.set(queue.clone());
    let _ = env_logger::Builder::new()
        .filter_level(level)
        .parse_env("RUST_LOG")
        .target(env_logger::Target::Pipe(Box::new(QueuedLines(queue))))
        .format(|out, record| match record.level() {
            log::Level::Error | log::Level::Warn => writeln!(out, "dendro-wire: {}", record.args()),
            level => writeln!(
                out,
                "dendro-wire: {}: {}",
                level.as_str().to_lowercase(),
                record.args()
            ),
        })
        .try_init();
}

/// The queue log records go through, to be flushed before the tool exits.
static STDERR: std::sync::OnceLock<LineQueue> = std::sync::OnceLock::new();

/// Write what the log queue holds, for at most a few seconds (a stderr
/// nobody reads never takes it).
fn flush_log() {
    if let Some(queue) = STDERR.get() {
        queue.flush(std::time::Duration::from_secs(2));
    }
}

/// A log target that queues each record's lines.
struct QueuedLines(LineQueue);

impl Write for QueuedLines {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // A record is formatted whole and written in one piece.
        let text = String::from_utf8_lossy(buf);
        for line in text.lines() {
            self.0.line(line);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    log_to_stderr(cli.verbosity.log_level_filter());
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Agent(args) => agent::run(args),
        Command::Listen(args) => listen::run(*args),
        Command::Replay(args) => replay::run(args),
        Command::Dump(args) => dump::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Check(args) => check::run(args),
        Command::Completions { shell } => {
            // Written whole to a buffer first: the generator panics if its
            // writer fails (`| head`), and a closed pipe is no error here.
            let mut script = Vec::new();
            let mut cli = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cli, "dendro-wire", &mut script);
            match stdout().write_all(&script).and_then(|()| stdout().flush()) {
                Err(e) if !is_broken_pipe(&e) => Err(Failure(e.to_string())),
                _ => Ok(()),
            }
        }
    };
    flush_log();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            let _ = io::stdout().flush();
            eprintln!("dendro-wire: {message}");
            ExitCode::from(1)
        }
    }
}
