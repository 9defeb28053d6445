//! `cargo xtask firmware`: the core on microcontrollers.
//!
//! Builds the programs of `xtask/firmware` for three families and runs
//! each under QEMU with semihosting, on one board per target (`BOARDS`):
//!
//! - `agent` publishes two sources through a disconnect and a reconnect,
//!   writes connection N's stream to `target/firmware/<target>/connection-N.dwr`,
//!   is told how many gaps to cause, and prints what `dendro-wire check
//!   --json` must say about each stream; every figure is compared, the
//!   streams of every target must be byte for byte the Cortex-M3's, and
//!   dendro's own `Subscriber` applies them into archives (the `archive`
//!   test).
//! - `memcheck` holds the `memcpy`, `memmove` and `memset` the programs
//!   link (on the Arm cores the size-built ones of
//!   `xtask/firmware/src/mem.s`) to every byte they must write, over
//!   every alignment and overlap, and to the registers a callee keeps.
//! - `decoder` decodes the committed sample compiled in and prints its
//!   counts, compared with `dendro-wire check --json` on the same bytes.
//! - `plain` publishes one source declared without an index, its stream
//!   checked as the agent's.
//! - `device` is the two-source agent of issue 29 (an env source, a power
//!   source whose rails are index slots switched between readings, names
//!   of 6 to 20 bytes) on the blocking drain, its stream checked and byte
//!   for byte the Cortex-M3's on every target; its flash on the Cortex-M0
//!   is what the 14 KiB target is about.
//! - `async_device` is `device` drained by the async path, each drain
//!   raced against a timer that drops it when it wins, on a link that
//!   makes it wait: its stream must be `device`'s byte for byte, and like
//!   every program here it does not link with a panic path.
//! - `plain` and `device` built again with feature `measure` say the
//!   instructions `observe` takes per row on the Cortex-M3 (QEMU's
//!   `-icount`, read through SysTick), each held to its ceiling.
//! - `net-agent` (Cortex-M3 only) streams over TCP into a live `dendro-wire
//!   listen` (`net.rs`).
//! - `embassy_agent` (Cortex-M0 only) is built, not run, against
//!   embassy-net's `TcpSocket`: the pattern of sampling while the async
//!   drain waits, on the real types.
//!
//! Then it prints every program's footprint in one table (`footprint.rs`),
//! read from the ELF's section headers (flash, static RAM) and from the
//! program (peak stack), and fails if one is past its ceiling. Every firmware build
//! also proves it has no panic path: its panic handler cannot link.

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use crate::footprint::{self, Footprint};
use crate::qemu::{self, check, compare, Board, BOARDS};
use crate::setup;
use crate::steps::{self, cargo, fresh_dir, root, target_dir};

/// The gaps the agent is told to cause, some of two lost frames: enough to
/// fall on both of its connections.
const GAPS: u64 = 4;

/// The instructions `observe` may take per observed row on the Cortex-M3,
/// at opt-level z, over every interval (the first included): issue 29's
/// targets. `plain` (the book's sizing example: four streams of three-byte
/// names, rows of 2 bytes, then of 16) at most 120 for either length;
/// `device` (seven rows an interval on names of 6 to 20 bytes) at most
/// 150. Each figure is a SysTick count over the intervals, a tick being
/// 80 instructions, so exact to an instruction or two a row.
const OBSERVE_INSTRUCTIONS_LIMIT: [(&str, &str, f64); 3] = [
    ("plain", "observe_ticks_short", 120.0),
    ("plain", "observe_ticks_long", 120.0),
    ("device", "observe_ticks", 150.0),
];
/// The tests against dendro's archive side (`dendro-wire-std/tests/archive.rs`):
/// here over the firmware's streams, and in `ci` on their own.
pub(crate) const ARCHIVE_TESTS: &[&str] = &[
    "test",
    "-p",
    "dendro-wire-std",
    "--features",
    "archive",
    "--test",
    "archive",
];

