//! The C firmware agent (`dendro-wire-core/ffi/examples/firmware/agent.c`):
//! the Rust agent's workload written in C over the C API, built with
//! arm-none-eabi-gcc against the staticlib for each Arm board's target (no
//! libc, no heap), run under QEMU's `lm3s6965evb` (Cortex-M3) and
//! `microbit` (Cortex-M0) with semihosting.
//!
//! Each connection's stream, `target/firmware/c/TARGET/connection-N.dwr`,
//! must check with `dendro-wire check --json` exactly as the agent says,
//! and be byte for byte the Rust agent's stream of the same connection
//! (`target/firmware/TARGET/connection-N.dwr`, which
//! `firmware.rs` checks and dendro's own `Subscriber` lands): the same
//! calls give the same frames through C as through Rust. Then its
//! footprint is printed beside the Rust agent's, both linked with the same
//! size-built `memcpy`, `memset` and `memmove`
//! (`xtask/firmware/src/mem.s`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::footprint::page::{self, Cell};
use crate::qemu::{self, check, compare, finish, Board, BOARDS};
use crate::steps::{self, fresh_dir, root, target_dir};
use crate::{c_build, setup};

/// The Arm boards, each with the RAM its linker script is told of.
const ARM: [(&Board, &str); 2] = [(&BOARDS[0], "64K"), (&BOARDS[1], "16K")];
const FIRMWARE: &str = "dendro-wire-core/ffi/examples/firmware";
/// The most stack the C agent may take while it declares its sources
/// (issue 41's 1.5 KiB): declaring gathers nothing on the stack that
/// grows with its streams.
const DECLARING_STACK_LIMIT: u64 = 1536;
/// The C agent's flash ceiling per core: the figure this step printed
/// (the ffi README's Footprint table) plus under 2%, so that a change
/// which costs a C program flash is seen and said, as `footprint.rs`
/// does for the Rust programs.
fn flash_limit(core: &str) -> u64 {
    match core {
        "Cortex-M3" => 23_340,
        "Cortex-M0" => 24_030,
        _ => u64::MAX,
    }
}

/// The gaps the agent is told to cause: the Rust agent's.
const GAPS: &str = "gaps=4";

pub(crate) fn run() -> Result<(), String> {
    setup::ensure("firmware (the C agent)", &[setup::C_FIRMWARE])?;
    let tool = steps::release_tool()?;
    sizes_on_every_board()?;
    let (mut connections, mut rows) = (0, Vec::new());
    for (board, ram) in ARM {
        c_build::build_device_library(board.target)?;
        let out = target_dir().join("firmware/c").join(board.target);
        fresh_dir(&out)?;
        let elf = build(board, ram, &out)?;
        let (made, stack) = streams(board, &elf, &out, &tool)?;
        rows.push(footprint(board, &elf, stack)?);
        connections += made;
    }
    // The book's table, from this run: fails if the committed one is stale.
    page::check_and_write(
        "c-footprint-table.md",
        &[
            "core",
            "C flash",
            "Rust flash",
            "C / Rust",
            "C static RAM",
            "Rust static RAM",
            "C peak stack, declaring",
            "C peak stack, loop",
        ],
        &rows,
    )?;
    eprintln!(
        "==> firmware (C): {connections} connections on the Cortex-M3 and the Cortex-M0 checked, \
         each the Rust agent's bytes"
    );
    Ok(())
}

/// The header's size figures for 32-bit targets are held equal to the
/// layouts the compiler gives by the library's own `const` assertions: a
/// build for each board's target is the test (the agent compares them
/// with the functions under QEMU too, on each Arm board).
fn sizes_on_every_board() -> Result<(), String> {
    for board in &BOARDS {
        steps::run(
            &format!(
                "check dendro-wire-ffi for {} (the header's sizes are this target's)",
                board.target
            ),
            steps::cargo().args([
                "check",
                "--quiet",
                "-p",
                "dendro-wire-ffi",
                "--lib",
                "--profile",
                c_build::DEVICE_PROFILE,
                "--target",
                board.target,
            ]),
        )?;
    }
    Ok(())
}

/// The agent, every warning an error, linked with no libc, for `board`
/// with `ram` of RAM.
fn build(board: &Board, ram: &str, out: &Path) -> Result<PathBuf, String> {
    let dir = root().join(FIRMWARE);
    let elf = out.join("agent.elf");
    let target = board.target;
    let staticlib = target_dir()
        .join(target)
        .join(c_build::DEVICE_PROFILE)
        .join("libdendro_wire_ffi.a");
    let cpu = format!("-mcpu={}", board.core.to_lowercase());
    let mut command = Command::new("arm-none-eabi-gcc");
    if board.core == "Cortex-M0" {
        // mem.s's ARMv6-M code.
        command.arg("-Wa,--defsym,DENDRO_WIRE_ARMV6M=1");
    }
    steps::run(
        &format!(
            "build the C agent for the {} (arm-none-eabi-gcc, -Wall -Wextra -Werror, no libc)",
            board.core
        ),
        command
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
            .args([cpu.as_str(), "-mthumb", "-Os", "-g"])
            .args(["-ffunction-sections", "-fdata-sections"])
            .args(["-ffreestanding", "-nostdlib"])
            .arg("-I")
            .arg(root().join("dendro-wire-core/ffi/include"))
            .arg("-T")
            .arg(dir.join("link.ld"))
            .arg(dir.join("agent.c"))
            // The size-built memcpy, memset and memmove every Rust
            // firmware program links, so that the two agents' flash
            // compare like for like.
            .arg(root().join("xtask/firmware/src/mem.s"))
            .arg(&staticlib)
            .args(["-Wl,--gc-sections", "-Wl,-z,noexecstack"])
            .arg(format!("-Wl,--defsym=RAM_SIZE={ram}"))
            .arg("-o")
            .arg(&elf),
    )?;
    // A panic cannot happen on the device: no path to the handler linked.
    let symbols = steps::output(
        "arm-none-eabi-nm agent.elf",
        Command::new("arm-none-eabi-nm").arg(&elf),
    )?;
    if let Some(line) = String::from_utf8_lossy(&symbols)
        .lines()
        .find(|l| l.contains("rust_begin_unwind"))
    {
        return Err(format!(
            "{} can panic: its panic handler was linked ({line})",
            elf.display()
        ));
    }
    Ok(elf)
}

