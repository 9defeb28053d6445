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
