//! A version 2 header: binary, a 16-byte head (its signature, version and
//! command, address family and transport, and the length of what follows)
//! then that many bytes: the addresses, then TLVs (type, 2-byte length,
//! value) to the end. It is judged only once all of it is in, save that a
//! length past [`MAX_HEADER`] is refused as soon as the head is in.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use dendro_wire_core::Status;

use super::header::{ProxiedFrom, ProxyHeaderError, MAX_HEADER};

/// The signature a version 2 header starts with.
pub(super) const SIGNATURE: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

/// The bytes of a version 2 header before its addresses.
const HEAD: usize = 16;

/// Parse the version 2 header `bytes` begin with (they begin as
/// [`SIGNATURE`] does, or with a part of it): whom it names and the bytes
/// it takes, or that more must arrive, or why it is refused.
pub(super) fn parse(bytes: &[u8]) -> Result<Status<(ProxiedFrom, usize)>, ProxyHeaderError> {
    let Some(head) = bytes.get(..HEAD) else {
        return Ok(Status::Incomplete {
            needed: HEAD - bytes.len(),
        });
    };
    let total = HEAD + usize::from(u16::from_be_bytes([head[14], head[15]]));
    if total > MAX_HEADER {
        return Err(ProxyHeaderError::Oversized(total));
    }
    let Some(header) = bytes.get(..total) else {
        return Ok(Status::Incomplete {
            needed: total - bytes.len(),
        });
    };
    let (version, command) = (header[12] >> 4, header[12] & 0x0f);
    if version != 2 {
        return Err(malformed(format!(
            "byte 12 (0x{:02x}) says version {version}; only 2 is known",
            header[12]
        )));
    }
    let local = match command {
        0 => true,
        1 => false,
        _ => {
            return Err(malformed(format!(
                "byte 12 (0x{:02x}) says command {command}; only 0 (LOCAL) and 1 (PROXY) are \
                 known",
                header[12]
            )))
        }
    };
    let (family, transport) = (header[13] >> 4, header[13] & 0x0f);
    // The addresses' bytes, by family: unspecified, IPv4, IPv6, unix.
    let addresses = match family {
        0 => 0,
        1 => 12,
        2 => 36,
        3 => 216,
        _ => {
            return Err(malformed(format!(
                "byte 13 (0x{:02x}) says address family {family}; only 0 (UNSPEC), 1 (INET), \
                 2 (INET6) and 3 (UNIX) are known",
                header[13]
            )))
        }
    };
    if transport > 2 {
        return Err(malformed(format!(
            "byte 13 (0x{:02x}) says transport {transport}; only 0 (UNSPEC), 1 (STREAM) and \
             2 (DGRAM) are known",
            header[13]
        )));
    }
    if total < HEAD + addresses {
        return Err(malformed(format!(
            "its length (bytes 14 and 15) is {}, too short for the {addresses} bytes of \
             addresses its family {family} takes",
            total - HEAD
        )));
    }
    tlvs(header, HEAD + addresses)?;
    let a = &header[HEAD..];
    let from = match (local, family) {
        (false, 1) => {
            let ip = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
            ProxiedFrom::Client(SocketAddr::new(
                IpAddr::V4(ip),
                u16::from_be_bytes([a[8], a[9]]),
            ))
        }
        (false, 2) => {
            let mut octets = [0; 16];
            octets.copy_from_slice(&a[..16]);
            ProxiedFrom::Client(SocketAddr::new(
                IpAddr::V6(Ipv6Addr::from(octets)),
                u16::from_be_bytes([a[32], a[33]]),
            ))
        }
        // A health check (LOCAL), an address not given (UNSPEC) or not IP
        // (UNIX): the balancer's own.
        _ => ProxiedFrom::Balancer,
    };
    Ok(Status::Complete((from, total)))
}

/// Check the TLVs from `at` to the end of `header`: each one's type and
/// length, and the value its length claims, within the header.
fn tlvs(header: &[u8], mut at: usize) -> Result<(), ProxyHeaderError> {
    while at < header.len() {
        let left = header.len() - at;
        let Some(&[kind, hi, lo]) = header.get(at..at + 3) else {
            return Err(malformed(format!(
                "the TLV at byte {at} is cut short: its type and length take 3 bytes and the \
                 header holds {left} more"
            )));
        };
        let claimed = usize::from(u16::from_be_bytes([hi, lo]));
        if claimed > left - 3 {
            return Err(malformed(format!(
                "the TLV at byte {at} (type 0x{kind:02x}) claims {claimed} bytes of value and \
                 the header holds {} more",
                left - 3
            )));
        }
        at += 3 + claimed;
    }
    Ok(())
}

fn malformed(why: String) -> ProxyHeaderError {
    ProxyHeaderError::Malformed(format!("version 2: {why}"))
}
