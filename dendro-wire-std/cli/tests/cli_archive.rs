//! `listen --archive` and `demo --archive` when the archive cannot take
//! what is handed to it: a filesystem that fills (a small tmpfs, mounted
//! when run as root), a file size limit (`prlimit`, no root needed), an
//! archive removed while it is written. Each run is read as a user reads
//! it: the exit code, the summary on stdout, the lines on stderr; and the
//! rows the summary counts as committed are the rows dendro reads back.
#![cfg(feature = "archive")]

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use dendro_wire_std::FrameWriter;
use dendro_wire_test_support::fixtures::handshake;
use dendro_wire_test_support::process::{number_after, wait};
use dendro_wire_test_support::scratch;
use dendro_wire_test_support::streams::write_rows_frame;

const TOOL: &str = env!("CARGO_BIN_EXE_dendro-wire");

/// A publisher's stream: its handshake (no encoder declared), then
/// `frames` Rows frames of `rows` rows of 32 bytes.
fn stream(frames: u64, rows: u64) -> Vec<u8> {
    let mut w = FrameWriter::new(Vec::new()).unwrap();
    w.write_frame(&handshake(0)).unwrap();
    for seq in 0..frames {
        write_rows_frame(&mut w, seq, rows, &[7u8; 32]);
    }
    w.into_inner()
}

/// What a user sees of a run.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// `wrap` (a command and its arguments that run what follows them, or
/// nothing) running `command`.
fn command(wrap: &[OsString], command: &[&OsStr]) -> Command {
    let mut argv: Vec<&OsStr> = wrap.iter().map(OsString::as_os_str).collect();
    argv.push(TOOL.as_ref());
    argv.extend(command);
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..]);
    cmd
}

/// `listen --archive archive` (run through `wrap`) served one connection
/// for each of `streams`, each sending its stream a frame at a time with
/// `pause` after each; then its exit and output.
fn listen(wrap: &[OsString], archive: &Path, streams: &[Vec<u8>], pause: Duration) -> Run {
    let n = streams.len().to_string();
    let args: [&OsStr; 7] = [
        "listen".as_ref(),
        "--bind".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--connections".as_ref(),
        n.as_ref(),
        "--archive".as_ref(),
        archive.as_os_str(),
    ];
    let mut child = command(wrap, &args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {wrap:?} {TOOL} listen: {e}"));
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    let senders: Vec<_> = streams
        .iter()
        .cloned()
        .map(|bytes| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                // The listener stops serving once a commit fails: what it
                // does not read then is not the test's concern.
                let Ok(mut s) = TcpStream::connect(&addr) else {
                    return;
                };
                let mut at = 0;
                while at < bytes.len() {
                    let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
                    let end = (at + 4 + len).min(bytes.len());
                    if s.write_all(&bytes[at..end]).is_err() {
                        return;
                    }
                    at = end;
                    std::thread::sleep(pause);
                }
            })
        })
        .collect();
    for sender in senders {
        sender.join().unwrap();
    }
    let status = wait(&mut child);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    Run {
        code: status.code(),
        stdout: rest,
        stderr: stderr.join().unwrap(),
    }
}

/// The run failed as a user must see it: exit 1; a summary whose rows
/// committed are the rows dendro reads back, that counts the rows not
/// committed and says why; and `why` on stderr, with dendro's own warning.
/// The rows handed over, and of them those not committed.
fn failed_honestly(run: &Run, why: &str, sent: u64) -> (u64, u64) {
    assert_eq!(run.code, Some(1), "{run}");
    let committed = number_after(&run.stdout, "committed ");
    let read_back = number_after(&run.stdout, "source(s), ");
    assert_eq!(
        committed, read_back,
        "committed is what dendro holds: {run}"
    );
    let failed = &run.stdout[run.stdout.find("FAILED").unwrap_or_else(|| panic!("{run}"))..];
    let not_committed = number_after(failed, "FAILED");
    let handed_over = number_after(failed, "of the ");
    assert!(
        failed.contains("rows handed over were not committed") && failed.contains(why),
        "{run}"
    );
    assert!(not_committed > 0, "{run}");
    assert_eq!(committed + not_committed, handed_over, "{run}");
    assert!(handed_over <= sent, "{run}");
    assert!(
        run.stdout
            .contains(&format!("{not_committed} not committed;")),
        "{run}"
    );
    for said in [
        "dendro-wire: dendro: a tick was dropped after retries",
        "dendro-wire: the archive's writer path stopped",
        why,
    ] {
        assert!(run.stderr.contains(said), "{said:?} on stderr: {run}");
    }
    (handed_over, not_committed)
}

