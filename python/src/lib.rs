//! `dendro_wire._native`: the Rust half of the Python package `dendro-wire`.
//!
//! A stream is read as `dendro-wire check` reads it: the std crate's
//! `FrameReader` cuts a file (`SliceReader` bytes in memory, where they
//! lie), every byte-level rule checked by the core's decoder, and its
//! `SinkSubscriber` applies the subscriber's rules, up to the tool's 1024
//! sources. What they let through is written into numpy arrays, one set
//! per source (`columns.rs`), with the GIL released, the whole stream or a
//! batch of rows at a time (`whole.rs`); Python gets the arrays themselves.
//! A file object or a socket is read through its own method (`pyread.rs`).
//! An error is the tool's own sentence, with where it happened, as the
//! package's exception for it (`error.rs`).
//!
//! No `unsafe`: PyO3 and numpy hold it.

#![forbid(unsafe_code)]

mod columns;
mod error;
mod names;
mod pyread;
mod whole;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Cursor, Read};
use std::path::PathBuf;

use dendro_wire_std::{CountingSink, FrameReader, OwnedFrame, SinkSubscriber, SliceReader, Tally};
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use columns::{ColumnArrays, Taken};
use error::Broken;
use pyread::PyRead;
use whole::{Budget, Cut, Reading};

/// What Python handed: a path, a stream's bytes, or an object whose method
/// `method(n)` reads it (the Python half chooses which).
enum Input<'py> {
    Path(PathBuf),
    Bytes(Bound<'py, PyBytes>),
    Object(PyRead),
}

impl<'py> Input<'py> {
    fn from(source: &Bound<'py, PyAny>, method: Option<String>) -> PyResult<Input<'py>> {
        if let Some(method) = method {
            return Ok(Input::Object(PyRead::new(source.clone().unbind(), method)));
        }
        if let Ok(bytes) = source.cast::<PyBytes>() {
            return Ok(Input::Bytes(bytes.clone()));
        }
        if source.is_instance_of::<PyString>() || source.hasattr("__fspath__")? {
            return Ok(Input::Path(source.extract()?));
        }
        Err(PyTypeError::new_err(format!(
            "a stream is read from a path (str or os.PathLike), its bytes, or a file \
             object; not from {}",
            source.get_type().name()?
        )))
    }

    /// The input cut by a reader that owns what it reads from, its
    /// preamble read.
    fn into_frames(self, py: Python<'_>) -> PyResult<FrameReader<Box<dyn Read + Send + Sync>>> {
        let (read, path): (Box<dyn Read + Send + Sync>, _) = match self {
            Input::Path(path) => {
                let file = File::open(&path).map_err(|e| Broken::file(&path, e))?;
                (Box::new(file), Some(path))
            }
            Input::Bytes(bytes) => (Box::new(Cursor::new(bytes.as_bytes().to_vec())), None),
            Input::Object(read) => (Box::new(read), None),
        };
        py.detach(|| FrameReader::new(read)).map_err(|e| {
            let broken = Broken::from(e);
            match &path {
                Some(path) => broken.in_file(path),
                None => broken,
            }
            .into()
        })
    }
}

/// Some or all of a stream: its counts so far, its sources, their rows
/// read, each source's columns handed over once, and where it was cut.
#[pyclass(module = "dendro_wire._native")]
struct Stream {
    tally: Tally,
    sources: Vec<(u32, OwnedFrame)>,
    columns: BTreeMap<u32, Taken>,
    cut: Option<Cut>,
}

#[pymethods]
impl Stream {
    /// The counts `dendro-wire check --json` prints for the stream, by its
    /// names.
    fn tally<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, value) in Tally::NAMES.iter().zip(self.tally.counts()) {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    /// Each handshake, in the JSON Lines form (PROTOCOL.md §10), in the
    /// order the sources opened.
    fn handshakes(&self) -> PyResult<Vec<String>> {
        self.sources
            .iter()
            .map(|(_, h)| json(h))
            .collect::<Result<_, _>>()
    }

    /// Where the stream ended inside a frame (read with `cut_ok`): the
    /// frame, the stream offset it starts at and the bytes of it that
    /// arrived; None if it did not.
    fn cut(&self) -> Option<(u64, u64, u64)> {
        self.cut.map(|c| (c.frame, c.offset, c.bytes))
    }

    /// One source's rows as columns, taken from the stream: numpy arrays of
    /// `ts`, `wall_offset`, each row's stream (a number into `names`), the
    /// offsets of each row in `data` (one more than rows) and `data`, then
    /// `names`. The Python half keeps them; a second call gets none.
    fn take_columns<'py>(&mut self, py: Python<'py>, source: u32) -> PyResult<ColumnArrays<'py>> {
        Taken::into_python(self.columns.remove(&source), py)
    }
}

fn json(frame: &OwnedFrame) -> PyResult<String> {
    serde_json::to_string(frame).map_err(|e| PyException::new_err(e.to_string()))
}

