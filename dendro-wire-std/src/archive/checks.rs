//! What the writer path checks once dendro has answered that a commit is
//! done, because dendro's answer alone does not say it: that dendro dropped
//! no tick after its retries ([`DendroEvents`](super::DendroEvents)), and
//! that the archive's file is still the one it opened (a file removed or
//! replaced takes every later commit with it, and dendro's writer, holding
//! the old one open, never notices).

use std::path::PathBuf;
use std::sync::Arc;

use super::events::Watch;

pub(super) struct Checks {
    watch: Arc<Watch>,
    /// Ticks dropped that the writer path has already been told of.
    seen: u64,
    path: PathBuf,
    /// The file opened: its device and inode.
    file: Option<(u64, u64)>,
}

impl Checks {
    pub(super) fn new(watch: Arc<Watch>, path: PathBuf) -> Self {
        let file = identity(&path).ok();
        Checks {
            watch,
            seen: 0,
            path,
            file,
        }
    }

    /// Why what dendro was handed since the last check is not all in the
    /// archive, if it is not. Call once dendro has answered a barrier
    /// (`sync`) behind it: its events for what came before are said by then.
    pub(super) fn check(&mut self) -> Result<(), String> {
        let (dropped, last) = self.watch.dropped();
        if dropped > self.seen {
            let n = dropped - self.seen;
            self.seen = dropped;
            return Err(format!(
                "dendro could not commit {n} tick(s) and dropped them; it said: {}",
                last.unwrap_or_default()
            ));
        }
        let Some(file) = self.file else {
            return Ok(());
        };
        match identity(&self.path) {
            Ok(now) if now == file => Ok(()),
            Ok(_) => Err(format!(
                "{} was replaced by another file: what is committed goes to the one removed",
                self.path.display()
            )),
            Err(e) => Err(format!(
                "{} is gone ({e}): what is committed goes to a file no longer there",
                self.path.display()
            )),
        }
    }
}

#[cfg(unix)]
fn identity(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    // Without an inode to compare, only a file that is gone is seen.
    std::fs::metadata(path).map(|_| (0, 0))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use dendro_wire_core::{Row, RowList, Rows};
    use dendro_wire_test_support::fixtures::bare_handshake;

    use super::super::{ArchiveConfig, SharedArchive};
    use crate::receive::Sink;

    fn hand_rows(sink: &mut impl Sink, seq: u64) -> Result<(), crate::receive::SinkError> {
        let rows: Vec<Row<'_>> = (0..10)
            .map(|i| Row {
                stream: "x",
                ts: (seq * 10 + i) as i64,
                wall_offset: 0,
                row: b"row",
            })
            .collect();
        let frame = Rows {
            source: 0,
            seq,
            index_state: (0, 0),
            rows: RowList::from_slice(&rows),
        };
        sink.rows(0, &frame)
    }

    #[test]
    fn an_archive_removed_under_the_writer_path_stops_it_and_no_row_is_lost_to_the_count() {
        let dir = std::env::temp_dir().join(format!("dendro-wire-removed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = ArchiveConfig::default().commit_age(Duration::from_millis(5));
        let archive =
            SharedArchive::with_config(&dir.join("a.dendro"), "test-raw-1", config).unwrap();
        let mut sink = archive.connection();
        sink.open_source(0, &bare_handshake(0)).unwrap();
        hand_rows(&mut sink, 0).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while archive.stats().rows_committed < 10 {
            assert!(Instant::now() < deadline, "{:?}", archive.stats());
            std::thread::sleep(Duration::from_millis(5));
        }
        std::fs::remove_file(archive.path()).unwrap();
        // Rows go on being handed over until the writer path has failed;
        // then they are refused.
        let mut seq = 1;
        let refused = loop {
            assert!(Instant::now() < deadline, "{:?}", archive.stats());
            match hand_rows(&mut sink, seq) {
                Ok(()) => seq += 1,
                Err(e) => break e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        assert!(refused.contains("is gone"), "{refused}");
        let why = archive.clone().finish().unwrap_err().to_string();
        assert!(why.contains("is gone"), "{why}");
        let stats = archive.stats();
        assert_eq!(stats.rows_committed, 10, "{stats:?}");
        assert_eq!(stats.rows_handed_over, seq * 10, "{stats:?}");
        assert_eq!(stats.rows_dropped, stats.rows_handed_over - 10, "{stats:?}");
        assert_eq!(
            (stats.rows_pending, stats.commit_failures),
            (0, 1),
            "{stats:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
