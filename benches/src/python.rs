//! The Python package's routes from a capture to a source's rows (numpy
//! columns, from a path, bytes or a file object; an Arrow table; a pandas
//! or polars frame; batches), each timed in a process of its own by
//! `python/tests/routes.py`, which the package's memory tests run too: its
//! rate beside the numpy read's, and its peak memory over the file's size.

use std::path::Path;
use std::process::Command;

/// The routes `routes.py` knows, in the order they are printed; the first
/// is the numpy read the others are held to.
pub const PYTHON_ROUTES: &[&str] = &[
    "numpy",
    "bytes",
    "file object",
    "to_arrow",
    "to_pandas",
    "to_polars",
    "iter_batches",
];

/// A route's figures over rounds: its best seconds, its rows, and the
/// largest of its peaks (memory the route added, over the file's size),
/// if the kernel let it be measured.
struct Figures {
    rows: u64,
    seconds: f64,
    peak: Option<f64>,
}

/// The value of a number field of `routes.py`'s one JSON line.
fn field(line: &str, name: &str) -> Option<f64> {
    let at = line.find(&format!("\"{name}\": "))? + name.len() + 4;
    let rest = &line[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

/// One route over `capture`, best of `rounds`, with `python` (whose
/// environment has the wheel installed); why not, if it could not run (a
/// library the route needs that is not installed).
fn route(python: &str, capture: &Path, route: &str, rounds: usize) -> Result<Figures, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut best = Figures {
        rows: 0,
        seconds: f64::INFINITY,
        peak: None,
    };
    for _ in 0..rounds {
        let out = Command::new(python)
            .arg(root.join("python/tests/routes.py"))
            .arg(route)
            .arg(capture)
            .arg(root.join("testdata/sample.dwr"))
            .output()
            .map_err(|e| format!("{python}: {e}"))?;
        let said = String::from_utf8_lossy(&out.stdout);
        let (Some(rows), Some(seconds)) = (field(&said, "rows"), field(&said, "seconds")) else {
            let why = String::from_utf8_lossy(&out.stderr);
            return Err(why.lines().last().unwrap_or("no figures").to_string());
        };
        best.rows = rows as u64;
        best.seconds = best.seconds.min(seconds);
        best.peak = match (best.peak, field(&said, "peak")) {
            (Some(was), Some(peak)) => Some(was.max(peak)),
            (was, peak) => was.or(peak),
        };
    }
    Ok(best)
}

/// Print each Python route's rate over `capture` (of `rows` rows), beside
/// the numpy read's, and its peak memory over the file, best of `rounds`.
pub fn print_python_routes(python: &str, capture: &Path, rows: u64, rounds: usize) {
    println!();
    println!(
        "Python routes over the same capture, a process each, best of {rounds} (rate; rate over \
         the numpy read's; peak memory the route added over the file's size, the largest of the \
         rounds; 1.5x is the most sought):"
    );
    let mut numpy = None;
    for &name in PYTHON_ROUTES {
        match route(python, capture, name, rounds) {
            Ok(f) => {
                assert_eq!(f.rows, rows, "every row of the capture by {name}");
                let rate = f.rows as f64 / f.seconds;
                let numpy = *numpy.get_or_insert(rate);
                let peak = f
                    .peak
                    .map_or("not measured here".into(), |p| format!("{p:.2}x the file"));
                println!(
                    "  {name:<14} {:>6.1} M rows/s  {:.2}x the numpy read  peak {peak}",
                    rate / 1e6,
                    rate / numpy,
                );
            }
            Err(why) => println!("  {name:<14} not measured: {why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn a_field_is_read_from_the_json_line() {
        let line = r#"{"route": "to_arrow", "rows": 320000, "seconds": 0.0132, "peak": 0.92}"#;
        assert_eq!(field(line, "rows"), Some(320000.0));
        assert_eq!(field(line, "seconds"), Some(0.0132));
        assert_eq!(field(line, "peak"), Some(0.92));
        assert_eq!(field(line, "route"), None);
    }
}
