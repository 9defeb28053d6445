//! The Wireshark dissector (`tools/wireshark/dendro.lua`) run by tshark,
//! and what it shows read back as a list of frames per TCP stream, beside
//! the same list read from `dendro-wire dump --json`: kind, source, seq and
//! row count, frame for frame.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::json::json_number;
use crate::steps::root;

/// What both sides say of one frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) kind: u64,
    pub(crate) source: Option<u64>,
    pub(crate) seq: Option<u64>,
    pub(crate) rows: Option<u64>,
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kind {}", self.kind)?;
        for (name, v) in [
            ("source", self.source),
            ("seq", self.seq),
            ("rows", self.rows),
        ] {
            if let Some(v) = v {
                write!(f, " {name} {v}")?;
            }
        }
        Ok(())
    }
}

/// One TCP stream as the dissector shows it: its frames, and what its
/// seq analysis counted, as `dendro-wire check --json` names them.
#[derive(Default)]
pub(crate) struct Shown {
    pub(crate) frames: Vec<Frame>,
    pub(crate) counts: Counts,
}

/// Seq gaps, the frames they lost, seq regressions, unknown kinds.
#[derive(Default, Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    gaps: u64,
    frames_lost: u64,
    seq_regressions: u64,
    unknown_skipped: u64,
}

/// The dissector shipped in the repository, or the one
/// `DENDRO_WIRESHARK_LUA` names (a changed copy, to see these checks fail).
pub(crate) fn dissector() -> PathBuf {
    match std::env::var_os("DENDRO_WIRESHARK_LUA") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => root().join("tools/wireshark/dendro.lua"),
    }
}

/// tshark with `lua` loaded reading `capture`: on TCP port `port` only
/// (its heuristic off), or with no port, by its heuristic only.
pub(crate) fn tshark(lua: &Path, capture: &Path, port: Option<u16>) -> Command {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n")
        .arg("-X")
        .arg(format!("lua_script:{}", lua.display()))
        .args(["-o", &format!("dendro.port:{}", port.unwrap_or(0))]);
    if port.is_some() {
        cmd.args(["--disable-heuristic", "dendro_tcp"]);
    }
    cmd.arg("-r").arg(capture);
    cmd
}

