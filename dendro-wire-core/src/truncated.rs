//! [`Truncated`]: a stream that ended inside its preamble or a frame, in
//! the words every reader of this project says it in.

use core::fmt;

/// A stream ended inside its preamble or inside a frame: that frame was
/// lost ([protocol §1](crate::protocol)), and a reader reports it as an
/// error, never as the end. The sans-IO decoder cannot tell an end from a
/// pause (it says [`Incomplete`](crate::Status::Incomplete)); the caller that
/// knows no more bytes will come says this.
///
/// ```
/// use dendro_wire_core::Truncated;
///
/// let cut = Truncated { in_preamble: false, have: 3, needed: 4 };
/// assert_eq!(cut.to_string(), "the stream ends inside this frame: 3 of at least 4 byte(s) arrived");
/// ```
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncated {
    /// Whether the preamble itself was cut, rather than a frame.
    pub in_preamble: bool,
    /// The bytes of it that arrived.
    pub have: usize,
    /// The bytes it needed at least: the whole preamble, a length prefix,
    /// or the whole frame its length prefix claims.
    pub needed: usize,
}

impl fmt::Display for Truncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the stream ends inside {}: {} of at least {} byte(s) arrived",
            if self.in_preamble {
                "the preamble"
            } else {
                "this frame"
            },
            self.have,
            self.needed
        )
    }
}

impl core::error::Error for Truncated {}
