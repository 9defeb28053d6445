//! `dendro-wire check`: read a stream, apply the subscriber's rules with the
//! core's state machine, and summarize.

use std::io::Write;
use std::path::PathBuf;

use dendro_wire_core::{Admitted, Frame, Subscriber};
use dendro_wire_std::FrameReader;
use serde::Serialize;

use crate::{open_input, stdout, Failure};

/// The sources one stream may open. The table is fixed in size, as the core
/// keeps it; a stream past it is refused by name.
const MAX_SOURCES: usize = 4096;

/// The summary; `--json` prints exactly these keys.
#[derive(Default, Serialize)]
struct Summary {
    frames: u64,
    sources: u64,
    index_entries: u64,
    rows_applied: u64,
    rows_skipped: u64,
    segments: u64,
    clock_offsets: u64,
    source_updates: u64,
    unknown_skipped: u64,
    gaps: u64,
    frames_lost: u64,
    seq_regressions: u64,
}

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The stream to read; `-` or nothing for standard input.
    path: Option<PathBuf>,
    /// One JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(Args { path, json }: Args) -> Result<(), Failure> {
    let mut reader = FrameReader::new(open_input(path.as_deref())?)?;
    let mut subscriber = Box::new(Subscriber::<MAX_SOURCES>::new());
    let mut s = Summary::default();
    while let Some((frame, at)) = reader.next_frame_at()? {
        let admitted = subscriber
            .admit(&frame)
            .map_err(|e| Failure(format!("{at}: {e}")))?;
        match (admitted, frame) {
            (Admitted::Opened { .. }, _) => s.sources += 1,
            (Admitted::Index { .. }, _) => s.index_entries += 1,
            (Admitted::Rows(v), Frame::Rows(rows)) => {
                let n = rows.rows.len() as u64;
                match v.skip {
                    None => s.rows_applied += n,
                    Some(_) => s.rows_skipped += n,
                }
                s.gaps += u64::from(v.lost > 0);
                s.frames_lost += v.lost;
                s.seq_regressions += u64::from(v.regression);
            }
            (Admitted::Apply { .. }, Frame::Segment(_)) => s.segments += 1,
            (Admitted::Apply { .. }, Frame::ClockOffset(_)) => s.clock_offsets += 1,
            (Admitted::Apply { .. }, Frame::SourceUpdate(_)) => s.source_updates += 1,
            _ => {}
        }
    }
    s.frames = reader.frames();
    s.unknown_skipped = reader.unknown();

    let mut out = stdout();
    if json {
        serde_json::to_writer(&mut out, &s)?;
        writeln!(out)?;
    } else {
        let table = serde_json::to_value(&s)?;
        let serde_json::Value::Object(fields) = table else {
            unreachable!("a struct serializes as an object")
        };
        // serde_json's map is sorted; print in the struct's order instead.
        for key in FIELDS {
            writeln!(out, "{key:<16} {}", fields[*key])?;
        }
    }
    out.flush()?;
    Ok(())
}

const FIELDS: &[&str] = &[
    "frames",
    "sources",
    "index_entries",
    "rows_applied",
    "rows_skipped",
    "segments",
    "clock_offsets",
    "source_updates",
    "unknown_skipped",
    "gaps",
    "frames_lost",
    "seq_regressions",
];
