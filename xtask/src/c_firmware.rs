//! The C firmware agent (`dendro-wire-core/ffi/examples/firmware/agent.c`):
//! the Rust agent's workload written in C over the C API, built with
//! arm-none-eabi-gcc against the staticlib for `thumbv7m-none-eabi` (no
//! libc, no heap), run under QEMU's `lm3s6965evb` with semihosting.
//!
//! Each connection's stream, `target/firmware/c/connection-N.dwr`, must
//! check with `dendro-wire check --json` exactly as the agent says, and be
//! byte for byte the Rust agent's stream of the same connection
//! (`target/firmware/thumbv7m-none-eabi/connection-N.dwr`, which
//! `firmware.rs` checks and dendro's own `Subscriber` lands): the same
//! calls give the same frames through C as through Rust. Then its
//! footprint is printed beside the Rust agent's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::root;

const TARGET: &str = "thumbv7m-none-eabi";
const FIRMWARE: &str = "dendro-wire-core/ffi/examples/firmware";
/// The gaps the agent is told to cause: the Rust agent's.
const GAPS: &str = "gaps=4";
const TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) fn run() -> Result<(), String> {
    crate::setup::ensure("firmware (the C agent)", &[crate::setup::C_FIRMWARE])?;
    let tool = crate::release_tool()?;
    crate::c::build_library(Some(TARGET))?;
    let out = root().join("target/firmware/c");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    // Nothing from an earlier run may stand in for this one's.
    for entry in std::fs::read_dir(&out).map_err(|e| format!("{}: {e}", out.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|x| x == "dwr" || x == "elf") {
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let elf = build(&out)?;
    let printed = qemu(&elf, &out)?;
    let connections = streams(&printed, &out, &tool)?;
    footprint(&elf)?;
    eprintln!("==> firmware (C): {connections} connections checked, each the Rust agent's bytes");
    Ok(())
}

/// The agent, every warning an error, linked with no libc.
fn build(out: &Path) -> Result<PathBuf, String> {
    let dir = root().join(FIRMWARE);
    let elf = out.join("agent.elf");
    let staticlib = root().join(format!("target/{TARGET}/ffi/libdendro_wire_ffi.a"));
    crate::run(
        "build the C agent (arm-none-eabi-gcc, -Wall -Wextra -Werror, no libc)",
        Command::new("arm-none-eabi-gcc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
            .args(["-mcpu=cortex-m3", "-mthumb", "-Os", "-g"])
            .args(["-ffunction-sections", "-fdata-sections"])
            .args(["-ffreestanding", "-nostdlib"])
            .arg("-I")
            .arg(root().join("dendro-wire-core/ffi/include"))
            .arg("-T")
            .arg(dir.join("link.ld"))
            .arg(dir.join("agent.c"))
            .arg(&staticlib)
            .args(["-Wl,--gc-sections", "-Wl,-z,noexecstack"])
            .arg("-o")
            .arg(&elf),
    )?;
    // A panic cannot happen on the device: no path to the handler linked.
    let symbols = crate::output(
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

/// Run the agent under QEMU in `dir`; what it printed.
fn qemu(elf: &Path, dir: &Path) -> Result<String, String> {
    eprintln!("==> run the C agent under qemu-system-arm (lm3s6965evb)");
    let mut child = Command::new("qemu-system-arm")
        .args(["-machine", "lm3s6965evb", "-nographic"])
        .args(["-semihosting-config"])
        .arg(format!("enable=on,target=native,arg=agent,arg={GAPS}"))
        .arg("-kernel")
        .arg(elf)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("qemu-system-arm: {e}"))?;
    let deadline = Instant::now() + TIMEOUT;
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the C agent ran past {TIMEOUT:?} under QEMU"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    // Semihosting's console (SYS_WRITE0) is QEMU's standard error.
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() {
        return Err(format!(
            "the C agent failed ({}); it printed:\n{printed}",
            output.status
        ));
    }
    Ok(printed)
}

/// Each connection's stream: checked as the agent said, and the Rust
/// agent's bytes. The number of connections.
fn streams(printed: &str, out: &Path, tool: &Path) -> Result<usize, String> {
    let said: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("connection "))
        .collect();
    if said.len() < 2 {
        return Err(format!(
            "the C agent reported {} connection(s); it must reconnect once (rule 8):\n{printed}",
            said.len()
        ));
    }
    let agent = printed
        .lines()
        .find(|l| l.starts_with("agent "))
        .ok_or_else(|| format!("the C agent printed no `agent` line:\n{printed}"))?;
    for want in [" told_gaps=4 ", " gaps=4 "] {
        if !agent.contains(want) {
            return Err(format!("the C agent's summary lacks `{want}`: {agent}"));
        }
    }
    for (n, line) in said.iter().enumerate() {
        let path = out.join(format!("connection-{n}.dwr"));
        let json = crate::output(
            &format!("dendro-wire check {}", path.display()),
            Command::new(tool).args(["check", "--json"]).arg(&path),
        )?;
        let json = String::from_utf8_lossy(&json);
        let figures = json.trim().trim_start_matches('{').trim_end_matches('}');
        for pair in figures.split(',') {
            let (key, value) = pair.split_once(':').unwrap_or((pair, ""));
            let want = format!(" {}={value}", key.trim_matches('"'));
            if !format!("{line} ").contains(&format!("{want} ")) {
                return Err(format!(
                    "connection {n}: dendro-wire check says {pair}, the agent said: {line}"
                ));
            }
        }
        let rust = root().join(format!("target/firmware/{TARGET}/connection-{n}.dwr"));
        let (ours, theirs) = (std::fs::read(&path), std::fs::read(&rust));
        match (ours, theirs) {
            (Ok(a), Ok(b)) if a == b => {}
            (Ok(_), Ok(_)) => {
                return Err(format!(
                    "{} differs from the Rust agent's {}",
                    path.display(),
                    rust.display()
                ))
            }
            (a, b) => {
                return Err(format!(
                    "connection {n}: {} or {} is missing ({:?}, {:?}); `cargo xtask firmware` \
                     runs the Rust agent first",
                    path.display(),
                    rust.display(),
                    a.err(),
                    b.err()
                ))
            }
        }
        eprintln!("    connection {n}: checks as the agent said, the Rust agent's bytes exactly");
    }
    Ok(said.len())
}

/// Flash and static RAM of an ELF, by `arm-none-eabi-size` (Berkeley:
/// flash is text + data, RAM data + bss).
fn sizes(elf: &Path) -> Result<(u64, u64), String> {
    let printed = crate::output(
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

fn footprint(elf: &Path) -> Result<(), String> {
    let (flash, ram) = sizes(elf)?;
    let rust = root().join(format!("target/firmware/{TARGET}/agent.elf"));
    let (rust_flash, rust_ram) = sizes(&rust)?;
    eprintln!(
        "    C agent: flash {flash} B, static RAM {ram} B (the publisher in DW_PUBLISHER_SIZE, \
         its two sources and the frame buffer, all static); the Rust agent: flash {rust_flash} \
         B, static RAM {rust_ram} B; C at {:.2}x the Rust agent's flash",
        flash as f64 / rust_flash as f64
    );
    Ok(())
}
