//! `dendro-wire listen`: accept publishers, apply their streams, show live
//! per-connection counts.

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dendro_wire_std::transport::Server;
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
    pub max_sources: usize,
}

/// One ended connection, as the summary reports it.
struct Ended {
    id: u64,
    applied: Applied,
    error: Option<String>,
}

pub(crate) fn run(options: Options) -> Result<(), Failure> {
    if let Some(dir) = &options.record {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure(format!("cannot create {}: {e}", dir.display())))?;
    }
    let listener = TcpListener::bind(&options.bind)
        .map_err(|e| Failure(format!("cannot listen on {}: {e}", options.bind)))?;
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
    let ended: Arc<Mutex<Vec<Ended>>> = Arc::default();
    let server = {
        let ended = ended.clone();
        Server::start(
            listener,
            make_sink,
            options.max_sources,
            options.record.clone(),
            move |id, _sink, applied, result| {
                let error = result.err().map(|e| e.to_string());
                ended
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Ended { id, applied, error });
            },
        )?
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {}", server.local_addr())?;
    out.flush()?;

    let mut shown = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let done = ended.lock().unwrap_or_else(|e| e.into_inner()).len() as u64;
        if options.connections.is_some_and(|n| done >= n) {
            break;
        }
        if shown.elapsed() >= Duration::from_secs(1) {
            shown = Instant::now();
            for (i, c) in server.connections().iter().enumerate() {
                if c.open {
                    eprintln!(
                        "connection {i}: {} frames, {} bytes, rows {} applied {} skipped, \
                         {} gap(s)",
                        c.frames, c.bytes, c.applied.rows, c.applied.rows_skipped, c.applied.gaps
                    );
                }
            }
        }
    }
    server.shutdown(Duration::from_secs(5));
    #[cfg(feature = "archive")]
    if let Some(archive) = archive {
        crate::demo::finish_archive(archive, &mut out)?;
    }
    let mut ended = std::mem::take(&mut *ended.lock().unwrap_or_else(|e| e.into_inner()));
    ended.sort_by_key(|e| e.id);
    for e in &ended {
        let a = e.applied;
        writeln!(
            out,
            "connection {}: sources {}, rows {} applied {} skipped, index entries {}, \
             segments {}, gaps {} ({} frames lost), {}",
            e.id,
            a.sources,
            a.rows,
            a.rows_skipped,
            a.index_entries,
            a.segments,
            a.gaps,
            a.frames_lost,
            match &e.error {
                None => "ended cleanly".to_string(),
                Some(err) => format!("ended: {err}"),
            }
        )?;
    }
    Ok(())
}

type MakeSink = Box<dyn Fn(u64) -> Box<dyn Sink + Send> + Send>;

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
