//! The `dendro-wire` tool itself, run as a process.

use std::path::Path;
use std::process::Command;

use dendro::replicate::wire::{encode_frame, write_preamble, FrameReader as DReader};
use dendro_wire_test_support::fixtures::testdata;
use dendro_wire_test_support::process::{stderr, stdout, Tool};
use dendro_wire_test_support::{gen, scratch};

const TOOL: Tool = Tool::new(env!("CARGO_BIN_EXE_dendro-wire"));

#[test]
fn encode_writes_the_committed_sample_and_dendro_reads_it() {
    let jsonl = std::fs::read(testdata("sample.jsonl")).unwrap();
    let out = TOOL.run(["encode"], &jsonl);
    assert!(out.status.success(), "{}", stderr(&out));
    let sample = std::fs::read(testdata("sample.dwr")).unwrap();
    assert_eq!(out.stdout, sample);

    let mut reader = DReader::new(&sample[..]).unwrap();
    let mut n = 0;
    while reader.next_frame().unwrap().is_some() {
        n += 1;
    }
    assert_eq!((n, reader.skipped()), (12, 1));
}

#[test]
fn dump_json_gives_back_the_lines_encode_took() {
    let path = testdata("sample.dwr");
    let out = TOOL.run(["dump", "--json", path.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let jsonl = std::fs::read_to_string(testdata("sample.jsonl")).unwrap();
    assert_eq!(stdout(&out), jsonl);
}

#[test]
fn dump_prints_one_line_per_frame() {
    let sample = std::fs::read(testdata("sample.dwr")).unwrap();
    let out = TOOL.run(["dump", "-"], &sample);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 13);
    assert!(lines[2].contains("Index source=0 stream=\"cpu/usage\" ts=1000 kind=Full"));
    assert!(lines[3].contains("Rows source=0 seq=0"), "{}", lines[3]);
    assert!(lines[3].contains("rows=2 row_bytes=32"), "{}", lines[3]);
    assert!(
        lines[10].contains("unknown kind=42 payload=2B"),
        "{}",
        lines[10]
    );
    assert!(
        lines[12].contains("bytes=10B caller_index=absent"),
        "{}",
        lines[12]
    );
}

#[test]
fn dump_of_a_cut_stream_prints_the_frames_before_then_fails() {
    let sample = std::fs::read(testdata("sample.dwr")).unwrap();
    let out = TOOL.run(["dump", "--json"], &sample[..sample.len() - 5]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out).lines().count(), 12);
    let err = stderr(&out);
    assert!(
        err.starts_with("dendro-wire: frame 13 (stream byte "),
        "{err}"
    );
    assert!(err.contains("the stream ends inside this frame"), "{err}");
}

