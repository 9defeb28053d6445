//! `cargo xtask conformance`: the conformance suite (`conformance/`, its
//! README says what it is) run against the four implementations, and the
//! matrix written to `conformance/MATRIX.md`.
//!
//! - The cases are written again into `target/conformance/cases` and must
//!   equal the committed ones byte for byte (`--write` writes them into
//!   `conformance/cases` instead).
//! - The adapters are built: the tool's release build, the C program over
//!   the C library (`conformance/adapters/c/adapter.c`), dendro 0.6.1's
//!   (`conformance/adapters/dendro`), and the Python package's wheel,
//!   installed in `target/python` (in `ci`, by the `python` step before).
//! - `conformance/run.py` runs every case through every adapter; it fails
//!   on a disagreement with a must-accept or must-refuse case that the case
//!   does not record as a known divergence, and holds this project's three
//!   implementations to its stricter choices (the implementation-defined
//!   cases) too. Its own tests, with adapters that are wrong on purpose,
//!   run first.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::c_build::{build_program, host_libraries};
use crate::conformance_cases::DENDRO;
use crate::conformance_damaged::write_damaged;
use crate::conformance_write::write_cases;
use crate::steps::{self, cargo, fresh_dir, root, target_dir};
use crate::{python, setup};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    match args {
        [] => check(Wheel::Build),
        [flag] if flag == "--write" => {
            // The damaged corpus's outcomes are recorded through the
            // tool's adapter, a Python program.
            setup::ensure("conformance --write", &[setup::PYTHON])?;
            let committed = root().join("conformance/cases");
            fresh_dir(&committed)?;
            let n = write_all(&steps::release_tool()?, &committed)?;
            eprintln!("==> conformance: {n} cases written to conformance/cases");
            Ok(())
        }
        _ => Err(format!(
            "conformance takes --write or nothing, not {args:?}"
        )),
    }
}

/// Whether the Python package's wheel is to be built and installed, or
/// is installed from this tree already (`cargo xtask ci` ran `python`).
pub(crate) enum Wheel {
    Build,
    Installed,
}

/// The cases as committed, the runner's tests, then every case through
/// every implementation.
pub(crate) fn check(wheel: Wheel) -> Result<(), String> {
    let started = std::time::Instant::now();
    setup::ensure("conformance", &[setup::C, setup::PYTHON])?;
    let tool = steps::release_tool()?;
    let committed = root().join("conformance/cases");
    eprintln!("==> the conformance cases, written again, as committed");
    let fresh = target_dir().join("conformance/cases");
    fresh_dir(&fresh)?;
    write_all(&tool, &fresh)?;
    same_files(&fresh, &committed)?;
    let python = python::environment()?;
    steps::run(
        "the runner's own tests (adapters wrong on purpose)",
        Command::new(&python)
            .args(["-m", "unittest", "discover", "-q", "-s"])
            .arg(root().join("conformance/tests"))
            .env("DENDRO_WIRE", &tool),
    )?;
    if let Wheel::Build = wheel {
        python::wheel(&python)?;
    }
    let adapters = adapters(&tool, &python)?;
    let mut runner = Command::new(&python);
    runner
        .arg(root().join("conformance/run.py"))
        .arg("--matrix")
        .arg(root().join("conformance/MATRIX.md"));
    for (name, command) in &adapters {
        runner.arg("--adapter").arg(format!("{name}={command}"));
        // This project's implementations make its stricter choices (§8).
        if *name != DENDRO {
            runner.arg("--held-to-8").arg(name);
        }
    }
    steps::run("the conformance suite, every implementation", &mut runner)?;
    eprintln!(
        "==> conformance: {} implementations agree (conformance/MATRIX.md), in {:.1} s",
        adapters.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Every case written into `dir`, which exists and is empty; how many.
fn write_all(tool: &Path, dir: &Path) -> Result<usize, String> {
    Ok(write_cases(tool, dir)? + write_damaged(tool, dir)?)
}

/// Each implementation's name in the matrix and its adapter's command.
fn adapters(tool: &Path, python: &Path) -> Result<Vec<(&'static str, String)>, String> {
    let here = root().join("conformance/adapters");
    let c = build_program(
        &here.join("c/adapter.c"),
        "conformance-c",
        &host_libraries()?,
        &[&root().join("dendro-wire-core/ffi/examples")],
    )?;
    steps::run(
        "build dendro 0.6.1's adapter (its codec alone)",
        cargo().args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "dendro-wire-conformance-dendro",
        ]),
    )?;
    let quoted = |p: &Path| format!("'{}'", p.display());
    Ok(vec![
        (
            "Rust tool",
            format!(
                "python3 {} {}",
                quoted(&here.join("dendro_wire_tool.py")),
                quoted(tool)
            ),
        ),
        ("C API", quoted(&c)),
        (
            "Python",
            format!(
                "{} {}",
                quoted(python),
                quoted(&here.join("python_package.py"))
            ),
        ),
        (
            DENDRO,
            quoted(&target_dir().join("release/conformance-dendro")),
        ),
    ])
}

/// Every file of `fresh` in `committed` with the same bytes, and no other.
fn same_files(fresh: &Path, committed: &Path) -> Result<(), String> {
    let names = |dir: &Path| -> Result<Vec<PathBuf>, String> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .flatten()
            .map(|e| PathBuf::from(e.file_name()))
            .collect();
        names.sort();
        Ok(names)
    };
    let (ours, theirs) = (names(fresh)?, names(committed)?);
    let stale: Vec<String> = ours
        .iter()
        .chain(theirs.iter())
        .filter(|n| std::fs::read(fresh.join(n)).ok() != std::fs::read(committed.join(n)).ok())
        .map(|n| n.display().to_string())
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    Err(format!(
        "conformance/cases is not what the generator writes ({} file(s) differ: {}); run \
         `cargo xtask conformance --write` and commit the cases",
        stale.len(),
        stale.join(", ")
    ))
}
