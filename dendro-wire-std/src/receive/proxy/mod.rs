//! The PROXY protocol, versions 1 and 2 (HAProxy's, which nginx, Envoy and
//! the cloud load balancers speak): the header a load balancer in TCP mode
//! writes before the bytes it forwards, naming the client it forwards for.
//! Behind one, every connection comes from the balancer's address; the
//! header is how a collector learns the agent's.
//!
//! A header is believed only from the addresses a server is told to expect
//! one from ([`ServerConfig::proxy_protocol_from`]); from those it is
//! required, and from any other address one is refused, never trusted.
//! These files are the header's parse, without I/O ([`parse_header`]:
//! `v1.rs` the text version, `v2.rs` the binary one, `header.rs` what a
//! parse says), and the networks it is accepted from ([`Cidr`], `cidr.rs`);
//! the server reads it within a connection's handshake timeout, before a
//! TLS handshake.
//!
//! A header is judged only once it is whole (a version 1 header once its
//! CRLF is in, a version 2 one once its 16-byte head and the length it
//! declares are in): however its bytes arrive, one by one or all at once
//! with the stream after them, the verdict is the same.
//!
//! [`ServerConfig::proxy_protocol_from`]: crate::receive::ServerConfig::proxy_protocol_from

mod cidr;
mod header;
mod v1;
mod v2;

#[cfg(test)]
mod tests;

use dendro_wire_core::Status;

pub use cidr::Cidr;
pub use header::{ProxiedFrom, ProxyHeaderError, MAX_HEADER};

/// Parse a PROXY header (version 1 or 2) at the start of `bytes`: whom it
/// names and the bytes it takes, or that more must arrive (`Incomplete`,
/// at least one more byte), or why it is refused. The bytes after it are the
/// stream it precedes.
///
/// ```
/// use dendro_wire_core::Status;
/// use dendro_wire_std::receive::proxy::{parse_header, ProxiedFrom};
///
/// let v1 = b"PROXY TCP4 10.0.0.7 10.0.0.1 40000 7000\r\ndendro-repl\0";
/// let Ok(Status::Complete((from, used))) = parse_header(v1) else { panic!() };
/// assert_eq!(from, ProxiedFrom::Client("10.0.0.7:40000".parse().unwrap()));
/// assert_eq!(&v1[used..], b"dendro-repl\0");
/// assert!(matches!(parse_header(&v1[..20]), Ok(Status::Incomplete { .. })));
/// assert!(parse_header(b"dendro-repl\0").is_err(), "no header");
/// ```
pub fn parse_header(bytes: &[u8]) -> Result<Status<(ProxiedFrom, usize)>, ProxyHeaderError> {
    if starts_as(bytes, v1::SIGNATURE) {
        v1::parse(bytes)
    } else if starts_as(bytes, v2::SIGNATURE) {
        v2::parse(bytes)
    } else {
        Err(ProxyHeaderError::Missing)
    }
}

/// Whether `bytes` could be the start of something that starts with
/// `prefix`.
fn starts_as(bytes: &[u8], prefix: &[u8]) -> bool {
    let n = bytes.len().min(prefix.len());
    bytes[..n] == prefix[..n]
}

/// Whether `bytes` begin as a PROXY header does (at least four of its
/// signature's bytes): what a connection a header is not expected from is
/// refused for, by name.
pub fn looks_like_header(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && (starts_as(bytes, v1::SIGNATURE) || starts_as(bytes, v2::SIGNATURE))
}
