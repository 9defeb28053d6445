//! [`LineQueue`]: lines written to a `Write` by a thread of their own,
//! through a bounded queue, so that whoever says something never waits for
//! whoever reads it; and [`Escaped`], for text a peer chose.
//!
//! A collector prints a line for connections that end, and warnings; if
//! those writes were made where connections are served, a standard output
//! that nobody reads (a full pipe) would stop serving altogether. Here a
//! line that does not fit the queue is dropped and counted instead.

use std::collections::VecDeque;
use std::fmt::{self, Write as _};
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A bounded queue of lines and the thread that writes them.
///
/// [`line`](Self::line) never waits: a line that would take the queue past
/// its capacity (in bytes) is dropped and counted ([`dropped`](Self::dropped)).
/// Each line is written whole, with its end of line, and every control or
/// non-printing character in it (a newline, a NUL, an escape, a bidirectional
/// override) is written escaped, so one line is always one line. Clones share
/// the queue; the thread ends once every clone is dropped and what was queued
/// is written.
///
/// ```
/// use std::time::Duration;
/// use dendro_wire_std::LineQueue;
///
/// let out = LineQueue::spawn("example", std::io::sink(), 1 << 16)?;
/// assert!(out.line("connection 0 from 127.0.0.1:4711: ended cleanly"));
/// assert!(out.flush(Duration::from_secs(5)));
/// assert_eq!((out.written(), out.dropped()), (1, 0));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct LineQueue {
    handle: Arc<Handle>,
}

impl fmt::Debug for LineQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineQueue")
            .field("name", &self.handle.shared.name)
            .field("capacity", &self.handle.shared.capacity)
            .field("written", &self.written())
            .field("dropped", &self.dropped())
            .finish()
    }
}

/// What the clones hold: when the last goes, the thread is told to finish.
struct Handle {
    shared: Arc<LineState>,
}

struct LineState {
    name: String,
    capacity: usize,
    queue: Mutex<LineBuffer>,
    /// A line was queued, or the last handle went.
    ready: Condvar,
    /// The thread wrote all it had taken.
    drained: Condvar,
    written: AtomicU64,
    dropped: AtomicU64,
}

#[derive(Default)]
struct LineBuffer {
    lines: VecDeque<String>,
    /// Bytes of the lines queued.
    bytes: usize,
    /// Lines taken by the thread and not yet written.
    writing: usize,
    closed: bool,
}

impl LineState {
    fn queue(&self) -> MutexGuard<'_, LineBuffer> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl LineQueue {
    /// A queue of at most `capacity` bytes of lines, written to `out` by a
    /// thread named `name`.
    pub fn spawn(
        name: &str,
        out: impl Write + Send + 'static,
        capacity: usize,
    ) -> io::Result<LineQueue> {
        let shared = Arc::new(LineState {
            name: name.to_string(),
            capacity,
            queue: Mutex::default(),
            ready: Condvar::new(),
            drained: Condvar::new(),
            written: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        });
        {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("dendro-wire-{name}"))
                .spawn(move || write_lines(&shared, out))?;
        }
        Ok(LineQueue {
            handle: Arc::new(Handle { shared }),
        })
    }

    /// Queue `line` (without its end of line) to be written, escaped; `false`
    /// if it was dropped because the queue is full.
    pub fn line(&self, line: impl fmt::Display) -> bool {
        let mut text = String::new();
        let _ = write!(text, "{}", Escaped::line(&line.to_string()));
        let shared = &self.handle.shared;
        let mut queue = shared.queue();
        if queue.bytes + text.len() > shared.capacity {
            drop(queue);
            shared.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        queue.bytes += text.len();
        queue.lines.push_back(text);
        drop(queue);
        shared.ready.notify_one();
        true
    }

    /// Lines written so far.
    pub fn written(&self) -> u64 {
        self.handle.shared.written.load(Ordering::Relaxed)
    }

    /// Lines dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.handle.shared.dropped.load(Ordering::Relaxed)
    }

    /// Wait, for at most `within`, until every line queued so far is
    /// written and flushed; whether it was. A writer nobody reads never is,
    /// and the wait ends all the same.
    pub fn flush(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let shared = &self.handle.shared;
        let mut queue = shared.queue();
        while !queue.lines.is_empty() || queue.writing > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            queue = shared
                .drained
                .wait_timeout(queue, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.queue().closed = true;
        self.shared.ready.notify_one();
    }
}

/// The thread: take what is queued, write it, flush, until the last handle
/// is gone and nothing is left. A failed write (a reader that went away)
/// loses those lines and no others.
fn write_lines(shared: &LineState, out: impl Write) {
    let mut out = io::BufWriter::with_capacity(64 * 1024, out);
    let mut taken = VecDeque::new();
    loop {
        {
            let mut queue = shared.queue();
            while queue.lines.is_empty() && !queue.closed {
                queue = shared.ready.wait(queue).unwrap_or_else(|e| e.into_inner());
            }
            if queue.lines.is_empty() {
                return;
            }
            std::mem::swap(&mut taken, &mut queue.lines);
            queue.writing = taken.len();
            queue.bytes = 0;
        }
        let mut written = 0;
        for line in taken.drain(..) {
            if out
                .write_all(line.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .is_ok()
            {
                written += 1;
            }
        }
        let _ = out.flush();
        shared.written.fetch_add(written, Ordering::Relaxed);
        shared.queue().writing = 0;
        shared.drained.notify_all();
    }
}

/// Text a peer chose (a certificate's name, a label, a stream name), to be
/// printed inside a line: every control or non-printing character escaped
/// as Rust writes it in a string (`\n`, `\0`, `\u{202e}`), and, inside
/// quotes, the quote and the backslash too, so what is printed can never
/// end the line, forge another, or pass for the text around it.
///
/// ```
/// use dendro_wire_std::Escaped;
///
/// assert_eq!(Escaped::quoted("db-01\nconnection 99").to_string(), r#""db-01\nconnection 99""#);
/// assert_eq!(Escaped::bare("a\0b\u{202e}").to_string(), r"a\0b\u{202e}");
/// assert_eq!(Escaped::bare("web-01").to_string(), "web-01");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Escaped<'a> {
    text: &'a str,
    how: How,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    /// In quotes: the quote and the backslash escaped too.
    Quoted,
    /// Bare, the backslash escaped, so an escape cannot be forged.
    Bare,
    /// A whole line already made: only what would break it.
    Line,
}

