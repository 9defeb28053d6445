//! The book's page of figures, `book/src/performance-table.md`: written by
//! a full run, and the machine-speed guard that holds a run to the last
//! one's.

/// The book's page of figures (`book/src/performance.md` includes it),
/// written by the full run that measured them, so the figures a reader
/// sees are a run's and not a hand's.
pub(crate) const PAGE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../book/src/performance-table.md"
);

pub(crate) fn write_page(table: &str, reference: &str) {
    let page = format!(
        "<!-- Written by `cargo xtask bench-report` (a full run) from what it measured; do \
         not edit. -->\n\n{table}\n{reference}\n"
    );
    match std::fs::write(PAGE, page) {
        Ok(()) => eprintln!("bench-report: wrote the table into {PAGE}"),
        Err(e) => eprintln!("bench-report: could not write {PAGE}: {e}"),
    }
}

/// The publisher machine's share of the reference writer, held to the
/// book's figure (the page the last full run wrote): a drop by more than a
/// third of it is an error. Its sentence "Against the reference writer,
/// ... the publisher machine X" gives X.
pub(crate) fn machine_guard(share: f64) -> Result<(), String> {
    let readme = std::fs::read_to_string(PAGE).map_err(|e| format!("{PAGE}: {e}"))?;
    let said = readme
        .split_once("Against the reference writer, in the same rounds: the publisher machine")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|x| x.trim_end_matches(',').parse::<f64>().ok())
        .ok_or("book/src/performance-table.md names no share of the reference writer for the publisher machine")?;
    match share >= said * 2.0 / 3.0 {
        true => Ok(()),
        false => Err(format!(
            "the publisher machine ran at {share:.2} of the reference writer, more than a third \
             below the book's {said:.2} (the last full run): find the change that cost it, or \
             say why in book/src/performance.md"
        )),
    }
}
