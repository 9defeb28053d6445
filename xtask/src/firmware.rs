//! `cargo xtask firmware`: the core on a microcontroller.
//!
//! Builds the two programs of `xtask/firmware` for the Cortex-M3 of QEMU's
//! `lm3s6965evb` and runs each there with semihosting:
//!
//! - `agent` publishes two sources through a disconnect and a reconnect,
//!   writes connection N's stream to `target/firmware/connection-N.dwr`, is
//!   told how many gaps to cause, and prints what `dendro-wire check --json`
//!   must say about each stream; every figure is compared, and dendro's own
//!   `Subscriber` applies the streams into archives (the `archive` test).
//! - `decoder` decodes the committed sample compiled in and prints its
//!   counts, compared with `dendro-wire check --json` on the same bytes.
//!
//! Then it prints each program's footprint, read from the ELF's section
//! headers (flash, static RAM) and from the program (peak stack), and fails
//! if one is past the ceilings of issue 14.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{cargo, root, ARCHIVE_TESTS};

const TARGET: &str = "thumbv7m-none-eabi";
const QEMU: &str = "qemu-system-arm";

/// The gaps the agent is told to cause, some of two lost frames: enough to
/// fall on both of its connections.
const GAPS: u64 = 4;

/// Both programs finish in well under a second; a hung one is stopped.
const QEMU_TIMEOUT: Duration = Duration::from_secs(60);

/// The ceilings (issue 14): flash for either program; for the agent,
/// static RAM and peak stack beyond its frame buffer; for the decoder,
/// peak stack beyond its buffer.
const FLASH_LIMIT: u64 = 16 * 1024;
const AGENT_RAM_LIMIT: u64 = 4 * 1024;
const DECODER_STACK_LIMIT: u64 = 2 * 1024;

