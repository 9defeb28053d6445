//! A reader that hands out a stream a few bytes at a time, as a slow
//! socket does.

use std::io::{self, Read};

/// A reader over `bytes` that hands out at most `chunk` bytes per read;
/// [`Chunked::interrupted`] also fails every third read with
/// `Interrupted`, which a reader must retry.
pub struct Chunked<'a> {
    bytes: &'a [u8],
    chunk: usize,
    interrupt: bool,
    reads: usize,
}

impl<'a> Chunked<'a> {
    /// At most `chunk` bytes of `bytes` per read.
    pub fn new(bytes: &'a [u8], chunk: usize) -> Self {
        Chunked {
            bytes,
            chunk,
            interrupt: false,
            reads: 0,
        }
    }

    /// The same, and `Interrupted` before every third read.
    pub fn interrupted(self) -> Self {
        Chunked {
            interrupt: true,
            ..self
        }
    }
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        if self.interrupt && self.reads.is_multiple_of(3) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = self.chunk.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}
