//! [`ColumnSink`]: the rows the subscriber's rules let through, as columns
//! per source; and each column handed to numpy as the `Vec` it was built
//! in, never copied.

use std::collections::{BTreeMap, HashMap};

use dendro_wire_std::{Handshake, Rows, Sink, SinkError};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::huge;

/// One source's rows: a row's fields at the same place in each column, its
/// bytes `data[offsets[i]..offsets[i + 1]]`, its stream `names[stream[i]]`.
#[derive(Default)]
pub(crate) struct Columns {
    ts: Vec<i64>,
    wall_offset: Vec<i64>,
    stream: Vec<u32>,
    offsets: Vec<i64>,
    data: Vec<u8>,
    names: Names,
}

/// A source's stream names, each numbered once. Rows come from a few
/// streams in a repeating order, so the name after the last one found is
/// tried first, then the others; a source of many streams is looked up by
/// hash.
#[derive(Default)]
struct Names {
    names: Vec<String>,
    by_name: HashMap<String, u32>,
    next: usize,
}

/// Equality of two stream names without a call into `memcmp`, which costs
/// more than the comparison for a name of a few bytes: up to 16 bytes as
/// the first and last 8 (the core's row iterator does the same).
#[inline(always)]
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len()
        && match a.len() {
            8..=16 => {
                a.first_chunk::<8>() == b.first_chunk::<8>()
                    && a.last_chunk::<8>() == b.last_chunk::<8>()
            }
            _ => a == b,
        }
}

/// Past this many names a lookup hashes rather than scans.
const SCANNED: usize = 16;

impl Names {
    #[inline]
    fn number(&mut self, name: &str) -> u32 {
        if self.names.get(self.next).is_some_and(|n| same(n, name)) {
            let found = self.next;
            self.next = (found + 1) % self.names.len();
            return found as u32;
        }
        let found = match self.names.len() {
            len if len <= SCANNED => self.names.iter().position(|n| same(n, name)),
            _ => self.by_name.get(name).map(|&n| n as usize),
        };
        let found = found.unwrap_or_else(|| {
            self.names.push(name.to_owned());
            self.by_name
                .insert(name.to_owned(), self.names.len() as u32 - 1);
            self.names.len() - 1
        });
        self.next = (found + 1) % self.names.len();
        found as u32
    }
}

impl Columns {
    fn push(&mut self, rows: &Rows<'_>, expected: usize) {
        let n = rows.rows.len();
        if self.ts.capacity() - self.ts.len() < n {
            // Room for the rows the stream is expected to hold at once:
            // growing by doubling would copy each column again and fault
            // in fresh pages for it, which costs more than the rows.
            let more = n.max(expected.saturating_sub(self.ts.len()));
            let row_bytes = rows.rows.iter().map(|r| r.row.len()).sum::<usize>() / n.max(1);
            self.ts.reserve(more);
            self.wall_offset.reserve(more);
            self.stream.reserve(more);
            self.offsets.reserve(more + 1);
            self.data.reserve(more * row_bytes);
            huge::advise(&mut self.ts);
            huge::advise(&mut self.wall_offset);
            huge::advise(&mut self.stream);
            huge::advise(&mut self.offsets);
            huge::advise(&mut self.data);
        }
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        for row in rows.rows.iter() {
            self.ts.push(row.ts);
            self.wall_offset.push(row.wall_offset);
            self.stream.push(self.names.number(row.stream));
            self.data.extend_from_slice(row.row);
            self.offsets.push(self.data.len() as i64);
        }
    }

    /// Each column as a numpy array over the memory it was built in
    /// (`ts`, `wall_offset`, `stream`, `offsets`, `data`), and the stream
    /// names; the offsets start at 0 even for a source with no rows.
    pub(crate) fn into_python(mut self, py: Python<'_>) -> PyResult<ColumnArrays<'_>> {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        // What was reserved and not used goes back.
        self.ts.shrink_to_fit();
        self.wall_offset.shrink_to_fit();
        self.stream.shrink_to_fit();
        self.offsets.shrink_to_fit();
        self.data.shrink_to_fit();
        Ok((
            self.ts.into_pyarray(py),
            self.wall_offset.into_pyarray(py),
            self.stream.into_pyarray(py),
            self.offsets.into_pyarray(py),
            self.data.into_pyarray(py),
            PyList::new(py, &self.names.names)?,
        ))
    }
}

/// A source's columns as Python has them: `ts`, `wall_offset`, `stream`,
/// `offsets` and `data` as numpy arrays, and the stream names.
pub(crate) type ColumnArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyList>,
);

/// A [`Sink`] that keeps every row it is given, by source, as columns.
pub(crate) struct ColumnSink {
    sources: BTreeMap<u32, Columns>,
    /// The stream's bytes, when known, to size each source's columns for
    /// the rows it is expected to hold.
    stream_bytes: usize,
    open: usize,
}

impl ColumnSink {
    pub(crate) fn new(stream_bytes: usize) -> Self {
        ColumnSink {
            sources: BTreeMap::new(),
            stream_bytes,
            open: 0,
        }
    }

    pub(crate) fn into_columns(self) -> BTreeMap<u32, Columns> {
        self.sources
    }
}

impl Sink for ColumnSink {
    fn open_source(&mut self, _: u32, _: &Handshake<'_>) -> Result<(), SinkError> {
        self.open += 1;
        Ok(())
    }

    fn rows(&mut self, source: u32, rows: &Rows<'_>) -> Result<(), SinkError> {
        // The stream's share for each source open, at this frame's bytes a
        // row: a guess, so that a source's columns grow a few times at most.
        let per_row = rows.buffer_len().unwrap_or(1) / rows.rows.len().max(1);
        let expected = self.stream_bytes / per_row.max(1) / self.open.max(1);
        self.sources.entry(source).or_default().push(rows, expected);
        Ok(())
    }
}
