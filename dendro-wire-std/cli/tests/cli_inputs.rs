//! The tool's habits for scripts: several inputs each labelled with the
//! worst exit code, `check --strict`, `--scan` over bytes that are not one
//! stream, no binary to a terminal, a hint when a stream is read from one,
//! and the agent's labels.

use std::path::Path;
use std::process::{Command, Output};

use dendro_wire_test_support::fixtures::testdata;
use dendro_wire_test_support::process::{output, stderr, stdout, Tool};
use dendro_wire_test_support::scratch;

const TOOL: Tool = Tool::new(env!("CARGO_BIN_EXE_dendro-wire"));

fn sample() -> Vec<u8> {
    std::fs::read(testdata("sample.dwr")).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `args` run under a pseudo-terminal (util-linux's `script`), its standard
/// input, output and error all that terminal, which `script` copies to its
/// own standard output.
fn on_a_terminal(args: &[&str]) -> Output {
    let line = std::iter::once(env!("CARGO_BIN_EXE_dendro-wire"))
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    output(
        Command::new("script").args(["-qec", &line, "/dev/null"]),
        b"",
    )
}

/// Run the agent for `intervals` 10 ms intervals into a capture in a
/// fresh directory `dir`, with `extra` arguments; the capture's path.
fn agent_capture(dir: &str, intervals: &str, extra: &[&str]) -> std::path::PathBuf {
    let capture = dendro_wire_test_support::scratch::scratch_in(env!("CARGO_TARGET_TMPDIR"), dir)
        .join("agent.dwr");
    let args = [
        "agent",
        "-o",
        s(&capture),
        "--intervals",
        intervals,
        "--interval",
        "10ms",
    ];
    let out = TOOL.run(args.iter().chain(extra), b"");
    assert!(out.status.success(), "{}", stderr(&out));
    capture
}

#[test]
fn check_of_several_paths_labels_each_and_exits_with_the_worst() {
    let dir = scratch!("inputs-check");
    let good = testdata("sample.dwr");
    let cut = dir.join("cut.dwr");
    std::fs::write(&cut, &sample()[..100]).unwrap();

    let out = TOOL.run(["check", s(&good), s(&good)], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let want = format!("{}:frames           13", s(&good));
    assert_eq!(text.matches(&want).count(), 2, "{text}");
    assert!(text.lines().all(|l| l.starts_with(s(&good))), "{text}");

    // The cut one fails, the good one after it is still checked.
    let out = TOOL.run(["check", s(&cut), s(&good)], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(&want), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "dendro-wire: {}: frame 1 (stream byte 14): ",
            s(&cut)
        )),
        "{err}"
    );
    assert!(
        err.ends_with("dendro-wire: 1 of 2 inputs failed\n"),
        "{err}"
    );

    // JSON: one object per path, each with its path.
    let out = TOOL.run(["check", "--json", s(&good), s(&cut)], b"");
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["path"], s(&good));
    assert_eq!(lines[0]["rows_applied"], 4);
    assert_eq!(lines[1]["path"], s(&cut));
    assert_eq!(lines[1]["frame"], 1);
}

#[test]
fn check_strict_fails_on_gaps_and_skipped_rows_and_says_which() {
    let path = testdata("sample.dwr");
    let out = TOOL.run(["check", s(&path)], b"");
    assert!(out.status.success(), "{}", stderr(&out));

    let out = TOOL.run(["check", "--strict", s(&path)], b"");
    assert_eq!(out.status.code(), Some(1));
    // The summary is still printed, then the reason.
    assert!(stdout(&out).contains("gaps             1"));
    let err = stderr(&out);
    assert!(
        err.ends_with(
            "dendro-wire: --strict: 1 gap(s) (2 frame(s) lost), 1 row(s) skipped, 0 seq \
             regression(s)\n"
        ),
        "{err}"
    );

    // A stream with neither passes --strict.
    let capture = agent_capture("inputs-strict", "3", &[]);
    let out = TOOL.run(["check", "--strict", s(&capture)], b"");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn dump_of_several_paths_labels_every_line() {
    let good = testdata("sample.dwr");
    let out = TOOL.run(["dump", s(&good), "-"], &sample());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 26);
    assert_eq!(text.lines().filter(|l| l.starts_with("-:")).count(), 13);
    assert!(
        text.starts_with(&format!("{}:     1  Handshake", s(&good))),
        "{text}"
    );

    let out = TOOL.run(["dump", "--json", s(&good), s(&good)], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    for line in stdout(&out).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["path"], s(&good), "{line}");
    }
}