/// Run tshark for what it prints. tshark goes on without a script that
/// fails to load, so a word of Lua on its stderr fails the run too.
fn run_tshark(step: &str, cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{step}: could not start: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || stderr.contains("Lua") {
        return Err(format!("{step} failed ({}): {stderr}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Each TCP stream's frames as the dissector shows them, by tshark's
/// stream number: the order the connections opened.
pub(crate) fn dissected(
    lua: &Path,
    capture: &Path,
    port: Option<u16>,
) -> Result<Vec<(u64, Shown)>, String> {
    let text = run_tshark(
        "tshark",
        tshark(lua, capture, port).args([
            "-T",
            "fields",
            "-E",
            "separator=/t",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=,",
            "-e",
            "tcp.stream",
            "-e",
            "dendro.kind",
            "-e",
            "dendro.source",
            "-e",
            "dendro.seq",
            "-e",
            "dendro.rows",
            "-e",
            "_ws.expert.message",
            "-e",
            "dendro.seq.lost",
            "-e",
            "dendro.seq.regression",
        ]),
    )?;
    let mut streams: Vec<(u64, Shown)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split('\t').collect();
        // A Lua error, or an exception of a read past the bytes there,
        // shows as an expert info of Wireshark's own.
        let experts = cols.get(5).copied().unwrap_or("");
        if failed(experts) {
            return Err(format!(
                "the dissector failed on packet {}: {experts}",
                n + 1
            ));
        }
        let list = |i: usize| -> Result<Vec<u64>, String> {
            let col = cols.get(i).copied().unwrap_or("");
            col.split(',')
                .filter(|v| !v.is_empty())
                .map(|v| {
                    v.parse()
                        .map_err(|_| format!("packet {}: {v:?} is not a number", n + 1))
                })
                .collect()
        };
        let kinds = list(1)?;
        if kinds.is_empty() {
            continue;
        }
        let (mut sources, mut seqs, mut rows) = (
            list(2)?.into_iter(),
            list(3)?.into_iter(),
            list(4)?.into_iter(),
        );
        let stream = list(0)?.first().copied().unwrap_or(u64::MAX);
        let at = match streams.iter().position(|(s, _)| *s == stream) {
            Some(at) => at,
            None => {
                streams.push((stream, Shown::default()));
                streams.len() - 1
            }
        };
        let counts = &mut streams[at].1.counts;
        for lost in list(6)? {
            counts.gaps += 1;
            counts.frames_lost += lost;
        }
        counts.seq_regressions += list(7)?.len() as u64;
        for kind in kinds {
            let known = (1..=6).contains(&kind);
            let frame = Frame {
                kind,
                source: if known { sources.next() } else { None },
                seq: if kind == 3 { seqs.next() } else { None },
                rows: if kind == 3 { rows.next() } else { None },
            };
            streams[at].1.counts.unknown_skipped += u64::from(!known);
            streams[at].1.frames.push(frame);
        }
    }
    streams.sort_by_key(|(s, _)| *s);
    Ok(streams)
}

/// A stream's frames as `dendro-wire dump --json` prints them.
pub(crate) fn dumped(tool: &Path, stream: &Path) -> Result<Vec<Frame>, String> {
    let out = crate::steps::output(
        &format!("dendro-wire dump --json {}", stream.display()),
        Command::new(tool).args(["dump", "--json"]).arg(stream),
    )?;
    let text = String::from_utf8_lossy(&out);
    text.lines()
        .map(|line| {
            let name = line
                .strip_prefix("{\"frame\":\"")
                .and_then(|rest| rest.split('"').next())
                .ok_or_else(|| format!("dump --json printed {line:?}"))?;
            let kind = match name {
                "handshake" => 1,
                "index" => 2,
                "rows" => 3,
                "segment" => 4,
                "clock_offset" => 5,
                "source_update" => 6,
                _ => json_number(line, "kind").ok_or_else(|| format!("no kind in {line:?}"))?,
            };
            let rows = line.matches("\"wall_offset\":").count() as u64;
            Ok(Frame {
                kind,
                source: json_number(line, "source").filter(|_| kind <= 6),
                seq: json_number(line, "seq").filter(|_| kind == 3),
                rows: (kind == 3).then_some(rows),
            })
        })
        .collect()
}

/// What `dendro-wire check --json` counts of a stream's seq and kinds.
pub(crate) fn checked(tool: &Path, stream: &Path) -> Result<Counts, String> {
    let out = crate::steps::output(
        &format!("dendro-wire check --json {}", stream.display()),
        Command::new(tool).args(["check", "--json"]).arg(stream),
    )?;
    let text = String::from_utf8_lossy(&out);
    let n = |key: &str| json_number(&text, key).ok_or_else(|| format!("check --json: no {key}"));
    Ok(Counts {
        gaps: n("gaps")?,
        frames_lost: n("frames_lost")?,
        seq_regressions: n("seq_regressions")?,
        unknown_skipped: n("unknown_skipped")?,
    })
}

/// Fail unless the dissector's frames and counts of a stream are dump's
/// and check's.
pub(crate) fn compare_stream(
    what: &str,
    shown: &Shown,
    frames: &[Frame],
    counts: &Counts,
) -> Result<(), String> {
    compare(what, &shown.frames, frames)?;
    if shown.counts != *counts {
        return Err(format!(
            "{what}: the dissector counts {:?}, dendro-wire check {counts:?}",
            shown.counts
        ));
    }
    Ok(())
}

/// Fail unless the two lists are the same, naming the first difference.
pub(crate) fn compare(what: &str, shown: &[Frame], dumped: &[Frame]) -> Result<(), String> {
    if let Some(i) = (0..shown.len().max(dumped.len())).find(|&i| shown.get(i) != dumped.get(i)) {
        let say = |f: Option<&Frame>| f.map_or("nothing".to_string(), Frame::to_string);
        return Err(format!(
            "{what}: the dissector shows {} frames, dump --json {}; frame {i} is {} in the \
             dissector and {} in dump --json",
            shown.len(),
            dumped.len(),
            say(shown.get(i)),
            say(dumped.get(i)),
        ));
    }
    Ok(())
}

/// Every expert info the dissector adds, with `-2` so a frame the capture
/// ends inside is seen: the messages, one a line.
pub(crate) fn experts(lua: &Path, capture: &Path, port: Option<u16>) -> Result<String, String> {
    run_tshark(
        "tshark -2, expert infos",
        tshark(lua, capture, port).args([
            "-2",
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=\n",
            "-e",
            "_ws.expert.message",
        ]),
    )
    .and_then(|text| match failed(&text) {
        true => Err(format!("the dissector failed: {text}")),
        false => Ok(text),
    })
}

/// Whether expert infos say the dissector failed: a Lua error, or an
/// exception of a read past the bytes there.
fn failed(experts: &str) -> bool {
    experts.contains("Lua Error") || experts.contains("Exception occurred")
}
