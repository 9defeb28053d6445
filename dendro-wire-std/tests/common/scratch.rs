//! A fresh directory for one test, under cargo's temporary directory for
//! tests: emptied first, so a test never reads an earlier run's files.
//! Shared by the std crate's and the tool's tests.

use std::path::{Path, PathBuf};

pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