pub(crate) fn run() -> Result<(), String> {
    let started = Instant::now();
    crate::setup::ensure("firmware", &[crate::setup::FIRMWARE])?;
    let tool = crate::release_tool()?;
    let source = root().join("xtask/firmware");
    let build = root().join("target/firmware-build");
    crate::run(
        &format!("build the firmware ({TARGET}, release)"),
        cargo()
            .current_dir(&source)
            .args([
                "build",
                "--release",
                "--locked",
                "--quiet",
                "--target",
                TARGET,
            ])
            .env("CARGO_TARGET_DIR", &build),
    )?;
    crate::run(
        "rustfmt of the firmware",
        cargo().current_dir(&source).args(["fmt", "--check"]),
    )?;

    // Nothing from an earlier run may stand in for this one's output.
    let out = root().join("target/firmware");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    for entry in std::fs::read_dir(&out).map_err(|e| format!("{}: {e}", out.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|x| x == "dwr" || x == "elf") {
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    let built = build.join(TARGET).join("release");
    for program in ["agent", "decoder"] {
        let to = out.join(format!("{program}.elf"));
        std::fs::copy(built.join(program), &to).map_err(|e| format!("{}: {e}", to.display()))?;
    }

    let agent = agent(&out, &tool)?;
    let decoder = decoder(&out, &tool)?;
    archive_test()?;

    print_footprint(&agent, &decoder);
    let mut over = Vec::new();
    for p in [&agent, &decoder] {
        if p.flash > FLASH_LIMIT {
            over.push(format!("{}: flash {} > {FLASH_LIMIT}", p.name, p.flash));
        }
    }
    if agent.beyond_buffer() > AGENT_RAM_LIMIT {
        over.push(format!(
            "agent: static RAM + peak stack beyond the frame buffer {} > {AGENT_RAM_LIMIT}",
            agent.beyond_buffer()
        ));
    }
    let decoder_stack = decoder.stack_peak.saturating_sub(decoder.frame_buffer);
    if decoder_stack > DECODER_STACK_LIMIT {
        over.push(format!(
            "decoder: peak stack beyond its buffer {decoder_stack} > {DECODER_STACK_LIMIT}"
        ));
    }
    if !over.is_empty() {
        return Err(format!(
            "past the footprint ceilings:\n  {}",
            over.join("\n  ")
        ));
    }
    eprintln!(
        "==> firmware: both programs ran and checked, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What one program costs on the device.
struct Footprint {
    name: &'static str,
    flash: u64,
    vectors: u64,
    text: u64,
    rodata: u64,
    data: u64,
    /// `.bss` and `.uninit`.
    bss: u64,
    stack_peak: u64,
    frame_buffer: u64,
    /// A note for the table.
    note: String,
}

impl Footprint {
    fn static_ram(&self) -> u64 {
        self.data + self.bss
    }

    fn beyond_buffer(&self) -> u64 {
        (self.static_ram() + self.stack_peak).saturating_sub(self.frame_buffer)
    }
}

/// Run the agent, then check each stream it wrote against what it printed.
fn agent(out: &Path, tool: &Path) -> Result<Footprint, String> {
    let elf = out.join("agent.elf");
    let report = qemu(&elf, &["agent", &format!("gaps={GAPS}")], out)?;
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
        let checked = check(tool, &path)?;
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
    let mut f = sections("agent", &elf)?;
    f.stack_peak = foot.get("stack_peak")?;
    f.frame_buffer = foot.get("frame_buffer")?;
    f.note = format!("publisher state {state} B (on the stack)");
    Ok(f)
}

/// Run the decoder and compare its counts with the tool's on the same bytes.
fn decoder(out: &Path, tool: &Path) -> Result<Footprint, String> {
    let elf = out.join("decoder.elf");
    let report = qemu(&elf, &["decoder"], out)?;
    let said = report.line("decoder")?;
    let sample = root().join("testdata/sample.dwr");
    let checked = check(tool, &sample)?;
    compare(&said.fields, &checked, "decoder")?;
    eprintln!(
        "    decoder: {} frames of every kind, {} rows applied, {} skipped, {} gap(s), as dendro-wire check says",
        checked["frames"], checked["rows_applied"], checked["rows_skipped"], checked["gaps"]
    );
    let foot = report.line("footprint")?;
    let mut f = sections("decoder", &elf)?;
    f.stack_peak = foot.get("stack_peak")?;
    f.frame_buffer = foot.get("frame_buffer")?;
    f.note = format!(
        "{} B of .rodata are the stream compiled in",
        foot.get("stream_bytes")?
    );
    Ok(f)
}

/// dendro 0.6.1's `Subscriber` applies the agent's streams into archives.
fn archive_test() -> Result<(), String> {
    eprintln!("==> dendro's Subscriber applies the agent's streams (archive feature)");
    let run = cargo()
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

/// One line a program printed: its label (the words before the first
/// `key=value`) and its figures.
struct Line {
    label: String,
    fields: BTreeMap<String, u64>,
}

impl Line {
    fn get(&self, key: &str) -> Result<u64, String> {
        self.fields
            .get(key)
            .copied()
            .ok_or_else(|| format!("`{}` printed no {key}=", self.label))
    }
}

/// What a program printed, line by line.
struct Report {
    program: String,
    output: String,
    lines: Vec<Line>,
}

impl Report {
    fn line(&self, label: &str) -> Result<&Line, String> {
        self.lines.iter().find(|l| l.label == label).ok_or_else(|| {
            format!(
                "{} printed no `{label} ...` line; it printed:\n{}",
                self.program, self.output
            )
        })
    }
}

/// Run a program under QEMU in `dir` (where its files go); its output, or
/// why it failed.
fn qemu(elf: &Path, args: &[&str], dir: &Path) -> Result<Report, String> {
    let program = elf
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    eprintln!("==> run {program} under {QEMU} (lm3s6965evb)");
    let semihosting: String = args.iter().map(|a| format!(",arg={a}")).collect();
    let mut child = Command::new(QEMU)
        .args([
            "-machine",
            "lm3s6965evb",
            "-nographic",
            "-semihosting-config",
        ])
        .arg(format!("enable=on,target=native{semihosting}"))
        .arg("-kernel")
        .arg(elf)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{QEMU}: {e}"))?;
    let deadline = Instant::now() + QEMU_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut output, mut errors) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut output);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut errors);
    }
    match status {
        None => {
            return Err(format!(
                "{program} did not finish in {} s under {QEMU}; it printed:\n{output}{errors}",
                QEMU_TIMEOUT.as_secs()
            ))
        }
        Some(s) if !s.success() => {
            return Err(format!(
                "{program} failed under {QEMU} ({s}); it printed:\n{output}{errors}"
            ))
        }
        Some(_) => {}
    }
    let mut lines = Vec::new();
    for text in output.lines() {
        let (mut label, mut fields) = (Vec::new(), BTreeMap::new());
        for word in text.split_whitespace() {
            match word.split_once('=') {
                Some((key, value)) => {
                    let value = value.parse().map_err(|_| {
                        format!("{program} printed `{word}`, not a number, in: {text}")
                    })?;
                    fields.insert(key.to_string(), value);
                }
                None => label.push(word),
            }
        }
        lines.push(Line {
            label: label.join(" "),
            fields,
        });
    }
    Ok(Report {
        program,
        output,
        lines,
    })
}

/// `dendro-wire check --json` over a stream: its figures by name.
fn check(tool: &Path, stream: &Path) -> Result<BTreeMap<String, u64>, String> {
    if !stream.exists() {
        return Err(format!("{} was not written", stream.display()));
    }
    let json = crate::output(
        &format!("dendro-wire check {}", stream.display()),
        Command::new(tool).args(["check", "--json"]).arg(stream),
    )?;
    let json = String::from_utf8_lossy(&json);
    // One flat object of whole numbers.
    let body = json
        .trim()
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .ok_or_else(|| format!("dendro-wire check printed no JSON object: {json}"))?;
    let mut figures = BTreeMap::new();
    for pair in body.split(',') {
        let (key, value) = pair
            .split_once(':')
            .ok_or_else(|| format!("dendro-wire check printed `{pair}`"))?;
        let value = value
            .parse()
            .map_err(|_| format!("dendro-wire check printed `{pair}`"))?;
        figures.insert(key.trim_matches('"').to_string(), value);
    }
    for key in [
        "frames",
        "rows_applied",
        "rows_skipped",
        "gaps",
        "seq_regressions",
    ] {
        if !figures.contains_key(key) {
            return Err(format!("dendro-wire check printed no {key}: {json}"));
        }
    }
    Ok(figures)
}

/// The figures a program printed against the tool's: every one the tool
/// prints, equal.
fn compare(
    said: &BTreeMap<String, u64>,
    checked: &BTreeMap<String, u64>,
    what: &str,
) -> Result<(), String> {
    let differ: Vec<String> = checked
        .iter()
        .filter(|(k, v)| said.get(*k) != Some(v))
        .map(|(k, v)| match said.get(k) {
            Some(s) => format!("{k}: the program says {s}, dendro-wire check says {v}"),
            None => format!("{k}: the program says nothing, dendro-wire check says {v}"),
        })
        .collect();
    if differ.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}:\n  {}", differ.join("\n  ")))
    }
}

