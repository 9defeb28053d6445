//! The lines `listen` prints as connections end, through a [`LineQueue`]
//! so that a standard output nobody reads never stops serving: a line for
//! every connection that opened a source, and for those that did not (a
//! refused or junk peer) one line, then at most a summary a second.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dendro_wire_std::receive::Ended;
use dendro_wire_std::LineQueue;

/// How often ends of connections that opened no source are summarized.
const EVERY: Duration = Duration::from_secs(1);

/// Lines for ended connections, written by a thread of their own.
pub(crate) struct EndLines {
    out: LineQueue,
    held: Mutex<Held>,
}

/// Ends of connections that opened no source, not yet said.
#[derive(Default)]
struct Held {
    /// When such an end was last said, whole or summarized.
    said: Option<Instant>,
    count: u64,
    /// How many ended for each reason.
    reasons: BTreeMap<&'static str, u64>,
}

impl EndLines {
    pub(crate) fn new(out: LineQueue) -> Self {
        EndLines {
            out,
            held: Mutex::default(),
        }
    }

    /// Where every line goes: for the listener's own lines too, so they
    /// come in order.
    pub(crate) fn out(&self) -> &LineQueue {
        &self.out
    }

    /// `ended`'s line: said at once if it opened a source, or if no end
    /// without one was said in the last second; else held for the summary.
    pub(crate) fn ended(&self, ended: &Ended) {
        if ended.tally.sources == 0 {
            let now = Instant::now();
            let mut held = self.held();
            if held.said.is_some_and(|said| now < said + EVERY) || held.count > 0 {
                held.count += 1;
                *held.reasons.entry(reason(ended)).or_default() += 1;
                return;
            }
            held.said = Some(now);
        }
        self.out.line(ended);
    }

    /// Say what was held, if a second has passed since an end without a
    /// source was last said (or `now_or_never`: at exit).
    pub(crate) fn summarize(&self, at_exit: bool) {
        let now = Instant::now();
        let mut held = self.held();
        let due = held.said.is_none_or(|said| now >= said + EVERY);
        if held.count == 0 || !(due || at_exit) {
            return;
        }
        let reasons: Vec<String> = held
            .reasons
            .iter()
            .map(|(reason, n)| format!("{n} {reason}"))
            .collect();
        let since = held
            .said
            .map_or(0.0, |said| now.duration_since(said).as_secs_f64());
        let line = format!(
            "{} more connection(s) ended in the last {since:.1} s without opening a source: {}",
            held.count,
            reasons.join(", ")
        );
        *held = Held {
            said: Some(now),
            ..Held::default()
        };
        drop(held);
        self.out.line(line);
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Why a connection ended, in a few words.
fn reason(ended: &Ended) -> &'static str {
    match &ended.result {
        Ok(()) if ended.bytes == 0 => "closed by the peer with nothing sent",
        Ok(()) => "closed by the peer",
        Err(e) => e.reason(),
    }
}
