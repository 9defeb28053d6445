//! The preamble ([protocol §2](crate::protocol)): `"dendro-repl\0"`, then the `u16` version.

use crate::consts::{MAGIC, PROTOCOL_VERSION};
use crate::error::{Error, Field, Rule};
use crate::frame::Status;

/// The preamble's size: the magic and the version.
pub const PREAMBLE_BYTES: usize = MAGIC.len() + 2;

/// The preamble itself, as a writer sends it first: the magic, then
/// [`PROTOCOL_VERSION`] little-endian.
///
/// ```
/// use dendro_wire_core::{check_preamble, Status, PREAMBLE, PREAMBLE_BYTES};
///
/// assert_eq!(&PREAMBLE, b"dendro-repl\0\x01\x00");
/// assert_eq!(check_preamble(&PREAMBLE), Ok(Status::Complete(PREAMBLE_BYTES)));
/// ```
pub const PREAMBLE: [u8; PREAMBLE_BYTES] = {
    let mut preamble = [0u8; PREAMBLE_BYTES];
    let mut i = 0;
    while i < MAGIC.len() {
        preamble[i] = MAGIC[i];
        i += 1;
    }
    let version = PROTOCOL_VERSION.to_le_bytes();
    preamble[MAGIC.len()] = version[0];
    preamble[MAGIC.len() + 1] = version[1];
    preamble
};

/// Check the preamble at the start of `buf`.
///
/// Three outcomes, kept apart so a caller can tell a short read from the
/// wrong stream from a newer publisher: `Incomplete` with the bytes still
/// needed; [`Rule::NotADendroStream`] as soon as the bytes in hand differ
/// from the magic; [`Rule::UnsupportedVersion`] with the version declared.
/// On success, the preamble's size, [`PREAMBLE_BYTES`].
///
/// ```
/// use dendro_wire_core::{check_preamble, Rule, Status, PREAMBLE_BYTES};
///
/// assert_eq!(check_preamble(b"dendro"), Ok(Status::Incomplete { needed: 8 }));
/// assert_eq!(check_preamble(b"dendro-repl\0\x01\x00"), Ok(Status::Complete(PREAMBLE_BYTES)));
/// let wrong = check_preamble(b"HTTP/1.1 200").unwrap_err();
/// assert_eq!(wrong.rule(), Rule::NotADendroStream);
/// let newer = check_preamble(b"dendro-repl\0\x02\x00").unwrap_err();
/// assert_eq!(newer.rule(), Rule::UnsupportedVersion { version: 2 });
/// ```
pub fn check_preamble(buf: &[u8]) -> Result<Status<usize>, Error> {
    let seen = buf.len().min(MAGIC.len());
    if buf.get(..seen) != MAGIC.get(..seen) {
        return Err(Error::decode(Rule::NotADendroStream, Field::Magic, 0));
    }
    let Some(version) = buf.get(MAGIC.len()..PREAMBLE_BYTES) else {
        return Ok(Status::Incomplete {
            needed: PREAMBLE_BYTES - buf.len(),
        });
    };
    let version = u16::from_le_bytes([version[0], version[1]]);
    if version != PROTOCOL_VERSION {
        return Err(Error::decode(
            Rule::UnsupportedVersion { version },
            Field::Version,
            MAGIC.len(),
        ));
    }
    Ok(Status::Complete(PREAMBLE_BYTES))
}

/// Write the preamble at the start of `buf`, returning its size: for a
/// caller with a buffer in hand; [`PREAMBLE`] is the same bytes as a
/// constant.
pub fn emit_preamble(buf: &mut [u8]) -> Result<usize, Error> {
    let have = buf.len();
    let Some(out) = buf.get_mut(..PREAMBLE_BYTES) else {
        return Err(Error::encode(
            Rule::BufferTooSmall {
                needed: PREAMBLE_BYTES,
                have,
            },
            Field::Magic,
            0,
        ));
    };
    out.copy_from_slice(&PREAMBLE);
    Ok(PREAMBLE_BYTES)
}
