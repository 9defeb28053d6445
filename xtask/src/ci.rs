//! `cargo xtask ci`: every check the project holds itself to, in one run,
//! each step named as it starts and a failure naming its step; and the
//! steps only `ci` runs (the lean library, unsafe only where it belongs,
//! the docs as docs.rs builds them, the declared rust-version, the no_std
//! proof, the packaged crates).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::firmware::ARCHIVE_TESTS;
use crate::steps::{
    cargo, cargo_tree, output, release_tool, root, run, rustup_cargo, target_dir,
    CLI_ARCHIVE_TESTS, WALK_NEWEST_TESTS,
};
use crate::{
    book, c, c_firmware, conformance, dissector, firmware, metrics, python, setup, toolchains,
};

/// The optional features checked and tested in every CI run with the rest
/// (the archive feature, a heavy build, has steps of its own).
const CORE_FEATURES: &str =
    "dendro-wire-core/embedded-io-async dendro-wire-core/serde dendro-wire-std/tokio";

pub(crate) fn ci() -> Result<(), String> {
    setup::ensure(
        "ci",
        &[
            setup::CI,
            setup::FIRMWARE,
            setup::C_FIRMWARE,
            setup::C,
            setup::PYTHON,
            setup::METRICS,
            setup::WIRESHARK,
        ],
    )?;
    run(
        "cargo fmt --check",
        cargo().args(["fmt", "--all", "--check"]),
    )?;
    unsafe_only_in_the_c_boundary()?;
    let sources = source_files()?;
    no_source_file_past(&sources, MOST_LINES)?;
    no_import_circle(&sources)?;
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
        "the publisher's models, its newest ts walked for as on a 32-bit core",
        cargo()
            .args(WALK_NEWEST_TESTS)
            .env("DENDRO_WIRE_WALK_NEWEST", "1"),
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
    // With them, rows read back from dendro's archive by time (rule 5)
    // against the slots they were observed against (rule 9).
    run(
        "tests against dendro's archive side",
        cargo()
            .args(ARCHIVE_TESTS)
            .args(["--test", "archive_by_time"]),
    )?;
    run(
        "the archive's writer path, and a collector landing in an archive",
        cargo().args([
            "test",
            "-p",
            "dendro-wire-std",
            "--features",
            "archive tokio",
            "--lib",
            "--test",
            "archive_collector",
        ]),
    )?;
    run(
        "listen and demo when the archive cannot be written",
        cargo().args(CLI_ARCHIVE_TESTS),
    )?;
    no_std()?;
    firmware::run()?;
    c_firmware::run()?;
    c::run(&[])?;
    python::run()?;
    // After c and python, which built the C library and installed the wheel.
    conformance::check(conformance::Wheel::Installed)?;
    // Every pointer the C surface is handed in its tests, checked for
    // undefined behaviour (it found two aliasing bugs the sanitizers did
    // not).
    run(
        "the ffi crate's tests under Miri",
        rustup_cargo("nightly")
            .args(["miri", "test", "--quiet", "-p", "dendro-wire-ffi"])
            .arg("--target-dir")
            .arg(target_dir().join("miri")),
    )?;
    metrics::run_metrics(&release_tool()?)?;
    dissector::run(&release_tool()?)?;
    book::run()?;
    // Every feature documented, as docs.rs builds it (the archive feature's
    // dependencies were built by its clippy step).
    run(
        "rustdoc, every feature",
        cargo()
            .args(["doc", "--workspace", "--no-deps", "--all-features"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    toolchains::docs_rs()?;
    toolchains::rust_version()?;
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

/// The crates of the workspace that do not take its lints, which forbid
/// `unsafe`: the C boundary, whose `unsafe` is the project's; and two test
/// crates that deny it and allow it in one module, named by the one file
/// that may say `allow(unsafe_code)`.
const UNSAFE_ALLOWED: &[(&str, Option<&str>)] = &[
    ("dendro-wire-core/ffi", None),
    // A counting global allocator: `GlobalAlloc` is an unsafe trait.
    ("test-support", Some("src/lib.rs")),
    // The C API's entry points, unsafe fns, called as C calls them.
    ("fuzz", Some("tests/targets.rs")),
];

/// `unsafe` in no crate but the C boundary's, or the one module a test
/// crate names: the compiler holds each crate to its lints, and this holds
/// each crate to having them, so a new crate cannot go without. The
/// firmware under `xtask/` is not in the workspace: bare-metal programs,
/// which reach their hardware through `unsafe`.
fn unsafe_only_in_the_c_boundary() -> Result<(), String> {
    eprintln!("==> unsafe only in the C boundary");
    let metadata = output(
        "cargo metadata",
        cargo().args(["metadata", "--no-deps", "--format-version", "1"]),
    )?;
    let metadata = String::from_utf8_lossy(&metadata);
    let root = root();
    let mut wrong = Vec::new();
    let manifests = metadata
        .split("\"manifest_path\":\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next());
    for manifest in manifests.map(Path::new) {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
        };
        let dir = manifest.parent().unwrap_or(&root);
        let name = dir.strip_prefix(&root).unwrap_or(dir).display().to_string();
        let toml = read(manifest)?;
        let table = |header: &str, line: &str| in_table(&toml, header, line);
        match UNSAFE_ALLOWED.iter().find(|(dir, _)| *dir == name) {
            Some((_, None)) => {}
            Some((_, Some(allowed))) => {
                if !table("[lints.rust]", "unsafe_code = \"deny\"") {
                    wrong.push(format!(
                        "{name}/Cargo.toml: [lints.rust] must deny unsafe_code"
                    ));
                }
                for file in rust_files(dir)? {
                    let allows = read(&file)?.contains("allow(unsafe_code)");
                    if allows && file != dir.join(allowed) {
                        let file = file.strip_prefix(&root).unwrap_or(&file).display();
                        wrong.push(format!(
                            "{file}: allows unsafe_code, which {name} allows only in {allowed}"
                        ));
                    }
                }
            }
            None => {
                if !table("[lints]", "workspace = true") {
                    wrong.push(format!(
                        "{name}/Cargo.toml: takes no workspace lints ([lints] workspace = true), \
                         which forbid unsafe_code"
                    ));
                }
            }
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "unsafe belongs in dendro-wire-core/ffi (the root Cargo.toml says why):\n{}",
            wrong.join("\n")
        ))
    }
}

/// The lines a source file may have outside `tests/`: one a reader takes
/// in at a sitting. Past it, a file holds more than one thing; split it by
/// what its parts do.
const MOST_LINES: usize = 600;

/// Every Rust source file of the repository outside a `tests/` folder,
/// with its path from the root: what the structure checks read.
fn source_files() -> Result<Vec<(PathBuf, PathBuf)>, String> {
    let root = root();
    let mut files: Vec<_> = rust_files(&root)?
        .into_iter()
        .filter_map(|file| {
            let name = file.strip_prefix(&root).ok()?.to_path_buf();
            let in_tests = name.components().any(|c| c.as_os_str() == "tests");
            (!in_tests).then_some((file, name))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Fail if one of `sources` is longer than `most` lines.
fn no_source_file_past(sources: &[(PathBuf, PathBuf)], most: usize) -> Result<(), String> {
    eprintln!("==> no source file over {most} lines (tests apart)");
    let mut long = Vec::new();
    for (file, name) in sources {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let lines = text.lines().count();
        if lines > most {
            long.push(format!("{}: {lines} lines", name.display()));
        }
    }
    match long.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "source files over {most} lines (split each by what its parts do):\n{}",
            long.join("\n")
        )),
    }
}

/// Fail if, in any crate or program of the repository, two files import
/// each other, directly or through others: each layer uses only the ones
/// below it (docs/ARCHITECTURE.md). `xtask/import_circles.py` reads the
/// imports from every root among `sources`: each `lib.rs` and `main.rs`
/// under a `src` folder, and each program in a `src/bin`.
fn no_import_circle(sources: &[(PathBuf, PathBuf)]) -> Result<(), String> {
    let roots = sources.iter().filter_map(|(file, name)| {
        let tail: Vec<_> = name
            .iter()
            .rev()
            .take(3)
            .map(|c| c.to_string_lossy())
            .collect();
        let tail: Vec<&str> = tail.iter().map(|c| c.as_ref()).collect();
        matches!(
            tail.as_slice(),
            ["lib.rs" | "main.rs", "src", ..] | [_, "bin", "src"] | ["main.rs", _, "bin"]
        )
        .then_some(file)
    });
    run(
        "no import circle between files",
        Command::new("python3")
            .arg(root().join("xtask/import_circles.py"))
            .args(roots),
    )
}

/// Whether the TOML `text` has `line` in its table `header`.
fn in_table(text: &str, header: &str, line: &str) -> bool {
    let mut lines = text.lines().map(str::trim);
    lines.any(|l| l == header) && lines.take_while(|l| !l.starts_with('[')).any(|l| l == line)
}

/// Every `.rs` file under `dir`, but for a build's output (`target`) and
/// hidden folders (git's, a Python environment's).
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for path in entries.flatten().map(|e| e.path()) {
            let hidden = path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            if path.is_dir() && !hidden && !path.ends_with("target") {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    Ok(files)
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
    let Ok(profiles) = std::fs::read_dir(target_dir()) else {
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

pub(crate) fn no_std() -> Result<(), String> {
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
            .env("CARGO_TARGET_DIR", target_dir().join("no-std-check")),
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
            .env("CARGO_TARGET_DIR", target_dir().join("no-std-check")),
    )?;
    run(
        "rustfmt of the no_std program",
        cargo().current_dir(&check).args(["fmt", "--check"]),
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
    let path = target_dir().join("filter-example.dwr");
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
