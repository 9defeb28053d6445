//! What a long-running command shows while it runs: a line redrawn in place
//! when stderr is a terminal (indicatif), plain lines at a steady pace
//! otherwise, so a log file or a pipe gets no carriage returns.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress line.
pub(crate) enum Progress {
    /// Redrawn in place on a terminal.
    Terminal(ProgressBar),
    /// A plain line on stderr every `every`.
    Lines {
        every: Duration,
        last: Option<Instant>,
    },
    /// Nothing (`-q`).
    Quiet,
}

impl Progress {
    /// A terminal's line if stderr is one, else a plain line every `every`;
    /// nothing if `quiet`.
    pub(crate) fn new(every: Duration, quiet: bool) -> Progress {
        if quiet {
            return Progress::Quiet;
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            return Progress::Terminal(bar);
        }
        Progress::Lines { every, last: None }
    }

    /// What is happening now; a plain line only if `every` has passed since
    /// the last one.
    pub(crate) fn show(&mut self, message: impl FnOnce() -> String) {
        match self {
            Progress::Terminal(bar) => bar.set_message(message()),
            Progress::Lines { every, last } => {
                if last.is_none_or(|at| at.elapsed() >= *every) {
                    *last = Some(Instant::now());
                    eprintln!("  {}", message());
                }
            }
            Progress::Quiet => {}
        }
    }

    /// Done: the terminal's line is cleared.
    pub(crate) fn finish(self) {
        if let Progress::Terminal(bar) = self {
            bar.finish_and_clear();
        }
    }
}