/// Read an ELF32 little-endian file's section headers: flash is every
/// allocated section with bytes in the image, static RAM `.data` and
/// `.bss` (and cortex-m-rt's `.uninit`).
fn sections(name: &'static str, elf: &Path) -> Result<Footprint, String> {
    let bytes = std::fs::read(elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    let bad = |what: &str| format!("{}: {what}", elf.display());
    // A little-endian field of `width` bytes.
    let field = |at: usize, width: usize| {
        let le = bytes.get(at..at + width).ok_or_else(|| bad("truncated"))?;
        Ok::<u64, String>(le.iter().rev().fold(0, |n, b| n << 8 | u64::from(*b)))
    };
    let (u16_at, u32_at) = (|at| field(at, 2), |at| field(at, 4));
    if bytes.get(..6) != Some(b"\x7fELF\x01\x01") {
        return Err(bad("not a 32-bit little-endian ELF file"));
    }
    let (shoff, entsize) = (u32_at(0x20)? as usize, u16_at(0x2e)? as usize);
    let (count, names_at) = (u16_at(0x30)? as usize, u16_at(0x32)? as usize);
    let header = |i: usize| shoff + i * entsize;
    let names = u32_at(header(names_at) + 16)? as usize;
    let mut f = Footprint {
        name,
        flash: 0,
        vectors: 0,
        text: 0,
        rodata: 0,
        data: 0,
        bss: 0,
        stack_peak: 0,
        frame_buffer: 0,
        note: String::new(),
    };
    const SHT_NOBITS: u64 = 8;
    const SHF_ALLOC: u64 = 2;
    for i in 0..count {
        let h = header(i);
        let name_at = names + u32_at(h)? as usize;
        let section = bytes
            .get(name_at..)
            .and_then(|n| n.split(|b| *b == 0).next())
            .ok_or_else(|| bad("a section name is out of the file"))?;
        let (kind, flags, size) = (u32_at(h + 4)?, u32_at(h + 8)?, u32_at(h + 20)?);
        if flags & SHF_ALLOC == 0 {
            continue;
        }
        if kind != SHT_NOBITS {
            f.flash += size;
        }
        match section {
            b".vector_table" => f.vectors += size,
            b".text" => f.text += size,
            b".rodata" => f.rodata += size,
            b".data" => f.data += size,
            b".bss" | b".uninit" => f.bss += size,
            _ => {}
        }
    }
    Ok(f)
}

fn print_footprint(agent: &Footprint, decoder: &Footprint) {
    eprintln!(
        "==> footprint on {TARGET} (the release profile of xtask/firmware/Cargo.toml), bytes"
    );
    eprintln!(
        "    {:<8} {:>6} = {:>7} + {:>6} + {:>7} + {:>5}   {:>10}   {:>10}   {:>12}   {:>21}",
        "program",
        "flash",
        "vectors",
        ".text",
        ".rodata",
        ".data",
        "static RAM",
        "peak stack",
        "frame buffer",
        "static+stack - buffer"
    );
    for f in [agent, decoder] {
        eprintln!(
            "    {:<8} {:>6} = {:>7} + {:>6} + {:>7} + {:>5}   {:>10}   {:>10}   {:>12}   {:>21}   ({})",
            f.name,
            f.flash,
            f.vectors,
            f.text,
            f.rodata,
            f.data,
            f.static_ram(),
            f.stack_peak,
            f.frame_buffer,
            f.beyond_buffer(),
            f.note
        );
    }
    eprintln!(
        "    ceilings: flash <= {FLASH_LIMIT} each; agent static+stack - buffer <= {AGENT_RAM_LIMIT}; \
         decoder stack - buffer <= {DECODER_STACK_LIMIT}"
    );
}
