//! The boards and QEMU, for every program `cargo xtask firmware` runs
//! (`firmware.rs`, `net.rs`, `c_firmware.rs`): one board per target, the
//! command line that runs a program on one with semihosting, the wait for
//! it (stopped when it hangs), what it printed read line by line as
//! `label key=value ...`, and the stream checks: `dendro-wire check
//! --json` over what a program wrote, compared figure by figure with what
//! the program said.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::steps;

/// A target and the QEMU board its programs run on.
pub(crate) struct Board {
    pub(crate) target: &'static str,
    pub(crate) qemu: &'static str,
    pub(crate) machine: &'static str,
    /// The core, for the table.
    pub(crate) core: &'static str,
}

/// One board per family. The Cortex-M3 is the reference the others'
/// streams are compared with, and the only one with an emulated NIC.
pub(crate) const BOARDS: [Board; 3] = [
    Board {
        target: "thumbv7m-none-eabi",
        qemu: "qemu-system-arm",
        machine: "lm3s6965evb",
        core: "Cortex-M3",
    },
    Board {
        target: "thumbv6m-none-eabi",
        qemu: "qemu-system-arm",
        machine: "microbit",
        core: "Cortex-M0",
    },
    Board {
        target: "riscv32imc-unknown-none-elf",
        qemu: "qemu-system-riscv32",
        machine: "sifive_e",
        core: "RV32IMAC",
    },
];

/// The programs finish in well under a second (the network agent in
/// about twelve); a hung one is stopped.
const TIMEOUT: Duration = Duration::from_secs(60);
/// One line a program printed: its label (the words before the first
/// `key=value`) and its figures.
pub(crate) struct Line {
    label: String,
    pub(crate) fields: BTreeMap<String, u64>,
}

impl Line {
    pub(crate) fn get(&self, key: &str) -> Result<u64, String> {
        self.fields
            .get(key)
            .copied()
            .ok_or_else(|| format!("`{}` printed no {key}=", self.label))
    }
}

/// What a program printed, line by line.
pub(crate) struct Report {
    program: String,
    output: String,
    lines: Vec<Line>,
}

impl Report {
    pub(crate) fn line(&self, label: &str) -> Result<&Line, String> {
        self.lines.iter().find(|l| l.label == label).ok_or_else(|| {
            format!(
                "{} printed no `{label} ...` line; it printed:\n{}",
                self.program, self.output
            )
        })
    }
}

/// The QEMU command line that runs `elf` on `board` with semihosting,
/// `args` its command line.
pub(crate) fn command_line(board: &Board, elf: &Path, args: &[&str]) -> Vec<String> {
    let semihosting: String = args.iter().map(|a| format!(",arg={a}")).collect();
    vec![
        "-machine".into(),
        board.machine.into(),
        "-nographic".into(),
        "-semihosting-config".into(),
        format!("enable=on,target=native{semihosting}"),
        "-kernel".into(),
        elf.display().to_string(),
    ]
}

/// Run a program under QEMU in `dir` (where its files go); its output, or
/// why it failed.
pub(crate) fn run(
    board: &Board,
    elf: &Path,
    args: &[&str],
    dir: &Path,
    extra: &[&str],
) -> Result<Report, String> {
    let program = elf
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    eprintln!("==> run {program} under {} ({})", board.qemu, board.machine);
    let mut command = Command::new(board.qemu);
    command.args(command_line(board, elf, args)).args(extra);
    finish(spawn(board, &mut command, dir)?, &program, board.qemu)
}

/// Start `command` (QEMU, or QEMU in a namespace) in `dir`, its output
/// kept for [`finish`].
pub(crate) fn spawn(
    board: &Board,
    command: &mut Command,
    dir: &Path,
) -> Result<std::process::Child, String> {
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", board.qemu))
}

/// Wait for a QEMU run (stopped at `TIMEOUT`) and read what it
/// printed, line by line.
pub(crate) fn finish(
    mut child: std::process::Child,
    program: &str,
    qemu: &str,
) -> Result<Report, String> {
    let deadline = Instant::now() + TIMEOUT;
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
                "{program} did not finish in {} s under {qemu}; it printed:\n{output}{errors}",
                TIMEOUT.as_secs()
            ))
        }
        Some(s) if !s.success() => {
            return Err(format!(
                "{program} failed under {qemu} ({s}); it printed:\n{output}{errors}"
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
        program: program.to_string(),
        output,
        lines,
    })
}

/// `dendro-wire check --json` over a stream (`--cut-ok` if `cut_ok`): its
/// figures by name.
pub(crate) fn check(
    tool: &Path,
    stream: &Path,
    cut_ok: bool,
) -> Result<BTreeMap<String, u64>, String> {
    if !stream.exists() {
        return Err(format!("{} was not written", stream.display()));
    }
    let cut: &[&str] = if cut_ok { &["--cut-ok"] } else { &[] };
    let json = steps::output(
        &format!("dendro-wire check {}", stream.display()),
        Command::new(tool)
            .args(["check", "--json"])
            .args(cut)
            .arg(stream),
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
pub(crate) fn compare(
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
