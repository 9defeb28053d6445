//! [`Failure`]: what a command that fails reports, with exit code 1.

/// A failure to report on stderr, with exit code 1. Usage errors never get
/// here: clap reports them and exits 2.
pub(crate) struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}
