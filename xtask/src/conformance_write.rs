//! The conformance suite's cases written out: each a stream
//! (`conformance/cases/NAME.dwr`) and its expected outcome
//! (`NAME.json`), from the spec's cases (`conformance_cases.rs`) and the
//! corpora the tests already have. The same tool writes the same files.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Map, Value};

use crate::conformance_cases::{
    spec_cases, Case, Damage, Expect, ACCEPT, DECODE, DEFINED, DENDRO, PREAMBLE, REFUSE, SUBSCRIBER,
};
use crate::steps::root;

/// The golden frames (dendro-wire-core/tests/common, byte for byte what
/// dendro 0.6.1 writes) and the hostile ones (a frame each, refused), as
/// the fuzz targets' committed corpus holds them.
const CORPUS: &str = "fuzz/tests/__fuzz__/decode_arbitrary/corpus";

/// How many hostile samples the corpus holds.
const HOSTILE: usize = 27;

/// The rule hostile sample `n` (from 1) breaks: the first 24 are each
/// kind's frame with a byte too many, then with a byte too few; then a
/// bool of 2, a uuid not canonical, labels out of order.
fn hostile_rule(n: usize) -> &'static str {
    match n {
        25 => "NotABool",
        26 => "NotACanonicalUuid",
        27 => "KeysNotAscending",
        n if n % 2 == 1 => "TrailingBytes",
        _ => "EndsEarly",
    }
}

/// A frame kind's name in the JSON Lines form, and its section.
fn kind(byte: u8) -> (&'static str, &'static str) {
    match byte {
        1 => ("handshake", "§4.1"),
        2 => ("index", "§4.2"),
        3 => ("rows", "§4.3"),
        4 => ("segment", "§4.4"),
        5 => ("clock_offset", "§4.5"),
        6 => ("source_update", "§4.6"),
        _ => ("unknown", "§7"),
    }
}

/// Write the spec's cases and the corpora's into `dir` (which exists and
/// is empty); how many.
pub(crate) fn write_cases(tool: &Path, dir: &Path) -> Result<usize, String> {
    let mut written = 0;
    for case in spec_cases() {
        let stream = stream(tool, &case)?;
        let expect = expect_spec(tool, &case, &stream)?;
        let mut known = Map::new();
        if let Some(why) = case.dendro {
            known.insert(DENDRO.into(), why.into());
        }
        let head = Head {
            name: case.name,
            class: case.class,
            section: case.section,
            layer: case.layer,
            about: case.about,
            from: "spec",
        };
        write(dir, &head, &stream, expect, known)?;
        written += 1;
    }
    written += corpus(tool, dir)?;
    Ok(written)
}

/// What names and places a case.
pub(crate) struct Head<'a> {
    pub(crate) name: &'a str,
    pub(crate) class: &'a str,
    pub(crate) section: &'a str,
    pub(crate) layer: &'a str,
    pub(crate) about: &'a str,
    pub(crate) from: &'a str,
}

pub(crate) fn write(
    dir: &Path,
    head: &Head,
    stream: &[u8],
    expect: Value,
    known: Map<String, Value>,
) -> Result<(), String> {
    let file = format!("{}.dwr", head.name);
    let case = Map::from_iter([
        ("name".to_string(), json!(head.name)),
        ("class".into(), json!(head.class)),
        ("section".into(), json!(head.section)),
        ("layer".into(), json!(head.layer)),
        ("about".into(), json!(head.about)),
        ("from".into(), json!(head.from)),
        ("stream".into(), json!(file)),
        ("known_divergences".into(), Value::Object(known)),
        ("expect".into(), expect),
    ]);
    let text = render(&case);
    std::fs::write(dir.join(&file), stream).map_err(|e| format!("{file}: {e}"))?;
    std::fs::write(dir.join(format!("{}.json", head.name)), text).map_err(|e| e.to_string())
}

