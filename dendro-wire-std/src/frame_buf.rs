//! Appending a frame's bytes to a growable buffer ([`FrameBuf`]):
//! [`write_frame_to`] for a `Vec`, and [`append`], the one place std makes
//! room for a frame and has the core emit it.

use dendro_wire_core::{Error, Frame};

/// Append one frame's bytes, length prefix included, to `out`: sized
/// exactly by the core first, then emitted in place, so `out` grows once.
/// On an error `out` is left as it was.
///
/// ```
/// use dendro_wire_core::{decode, ClockOffset, Frame, Status};
/// use dendro_wire_std::write_frame_to;
///
/// let mut out = Vec::new();
/// write_frame_to(&mut out, &Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 }))?;
/// assert!(matches!(decode(&out)?, Status::Complete((Frame::ClockOffset(_), used)) if used == out.len()));
/// # Ok::<(), dendro_wire_core::Error>(())
/// ```
pub fn write_frame_to(out: &mut Vec<u8>, frame: &Frame<'_>) -> Result<(), Error> {
    let len = frame.buffer_len()?;
    append(out, len, |room| frame.emit(room))?;
    Ok(())
}

/// A growable buffer a frame's bytes are appended to: a `Vec`, or (with
/// `tokio`) a `BytesMut`.
pub(crate) trait FrameBuf: std::ops::DerefMut<Target = [u8]> {
    /// Grow to `len` bytes, the new ones zero; or shrink to `len`.
    fn set_len(&mut self, len: usize);
}

impl FrameBuf for Vec<u8> {
    fn set_len(&mut self, len: usize) {
        self.resize(len, 0);
    }
}

#[cfg(feature = "tokio")]
impl FrameBuf for bytes::BytesMut {
    fn set_len(&mut self, len: usize) {
        self.resize(len, 0);
    }
}

/// Append a frame of at most `len` bytes to `out`, written in place by
/// `emit` (a view's `emit`, or the publisher machine's), which returns the
/// bytes it wrote; `out` keeps exactly those, or on an error what it held
/// before. The one place std makes room for a frame and hands it to the
/// core.
pub(crate) fn append<B: FrameBuf + ?Sized, E>(
    out: &mut B,
    len: usize,
    emit: impl FnOnce(&mut [u8]) -> Result<usize, E>,
) -> Result<usize, E> {
    let at = out.len();
    out.set_len(at + len);
    match emit(&mut out[at..]) {
        Ok(n) => {
            out.set_len(at + n);
            Ok(n)
        }
        Err(e) => {
            out.set_len(at);
            Err(e)
        }
    }
}
