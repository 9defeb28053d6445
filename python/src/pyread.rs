//! [`PyRead`]: a Python object read as `io::Read` through one of its
//! methods (a file object's `read`, a socket's `recv`), so a file object, a
//! socket or a buffer in pieces is cut by the same reader as a file, in
//! bounded memory.

use std::io;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::error::Raised;

/// A Python object whose method `method(n)` returns up to `n` bytes, and
/// none at the end.
pub(crate) struct PyRead {
    object: Py<PyAny>,
    method: String,
}

impl PyRead {
    pub(crate) fn new(object: Py<PyAny>, method: String) -> PyRead {
        PyRead { object, method }
    }
}

impl io::Read for PyRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let raised = |e: PyErr| io::Error::other(Raised(e));
            let got = self
                .object
                .call_method1(py, self.method.as_str(), (buf.len(),))
                .map_err(raised)?;
            let got = got.bind(py);
            let mut copy = |bytes: &[u8]| match buf.get_mut(..bytes.len()) {
                Some(to) => {
                    to.copy_from_slice(bytes);
                    Ok(bytes.len())
                }
                None => Err(raised(PyTypeError::new_err(format!(
                    "{}({}) returned {} bytes, more than it was asked for",
                    self.method,
                    buf.len(),
                    bytes.len()
                )))),
            };
            if let Ok(bytes) = got.cast::<PyBytes>() {
                copy(bytes.as_bytes())
            } else if let Ok(bytes) = got.cast::<PyByteArray>() {
                copy(&bytes.to_vec())
            } else if got.is_none() {
                // A non-blocking object with nothing to read yet.
                Err(io::ErrorKind::WouldBlock.into())
            } else {
                Err(raised(PyTypeError::new_err(format!(
                    "{}() returned {}, not bytes",
                    self.method,
                    got.get_type().name().map_err(raised)?
                ))))
            }
        })
    }
}
