//! The PROXY protocol, versions 1 and 2 (HAProxy's, which nginx, Envoy and
//! the cloud load balancers speak): the header a load balancer in TCP mode
//! writes before the bytes it forwards, naming the client it forwards for.
//! Behind one, every connection comes from the balancer's address; the
//! header is how a collector learns the agent's.
//!
//! A header is believed only from the addresses a server is told to expect
//! one from ([`ServerConfig::proxy_protocol_from`]); from those it is
//! required, and from any other address one is refused, never trusted.
//! This file is the header's parse, without I/O ([`parse_header`], by
//! [`ppp`](https://docs.rs/ppp)), and the networks it is accepted from
//! ([`Cidr`]); the server reads it within a connection's handshake
//! timeout, before a TLS handshake.
//!
//! [`ServerConfig::proxy_protocol_from`]: crate::receive::ServerConfig::proxy_protocol_from

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use dendro_wire_core::Status;
use ppp::{v1, v2, HeaderResult, PartialResult};

/// The most bytes a PROXY header may take: a version 1 header is at most
/// 107, and a version 2 one from a balancer carries its addresses and a few
/// small TLVs (an AWS endpoint id, a unique id). A header that claims more
/// is refused before it arrives.
pub const MAX_HEADER: usize = 1024;

/// The first bytes of a version 1 header.
const V1: &[u8] = b"PROXY ";
/// The signature a version 2 header starts with.
const V2: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

/// Whom a PROXY header says a connection is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxiedFrom {
    /// The client the balancer forwards for.
    Client(SocketAddr),
    /// The balancer's own connection (a version 2 `LOCAL` command, say, for
    /// a health check), or a client whose address it does not know
    /// (version 1 `UNKNOWN`, or an address that is not IP): the connection
    /// is taken to be from the balancer.
    Balancer,
}

/// Why a PROXY header was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProxyHeaderError {
    /// The connection's first bytes are not a PROXY header.
    Missing,
    /// A header that breaks the protocol: what the parser said.
    Malformed(String),
    /// A header longer than [`MAX_HEADER`] (its claimed length, if it said
    /// one).
    Oversized(usize),
    /// A header from an address that is not a load balancer's: refused,
    /// never trusted.
    NotExpected,
}

impl ProxyHeaderError {
    /// The refusal, in a word: a label whose values are fixed.
    pub fn name(&self) -> &'static str {
        match self {
            ProxyHeaderError::Missing => "missing",
            ProxyHeaderError::Malformed(_) => "malformed",
            ProxyHeaderError::Oversized(_) => "oversized",
            ProxyHeaderError::NotExpected => "not_expected",
        }
    }
}

impl fmt::Display for ProxyHeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyHeaderError::Missing => f.write_str(
                "the connection does not begin with a PROXY protocol header, which every \
                 connection from this address must",
            ),
            ProxyHeaderError::Malformed(why) => {
                write!(f, "a malformed PROXY protocol header: {why}")
            }
            ProxyHeaderError::NotExpected => f.write_str(
                "the connection begins with a PROXY protocol header, from an address not named \
                 as a load balancer's (proxy_protocol_from): refused, never trusted",
            ),
            ProxyHeaderError::Oversized(n) => write!(
                f,
                "a PROXY protocol header of {n} bytes or more, past the {MAX_HEADER} a header \
                 may take"
            ),
        }
    }
}

