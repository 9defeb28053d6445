//! The dendro archive `listen` and `demo` land what they receive in
//! (feature `archive`): opened before the first connection, and at the end
//! finished and read back with dendro itself, with how a reader gets at it.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use dendro_wire_std::archive::{
    contents, ArchiveConfig, ArchiveStats, DendroEvents, SharedArchive,
};

use crate::failure::Failure;

/// Sources listed one by one in the report; past these, only counted.
const LISTED: usize = 8;

/// The archive at `path` (created, or opened if it exists) for rows in
/// `encoder`, its writer path batching as `config` says. dendro's own
/// warnings and errors are printed with the tool's, and every tick dendro
/// drops is a commit the archive counts failed ([`DendroEvents`]).
pub(crate) fn open(
    path: &Path,
    encoder: &str,
    config: ArchiveConfig,
) -> Result<SharedArchive, Failure> {
    DendroEvents::install();
    SharedArchive::with_config(path, encoder, config)
        .map_err(|e| Failure(format!("cannot open {}: {e}", path.display())))
}

/// Commit what is left and wait for the archive's writer, then say what
/// it did, what landed (read back with dendro 0.6.1), and how a reader gets
/// at it. `at_stop` is what the writer path had been handed and not yet
/// committed when the process was told to stop, if it was.
///
/// Everything is said even when a commit failed; then, or when any row
/// handed over was not committed, or the archive cannot be read back, the
/// failure is returned too, saying why (the tool exits 1).
pub(crate) fn finish(
    archive: SharedArchive,
    at_stop: Option<ArchiveStats>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let path = archive.path().to_path_buf();
    let before = archive.stats();
    let started = Instant::now();
    // What the writer path did is kept when it failed: the stats say it.
    let stats = match archive.clone().finish() {
        Ok(stats) => stats,
        Err(_) => archive.stats(),
    };
    let took = started.elapsed();
    let read_back = contents(&path);
    match &read_back {
        Ok(sources) => writeln!(
            out,
            "archive     {} (read back with dendro 0.6.1): {} source(s), {} rows in their WALs",
            path.display(),
            sources.len(),
            sources.iter().map(|s| s.wal_rows).sum::<u64>(),
        )?,
        Err(e) => writeln!(
            out,
            "archive     {}: cannot be read back with dendro 0.6.1: {e}",
            path.display()
        )?,
    }
    writeln!(
        out,
        "  committed {} rows in {} commit(s) ({} apart, their stream's ts not advancing), {} \
         not committed; at most {:.3} s behind (the longest a row waited to be committed)",
        stats.rows_committed,
        stats.commits,
        stats.rows_committed_apart,
        stats.rows_dropped,
        stats.max_lag.as_secs_f64(),
    )?;
    let failure = not_committed(&stats, &read_back);
    if let Some(why) = &failure {
        writeln!(out, "  FAILED    {why}")?;
    }
    if let Some(at_stop) = at_stop {
        writeln!(
            out,
            "  at stop   {} rows were handed over and not yet committed, {} more were applied \
             as connections drained; of the {} left, {} committed in {:.3} s before exit",
            at_stop.rows_pending,
            stats
                .rows_handed_over
                .saturating_sub(at_stop.rows_handed_over),
            before.rows_pending,
            stats.rows_committed - before.rows_committed,
            took.as_secs_f64(),
        )?;
    }
    let sources = read_back.unwrap_or_default();
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
    match failure {
        Some(why) => Err(Failure(format!("the archive {}: {why}", path.display()))),
        None => Ok(()),
    }
}

/// Why not every row handed over is known to be in the archive, if not:
/// how many were not committed, and why.
fn not_committed(
    stats: &ArchiveStats,
    read_back: &Result<Vec<dendro_wire_std::archive::SourceContents>, impl std::fmt::Display>,
) -> Option<String> {
    let why = match (&stats.failed, read_back) {
        (Some(failed), _) => failed.clone(),
        (None, _) if stats.rows_dropped > 0 => {
            "their sources could not be opened in the archive".to_string()
        }
        (None, Err(e)) => {
            return Some(format!(
                "it cannot be read back ({e}): the {} rows committed are not shown to be in it",
                stats.rows_committed
            ))
        }
        (None, Ok(_)) => return None,
    };
    Some(format!(
        "{} of the {} rows handed over were not committed: {why}",
        stats.rows_dropped, stats.rows_handed_over
    ))
}
