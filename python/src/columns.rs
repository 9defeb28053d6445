//! [`ColumnSink`]: the rows the subscriber's rules let through, as columns
//! per source; and each column handed to Python as one `bytes` object.

use std::collections::{BTreeMap, HashMap};

use dendro_wire_std::{Rows, Sink, SinkError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// One source's rows: a row's fields at the same place in each column, its
/// bytes `data[offsets[i]..offsets[i + 1]]`, its stream `names[stream[i]]`.
#[derive(Default)]
pub(crate) struct Columns {
    ts: Vec<i64>,
    wall_offset: Vec<i64>,
    stream: Vec<u32>,
    offsets: Vec<u64>,
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

/// Past this many names a lookup hashes rather than scans.
const SCANNED: usize = 16;

impl Names {
    #[inline]
    fn number(&mut self, name: &str) -> u32 {
        if self.names.get(self.next).is_some_and(|n| n == name) {
            let found = self.next;
            self.next = (found + 1) % self.names.len();
            return found as u32;
        }
        let found = match self.names.len() {
            len if len <= SCANNED => self.names.iter().position(|n| n == name),
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
    fn push(&mut self, rows: &Rows<'_>) {
        let n = rows.rows.len();
        self.ts.reserve(n);
        self.wall_offset.reserve(n);
        self.stream.reserve(n);
        self.offsets.reserve(n + 1);
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        for row in rows.rows.iter() {
            self.ts.push(row.ts);
            self.wall_offset.push(row.wall_offset);
            self.stream.push(self.names.number(row.stream));
            self.data.extend_from_slice(row.row);
            self.offsets.push(self.data.len() as u64);
        }
    }

    /// Each column as little-endian bytes, as `Stream.columns` returns
    /// them; the offsets start at 0 even for a source with no rows.
    pub(crate) fn to_python<'py>(&self, py: Python<'py>) -> PyResult<ColumnBytes<'py>> {
        let offsets: &[u64] = match self.offsets.is_empty() {
            true => &[0],
            false => &self.offsets,
        };
        Ok((
            le_bytes(py, &self.ts, i64::to_le_bytes)?,
            le_bytes(py, &self.wall_offset, i64::to_le_bytes)?,
            le_bytes(py, &self.stream, u32::to_le_bytes)?,
            le_bytes(py, offsets, u64::to_le_bytes)?,
            PyBytes::new(py, &self.data),
            PyList::new(py, &self.names.names)?,
        ))
    }
}

/// A source's columns as Python has them: `ts`, `wall_offset`, `stream`,
/// `offsets` and `data` as `bytes`, and the stream names.
pub(crate) type ColumnBytes<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyList>,
);

/// A column as one `bytes` object of its values' little-endian bytes,
/// written in place.
fn le_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    to_le: fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, values.len() * N, |out| {
        for (to, &v) in out.chunks_exact_mut(N).zip(values) {
            to.copy_from_slice(&to_le(v));
        }
        Ok(())
    })
}

/// A [`Sink`] that keeps every row it is given, by source, as columns.
#[derive(Default)]
pub(crate) struct ColumnSink {
    sources: BTreeMap<u32, Columns>,
}

impl ColumnSink {
    pub(crate) fn into_columns(self) -> BTreeMap<u32, Columns> {
        self.sources
    }
}

impl Sink for ColumnSink {
    fn rows(&mut self, source: u32, rows: &Rows<'_>) -> Result<(), SinkError> {
        self.sources.entry(source).or_default().push(rows);
        Ok(())
    }
}