pub(crate) fn run() -> Result<(), String> {
    let started = Instant::now();
    setup::ensure("firmware", &[setup::FIRMWARE])?;
    let tool = steps::release_tool()?;
    let source = root().join("xtask/firmware");
    let build = target_dir().join("firmware-build");
    steps::run(
        "rustfmt of the firmware",
        cargo().current_dir(&source).args(["fmt", "--check"]),
    )?;
    let out = target_dir().join("firmware");
    let mut table = Vec::new();
    for board in &BOARDS {
        let dir = out.join(board.target);
        fresh_dir(&dir)?;
        let programs = [
            "memcheck",
            "agent",
            "decoder",
            "plain",
            "device",
            "async_device",
        ];
        build_programs(&source, &build, board.target, &[], &programs, &dir)?;
        memcheck(board, &dir)?;
        table.push(agent(board, &dir, &tool)?);
        table.push(decoder(board, &dir, &tool)?);
        table.push(plain(board, &dir, &tool)?);
        table.push(device(board, &dir, &tool)?);
        table.push(async_device(board, &dir)?);
    }
    // The instructions `observe` takes, counted on the Cortex-M3 under
    // -icount (a build of its own: the count is not in the others).
    let dir = out.join("measure");
    fresh_dir(&dir)?;
    let measured = target_dir().join("firmware-build-measure");
    let features = ["--features", "measure"];
    let programs = ["plain", "device"];
    build_programs(
        &source,
        &measured,
        BOARDS[0].target,
        &features,
        &programs,
        &dir,
    )?;
    measure(&BOARDS[0], &dir, &programs)?;
    same_streams(&out)?;
    archive_test(&out.join(BOARDS[0].target))?;

    let dir = out.join("net");
    fresh_dir(&dir)?;
    build_programs(
        &source,
        &build,
        BOARDS[0].target,
        &["--features", "net"],
        &["net-agent"],
        &dir,
    )?;
    table.push(crate::net::run(&BOARDS[0], &dir, &tool)?);
    footprint::no_panic_path_of_the_core(&dir.join("net-agent.elf"))?;

    // Built, not run: no board QEMU models for the Cortex-M0 has a network
    // controller. It must build against embassy-net's real `TcpSocket`.
    let dir = out.join("embassy");
    fresh_dir(&dir)?;
    let m0 = &BOARDS[1];
    build_programs(
        &source,
        &build,
        m0.target,
        &["--features", "embassy"],
        &["embassy_agent"],
        &dir,
    )?;
    footprint::no_panic_path_of_the_core(&dir.join("embassy_agent.elf"))?;
    let mut f = footprint::sections(m0, "embassy_agent", &dir.join("embassy_agent.elf"))?;
    f.note = "the device's two sources on embassy-net's TcpSocket, drained by \
              io::asynch::send_due raced against the tick; built, not run (no stack figure)"
        .into();
    table.push(f);

    footprint::print(&table);
    footprint::within_ceilings(&table)?;
    footprint::page::rust_programs(&table)?;
    eprintln!(
        "==> firmware: every program ran and checked on {} targets, in {:.1} s",
        BOARDS.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Build `programs` for `target` (release) and copy each to `dir` as
/// `<program>.elf`. A panic path anywhere in one fails this link.
fn build_programs(
    source: &Path,
    build: &Path,
    target: &str,
    features: &[&str],
    programs: &[&str],
    dir: &Path,
) -> Result<(), String> {
    let bins: Vec<&str> = programs.iter().flat_map(|p| ["--bin", p]).collect();
    steps::run(
        &format!("build {} ({target}, release)", programs.join(", ")),
        cargo()
            .current_dir(source)
            .args([
                "build",
                "--release",
                "--locked",
                "--quiet",
                "--target",
                target,
            ])
            .args(features)
            .args(&bins)
            .env("CARGO_TARGET_DIR", build),
    )
    .map_err(|e| {
        format!(
            "{e}\n  (an undefined `a_panic_path_survives_...` means a panic path is left: \
             see xtask/firmware/src/lib.rs)"
        )
    })?;
    let built = build.join(target).join("release");
    for program in programs {
        let to = dir.join(format!("{program}.elf"));
        std::fs::copy(built.join(program), &to).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    Ok(())
}

/// Every target's agent wrote the Cortex-M3's streams, byte for byte.
fn same_streams(out: &Path) -> Result<(), String> {
    let reference = out.join(BOARDS[0].target);
    for board in &BOARDS[1..] {
        let names = (0..).map(|n| format!("connection-{n}.dwr"));
        for name in std::iter::once("device.dwr".to_string()).chain(names) {
            let (ours, theirs) = (reference.join(&name), out.join(board.target).join(&name));
            match (std::fs::read(&ours), std::fs::read(&theirs)) {
                (Ok(a), Ok(b)) if a == b => continue,
                (Err(_), Err(_)) if name != "device.dwr" => break,
                _ => {
                    return Err(format!(
                        "{} differs from {} (or only one exists)",
                        theirs.display(),
                        ours.display()
                    ))
                }
            }
        }
    }
    eprintln!(
        "    every target's agent and device wrote the {}'s streams, byte for byte",
        BOARDS[0].core
    );
    Ok(())
}

/// Run the agent, then check each stream it wrote against what it printed.
fn agent(board: &Board, out: &Path, tool: &Path) -> Result<Footprint, String> {
    let elf = out.join("agent.elf");
    let report = qemu::run(board, &elf, &["agent", &format!("gaps={GAPS}")], out, &[])?;
    let summary = report.line("agent")?;
    let connections = summary.get("connections")?;
    let told = summary.get("told_gaps")?;
    if told != GAPS {
        return Err(format!("the agent was told {GAPS} gaps and says {told}"));
    }
    if connections < 2 {
        return Err(format!(
            "the agent opened {connections} connection(s); it must reconnect once (rule 8)"
        ));
    }
    let mut gaps = 0;
    for n in 0..connections {
        let path = out.join(format!("connection-{n}.dwr"));
        let said = report.line(&format!("connection {n}"))?;
        let checked = check(tool, &path, false)?;
        compare(&said.fields, &checked, &format!("connection {n}"))?;
        // Holds through `compare`, and said outright: the point of the run.
        if checked["rows_skipped"] != 0 || checked["seq_regressions"] != 0 {
            return Err(format!("{}: rows skipped or seq regressed", path.display()));
        }
        gaps += checked["gaps"];
        eprintln!(
            "    connection {n}: {} frames, {} rows applied, 0 skipped, {} gap(s) ({} frame(s) lost), as the agent said",
            checked["frames"], checked["rows_applied"], checked["gaps"], checked["frames_lost"]
        );
    }
    if gaps != GAPS {
        return Err(format!(
            "the streams have {gaps} gap(s) between them; the agent was told to cause {GAPS}"
        ));
    }
    let stray = out.join(format!("connection-{connections}.dwr"));
    if stray.exists() {
        return Err(format!("{} was written but not reported", stray.display()));
    }
    let foot = report.line("footprint")?;
    let state = foot.get("publisher_state")?;
    let mut f = footprint::sections(board, "agent", &elf)?;
    f.stack_peak = foot.get("stack_peak")?;
    f.frame_buffer = foot.get("frame_buffer")?;
    f.note = format!("publisher state {state} B, storage by SourceDecl::sizing, static");
    Ok(f)
}

/// Run `memcheck`: the `memcpy`, `memmove` and `memset` every program
/// links (on
/// the Arm cores the size-built ones of `xtask/firmware/src/mem.s`),
/// through every entry point, over every alignment and length it tries:
/// not one byte or return value wrong, and (on the Arm cores, through its
/// probe) no register a callee must keep, nor the stack pointer, changed.
fn memcheck(board: &Board, out: &Path) -> Result<(), String> {
    let elf = out.join("memcheck.elf");
    let report = qemu::run(board, &elf, &["memcheck"], out, &[])?;
    let said = report.line("memcheck")?;
    let (calls, wrong) = (said.get("calls")?, said.get("wrong")?);
    let (clobbered, stack) = (said.get("clobbered")?, said.get("stack")?);
    if wrong != 0 || clobbered != 0 || calls == 0 {
        return Err(format!(
            "memcheck: of {calls} calls, {wrong} byte(s) or return value(s) wrong, \
             {clobbered} call(s) changed a kept register or the stack pointer"
        ));
    }
    let registers = match said.get("probed")? {
        0 => "registers not probed on this core".to_string(),
        _ => format!("no kept register changed, at most {stack} B of stack"),
    };
    eprintln!("    memcheck: {calls} calls, every byte and return value right, {registers}");
    Ok(())
}

/// Run the decoder and compare its counts with the tool's on the same bytes.
fn decoder(board: &Board, out: &Path, tool: &Path) -> Result<Footprint, String> {
    let elf = out.join("decoder.elf");
    let report = qemu::run(board, &elf, &["decoder"], out, &[])?;
    let said = report.line("decoder")?;
    let sample = root().join("testdata/sample.dwr");
    let checked = check(tool, &sample, false)?;
    compare(&said.fields, &checked, "decoder")?;
    eprintln!(
        "    decoder: {} frames of every kind, {} rows applied, {} skipped, {} gap(s), as dendro-wire check says",
        checked["frames"], checked["rows_applied"], checked["rows_skipped"], checked["gaps"]
    );
    let foot = report.line("footprint")?;
    let mut f = footprint::sections(board, "decoder", &elf)?;
    f.stack_peak = foot.get("stack_peak")?;
    f.frame_buffer = foot.get("frame_buffer")?;
    f.note = format!(
        "{} B of .rodata are the stream compiled in",
        foot.get("stream_bytes")?
    );
    Ok(f)
}

/// Run `plain` (one source, no index) and check its stream.
fn plain(board: &Board, out: &Path, tool: &Path) -> Result<Footprint, String> {
    let elf = out.join("plain.elf");
    let report = qemu::run(board, &elf, &["plain"], out, &[])?;
    let said = report.line("plain")?;
    let checked = check(tool, &out.join("plain.dwr"), false)?;
    let observed = said.get("rows_observed")?;
    if checked["rows_applied"] != observed || checked["gaps"] != 0 {
        return Err(format!(
            "plain observed {observed} rows; its stream applies {} with {} gap(s)",
            checked["rows_applied"], checked["gaps"]
        ));
    }
    eprintln!(
        "    plain: {observed} rows observed, {} applied, no gap, as dendro-wire check says",
        checked["rows_applied"]
    );
    let foot = report.line("footprint")?;
    let mut f = footprint::sections(board, "plain", &elf)?;
    f.stack_peak = foot.get("stack_peak")?;
    f.frame_buffer = foot.get("frame_buffer")?;
    f.note = "one source, no index, 4 streams, rows of 2 B then 16 B; storage and frame buffer by SourceDecl::sizing, static".into();
    Ok(f)
}

/// Run the two-source device agent and check its stream: every row it
/// observed applied, under the slots it was observed against (nothing
/// skipped), no gap, as many frames as it sent.
fn device(board: &Board, out: &Path, tool: &Path) -> Result<Footprint, String> {
    let elf = out.join("device.elf");
    let report = qemu::run(board, &elf, &["device"], out, &[])?;
    let said = report.line("device")?;
    let checked = check(tool, &out.join("device.dwr"), false)?;
    let (observed, frames) = (said.get("rows_observed")?, said.get("frames_sent")?);
    let differ = checked["rows_applied"] != observed
        || checked["frames"] != frames
        || checked["rows_skipped"] != 0
        || checked["gaps"] != 0;
    if differ {
        return Err(format!(
            "device observed {observed} rows and sent {frames} frames; its stream has {} frames, \
             applies {} rows, skips {}, with {} gap(s)",
            checked["frames"], checked["rows_applied"], checked["rows_skipped"], checked["gaps"]
        ));
    }
    eprintln!(
        "    device: {observed} rows observed, {} applied, 0 skipped, {} frames, no gap, as dendro-wire check says",
        checked["rows_applied"], checked["frames"]
    );
    let foot = report.line("footprint")?;
    let mut f = footprint::sections(board, "device", &elf)?;
    f.stack_peak = foot.get("stack_peak")?;
    f.frame_buffer = foot.get("frame_buffer")?;
    f.note = "two sources (env; power, its 4 rails index slots), names of 6-20 B, blocking drain; storage and frame buffer by SourceDecl::sizing, static".into();
    Ok(f)
}

/// Run the async device agent: its drains dropped where they waited,
/// its stream must still be `device`'s, byte for byte.
fn async_device(board: &Board, out: &Path) -> Result<Footprint, String> {
    let elf = out.join("async_device.elf");
    let report = qemu::run(board, &elf, &["async_device"], out, &[])?;
    let cancelled = report.line("async drains")?.get("cancelled")?;
    let (ours, theirs) = (out.join("async_device.dwr"), out.join("device.dwr"));
    let same = std::fs::read(&ours).map_err(|e| format!("{}: {e}", ours.display()))?
        == std::fs::read(&theirs).map_err(|e| format!("{}: {e}", theirs.display()))?;
    if !same || cancelled == 0 {
        return Err(format!(
            "{} is not {} byte for byte, or no drain was dropped ({cancelled})",
            ours.display(),
            theirs.display()
        ));
    }
    eprintln!(
        "    async_device: {cancelled} drains dropped where they waited; its stream is device's, byte for byte"
    );
    let foot = report.line("footprint")?;
    let mut f = footprint::sections(board, "async_device", &elf)?;
    f.stack_peak = foot.get("stack_peak")?;
    f.frame_buffer = foot.get("frame_buffer")?;
    f.note = "device, drained by io::asynch::send_due raced against a timer".into();
    Ok(f)
}

/// Run `programs` built with feature `measure` on `board` under QEMU's
/// `-icount shift=0`, and say (and hold to its ceiling) the instructions
/// `observe` took per observed row: SysTick's ticks over the run, each
/// worth what a loop of known length says.
fn measure(board: &Board, out: &Path, programs: &[&str]) -> Result<(), String> {
    for program in programs {
        let elf = out.join(format!("{program}.elf"));
        let report = qemu::run(board, &elf, &[program], out, &["-icount", "shift=0"])?;
        let said = report.line(program)?;
        let (ticks, insns) = (
            said.get("calibration_ticks")?,
            said.get("calibration_instructions")?,
        );
        let observed = said.get("rows_observed")?;
        if ticks == 0 || observed == 0 {
            return Err(format!("{program} counted no ticks: is SysTick running?"));
        }
        let limits = OBSERVE_INSTRUCTIONS_LIMIT
            .iter()
            .filter(|(p, ..)| p == program);
        let keys: Vec<_> = limits.clone().collect();
        for (_, key, limit) in limits {
            // `plain` measures half its rows at each length.
            let rows = observed as f64 / keys.len() as f64;
            let per_row = said.get(key)? as f64 * insns as f64 / ticks as f64 / rows;
            eprintln!(
                "    {program}: {per_row:.0} instructions per observed row ({key}, {rows} rows, every interval) on {} (SysTick under -icount shift=0, {} instructions a tick by a loop of {insns})",
                board.core,
                insns / ticks
            );
            if per_row > *limit {
                return Err(format!(
                    "{program}: observe took {per_row:.0} instructions per row ({key}), past its ceiling of {limit}"
                ));
            }
        }
    }
    Ok(())
}

/// dendro 0.6.1's `Subscriber` applies the agent's streams into archives.
fn archive_test(streams: &Path) -> Result<(), String> {
    eprintln!("==> dendro's Subscriber applies the agent's streams (archive feature)");
    let run = cargo()
        .env("FIRMWARE_STREAMS", streams)
        .args(ARCHIVE_TESTS)
        .args(["--", "--ignored", "firmware_"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cargo test: {e}"))?;
    let stdout = String::from_utf8_lossy(&run.stdout);
    print!("{stdout}");
    // A filter that matches nothing passes with "0 passed"; that is a
    // failure here.
    if !run.status.success() || !stdout.contains("test result: ok. 1 passed") {
        return Err("the firmware streams did not land in dendro's archive".into());
    }
    Ok(())
}
