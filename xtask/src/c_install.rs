//! `cargo xtask c --install PREFIX`: the C library installed as C projects
//! adopt one, and in `cargo xtask c`, the installed library proved as a C
//! project would meet it.
//!
//! - Installed: `include/dendro_wire.h` and `dendro_wire_cffi.h`,
//!   `lib/libdendro_wire.a` (debug information stripped),
//!   `lib/libdendro_wire.so.VERSION` with the links `.so.ABI` (its SONAME)
//!   and `.so`, `lib/pkgconfig/dendro-wire.pc`, and
//!   `lib/cmake/dendro-wire/dendro-wire-config.cmake`.
//! - Proved: the SONAME is the ABI version's and libc is named as needed;
//!   the shared library defines `dw_*` and nothing else; the archive holds
//!   no debug information; `examples/installed.c`, which includes the
//!   header twice, built through `pkg-config --cflags --libs dendro-wire`
//!   as C99 and as C++11 with `-pedantic -Werror` and run, and linked
//!   statically too, and built as a CMake project through
//!   `find_package(dendro-wire)`; the C example README and the book show, built from
//!   each page through pkg-config, run on the sample and on cuts of it; and
//!   the cffi header read by cffi, the library through it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::c_build::Libraries;
use crate::json::json_string;
use crate::steps::{self, copy, root, target_dir};

/// The library's name as installed: `-ldendro_wire`.
const NAME: &str = "dendro_wire";

/// The package's version and the ABI's, as the ffi crate declares them.
struct Versions {
    package: String,
    abi: String,
}

fn versions() -> Result<Versions, String> {
    let source = std::fs::read_to_string(root().join("dendro-wire-core/ffi/src/version.rs"))
        .map_err(|e| format!("dendro-wire-core/ffi/src/version.rs: {e}"))?;
    let constant = |name: &str| {
        source
            .lines()
            .find_map(|l| l.strip_prefix(&format!("pub const {name}: u32 = ")))
            .and_then(|v| v.strip_suffix(';'))
            .map(str::to_string)
            .ok_or(format!("version.rs declares no {name}"))
    };
    Ok(Versions {
        package: format!(
            "{}.{}.{}",
            constant("DW_VERSION_MAJOR")?,
            constant("DW_VERSION_MINOR")?,
            constant("DW_VERSION_PATCH")?
        ),
        abi: constant("DW_ABI_VERSION")?,
    })
}

fn write(to: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(to, text).map_err(|e| format!("{}: {e}", to.display()))
}

/// A link at `at` to `target` (a name in the same directory), made anew.
fn link(target: &str, at: &Path) -> Result<(), String> {
    let _ = std::fs::remove_file(at);
    std::os::unix::fs::symlink(target, at).map_err(|e| format!("{}: {e}", at.display()))
}

