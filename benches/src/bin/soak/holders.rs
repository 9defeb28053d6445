//! The soak's cases of peers that speak the protocol correctly, after
//! `dendro-wire-std/tests/collector_holders.rs` at scale: valid Handshakes
//! kept alive with empty Rows frames filling the table, half-Handshakes
//! closed just before the grace from 64 addresses, silent Handshakes from
//! the honest agent's own address, and frames trickled a byte every 1.5 s.
//! Beside each, the probe: rows delivered and the wait to get in, alone
//! and under the attack in turn (alone, attack, alone, attack...), each
//! against a fresh listener.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dendro_wire_test_support::peers;
use dendro_wire_test_support::streams::honest_stream;

use super::listener::{Listener, Stopped};
use super::probe::{closed, connect_from, rows_frame, visit, wait_metric, Visit};
use super::report::Row;

/// How big the cases are: the table (`--max-connections`, a tenth of it
/// yet to open a source, as the defaults have it), the rounds of alone and
/// attacked, the trickled frames and the half-Handshakes a second.
pub(crate) struct Scale {
    pub(crate) table: usize,
    pub(crate) rounds: usize,
    pub(crate) trickles: usize,
    pub(crate) half_rate: u64,
}

/// The peers of an attack (the collector's tests' attackers, at the
/// soak's scale), and a word on how it went.
struct Attack {
    peers: peers::Attack,
    note: Arc<Mutex<String>>,
    began: Instant,
}

impl Attack {
    fn new() -> Attack {
        Attack {
            peers: peers::Attack::new(),
            note: Arc::default(),
            began: Instant::now(),
        }
    }

    fn note(&self, note: String) {
        *self.note.lock().unwrap() = note;
    }

    /// `n` connections, each a whole Handshake and then a Rows frame one
    /// byte every 1.5 s, until the listener has ended each (or 30 s).
    fn trickle(&mut self, to: SocketAddr, n: usize) {
        let note = self.note.clone();
        self.peers.spawn(move |_, made| {
            let frame = rows_frame(0, 1);
            let started = Instant::now();
            let mut open: Vec<Option<TcpStream>> = (0..n)
                .map(|i| {
                    let mut s =
                        connect_from([127, 50, (i / 200) as u8, 1 + (i % 200) as u8], to).ok()?;
                    s.write_all(&honest_stream(0)).ok()?;
                    made.fetch_add(1, Ordering::Relaxed);
                    Some(s)
                })
                .collect();
            let (mut first, mut last) = (None::<Duration>, Duration::ZERO);
            let mut byte = 0;
            while open.iter().any(Option::is_some) && started.elapsed() < Duration::from_secs(30) {
                for one in &mut open {
                    let Some(s) = one else { continue };
                    if closed(s) || s.write_all(&frame[byte % frame.len()..][..1]).is_err() {
                        let t = started.elapsed();
                        first = Some(first.map_or(t, |f| f.min(t)));
                        last = t;
                        *one = None;
                    }
                }
                byte += 1;
                std::thread::sleep(Duration::from_millis(1500));
            }
            let open = open.iter().filter(|s| s.is_some()).count();
            *note.lock().unwrap() = match first {
                _ if open > 0 => format!("{open} still open after 30 s"),
                Some(first) => format!(
                    "each ended {:.1}–{:.1} s after its first byte",
                    first.as_secs_f64(),
                    last.as_secs_f64()
                ),
                None => "none opened".into(),
            };
        });
    }

    /// Stop the peers (those that end themselves, once they have).
    fn finish(self) -> (u64, Duration, String) {
        let made = self.peers.finish();
        let note = self.note.lock().unwrap().clone();
        (made, self.began.elapsed(), note)
    }
}

/// The probe's visits in a few words: its waits to get in, and its rows
/// applied of those it wrote.
fn visits(v: &[(Visit, u64)]) -> String {
    let waits: Vec<String> = v
        .iter()
        .map(|(v, _)| match v.wait {
            Some(w) => format!("{:.0}", w.as_secs_f64() * 1e3),
            None => "never".into(),
        })
        .collect();
    let rows: Vec<String> = v
        .iter()
        .map(|(v, applied)| match v.connections {
            1 => format!("{applied}/{}", v.sent),
            n => format!("{applied}/{} ({n} connections)", v.sent),
        })
        .collect();
    format!("in after {} ms, rows {}", waits.join(", "), rows.join(", "))
}

