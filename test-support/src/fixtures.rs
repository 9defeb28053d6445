//! Fixtures that many tests would otherwise build by hand.

use std::path::{Path, PathBuf};

use dendro_wire_core::{Frame, Handshake, Map};

/// `name` in the repository's `testdata/`.
pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(name)
}

/// The handshake of `source` with nothing else in it: no uuid, labels or
/// metadata, anchor 0, not complete. A test that needs one field more sets
/// it and takes the rest from here (`..bare_handshake(0)`).
pub fn bare_handshake(source: u32) -> Handshake<'static> {
    Handshake {
        source,
        uuid: None,
        labels: Map::EMPTY,
        metadata: Map::EMPTY,
        clock_anchor_wall_ns: 0,
        complete: false,
    }
}

/// [`bare_handshake`] as a frame.
pub fn handshake(source: u32) -> Frame<'static> {
    Frame::Handshake(bare_handshake(source))
}

/// A frame's bytes, length prefix included, as the core's encoder writes
/// them.
pub fn frame_bytes(frame: &Frame<'_>) -> Vec<u8> {
    let mut buf = vec![0; frame.buffer_len().expect("a frame the encoder takes")];
    let n = frame.emit(&mut buf).expect("room for it");
    assert_eq!(n, buf.len());
    buf
}
