//! The soak's report: a row for each case, what it cost and whether it
//! held its bounds, and the table of them.

use super::listener::Stopped;

/// A case's row of the table.
pub(crate) struct Row {
    case: String,
    peak_rss: u64,
    fds: String,
    honest: String,
    ended: String,
    ok: bool,
}

impl Row {
    /// The row of `case`, whose listener stopped as `listener` says: its
    /// file descriptors before → after (or a dash), the honest agent's
    /// rate, and whether the case held its bounds.
    pub(crate) fn new(
        case: String,
        listener: &Stopped,
        fds: String,
        honest: String,
        ok: bool,
    ) -> Row {
        Row {
            case,
            peak_rss: listener.peak_rss,
            fds,
            honest,
            ended: listener.why(),
            ok,
        }
    }
}

/// The table printed, in Markdown; whether every case held.
pub(crate) fn print(table: &[Row]) -> bool {
    println!("| case | listener peak RSS | listener fds before → after | honest agent | connections ended, and why | held |");
    println!("|---|---:|---|---|---|---|");
    let mut all = true;
    for r in table {
        println!(
            "| {} | {:.1} MiB | {} | {} | {} | {} |",
            r.case,
            r.peak_rss as f64 / (1 << 20) as f64,
            r.fds,
            r.honest,
            r.ended,
            if r.ok { "yes" } else { "NO" }
        );
        all &= r.ok;
    }
    all
}