#[test]
fn check_summarizes_with_exactly_the_documented_keys() {
    let path = testdata("sample.dwr");
    let out = TOOL.run(["check", "--json", path.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    // Counted by hand from testdata/sample.jsonl: source 0's last Rows frame
    // declares the Full state after a Delta moved it (skipped, rule 9);
    // source 1 jumps from seq 40 to 43 (one gap, two frames lost).
    let want = serde_json::json!({
        "frames": 13, "sources": 2, "index_entries": 2, "rows_applied": 4,
        "rows_skipped": 1, "segments": 1, "clock_offsets": 1, "source_updates": 1,
        "unknown_skipped": 1, "gaps": 1, "frames_lost": 2, "seq_regressions": 0
    });
    assert_eq!(got, want);

    let out = TOOL.run(["check", path.to_str().unwrap()], b"");
    assert!(
        stdout(&out).contains("rows_skipped     1"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn check_with_cut_ok_checks_a_cut_capture_up_to_the_cut_frame() {
    let sample = std::fs::read(testdata("sample.dwr")).unwrap();
    let cut = &sample[..sample.len() - 5];
    // Without the flag a cut stream is refused, as before.
    let out = TOOL.run(["check", "--json"], cut);
    assert_eq!(out.status.code(), Some(1));
    let out = TOOL.run(["check", "--json", "--cut-ok"], cut);
    assert!(out.status.success(), "{}", stderr(&out));
    let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    // The sample's 13th and last frame is the one cut: the twelve before it,
    // and the bytes of the 13th that are there.
    let whole = TOOL.run(["check", "--json"], &sample[..]);
    let whole: serde_json::Value = serde_json::from_str(&stdout(&whole)).unwrap();
    assert_eq!(got["frames"], 12);
    assert!(got["cut_bytes"].as_u64().unwrap() > 0);
    assert!(got["rows_applied"].as_u64() <= whole["rows_applied"].as_u64());
    // A whole stream has nothing cut.
    let out = TOOL.run(["check", "--json", "--cut-ok"], &sample[..]);
    let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(got["cut_bytes"], 0);
    assert_eq!(got["frames"], 13);
    // A cut preamble is still no stream.
    let out = TOOL.run(["check", "--cut-ok"], &sample[..7]);
    assert_eq!(out.status.code(), Some(1));
}

/// A stream of the given JSON Lines, through the tool's own encoder.
fn encoded(jsonl: &str) -> Vec<u8> {
    let out = TOOL.run(["encode"], jsonl.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    out.stdout
}

const HANDSHAKE_0: &str = r#"{"frame":"handshake","source":0,"uuid":null,"labels":{},"metadata":{},"clock_anchor_wall_ns":0,"complete":false}"#;

#[test]
fn check_refuses_a_frame_for_an_unknown_source_and_a_second_handshake() {
    let stream = encoded(&format!(
        "{HANDSHAKE_0}\n{}\n",
        r#"{"frame":"clock_offset","source":5,"ts":0,"offset_ns":0}"#
    ));
    let out = TOOL.run(["check"], &stream);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("frame 2 (stream byte"), "{err}");
    assert!(err.contains("names source 5"), "{err}");
    assert!(err.contains("rule 1"), "{err}");

    let stream = encoded(&format!("{HANDSHAKE_0}\n{HANDSHAKE_0}\n"));
    let out = TOOL.run(["check"], &stream);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("second handshake for source 0"));
}

#[test]
fn check_refuses_a_malformed_stream() {
    let out = TOOL.run(["check"], b"dendro-repl\0\x01\x00\x00\x00\x00\x00");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("a frame length of 0"),
        "{}",
        stderr(&out)
    );
    let out = TOOL.run(["check"], b"not a stream at all");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not a dendro replication stream"));
}

#[test]
fn encode_names_the_bad_line_and_leaves_no_file_behind() {
    let dir = scratch!("encode-bad");
    let cases = [
        ("{not json", "line 2"),
        (
            r#"{"frame":"rows","source":0}"#,
            "line 2: missing field `seq`",
        ),
        (
            r#"{"frame":"clock_offset","source":-1,"ts":0,"offset_ns":0}"#,
            "line 2: invalid value",
        ),
        (
            r#"{"frame":"unknown","kind":9,"payload":"0g"}"#,
            "line 2: bad hex",
        ),
        (
            r#"{"frame":"unknown","kind":3,"payload":""}"#,
            "line 2: cannot encode Rows frame",
        ),
        (
            r#"{"frame":"handshake","source":1,"uuid":"NOT-A-UUID","labels":{},"metadata":{},"clock_anchor_wall_ns":0,"complete":false}"#,
            "line 2: cannot encode Handshake frame: `uuid`",
        ),
        ("", "line 2: a blank line"),
    ];
    let target = dir.join("out.dwr");
    let input = dir.join("in.jsonl");
    let encode = || {
        let args = [
            "encode",
            input.to_str().unwrap(),
            "-o",
            target.to_str().unwrap(),
        ];
        TOOL.run(args, b"")
    };
    for (bad, want) in cases {
        std::fs::write(&input, format!("{HANDSHAKE_0}\n{bad}\n{HANDSHAKE_0}\n")).unwrap();
        let out = encode();
        assert_eq!(out.status.code(), Some(1), "{bad}");
        assert!(stderr(&out).contains(want), "{bad}: {}", stderr(&out));
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["in.jsonl"], "{bad}: left behind");
    }
    // A good run writes the file whole.
    std::fs::write(&input, format!("{HANDSHAKE_0}\n")).unwrap();
    let out = encode();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(&target).unwrap(), encoded(HANDSHAKE_0));
}

#[test]
fn usage_errors_exit_2_and_every_command_has_help() {
    for args in [
        &[][..],
        &["frob"],
        &["dump", "--frob"],
        // A flag for a Unix socket given with TCP.
        &["listen", "--bind", "127.0.0.1:0", "--allow-uid", "0"],
        &["listen", "--bind", "127.0.0.1:0", "--unix-mode", "660"],
        // A capture cap with nothing recorded.
        &["listen", "--bind", "127.0.0.1:0", "--record-max", "1MiB"],
        &["encode", "a", "b"],
    ] {
        let out = TOOL.run(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("Usage: dendro-wire"), "{args:?}");
    }
    for cmd in ["dump", "encode", "check"] {
        let out = TOOL.run([cmd, "--help"], b"");
        assert!(out.status.success());
        assert!(stdout(&out).contains("Usage: dendro-wire"), "{cmd}");
    }
    let out = TOOL.run(["dump", "/nonexistent/stream"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot open /nonexistent/stream"));
}

#[test]
fn generated_frames_encode_as_dendro_does_and_dump_back_identically() {
    let mut g = gen::Gen::new(0x1234_5678_9abc_def1);
    let mut dendro_bytes = Vec::new();
    write_preamble(&mut dendro_bytes).unwrap();
    for _ in 0..300 {
        encode_frame(&g.frame(), &mut dendro_bytes).unwrap();
    }
    // dendro's bytes to JSON, and that JSON back to bytes: both dendro's.
    let out = TOOL.run(["dump", "--json"], &dendro_bytes);
    assert!(out.status.success(), "{}", stderr(&out));
    let jsonl = stdout(&out);
    assert_eq!(jsonl.lines().count(), 300);
    let out = TOOL.run(["encode"], jsonl.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, dendro_bytes, "encode writes dendro's bytes");
}

#[cfg(unix)]
#[test]
fn encode_output_writes_in_place_as_the_system_opens_the_path_and_refuses_a_dangling_link() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    let dir = scratch!("encode-output");
    let input = dir.join("in.jsonl");
    std::fs::write(&input, format!("{HANDSHAKE_0}\n")).unwrap();
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, format!("{HANDSHAKE_0}\n{{not json\n")).unwrap();
    let want = encoded(HANDSHAKE_0);
    let encode_to = |input: &Path, out: &Path| {
        TOOL.run(
            [
                "encode",
                input.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ],
            b"",
        )
    };
    let names = || {
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };

    // A regular file is written in place: its inode, mode and owner kept,
    // and its hard links see the new stream.
    let file = dir.join("file.dwr");
    std::fs::write(&file, b"an older and longer stream than the new one").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let other_name = dir.join("hard-link.dwr");
    std::fs::hard_link(&file, &other_name).unwrap();
    // Only a privileged test run can give it another owner to keep.
    let owner = match std::os::unix::fs::chown(&file, Some(4242), Some(4242)) {
        Ok(()) => 4242,
        Err(_) => std::fs::metadata(&file).unwrap().uid(),
    };
    let inode = std::fs::metadata(&file).unwrap().ino();
    assert!(encode_to(&input, &file).status.success());
    assert_eq!(std::fs::read(&file).unwrap(), want);
    assert_eq!(std::fs::read(&other_name).unwrap(), want);
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.ino(), inode, "replaced, not written in place");
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    assert_eq!((meta.uid(), meta.nlink()), (owner, 2));

    // Bad input leaves it, and the directory, as they were.
    let before = names();
    let out = encode_to(&bad, &file);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&file).unwrap(), want);
    assert_eq!(names(), before, "left behind");

    // A link is followed, by the system, to its file, and stays a link; a
    // dangling one is refused, and what it names is not made.
    let target = dir.join("target.dwr");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.join("link.dwr");
    std::os::unix::fs::symlink("target.dwr", &link).unwrap();
    assert!(encode_to(&input, &link).status.success());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), want);
    let dangling = dir.join("dangling.dwr");
    std::os::unix::fs::symlink("made.dwr", &dangling).unwrap();
    let out = encode_to(&input, &dangling);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is a symbolic link to made.dwr, which does not exist"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.join("made.dwr").exists());
    // Bad input through a link leaves its target whole.
    std::fs::write(&target, b"kept").unwrap();
    assert_eq!(encode_to(&bad, &link).status.code(), Some(1));
    assert_eq!(std::fs::read(&target).unwrap(), b"kept");

    // A new file is made where nothing is.
    let new = dir.join("new.dwr");
    assert!(encode_to(&input, &new).status.success());
    assert_eq!(std::fs::read(&new).unwrap(), want);

    // A FIFO is written in place and stays a FIFO.
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    assert!(encode_to(&input, &fifo).status.success());
    assert_eq!(reader.join().unwrap(), want);
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    // A device too.
    assert!(encode_to(&input, Path::new("/dev/null")).status.success());
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());

    // `-` is standard output.
    let out = TOOL.run(["encode", input.to_str().unwrap(), "-o", "-"], b"");
    assert_eq!(out.stdout, want);
    assert!(!Path::new("-").exists());
}