/// The C agent's peak stack, painted and read back by the agent itself:
/// while it declares its sources, and in its loop.
struct Stack {
    declaring: u64,
    looping: u64,
}

/// Each connection's stream: checked as the agent said, and the Rust
/// agent's bytes. The number of connections, and the stack it used.
fn streams(board: &Board, elf: &Path, out: &Path, tool: &Path) -> Result<(u64, Stack), String> {
    eprintln!(
        "==> run the C agent under {} ({})",
        board.qemu, board.machine
    );
    let mut command = Command::new(board.qemu);
    command.args(qemu::command_line(board, elf, &["agent", GAPS]));
    let report = finish(
        qemu::spawn(board, &mut command, out)?,
        "agent.elf (C)",
        board.qemu,
    )?;
    let summary = report.line("agent")?;
    let foot = report.line("footprint")?;
    let stack = Stack {
        declaring: foot.get("stack_declaring")?,
        looping: foot.get("stack_looping")?,
    };
    let connections = summary.get("connections")?;
    if summary.get("told_gaps")? != 4 || summary.get("gaps")? != 4 {
        return Err(format!(
            "the C agent was told 4 gaps and caused {}",
            summary.get("gaps")?
        ));
    }
    if connections < 2 {
        return Err(format!(
            "the C agent opened {connections} connection(s); it must reconnect once (rule 8)"
        ));
    }
    let rust_dir = target_dir().join("firmware").join(board.target);
    for n in 0..connections {
        let name = format!("connection-{n}.dwr");
        let path = out.join(&name);
        let checked = check(tool, &path, false)?;
        let said = report.line(&format!("connection {n}"))?;
        compare(
            &said.fields,
            &checked,
            &format!("the C agent's connection {n}"),
        )?;
        let rust = rust_dir.join(&name);
        match (std::fs::read(&path), std::fs::read(&rust)) {
            (Ok(a), Ok(b)) if a == b => {}
            (a, b) => {
                return Err(format!(
                    "{} is not the Rust agent's {} ({} and {}); `cargo xtask firmware` runs the \
                     Rust agent first",
                    path.display(),
                    rust.display(),
                    a.map_or_else(|e| e.to_string(), |b| format!("{} bytes", b.len())),
                    b.map_or_else(|e| e.to_string(), |b| format!("{} bytes", b.len())),
                ))
            }
        }
        eprintln!("    connection {n}: checks as the agent said, the Rust agent's bytes exactly");
    }
    Ok((connections, stack))
}

/// Flash and static RAM of an ELF, by `arm-none-eabi-size` (Berkeley:
/// flash is text + data, RAM data + bss).
fn sizes(elf: &Path) -> Result<(u64, u64), String> {
    let printed = steps::output(
        "arm-none-eabi-size",
        Command::new("arm-none-eabi-size").arg(elf),
    )?;
    let printed = String::from_utf8_lossy(&printed);
    let figures: Vec<u64> = printed
        .lines()
        .nth(1)
        .map(|l| {
            l.split_whitespace()
                .take(3)
                .filter_map(|n| n.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    match figures[..] {
        [text, data, bss] => Ok((text + data, data + bss)),
        _ => Err(format!("arm-none-eabi-size printed:\n{printed}")),
    }
}

fn footprint(board: &Board, elf: &Path, stack: Stack) -> Result<page::Row, String> {
    let (flash, ram) = sizes(elf)?;
    let rust = target_dir()
        .join("firmware")
        .join(board.target)
        .join("agent.elf");
    let (rust_flash, rust_ram) = sizes(&rust)?;
    eprintln!(
        "    C agent, {}: flash {flash} B, static RAM {ram} B (the publisher in DW_PUBLISHER_SIZE(2), \
         its two sources and the frame buffer, all static); the Rust agent: flash {rust_flash} \
         B, static RAM {rust_ram} B; C at {:.2}x the Rust agent's flash",
        board.core,
        flash as f64 / rust_flash as f64
    );
    eprintln!(
        "    C agent: peak stack {} B while declaring its sources, {} B in its loop",
        stack.declaring, stack.looping
    );
    if flash > flash_limit(board.core) {
        return Err(format!(
            "the C agent on the {} takes {flash} B of flash, past its ceiling of {} B",
            board.core,
            flash_limit(board.core)
        ));
    }
    if stack.declaring > DECLARING_STACK_LIMIT {
        return Err(format!(
            "the C agent's stack peaks at {} B while it declares its sources, past {} B",
            stack.declaring, DECLARING_STACK_LIMIT
        ));
    }
    Ok(page::Row {
        key: vec![board.core.to_string()],
        cells: vec![
            Cell::Bytes(Some(flash), 0.02),
            Cell::Bytes(Some(rust_flash), 0.02),
            Cell::Text(format!("{:.2}x", flash as f64 / rust_flash as f64)),
            Cell::Bytes(Some(ram), 0.02),
            Cell::Bytes(Some(rust_ram), 0.02),
            Cell::Bytes(Some(stack.declaring), 0.10),
            Cell::Bytes(Some(stack.looping), 0.10),
        ],
    })
}
