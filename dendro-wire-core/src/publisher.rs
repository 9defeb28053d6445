//! The publisher's side of the protocol rules (WIRE.md §5), as a state
//! machine with a bounded table of sources.

use heapless::Vec;

use crate::frame::Frame;
use crate::index::IndexKind;
use crate::subscriber::ProtocolError;

#[derive(Clone, Copy, Debug)]
struct SourceState {
    /// `None` until the first `Rows` frame of a source opened by
    /// [`Publisher::admit`], which may start anywhere.
    next_seq: Option<u64>,
    seen_full: bool,
}

/// The publisher's rules for one connection, over at most `N` sources.
///
/// It hands out what the rules fix, so a publisher cannot get them wrong:
/// ordinals from 0, one per [`handshake`](Self::handshake) (§4.1); each
/// source's `Rows` frames numbered `seq`, `seq + 1`, … exactly
/// ([`next_seq`](Self::next_seq), §4.3). It refuses `Rows`, `Index` or any
/// other frame for a source before its handshake (rule 1), and a `Delta`
/// before the source's first `Full` (rule 2). [`admit`](Self::admit) applies
/// the same rules to a frame built elsewhere, before it is sent.
///
/// ```
/// use dendro_wire_core::{IndexKind, ProtocolError, Publisher};
///
/// let mut publisher = Publisher::<4>::new();
/// let cpu = publisher.handshake(0).unwrap();
/// assert_eq!(cpu, 0);
/// assert_eq!(publisher.index(cpu, IndexKind::Delta), Err(ProtocolError::DeltaBeforeFull { source: 0 }));
/// publisher.index(cpu, IndexKind::Full).unwrap();
/// assert_eq!(publisher.next_seq(cpu), Ok(0));
/// assert_eq!(publisher.next_seq(cpu), Ok(1));
///
/// // A reconnect starts again from ordinal 0 (rule 8).
/// publisher.reset();
/// assert_eq!(publisher.handshake(0), Ok(0));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Publisher<const N: usize> {
    sources: Vec<SourceState, N>,
}

impl<const N: usize> Publisher<N> {
    /// A publisher for a new connection.
    pub const fn new() -> Self {
        Publisher {
            sources: Vec::new(),
        }
    }

    /// Forget every source: a new connection starts with handshakes from
    /// ordinal 0 and full state (rule 8).
    pub fn reset(&mut self) {
        self.sources.clear();
    }

    /// The ordinal the next handshake takes.
    pub fn next_ordinal(&self) -> u32 {
        self.sources.len() as u32
    }

    /// The sources handshaken on this connection.
    pub fn source_count(&self) -> usize {
        self.sources.len()
    }

    /// Open a source: returns the ordinal its handshake and every later frame
    /// carry. Its first `Rows` frame will carry `first_seq` (any value: only
    /// the step between frames is compared).
    pub fn handshake(&mut self, first_seq: u64) -> Result<u32, ProtocolError> {
        self.open(Some(first_seq))
    }

    fn open(&mut self, next_seq: Option<u64>) -> Result<u32, ProtocolError> {
        let ordinal = self.next_ordinal();
        self.sources
            .push(SourceState {
                next_seq,
                seen_full: false,
            })
            .map_err(|_| ProtocolError::TooManySources { limit: N })?;
        Ok(ordinal)
    }

    fn source(&mut self, source: u32, kind: u8) -> Result<&mut SourceState, ProtocolError> {
        self.sources
            .get_mut(source as usize)
            .ok_or(ProtocolError::UnknownSource { source, kind })
    }

    /// Record an `Index` entry about to be sent.
    pub fn index(&mut self, source: u32, kind: IndexKind) -> Result<(), ProtocolError> {
        let st = self.source(source, crate::kind::INDEX)?;
        match kind {
            IndexKind::Full => st.seen_full = true,
            IndexKind::Delta if !st.seen_full => {
                return Err(ProtocolError::DeltaBeforeFull { source })
            }
            IndexKind::Delta => {}
        }
        Ok(())
    }

    /// The `seq` of the source's next `Rows` frame, taken: call once per
    /// interval, whether or not the frame then reaches the wire, so a frame
    /// dropped on the way shows as a gap (rule 6).
    pub fn next_seq(&mut self, source: u32) -> Result<u64, ProtocolError> {
        let st = self.source(source, crate::kind::ROWS)?;
        let seq = st.next_seq.unwrap_or(0);
        st.next_seq = Some(seq.wrapping_add(1));
        Ok(seq)
    }

    /// Check a frame built elsewhere against the rules, and record it.
    /// On an error nothing changes.
    pub fn admit(&mut self, frame: &Frame<'_>) -> Result<(), ProtocolError> {
        let kind = frame.kind();
        match frame {
            Frame::Handshake(h) => {
                let expected = self.next_ordinal();
                if h.source != expected {
                    return Err(ProtocolError::WrongOrdinal {
                        expected,
                        got: h.source,
                    });
                }
                self.open(None).map(drop)
            }
            Frame::Index(i) => self.index(i.source, i.kind),
            Frame::Rows(r) => {
                let st = self.source(r.source, kind)?;
                if let Some(expected) = st.next_seq.filter(|&e| e != r.seq) {
                    return Err(ProtocolError::WrongSeq {
                        source: r.source,
                        expected,
                        got: r.seq,
                    });
                }
                st.next_seq = Some(r.seq.wrapping_add(1));
                Ok(())
            }
            Frame::Unknown { .. } => Ok(()),
            other => {
                let source = other.source().unwrap_or(u32::MAX);
                self.source(source, kind).map(drop)
            }
        }
    }
}
