//! What every command is made of: steps, each run and named (a failure
//! names its step), `cargo` at the workspace root, files copied, a fresh
//! output directory, and the tool's release build. A leaf: it uses no
//! other module here, and every other may use it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tool's tests with the archive feature: its unit tests, and
/// `cli_archive`, `listen` and `demo` over an archive that cannot be
/// written (as root, as CI runs, it mounts a small tmpfs to fill; its file
/// size limit needs no root).
pub(crate) const CLI_ARCHIVE_TESTS: &[&str] = &[
    "test",
    "-p",
    "dendro-wire",
    "--features",
    "archive",
    "--bin",
    "dendro-wire",
    "--test",
    "cli_archive",
];

/// The core's model tests with the frame walked for a source's newest
/// `ts` as it closes, as on a 32-bit core (`dendro-wire-core/build.rs`,
/// `DENDRO_WIRE_WALK_NEWEST`), where the host keeps it row by row.
pub(crate) const WALK_NEWEST_TESTS: &[&str] = &[
    "test",
    "-p",
    "dendro-wire-core",
    "--test",
    "attribution",
    "--test",
    "publisher_model",
    "--test",
    "fairness",
    "--test",
    "publisher",
];

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits one level below the workspace root")
        .to_path_buf()
}

/// Where cargo builds, as cargo itself decides: `CARGO_TARGET_DIR` if set
/// (relative to where the command runs, as cargo reads it), else `target`
/// at the workspace root. Every file xtask writes or reads of a build goes
/// under it.
pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            match dir.is_absolute() {
                true => dir,
                false => std::env::current_dir().unwrap_or_else(|_| root()).join(dir),
            }
        }
        _ => root().join("target"),
    }
}

/// `cargo`, the one running this, at the workspace root.
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// `cargo` of another toolchain, at the workspace root: rustup's `cargo`
/// with `+toolchain`, rather than the toolchain's own that runs this, and
/// none of this one's variables.
pub(crate) fn rustup_cargo(toolchain: &str) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root())
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("RUSTUP_TOOLCHAIN")
        .arg(format!("+{toolchain}"));
    cmd
}

/// `cargo tree` of one package over the given edge kinds, a line per
/// crate with no indentation.
pub(crate) fn cargo_tree(package: &str, edges: &str) -> Result<String, String> {
    let out = output(
        "cargo tree",
        cargo().args(["tree", "-p", package, "-e", edges, "--prefix", "none"]),
    )?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Run a step, saying what it is; a failure names the step.
pub(crate) fn run(step: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("==> {step}");
    let status = cmd
        .status()
        .map_err(|e| format!("{step}: could not start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{step} failed ({status})"))
    }
}

/// Run `cmd` for what it prints: its stdout, or an error with its stderr.
pub(crate) fn output(step: &str, cmd: &mut Command) -> Result<Vec<u8>, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{step}: could not start: {e}"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(format!(
            "{step} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Copy `from` to `to`, making `to`'s folder if it is not there.
pub(crate) fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("{} to {}: {e}", from.display(), to.display()))
}

/// An empty directory: nothing from an earlier run may stand in for this
/// one's output.
pub(crate) fn fresh_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The tool's release build, built first: the firmware check, the bench
/// report's `check` line and the soak run it as a whole process.
pub(crate) fn release_tool() -> Result<PathBuf, String> {
    release_tool_with(&[])
}

/// The tool's release build with `features` (the same path for every set:
/// a caller that keeps one build beside another copies it aside).
pub(crate) fn release_tool_with(features: &[&str]) -> Result<PathBuf, String> {
    let mut cmd = cargo();
    cmd.args(["build", "--release", "--quiet", "-p", "dendro-wire"]);
    cmd.args(["--bin", "dendro-wire"]);
    let what = if features.is_empty() {
        "build dendro-wire (release)".to_string()
    } else {
        let features = features.join(",");
        cmd.args(["--features", &features]);
        format!("build dendro-wire with {features} (release)")
    };
    run(&what, &mut cmd)?;
    Ok(target_dir().join("release/dendro-wire"))
}
