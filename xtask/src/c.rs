//! `cargo xtask c`: the C API (`dendro-wire-core/ffi`) proved from C.
//!
//! - The header, `dendro-wire-core/ffi/include/dendro_wire.h`, is generated
//!   with cbindgen and compared with the committed one (`--update-header`
//!   writes it instead).
//! - The host libraries are built with the `ffi` profile (a panic aborts),
//!   and `examples/dump.c` is built against the staticlib with
//!   `-Wall -Wextra -Werror -fsanitize=address,undefined` to
//!   `target/c/dump`, then run beside `dendro-wire dump --json` over every
//!   stream under `testdata/` and a generated and damaged set
//!   (`examples/streams.rs`): standard output byte for byte, the exit
//!   status, and the error's sentence, which must also be the one
//!   `dendro-wire check --json` refuses the stream with.
//! - `examples/sizing.c`, built the same way and run: the header's
//!   compile-time source sizing (`DW_SOURCE_STORAGE`,
//!   `DW_SOURCE_FRAME_BUFFER`) equal to `dw_source_sizing` over a sweep of
//!   declarations and budgets.
//! - `examples/bench.c` is built too (optimized, no sanitizers), for
//!   `cargo xtask bench-report`.
//! - `examples/decode.py` (ctypes over the cdylib) prints the sample's
//!   frames, compared with the tool's.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use crate::c_build::{
    build_bench, build_example, generate_streams, host_libraries, Libraries, FFI,
};
use crate::json::{json_number, json_string};
use crate::steps::{self, root, target_dir};
use crate::{c_install, setup};

