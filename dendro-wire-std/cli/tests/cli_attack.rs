//! `dendro-wire listen` run as a process against peers that aim at what it
//! prints: a standard output nobody reads, and floods of junk connections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dendro_wire_test_support::process::wait;
use dendro_wire_test_support::streams::{honest_stream, ROWS_PER_FRAME};

const TOOL: &str = env!("CARGO_BIN_EXE_dendro-wire");

/// Send `stream` on a new connection to `addr`, end it, and wait until the
/// collector closes its side.
fn send(addr: &str, stream: &[u8]) {
    let mut peer = TcpStream::connect(addr).unwrap();
    peer.write_all(stream).unwrap();
    peer.shutdown(Shutdown::Write).unwrap();
    peer.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let _ = peer.read_to_end(&mut Vec::new());
}

/// `listen` on a free loopback port, with `args`, its stdout piped: where
/// it listens, read off the first line, and the rest of stdout, unread.
fn listen(
    args: &[&str],
) -> (
    std::process::Child,
    String,
    BufReader<std::process::ChildStdout>,
) {
    let mut listen = Command::new(TOOL)
        .args(["listen", "--bind", "127.0.0.1:0", "-q"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(listen.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .trim_end()
        .strip_prefix("listening on ")
        .expect(&first)
        .to_string();
    (listen, addr, stdout)
}

fn terminate(child: &std::process::Child) {
    assert!(Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
}

#[test]
fn listen_exits_on_sigterm_though_nobody_reads_its_stdout() {
    let (mut listen, addr, stdout) = listen(&[]);
    // More lines than a pipe holds.
    let small = honest_stream(1);
    for _ in 0..400 {
        send(&addr, &small);
    }
    let started = Instant::now();
    terminate(&listen);
    assert!(wait(&mut listen).success());
    // The last lines wait five seconds for a reader, then are given up.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(15), "{took:?}");
    drop(stdout);
}

#[test]
fn a_stdout_nobody_reads_never_stops_serving_and_junk_is_summarized() {
    // Every peer here is at one address, and this is not about caps.
    let (mut listen, addr, stdout) = listen(&[
        "--max-connections-per-peer",
        "10000",
        "--max-unopened-connections",
        "10000",
    ]);

    // Nobody reads stdout now. Connections that open a source each get a
    // line, more than a pipe holds; then a flood of junk; then an honest
    // upload far larger than the sockets' buffers, sent whole only if the
    // collector goes on reading.
    const FILLERS: usize = 400;
    const JUNK: usize = 2_000;
    const FRAMES: u64 = 40_000;
    let (tx, landed) = mpsc::channel();
    let attack = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let small = honest_stream(1);
            for _ in 0..FILLERS {
                send(&addr, &small);
            }
            for _ in 0..JUNK {
                let mut peer = TcpStream::connect(&addr).unwrap();
                let _ = peer.write_all(b"GET / HTTP/1.1\r\n\r\n");
            }
            let big = honest_stream(FRAMES);
            let started = Instant::now();
            send(&addr, &big);
            let _ = tx.send(started.elapsed());
        })
    };
    let took = landed.recv_timeout(Duration::from_secs(60));
    // Read stdout again, whatever happened, so the listener can exit.
    let (lines_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let _ = lines_tx.send(line.unwrap());
        }
    });
    terminate(&listen);
    assert!(wait(&mut listen).success());
    let took = took.expect("the connections were not all served within 60 s");
    attack.join().unwrap();
    let lines: Vec<String> = lines.try_iter().collect();

    let honest = format!("connection {} from ", FILLERS + JUNK);
    let line = lines
        .iter()
        .find(|l| l.starts_with(&honest))
        .unwrap_or_else(|| panic!("no line for the honest upload (took {took:?})"));
    let rows = format!("rows {} applied 0 skipped", FRAMES * ROWS_PER_FRAME);
    assert!(line.contains(&rows), "{line}");
    assert!(line.ends_with("ended cleanly"), "{line}");
    // Every filler got its line; the junk a handful.
    let fillers = lines
        .iter()
        .filter(|l| l.contains(&format!("rows {ROWS_PER_FRAME} applied")))
        .count();
    assert_eq!(fillers, FILLERS);
    let summaries: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("without opening a source: "))
        .collect();
    assert!(!summaries.is_empty(), "{lines:?}");
    assert!(lines.len() < FILLERS + 100, "{} lines", lines.len());
    let summarized: usize = summaries
        .iter()
        .map(|l| l.split(' ').next().unwrap().parse::<usize>().unwrap())
        .sum();
    let junk_lines = lines.len() - FILLERS - 2 - summaries.len();
    assert_eq!(summarized + junk_lines, JUNK, "{summaries:?}");
    assert!(
        summaries[0].contains(" not a dendro replication stream"),
        "{summaries:?}"
    );
}