/// One connection of a few large batches: 2,000 Rows frames of 200 rows.
fn large_batches() -> (Vec<Vec<u8>>, u64) {
    (vec![stream(2_000, 200)], 400_000)
}

/// A fleet's small frames: 16 connections of 1,500 frames of 4 rows.
fn small_frames() -> (Vec<Vec<u8>>, u64) {
    ((0..16).map(|_| stream(1_500, 4)).collect(), 16 * 6_000)
}

/// A tmpfs of `size` mounted on `dir` for the life of the value, or why
/// not (not root); a root that cannot mount one fails the test.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: PathBuf, size: &str) -> Result<Tmpfs, String> {
        let uid = Command::new("id").arg("-u").output().unwrap();
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return Err("not run as root, so no tmpfs can be mounted".into());
        }
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success(), "mount a tmpfs on {}", dir.display());
        Ok(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_filesystem_that_fills_fails_the_commit_and_the_exit() {
    for (name, (streams, sent), pause) in [
        ("large", large_batches(), Duration::ZERO),
        ("small", small_frames(), Duration::from_micros(200)),
    ] {
        let fs = match Tmpfs::mount(scratch!(&format!("full-{name}")), "3m") {
            Ok(fs) => fs,
            Err(why) => {
                println!("skipped: {why}");
                return;
            }
        };
        let run = listen(&[], &fs.0.join("a.dendro"), &streams, pause);
        failed_honestly(&run, "database or disk is full", sent);
    }
}

/// `prlimit` running what follows with files limited to `bytes`, and
/// SIGXFSZ ignored (so a write past it fails, rather than killing).
fn file_size_limit(bytes: u64) -> Vec<OsString> {
    ["prlimit", &format!("--fsize={bytes}"), "--", "sh", "-c"]
        .into_iter()
        .map(OsString::from)
        .chain([
            OsString::from("trap '' XFSZ; exec \"$@\""),
            OsString::from("sh"),
        ])
        .collect()
}

#[test]
fn a_file_size_limit_fails_the_commit_and_the_exit() {
    for (name, (streams, sent), pause) in [
        ("large", large_batches(), Duration::ZERO),
        ("small", small_frames(), Duration::from_micros(200)),
    ] {
        let dir = scratch!(&format!("fsize-{name}"));
        let run = listen(
            &file_size_limit(2 << 20),
            &dir.join("a.dendro"),
            &streams,
            pause,
        );
        failed_honestly(&run, "disk I/O error", sent);
    }
}

#[test]
fn the_demo_fails_when_its_archive_cannot_be_written() {
    let dir = scratch!("fsize-demo");
    let archive = dir.join("a.dendro");
    let args: [&OsStr; 5] = [
        "demo".as_ref(),
        "--seconds".as_ref(),
        "2".as_ref(),
        "--archive".as_ref(),
        archive.as_os_str(),
    ];
    let out = dendro_wire_test_support::process::output(
        &mut command(&file_size_limit(1 << 20), &args),
        b"",
    );
    let run = Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    failed_honestly(&run, "disk I/O error", u64::MAX);
}

#[test]
fn an_archive_removed_while_it_is_written_fails_the_exit() {
    let dir = scratch!("removed");
    let archive = dir.join("a.dendro");
    let remover = {
        let archive = archive.clone();
        std::thread::spawn(move || {
            while !archive.exists() {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(300));
            std::fs::remove_file(&archive).unwrap();
        })
    };
    let (streams, sent) = small_frames();
    let run = listen(&[], &archive, &streams, Duration::from_micros(500));
    remover.join().unwrap();
    assert_eq!(run.code, Some(1), "{run}");
    assert!(run.stdout.contains("cannot be read back"), "{run}");
    let failed = &run.stdout[run.stdout.find("FAILED").unwrap_or_else(|| panic!("{run}"))..];
    assert!(failed.contains("is gone"), "{run}");
    assert!(number_after(failed, "of the ") <= sent, "{run}");
    assert!(
        run.stderr.contains("the archive's writer path stopped") && run.stderr.contains("is gone"),
        "{run}"
    );
}

#[test]
fn an_archive_that_cannot_be_opened_is_refused_before_listening() {
    let dir = scratch!("unopenable");
    // A directory where the archive's file would be.
    let archive = dir.join("a.dendro");
    std::fs::create_dir(&archive).unwrap();
    let out = dendro_wire_test_support::process::output(
        Command::new(TOOL).args([
            "listen".as_ref(),
            "--bind".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--archive".as_ref(),
            archive.as_os_str(),
        ]),
        b"",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot open {}", archive.display())),
        "{stderr}"
    );
}
