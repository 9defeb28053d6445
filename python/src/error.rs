//! What a stream that broke a rule raises in Python: the exception, and
//! the sentence and position it is made from, which the reading in
//! `lib.rs` and in `whole.rs` both give.

use dendro_wire_std::{Position, ReadError};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;

create_exception!(
    _native,
    Error,
    PyException,
    "A stream that broke a rule: args are the tool's sentence, the frame \
     (from 1; 0 for the preamble) and its stream offset, each None if unknown."
);

/// Why a stream could not be read, as `check --json` says it.
pub(crate) struct Broken {
    pub(crate) message: String,
    pub(crate) at: Option<Position>,
}

impl From<ReadError> for Broken {
    fn from(e: ReadError) -> Self {
        Broken {
            message: e.to_string(),
            at: e.position(),
        }
    }
}

impl From<Broken> for PyErr {
    fn from(b: Broken) -> Self {
        Error::new_err((b.message, b.at.map(|at| at.frame), b.at.map(|at| at.offset)))
    }
}
