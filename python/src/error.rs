//! What a stream that broke a rule raises in Python: the sentence, where,
//! and which of the package's exceptions (`dendro_wire/_errors.py`) says
//! it, so a caller can branch on a cut stream apart from a broken rule. A
//! file that cannot be opened or read raises Python's own `OSError`
//! subclass for its errno (`FileNotFoundError`, `IsADirectoryError`...).

use std::io;
use std::path::{Path, PathBuf};

use dendro_wire_std::{Position, ReadError, ReadErrorKind};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

/// Why a stream could not be read, as `check --json` says it.
pub(crate) struct Broken {
    pub(crate) message: String,
    pub(crate) at: Option<Position>,
    pub(crate) kind: Kind,
}

/// Which exception a [`Broken`] raises.
pub(crate) enum Kind {
    /// The stream ended inside its preamble or a frame: `CutStreamError`.
    Cut,
    /// A byte or a subscriber's rule was broken: `BrokenRuleError`.
    Rule,
    /// The file or the Python object read from failed: an `OSError` (with
    /// the file's path, if known), or the exception the object raised.
    Io(io::Error, Option<PathBuf>),
}

impl Broken {
    /// A rule the subscriber refused a frame by, at `at`.
    pub(crate) fn rule(at: Position, why: impl std::fmt::Display) -> Broken {
        Broken {
            message: format!("{at}: {why}"),
            at: Some(at),
            kind: Kind::Rule,
        }
    }

    /// A file that could not be opened.
    pub(crate) fn file(path: &Path, e: io::Error) -> Broken {
        Broken {
            message: format!("cannot read {}: {e}", path.display()),
            at: None,
            kind: Kind::Io(e, Some(path.to_owned())),
        }
    }

    /// Read from the file at `path`: a failure to read is the file's.
    pub(crate) fn in_file(mut self, path: &Path) -> Broken {
        if let Kind::Io(_, file) = &mut self.kind {
            *file = Some(path.to_owned());
        }
        self
    }
}

impl From<ReadError> for Broken {
    fn from(e: ReadError) -> Self {
        let (message, at) = (e.to_string(), e.position());
        let kind = match e.into_kind() {
            ReadErrorKind::Truncated { .. } => Kind::Cut,
            ReadErrorKind::Io(io) => Kind::Io(io, None),
            _ => Kind::Rule,
        };
        Broken { message, at, kind }
    }
}

impl From<Broken> for PyErr {
    fn from(b: Broken) -> Self {
        let class = match b.kind {
            Kind::Cut => "CutStreamError",
            Kind::Rule => "BrokenRuleError",
            Kind::Io(e, path) => return os_error(e, b.message, path),
        };
        Python::attach(|py| {
            let raised = py
                .import("dendro_wire._errors")
                .and_then(|errors| errors.getattr(class))
                .and_then(|class| {
                    class.call1((b.message, b.at.map(|at| at.frame), b.at.map(|at| at.offset)))
                });
            match raised {
                Ok(error) => PyErr::from_value(error),
                Err(e) => e,
            }
        })
    }
}

/// `e` as Python raises it: the exception a Python object's read raised,
/// as it was; an errno as `OSError(errno, strerror, path)`, which Python
/// makes the subclass for that errno, with `filename` set.
fn os_error(e: io::Error, message: String, path: Option<PathBuf>) -> PyErr {
    if e.get_ref().is_some_and(|inner| inner.is::<Raised>()) {
        let raised = e.into_inner().expect("checked above");
        let raised = raised.downcast::<Raised>().expect("checked above");
        return raised.0;
    }
    match (e.raw_os_error(), path) {
        (Some(errno), Some(path)) => {
            // The system's sentence, without Rust's "(os error N)".
            let strerror = e.to_string();
            let strerror = strerror
                .split(" (os error")
                .next()
                .unwrap_or_default()
                .to_owned();
            PyOSError::new_err((errno, strerror, path.into_os_string()))
        }
        (Some(errno), None) => PyOSError::new_err((errno, message)),
        (None, _) => PyOSError::new_err(message),
    }
}

/// An exception raised by a Python object's `read`, carried through the
/// reader as an `io::Error` and raised again as it was.
#[derive(Debug)]
pub(crate) struct Raised(pub(crate) PyErr);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Raised {}
