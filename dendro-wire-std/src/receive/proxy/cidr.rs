//! The networks PROXY headers are accepted from.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

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
