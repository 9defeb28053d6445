//! The Wireshark dissector on a live capture: `dendro-wire listen` on
//! loopback records each connection's bytes while dumpcap captures the
//! port, an agent and a replay of the committed sample publish to it, and
//! tshark's frames of each TCP stream must equal `dump --json` of the
//! bytes the collector recorded for that connection.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::steps::{output, root};
use crate::tshark::{checked, compare, compare_stream, dissected, dumped};

/// Children ended (SIGTERM, then SIGKILL) when dropped, however the run
/// went.
struct Children(Vec<Child>);

impl Children {
    /// Stop child `i` with SIGTERM, by its own pid, and wait for it.
    fn terminate(&mut self, i: usize) -> Result<(), String> {
        let child = &mut self.0[i];
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("a child did not stop within 10 s of SIGTERM".into())
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

fn spawn(program: &Path, args: &[&str], dir: &Path, name: &str) -> Result<Child, String> {
    let file = |ext: &str| {
        let path = dir.join(format!("{name}.{ext}"));
        File::create(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file("out")?)
        .stderr(file("err")?)
        .spawn()
        .map_err(|e| format!("{}: {e}", program.display()))
}

/// Wait until `path` holds `text`.
fn wait_for(path: &Path, text: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::fs::read_to_string(path).is_ok_and(|s| s.contains(text)) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("{} never said {text:?}", path.display()))
}

/// Why a live capture cannot run here, if it cannot: capturing needs
/// root (CI's user) or a dumpcap given CAP_NET_RAW, which is not asked for.
fn cannot_capture() -> Option<String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if !root {
        return Some("capturing on loopback needs root, and this is not root".into());
    }
    match Command::new("dumpcap").arg("-v").output() {
        Err(e) => Some(format!("dumpcap: {e}")),
        Ok(_) => None,
    }
}

pub(crate) fn run(tool: &Path, lua: &Path, dir: &Path) -> Result<(), String> {
    eprintln!("==> the Wireshark dissector on a live capture on loopback");
    if let Some(why) = cannot_capture() {
        eprintln!("    skipped: {why}");
        return Ok(());
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("a free port: {e}"))?
        .port();
    let addr = format!("127.0.0.1:{port}");
    let capture = dir.join("live.pcapng");
    let records = dir.join("records");
    let capture_arg = capture.display().to_string();
    let records_arg = records.display().to_string();
    let filter = format!("tcp port {port}");
    let mut children = Children(Vec::new());
    children.0.push(spawn(
        Path::new("dumpcap"),
        &["-q", "-i", "lo", "-f", &filter, "-w", &capture_arg],
        dir,
        "dumpcap",
    )?);
    wait_for(&dir.join("dumpcap.err"), "Capturing on")?;
    children.0.push(spawn(
        tool,
        &["listen", "--bind", &addr, "--record", &records_arg],
        dir,
        "listen",
    )?);
    wait_for(&dir.join("listen.out"), "listening on")?;
    let sample = root().join("testdata/sample.dwr");
    output(
        "dendro-wire agent",
        Command::new(tool).args([
            "agent",
            "--connect",
            &addr,
            "--interval",
            "20ms",
            "--intervals",
            "25",
        ]),
    )?;
    output(
        "dendro-wire replay testdata/sample.dwr",
        Command::new(tool)
            .arg("replay")
            .arg(&sample)
            .args(["--connect", &addr]),
    )?;
    // What the collector has read is on the wire and in the capture's
    // buffer; give dumpcap a moment to write it.
    std::thread::sleep(Duration::from_millis(300));
    children.terminate(1)?;
    children.terminate(0)?;
    drop(children);

    let shown = dissected(lua, &capture, Some(port))?;
    if shown.len() != 2 {
        return Err(format!(
            "{}: the dissector found frames in {} TCP stream(s), not the agent's and the replay's",
            capture.display(),
            shown.len()
        ));
    }
    for (n, (tcp, stream)) in shown.iter().enumerate() {
        let record = records.join(format!("connection-{n}.dwr"));
        let want = dumped(tool, &record)?;
        compare_stream(
            &format!("live TCP stream {tcp} against {}", record.display()),
            stream,
            &want,
            &checked(tool, &record)?,
        )?;
        eprintln!(
            "    TCP stream {tcp}: {} frames, as dump --json of connection-{n}.dwr",
            want.len()
        );
    }
    let sample_frames = dumped(tool, &sample)?;
    compare(
        "the replayed sample against testdata/sample.dwr",
        &shown[1].1.frames,
        &sample_frames,
    )
}
