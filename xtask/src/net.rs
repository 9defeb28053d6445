//! The network run of `cargo xtask firmware`: the firmware's `net-agent`
//! streams over TCP into a live `dendro-wire listen`, each in a network
//! namespace this run makes and removes, joined by a TAP device QEMU's
//! lm3s6965evb NIC is attached to. Nothing leaves the namespace: no
//! user-mode network, no host interface, only addresses inside it.
//!
//! The run (about twelve seconds of emulated time, which QEMU keeps with
//! the host's clock): the link is fast for two seconds, then the device's
//! direction of it is shaped below the agent's reading rate (`tc`: the
//! TAP's ingress redirected to an `ifb` with a token bucket); at five
//! seconds the collector is stopped with SIGTERM and, half a second after
//! it has gone, started again on the same captures directory, so the agent
//! reconnects (rule 8). Then every reading must be accounted for: each
//! capture checks (`check --json --cut-ok`) exactly as the agent predicted
//! from what the stack acknowledged, its length is the bytes acknowledged,
//! and rows delivered + dropped + lost at a disconnect = rows observed.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::footprint::{self, Footprint};
use crate::qemu::{self, Board};

/// The namespace, its TAP device and the `ifb` its ingress is shaped on.
const NAMESPACE: &str = "dendro-wire-fw";
const TAP: &str = "dwtap0";
const IFB: &str = "dwifb0";
/// The collector's side of the TAP; the device is 10.0.23.2 (both
/// `xtask/firmware/src/bin/net_agent/main.rs`'s).
const COLLECTOR: &str = "10.0.23.1";
const PORT: u16 = 7411;
/// Below the agent's readings (about 16 KB/s): about 8 KB/s, in bursts
/// of two segments, queueing at most what the agent's socket holds.
const SHAPE: &[&str] = &["rate", "64kbit", "burst", "3000", "limit", "12000"];
const SHAPE_AT: Duration = Duration::from_secs(2);
const STOP_AT: Duration = Duration::from_secs(5);
const RESTART_AFTER: Duration = Duration::from_millis(500);

/// The namespace and the processes started in it: ended and removed when
/// dropped, however the run went.
struct Namespace {
    children: Vec<Child>,
}

impl Namespace {
    fn create() -> Result<Namespace, String> {
        // One left by a run that was killed.
        let _ = Command::new("ip")
            .args(["netns", "del", NAMESPACE])
            .stderr(Stdio::null())
            .status();
        ip(&["netns", "add", NAMESPACE])?;
        let ns = Namespace {
            children: Vec::new(),
        };
        ns.exec(&["ip", "link", "set", "lo", "up"])?;
        ns.exec(&["ip", "tuntap", "add", "dev", TAP, "mode", "tap"])?;
        ns.exec(&["ip", "addr", "add", &format!("{COLLECTOR}/24"), "dev", TAP])?;
        ns.exec(&["ip", "link", "set", TAP, "up"])?;
        Ok(ns)
    }

