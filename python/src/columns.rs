//! [`Columns`]: one source's rows as numpy arrays, written in the memory
//! numpy allocated for them; [`Fill`], the same arrays as slices, written
//! with the GIL released; [`Taken`], what Python is handed.
//!
//! The arrays come from numpy's `zeros`: fresh pages from the kernel,
//! faulted in as rows land, and in huge pages where the kernel has them
//! (numpy asks for those for its large arrays; faulting and zeroing 4 KiB
//! pages one at a time costs more than the rows). They are sized up front
//! from a guess, grown in place when the guess falls short, and cut to
//! what they hold at the end, so each row is written once and never copied.

use dendro_wire_std::{Row, RowList, Rows};
use numpy::{Element, PyArray1, PyArrayMethods, PyReadwriteArray1};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::names::Names;

/// The bytes every row takes in a frame besides its stream name and its
/// row: the name's length, `ts`, `wall_offset` and the row's length.
pub(crate) const ROW_FIXED: usize = Row {
    stream: "",
    ts: 0,
    wall_offset: 0,
    row: &[],
}
.wire_len();

/// Room in a source's columns: rows, and row bytes in all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Room {
    pub(crate) rows: usize,
    pub(crate) bytes: usize,
}

impl Room {
    /// The most a frame's rows can need: its rows, and its bytes but for
    /// each row's fixed fields (its names are counted as if row bytes). It
    /// is read from the frame's length, without walking its rows.
    pub(crate) fn at_most(rows: &Rows<'_>) -> Room {
        let count = rows.rows.len();
        match rows.buffer_len() {
            Ok(frame) => Room {
                rows: count,
                bytes: frame.saturating_sub(count * ROW_FIXED),
            },
            // A frame that decoded has a length; were it not known, its
            // rows would say.
            Err(_) => Room::exactly(rows),
        }
    }

    /// What a frame's rows need exactly: walks them.
    pub(crate) fn exactly(rows: &Rows<'_>) -> Room {
        Room {
            rows: rows.rows.len(),
            bytes: rows.rows.iter().map(|r| r.row.len()).sum(),
        }
    }

    fn fits(&self, need: Room) -> bool {
        need.rows <= self.rows && need.bytes <= self.bytes
    }
}

/// What a source's columns hold so far.
#[derive(Default)]
pub(crate) struct Written {
    rows: usize,
    bytes: usize,
    names: Names,
}

/// One source's rows, as numpy arrays with room for more: row `i` is
/// `ts[i]`, `wall_offset[i]`, stream `names[stream[i]]` and bytes
/// `data[offsets[i]..offsets[i + 1]]`. Past what [`Written`] counts, every
/// array is zeros (and `offsets` has one more than its rows).
pub(crate) struct Columns<'py> {
    ts: PyReadwriteArray1<'py, i64>,
    wall_offset: PyReadwriteArray1<'py, i64>,
    stream: PyReadwriteArray1<'py, u32>,
    offsets: PyReadwriteArray1<'py, i64>,
    data: PyReadwriteArray1<'py, u8>,
    written: Written,
}

/// A zeroed array of `len` elements.
fn zeros<T: Element>(py: Python<'_>, len: usize) -> PyReadwriteArray1<'_, T> {
    PyArray1::zeros(py, len, false).into_readwrite()
}

/// `array` resized to `len` elements, in place where the allocator can
/// (numpy zeroes what it adds).
fn resize<'py, T: Element>(array: &mut PyReadwriteArray1<'py, T>, len: usize) -> PyResult<()> {
    let py = array.py();
    let taken = std::mem::replace(array, zeros(py, 0));
    *array = taken.resize(len)?;
    Ok(())
}

/// Each array of a readwrite borrow, whole, as a slice: they are numpy's
/// own, always contiguous.
fn slice<'a, T: Element>(array: &'a mut PyReadwriteArray1<'_, T>) -> &'a mut [T] {
    array
        .as_slice_mut()
        .expect("an array made by zeros is contiguous")
}

impl<'py> Columns<'py> {
    /// Empty columns with room for `room`.
    pub(crate) fn new(py: Python<'py>, room: Room) -> Columns<'py> {
        Columns {
            ts: zeros(py, room.rows),
            wall_offset: zeros(py, room.rows),
            stream: zeros(py, room.rows),
            offsets: zeros(py, room.rows + 1),
            data: zeros(py, room.bytes),
            written: Written::default(),
        }
    }

    /// The rows and bytes written.
    pub(crate) fn written(&self) -> Room {
        Room {
            rows: self.written.rows,
            bytes: self.written.bytes,
        }
    }

    /// Room for `room` in all, rows written included.
    pub(crate) fn resize(&mut self, room: Room) -> PyResult<()> {
        resize(&mut self.ts, room.rows)?;
        resize(&mut self.wall_offset, room.rows)?;
        resize(&mut self.stream, room.rows)?;
        resize(&mut self.offsets, room.rows + 1)?;
        resize(&mut self.data, room.bytes)
    }

    /// The arrays as slices, to write rows into with the GIL released.
    pub(crate) fn fill(&mut self) -> Fill<'_> {
        Fill {
            ts: slice(&mut self.ts),
            wall_offset: slice(&mut self.wall_offset),
            stream: slice(&mut self.stream),
            offsets: slice(&mut self.offsets),
            data: slice(&mut self.data),
            written: &mut self.written,
        }
    }