/// Install headers, both libraries, pkg-config and CMake files under
/// `prefix` (made absolute, as the files name it).
pub(crate) fn install(prefix: &Path, libs: &Libraries) -> Result<PathBuf, String> {
    let prefix = std::path::absolute(prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    let v = versions()?;
    let (include, lib) = (prefix.join("include"), prefix.join("lib"));
    for header in ["dendro_wire.h", "dendro_wire_cffi.h"] {
        copy(
            &root().join("dendro-wire-core/ffi/include").join(header),
            &include.join(header),
        )?;
    }
    copy(&libs.staticlib, &lib.join(format!("lib{NAME}.a")))?;
    let real = format!("lib{NAME}.so.{}", v.package);
    let soname = format!("lib{NAME}.so.{}", v.abi);
    copy(&libs.cdylib, &lib.join(&real))?;
    link(&real, &lib.join(&soname))?;
    link(&soname, &lib.join(format!("lib{NAME}.so")))?;
    write(
        &lib.join("pkgconfig/dendro-wire.pc"),
        &format!(
            "prefix={prefix}\n\
             includedir=${{prefix}}/include\n\
             libdir=${{prefix}}/lib\n\
             \n\
             Name: dendro-wire\n\
             Description: the dendro replication wire protocol (v1) from C: no allocation, \
             every byte the caller's\n\
             URL: https://github.com/dendro-wire/dendro-wire\n\
             Version: {version}\n\
             Cflags: -I${{includedir}}\n\
             Libs: -L${{libdir}} -l{NAME}\n",
            prefix = prefix.display(),
            version = v.package,
        ),
    )?;
    write(
        &lib.join("cmake/dendro-wire/dendro-wire-config.cmake"),
        &format!(
            "# find_package(dendro-wire) gives the targets dendro-wire::shared (the\n\
             # shared library), dendro-wire::static (the archive, which needs nothing\n\
             # else) and dendro-wire::dendro-wire (the shared one).\n\
             get_filename_component(_dw_prefix \"${{CMAKE_CURRENT_LIST_DIR}}/../../..\" ABSOLUTE)\n\
             set(dendro-wire_VERSION {version})\n\
             if(NOT TARGET dendro-wire::shared)\n\
             \x20 add_library(dendro-wire::shared SHARED IMPORTED)\n\
             \x20 set_target_properties(dendro-wire::shared PROPERTIES\n\
             \x20   IMPORTED_LOCATION \"${{_dw_prefix}}/lib/{soname}\"\n\
             \x20   IMPORTED_SONAME \"{soname}\"\n\
             \x20   INTERFACE_INCLUDE_DIRECTORIES \"${{_dw_prefix}}/include\")\n\
             endif()\n\
             if(NOT TARGET dendro-wire::static)\n\
             \x20 add_library(dendro-wire::static STATIC IMPORTED)\n\
             \x20 set_target_properties(dendro-wire::static PROPERTIES\n\
             \x20   IMPORTED_LOCATION \"${{_dw_prefix}}/lib/lib{NAME}.a\"\n\
             \x20   INTERFACE_INCLUDE_DIRECTORIES \"${{_dw_prefix}}/include\")\n\
             endif()\n\
             if(NOT TARGET dendro-wire::dendro-wire)\n\
             \x20 add_library(dendro-wire::dendro-wire INTERFACE IMPORTED)\n\
             \x20 set_target_properties(dendro-wire::dendro-wire PROPERTIES\n\
             \x20   INTERFACE_LINK_LIBRARIES dendro-wire::shared)\n\
             endif()\n\
             unset(_dw_prefix)\n",
            version = v.package,
        ),
    )?;
    // find_package(dendro-wire 0.1): a version asked for is met by this one
    // if it is no newer and of the same major version, and (before 1.0,
    // where a minor version may break) of the same minor version.
    let (major, minor) = major_minor(&v.package)?;
    write(
        &lib.join("cmake/dendro-wire/dendro-wire-config-version.cmake"),
        &format!(
            "set(PACKAGE_VERSION \"{version}\")\n\
             if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION\n\
             \x20  OR NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL \"{major}\"\n\
             \x20  OR (\"{major}\" STREQUAL \"0\" AND NOT PACKAGE_FIND_VERSION_MINOR STREQUAL \"{minor}\"))\n\
             \x20 set(PACKAGE_VERSION_COMPATIBLE FALSE)\n\
             else()\n\
             \x20 set(PACKAGE_VERSION_COMPATIBLE TRUE)\n\
             \x20 if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)\n\
             \x20   set(PACKAGE_VERSION_EXACT TRUE)\n\
             \x20 endif()\n\
             endif()\n",
            version = v.package,
        ),
    )?;
    eprintln!(
        "==> installed under {}: include/dendro_wire.h, lib/lib{NAME}.a, lib/{real} \
         (SONAME {soname}), lib/pkgconfig/dendro-wire.pc, \
         lib/cmake/dendro-wire/dendro-wire-config.cmake and -config-version.cmake",
        prefix.display()
    );
    Ok(prefix)
}

/// The major and minor parts of a version `M.m.p`.
fn major_minor(version: &str) -> Result<(&str, &str), String> {
    let mut parts = version.split('.');
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => Ok((major, minor)),
        _ => Err(format!("the package version {version:?} is not M.m.p")),
    }
}

/// What a command printed, or why it failed.
fn out(step: &str, cmd: &mut Command) -> Result<String, String> {
    steps::output(step, cmd).map(|o| String::from_utf8_lossy(&o).into_owned())
}

/// `pkg-config` over the installed `.pc` file.
fn pkg_config(prefix: &Path, args: &[&str]) -> Result<Vec<String>, String> {
    let printed = out(
        "pkg-config dendro-wire",
        Command::new("pkg-config")
            .args(args)
            .arg("dendro-wire")
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
    )?;
    Ok(printed.split_whitespace().map(str::to_string).collect())
}

