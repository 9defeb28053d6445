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
//!   `firmware.rs`, `net.rs`, `footprint.rs`).

mod firmware;
mod footprint;
mod metrics;
mod net;
mod setup;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("no-std") => no_std(),
        Some("firmware") => firmware::run(),
        Some("bench-report") => bench_report(&args[1..]),
        Some("soak") => soak(&args[1..]),
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
  ci       formatting, clippy (-D warnings), all tests (the archive feature's too),
           no-std, firmware, rustdoc (-D warnings)
  no-std   build a no_std, no_main program over dendro-wire-core with no allocator
  firmware build the agent, decoder and plain (xtask/firmware) for thumbv7m, thumbv6m and
           riscv32imc and run them under QEMU (lm3s6965evb, microbit, sifive_e),
           check the agent's streams (target/firmware/<target>/connection-N.dwr)
           and the decoder's counts with dendro-wire check, apply the streams
           with dendro's Subscriber; run the network agent over TCP into a live
           dendro-wire listen in a network namespace, shaped and restarted
           (target/firmware/net/); count observe's instructions per row
           (-icount); print every program's footprint
  fuzz --target NAME [--seconds N]
           run one fuzz target coverage-guided (bolero's libFuzzer engine, nightly)
           for N seconds (default 60); targets: decode_arbitrary, reader_chunks,
           encode_decode, json_identity, differential_dendro, subscriber_model
  bench-report [--quick]
           measure ours, dendro 0.6.1 and memcpy on the same bytes; print one table
  metrics  a real Prometheus scrapes `dendro-wire listen --metrics`; its query of the
           rows applied must equal the listener's summary (part of ci)
  soak [--quick] [--seconds S]
           dendro-wire listen under 10,000 idle connections, 1,000 clients claiming
           64 MiB frames, 5,000 sequential connections and a reconnect storm, with
           an honest agent throughout; print a table (not part of ci)
";

/// The optional features checked and tested in every CI run with the rest
/// (the archive feature, a heavy build, has steps of its own).
const CORE_FEATURES: &str =
    "dendro-wire-core/embedded-io-async dendro-wire-core/serde dendro-wire-std/tokio";

/// The tests against dendro's archive side (`dendro-wire-std/tests/archive.rs`).
const ARCHIVE_TESTS: &[&str] = &[
    "test",
    "-p",
    "dendro-wire-std",
    "--features",
    "archive",
    "--test",
    "archive",
];

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

/// The tool's release build, built first: the firmware check, the bench
/// report's `check` line and the soak run it as a whole process.
fn release_tool() -> Result<PathBuf, String> {
    run(
        "build dendro-wire (release)",
        cargo().args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "dendro-wire",
            "--bin",
            "dendro-wire",
        ]),
    )?;
    Ok(root().join("target/release/dendro-wire"))
}

