//! `cargo xtask bench-report [--quick]`: ours, dendro 0.6.1 and memcpy on
//! the same bytes, in one table (`benches/`), with the C API from C and the
//! Python package beside them.

use crate::steps::{self, cargo, release_tool};
use crate::{c_build, python, setup};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    // The `check` line times the real tool as a whole process.
    let binary = release_tool()?;
    let mut cmd = cargo();
    cmd.args([
        "run",
        "--release",
        "--quiet",
        "-p",
        "dendro-wire-benches",
        "--bin",
        "bench-report",
        "--",
    ]);
    cmd.args(args);
    cmd.arg("--check-binary").arg(binary);
    // The decoder through the C API, from C, beside the Rust decoder.
    setup::ensure("bench-report", &[setup::C])?;
    let c_bench = c_build::build_bench(&c_build::host_libraries()?)?;
    cmd.arg("--c-bench-binary").arg(c_bench);
    // The Python package's rows into columns, beside `check`.
    let python = python::environment()?;
    python::wheel(&python)?;
    cmd.arg("--python").arg(python);
    steps::run("bench report", &mut cmd)
}