const HEADER: &str = "dendro-wire-core/ffi/include/dendro_wire.h";
/// The same declarations as `cffi.cdef` reads them: no preprocessor
/// conditionals, no includes, no function-like macros.
const CFFI_HEADER: &str = "dendro-wire-core/ffi/include/dendro_wire_cffi.h";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let started = Instant::now();
    let update = match args {
        [] => false,
        [flag] if flag == "--update-header" => true,
        [flag, prefix] if flag == "--install" => {
            setup::ensure("c --install", &[setup::C])?;
            header(false)?;
            c_install::install(Path::new(prefix), &host_libraries()?)?;
            return Ok(());
        }
        _ => {
            return Err(format!(
                "c takes --update-header or --install PREFIX, not {args:?}"
            ))
        }
    };
    setup::ensure("c", &[setup::C])?;
    header(update)?;
    let libs = host_libraries()?;
    let tool = steps::release_tool()?;
    let prefix = c_install::install(&target_dir().join("c/prefix"), &libs)?;
    c_install::prove(&prefix, &tool)?;
    c_install::cffi(&prefix, &tool, &crate::python::environment()?)?;
    let dump = build_example("dump", &libs)?;
    let check = build_example("check", &libs)?;
    let sizing = build_example("sizing", &libs)?;
    steps::run(
        "sizing.c: the header's compile-time source sizing is dw_source_sizing's",
        &mut Command::new(&sizing),
    )?;
    build_bench(&libs)?;
    let compared = compare_dumps(&tool, &dump, &check)?;
    python(&tool, &libs)?;
    eprintln!(
        "==> c: headers {}; installed and linked through pkg-config; dump.c agrees with \
         dendro-wire on {} streams ({} refused, each as check --json refuses it; {} more \
         refused earlier by the subscriber's rules), check.c with check --json on all of \
         them; sizing.c's macros dw_source_sizing's; 0 sanitizer reports; decode.py agrees; in {:.1} s",
        if update { "written" } else { "current" },
        compared.streams,
        compared.refusals,
        compared.refused_earlier,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Generate both headers and compare each with the committed one, or
/// write them.
fn header(update: bool) -> Result<(), String> {
    eprintln!("==> the C headers from {FFI} (cbindgen)");
    let dir = root().join(FFI);
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml"))
        .map_err(|e| format!("{FFI}/cbindgen.toml: {e}"))?;
    let mut cffi = config.clone();
    cffi.header = Some(
        "/* dendro_wire.h's declarations as cffi.cdef() reads them (ABI or API mode); \
         C programs include dendro_wire.h. */"
            .into(),
    );
    cffi.trailer = None;
    cffi.after_includes = None;
    cffi.sys_includes = Vec::new();
    cffi.cpp_compat = false;
    cffi.documentation = false;
    let c_header = preprocessor_comments(&generate(&dir, config)?);
    let cffi_header = pre_c23(&generate(&dir, cffi)?);
    for (path, generated) in [(HEADER, c_header), (CFFI_HEADER, cffi_header)] {
        compare_or_write(path, generated.as_bytes(), update)?;
    }
    Ok(())
}

fn generate(dir: &Path, config: cbindgen::Config) -> Result<String, String> {
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .map_err(|e| format!("cbindgen: {e}"))?;
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    String::from_utf8(generated).map_err(|e| format!("cbindgen wrote no UTF-8: {e}"))
}

/// cbindgen ends its conditionals with `// ...`: a `/* */` comment, so a
/// preprocessor line says nothing a strict C89-minded tool trips on.
fn preprocessor_comments(header: &str) -> String {
    let mut out = String::with_capacity(header.len());
    for line in header.lines() {
        match line.split_once("//") {
            Some((code, note)) if line.starts_with('#') => {
                out.push_str(&format!("{}/* {} */", code, note.trim()));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// The header as a compiler before C23 reads it: cbindgen's
/// `#if __STDC_VERSION__ >= 202311L` blocks (an enum's fixed type) taken
/// by their `#else`, so only declarations and `#define`s of numbers are
/// left, which is all `cffi.cdef` reads.
fn pre_c23(header: &str) -> String {
    let mut out = String::with_capacity(header.len());
    // Inside a C23 block: whether its lines are kept (after its #else).
    let mut inside: Option<bool> = None;
    for line in header.lines() {
        match (line.trim_start(), inside) {
            (l, None) if l.starts_with("#if __STDC_VERSION__ >= 202311L") => inside = Some(false),
            ("#else", Some(_)) => inside = Some(true),
            (l, Some(_)) if l.starts_with("#endif") => inside = None,
            (_, Some(false)) => {}
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// Compare a generated file with the committed one, or write it.
fn compare_or_write(file: &str, generated: &[u8], update: bool) -> Result<(), String> {
    let path = root().join(file);
    if update {
        return std::fs::write(&path, generated).map_err(|e| format!("{file}: {e}"));
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    if committed != generated {
        let name = Path::new(file).file_name().unwrap_or_default();
        let fresh = target_dir().join("c").join(name);
        std::fs::create_dir_all(target_dir().join("c")).map_err(|e| e.to_string())?;
        std::fs::write(&fresh, generated).map_err(|e| e.to_string())?;
        return Err(format!(
            "{file} is stale: the crate now generates {} (diff them, then run \
             `cargo xtask c --update-header` and commit it)",
            fresh.display()
        ));
    }
    Ok(())
}

/// Run a program on a stream, its output captured.
fn capture(cmd: &mut Command) -> Result<Output, String> {
    cmd.stdin(Stdio::null())
        .env("ASAN_OPTIONS", "detect_leaks=1")
        .env("UBSAN_OPTIONS", "print_stacktrace=1")
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))
}

/// The sentence a program said on stderr after its name.
fn sentence(stderr: &[u8], program: &str) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    text.strip_prefix(&format!("{program}: "))
        .map(|s| s.trim_end_matches('\n').to_string())
}

/// What the comparison covered.
struct Compared {
    streams: usize,
    /// Streams refused, each in the same sentence by `check --json`.
    refusals: usize,
    /// Streams `check` refused at an earlier frame, by a rule of the
    /// subscriber's that `dump` does not apply.
    refused_earlier: usize,
}

/// `dump.c` beside the tool over every stream: output, status, sentence;
/// and `check.c` beside `check --json`: the same line.
fn compare_dumps(tool: &Path, dump: &Path, checker: &Path) -> Result<Compared, String> {
    let generated = target_dir().join("c/streams");
    let _ = std::fs::remove_dir_all(&generated);
    generate_streams(&generated)?;
    let mut streams = Vec::new();
    for dir in [root().join("testdata"), generated] {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.extension().is_some_and(|x| x == "dwr") {
                streams.push(path);
            }
        }
    }
    streams.sort();
    eprintln!(
        "==> dump.c beside dendro-wire dump --json over {} streams",
        streams.len()
    );
    let mut differ = Vec::new();
    let (mut refusals, mut refused_earlier) = (0, 0);
    for stream in &streams {
        let name = stream
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let ours = capture(Command::new(dump).arg(stream))?;
        let theirs = capture(Command::new(tool).args(["dump", "--json"]).arg(stream))?;
        let reported = String::from_utf8_lossy(&ours.stderr);
        if reported.contains("Sanitizer") || reported.contains("runtime error") {
            return Err(format!(
                "{name}: a sanitizer report from dump.c:\n{reported}"
            ));
        }
        if ours.stdout != theirs.stdout {
            differ.push(format!("{name}: standard output differs"));
        }
        let (checked_c, checked) = (
            capture(Command::new(checker).arg(stream))?,
            capture(Command::new(tool).args(["check", "--json"]).arg(stream))?,
        );
        let reported = String::from_utf8_lossy(&checked_c.stderr);
        if reported.contains("Sanitizer") || reported.contains("runtime error") {
            return Err(format!(
                "{name}: a sanitizer report from check.c:\n{reported}"
            ));
        }
        if checked_c.stdout != checked.stdout
            || checked_c.status.success() != checked.status.success()
        {
            differ.push(format!(
                "{name}: check.c says {:?}, check --json {:?}",
                String::from_utf8_lossy(&checked_c.stdout),
                String::from_utf8_lossy(&checked.stdout)
            ));
        }
        if ours.status.code() != theirs.status.code() {
            differ.push(format!(
                "{name}: dump.c exits {:?}, the tool {:?}",
                ours.status.code(),
                theirs.status.code()
            ));
        }
        let (said, told) = (
            sentence(&ours.stderr, "dump"),
            sentence(&theirs.stderr, "dendro-wire"),
        );
        if said != told {
            differ.push(format!("{name}: dump.c says {said:?}, the tool {told:?}"));
        }
        if let Some(said) = said.filter(|_| !theirs.status.success()) {
            // The tool's check refuses the stream with the same sentence,
            // unless the subscriber's rules (which dump does not apply)
            // refused an earlier frame.
            let check = capture(Command::new(tool).args(["check", "--json"]).arg(stream))?;
            let json = String::from_utf8_lossy(&check.stdout);
            let checked_at = json_number(&json, "frame");
            let dumped_at = match said.strip_prefix("frame ") {
                Some(rest) => rest.split(' ').next().and_then(|n| n.parse().ok()),
                None => Some(0),
            };
            if checked_at.is_some() && checked_at < dumped_at {
                refused_earlier += 1;
            } else if !json.contains(&format!("\"error\":{}", json_string(&said))) {
                differ.push(format!(
                    "{name}: check --json says {json:?}, dump.c {said:?}"
                ));
            } else {
                refusals += 1;
            }
        }
    }
    // Standard input, as `dump -` reads it.
    let sample = std::fs::File::open(root().join("testdata/sample.dwr"))
        .map_err(|e| format!("testdata/sample.dwr: {e}"))?;
    let piped = Command::new(dump)
        .arg("-")
        .stdin(sample)
        .output()
        .map_err(|e| e.to_string())?;
    let expected = capture(
        Command::new(tool)
            .args(["dump", "--json"])
            .arg(root().join("testdata/sample.dwr")),
    )?;
    if piped.stdout != expected.stdout || !piped.status.success() {
        differ.push("testdata/sample.dwr on standard input: dump - differs".into());
    }
    if !differ.is_empty() {
        return Err(format!(
            "dump.c and dendro-wire dump --json differ on {} point(s):\n  {}",
            differ.len(),
            differ.join("\n  ")
        ));
    }
    Ok(Compared {
        streams: streams.len(),
        refusals,
        refused_earlier,
    })
}

/// `examples/decode.py`: ctypes over the cdylib, the sample's frames.
fn python(tool: &Path, libs: &Libraries) -> Result<(), String> {
    let sample = root().join("testdata/sample.dwr");
    let printed = steps::output(
        "decode.py (ctypes over the cdylib)",
        Command::new("python3")
            .arg(root().join(FFI).join("examples/decode.py"))
            .arg(&libs.cdylib)
            .arg(&sample),
    )?;
    let expected = steps::output(
        "dendro-wire dump --json",
        Command::new(tool).args(["dump", "--json"]).arg(&sample),
    )?;
    if printed != expected {
        return Err(format!(
            "decode.py printed:\n{}\nand dendro-wire dump --json:\n{}",
            String::from_utf8_lossy(&printed),
            String::from_utf8_lossy(&expected)
        ));
    }
    eprintln!("==> decode.py (Python ctypes over the cdylib) prints the sample as the tool does");
    Ok(())
}
