//! The book's footprint tables, written by the run that measured them.
//!
//! `cargo xtask firmware` renders what it measured as the Markdown tables
//! the book includes (`book/src/footprint-table.md` for the Rust programs,
//! `book/src/c-footprint-table.md` for the C agent beside the Rust one), so
//! the figures a reader sees come from the command and not from a hand.
//! Before it writes a page, it reads the one committed and fails if a figure
//! there is stale (each cell has its share: 2% for flash and static RAM,
//! 10% for a stack), or a row is missing or gone: the page in the
//! repository and the firmware then cannot drift apart unseen.

use std::collections::BTreeMap;

use super::Footprint;
use crate::steps::root;

/// One cell of a row.
pub(crate) enum Cell {
    /// Bytes measured (none: not measured, "not run"), and how far the
    /// committed figure may be from it, as a share of it.
    Bytes(Option<u64>, f64),
    /// Words, shown and not compared (a ratio, a note).
    Text(String),
}

/// One row: the cells that name it (compared whole), then its cells.
pub(crate) struct Row {
    pub(crate) key: Vec<String>,
    pub(crate) cells: Vec<Cell>,
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
pub(crate) fn bytes(n: u64) -> String {
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

/// The Rust programs' table, `footprint-table.md`.
pub(crate) fn rust_programs(table: &[Footprint]) -> Result<(), String> {
    let rows: Vec<Row> = table
        .iter()
        .map(|f| Row {
            key: vec![short(f.target).into(), holds(f.name).into()],
            cells: vec![
                Cell::Bytes(Some(f.flash), 0.02),
                Cell::Bytes(Some(f.static_ram()), 0.02),
                Cell::Bytes((f.stack_peak > 0).then_some(f.stack_peak), 0.10),
                match f.frame_buffer {
                    0 => Cell::Text("—".into()),
                    n => Cell::Text(bytes(n)),
                },
            ],
        })
        .collect();
    check_and_write(
        "footprint-table.md",
        &[
            "target",
            "program",
            "flash",
            "static RAM",
            "peak stack",
            "frame buffer",
        ],
        &rows,
    )
}

fn render(header: &[&str], rows: &[Row]) -> String {
    let mut out = format!(
        "<!-- Written by `cargo xtask firmware` from what it measured; do not edit. -->\n\n\
         | {} |\n|{}\n",
        header.join(" | "),
        header
            .iter()
            .enumerate()
            .map(|(i, _)| match rows.first().map(|r| r.key.len()) {
                Some(keys) if i >= keys => "---:|",
                _ => "---|",
            })
            .collect::<String>()
    );
    for row in rows {
        let cells = row.cells.iter().map(|c| match c {
            Cell::Bytes(Some(n), _) => bytes(*n),
            Cell::Bytes(None, _) => "not run".into(),
            Cell::Text(t) => t.clone(),
        });
        let all: Vec<String> = row.key.iter().cloned().chain(cells).collect();
        out.push_str(&format!("| {} |\n", all.join(" | ")));
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

/// The committed table's rows, by their key cells: each row's other cells.
fn read(text: &str, keys: usize, header: &str) -> BTreeMap<Vec<String>, Vec<String>> {
    let mut rows = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with(header))
    {
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect();
        if cells.len() > keys {
            let (key, rest) = cells.split_at(keys);
            rows.insert(key.to_vec(), rest.to_vec());
        }
    }
    rows
}

/// Whether `now` is within `share` of `said`.
fn near(said: Option<u64>, now: Option<u64>, share: f64) -> bool {
    match (said, now) {
        (Some(said), Some(now)) => (now as f64 - said as f64).abs() <= said as f64 * share,
        (None, None) => true,
        _ => false,
    }
}

/// Check the committed page `book/src/NAME` against what was measured,
/// then write what was measured. A stale page is an error naming each
/// stale figure; the fresh one is written either way, ready to commit.
pub(crate) fn check_and_write(name: &str, header: &[&str], rows: &[Row]) -> Result<(), String> {
    let path = root().join("book/src").join(name);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let keys = rows.first().map_or(0, |r| r.key.len());
    let mut said = read(&committed, keys, &format!("| {} |", header[0]));
    let mut stale = Vec::new();
    for row in rows {
        let what = row.key.join(" ");
        let Some(before) = said.remove(&row.key) else {
            stale.push(format!("{what}: not in the table"));
            continue;
        };
        for (i, cell) in row.cells.iter().enumerate() {
            let Cell::Bytes(now, share) = cell else {
                continue;
            };
            let was = before.get(i).and_then(|c| figure(c));
            if !near(was, *now, *share) {
                let show = |n: Option<u64>| n.map_or("none".into(), |n| n.to_string());
                stale.push(format!(
                    "{what}: {} {} in the table, {} measured",
                    header[keys + i],
                    show(was),
                    show(*now)
                ));
            }
        }
    }
    stale.extend(
        said.keys()
            .map(|k| format!("{}: in the table, not measured", k.join(" "))),
    );
    std::fs::write(&path, render(header, rows)).map_err(|e| format!("{}: {e}", path.display()))?;
    match stale.is_empty() {
        true => {
            eprintln!("==> footprint: the book's table (book/src/{name}) agrees");
            Ok(())
        }
        false => Err(format!(
            "the book's table book/src/{name} was stale; it has been rewritten from this run, \
             commit it (and check the prose around it):\n  {}",
            stale.join("\n  ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_reads_back_as_written() {
        let rows = [
            Row {
                key: vec!["thumbv7m".into(), "agent (two sources)".into()],
                cells: vec![
                    Cell::Bytes(Some(16_556), 0.02),
                    Cell::Bytes(None, 0.1),
                    Cell::Text("1.62x".into()),
                ],
            },
            Row {
                key: vec!["thumbv6m".into(), "decoder".into()],
                cells: vec![
                    Cell::Bytes(Some(0), 0.02),
                    Cell::Bytes(Some(1_234_567), 0.1),
                    Cell::Text("—".into()),
                ],
            },
        ];
        let header = ["target", "program", "flash", "stack", "ratio"];
        let text = render(&header, &rows);
        assert!(text.contains("|---|---|---:|---:|---:|"), "{text}");
        let back = read(&text, 2, "| target |");
        let agent = &back[&vec!["thumbv7m".to_string(), "agent (two sources)".to_string()]];
        assert_eq!(agent, &["16,556 B", "not run", "1.62x"]);
        assert_eq!(figure(&agent[0]), Some(16_556));
        assert_eq!(figure(&agent[1]), None);
        assert_eq!(bytes(1_234_567), "1,234,567 B");
        assert!(near(Some(1000), Some(1020), 0.02) && !near(Some(1000), Some(1021), 0.02));
        assert!(near(None, None, 0.1) && !near(None, Some(5), 0.1) && !near(Some(5), None, 0.1));
    }
}