impl<'a> Escaped<'a> {
    /// `text` in double quotes, escaped.
    pub fn quoted(text: &'a str) -> Self {
        Escaped {
            text,
            how: How::Quoted,
        }
    }

    /// `text` as it is, but escaped.
    pub fn bare(text: &'a str) -> Self {
        Escaped {
            text,
            how: How::Bare,
        }
    }

    /// A line's text: its control and non-printing characters escaped, and
    /// nothing else.
    fn line(text: &'a str) -> Self {
        Escaped {
            text,
            how: How::Line,
        }
    }
}

/// Whether `c` is a control or non-printing character: what would let text
/// move the cursor, end a line, or hide or reorder what follows. Rust's own
/// string escaping knows which characters print.
fn needs_escape(c: char) -> bool {
    match c {
        '\\' | '"' | '\'' => false,
        ' ' => false,
        c => c.is_control() || c.is_whitespace() || c.escape_debug().len() > 1,
    }
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.how == How::Quoted {
            f.write_char('"')?;
        }
        for c in self.text.chars() {
            match c {
                '"' if self.how == How::Quoted => f.write_str("\\\"")?,
                '\\' if self.how != How::Line => f.write_str("\\\\")?,
                c if needs_escape(c) => match c {
                    '\n' => f.write_str("\\n")?,
                    '\r' => f.write_str("\\r")?,
                    '\t' => f.write_str("\\t")?,
                    '\0' => f.write_str("\\0")?,
                    c => write!(f, "\\u{{{:x}}}", c as u32)?,
                },
                c => f.write_char(c)?,
            }
        }
        if self.how == How::Quoted {
            f.write_char('"')?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_non_printing_characters_are_escaped() {
        for (text, bare) in [
            ("web-01", "web-01"),
            ("a b", "a b"),
            ("caf\u{e9}", "caf\u{e9}"),
            ("x\ny", r"x\ny"),
            ("x\r\ny", r"x\r\ny"),
            ("nul\0", r"nul\0"),
            ("\u{1b}[2J", r"\u{1b}[2J"),
            ("\u{7f}", r"\u{7f}"),
            ("\u{85}", r"\u{85}"),
            ("rtl\u{202e}txt", r"rtl\u{202e}txt"),
            ("zero\u{200b}width", r"zero\u{200b}width"),
            ("line\u{2028}sep", r"line\u{2028}sep"),
            ("bom\u{feff}", r"bom\u{feff}"),
            (r"back\slash", r"back\\slash"),
        ] {
            assert_eq!(Escaped::bare(text).to_string(), bare, "{text:?}");
        }
        assert_eq!(Escaped::quoted("say \"hi\"").to_string(), r#""say \"hi\"""#);
        // A whole line keeps its own backslashes and quotes.
        assert_eq!(
            Escaped::line(r#"claims host="a\nb" then"#).to_string(),
            r#"claims host="a\nb" then"#
        );
        assert_eq!(Escaped::line("a\nb").to_string(), r"a\nb");
    }

    /// A writer that takes nothing until told to.
    struct Stuck(Arc<(Mutex<bool>, Condvar)>, Arc<Mutex<Vec<u8>>>);

    impl Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let (open, cv) = &*self.0;
            let mut open = open.lock().unwrap();
            while !*open {
                open = cv.wait(open).unwrap();
            }
            self.1.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_writer_nobody_reads_never_holds_up_a_line_and_what_does_not_fit_is_counted() {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let got = Arc::new(Mutex::new(Vec::new()));
        let out = LineQueue::spawn("test", Stuck(gate.clone(), got.clone()), 100).unwrap();
        let started = Instant::now();
        let kept = (0..1_000)
            .filter(|i| out.line(format!("line {i:05}")))
            .count();
        assert!(started.elapsed() < Duration::from_secs(1));
        // The thread holds what it took before it was stuck (nothing, if it
        // had not started); the queue holds what fits.
        assert!((10..=20).contains(&kept), "{kept}");
        assert_eq!(out.dropped(), 1_000 - kept as u64);
        assert!(!out.flush(Duration::from_millis(50)));
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        assert!(out.flush(Duration::from_secs(5)));
        assert_eq!(out.written(), kept as u64);
        let text = String::from_utf8(got.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), kept);
        assert!(text.starts_with("line 00000\n"), "{text}");
        // One line stays one line.
        assert!(out.line("forged\nconnection 99: ended cleanly"));
        assert!(out.flush(Duration::from_secs(5)));
        let text = String::from_utf8(got.lock().unwrap().clone()).unwrap();
        assert!(
            text.ends_with("forged\\nconnection 99: ended cleanly\n"),
            "{text}"
        );
    }
}
