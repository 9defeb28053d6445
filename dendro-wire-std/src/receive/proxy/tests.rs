//! The header's parse, whole and in pieces: every header, valid or not,
//! has one verdict however its bytes arrive.

use std::collections::HashSet;

use super::*;

/// What the stream past a header begins with.
const STREAM: &[u8] = b"dendro-repl\0\x01\0";

/// A version 2 header by hand: `command` (0 LOCAL, 1 PROXY), `family`
/// (byte 13), `addresses` and `tlvs`.
fn v2(command: u8, family: u8, addresses: &[u8], tlvs: &[u8]) -> Vec<u8> {
    let mut h = v2::SIGNATURE.to_vec();
    h.push(0x20 | command);
    h.push(family);
    h.extend_from_slice(&((addresses.len() + tlvs.len()) as u16).to_be_bytes());
    h.extend_from_slice(addresses);
    h.extend_from_slice(tlvs);
    h
}

/// 10.0.0.7:40000 to 10.0.0.1:7000, as version 2 writes them.
const INET: [u8; 12] = [10, 0, 0, 7, 10, 0, 0, 1, 0x9c, 0x40, 0x1b, 0x58];

/// fd00::7 port 40000 to fd00::1 port 7000, as version 2 writes them.
fn inet6() -> Vec<u8> {
    let mut a = Vec::new();
    a.extend_from_slice(&"fd00::7".parse::<std::net::Ipv6Addr>().unwrap().octets());
    a.extend_from_slice(&"fd00::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
    a.extend_from_slice(&[0x9c, 0x40, 0x1b, 0x58]);
    a
}

/// Two TLVs a balancer sends: a unique id and an AWS endpoint id.
const TLVS: &[u8] = &[0x05, 0, 3, 1, 2, 3, 0xea, 0, 5, 1, b'v', b'p', b'c', b'e'];

fn client(s: &str) -> ProxiedFrom {
    ProxiedFrom::Client(s.parse().unwrap())
}

/// Valid headers, every kind, and whom each names.
fn valid() -> Vec<(Vec<u8>, ProxiedFrom)> {
    let v4 = client("10.0.0.7:40000");
    let v6 = client("[fd00::7]:40000");
    vec![
        (b"PROXY TCP4 10.0.0.7 10.0.0.1 40000 7000\r\n".to_vec(), v4),
        (b"PROXY TCP6 fd00::7 fd00::1 40000 7000\r\n".to_vec(), v6),
        (b"PROXY UNKNOWN\r\n".to_vec(), ProxiedFrom::Balancer),
        (
            b"PROXY UNKNOWN ffff:f::1 ffff:f::2 1 2\r\n".to_vec(),
            ProxiedFrom::Balancer,
        ),
        // The longest version 1 header there is: 104 bytes.
        (
            [
                b"PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ".as_slice(),
                b"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe 65535 0\r\n",
            ]
            .concat(),
            client("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535"),
        ),
        (v2(1, 0x11, &INET, &[]), v4),
        (v2(1, 0x11, &INET, TLVS), v4),
        (v2(1, 0x21, &inet6(), &[]), v6),
        (v2(1, 0x21, &inet6(), TLVS), v6),
        (v2(0, 0x00, &[], &[]), ProxiedFrom::Balancer),
        (v2(0, 0x00, &[], TLVS), ProxiedFrom::Balancer),
        (v2(0, 0x11, &INET, TLVS), ProxiedFrom::Balancer),
        (v2(1, 0x00, &[], &[]), ProxiedFrom::Balancer),
        (v2(1, 0x31, &[0; 216], TLVS), ProxiedFrom::Balancer),
    ]
}

/// `bytes` in every 1-, 2- and 3-piece split (pieces may be empty).
fn splits(bytes: &[u8]) -> impl Iterator<Item = Vec<&[u8]>> {
    let n = bytes.len();
    (0..=n).flat_map(move |i| (i..=n).map(move |j| vec![&bytes[..i], &bytes[i..j], &bytes[j..]]))
}

/// The verdict on `pieces` arriving one after another, as a reader reaches
/// one: the first that is not "more", each judged on all that has arrived.
/// A verdict never takes more than has arrived.
fn fed(pieces: &[&[u8]]) -> Result<Status<(ProxiedFrom, usize)>, ProxyHeaderError> {
    let mut buf = Vec::new();
    let mut verdict = parse_header(&buf);
    for piece in pieces {
        if !matches!(verdict, Ok(Status::Incomplete { .. })) {
            break;
        }
        buf.extend_from_slice(piece);
        verdict = parse_header(&buf);
        if let Ok(Status::Complete((_, used))) = verdict {
            assert!(used <= buf.len(), "{used} of {}", buf.len());
        }
    }
    verdict
}

#[test]
fn a_valid_header_is_accepted_however_its_bytes_arrive() {
    for (header, from) in valid() {
        let want = Ok(Status::Complete((from, header.len())));
        let stream = [header.as_slice(), STREAM].concat();
        for pieces in splits(&stream) {
            assert_eq!(
                fed(&pieces),
                want,
                "{:?} in {pieces:?}",
                header.escape_ascii()
            );
        }
        // Every cut short of its end asks for more, and the head of a
        // version 2 header says how much.
        for cut in 0..header.len() {
            match parse_header(&header[..cut]) {
                Ok(Status::Incomplete { needed }) => {
                    assert!(needed > 0 && cut + needed <= header.len(), "{cut}")
                }
                other => panic!("{:?} cut at {cut}: {other:?}", header.escape_ascii()),
            }
        }
    }
}

/// Headers that are refused, each with what its refusal says.
fn refused() -> Vec<(Vec<u8>, &'static str)> {
    let mut huge = v2(1, 0x11, &INET, &[]);
    huge[14..16].copy_from_slice(&60000u16.to_be_bytes());
    let line = |s: &str| s.as_bytes().to_vec();
    vec![
        (
            line("PROXY UDP4 10.0.0.7 10.0.0.1 40000 7000\r\n"),
            "version 1: the protocol \"UDP4\" at byte 6 is not TCP4, TCP6 or UNKNOWN",
        ),
        (
            line("PROXY TCP4 10.0.0.7 10.0.0.1 40000\r\n"),
            "version 1: \"TCP4\" takes 4 fields after it, each after one space (source and \
          destination address, source and destination port); the line has 3",
        ),
        (
            line("PROXY TCP4 10.0.0.7  10.0.0.1 40000 7000\r\n"),
            "version 1: \"TCP4\" takes 4 fields after it, each after one space (source and \
          destination address, source and destination port); the line has 5",
        ),
        (
            line("PROXY TCP4 10.0.0.300 10.0.0.1 40000 7000\r\n"),
            "version 1: the source address \"10.0.0.300\" at byte 11 is not an IPv4 address, as \
          TCP4 says it is",
        ),
        (
            line("PROXY TCP6 fd00::7 10.0.0.1 40000 7000\r\n"),
            "version 1: the destination address \"10.0.0.1\" at byte 19 is not an IPv6 address, \
          as TCP6 says it is",
        ),
        (
            line("PROXY TCP4 10.0.0.7 10.0.0.1 4x000 7000\r\n"),
            "version 1: the source port \"4x000\" at byte 29 is not a port (a decimal number, 0 \
          to 65535)",
        ),
        (
            line("PROXY TCP4 10.0.0.7 10.0.0.1 40000 65536\r\n"),
            "version 1: the destination port \"65536\" at byte 35 is not a port (a decimal \
          number, 0 to 65535)",
        ),
        (
            line("PROXY TCP4 10.0.0.7 10.0.0.1 40000 7000\n\r\n"),
            "version 1: the destination port \"7000\\n\" at byte 35 is not a port (a decimal \
          number, 0 to 65535)",
        ),
        (
            [b"PROXY TCP4 ".as_slice(), &[b'1'; 96]].concat(),
            "version 1: no CRLF in its first 107 bytes, the most a version 1 header may take",
        ),
        (
            {
                let mut h = v2(1, 0x11, &INET, &[]);
                h[12] = 0x11;
                h
            },
            "version 2: byte 12 (0x11) says version 1; only 2 is known",
        ),
        (
            v2(7, 0x11, &INET, &[]),
            "version 2: byte 12 (0x27) says command 7; only 0 (LOCAL) and 1 (PROXY) are known",
        ),
        (
            v2(1, 0x41, &INET, &[]),
            "version 2: byte 13 (0x41) says address family 4; only 0 (UNSPEC), 1 (INET), 2 \
          (INET6) and 3 (UNIX) are known",
        ),
        (
            v2(1, 0x13, &INET, &[]),
            "version 2: byte 13 (0x13) says transport 3; only 0 (UNSPEC), 1 (STREAM) and 2 \
          (DGRAM) are known",
        ),
        (
            v2(1, 0x21, &INET, &[]),
            "version 2: its length (bytes 14 and 15) is 12, too short for the 36 bytes of \
          addresses its family 2 takes",
        ),
        (
            v2(1, 0x11, &INET, &[0x05, 0, 9, 1, 2, 3]),
            "version 2: the TLV at byte 28 (type 0x05) claims 9 bytes of value and the header \
          holds 3 more",
        ),
        (
            v2(1, 0x11, &INET, &[0x05, 0, 1, 1, 0xea, 0, 5, 1]),
            "version 2: the TLV at byte 32 (type 0xea) claims 5 bytes of value and the header \
          holds 1 more",
        ),
        (
            v2(1, 0x11, &INET, &[0x05, 0]),
            "version 2: the TLV at byte 28 is cut short: its type and length take 3 bytes and \
          the header holds 2 more",
        ),
        (
            huge,
            "a PROXY protocol header of 60016 bytes or more, past the 1024 a header may take",
        ),
        (
            b"dendro-repl\0\x01\0".to_vec(),
            "the connection does not begin with a PROXY protocol header, which every connection \
          from this address must",
        ),
    ]
}

#[test]
fn each_refusal_says_what_is_wrong_and_where_however_the_bytes_arrive() {
    let mut said = HashSet::new();
    for (bytes, says) in refused() {
        let whole = parse_header(&bytes).expect_err(&format!("{:?}", bytes.escape_ascii()));
        let text = match &whole {
            ProxyHeaderError::Malformed(why) => why.clone(),
            other => other.to_string(),
        };
        assert_eq!(text, says);
        assert!(said.insert(text), "said twice: {says}");
        let stream = [bytes.as_slice(), STREAM].concat();
        for pieces in splits(&stream) {
            assert_eq!(fed(&pieces), Err(whole.clone()), "{pieces:?}");
        }
    }
}

#[test]
fn a_header_is_read_no_further_than_its_bound() {
    // A version 1 line without its CRLF: more, up to 106 bytes; refused at
    // 107, as a CRLF could then end it only past the most it may take.
    let mut v1 = b"PROXY TCP4 ".to_vec();
    v1.resize(106, b'1');
    assert!(matches!(parse_header(&v1), Ok(Status::Incomplete { .. })));
    v1.push(b'\r');
    assert!(parse_header(&v1).is_err());
    // A version 2 header that claims more than a header may take, as soon
    // as its length is in; one that claims the most is waited for.
    let mut v2 = v2(1, 0x11, &INET, &[]);
    v2[14..16].copy_from_slice(&((MAX_HEADER - 15) as u16).to_be_bytes());
    assert_eq!(
        parse_header(&v2[..16]),
        Err(ProxyHeaderError::Oversized(MAX_HEADER + 1))
    );
    v2[14..16].copy_from_slice(&((MAX_HEADER - 16) as u16).to_be_bytes());
    assert_eq!(
        parse_header(&v2[..16]),
        Ok(Status::Incomplete {
            needed: MAX_HEADER - 16
        })
    );
}

#[test]
fn only_a_headers_first_bytes_look_like_one() {
    assert!(looks_like_header(b"PROX"));
    assert!(looks_like_header(b"\r\n\r\n\0"));
    assert!(!looks_like_header(b"PRO"));
    assert!(!looks_like_header(b"dendro-repl\0"));
    assert_eq!(
        parse_header(b"\x16\x03\x01"),
        Err(ProxyHeaderError::Missing)
    );
}