#[test]
fn scan_finds_each_stream_in_a_blob_and_reports_the_bytes_between() {
    let one = sample();
    let n = one.len();
    // Junk, two captures back to back, a capture cut after its first
    // frame's first bytes, then junk again.
    let blob = [&b"junk"[..], &one, &one, &one[..50], b"tail"].concat();

    let out = TOOL.run(["check", "--scan"], &blob);
    assert_eq!(out.status.code(), Some(1), "the cut stream broke");
    let heads: Vec<String> = stdout(&out)
        .lines()
        .filter(|l| !l.starts_with("  "))
        .map(String::from)
        .collect();
    let cut_at = 4 + 2 * n;
    assert_eq!(heads[0], "unread 4 byte(s) at byte 0");
    assert_eq!(heads[1], format!("stream at byte 4 ({n} bytes): clean"));
    assert_eq!(
        heads[2],
        format!("stream at byte {} ({n} bytes): clean", 4 + n)
    );
    assert!(
        heads[3].starts_with(&format!("stream at byte {cut_at} (14 bytes): frame 1 ")),
        "{heads:?}"
    );
    assert_eq!(
        heads[4],
        format!("unread 40 byte(s) at byte {}", cut_at + 14)
    );
    assert_eq!(heads.len(), 5, "{heads:?}");
    assert!(stderr(&out).contains("1 of 3 stream(s) found broke a rule"));

    // dump --scan: every frame of both whole streams, between the marks.
    let out = TOOL.run(["dump", "--scan", "--json"], &blob);
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let frames = lines.iter().filter(|v| v.get("frame").is_some()).count();
    assert_eq!(frames, 26);
    let ends: Vec<_> = lines.iter().filter(|v| v["scan"] == "end").collect();
    assert_eq!(ends.len(), 3);
    assert_eq!(
        (ends[0]["offset"].clone(), ends[0]["frames"].clone()),
        (4.into(), 13.into())
    );
    assert!(ends[1]["error"].is_null());
    assert!(ends[2]["error"].is_string());

    // Nothing but junk is no stream at all.
    let out = TOOL.run(["check", "--scan"], b"no stream here");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "unread 14 byte(s) at byte 0\n");
    assert!(stderr(&out).contains("no stream found"), "{}", stderr(&out));

    // Two clean captures back to back pass, --strict too; junk fails
    // --strict only.
    let two = [&one[..], &one].concat();
    let out = TOOL.run(["check", "--scan"], &two);
    assert!(out.status.success(), "{}", stderr(&out));
    let junk = [&b"junk"[..], &two].concat();
    let out = TOOL.run(["check", "--scan"], &junk);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = TOOL.run(["check", "--scan", "--strict"], &two);
    assert_eq!(out.status.code(), Some(1), "the sample has a gap");
    let out = TOOL.run(["check", "--scan", "--strict"], &junk);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--strict: 4 byte(s) in no stream"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn binary_output_to_a_terminal_is_refused_and_a_terminal_input_is_said() {
    for args in [&["agent", "-o", "-", "--intervals", "1"][..], &["encode"]] {
        let out = on_a_terminal(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let said = stdout(&out);
        assert!(
            said.contains("not writing a binary stream to a terminal") && said.contains("--force"),
            "{args:?}: {said}"
        );
    }
    let out = on_a_terminal(&["check"]);
    let said = stdout(&out);
    assert!(
        said.contains(
            "dendro-wire check: reading a stream from standard input, which is a terminal"
        ),
        "{said}"
    );
    // A pipe is no terminal: nothing said.
    let out = TOOL.run(["check", "-"], &sample());
    assert!(out.status.success());
    assert!(!stderr(&out).contains("terminal"), "{}", stderr(&out));
}

#[test]
fn agent_labels_every_source_and_may_set_the_host() {
    let capture = agent_capture(
        "inputs-labels",
        "1",
        &["--label", "agent=b", "--label", "host=box-7"],
    );
    let out = TOOL.run(["dump", "--json", s(&capture)], b"");
    let handshakes: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["frame"] == "handshake")
        .collect();
    assert_eq!(handshakes.len(), 3);
    for (h, source) in handshakes.iter().zip(["cpu", "memory", "network"]) {
        let labels = &h["labels"];
        assert_eq!(labels["agent"], "b", "{h}");
        assert_eq!(labels["host"], "box-7", "{h}");
        assert_eq!(labels["source"], source, "{h}");
    }

    // By default the host is this machine's name.
    let capture = agent_capture("inputs-labels", "1", &[]);
    let out = TOOL.run(["dump", "--json", s(&capture)], b"");
    let first: serde_json::Value =
        serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(first["labels"]["host"], host.trim());

    for bad in ["source=x", "novalue", "=x"] {
        let out = TOOL.run(["agent", "-o", s(&capture), "--label", bad], b"");
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
    }
}

/// `check --json` says one line per input, one it cannot open included, so
/// a script can pair each path with its report.
#[test]
fn check_json_reports_an_input_it_cannot_open_as_one_line() {
    let missing = "no-such-capture.dwr";
    let sample = testdata("sample.dwr");
    let out = TOOL.run(
        [
            "check".as_ref(),
            "--json".as_ref(),
            sample.as_os_str(),
            missing.as_ref(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["path"], missing);
    assert!(
        lines[1]["error"].as_str().unwrap().contains("cannot open"),
        "{lines:?}"
    );
}