impl std::error::Error for ProxyHeaderError {}

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
    let v1 = starts_as(bytes, V1);
    let v2 = starts_as(bytes, V2);
    if !v1 && !v2 {
        return Err(ProxyHeaderError::Missing);
    }
    // A version 2 header says its length before its addresses: one that
    // claims more than a header may take is refused at once.
    if v2 && bytes.len() >= 16 {
        let claimed = 16 + usize::from(u16::from_be_bytes([bytes[14], bytes[15]]));
        if claimed > MAX_HEADER {
            return Err(ProxyHeaderError::Oversized(claimed));
        }
    }
    let parsed = HeaderResult::parse(&bytes[..bytes.len().min(MAX_HEADER)]);
    if parsed.is_incomplete() {
        if bytes.len() >= MAX_HEADER {
            return Err(ProxyHeaderError::Oversized(bytes.len()));
        }
        return Ok(Status::Incomplete { needed: 1 });
    }
    let (from, used) = match parsed {
        HeaderResult::V1(Ok(header)) => {
            let from = match header.addresses {
                v1::Addresses::Tcp4(a) => ProxiedFrom::Client(SocketAddr::new(
                    IpAddr::V4(a.source_address),
                    a.source_port,
                )),
                v1::Addresses::Tcp6(a) => ProxiedFrom::Client(SocketAddr::new(
                    IpAddr::V6(a.source_address),
                    a.source_port,
                )),
                v1::Addresses::Unknown => ProxiedFrom::Balancer,
            };
            (from, header.header.len())
        }
        HeaderResult::V2(Ok(header)) => {
            let from = match (header.command, header.addresses) {
                (v2::Command::Proxy, v2::Addresses::IPv4(a)) => ProxiedFrom::Client(
                    SocketAddr::new(IpAddr::V4(a.source_address), a.source_port),
                ),
                (v2::Command::Proxy, v2::Addresses::IPv6(a)) => ProxiedFrom::Client(
                    SocketAddr::new(IpAddr::V6(a.source_address), a.source_port),
                ),
                _ => ProxiedFrom::Balancer,
            };
            (from, header.len())
        }
        HeaderResult::V1(Err(e)) => return Err(ProxyHeaderError::Malformed(e.to_string())),
        HeaderResult::V2(Err(e)) => return Err(ProxyHeaderError::Malformed(e.to_string())),
    };
    // What the parser took must be within what it was given.
    if used == 0 || used > bytes.len() {
        return Err(ProxyHeaderError::Malformed(format!(
            "the parser took {used} of {} bytes",
            bytes.len()
        )));
    }
    Ok(Status::Complete((from, used)))
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
    bytes.len() >= 4 && (starts_as(bytes, V1) || starts_as(bytes, V2))
}

/// A network, `address/prefix` (`10.0.0.0/8`, `::1/128`; an address alone
/// is the one address): where PROXY headers are accepted from.
///
/// ```
/// use dendro_wire_std::receive::proxy::Cidr;
///
/// let lb: Cidr = "10.1.0.0/16".parse()?;
/// assert!(lb.contains("10.1.200.3".parse()?));
/// assert!(!lb.contains("10.2.0.1".parse()?));
/// assert!("127.0.0.1".parse::<Cidr>()?.contains("127.0.0.1".parse()?));
/// assert!("10.1.0.0/33".parse::<Cidr>().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    address: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Whether `ip` is in this network (an IPv4 address seen as IPv6,
    /// `::ffff:a.b.c.d`, as its IPv4 self).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.address, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                masked(u128::from(u32::from(net)), 32, self.prefix)
                    == masked(u128::from(u32::from(ip)), 32, self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                masked(u128::from(net), 128, self.prefix)
                    == masked(u128::from(ip), 128, self.prefix)
            }
            _ => false,
        }
    }
}