    /// The columns cut to what they hold, for Python.
    pub(crate) fn into_python(mut self) -> PyResult<Taken> {
        self.resize(self.written())?;
        fn unbind<T: Element>(array: PyReadwriteArray1<'_, T>) -> Py<PyArray1<T>> {
            // The borrow ends; the array stays.
            (**array).clone().unbind()
        }
        Ok(Taken {
            ts: unbind(self.ts),
            wall_offset: unbind(self.wall_offset),
            stream: unbind(self.stream),
            offsets: unbind(self.offsets),
            data: unbind(self.data),
            names: self.written.names.into_names(),
        })
    }
}

/// A source's columns as slices of its arrays, for one run of frames with
/// the GIL released.
pub(crate) struct Fill<'a> {
    ts: &'a mut [i64],
    wall_offset: &'a mut [i64],
    stream: &'a mut [u32],
    offsets: &'a mut [i64],
    data: &'a mut [u8],
    written: &'a mut Written,
}

impl Fill<'_> {
    /// Whether `need` fits in the room left.
    pub(crate) fn fits(&self, need: Room) -> bool {
        Room {
            rows: self.ts.len() - self.written.rows,
            bytes: self.data.len() - self.written.bytes,
        }
        .fits(need)
    }

    /// Write `rows` after those written; they must [`fit`](Self::fits).
    pub(crate) fn write(&mut self, rows: &RowList<'_>) {
        let (from, n) = (self.written.rows, rows.len());
        let columns = self.ts[from..from + n]
            .iter_mut()
            .zip(&mut self.wall_offset[from..from + n])
            .zip(&mut self.stream[from..from + n])
            .zip(&mut self.offsets[from + 1..from + 1 + n]);
        let mut at = self.written.bytes;
        self.written.names.next_frame();
        for (row, (((ts, wall_offset), stream), offset)) in rows.iter().zip(columns) {
            *ts = row.ts;
            *wall_offset = row.wall_offset;
            *stream = self.written.names.number(row.stream);
            let end = at + row.row.len();
            copy_row(&mut self.data[at..end], row.row);
            at = end;
            *offset = at as i64;
        }
        self.written.rows += n;
        self.written.bytes = at;
    }
}

/// `row` into `to`, of its length, without a call into `memcpy` for a row
/// of up to 64 bytes, which costs more than such a copy: as its first and
/// last 8, 16 or 32 bytes.
#[inline(always)]
fn copy_row(to: &mut [u8], row: &[u8]) {
    #[inline(always)]
    fn ends<const W: usize>(to: &mut [u8], row: &[u8]) {
        if let (Some(to), Some(row)) = (to.first_chunk_mut::<W>(), row.first_chunk::<W>()) {
            *to = *row;
        }
        if let (Some(to), Some(row)) = (to.last_chunk_mut::<W>(), row.last_chunk::<W>()) {
            *to = *row;
        }
    }
    match row.len() {
        8..=16 => ends::<8>(to, row),
        17..=32 => ends::<16>(to, row),
        33..=64 => ends::<32>(to, row),
        _ => to.copy_from_slice(row),
    }
}

/// A source's columns as Python takes them, cut to the rows they hold.
pub(crate) struct Taken {
    ts: Py<PyArray1<i64>>,
    wall_offset: Py<PyArray1<i64>>,
    stream: Py<PyArray1<u32>>,
    offsets: Py<PyArray1<i64>>,
    data: Py<PyArray1<u8>>,
    names: Vec<String>,
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

impl Taken {
    /// The arrays and the names; a source with no rows has empty arrays,
    /// and offsets of one 0.
    pub(crate) fn into_python(taken: Option<Taken>, py: Python<'_>) -> PyResult<ColumnArrays<'_>> {
        let Some(t) = taken else {
            return Ok((
                PyArray1::zeros(py, 0, false),
                PyArray1::zeros(py, 0, false),
                PyArray1::zeros(py, 0, false),
                PyArray1::zeros(py, 1, false),
                PyArray1::zeros(py, 0, false),
                PyList::empty(py),
            ));
        };
        Ok((
            t.ts.into_bound(py),
            t.wall_offset.into_bound(py),
            t.stream.into_bound(py),
            t.offsets.into_bound(py),
            t.data.into_bound(py),
            PyList::new(py, &t.names)?,
        ))
    }
}