/// Read a whole stream (a path, bytes, or an object and the method that
/// reads it, with the bytes it has left if known) with every rule of the
/// protocol checked, as `dendro-wire check` does (`check --cut-ok` with
/// `cut_ok`); its rows as columns, by source.
#[pyfunction]
#[pyo3(signature = (source, cut_ok = false, method = None, left = 0))]
fn read(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    cut_ok: bool,
    method: Option<String>,
    left: u64,
) -> PyResult<Stream> {
    let mut reading = Reading::new(cut_ok);
    let (tally, columns) = match Input::from(source, method)? {
        Input::Path(path) => {
            let file = File::open(&path).map_err(|e| Broken::file(&path, e))?;
            let stream_bytes = file.metadata().map_or(0, |m| m.len());
            let mut frames = py
                .detach(|| FrameReader::new(file))
                .map_err(|e| Broken::from(e).in_file(&path))?;
            let columns = reading.read(py, &mut frames, Budget::Whole { stream_bytes })?;
            (reading.tally(&frames), columns)
        }
        // Bytes in memory are cut where they lie: copying them into a
        // reader's buffer would cost about as much as decoding them.
        Input::Bytes(bytes) => {
            let bytes = bytes.as_bytes();
            let mut frames = SliceReader::new(bytes).map_err(Broken::from)?;
            let stream_bytes = bytes.len() as u64;
            let columns = reading.read(py, &mut frames, Budget::Whole { stream_bytes })?;
            (reading.tally(&frames), columns)
        }
        Input::Object(read) => {
            let mut frames = py.detach(|| FrameReader::new(read)).map_err(Broken::from)?;
            let stream_bytes = left;
            let columns = reading.read(py, &mut frames, Budget::Whole { stream_bytes })?;
            (reading.tally(&frames), columns)
        }
    };
    Ok(Stream {
        tally,
        sources: reading.handshakes,
        columns,
        cut: reading.cut,
    })
}

/// A stream read a batch of rows at a time, each batch a [`Stream`] of the
/// rows read since the last (its counts and sources so far), in memory
/// bounded by the batch.
#[pyclass(module = "dendro_wire._native")]
struct Batches {
    frames: Option<FrameReader<Box<dyn Read + Send + Sync>>>,
    reading: Reading,
    rows: usize,
}

#[pymethods]
impl Batches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Stream>> {
        let Some(frames) = self.frames.as_mut() else {
            return Ok(None);
        };
        let columns = self.reading.read(py, frames, Budget::Rows(self.rows));
        let tally = self.reading.tally(frames);
        if self.reading.ended() {
            self.frames = None;
        }
        let columns = columns?;
        if columns.is_empty() && self.frames.is_none() {
            return Ok(None);
        }
        Ok(Some(Stream {
            tally,
            sources: self.reading.handshakes.clone(),
            columns,
            cut: self.reading.cut,
        }))
    }

    /// Where the stream ended inside a frame, as [`Stream::cut`] says.
    fn cut(&self) -> Option<(u64, u64, u64)> {
        self.reading.cut.map(|c| (c.frame, c.offset, c.bytes))
    }
}

/// A stream (a path, or an object and the method that reads it) read a
/// batch of at least `rows` rows at a time (a frame's rows are never
/// split).
#[pyfunction]
#[pyo3(signature = (source, rows, cut_ok = false, method = None))]
fn batches(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    rows: usize,
    cut_ok: bool,
    method: Option<String>,
) -> PyResult<Batches> {
    if rows == 0 {
        return Err(PyValueError::new_err("a batch holds at least one row"));
    }
    let frames = Input::from(source, method)?.into_frames(py)?;
    Ok(Batches {
        frames: Some(frames),
        reading: Reading::new(cut_ok),
        rows,
    })
}

/// The frames of a stream, one at a time, each as a JSON Lines object
/// (PROTOCOL.md §10), after the subscriber's rules let it through.
#[pyclass(module = "dendro_wire._native")]
struct Frames {
    reader: Option<FrameReader<Box<dyn Read + Send + Sync>>>,
    rules: SinkSubscriber<CountingSink>,
}

#[pymethods]
impl Frames {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self) -> PyResult<Option<String>> {
        let Some(reader) = self.reader.as_mut() else {
            return Ok(None);
        };
        let next = match reader.next_frame_at() {
            Ok(next) => next,
            Err(e) => {
                self.reader = None;
                return Err(Broken::from(e).into());
            }
        };
        let Some((frame, at)) = next else {
            self.reader = None;
            return Ok(None);
        };
        if let Err(e) = self.rules.apply(&frame) {
            self.reader = None;
            return Err(Broken::rule(at, e).into());
        }
        json(&OwnedFrame::from(&frame)).map(Some)
    }
}

/// The frames of a stream (a path, bytes, or an object and the method
/// that reads it), as `dendro-wire dump --json` prints them, each judged by
/// the subscriber's rules first.
#[pyfunction]
#[pyo3(signature = (source, method = None))]
fn frames(py: Python<'_>, source: &Bound<'_, PyAny>, method: Option<String>) -> PyResult<Frames> {
    let reader = Input::from(source, method)?
        .into_frames(py)?
        .yield_unknown(true);
    Ok(Frames {
        reader: Some(reader),
        rules: SinkSubscriber::new(CountingSink::default()),
    })
}

/// The package's version, the crate's.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The Rust half of `dendro_wire`: read streams, frames and columns.
#[pymodule]
mod _native {
    #[pymodule_export]
    use super::{batches, frames, read, version, Batches, Frames, Stream};
}
