//! A version 1 header: one line of text, `PROXY TCP4 src dst sport
//! dport\r\n` (or `TCP6`, or `UNKNOWN` and anything up to the line's end),
//! at most 107 bytes with its CRLF. It is judged only once its CRLF is in,
//! or once 107 bytes are in without one: a header cut anywhere short of its
//! end asks for more, whatever it holds so far.

use std::net::{IpAddr, SocketAddr};

use dendro_wire_core::Status;

use super::header::{ProxiedFrom, ProxyHeaderError};

/// The first bytes of a version 1 header.
pub(super) const SIGNATURE: &[u8] = b"PROXY ";

/// The most bytes a version 1 header takes, its CRLF counted.
pub(super) const MAX_V1: usize = 107;

/// Parse the version 1 header `bytes` begin with (they begin as
/// [`SIGNATURE`] does, or with a part of it): whom it names and the bytes
/// it takes, or that more must arrive, or why it is refused.
pub(super) fn parse(bytes: &[u8]) -> Result<Status<(ProxiedFrom, usize)>, ProxyHeaderError> {
    let window = &bytes[..bytes.len().min(MAX_V1)];
    let Some(end) = window.windows(2).position(|w| w == b"\r\n") else {
        if bytes.len() >= MAX_V1 {
            return Err(malformed(format!(
                "no CRLF in its first {MAX_V1} bytes, the most a version 1 header may take"
            )));
        }
        return Ok(Status::Incomplete { needed: 1 });
    };
    let from = line(bytes.get(SIGNATURE.len()..end).unwrap_or_default())?;
    Ok(Status::Complete((from, end + 2)))
}

/// What the line after `PROXY ` and before its CRLF names.
fn line(rest: &[u8]) -> Result<ProxiedFrom, ProxyHeaderError> {
    let mut fields = rest.split(|&b| b == b' ');
    let proto = fields.next().unwrap_or_default();
    let v6 = match proto {
        // The rest of the line, whatever it is, is the balancer's to say.
        b"UNKNOWN" => return Ok(ProxiedFrom::Balancer),
        b"TCP4" => false,
        b"TCP6" => true,
        _ => {
            return Err(malformed(format!(
                "the protocol {} at byte 6 is not TCP4, TCP6 or UNKNOWN",
                shown(proto)
            )))
        }
    };
    let fields: Vec<&[u8]> = fields.collect();
    let [source, destination, source_port, destination_port] = fields[..] else {
        return Err(malformed(format!(
            "{} takes 4 fields after it, each after one space (source and destination \
             address, source and destination port); the line has {}",
            shown(proto),
            fields.len()
        )));
    };
    // Where each field starts in the header: after `PROXY `, the protocol
    // and one space, and each field before it and its space.
    let mut at = SIGNATURE.len() + proto.len() + 1;
    let mut next = |field: &[u8]| {
        let here = at;
        at += field.len() + 1;
        here
    };
    let source = address(source, "source", next(source), v6)?;
    address(destination, "destination", next(destination), v6)?;
    let source_port = port(source_port, "source", next(source_port))?;
    port(destination_port, "destination", next(destination_port))?;
    Ok(ProxiedFrom::Client(SocketAddr::new(source, source_port)))
}

/// A `TCP4` line's IPv4 address or a `TCP6` line's IPv6 one.
fn address(field: &[u8], which: &str, at: usize, v6: bool) -> Result<IpAddr, ProxyHeaderError> {
    let (family, proto) = if v6 {
        ("IPv6", "TCP6")
    } else {
        ("IPv4", "TCP4")
    };
    let parsed = std::str::from_utf8(field).ok().and_then(|s| {
        if v6 {
            s.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6)
        } else {
            s.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
        }
    });
    parsed.ok_or_else(|| {
        malformed(format!(
            "the {which} address {} at byte {at} is not an {family} address, as {proto} \
             says it is",
            shown(field)
        ))
    })
}

/// A port: 1 to 5 decimal digits, 0 to 65535.
fn port(field: &[u8], which: &str, at: usize) -> Result<u16, ProxyHeaderError> {
    let digits = !field.is_empty() && field.len() <= 5 && field.iter().all(u8::is_ascii_digit);
    digits
        .then(|| std::str::from_utf8(field).ok()?.parse::<u16>().ok())
        .flatten()
        .ok_or_else(|| {
            malformed(format!(
                "the {which} port {} at byte {at} is not a port (a decimal number, 0 to 65535)",
                shown(field)
            ))
        })
}

/// A field as text, quoted, its bytes that are not printable escaped.
fn shown(field: &[u8]) -> String {
    format!("\"{}\"", field.escape_ascii())
}

fn malformed(why: String) -> ProxyHeaderError {
    ProxyHeaderError::Malformed(format!("version 1: {why}"))
}