/// A case as its file holds it: a key a line, and a frame a line, so a
/// case reads (and diffs) as the JSON Lines of its stream do.
fn render(case: &Map<String, Value>) -> String {
    let mut lines = Vec::new();
    for (key, value) in case {
        let expect = match value {
            Value::Object(expect) if key == "expect" => expect,
            _ => {
                lines.push(format!("  \"{key}\": {value}"));
                continue;
            }
        };
        let inner: Vec<String> = expect
            .iter()
            .map(|(k, v)| match v {
                Value::Array(frames) if k == "frames" && !frames.is_empty() => {
                    let frames: Vec<String> = frames.iter().map(|f| format!("      {f}")).collect();
                    format!("    \"frames\": [\n{}\n    ]", frames.join(",\n"))
                }
                _ => format!("    \"{k}\": {v}"),
            })
            .collect();
        lines.push(format!("  \"{key}\": {{\n{}\n  }}", inner.join(",\n")));
    }
    format!("{{\n{}\n}}\n", lines.join(",\n"))
}

/// The case's bytes: its lines encoded by the tool, then damaged.
fn stream(tool: &Path, case: &Case) -> Result<Vec<u8>, String> {
    if let Damage::Raw(bytes) = &case.damage {
        return Ok(bytes.clone());
    }
    let mut jsonl = case.lines.join("\n");
    jsonl.push('\n');
    let mut bytes = tool_output(tool, &["encode", "-"], jsonl.as_bytes())?;
    let start = |bytes: &[u8], frame: usize| frame_start(bytes, frame as u64) as usize;
    match &case.damage {
        Damage::None | Damage::Raw(_) => {}
        Damage::Set { frame, at, byte } => {
            let at = start(&bytes, *frame) + at;
            bytes[at] = *byte;
        }
        Damage::Grow { frame, bytes: more } => {
            let at = start(&bytes, *frame);
            resize(&mut bytes, at, more);
        }
        Damage::Shrink { frame } => {
            let at = start(&bytes, *frame);
            let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) - 1;
            bytes[at..at + 4].copy_from_slice(&len.to_le_bytes());
            bytes.remove(at + 4 + len as usize);
        }
        Damage::Cut(n) => bytes.truncate(bytes.len() - n),
        Damage::Append(more) => bytes.extend_from_slice(more),
    }
    Ok(bytes)
}