fn ci() -> Result<(), String> {
    setup::ensure("ci", &[setup::CI, setup::FIRMWARE, setup::METRICS])?;
    run(
        "cargo fmt --check",
        cargo().args(["fmt", "--all", "--check"]),
    )?;
    run(
        "clippy",
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--features",
            CORE_FEATURES,
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    // The archive feature builds dendro with SQLite, arrow and parquet, so
    // it is checked on its own rather than in every build.
    run(
        "clippy, archive feature",
        cargo().args([
            "clippy",
            "-p",
            "dendro-wire-std",
            "-p",
            "dendro-wire",
            "--all-targets",
            "--features",
            "dendro-wire/archive",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    lean_library()?;
    run(
        "tests",
        cargo().args(["test", "--workspace", "--features", CORE_FEATURES]),
    )?;
    run(
        "the firmware example",
        cargo().args([
            "run",
            "--quiet",
            "-p",
            "dendro-wire-core",
            "--example",
            "firmware_agent",
            "--features",
            "embedded-io",
        ]),
    )?;
    filter_example()?;
    run(
        "the tokio example",
        cargo().args([
            "run",
            "--quiet",
            "-p",
            "dendro-wire-std",
            "--example",
            "tokio_subscriber",
            "--features",
            "tokio",
        ]),
    )?;
    run(
        "tests against dendro's archive side",
        cargo().args(ARCHIVE_TESTS),
    )?;
    no_std()?;
    firmware::run()?;
    metrics::run_metrics(&release_tool()?)?;
    // Every feature documented, as docs.rs builds it (the archive feature's
    // dependencies were built by its clippy step).
    run(
        "rustdoc, every feature",
        cargo()
            .args(["doc", "--workspace", "--no-deps", "--all-features"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    docs_rs()?;
    rust_version()?;
    forget_packaged_copies();
    run(
        "each crate packaged and built on its own",
        cargo().args([
            "package",
            "--quiet",
            "--allow-dirty",
            "-p",
            "dendro-wire-core",
            "-p",
            "dendro-wire-std",
            "-p",
            "dendro-wire",
        ]),
    )?;
    eprintln!("==> ci: all steps passed");
    Ok(())
}

/// A user who adds `dendro-wire-std` gets the library, not the tool: none of
/// the tool's dependencies in its default build.
fn lean_library() -> Result<(), String> {
    eprintln!("==> the library's default dependencies");
    let tree = cargo_tree("dendro-wire-std", "normal")?;
    let heavy: Vec<&str> = ["clap ", "serde_json ", "tokio ", "rustls ", "dendro "]
        .into_iter()
        .filter(|name| tree.lines().any(|l| l.starts_with(name)))
        .collect();
    if !heavy.is_empty() {
        return Err(format!(
            "dendro-wire-std's default build pulls in {heavy:?}; they belong behind features \
             or in the tool"
        ));
    }
    Ok(())
}

/// Remove the copies of this workspace's packages that an earlier `cargo
/// package` unpacked from its local registry, and what was built from them:
/// cargo takes a registry package to be the same by name and version, so
/// it reuses an unpacked copy and counts its build as fresh, and a changed
/// crate would be verified as it was. (A fresh machine has neither.)
fn forget_packaged_copies() {
    forget_packaged_builds();
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let Some(registry) = home.map(|h| h.join("registry")) else {
        return;
    };
    for kind in ["src", "cache"] {
        let Ok(registries) = std::fs::read_dir(registry.join(kind)) else {
            continue;
        };
        // Local registries' directories start with '-'; crates.io's do not.
        for local in registries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with('-'))
        {
            let Ok(packages) = std::fs::read_dir(local.path()) else {
                continue;
            };
            for package in packages.flatten() {
                if package
                    .file_name()
                    .to_string_lossy()
                    .starts_with("dendro-wire")
                {
                    let path = package.path();
                    let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
                }
            }
        }
    }
}

/// Mark stale every build of one of this workspace's packages from a
/// local registry (its dep-info names sources under `registry/src/-…`), by
/// removing its fingerprint, so `cargo package` builds it again from what
/// it has just packaged.
fn forget_packaged_builds() {
    let Ok(profiles) = std::fs::read_dir(root().join("target")) else {
        return;
    };
    for profile in profiles.flatten().map(|e| e.path()) {
        let Ok(deps) = std::fs::read_dir(profile.join("deps")) else {
            continue;
        };
        for dep_info in deps.flatten().map(|e| e.path()) {
            let Some(stem) = dep_info
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".d"))
                .filter(|n| n.starts_with("dendro_wire"))
            else {
                continue;
            };
            let from_local_registry = std::fs::read(&dep_info)
                .is_ok_and(|d| d.windows(14).any(|w| w == b"registry/src/-"));
            if from_local_registry {
                let fingerprint = profile.join(".fingerprint").join(stem.replace('_', "-"));
                let _ = std::fs::remove_dir_all(fingerprint);
            }
        }
    }
}

/// The docs as docs.rs builds them (nightly, `--cfg docsrs`, each
/// feature-gated item marked with its feature), warnings denied. The
/// archive feature is left out: its SQLite, arrow and parquet would be built
/// again with nightly, and its docs build on stable above.
fn docs_rs() -> Result<(), String> {
    run(
        "rustdoc as docs.rs builds it (nightly, --cfg docsrs)",
        rustup_cargo("nightly")
            .env("RUSTDOCFLAGS", "--cfg docsrs -D warnings")
            .args([
                "doc",
                "--quiet",
                "--no-deps",
                "-p",
                "dendro-wire-core",
                "-p",
                "dendro-wire-std",
                "--features",
                "dendro-wire-core/embedded-io-async dendro-wire-core/defmt dendro-wire-core/serde \
                 dendro-wire-std/serde dendro-wire-std/tls",
                "--target-dir",
                "target/docsrs",
            ]),
    )
}

/// The `rust-version` the crates declare: the core and the library build
/// and pass their tests with that toolchain (`.ci/run` installs it).
fn rust_version() -> Result<(), String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml"))
        .map_err(|e| format!("Cargo.toml: {e}"))?;
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_string())
        .ok_or("Cargo.toml declares no rust-version")?;
    run(
        &format!("the core and the library on Rust {version}, the declared rust-version"),
        rustup_cargo(&version)
            // The only step that builds the tests with default features,
            // so the only one to see what is unused without them.
            .env("RUSTFLAGS", "-D warnings")
            .args([
                "test",
                "-p",
                "dendro-wire-core",
                "-p",
                "dendro-wire-std",
                "--lib",
                "--tests",
                "--target-dir",
                "target/rust-version",
            ]),
    )
}

fn no_std() -> Result<(), String> {
    // First the clear message: no dependency of the core may have a std or
    // alloc feature turned on.
    eprintln!("==> dependency features of dendro-wire-core");
    let tree = cargo_tree("dendro-wire-core", "normal,features,no-proc-macro")?;
    let offending: Vec<&str> = tree
        .lines()
        .filter(|l| l.contains("feature \"std\"") || l.contains("feature \"alloc\""))
        .collect();
    if !offending.is_empty() {
        return Err(format!(
            "std or alloc reaches dendro-wire-core through a dependency:\n  {}",
            offending.join("\n  ")
        ));
    }
    // Then the proof: a program with its own panic handler and no allocator
    // fails to build if std or alloc is anywhere in its graph.
    let check = root().join("xtask/no-std-check");
    run(
        "no_std, no_main build of dendro-wire-core",
        cargo()
            .current_dir(&check)
            .args([
                "rustc",
                "--release",
                "--quiet",
                "--",
                "-C",
                "link-arg=-nostartfiles",
                "-C",
                "link-arg=-lc",
            ])
            .env("CARGO_TARGET_DIR", root().join("target/no-std-check")),
    )?;
    // Every optional feature of the core builds for a microcontroller too
    // (defmt's logging and serde's views are for devices).
    run(
        "dendro-wire-core with every feature, for thumbv7m-none-eabi",
        cargo()
            .args([
                "check",
                "--quiet",
                "-p",
                "dendro-wire-core",
                "--target",
                "thumbv7m-none-eabi",
                "--all-features",
            ])
            .env("CARGO_TARGET_DIR", root().join("target/no-std-check")),
    )?;
    run(
        "rustfmt of the no_std program",
        cargo().current_dir(&check).args(["fmt", "--check"]),
    )
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

/// The filter example on the committed sample, its output checked by the
/// tool: only source 1's frames (and the unknown one) remain, and the result
/// is a stream the subscriber's rules accept.
fn filter_example() -> Result<(), String> {
    eprintln!("==> the filter example");
    let sample = std::fs::File::open(root().join("testdata/sample.dwr"))
        .map_err(|e| format!("testdata/sample.dwr: {e}"))?;
    let filtered = output(
        "the filter example",
        cargo()
            .args([
                "run",
                "--quiet",
                "-p",
                "dendro-wire-std",
                "--example",
                "filter",
                "--",
                "1",
            ])
            .stdin(sample),
    )?;
    let path = root().join("target/filter-example.dwr");
    std::fs::write(&path, &filtered).map_err(|e| e.to_string())?;
    let check = cargo()
        .args([
            "run",
            "--quiet",
            "--bin",
            "dendro-wire",
            "--",
            "check",
            "--json",
        ])
        .arg(&path)
        .output()
        .map_err(|e| format!("dendro-wire check: {e}"))?;
    let summary = String::from_utf8_lossy(&check.stdout);
    let want = r#""frames":6,"sources":1,"index_entries":0,"rows_applied":1"#;
    if !check.status.success() || !summary.contains(want) {
        return Err(format!(
            "the filtered sample does not check as expected: {summary}{}",
            String::from_utf8_lossy(&check.stderr)
        ));
    }
    Ok(())
}
