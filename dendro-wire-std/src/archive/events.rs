//! dendro's own `tracing` events, seen as they happen: [`DendroEvents`].
//!
//! dendro 0.6.1's writer retries a commit that fails on a condition that
//! may clear (a full disk, a failed write or fsync, a lock), and when the
//! retries run out it drops the tick, returns success to its caller, and
//! says so only through a `tracing` warning; it stops only after 30 such
//! ticks in a row. So the writer path cannot learn from dendro's answers
//! that a commit failed: it learns it from that warning. Each archive's
//! writer path is told of the ticks dropped on its own dendro writer thread
//! (which this module learns from the thread dendro asks the segment
//! encoder's version on, as it does when a source is added), and counts
//! the commit failed.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::ThreadId;

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Dispatch, Event, Interest, Level, Metadata, Subscriber};

/// What dendro 0.6.1's writer says, and only says, when it drops a tick
/// (rows, a clock offset, caller rows) after its retries.
const DROPPED: &str = "a tick was dropped after retries";

/// A `tracing` subscriber for dendro's events: each printed through the
/// `log` crate at its own level (an error as an error, a warning as a
/// warning), under its own target and named by its crate (`dendro: ...`;
/// another crate's events, if any, the same way), and every tick dendro
/// drops counted against the [`SharedArchive`](super::SharedArchive) whose
/// writer dropped it, which then counts that commit failed.
///
/// An application that lands rows through a `SharedArchive` installs it
/// ([`install`](Self::install)), or, with a `tracing` subscriber of its own,
/// hands it every event ([`observe`](Self::observe)) and says so
/// ([`forwarding`](Self::forwarding)). Without either, a
/// commit dendro drops is seen only when dendro's writer stops, 30 dropped
/// ticks later, and its rows are counted as committed until then.
#[derive(Clone, Copy, Debug, Default)]
pub struct DendroEvents;

impl DendroEvents {
    /// Make this the process's `tracing` subscriber; `false` if another
    /// already is (then hand it the events: [`observe`](Self::observe)).
    pub fn install() -> bool {
        tracing_core::dispatcher::set_global_default(Dispatch::new(DendroEvents)).is_ok()
    }

    /// Say that the application's own `tracing` subscriber hands dendro's
    /// events (those whose target starts with `dendro::`) to
    /// [`observe`](Self::observe).
    pub fn forwarding() {
        let _ = FORWARDED.set(());
    }

    /// Print `event`, and count it if it says a tick was dropped.
    pub fn observe(event: &Event<'_>) {
        DendroEvents.event(event);
    }

    /// Whether dendro's events reach this module: it is the process's
    /// subscriber (as a thread of the archive's own sees it), or the
    /// application said it forwards them.
    pub(super) fn watching() -> bool {
        tracing_core::dispatcher::get_default(|d| d.is::<DendroEvents>())
            || FORWARDED.get().is_some()
    }
}

/// The application forwards events ([`DendroEvents::forwarding`]).
static FORWARDED: OnceLock<()> = OnceLock::new();

/// What one archive's writer path learns of its dendro writer thread.
#[derive(Debug, Default)]
pub(super) struct Watch {
    dropped: AtomicU64,
    /// What dendro said of the last tick it dropped.
    last: Mutex<Option<String>>,
}

impl Watch {
    /// Ticks dropped so far, and what dendro said of the last.
    pub(super) fn dropped(&self) -> (u64, Option<String>) {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        (self.dropped.load(Ordering::Acquire), last)
    }

    fn count(&self, message: &str) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(message.to_string());
        self.dropped.fetch_add(1, Ordering::Release);
    }
}

/// The dendro writer threads watched, each to its archive's [`Watch`].
fn watched() -> &'static Mutex<HashMap<ThreadId, Weak<Watch>>> {
    static WATCHED: OnceLock<Mutex<HashMap<ThreadId, Weak<Watch>>>> = OnceLock::new();
    WATCHED.get_or_init(Mutex::default)
}

/// The calling thread is the dendro writer thread of the archive `watch`
/// belongs to.
pub(super) fn watch_this_thread(watch: &Arc<Watch>) {
    let mut map = watched().lock().unwrap_or_else(|e| e.into_inner());
    map.retain(|_, w| w.strong_count() > 0);
    map.insert(std::thread::current().id(), Arc::downgrade(watch));
}

/// The [`Watch`] of the archive whose dendro writer thread is the calling
/// thread, if any.
fn this_threads_watch() -> Option<Arc<Watch>> {
    let map = watched().lock().unwrap_or_else(|e| e.into_inner());
    map.get(&std::thread::current().id())
        .and_then(Weak::upgrade)
}

/// An event's `message` field, as `tracing`'s macros write it.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        use fmt::Write as _;
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            self.record_debug(field, &value);
        }
    }
}

fn log_level(level: &Level) -> log::Level {
    match *level {
        Level::ERROR => log::Level::Error,
        Level::WARN => log::Level::Warn,
        Level::INFO => log::Level::Info,
        Level::DEBUG => log::Level::Debug,
        _ => log::Level::Trace,
    }
}

impl Subscriber for DendroEvents {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // Asked each time: the log's level may change, and a warning is
        // always wanted, printed or not.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::WARN || log_level(metadata.level()) <= log::max_level()
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        let mut message = Message::default();
        event.record(&mut message);
        let message = message.0;
        if message.starts_with(DROPPED) {
            if let Some(watch) = this_threads_watch() {
                watch.count(&message);
            }
        }
        let level = log_level(metadata.level());
        // Named by its crate: `dendro: ...`.
        let from = metadata.target().split("::").next().unwrap_or_default();
        if level <= log::max_level() {
            log::logger().log(
                &log::Record::builder()
                    .level(level)
                    .target(metadata.target())
                    .module_path(metadata.module_path())
                    .file(metadata.file())
                    .line(metadata.line())
                    .args(format_args!("{from}: {message}"))
                    .build(),
            );
        }
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_tick_is_counted_against_the_archive_of_the_thread_that_dropped_it() {
        let (mine, other) = (Arc::new(Watch::default()), Arc::new(Watch::default()));
        let dispatch = Dispatch::new(DendroEvents);
        let on_another_thread = {
            let other = other.clone();
            std::thread::spawn(move || {
                tracing_core::dispatcher::with_default(&Dispatch::new(DendroEvents), || {
                    watch_this_thread(&other);
                    tracing::warn!("committing a tick failed (disk I/O error); retrying in 10ms");
                })
            })
        };
        on_another_thread.join().unwrap();
        tracing_core::dispatcher::with_default(&dispatch, || {
            // Not yet this thread's archive: nobody's.
            tracing::warn!(
                "a tick was dropped after retries (database or disk is full); 1 consecutive"
            );
            watch_this_thread(&mine);
            tracing::warn!("committing a tick failed (database or disk is full); retrying in 10ms");
            tracing::warn!(
                "a tick was dropped after retries (database or disk is full); 1 consecutive"
            );
        });
        assert_eq!(
            mine.dropped(),
            (
                1,
                Some(
                    "a tick was dropped after retries (database or disk is full); 1 consecutive"
                        .into()
                )
            )
        );
        assert_eq!(other.dropped(), (0, None));
    }
}