/// Grow the frame at `at` by `more`, its length with it.
fn resize(bytes: &mut Vec<u8>, at: usize, more: &[u8]) {
    let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let end = at + 4 + len as usize;
    bytes.splice(end..end, more.iter().copied());
    let len = len + more.len() as u32;
    bytes[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Where frame `frame` (from 1) starts, by the lengths before it; 0 for
/// the preamble.
fn frame_start(bytes: &[u8], frame: u64) -> u64 {
    if frame == 0 {
        return 0;
    }
    let mut at = PREAMBLE.len();
    for _ in 1..frame {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("a whole length"));
        at += 4 + len as usize;
    }
    at as u64
}

/// A spec case's expected outcome: its lines (and the tally the tool
/// counts, which must have the case's counts), or its refusal.
fn expect_spec(tool: &Path, case: &Case, stream: &[u8]) -> Result<Value, String> {
    let lines: Vec<Value> = case
        .lines
        .iter()
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {l}: {e}", case.name)))
        .collect::<Result<_, _>>()?;
    match case.expect {
        Expect::Accept(counts) => {
            let read = dumped(tool, stream)?;
            if read != lines {
                return Err(format!(
                    "{}: dendro-wire dump --json reads other frames than the case's lines: {read:?}",
                    case.name
                ));
            }
            let tally = checked(tool, stream)?;
            for (key, want) in counts {
                if tally.get(key).and_then(Value::as_u64) != Some(*want) {
                    return Err(format!("{}: {key} is not {want} in {tally}", case.name));
                }
            }
            Ok(json!({"end": "clean", "frames": lines, "tally": tally}))
        }
        Expect::Refuse(rules, frame) => Ok(json!({
            "end": "refused",
            "frames": lines[..(frame as usize).saturating_sub(1).min(lines.len())],
            "rules": rules,
            "frame": frame,
            "offset": frame_start(stream, frame),
        })),
    }
}

/// The corpus cases: the golden frames, each after a handshake for its
/// source; the hostile frames; the committed sample stream.
fn corpus(tool: &Path, dir: &Path) -> Result<usize, String> {
    let mut written = 0;
    let folder = root().join(CORPUS);
    for n in 1.. {
        let path = folder.join(format!("sample-frame-{n:02}"));
        let Ok(frame) = std::fs::read(&path) else {
            break;
        };
        let (name, section) = kind(frame[4]);
        let alone = [PREAMBLE, &frame].concat();
        let first = dumped(tool, &alone)?.into_iter().next().unwrap_or_default();
        let source = first.get("source").and_then(Value::as_u64);
        let stream = match source.filter(|_| name != "handshake") {
            Some(source) => {
                let hs = format!(
                    r#"{{"frame":"handshake","source":{source},"uuid":null,"labels":{{}},"metadata":{{}},"clock_anchor_wall_ns":0,"complete":false}}"#
                );
                let opened = tool_output(tool, &["encode", "-"], hs.as_bytes())?;
                [opened, frame].concat()
            }
            None => alone,
        };
        let expect = json!({
            "end": "clean", "frames": dumped(tool, &stream)?, "tally": checked(tool, &stream)?,
        });
        let head = Head {
            name: &format!("accept-golden-{n:02}-{name}"),
            class: ACCEPT,
            section,
            layer: DECODE,
            about: &format!("a golden {name} frame, byte for byte as dendro 0.6.1 writes it"),
            from: &format!("{CORPUS}/sample-frame-{n:02}"),
        };
        write(dir, &head, &stream, expect, Map::new())?;
        written += 1;
    }
    for n in 1..=HOSTILE {
        let rule = hostile_rule(n);
        let from = format!("{CORPUS}/sample-refused-{n:02}");
        let frame = std::fs::read(root().join(&from)).map_err(|e| format!("{from}: {e}"))?;
        let (name, section) = kind(frame[4]);
        let defined = matches!(rule, "NotACanonicalUuid" | "KeysNotAscending");
        let head = Head {
            name: &format!(
                "{}-hostile-{n:02}-{name}",
                if defined { "defined" } else { "refuse" }
            ),
            class: if defined { DEFINED } else { REFUSE },
            section: &format!("§2, {section}{}", if defined { ", §8" } else { "" }),
            layer: DECODE,
            about: &format!("a hostile {name} frame, refused by {rule}"),
            from: &from,
        };
        let expect = json!({
            "end": "refused", "frames": [], "rules": [rule], "frame": 1, "offset": PREAMBLE.len(),
        });
        write(dir, &head, &[PREAMBLE, &frame].concat(), expect, Map::new())?;
    }
    written += HOSTILE;
    let from = "testdata/sample.dwr";
    let sample = std::fs::read(root().join(from)).map_err(|e| format!("{from}: {e}"))?;
    let expect = json!({
        "end": "clean", "frames": dumped(tool, &sample)?, "tally": checked(tool, &sample)?,
    });
    let head = Head {
        name: "accept-sample",
        class: ACCEPT,
        section: "§4, §5",
        layer: SUBSCRIBER,
        about: "the committed sample: two sources, every kind, a gap and skipped rows",
        from,
    };
    write(dir, &head, &sample, expect, Map::new())?;
    Ok(written + 1)
}

/// `dendro-wire dump --json` of `stream`, its frames.
fn dumped(tool: &Path, stream: &[u8]) -> Result<Vec<Value>, String> {
    let out = tool_output(tool, &["dump", "--json", "-"], stream)?;
    String::from_utf8_lossy(&out)
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|e| format!("dump --json: {l}: {e}")))
        .collect()
}

/// `dendro-wire check --json` of a stream it accepts: the tally.
fn checked(tool: &Path, stream: &[u8]) -> Result<Value, String> {
    let out = tool_output(tool, &["check", "--json", "-"], stream)?;
    serde_json::from_slice(&out).map_err(|e| format!("check --json: {e}"))
}

/// The tool run on `input`: its stdout, or an error if it failed.
fn tool_output(tool: &Path, args: &[&str], input: &[u8]) -> Result<Vec<u8>, String> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", tool.display()))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = feeder.join();
    if !out.status.success() {
        return Err(format!(
            "dendro-wire {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out.stdout)
}
