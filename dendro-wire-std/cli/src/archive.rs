//! The dendro archive `listen` and `demo` land what they receive in
//! (feature `archive`): opened before the first connection, and at the end
//! finished and read back with dendro itself, with how a reader gets at it.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use dendro_wire_std::archive::{
    contents, ArchiveConfig, ArchiveStats, DendroEvents, SharedArchive,
};

use crate::failure::Failure;

/// `listen`'s flags for its archive.
#[derive(clap::Args)]
pub(crate) struct ArchiveArgs {
    /// The encoder the archive stores rows for; a source declaring another
    /// is refused.
    #[arg(long, default_value = crate::values::AGENT_ENCODER)]
    pub(crate) encoder: String,
    /// Commit the archive's rows, from every connection together, in
    /// batches of up to this many.
    #[arg(
        long,
        value_name = "ROWS",
        default_value_t = dendro_wire_std::archive::ArchiveConfig::default().commit_rows,
        requires = "archive"
    )]
    commit_rows: usize,
    /// Commit a batch once its oldest row has waited this long, however
    /// few rows it holds.
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = crate::values::parse_duration, requires = "archive")]
    commit_age: Duration,
    /// /ready answers 503 while the archive is further behind than this
    /// (the oldest row handed to it and not yet committed has waited
    /// longer), so that a load balancer sends new agents elsewhere.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::values::parse_duration, requires = "archive")]
    pub(crate) ready_max_lag: Duration,
    /// The most sources the archive holds, those it held when opened
    /// included; a Handshake past it is refused and its connection closed.
    /// Each source is a row in the archive for good (some 300 bytes of it)
    /// and its uuid is kept in the collector's memory. A fleet of 10,000 agents with a few
    /// sources each is some tens of thousands; an agent that restarts
    /// minting new uuids adds its sources again: the default leaves room
    /// for ten restarts of such a fleet before a new archive is due.
    #[arg(
        long,
        value_name = "SOURCES",
        default_value_t = ArchiveConfig::default().max_sources,
        requires = "archive"
    )]
    pub(crate) archive_max_sources: usize,
    /// The most sources connections from one client address (the one a
    /// PROXY header names, behind a balancer) create in the archive,
    /// whatever becomes of them; a Handshake past it is refused and its
    /// connection closed. A source reopened under a uuid the archive holds
    /// (a reconnect) is not counted again. An agent has a few sources: the
    /// default is room for several restarts of one that mints new uuids, or
    /// a few agents behind one address; raise it when many agents share
    /// one (NAT, or a balancer without --proxy-protocol-from).
    #[arg(
        long,
        value_name = "SOURCES",
        default_value_t = ArchiveConfig::default().max_sources_per_address,
        requires = "archive"
    )]
    pub(crate) archive_max_sources_per_address: usize,
}

/// Of `--max-memory`, the part the archive's backlog may hold.
pub(crate) fn backlog_share(max_memory: usize) -> usize {
    max_memory / 4
}

impl ArchiveArgs {
    /// The archive's config: its backlog `max_memory`'s share.
    pub(crate) fn config(&self, max_memory: usize) -> ArchiveConfig {
        ArchiveConfig::default()
            .commit_rows(self.commit_rows)
            .commit_age(self.commit_age)
            .backlog_bytes(backlog_share(max_memory))
            .max_sources(self.archive_max_sources)
            .max_sources_per_address(self.archive_max_sources_per_address)
    }
}

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
    writeln!(
        out,
        "  sources   {} opened, {} refused (past --archive-max-sources or \
         --archive-max-sources-per-address); {} held; dendro's writer opened again {} \
         time(s) to stop beating those ended",
        stats.sources_opened, stats.sources_refused, stats.sources_held, stats.writer_reopens,
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
