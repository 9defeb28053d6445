//! What a long-running command shows while it runs: a line redrawn in place
//! when stderr is a terminal (indicatif), plain lines at a steady pace
//! otherwise, so a log file or a pipe gets no carriage returns.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress line, asked for no more often than every `redraw`: a caller
/// may offer one as often as it likes.
pub(crate) struct Progress {
    line: Line,
    redraw: Duration,
    offered: Instant,
}

enum Line {
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
    /// A terminal's line redrawn at most every `redraw` if stderr is one,
    /// else a plain line every `every`; nothing if `quiet`.
    pub(crate) fn new(redraw: Duration, every: Duration, quiet: bool) -> Progress {
        Progress {
            line: Line::new(every, quiet),
            redraw,
            offered: Instant::now(),
        }
    }

    /// What is happening now: asked for, and shown, only if `redraw` has
    /// passed since the last time; a plain line only if `every` has too.
    pub(crate) fn show(&mut self, message: impl FnOnce() -> String) {
        if self.offered.elapsed() < self.redraw {
            return;
        }
        self.offered = Instant::now();
        match &mut self.line {
            Line::Terminal(bar) => bar.set_message(message()),
            Line::Lines { every, last } => {
                if last.is_none_or(|at| at.elapsed() >= *every) {
                    *last = Some(Instant::now());
                    eprintln!("  {}", message());
                }
            }
            Line::Quiet => {}
        }
    }

    /// Done: the terminal's line is cleared.
    pub(crate) fn finish(self) {
        if let Line::Terminal(bar) = self.line {
            bar.finish_and_clear();
        }
    }
}

impl Line {
    fn new(every: Duration, quiet: bool) -> Line {
        if quiet {
            return Line::Quiet;
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            return Line::Terminal(bar);
        }
        Line::Lines { every, last: None }
    }
}

/// Whether `-q` asked for nothing but errors: no progress lines.
pub(crate) fn quiet() -> bool {
    log::max_level() < log::LevelFilter::Warn
}
