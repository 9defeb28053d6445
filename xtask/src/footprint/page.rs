//! The book's footprint table, written by the run that measured it.
//!
//! `cargo xtask firmware` renders what it measured as the Markdown table
//! that `book/src/footprint.md` includes, so the figures a reader sees come
//! from the command and not from a hand. Before it writes, it reads the
//! table already committed and fails if a figure there is stale (flash or
//! static RAM off by more than 2%, peak stack by more than 10%, a program
//! missing or gone): the page in the repository and the firmware then
//! cannot drift apart unseen.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::Footprint;
use crate::steps::root;

/// The page the table is written to, included by `book/src/footprint.md`.
fn page() -> PathBuf {
    root().join("book/src/footprint-table.md")
}

/// What a program holds, for the table's reader.
fn holds(name: &str) -> &'static str {
    match name {
        "agent" => "agent (two sources, one indexed)",
        "plain" => "plain (one source, no index)",
        "device" => "device (two indexed sources, real names)",
        "async_device" => "async_device (device, async drain)",
        "decoder" => "decoder (subscriber's rules)",
        "net-agent" => "net-agent (smoltcp and its driver)",
        "embassy_agent" => "embassy_agent (device's two sources, embassy-net)",
        _ => "",
    }
}

/// A figure as the table writes it: `16,556 B`.
fn bytes(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out} B")
}

/// The target's short name, as the table's first column gives it.
fn short(target: &str) -> &str {
    target.split('-').next().unwrap_or(target)
}

/// The Markdown table of what was measured.
fn render(table: &[Footprint]) -> String {
    let mut out = String::from(
        "<!-- Written by `cargo xtask firmware` from what it measured; do not edit. -->\n\n\
         | target | program | flash | static RAM | peak stack | frame buffer |\n\
         |---|---|---:|---:|---:|---:|\n",
    );
    for f in table {
        let stack = match f.stack_peak {
            0 => "not run".to_string(),
            n => bytes(n),
        };
        let buffer = match f.frame_buffer {
            0 => "—".to_string(),
            n => bytes(n),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {stack} | {buffer} |\n",
            short(f.target),
            holds(f.name),
            bytes(f.flash),
            bytes(f.static_ram()),
        ));
    }
    out
}

/// A figure read back from a table cell: `16,556 B` is 16556, anything
/// else none.
fn figure(cell: &str) -> Option<u64> {
    cell.trim()
        .strip_suffix(" B")?
        .replace(',', "")
        .parse()
        .ok()
}

/// The committed table's rows, by (target, program): flash, static RAM,
/// peak stack (none where it was not run).
type Row = (Option<u64>, Option<u64>, Option<u64>);

fn read(text: &str) -> BTreeMap<(String, String), Row> {
    let mut rows = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| target"))
    {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if let [target, program, flash, ram, stack, ..] = cells[..] {
            let name = program.split(' ').next().unwrap_or(program);
            rows.insert(
                (target.to_string(), name.to_string()),
                (figure(flash), figure(ram), figure(stack)),
            );
        }
    }
    rows
}

/// Whether `now` is within `share` of `said`.
fn near(said: Option<u64>, now: u64, share: f64) -> bool {
    match said {
        Some(said) => (now as f64 - said as f64).abs() <= said as f64 * share,
        None => now == 0,
    }
}

/// Check the committed table against what was measured, then write what
/// was measured. A stale table is an error naming each stale figure; the
/// fresh one is written either way, ready to commit.
pub(crate) fn check_and_write(table: &[Footprint]) -> Result<(), String> {
    let path = page();
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let mut said = read(&committed);
    let mut stale = Vec::new();
    for f in table {
        let key = (short(f.target).to_string(), f.name.to_string());
        match said.remove(&key) {
            None => stale.push(format!("{} {}: not in the table", key.0, key.1)),
            Some((flash, ram, stack)) => {
                for (what, said, now, share) in [
                    ("flash", flash, f.flash, 0.02),
                    ("static RAM", ram, f.static_ram(), 0.02),
                    ("peak stack", stack, f.stack_peak, 0.10),
                ] {
                    if !near(said, now, share) {
                        stale.push(format!(
                            "{} {}: {what} {} in the table, {now} measured",
                            key.0,
                            key.1,
                            said.map_or("none".into(), |n| n.to_string())
                        ));
                    }
                }
            }
        }
    }
    stale.extend(
        said.keys()
            .map(|(t, p)| format!("{t} {p}: in the table, not measured")),
    );
    std::fs::write(&path, render(table)).map_err(|e| format!("{}: {e}", path.display()))?;
    match stale.is_empty() {
        true => {
            eprintln!("==> footprint: the book's table (book/src/footprint-table.md) agrees");
            Ok(())
        }
        false => Err(format!(
            "the book's footprint table was stale; it has been rewritten from this run, \
             commit it (and check the prose around it in book/src/footprint.md):\n  {}",
            stale.join("\n  ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_reads_back_as_written() {
        let text = "| thumbv7m | agent (two sources) | 16,556 B | 3,456 B | 928 B | 512 B |\n\
                    | thumbv6m | embassy_agent (x) | 18,820 B | 4,224 B | not run | — |\n";
        let rows = read(text);
        assert_eq!(
            rows[&("thumbv7m".into(), "agent".into())],
            (Some(16_556), Some(3_456), Some(928))
        );
        assert_eq!(rows[&("thumbv6m".into(), "embassy_agent".into())].2, None);
        assert_eq!(bytes(16_556), "16,556 B");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1_234_567), "1,234,567 B");
        assert!(near(Some(1000), 1020, 0.02) && !near(Some(1000), 1021, 0.02));
        assert!(near(None, 0, 0.1) && !near(None, 5, 0.1));
    }
}