/// The installed library as a C project meets it, each point a failure if
/// it does not hold.
pub(crate) fn prove(prefix: &Path, tool: &Path) -> Result<(), String> {
    let v = versions()?;
    let lib = prefix.join("lib");
    let shared = lib.join(format!("lib{NAME}.so.{}", v.abi));
    let dynamic = out("readelf -d", Command::new("readelf").arg("-d").arg(&shared))?;
    let soname = format!("Library soname: [lib{NAME}.so.{}]", v.abi);
    if !dynamic.contains(&soname) || !dynamic.contains("Shared library: [libc.so.6]") {
        return Err(format!(
            "{}: readelf -d shows no `{soname}` or no libc needed:\n{dynamic}",
            shared.display()
        ));
    }
    let exported = out(
        "nm -D --defined-only",
        Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(&shared),
    )?;
    let foreign: Vec<&str> = exported
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|name| !name.starts_with("dw_"))
        .collect();
    if !foreign.is_empty() {
        return Err(format!(
            "{} exports more than dw_*: {foreign:?}",
            shared.display()
        ));
    }
    let archive = lib.join(format!("lib{NAME}.a"));
    let sections = out(
        "readelf -S",
        Command::new("readelf").args(["-S", "--wide"]).arg(&archive),
    )?;
    if sections.contains(".debug_") {
        return Err(format!("{} holds debug information", archive.display()));
    }

    let dir = target_dir().join("c");
    let installed = root().join("dendro-wire-core/ffi/examples/installed.c");
    let cflags = pkg_config(prefix, &["--cflags"])?;
    let libs = pkg_config(prefix, &["--libs"])?;
    let runs = |exe: &Path| {
        out(
            &format!("{} (linked through pkg-config)", exe.display()),
            Command::new(exe)
                .arg(root().join("testdata/sample.dwr"))
                .env("LD_LIBRARY_PATH", &lib),
        )
    };
    for (compiler, std, name) in [
        ("gcc", "-std=c99", "installed-c99"),
        ("g++", "-std=c++11", "installed-cxx11"),
    ] {
        let exe = dir.join(name);
        let mut cmd = Command::new(compiler);
        if compiler == "g++" {
            cmd.args(["-x", "c++"]);
        }
        steps::run(
            &format!("build installed.c with {compiler} {std} -pedantic through pkg-config"),
            cmd.args([std, "-pedantic", "-Wall", "-Wextra", "-Werror"])
                .args(&cflags)
                .arg(&installed)
                .args(["-x", "none"])
                .args(&libs)
                .arg("-o")
                .arg(&exe),
        )?;
        let said = runs(&exe)?;
        if !said.contains(&format!("dendro-wire {} (ABI {})", v.package, v.abi)) {
            return Err(format!("{name} said: {said}"));
        }
    }
    // The same program on the archive alone: nothing else to link.
    let exe = dir.join("installed-static");
    steps::run(
        "link installed.c with the installed archive",
        Command::new("gcc")
            .args(["-std=c99", "-Wall", "-Werror"])
            .args(&cflags)
            .arg(&installed)
            .arg(&archive)
            .arg("-o")
            .arg(&exe),
    )?;
    runs(&exe)?;
    // A CMake project: find_package, then its imported target.
    let build = dir.join("cmake-build");
    let _ = std::fs::remove_dir_all(&build);
    steps::run(
        "configure examples/cmake with find_package(dendro-wire)",
        Command::new("cmake")
            .arg("-S")
            .arg(root().join("dendro-wire-core/ffi/examples/cmake"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
            .stdout(std::process::Stdio::null()),
    )?;
    steps::run(
        "build examples/cmake",
        Command::new("cmake")
            .arg("--build")
            .arg(&build)
            .stdout(std::process::Stdio::null()),
    )?;
    for program in ["installed", "installed_static"] {
        let said = runs(&build.join(program))?;
        if !said.contains(&format!("dendro-wire {}", v.package)) {
            return Err(format!("the CMake build's {program} said: {said}"));
        }
    }
    // A version the installed library does not meet is refused by
    // find_package, not linked.
    let (major, minor) = major_minor(&v.package)?;
    let newer = format!("{major}.{}", minor.parse::<u32>().unwrap_or(0) + 1);
    let _ = std::fs::remove_dir_all(dir.join("cmake-newer"));
    let refused = Command::new("cmake")
        .arg("-S")
        .arg(root().join("dendro-wire-core/ffi/examples/cmake"))
        .arg("-B")
        .arg(dir.join("cmake-newer"))
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
        .arg(format!("-DDW_ASK_VERSION={newer}"))
        .output()
        .map_err(|e| format!("cmake: {e}"))?;
    let said = String::from_utf8_lossy(&refused.stderr);
    if refused.status.success() || !said.contains("version") {
        return Err(format!(
            "find_package(dendro-wire {newer}) was not refused by the installed {}: {said}",
            v.package
        ));
    }
    eprintln!(
        "==> CMake: find_package(dendro-wire {major}.{minor}) links dendro-wire::shared and \
         dendro-wire::static; {newer} is refused"
    );
    // README and the book's C chapter each show the install block and the
    // example; each is run as that page holds it.
    for doc in DOCS_WITH_C {
        readme_install(prefix, doc)?;
        readme_example(prefix, tool, &cflags, &libs, doc)?;
    }
    Ok(())
}

/// The pages that show C a user copies: each one's `### Install` block and
/// its ```c block after `## From C` (or the chapter's `# From C`) are run.
const DOCS_WITH_C: [&str; 2] = ["README.md", "book/src/c.md"];

/// A page's text, by its path from the repository's root.
fn page(doc: &str) -> Result<String, String> {
    std::fs::read_to_string(root().join(doc)).map_err(|e| format!("{doc}: {e}"))
}

/// README's install block, run as written from a fresh shell: `sh -e`
/// with a `HOME` of its own whose `.local` is the prefix installed (so its
/// first line, the install, is run by the step that installed it, and
/// skipped here), no `PKG_CONFIG_PATH` or `LD_LIBRARY_PATH`, in a folder
/// holding what it names at the root: the installed example
/// (`dendro-wire-core/ffi/examples/installed.c`) and the sample.
fn readme_install(prefix: &Path, doc: &str) -> Result<(), String> {
    let text = page(doc)?;
    let block = text
        .split_once("\n### Install\n")
        .and_then(|(_, rest)| rest.split_once("```sh\n"))
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(block, _)| block)
        .ok_or(format!("{doc}'s `### Install` has no ```sh block"))?;
    let (install, rest) = block
        .split_once('\n')
        .filter(|(first, _)| first.starts_with("cargo xtask c --install \"$HOME/.local\""))
        .ok_or(format!(
            "{doc}'s install block does not start by installing under $HOME/.local"
        ))?;
    let home = target_dir().join("c/readme-home");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    std::os::unix::fs::symlink(prefix, home.join(".local"))
        .map_err(|e| format!("{}: {e}", home.display()))?;
    // What the rest of the block names at the root, the installed example
    // and the sample, in a folder of its own: nothing of the user's is
    // written.
    let at = home.join("root");
    let example = "dendro-wire-core/ffi/examples/installed.c";
    copy(&root().join(example), &at.join(example))?;
    copy(
        &root().join("testdata/sample.dwr"),
        &at.join("testdata/sample.dwr"),
    )?;
    let ran = Command::new("sh")
        .args(["-e", "-c", rest])
        .current_dir(&at)
        .env("HOME", &home)
        .env_remove("PKG_CONFIG_PATH")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .map_err(|e| format!("sh: {e}"))?;
    let said = String::from_utf8_lossy(&ran.stdout);
    if !ran.status.success() || !said.contains("dendro-wire ") {
        return Err(format!(
            "{doc}'s install block, after `{install}`: exit {:?}: {}{}",
            ran.status.code(),
            said,
            String::from_utf8_lossy(&ran.stderr)
        ));
    }
    eprintln!(
        "==> {doc}'s install block, run as written from a fresh shell: pkg-config through \
         PKG_CONFIG_PATH, the library found by its rpath"
    );
    Ok(())
}

