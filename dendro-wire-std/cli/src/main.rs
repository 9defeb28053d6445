//! `dendro-wire`: read, write and check dendro replication streams.
//!
//! Exit codes: 0 success, 1 a bad stream or bad input, 2 bad usage.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
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
mod inputs;
mod listen;
mod metrics;
mod progress;
mod replay;
mod terminal;
mod tls_args;

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

/// The encoder `agent`'s rows are in (named in each source's `encoder`
/// metadata), and so what `listen --archive` stores unless told otherwise.
pub(crate) const AGENT_ENCODER: &str = "dendro-wire-agent-1";

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

/// An address to connect to or listen on: `host:port`, the host a name or
/// an address (`[::1]` for IPv6), the port a number. Checked here so a
/// mistyped one is a usage error; names are resolved when used.
pub(crate) fn host_port(s: &str) -> Result<String, String> {
    let bad = |why: &str| format!("{s:?} is not host:port: {why}");
    let (host, port) = s.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    port.parse::<u16>()
        .map_err(|_| bad("the port is not a number from 0 to 65535"))?;
    let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) if v6.parse::<std::net::Ipv6Addr>().is_ok() => v6,
        Some(_) => return Err(bad("not an IPv6 address in the brackets")),
        None if host.contains(':') => {
            return Err(bad("an IPv6 address goes in brackets, [::1]:7070"))
        }
        None => host,
    };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(bad("no host"));
    }
    Ok(s.to_string())
}

/// The first address a checked `host:port` resolves to.
pub(crate) fn resolve(connect: &str) -> Result<std::net::SocketAddr, Failure> {
    std::net::ToSocketAddrs::to_socket_addrs(connect)
        .map_err(|e| Failure(format!("cannot resolve {connect}: {e}")))?
        .next()
        .ok_or_else(|| Failure(format!("{connect} resolves to no address")))
}

/// A size in bytes, with an optional unit: `1048576`, `64KiB`, `256MiB`,
/// `1GiB`.
/// `--archive` on a build without the `archive` feature: a usage error that
/// says how to get one, rather than clap's "unexpected argument".
#[cfg(not(feature = "archive"))]
pub(crate) fn archive_not_built(_: &str) -> Result<std::path::PathBuf, String> {
    Err(
        "this dendro-wire was built without the `archive` feature; build it with \
         `cargo install dendro-wire --features archive` (in this repository: \
         `cargo run --release --features dendro-wire/archive --bin dendro-wire -- ...`)"
            .into(),
    )
}

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

/// Whether `-q` asked for nothing but errors: no progress lines.
pub(crate) fn quiet() -> bool {
    log::max_level() < log::LevelFilter::Warn
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
