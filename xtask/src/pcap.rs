//! Synthetic captures for the Wireshark dissector's tests: a classic pcap
//! file of Ethernet, IPv4 and TCP, written here byte by byte, so a test
//! decides exactly where a stream is cut into segments. A leaf: it uses no
//! other module here.

/// One TCP connection's two ends and the next sequence number each sends.
pub(crate) struct Connection {
    client: ([u8; 4], u16),
    server: ([u8; 4], u16),
    client_seq: u32,
    server_seq: u32,
}

/// A capture being written: the pcap file header, then one record a
/// packet, a millisecond apart.
pub(crate) struct Pcap {
    bytes: Vec<u8>,
    micros: u64,
}

const SYN: u8 = 0x02;
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

impl Pcap {
    pub(crate) fn new() -> Pcap {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        bytes.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        bytes.extend_from_slice(&262_144u32.to_le_bytes()); // snaplen
        bytes.extend_from_slice(&1u32.to_le_bytes()); // Ethernet
        Pcap {
            bytes,
            micros: 1_700_000_000_000_000,
        }
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The three-way handshake of a connection from `client_port` on
    /// 10.0.0.`host` to `server_port` on 10.0.0.1.
    pub(crate) fn open(&mut self, host: u8, client_port: u16, server_port: u16) -> Connection {
        let mut c = Connection {
            client: ([10, 0, 0, host], client_port),
            server: ([10, 0, 0, 1], server_port),
            client_seq: 0x1000_0000u32.wrapping_mul(host as u32).wrapping_add(7),
            server_seq: 0x7000_0000,
        };
        self.segment(&mut c, true, SYN, &[]);
        self.segment(&mut c, false, SYN | ACK, &[]);
        self.segment(&mut c, true, ACK, &[]);
        c
    }

    /// `data` from the client in one segment.
    pub(crate) fn send(&mut self, c: &mut Connection, data: &[u8]) {
        self.segment(c, true, PSH | ACK, data);
    }

    /// The client's FIN, and the server's.
    pub(crate) fn close(&mut self, c: &mut Connection) {
        self.segment(c, true, FIN | ACK, &[]);
        self.segment(c, false, FIN | ACK, &[]);
    }

    fn segment(&mut self, c: &mut Connection, from_client: bool, flags: u8, data: &[u8]) {
        let (from, to) = match from_client {
            true => (c.client, c.server),
            false => (c.server, c.client),
        };
        let (seq, ack) = match from_client {
            true => (c.client_seq, c.server_seq),
            false => (c.server_seq, c.client_seq),
        };
        let mut tcp = Vec::with_capacity(20 + data.len());
        tcp.extend_from_slice(&from.1.to_be_bytes());
        tcp.extend_from_slice(&to.1.to_be_bytes());
        tcp.extend_from_slice(&seq.to_be_bytes());
        tcp.extend_from_slice(&(if flags & ACK != 0 { ack } else { 0 }).to_be_bytes());
        tcp.push(5 << 4);
        tcp.push(flags);
        tcp.extend_from_slice(&65_535u16.to_be_bytes());
        tcp.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        tcp.extend_from_slice(data);
        let mut pseudo = Vec::with_capacity(12 + tcp.len());
        pseudo.extend_from_slice(&from.0);
        pseudo.extend_from_slice(&to.0);
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(&tcp);
        let sum = checksum(&pseudo);
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());

        let mut ip = Vec::with_capacity(20);
        ip.extend_from_slice(&[0x45, 0]);
        ip.extend_from_slice(&((20 + tcp.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
        ip.extend_from_slice(&from.0);
        ip.extend_from_slice(&to.0);
        let sum = checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());

        let mut packet = Vec::with_capacity(14 + 20 + tcp.len());
        packet.extend_from_slice(&[2, 0, 0, 0, 0, to.0[3]]);
        packet.extend_from_slice(&[2, 0, 0, 0, 0, from.0[3]]);
        packet.extend_from_slice(&0x0800u16.to_be_bytes());
        packet.extend_from_slice(&ip);
        packet.extend_from_slice(&tcp);

        self.micros += 1_000;
        let len = packet.len() as u32;
        self.bytes
            .extend_from_slice(&((self.micros / 1_000_000) as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&((self.micros % 1_000_000) as u32).to_le_bytes());
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(&packet);

        let used = data.len() as u32 + u32::from(flags & (SYN | FIN) != 0);
        match from_client {
            true => c.client_seq = c.client_seq.wrapping_add(used),
            false => c.server_seq = c.server_seq.wrapping_add(used),
        }
    }
}

/// The Internet checksum (RFC 1071).
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A small deterministic generator (xorshift64*), so a failing split can
/// be run again from its seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// `data` cut at random points into segments: mostly a few bytes (a
/// preamble or a length split anywhere), sometimes up to a few KiB (many
/// frames in one).
pub(crate) fn split<'a>(data: &'a [u8], rng: &mut Rng) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let most = match rng.below(4) {
            0 => 3,
            1 => 20,
            2 => 200,
            _ => 4_000,
        };
        let n = (1 + rng.below(most) as usize).min(rest.len());
        let (head, tail) = rest.split_at(n);
        out.push(head);
        rest = tail;
    }
    out
}
