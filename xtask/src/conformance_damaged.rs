//! The conformance suite's cases from the damaged corpus: the streams
//! `cargo xtask c` runs dump.c and the tool over (dendro-wire-ffi's
//! `streams` example, the same bytes for the same seeds), generated whole
//! and then cut, flipped and lengthened. No one wrote their outcome by
//! hand: it is recorded from the tool, through its adapter, so the other
//! implementations are held to what the tool does with them.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Map, Value};

use crate::c_build::generate_streams;
use crate::conformance_cases::{ACCEPT, CUT_LENGTH, DECODE, DEFINED, DENDRO, REFUSE, SUBSCRIBER};
use crate::conformance_write::{write, Head};
use crate::steps::{fresh_dir, root, target_dir};

/// The corpus's seeds taken: each gives a whole stream, five cuts, three
/// flips and a lengthened frame.
const SEEDS: u32 = 4;

/// The rules of the subscriber's, and those where this project is
/// stricter than the protocol (PROTOCOL §8).
const SUBSCRIBER_RULES: &[&str] = &["UnknownSource", "DuplicateHandshake", "TooManySources"];
const STRICTER_RULES: &[&str] = &[
    "KeysNotAscending",
    "NotACanonicalUuid",
    "DuplicateHandshake",
    "TooManySources",
];

/// The section a refusal by `rule` tests.
fn section(rule: &str) -> &'static str {
    match rule {
        "Truncated" => "§1, §2",
        "NotABool" | "NotAPresenceByte" | "NotUtf8" => "§3",
        "NotAnIndexKind" => "§4.2",
        "UnknownSource" => "rule 1",
        "KeysNotAscending" => "§8.1",
        "NotACanonicalUuid" => "§8.2",
        "DuplicateHandshake" => "§8.4",
        "TooManySources" => "§8.9",
        "CountTooLarge" => "§8.11",
        _ => "§2",
    }
}

/// The rules a reader may refuse with where the tool refused by `rule`:
/// a count too large is the end of the frame to a reader that does not
/// look ahead, and so is a length of 0 (§8.11).
fn rules(rule: &str) -> Vec<&str> {
    match rule {
        "CountTooLarge" | "ZeroLength" => vec![rule, "EndsEarly"],
        _ => vec![rule],
    }
}

/// Write the damaged corpus's cases into `dir`; how many.
pub(crate) fn write_damaged(tool: &Path, dir: &Path) -> Result<usize, String> {
    let streams = target_dir().join("conformance/damaged");
    fresh_dir(&streams)?;
    generate_streams(&streams)?;
    let mut names = vec!["twelve-sources".to_string()];
    for seed in 1..=SEEDS {
        names.push(format!("gen-{seed:02}"));
        names.extend((0..5).map(|k| format!("cut-{seed:02}-{k}")));
        names.extend((0..3).map(|k| format!("flip-{seed:02}-{k}")));
        names.push(format!("long-{seed:02}"));
    }
    for name in &names {
        let path = streams.join(format!("{name}.dwr"));
        let stream = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (frames, end) = recorded(tool, &stream)?;
        let from = format!("dendro-wire-core/ffi/examples/streams.rs, {name}.dwr");
        let mut known = Map::new();
        let (class, section, layer, expect) = if end["end"] == "clean" {
            let expect = json!({"end": "clean", "frames": frames, "tally": end["tally"]});
            (ACCEPT, "§4, §5", DECODE, expect)
        } else {
            let rule = end["rule"].as_str().unwrap_or("Other");
            let offset = end["offset"].as_u64().unwrap_or(0);
            let frame = end["frame"].as_u64().unwrap_or(0);
            if rule == "Truncated" && frame > 0 && (1..4).contains(&(stream.len() as u64 - offset))
            {
                known.insert(DENDRO.into(), CUT_LENGTH.into());
            }
            let class = if STRICTER_RULES.contains(&rule) {
                DEFINED
            } else {
                REFUSE
            };
            let layer = if SUBSCRIBER_RULES.contains(&rule) {
                SUBSCRIBER
            } else {
                DECODE
            };
            let expect = json!({
                "end": "refused", "frames": frames, "rules": rules(rule), "frame": frame,
                "offset": offset,
            });
            (class, section(rule), layer, expect)
        };
        let prefix = match class {
            ACCEPT => "accept",
            REFUSE => "refuse",
            _ => "defined",
        };
        let head = Head {
            name: &format!("{prefix}-damaged-{name}"),
            class,
            section,
            layer,
            about: "a stream of the damaged corpus; its outcome recorded from dendro-wire",
            from: &from,
        };
        write(dir, &head, &stream, expect, known)?;
    }
    Ok(names.len())
}

/// The tool's adapter's lines for `stream`: the frames, and the end line.
fn recorded(tool: &Path, stream: &[u8]) -> Result<(Vec<Value>, Value), String> {
    let adapter = root().join("conformance/adapters/dendro_wire_tool.py");
    let mut child = Command::new("python3")
        .arg(&adapter)
        .arg(tool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", adapter.display()))?;
    let mut stdin = child.stdin.take().expect("piped");
    std::io::Write::write_all(&mut stdin, stream).map_err(|e| e.to_string())?;
    drop(stdin);
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let mut lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|e| format!("the tool's adapter: {l}: {e}")))
        .collect::<Result<_, _>>()?;
    let end = lines.pop().filter(|l| l.get("end").is_some());
    end.map(|end| (lines, end))
        .ok_or_else(|| "the tool's adapter printed no end line".into())
}
