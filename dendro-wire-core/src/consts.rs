//! The numbers the protocol fixes ([protocol §2](crate::protocol)): the
//! stream's magic and version, a frame's length prefix and its largest
//! size. A leaf: any file may use these, and this one uses none, so an
//! error's sentence can name the version without reaching the preamble.

/// The 12 bytes every stream starts with. Checked before any frame is read,
/// so a reader pointed at the wrong socket says so rather than reporting a
/// malformed frame.
pub const MAGIC: &[u8; 12] = b"dendro-repl\0";

/// The protocol version this crate reads and writes.
pub const PROTOCOL_VERSION: u16 = 1;

/// The largest frame this crate reads or writes by default: 64 MiB, counted
/// as [protocol §2](crate::protocol) counts `len` (the kind byte and the payload).
///
/// A four-byte length off a wire is otherwise a request for up to 4 GiB. The
/// limit is checked before anything else about a frame is trusted; a small
/// device lowers it with [`FrameDecoder::with_max_frame_bytes`](crate::FrameDecoder::with_max_frame_bytes).
pub const MAX_FRAME_BYTES: u32 = 64 * 1024 * 1024;

/// The bytes of a frame's length prefix; the kind byte sits right after it.
pub const LENGTH_PREFIX_BYTES: usize = 4;
