//! A fresh directory for one test, under cargo's temporary directory for
//! tests: emptied first, so a test never reads an earlier run's files.
//! Used by the std crate's and the tool's tests.
//!
//! Cargo names that directory only to the test being built
//! (`CARGO_TARGET_TMPDIR`), so the macro reads it where it is called.

use std::path::{Path, PathBuf};

/// `scratch!("name")`: the emptied directory `name` under the calling
/// test's `CARGO_TARGET_TMPDIR`.
#[macro_export]
macro_rules! scratch {
    ($name:expr) => {
        $crate::scratch::scratch_in(env!("CARGO_TARGET_TMPDIR"), $name)
    };
}

/// The emptied directory `name` under `tmpdir`.
pub fn scratch_in(tmpdir: &str, name: &str) -> PathBuf {
    let dir = Path::new(tmpdir).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
