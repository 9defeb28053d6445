//! The conformance suite's adapter for dendro 0.6.1 (`conformance/README.md`
//! states the contract): a stream on standard input, read with dendro's own
//! `FrameReader`, each frame it yields printed as a JSON line in the form of
//! PROTOCOL §10, then one line for how the stream ended.
//!
//! Only dendro's replication codec is built (no SQLite, arrow or parquet),
//! so the subscriber's rules are not applied: the end line says
//! `"subscriber": false` and carries no tally. dendro skips a frame of a
//! kind it does not know inside `next_frame`; the adapter reports each
//! frame it skipped from the bytes the reader stepped over, so frames are
//! numbered and placed as the stream has them. dendro's errors are
//! sentences; the adapter names the suite's rule each one means.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::rc::Rc;

use dendro::replicate::wire::{FrameReader, LENGTH_PREFIX_BYTES};
use dendro::replicate::{Frame, IndexKind};
use serde_json::{json, Value};

/// The preamble's bytes: the magic and the version.
const PREAMBLE_BYTES: u64 = 14;

fn main() {
    let mut stream = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut stream) {
        eprintln!("conformance-dendro: reading standard input: {e}");
        std::process::exit(2);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in read(&stream) {
        writeln!(out, "{line}").expect("standard output");
    }
    out.flush().expect("standard output");
}

/// A reader of the stream that counts the bytes taken from it: where
/// dendro's reader stands.
struct Counted<'a> {
    bytes: &'a [u8],
    taken: Rc<Cell<u64>>,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.bytes.read(buf)?;
        self.taken.set(self.taken.get() + n as u64);
        Ok(n)
    }
}

/// Every line the contract asks for, the end line last.
fn read(stream: &[u8]) -> Vec<Value> {
    let taken = Rc::new(Cell::new(0));
    let counted = Counted {
        bytes: stream,
        taken: Rc::clone(&taken),
    };
    let mut reader = match FrameReader::new(counted) {
        Ok(reader) => reader,
        Err(e) => return vec![refused(&e.to_string(), 0, 0)],
    };
    let mut lines = Vec::new();
    let (mut number, mut at) = (0u64, PREAMBLE_BYTES);
    loop {
        let skipped = reader.skipped();
        let next = reader.next_frame();
        // The frames dendro stepped over in that call, each an unknown kind.
        for _ in skipped..reader.skipped() {
            let (line, len) = unknown(&stream[at as usize..]);
            lines.push(line);
            number += 1;
            at += len;
        }
        match next {
            Ok(Some(frame)) => {
                number += 1;
                at = taken.get();
                lines.push(frame_json(&frame));
            }
            Ok(None) => {
                lines.push(json!({"end": "clean", "subscriber": false, "tally": null}));
                return lines;
            }
            Err(e) => {
                lines.push(refused(&e.to_string(), number + 1, at));
                return lines;
            }
        }
    }
}

/// The end line of a refused stream: the suite's rule for dendro's words.
fn refused(message: &str, frame: u64, offset: u64) -> Value {
    json!({
        "end": "refused",
        "subscriber": false,
        "rule": rule(message),
        "frame": frame,
        "offset": offset,
        "message": message,
    })
}

/// dendro 0.6.1's sentences (`replicate::wire`), as the suite's rules.
fn rule(message: &str) -> &'static str {
    const RULES: &[(&str, &str)] = &[
        ("not a dendro replication stream", "NotADendroStream"),
        ("replication protocol version", "UnsupportedVersion"),
        ("failed to read the replication preamble", "Truncated"),
        ("failed to read a replication frame length", "Truncated"),
        ("-byte replication frame", "Truncated"),
        ("-byte limit", "FrameTooLarge"),
        ("it ends early", "EndsEarly"),
        ("a length overflowed", "EndsEarly"),
        ("is not a presence byte", "NotAPresenceByte"),
        ("is not a boolean", "NotABool"),
        ("is not an index kind", "NotAnIndexKind"),
        ("not UTF-8", "NotUtf8"),
        ("trailing byte(s)", "TrailingBytes"),
    ];
    RULES
        .iter()
        .find(|(words, _)| message.contains(words))
        .map_or("Other", |(_, rule)| rule)
}

/// The unknown frame at the start of `bytes`, as PROTOCOL §10 writes it,
/// and its length with its prefix.
fn unknown(bytes: &[u8]) -> (Value, u64) {
    let mut len = [0u8; LENGTH_PREFIX_BYTES];
    len.copy_from_slice(&bytes[..LENGTH_PREFIX_BYTES]);
    let len = u32::from_le_bytes(len) as usize;
    let frame = &bytes[LENGTH_PREFIX_BYTES..LENGTH_PREFIX_BYTES + len];
    let line = json!({"frame": "unknown", "kind": frame[0], "payload": hex(&frame[1..])});
    (line, (LENGTH_PREFIX_BYTES + len) as u64)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn map(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), v.as_str().into()))
            .collect(),
    )
}

/// One of dendro's frames in the JSON Lines form of PROTOCOL §10.
fn frame_json(frame: &Frame) -> Value {
    match frame {
        Frame::Handshake {
            source,
            uuid,
            labels,
            metadata,
            clock_anchor_wall_ns,
            complete,
        } => json!({
            "frame": "handshake", "source": source, "uuid": uuid, "labels": map(labels),
            "metadata": map(metadata), "clock_anchor_wall_ns": clock_anchor_wall_ns,
            "complete": complete,
        }),
        Frame::Index {
            source,
            stream,
            ts,
            kind,
            state,
            blob,
        } => json!({
            "frame": "index", "source": source, "stream": stream, "ts": ts,
            "kind": if matches!(kind, IndexKind::Full) { "full" } else { "delta" },
            "state": [state.0, state.1], "blob": hex(blob),
        }),
        Frame::Rows {
            source,
            seq,
            index_state,
            rows,
        } => {
            let rows: Vec<Value> = rows
                .iter()
                .map(|r| {
                    json!({"stream": r.stream, "ts": r.ts, "wall_offset": r.wall_offset,
                           "row": hex(&r.row)})
                })
                .collect();
            json!({
                "frame": "rows", "source": source, "seq": seq,
                "index_state": [index_state.0, index_state.1], "rows": rows,
            })
        }
        Frame::Segment {
            source,
            stream,
            meta,
            bytes,
            caller_index,
        } => json!({
            "frame": "segment", "source": source, "stream": stream, "rows": meta.rows,
            "first_ts": meta.first_ts, "last_ts": meta.last_ts, "bytes": hex(bytes),
            "caller_index": caller_index.as_deref().map(hex),
        }),
        Frame::ClockOffset {
            source,
            ts,
            offset_ns,
        } => json!({"frame": "clock_offset", "source": source, "ts": ts, "offset_ns": offset_ns}),
        Frame::SourceUpdate {
            source,
            ts,
            labels,
            metadata,
        } => json!({
            "frame": "source_update", "source": source, "ts": ts, "labels": map(labels),
            "metadata": map(metadata),
        }),
        // A variant of a later dendro: this one has no other.
        other => json!({"frame": "unsupported", "debug": format!("{other:?}")}),
    }
}
