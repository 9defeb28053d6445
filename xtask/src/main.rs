//! `cargo xtask`: the project's own commands, in Rust so they run wherever
//! cargo does.
//!
//! - `cargo xtask ci`: everything CI checks — formatting, clippy with
//!   warnings denied, every test, the no_std proof, and rustdoc with warnings
//!   denied.
//! - `cargo xtask no-std`: prove dendro-wire-core builds with neither std nor
//!   alloc (see `xtask/no-std-check`).
//! - `cargo xtask firmware`: build the agent, the decoder and a plain
//!   source in `xtask/firmware` for three families and the network agent
//!   for the Cortex-M3, run them under QEMU (the network agent into a live
//!   collector in a namespace of its own), check what they wrote and
//!   counted with `dendro-wire check`, and print their footprint (see
//!   `firmware.rs`, `net.rs`, `footprint.rs`); then the C agent
//!   (`c_firmware.rs`).
//! - `cargo xtask c`: the C API proved from C (see `c.rs`).

mod c;
mod c_firmware;
mod c_install;
mod ci;
mod firmware;
mod fleet;
mod footprint;
mod metrics;
mod net;
mod python;
mod setup;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci::ci(),
        Some("no-std") => ci::no_std(),
        Some("firmware") => firmware::run().and_then(|()| c_firmware::run()),
        Some("c") => c::run(&args[1..]),
        Some("python") => python::run(),
        Some("bench-report") => bench_report(&args[1..]),
        Some("soak") => soak(&args[1..]),
        Some("fleet") => fleet::run_fleet(&args[1..]),
        Some("metrics") => release_tool().and_then(|tool| metrics::run_metrics(&tool)),
        Some("fuzz") => fuzz(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            print!("{USAGE}");
            return if args.is_empty() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci       formatting, unsafe only in the C boundary, clippy (-D warnings), all tests
           (the archive feature's too), no-std, firmware, c, python, rustdoc (-D warnings)
  no-std   build a no_std, no_main program over dendro-wire-core with no allocator
  firmware build the agent, decoder and plain (xtask/firmware) for thumbv7m, thumbv6m and
           riscv32imc and run them under QEMU (lm3s6965evb, microbit, sifive_e),
           check the agent's streams (target/firmware/<target>/connection-N.dwr)
           and the decoder's counts with dendro-wire check, apply the streams
           with dendro's Subscriber; run the network agent over TCP into a live
           dendro-wire listen in a network namespace, shaped and restarted
           (target/firmware/net/); count observe's instructions per row
           (-icount); print every program's footprint
           then the C agent (dendro-wire-core/ffi/examples/firmware, arm-none-eabi-gcc)
           for thumbv7m under QEMU, its streams (target/firmware/c/) the Rust agent's
           bytes exactly
  c [--update-header | --install PREFIX]
           the C API (dendro-wire-core/ffi): the headers regenerated with cbindgen and
           compared with the committed ones (or written); the library installed under
           target/c/prefix (or PREFIX, and nothing else) with pkg-config and CMake
           files, its SONAME and exports checked, a program built through pkg-config
           (C99 and C++11 -pedantic) and README's C example run; dump.c and check.c
           built with ASan and UBSan and compared with dendro-wire dump --json and
           check --json over testdata/ and generated and damaged streams; decode.py
           (ctypes) over the sample
  python   the Python package (python/, PyO3 over dendro-wire-std): its wheel built with
           maturin into target/python (a virtual environment filled from PyPI once),
           installed, and its pytest tests run against dendro-wire
  fuzz --target NAME [--seconds N]
           run one fuzz target coverage-guided (bolero's libFuzzer engine, nightly)
           for N seconds (default 60); targets: decode_arbitrary, reader_chunks,
           encode_decode, json_identity, differential_dendro, subscriber_model,
           c_entry_points
  bench-report [--quick]
           measure ours, dendro 0.6.1 and memcpy on the same bytes; print one table
  metrics  a real Prometheus scrapes `dendro-wire listen --metrics`; its query of the
           rows applied must equal the listener's summary (part of ci)
  fleet [--quick]
           10,000 agents, each its own 127/8 address, into dendro-wire listen --archive;
           twice the rows; 2,000 through HAProxy into two collectors, one stopped and
           started again, every row accounted for; 10,000 connecting within 10 s; and
           dendro's own Writer at its best beside them; print a table (not part of ci)
  soak [--quick] [--seconds S]
           dendro-wire listen under 10,000 idle connections, 1,000 clients claiming
           64 MiB frames, 5,000 sequential connections and a reconnect storm, with
           an honest agent throughout; print a table (not part of ci)
";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits one level below the workspace root")
        .to_path_buf()
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// `cargo` of another toolchain, at the workspace root: rustup's `cargo`
/// with `+toolchain`, rather than the toolchain's own that runs this, and
/// none of this one's variables.
fn rustup_cargo(toolchain: &str) -> Command {
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
fn cargo_tree(package: &str, edges: &str) -> Result<String, String> {
    let out = output(
        "cargo tree",
        cargo().args(["tree", "-p", package, "-e", edges, "--prefix", "none"]),
    )?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Run a step, saying what it is; a failure names the step.
fn run(step: &str, cmd: &mut Command) -> Result<(), String> {
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
fn output(step: &str, cmd: &mut Command) -> Result<Vec<u8>, String> {
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
fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("{} to {}: {e}", from.display(), to.display()))
}

/// The tool's release build, built first: the firmware check, the bench
/// report's `check` line and the soak run it as a whole process.
fn release_tool() -> Result<PathBuf, String> {
    release_tool_with(&[])
}

/// The tool's release build with `features` (the same path for every set:
/// a caller that keeps one build beside another copies it aside).
fn release_tool_with(features: &[&str]) -> Result<PathBuf, String> {
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
    Ok(root().join("target/release/dendro-wire"))
}

fn bench_report(args: &[String]) -> Result<(), String> {
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
    let c_bench = c::build_bench(&c::host_libraries()?)?;
    cmd.arg("--c-bench-binary").arg(c_bench);
    // The Python package's rows into columns, beside `check`.
    let python = python::environment()?;
    python::wheel(&python)?;
    cmd.arg("--python").arg(python);
    run("bench report", &mut cmd)
}

fn soak(args: &[String]) -> Result<(), String> {
    let tool = release_tool()?;
    run(
        "build the soak (release)",
        cargo().args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "dendro-wire-benches",
            "--bin",
            "soak",
        ]),
    )?;
    // Tens of thousands of sockets: as many descriptors as the system
    // allows, for the soak and the listener it starts.
    let mut cmd = Command::new("sh");
    cmd.current_dir(root())
        .args(["-c", "ulimit -n \"$(ulimit -Hn)\" && exec \"$@\"", "sh"])
        .arg(root().join("target/release/soak"))
        .arg("--bin")
        .arg(tool)
        .args(args);
    run("soak", &mut cmd)
}

/// The fuzz targets in `fuzz/tests/targets.rs`.
const FUZZ_TARGETS: &[&str] = &[
    "decode_arbitrary",
    "reader_chunks",
    "encode_decode",
    "json_identity",
    "differential_dendro",
    "subscriber_model",
    "c_entry_points",
];

fn fuzz(args: &[String]) -> Result<(), String> {
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let target = value("--target").ok_or_else(|| {
        format!(
            "fuzz needs --target NAME, one of: {}",
            FUZZ_TARGETS.join(", ")
        )
    })?;
    if !FUZZ_TARGETS.contains(&target.as_str()) {
        return Err(format!(
            "no fuzz target `{target}`; the targets are: {}",
            FUZZ_TARGETS.join(", ")
        ));
    }
    let seconds: u64 = value("--seconds")
        .unwrap_or_else(|| "60".into())
        .parse()
        .map_err(|_| "--seconds takes a whole number".to_string())?;
    let installed = cargo()
        .args(["bolero", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        // From crates.io; without its default features it needs no system
        // libraries beyond a C compiler.
        run(
            "install cargo-bolero",
            cargo().args([
                "install",
                "cargo-bolero",
                "--locked",
                "--no-default-features",
            ]),
        )?;
    }
    run(
        &format!("fuzz {target} for {seconds} s"),
        cargo().args([
            "bolero",
            "test",
            "-p",
            "dendro-wire-fuzz",
            "--toolchain",
            "nightly",
            "--target-dir",
            "target/fuzz",
            "-T",
            &format!("{seconds}s"),
            &target,
        ]),
    )
}
