//! `dendro-wire listen`: accept publishers, apply their streams, show live
//! per-connection counts, and say how each connection ended.

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dendro_wire_std::server::{ConnectionInfo, Server, ServerConfig};
use dendro_wire_std::{Applied, CountingSink, Sink};

use crate::Failure;

pub(crate) struct Options {
    pub bind: String,
    pub record: Option<PathBuf>,
    #[cfg(feature = "archive")]
    pub archive: Option<PathBuf>,
    #[cfg(feature = "archive")]
    pub encoder: String,
    pub connections: Option<u64>,
    pub server: ServerConfig,
}

/// What every ended connection added up to.
#[derive(Default)]
struct Totals {
    connections: u64,
    clean: u64,
    applied: Applied,
}

pub(crate) fn run(mut options: Options) -> Result<(), Failure> {
    let listener = TcpListener::bind(&options.bind)
        .map_err(|e| Failure(format!("cannot listen on {}: {e}", options.bind)))?;
    // SIGINT and SIGTERM end the listener gracefully: stop accepting, apply
    // what has arrived, flush, summarize, exit 0.
    let signalled = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, signalled.clone())
            .map_err(|e| Failure(format!("cannot handle signal {signal}: {e}")))?;
    }
    #[cfg(feature = "archive")]
    let archive = match &options.archive {
        Some(path) => Some(
            dendro_wire_std::archive::SharedArchive::create(path, &options.encoder)
                .map_err(|e| Failure(format!("cannot open {}: {e}", path.display())))?,
        ),
        None => None,
    };
    #[cfg(not(feature = "archive"))]
    let archive: Option<ArchiveHandle> = None;
    let make_sink = sink_factory(archive.as_ref());
    let totals: Arc<Mutex<Totals>> = Arc::default();
    options.server.record = options.record.take();
    let server = {
        let totals = totals.clone();
        Server::start(
            listener,
            options.server.clone(),
            make_sink,
            move |ended, _| {
                // One line for every connection, whatever ended it; a reader of
                // stdout that went away does not stop the listener.
                let _ = writeln!(std::io::stdout().lock(), "{ended}");
                let mut t = totals.lock().unwrap_or_else(|e| e.into_inner());
                t.connections += 1;
                t.clean += u64::from(ended.result.is_ok());
                t.applied += ended.applied;
            },
        )
        .map_err(|e| Failure(format!("cannot serve {}: {e}", options.bind)))?
    };
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", server.local_addr())?;
        out.flush()?;
    }

    let mut shown = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if signalled.load(Ordering::Relaxed) {
            eprintln!(
                "dendro-wire listen: stopping: no new connections; applying what has arrived"
            );
            break;
        }
        let ended = totals.lock().unwrap_or_else(|e| e.into_inner()).connections;
        if options.connections.is_some_and(|n| ended >= n) {
            break;
        }
        if shown.elapsed() >= Duration::from_secs(1) {
            shown = Instant::now();
            show_live(&server);
        }
    }
    let grace = if signalled.load(Ordering::Relaxed) {
        Duration::ZERO
    } else {
        Duration::from_secs(5)
    };
    let stats = server.shutdown(grace);
    let mut out = std::io::stdout().lock();
    #[cfg(feature = "archive")]
    if let Some(archive) = archive {
        crate::demo::finish_archive(archive, &mut out)?;
    }
    let t = totals.lock().unwrap_or_else(|e| e.into_inner());
    let a = t.applied;
    writeln!(
        out,
        "listener: {} connection(s) served ({} ended cleanly), {} refused over the cap of {}; \
         rows {} applied {} skipped, gaps {} ({} frames lost)",
        t.connections,
        t.clean,
        stats.refused,
        options.server.max_connections,
        a.rows,
        a.rows_skipped,
        a.gaps,
        a.frames_lost,
    )?;
    out.flush()?;
    Ok(())
}

/// The live connections, on stderr: a line each when there are a few, a
/// total when there are many.
fn show_live(server: &Server) {
    const EACH: usize = 8;
    let live = server.live();
    if live.len() <= EACH {
        for c in &live {
            eprintln!(
                "  connection {} from {}: {} frames, {} bytes, rows {} applied {} skipped, {} gap(s)",
                c.id,
                c.peer,
                c.frames,
                c.bytes,
                c.applied.rows,
                c.applied.rows_skipped,
                c.applied.gaps
            );
        }
        return;
    }
    let mut applied = Applied::default();
    let (mut frames, mut bytes) = (0, 0);
    for c in &live {
        applied += c.applied;
        frames += c.frames;
        bytes += c.bytes;
    }
    let stats = server.stats();
    eprintln!(
        "  {} live connections: {frames} frames, {bytes} bytes, rows {} applied {} skipped, {} \
         gap(s); {} bytes of buffers; {} refused over the cap",
        live.len(),
        applied.rows,
        applied.rows_skipped,
        applied.gaps,
        stats.memory_in_use,
        stats.refused
    );
}

type MakeSink = Box<dyn Fn(&ConnectionInfo) -> Box<dyn Sink + Send> + Send + Sync>;

#[cfg(feature = "archive")]
type ArchiveHandle = dendro_wire_std::archive::SharedArchive;
#[cfg(not(feature = "archive"))]
type ArchiveHandle = std::convert::Infallible;

/// Each connection's sink: a connection into the archive, or counts only.
fn sink_factory(archive: Option<&ArchiveHandle>) -> MakeSink {
    match archive {
        #[cfg(feature = "archive")]
        Some(archive) => {
            let archive = archive.clone();
            Box::new(move |_| Box::new(archive.connection()))
        }
        #[cfg(not(feature = "archive"))]
        Some(never) => match *never {},
        None => Box::new(|_| Box::new(CountingSink::default())),
    }
}
