//! `cargo xtask python`: the Python package `dendro-wire` (the crate in
//! `python/`, PyO3 over dendro-wire-std) built as a wheel with maturin,
//! installed into a virtual environment of its own, and its pytest tests
//! run against the tool.
//!
//! The environment, `target/python`, is made with `python3 -m venv` and
//! filled from PyPI once (maturin to build; numpy, which the package needs;
//! pytest; pandas, pyarrow and polars, which its tests and README use; mypy,
//! which checks its stubs; cffi, which `cargo xtask c` reads the C header
//! with), then reused.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::setup;
use crate::steps::{self, root, target_dir};

/// What the environment holds, as pip installs it, and the module each
/// is imported by to know it is there.
const PACKAGES: &[(&str, &str)] = &[
    // 1.9.4 is the first that tells PyO3 it builds an extension module.
    ("maturin>=1.9.4,<2", "maturin"),
    ("numpy>=1.21", "numpy"),
    ("pytest>=7", "pytest"),
    ("pandas>=2", "pandas"),
    ("pyarrow>=10", "pyarrow"),
    // `Rows.to_polars`, tested and measured; some 40 MB, a few seconds.
    ("polars>=0.20", "polars"),
    // The package's stubs, checked with README's examples.
    ("mypy>=1.5", "mypy"),
    ("cffi>=1.15", "cffi"),
];

/// The environment's Python, made and filled if it is not yet.
pub(crate) fn environment() -> Result<PathBuf, String> {
    setup::ensure("python", &[setup::PYTHON])?;
    let venv = target_dir().join("python");
    let python = venv.join("bin/python");
    if !python.exists() {
        steps::run(
            "make the Python environment (target/python)",
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
        )?;
    }
    let imports: Vec<&str> = PACKAGES.iter().map(|(_, module)| *module).collect();
    let present = Command::new(&python)
        .args(["-c", &format!("import {}", imports.join(", "))])
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        let wanted: Vec<&str> = PACKAGES.iter().map(|(spec, _)| *spec).collect();
        pip(
            &python,
            &format!("pip install {} (from PyPI)", wanted.join(" ")),
            &wanted,
        )?;
    }
    Ok(python)
}

/// Build the wheel with maturin (release) and install it, replacing any
/// before it; the wheel's path.
pub(crate) fn wheel(python: &Path) -> Result<PathBuf, String> {
    let wheels = target_dir().join("wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    steps::run(
        "build the dendro-wire wheel (maturin, release)",
        Command::new(python)
            .args(["-m", "maturin", "build", "--release", "--quiet"])
            .arg("-m")
            .arg(root().join("python/Cargo.toml"))
            .arg("-o")
            .arg(&wheels),
    )?;
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| format!("{}: {e}", wheels.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("maturin wrote no wheel")?;
    let path = wheel.to_string_lossy();
    pip(
        python,
        "install the wheel",
        &["--force-reinstall", "--no-deps", &path],
    )?;
    Ok(wheel)
}

/// `pip install` into the environment, quietly.
fn pip(python: &Path, step: &str, args: &[&str]) -> Result<(), String> {
    steps::run(
        step,
        Command::new(python)
            .args(["-m", "pip", "install", "--quiet"])
            .arg("--disable-pip-version-check")
            .args(args),
    )
}

/// The package built, installed and tested.
pub(crate) fn run() -> Result<(), String> {
    let python = environment()?;
    let tool = steps::release_tool()?;
    let wheel = wheel(&python)?;
    steps::run(
        "pytest python/tests (the installed wheel against dendro-wire)",
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(root().join("python/tests"))
            // The installed package, never the source folder beside it.
            .current_dir(target_dir())
            .env("DENDRO_WIRE", &tool)
            .env("DENDRO_WIRE_ROOT", root()),
    )?;
    eprintln!(
        "==> python: {} built, installed and tested",
        wheel
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    );
    Ok(())
}