    /// Run a command in the namespace to its end.
    fn exec(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["netns", "exec", NAMESPACE];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Start a program in the namespace; its index among the children.
    fn spawn(
        &mut self,
        program: &Path,
        args: &[String],
        out: &Path,
        err: &Path,
    ) -> Result<usize, String> {
        let file = |p: &Path| File::create(p).map_err(|e| format!("{}: {e}", p.display()));
        let child = Command::new("ip")
            .args(["netns", "exec", NAMESPACE])
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(file(out)?)
            .stderr(file(err)?)
            .spawn()
            .map_err(|e| format!("{}: {e}", program.display()))?;
        self.children.push(child);
        Ok(self.children.len() - 1)
    }

    /// Shape the device's direction of the link: what QEMU sends arrives
    /// as the TAP's ingress, redirected to an `ifb` whose egress a token
    /// bucket paces.
    fn shape(&self) -> Result<(), String> {
        self.exec(&["ip", "link", "add", IFB, "type", "ifb"])?;
        self.exec(&["ip", "link", "set", IFB, "up"])?;
        self.exec(&[
            "tc", "qdisc", "add", "dev", TAP, "handle", "ffff:", "ingress",
        ])?;
        self.exec(&[
            "tc", "filter", "add", "dev", TAP, "parent", "ffff:", "protocol", "all", "u32",
            "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", IFB,
        ])?;
        let mut tbf = vec!["tc", "qdisc", "add", "dev", IFB, "root", "tbf"];
        tbf.extend_from_slice(SHAPE);
        self.exec(&tbf)
    }

    /// Stop child `i` with SIGTERM (by its own pid: `ip netns exec` execs
    /// the program) and wait for it, at most `within`.
    fn terminate(&mut self, i: usize, within: Duration) -> Result<(), String> {
        let child = &mut self.children[i];
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + within;
        loop {
            match child.try_wait().map_err(|e| e.to_string())? {
                Some(s) if s.success() => return Ok(()),
                Some(s) => return Err(format!("the collector ended with {s} after SIGTERM")),
                None if Instant::now() > deadline => {
                    return Err(format!(
                        "the collector did not stop within {within:?} of SIGTERM"
                    ))
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        for child in &mut self.children {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = Command::new("ip")
            .args(["netns", "del", NAMESPACE])
            .status();
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Wait until the collector says it listens (its first line).
fn listening(out: &Path) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::fs::read_to_string(out).is_ok_and(|s| s.starts_with("listening on")) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!(
        "the collector did not start listening ({})",
        out.display()
    ))
}

pub(crate) fn run(board: &Board, dir: &Path, tool: &Path) -> Result<Footprint, String> {
    let elf = dir.join("net-agent.elf");
    eprintln!(
        "==> run net-agent.elf under {} ({}) into a live dendro-wire listen, in network namespace {NAMESPACE}",
        board.qemu, board.machine
    );
    let mut ns = Namespace::create()?;
    let listen: Vec<String> = [
        "listen",
        "--bind",
        &format!("{COLLECTOR}:{PORT}"),
        "--record",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([dir.display().to_string()])
    .collect();
    let first = ns.spawn(
        tool,
        &listen,
        &dir.join("listen-0.out"),
        &dir.join("listen-0.err"),
    )?;
    listening(&dir.join("listen-0.out"))?;

    let mut qemu_args = qemu::command_line(board, &elf, &["net-agent"]);
    qemu_args.extend([
        "-nic".into(),
        format!("tap,ifname={TAP},script=no,downscript=no,model=stellaris"),
    ]);
    let mut command = Command::new("ip");
    command
        .args(["netns", "exec", NAMESPACE, board.qemu])
        .args(&qemu_args);
    let device = qemu::spawn(board, &mut command, dir)?;
    let started = Instant::now();
    let until = |at: Duration| std::thread::sleep(at.saturating_sub(started.elapsed()));
    until(SHAPE_AT);
    ns.shape()?;
    eprintln!(
        "    link shaped at {:.1} s: tbf {}",
        started.elapsed().as_secs_f64(),
        SHAPE.join(" ")
    );
    until(STOP_AT);
    ns.terminate(first, Duration::from_secs(10))?;
    eprintln!(
        "    collector stopped with SIGTERM at {:.1} s",
        started.elapsed().as_secs_f64()
    );
    std::thread::sleep(RESTART_AFTER);
    let second = ns.spawn(
        tool,
        &listen,
        &dir.join("listen-1.out"),
        &dir.join("listen-1.err"),
    )?;
    listening(&dir.join("listen-1.out"))?;
    eprintln!(
        "    collector started again at {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let report = qemu::finish(device, "net-agent.elf", board.qemu)?;
    ns.terminate(second, Duration::from_secs(10))?;
    drop(ns);

    let net = report.line("net")?;
    let connections = net.get("connections")?;
    if connections < 2 {
        return Err(format!(
            "the agent had {connections} connection(s); the collector's restart makes two"
        ));
    }
    let (mut applied, mut frames_lost) = (0, 0);
    for n in 0..connections {
        let path = dir.join(format!("connection-{n}.dwr"));
        let said = report.line(&format!("connection {n}"))?;
        let checked = qemu::check(tool, &path, true)?;
        qemu::compare(&said.fields, &checked, &format!("net connection {n}"))?;
        let bytes = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
        if bytes != said.get("bytes")? {
            return Err(format!(
                "{} holds {bytes} bytes; the stack saw {} acknowledged",
                path.display(),
                said.get("bytes")?
            ));
        }
        applied += checked["rows_applied"];
        frames_lost += checked["frames_lost"];
        eprintln!(
            "    connection {n}: {bytes} bytes acknowledged and captured, {} frames, {} rows applied, {} gap(s) ({} frame(s) lost), {} byte(s) of a cut frame, as the agent said",
            checked["frames"], checked["rows_applied"], checked["gaps"], checked["frames_lost"], checked["cut_bytes"]
        );
    }
    let stray = dir.join(format!("connection-{connections}.dwr"));
    if stray.exists() {
        return Err(format!(
            "{} was captured but the agent had no such connection",
            stray.display()
        ));
    }
    let counts: BTreeMap<&str, u64> = [
        "rows_observed",
        "rows_dropped",
        "rows_lost_at_disconnect",
        "frames_dropped",
        "rows_repeated_delivered",
        "rows_unacked",
        "rows_unsent",
        "frames_dropped_unseen",
    ]
    .into_iter()
    .map(|k| Ok((k, net.get(k)?)))
    .collect::<Result<_, String>>()?;
    let json: Vec<String> = counts.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    let path = dir.join("counts.json");
    std::fs::write(&path, format!("{{{}}}\n", json.join(",")))
        .map_err(|e| format!("{}: {e}", path.display()))?;

    let delivered = applied - counts["rows_repeated_delivered"];
    let accounted = delivered + counts["rows_dropped"] + counts["rows_lost_at_disconnect"];
    eprintln!(
        "    readings: {} observed = {delivered} applied by the collector (check, rule-3 repeats out) + {} dropped by the machine + {} lost at a disconnect ({} unacknowledged, {} with no connection)",
        counts["rows_observed"], counts["rows_dropped"], counts["rows_lost_at_disconnect"], counts["rows_unacked"], counts["rows_unsent"]
    );
    eprintln!(
        "    frames: {} dropped by the machine = {frames_lost} lost in the captures (check) + {} dropped just before a frame that did not arrive (the machine counts those after a connection's last frame polled as unsent)",
        counts["frames_dropped"], counts["frames_dropped_unseen"]
    );
    if accounted != counts["rows_observed"] {
        return Err(format!(
            "{} readings observed, {accounted} accounted for",
            counts["rows_observed"]
        ));
    }
    if frames_lost + counts["frames_dropped_unseen"] != counts["frames_dropped"] {
        return Err("the captures' frames lost do not match the machine's frames dropped".into());
    }
    if counts["frames_dropped"] == 0 {
        return Err(
            "the shaped link made the machine drop nothing: the run tested no slow link".into(),
        );
    }
    let foot = report.line("footprint")?;
    let mut f = footprint::sections(board, "net-agent", &elf)?;
    f.stack_peak = foot.get("stack_peak")?;
    f.frame_buffer = foot.get("frame_buffer")?;
    f.note = "smoltcp, the Stellaris driver; storage 4 KiB, socket 2 KiB + 256 B, static".into();
    Ok(f)
}