/// The top `prefix` bits of a `bits`-bit address.
fn masked(address: u128, bits: u32, prefix: u8) -> u128 {
    let keep = u32::from(prefix).min(bits);
    if keep == 0 {
        return 0;
    }
    address >> (bits - keep)
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (address, prefix) = match s.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (s, None),
        };
        let address: IpAddr = address
            .parse()
            .map_err(|e| format!("{s:?}: {e}; write a network as 10.0.0.0/8 or fd00::/8"))?;
        let most = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => most,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= most)
                .ok_or_else(|| format!("{s:?}: the prefix must be a number of 0 to {most}"))?,
        };
        Ok(Cidr { address, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 2 header by hand: PROXY over TCP/IPv4 from 10.0.0.7:40000
    /// to 10.0.0.1:7000, then `tlvs`.
    fn v2(command: u8, tlvs: &[u8]) -> Vec<u8> {
        let mut h = V2.to_vec();
        h.push(0x20 | command);
        h.push(0x11);
        h.extend_from_slice(&(12 + tlvs.len() as u16).to_be_bytes());
        h.extend_from_slice(&[10, 0, 0, 7, 10, 0, 0, 1]);
        h.extend_from_slice(&40000u16.to_be_bytes());
        h.extend_from_slice(&7000u16.to_be_bytes());
        h.extend_from_slice(tlvs);
        h
    }

    const CLIENT: &str = "10.0.0.7:40000";

    #[test]
    fn a_version_2_header_names_the_client_and_its_length() {
        let mut bytes = v2(1, &[]);
        let len = bytes.len();
        bytes.extend_from_slice(b"dendro-repl\0");
        assert_eq!(
            parse_header(&bytes),
            Ok(Status::Complete((
                ProxiedFrom::Client(CLIENT.parse().unwrap()),
                len
            )))
        );
        // Every cut short of the whole header asks for more.
        for cut in 0..len {
            assert!(
                matches!(parse_header(&bytes[..cut]), Ok(Status::Incomplete { .. })),
                "{cut}"
            );
        }
        // A health check (LOCAL) is the balancer's own connection.
        let local = v2(0, &[]);
        assert_eq!(
            parse_header(&local),
            Ok(Status::Complete((ProxiedFrom::Balancer, local.len())))
        );
    }

    #[test]
    fn a_version_1_header_names_the_client() {
        let bytes = b"PROXY TCP6 fd00::7 fd00::1 40000 7000\r\nrest";
        assert_eq!(
            parse_header(bytes),
            Ok(Status::Complete((
                ProxiedFrom::Client("[fd00::7]:40000".parse().unwrap()),
                bytes.len() - 4
            )))
        );
        assert_eq!(
            parse_header(b"PROXY UNKNOWN\r\n"),
            Ok(Status::Complete((ProxiedFrom::Balancer, 15)))
        );
    }

    #[test]
    fn what_is_not_a_header_is_refused_by_name() {
        assert_eq!(
            parse_header(b"dendro-repl\0\x01\0"),
            Err(ProxyHeaderError::Missing)
        );
        assert_eq!(
            parse_header(b"\x16\x03\x01"),
            Err(ProxyHeaderError::Missing)
        );
        assert!(matches!(
            parse_header(b"PROXY TCP4 10.0.0.7 nonsense 1 2\r\n"),
            Err(ProxyHeaderError::Malformed(_))
        ));
        // A version 1 header with no end.
        let long = [b"PROXY TCP4 ".as_slice(), &[b'1'; 200]].concat();
        assert!(parse_header(&long).is_err());
        // A version 2 header that claims more than a header may take, as
        // soon as its length is in.
        let mut huge = v2(1, &[]);
        huge[14..16].copy_from_slice(&60000u16.to_be_bytes());
        assert_eq!(
            parse_header(&huge[..16]),
            Err(ProxyHeaderError::Oversized(16 + 60000))
        );
        // A version 2 command that does not exist.
        assert!(matches!(
            parse_header(&v2(7, &[])),
            Err(ProxyHeaderError::Malformed(_))
        ));
    }

    #[test]
    fn a_network_holds_its_addresses_and_no_others() {
        let v4: Cidr = "192.168.4.0/22".parse().unwrap();
        assert!(v4.contains("192.168.7.255".parse().unwrap()));
        assert!(!v4.contains("192.168.8.0".parse().unwrap()));
        assert!(v4.contains("::ffff:192.168.5.1".parse().unwrap()));
        assert!(!v4.contains("fd00::1".parse().unwrap()));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fdff::1".parse().unwrap()));
        assert!(!v6.contains("fe80::1".parse().unwrap()));
        assert_eq!(v6.to_string(), "fd00::/8");
        for bad in ["10.0.0.0/40", "nonsense", "10.0.0.0/x", "::/129"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }
}
