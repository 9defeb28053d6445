//! `dendro_wire._native`: the Rust half of the Python package `dendro-wire`.
//!
//! A stream is read as `dendro-wire check` reads it: the std crate's
//! `FrameReader` cuts a file (`SliceReader` bytes in memory, where they
//! lie), every byte-level rule checked by the core's decoder, and its
//! `SinkSubscriber` applies the subscriber's rules, up to the tool's 1024
//! sources. What they let through is written into numpy arrays, one set
//! per source (`columns.rs`), in one pass with the GIL released
//! (`whole.rs`); Python gets the arrays themselves. An error is the tool's
//! own sentence, with where it happened (`error.rs`).
//!
//! No `unsafe`: PyO3 and numpy hold it.

#![forbid(unsafe_code)]

mod columns;
mod error;
mod names;
mod whole;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Cursor, Read};
use std::path::PathBuf;

use dendro_wire_std::{CountingSink, FrameReader, OwnedFrame, SinkSubscriber, SliceReader, Tally};
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use columns::{ColumnArrays, Taken};
use error::{Broken, Error};

/// What Python handed: a path, or the stream's bytes.
enum Input<'py> {
    Path(PathBuf),
    Bytes(Bound<'py, PyBytes>),
    Owned(Vec<u8>),
}

impl<'py> Input<'py> {
    fn from(source: &Bound<'py, PyAny>) -> PyResult<Input<'py>> {
        if let Ok(bytes) = source.cast::<PyBytes>() {
            return Ok(Input::Bytes(bytes.clone()));
        }
        if let Ok(path) = source.extract::<PathBuf>() {
            return Ok(Input::Path(path));
        }
        if let Ok(bytes) = source.extract::<Vec<u8>>() {
            return Ok(Input::Owned(bytes));
        }
        Err(PyTypeError::new_err(
            "a stream is read from a path (str or os.PathLike) or from bytes",
        ))
    }
}

/// A stream read whole: its counts, its sources and their rows, each
/// source's columns handed over once.
#[pyclass(module = "dendro_wire._native")]
struct Stream {
    tally: Tally,
    sources: Vec<(u32, OwnedFrame)>,
    columns: BTreeMap<u32, Taken>,
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

/// Read a whole stream (a path, or bytes) with every rule of the protocol
/// checked, as `dendro-wire check` does; its rows as columns, by source.
#[pyfunction]
fn read(py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<Stream> {
    let input = Input::from(source)?;
    let read = match &input {
        Input::Path(path) => {
            let file = File::open(path).map_err(|e| Broken {
                message: format!("cannot open {}: {e}", path.display()),
                at: None,
            })?;
            let len = file.metadata().map_or(0, |m| m.len());
            let reader = py.detach(|| FrameReader::new(file)).map_err(Broken::from)?;
            whole::read_whole(py, reader, len)?
        }
        Input::Bytes(bytes) => from_bytes(py, bytes.as_bytes())?,
        Input::Owned(bytes) => from_bytes(py, bytes)?,
    };
    Ok(Stream {
        tally: read.tally,
        sources: read.handshakes,
        columns: read.columns,
    })
}

/// Bytes in memory are cut where they lie: copying them into a reader's
/// buffer would cost about as much as decoding them.
fn from_bytes(py: Python<'_>, bytes: &[u8]) -> PyResult<whole::Whole> {
    let reader = SliceReader::new(bytes).map_err(Broken::from)?;
    whole::read_whole(py, reader, bytes.len() as u64)
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
            let broken = Broken {
                message: format!("{at}: {e}"),
                at: Some(at),
            };
            self.reader = None;
            return Err(broken.into());
        }
        json(&OwnedFrame::from(&frame)).map(Some)
    }
}

/// The frames of a stream (a path, or bytes), as `dendro-wire dump --json`
/// prints them, each judged by the subscriber's rules first.
#[pyfunction]
fn frames(source: &Bound<'_, PyAny>) -> PyResult<Frames> {
    let read: Box<dyn Read + Send + Sync> = match Input::from(source)? {
        Input::Path(path) => Box::new(BufReader::new(File::open(&path).map_err(|e| {
            PyErr::from(Broken {
                message: format!("cannot open {}: {e}", path.display()),
                at: None,
            })
        })?)),
        Input::Bytes(bytes) => Box::new(Cursor::new(bytes.as_bytes().to_vec())),
        Input::Owned(bytes) => Box::new(Cursor::new(bytes)),
    };
    let reader = FrameReader::new(read)
        .map_err(Broken::from)?
        .yield_unknown(true);
    Ok(Frames {
        reader: Some(reader),
        rules: SinkSubscriber::new(CountingSink::default()),
    })
}

/// The Rust half of `dendro_wire`: read streams, frames and columns.
#[pymodule]
mod _native {
    #[pymodule_export]
    use super::{frames, read, Error, Frames, Stream};
}
