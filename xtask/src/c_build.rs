//! The C library and the C programs over it, built: dendro-wire-ffi's
//! staticlib and cdylib with the `ffi` profile (a panic aborts, and no
//! panic path may be linked), and `examples/*.c` with every warning an
//! error. `cargo xtask c`, the C firmware agent and the bench report use
//! them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::steps::{self, cargo, root, target_dir};

/// Where the ffi crate is, from the workspace root.
pub(crate) const FFI: &str = "dendro-wire-core/ffi";

/// The compiler flags every C program here is held to.
const WARNINGS: &[&str] = &["-std=c11", "-Wall", "-Wextra", "-Werror"];
/// The host's staticlib and cdylib, built with the `ffi` profile.
pub(crate) struct Libraries {
    pub(crate) staticlib: PathBuf,
    pub(crate) cdylib: PathBuf,
}

/// The profile a device's staticlib is built with: `ffi`, the boundary
/// built for size (the workspace's Cargo.toml says why).
pub(crate) const DEVICE_PROFILE: &str = "ffi-device";

/// Build dendro-wire-ffi for a device's `target` with [`DEVICE_PROFILE`]
/// (a panic aborts); the staticlib is `TARGET/ffi-device/` under the
/// target directory.
pub(crate) fn build_device_library(target: &str) -> Result<(), String> {
    steps::run(
        &format!(
            "build dendro-wire-ffi for {target} (the {DEVICE_PROFILE} profile: a panic aborts, \
             the boundary built for size)"
        ),
        cargo().args([
            "build",
            "--quiet",
            "-p",
            "dendro-wire-ffi",
            "--profile",
            DEVICE_PROFILE,
            "--target",
            target,
        ]),
    )
}

/// The host's libraries, as the `ffi` profile builds them: the two C
/// kinds alone (with the Rust one beside them, the archive would hold
/// every crate's code unoptimized as a whole), the archive's debug
/// information stripped.
pub(crate) fn host_libraries() -> Result<Libraries, String> {
    steps::run(
        "build dendro-wire-ffi for the host (the ffi profile: a panic aborts)",
        cargo().args([
            "rustc",
            "--quiet",
            "-p",
            "dendro-wire-ffi",
            "--profile",
            "ffi",
            "--crate-type",
            "staticlib,cdylib",
        ]),
    )?;
    let dir = target_dir().join("ffi");
    let libs = Libraries {
        staticlib: dir.join("libdendro_wire_ffi.a"),
        cdylib: dir.join("libdendro_wire_ffi.so"),
    };
    steps::run(
        "strip the archive's debug information",
        Command::new("strip")
            .arg("--strip-debug")
            .arg(&libs.staticlib),
    )?;
    no_panic_path(&libs.cdylib, "nm")?;
    Ok(libs)
}

/// No function of a linked build reaches the panic handler: the linker
/// kept no `rust_begin_unwind`.
fn no_panic_path(binary: &Path, nm: &str) -> Result<(), String> {
    let symbols = steps::output(
        &format!("{nm} {}", binary.display()),
        Command::new(nm).arg(binary),
    )?;
    let symbols = String::from_utf8_lossy(&symbols);
    if let Some(line) = symbols.lines().find(|l| l.contains("rust_begin_unwind")) {
        return Err(format!(
            "{} can panic: its panic handler was linked ({line}); find the call that can panic \
             (cargo asm, or the linker's map) and make it checked",
            binary.display()
        ));
    }
    Ok(())
}

/// `examples/NAME.c`, with every warning an error and both sanitizers.
pub(crate) fn build_example(name: &str, libs: &Libraries) -> Result<PathBuf, String> {
    let source = root().join(FFI).join(format!("examples/{name}.c"));
    build_program(&source, name, libs, &[])
}

/// The C program `source` as `target/c/NAME`, over the staticlib, with
/// every warning an error and both sanitizers; `includes` searched for
/// headers after the library's.
pub(crate) fn build_program(
    source: &Path,
    name: &str,
    libs: &Libraries,
    includes: &[&Path],
) -> Result<PathBuf, String> {
    let out = target_dir().join("c");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let program = out.join(name);
    let file = source.file_name().unwrap_or_default().to_string_lossy();
    let mut cmd = Command::new("gcc");
    cmd.args(WARNINGS)
        .args(["-O1", "-g", "-fno-omit-frame-pointer"])
        .args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
        .arg("-I")
        .arg(root().join(FFI).join("include"));
    for dir in includes {
        cmd.arg("-I").arg(dir);
    }
    steps::run(
        &format!("build {file} (-Wall -Wextra -Werror -fsanitize=address,undefined)"),
        cmd.arg(source).arg(&libs.staticlib).arg("-o").arg(&program),
    )?;
    Ok(program)
}

/// The streams of dendro-wire-ffi's `streams` example in `dir`: generated
/// whole and then damaged, the same bytes for the same seeds.
pub(crate) fn generate_streams(dir: &Path) -> Result<(), String> {
    steps::run(
        "generate streams, whole and damaged (dendro-wire-ffi's streams example)",
        cargo()
            .args([
                "run",
                "--quiet",
                "-p",
                "dendro-wire-ffi",
                "--example",
                "streams",
                "--",
            ])
            .arg(dir),
    )
}

/// `examples/bench.c`, optimized as a C caller would build it, every
/// warning an error: `cargo xtask bench-report` runs it.
pub(crate) fn build_bench(libs: &Libraries) -> Result<PathBuf, String> {
    let out = target_dir().join("c");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let bench = out.join("bench");
    let ffi = root().join(FFI);
    steps::run(
        "build bench.c (-O2)",
        Command::new("gcc")
            .args(WARNINGS)
            .arg("-O2")
            .arg("-I")
            .arg(ffi.join("include"))
            .arg(ffi.join("examples/bench.c"))
            .arg(&libs.staticlib)
            .arg("-o")
            .arg(&bench),
    )?;
    Ok(bench)
}
