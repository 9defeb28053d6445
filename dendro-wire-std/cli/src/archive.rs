//! The dendro archive `listen` and `demo` land what they receive in
//! (feature `archive`): opened before the first connection, and at the end
//! finished and read back with dendro itself, with how a reader gets at it.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use dendro_wire_std::archive::{contents, ArchiveConfig, ArchiveStats, SharedArchive};

use crate::failure::Failure;

/// Sources listed one by one in the report; past these, only counted.
const LISTED: usize = 8;

/// The archive at `path` (created, or opened if it exists) for rows in
/// `encoder`, its writer path batching as `config` says.
pub(crate) fn open(
    path: &Path,
    encoder: &str,
    config: ArchiveConfig,
) -> Result<SharedArchive, Failure> {
    SharedArchive::with_config(path, encoder, config)
        .map_err(|e| Failure(format!("cannot open {}: {e}", path.display())))
}

/// Commit what is left and wait for the archive's writer, then say what
/// it did, what landed (read back with dendro 0.6.1), and how a reader gets
/// at it. `at_stop` is what the writer path had been handed and not yet
/// committed when the process was told to stop, if it was.
pub(crate) fn finish(
    archive: SharedArchive,
    at_stop: Option<ArchiveStats>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let path = archive.path().to_path_buf();
    let before = archive.stats();
    let started = Instant::now();
    let stats = archive
        .finish()
        .map_err(|e| Failure(format!("the archive writer failed: {e}")))?;
    let took = started.elapsed();
    let sources = contents(&path)?;
    let rows: u64 = sources.iter().map(|s| s.wal_rows).sum();
    writeln!(
        out,
        "archive     {} (read back with dendro 0.6.1): {} source(s), {rows} rows in their WALs",
        path.display(),
        sources.len()
    )?;
    writeln!(
        out,
        "  committed {} rows in {} commit(s) ({} apart, their stream's ts not advancing), {} \
         dropped; at most {:.3} s behind (the longest a row waited to be committed)",
        stats.rows_committed,
        stats.commits,
        stats.rows_committed_apart,
        stats.rows_dropped,
        stats.max_lag.as_secs_f64(),
    )?;
    if let Some(at_stop) = at_stop {
        writeln!(
            out,
            "  at stop   {} rows were handed over and not yet committed, {} more were applied \
             as connections drained; all {} committed in {:.3} s before exit",
            at_stop.rows_pending,
            stats
                .rows_handed_over
                .saturating_sub(at_stop.rows_handed_over),
            before.rows_pending,
            took.as_secs_f64(),
        )?;
    }
    for source in sources.iter().take(LISTED) {
        writeln!(
            out,
            "  source {} {:?}: {} rows in the WAL",
            source.id, source.labels, source.wal_rows
        )?;
    }
    if sources.len() > LISTED {
        writeln!(out, "  ... and {} more source(s)", sources.len() - LISTED)?;
    }
    writeln!(
        out,
        "  read it with dendro::archive::Archive::open, then read_sources, all_streams \
         and live_wal (each row: the agent's bytes, as published)"
    )?;
    Ok(())
}