/// A page's C example, taken from it as it stands: the first ```c block
/// after its "From C" heading.
fn readme_block(doc: &str) -> Result<String, String> {
    let text = page(doc)?;
    let from_c = text
        .split_once("## From C\n")
        .or_else(|| text.split_once("# From C\n"))
        .map(|(_, rest)| rest)
        .ok_or(format!("{doc} has no section `From C`"))?;
    let block = from_c
        .split_once("```c\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(block, _)| block.to_string())
        .ok_or(format!("{doc}'s `From C` has no ```c block"))?;
    Ok(block)
}

/// Build the README's example through pkg-config, with every warning an
/// error and both sanitizers, and run it: the sample's rows, and a cut
/// inside a frame and inside the preamble each said as the tool says it.
fn readme_example(
    prefix: &Path,
    tool: &Path,
    cflags: &[String],
    libs: &[String],
    doc: &str,
) -> Result<(), String> {
    let dir = target_dir().join("c");
    let example = dir.join("readme_example.c");
    write(&example, &readme_block(doc)?)?;
    let exe = dir.join("readme");
    steps::run(
        &format!("build {doc}'s C example through pkg-config (ASan, UBSan, -Werror)"),
        Command::new("gcc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
            .args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
            .args(cflags)
            .arg(&example)
            .arg(root().join("dendro-wire-core/ffi/examples/readme_main.c"))
            .args(libs)
            .arg("-o")
            .arg(&exe),
    )?;
    let sample = std::fs::read(root().join("testdata/sample.dwr"))
        .map_err(|e| format!("testdata/sample.dwr: {e}"))?;
    let rows = sample_rows(tool)?;
    let cases: [(&str, &[u8]); 3] = [
        ("whole", &sample),
        ("cut inside its last frame", &sample[..sample.len() - 3]),
        ("cut inside its preamble", &sample[..5]),
    ];
    for (what, bytes) in cases {
        let path = dir.join(format!("readme-{}.dwr", what.replace(' ', "-")));
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let ran = Command::new(&exe)
            .arg(&path)
            .env("LD_LIBRARY_PATH", prefix.join("lib"))
            .output()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        let checked = Command::new(tool)
            .args(["check", "--json"])
            .arg(&path)
            .output()
            .map_err(|e| format!("dendro-wire check: {e}"))?;
        let stderr = String::from_utf8_lossy(&ran.stderr);
        let stdout = String::from_utf8_lossy(&ran.stdout);
        if stderr.contains("Sanitizer") || stderr.contains("runtime error") {
            return Err(format!("{doc}'s example, {what}: {stderr}"));
        }
        // The whole sample's rows (and, cut in its last frame, those of the
        // frames before it), one line each.
        let printed = stdout.lines().count();
        let said = stderr.trim_end();
        let json = String::from_utf8_lossy(&checked.stdout);
        let ok = match what {
            "whole" => ran.status.success() && printed == rows && said.is_empty(),
            _ => {
                !ran.status.success()
                    && !said.is_empty()
                    && json.contains(&json_string(said)[1..])
                    && said.starts_with("the stream ends inside")
            }
        };
        if !ok {
            return Err(format!(
                "{doc}'s C example, on the sample {what}: exit {:?}, {printed} row line(s) \
                 (the sample has {rows}), said {said:?}; check --json says {json}",
                ran.status.code()
            ));
        }
    }
    eprintln!(
        "==> {doc}'s C example: the sample's {rows} rows, and cuts inside a frame and the \
         preamble in the tool's words"
    );
    Ok(())
}

/// The rows in the sample's `Rows` frames, by the tool's JSON form.
fn sample_rows(tool: &Path) -> Result<usize, String> {
    let dumped = out(
        "dendro-wire dump --json",
        Command::new(tool)
            .args(["dump", "--json"])
            .arg(root().join("testdata/sample.dwr")),
    )?;
    Ok(dumped.matches("\"wall_offset\":").count())
}

/// The installed shared library through cffi in ABI mode, declared by
/// `dendro_wire_cffi.h` as installed (`examples/cffi_read.py`): on the
/// sample, whole and cut inside its last frame, the frames it decodes and
/// the sentence it ends with are `check --json`'s.
pub(crate) fn cffi(prefix: &Path, tool: &Path, python: &Path) -> Result<(), String> {
    let v = versions()?;
    let sample = std::fs::read(root().join("testdata/sample.dwr"))
        .map_err(|e| format!("testdata/sample.dwr: {e}"))?;
    let cut = target_dir().join("c/cffi-cut.dwr");
    write_bytes(&cut, &sample[..sample.len() - 3])?;
    for path in [root().join("testdata/sample.dwr"), cut] {
        let said = out(
            "cffi_read.py (cffi, ABI mode, over the installed library)",
            Command::new(python)
                .arg(root().join("dendro-wire-core/ffi/examples/cffi_read.py"))
                .arg(prefix.join("include/dendro_wire_cffi.h"))
                .arg(prefix.join(format!("lib/lib{NAME}.so.{}", v.abi)))
                .arg(&path),
        )?;
        let checked = Command::new(tool)
            .args(["check", "--json"])
            .arg(&path)
            .output()
            .map_err(|e| format!("dendro-wire check: {e}"))?;
        let checked = String::from_utf8_lossy(&checked.stdout);
        let (frames, end) = said.trim_end().split_once(' ').unwrap_or_default();
        let agrees = match end {
            "clean" => checked.contains(&format!("\"frames\":{frames},")),
            sentence => checked.contains(&json_string(sentence)[1..]),
        };
        if !agrees {
            return Err(format!(
                "through cffi, {} gave {said:?}; check --json said {checked}",
                path.display()
            ));
        }
    }
    eprintln!("==> cffi reads dendro_wire_cffi.h as installed, and agrees with check");
    Ok(())
}

fn write_bytes(to: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(to, bytes).map_err(|e| format!("{}: {e}", to.display()))
}
