//! The dendro archive `listen` and `demo` land what they receive in
//! (feature `archive`): opened before the first connection, and at the end
//! finished and read back with dendro itself, with how a reader gets at it.

use std::io::Write;
use std::path::Path;

use dendro_wire_std::archive::{contents, SharedArchive};

use crate::Failure;

/// The archive at `path` (created, or opened if it exists) for rows in
/// `encoder`.
pub(crate) fn open(path: &Path, encoder: &str) -> Result<SharedArchive, Failure> {
    SharedArchive::create(path, encoder)
        .map_err(|e| Failure(format!("cannot open {}: {e}", path.display())))
}

/// Wait for the archive's writer, then say what landed in it, read back
/// with dendro 0.6.1, and how a reader gets at it.
pub(crate) fn finish(archive: SharedArchive, out: &mut impl Write) -> Result<(), Failure> {
    let path = archive.path().to_path_buf();
    archive
        .finish()
        .map_err(|e| Failure(format!("the archive writer failed: {e}")))?;
    let sources = contents(&path)?;
    writeln!(
        out,
        "archive     {} (read back with dendro 0.6.1):",
        path.display()
    )?;
    for source in sources {
        writeln!(
            out,
            "  source {} {:?}: {} rows in the WAL",
            source.id, source.labels, source.wal_rows
        )?;
    }
    writeln!(
        out,
        "  read it with dendro::archive::Archive::open, then read_sources, all_streams \
         and live_wal (each row: the agent's bytes, as published)"
    )?;
    Ok(())
}