/// A case: `rounds` times the probe from `from` alone, then beside the
/// attack `start` begins, each against a fresh listener with `flags`. Held
/// if every listener exited cleanly, the probe got in within 2 s and had
/// 95% of its rows applied every time, and `bounded` held for each
/// attacked listener.
#[allow(clippy::too_many_arguments)]
fn interleaved(
    bin: &Path,
    scale: &Scale,
    secs: Duration,
    from: [u8; 4],
    title: &str,
    start: impl Fn(&Listener) -> Attack,
    bounded: impl Fn(&Stopped) -> bool,
) -> Row {
    let flags = format!(
        "--max-connections {} --max-unopened-connections {} --metrics 127.0.0.1:0",
        scale.table,
        scale.table / 10
    );
    let (mut alone, mut attacked) = (Vec::new(), Vec::new());
    let (mut ok, mut peak, mut last) = (true, 0, None);
    let mut said = (0, Duration::ZERO, String::new());
    for round in 0..scale.rounds {
        eprintln!("soak: {title}, round {} of {}", round + 1, scale.rounds);
        let l = Listener::start(bin, &[&flags]);
        let v = visit(&l, from, secs);
        let s = l.stop();
        ok &= s.clean_exit;
        alone.push((v, s.rows_applied));
        let l = Listener::start(bin, &[&flags]);
        let attack = start(&l);
        let v = visit(&l, from, secs);
        said = attack.finish();
        let s = l.stop();
        ok &= s.clean_exit && bounded(&s);
        attacked.push((v, s.rows_applied));
        peak = peak.max(s.peak_rss);
        last = Some(s);
    }
    for (v, applied) in alone.iter().chain(&attacked) {
        ok &= v.wait.is_some_and(|w| w < Duration::from_secs(2)) && applied * 100 >= v.sent * 95;
    }
    let mut s = last.expect("a round");
    s.peak_rss = peak;
    let (made, took, note) = said;
    let name = format!(
        "{title}: {made} connections in {:.1} s{}{note}",
        took.as_secs_f64(),
        if note.is_empty() { "" } else { ", " }
    );
    let honest = format!("alone: {}; attacked: {}", visits(&alone), visits(&attacked));
    Row::new(name, &s, "—".into(), honest, ok)
}

/// Valid Handshakes, 250 from each of as many addresses as fill the table,
/// an empty Rows frame every 3 s; the probe comes once they are past the
/// grace, from an address of its own.
pub(crate) fn keepalive_holders(bin: &Path, scale: &Scale, secs: Duration) -> Row {
    let title = format!(
        "a table of {} held by Handshakes kept alive with empty Rows frames",
        scale.table
    );
    let table = scale.table;
    let start = |l: &Listener| {
        let mut a = Attack::new();
        for i in 0..table.div_ceil(250) {
            let n = 250.min(table - i * 250);
            let from = [127, 20, (i / 200) as u8, 1 + (i % 200) as u8];
            a.peers.hold(l.addr, from, n, Some(Duration::from_secs(3)));
        }
        let started = Instant::now();
        let (full, most) = wait_metric(l, "connections_live", table as u64, secs * 10);
        a.note(if full {
            format!("table full in {:.1} s", started.elapsed().as_secs_f64())
        } else {
            format!("at most {most} live")
        });
        // Past the grace, each has delivered nothing within it.
        std::thread::sleep(Duration::from_millis(2500));
        a
    };
    interleaved(bin, scale, secs, [127, 21, 0, 1], &title, start, |s| {
        s.reasons.contains_key("evicted for a newer connection")
    })
}

/// Half-Handshakes from 64 addresses at `half_rate` a second, each closed
/// 1.9 s after it opened, just before the grace; the probe comes once the
/// table is full of them (or they are at their most).
pub(crate) fn half_handshakes(bin: &Path, scale: &Scale, secs: Duration) -> Row {
    let title = format!(
        "half-Handshakes aimed at {} a second from 64 addresses, each closed at 1.9 s",
        scale.half_rate
    );
    let (table, rate) = (scale.table as u64, scale.half_rate);
    let start = |l: &Listener| {
        let mut a = Attack::new();
        let from: Vec<[u8; 4]> = (0..64).map(|i| [127, 30, 0, i + 1]).collect();
        for part in from.chunks(16) {
            a.peers
                .half_handshakes(l.addr, part.to_vec(), rate / 4, Duration::from_millis(1900));
        }
        let (full, most) = wait_metric(l, "connections_live", table, Duration::from_secs(5));
        a.note(if full {
            "the table full".into()
        } else {
            format!("at most {most} live")
        });
        a
    };
    interleaved(bin, scale, secs, [127, 31, 0, 1], &title, start, |_| true)
}

/// 256 silent Handshakes (one address's share) from the probe's own
/// address, a NAT'd site; the probe comes once they are past the grace.
pub(crate) fn silent_neighbours(bin: &Path, scale: &Scale, secs: Duration) -> Row {
    let site = [127, 40, 0, 1];
    let start = |l: &Listener| {
        let mut a = Attack::new();
        a.peers.hold(l.addr, site, 256, None);
        let (full, most) = wait_metric(l, "connections_live", 256, secs * 10);
        a.note(if full {
            "the address's share full".into()
        } else {
            format!("at most {most} live")
        });
        std::thread::sleep(Duration::from_millis(2500));
        a
    };
    let title = "256 silent Handshakes from the agent's own address";
    interleaved(bin, scale, secs, site, title, start, |s| {
        s.reasons.contains_key("evicted for a newer connection")
    })
}

/// Frames trickled a byte every 1.5 s after a whole Handshake, from
/// addresses of their own: each ended by the listener, the probe beside.
pub(crate) fn trickles(bin: &Path, scale: &Scale, secs: Duration) -> Row {
    let n = scale.trickles;
    let title = format!("{n} frames trickled a byte every 1.5 s");
    let start = |l: &Listener| {
        let mut a = Attack::new();
        a.trickle(l.addr, n);
        a
    };
    interleaved(bin, scale, secs, [127, 51, 0, 1], &title, start, |s| {
        s.reasons.get("frame timeout") == Some(&(n as u64))
    })
}