#[test]
fn addresses_are_checked_as_usage() {
    for args in [
        &["replay", "--connect", "nonsense"][..],
        &["replay", "--connect", "host:99999"],
        &["listen", "--bind", ":7070"],
        &["agent", "--connect", "::1:7070"],
    ] {
        let out = TOOL.run(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("is not host:port"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn check_json_reports_a_broken_stream_as_json() {
    let mut stream = encoded(HANDSHAKE_0);
    stream.extend_from_slice(&[1, 0]); // two bytes of a length prefix
    let out = TOOL.run(["check", "--json"], &stream);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["frame"], 2);
    assert_eq!(report["offset"], stream.len() as u64 - 2);
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("the stream ends inside this frame"),
        "{report}"
    );
    assert!(stderr(&out).contains("the stream ends inside this frame"));
}

#[test]
fn completions_and_one_line_summaries() {
    let out = TOOL.run(["completions", "bash"], b"");
    assert!(out.status.success());
    let script = stdout(&out);
    assert!(
        script.contains("dendro-wire") && script.contains("listen"),
        "{script}"
    );
    let help = stdout(&TOOL.run(["--help"], b""));
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(commands.len() >= 8, "{help}");
    for line in commands {
        // A command, and its summary on the same line.
        assert!(line.split_whitespace().count() >= 2, "{line:?}");
    }
}

/// A flag whose feature this build lacks is named with the feature, not
/// met with "unexpected argument".
#[cfg(not(feature = "archive"))]
#[test]
fn archive_flags_without_the_feature_say_which_feature() {
    for args in [
        &["listen", "--bind", "127.0.0.1:0", "--archive", "a.dendro"][..],
        &["demo", "--archive", "a.dendro"],
    ] {
        let out = TOOL.run(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}: a usage error");
        let err = stderr(&out);
        assert!(err.contains("without the `archive` feature"), "{err}");
    }
}
