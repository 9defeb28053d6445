//! [`Outbox`]: one polled frame at a time in the caller's buffer, handed to
//! a link in as many pieces as it takes, for a socket that accepts part of
//! what it is given (smoltcp's `send_slice`, a full TCP window).

use super::config::Transmit;
use super::error::PublishError;
use super::machine::Publisher;
use crate::storage::Storage;

/// The frame being sent, in a buffer the caller lends, and how much of it
/// the link has taken.
///
/// [`Publisher::poll_transmit`] writes a whole frame at once; a link that
/// takes bytes as its window allows needs the rest of the frame later,
/// without a copy and without the publisher waiting on it. The outbox
/// holds that frame: [`pending`](Self::pending) gives the bytes not yet
/// taken (polling the next frame into the buffer once the last is gone),
/// [`advance`](Self::advance) says how many the link took. Between the two
/// the caller may observe rows and end intervals as usual: the frame in
/// the outbox has left the publisher, which counts it sent.
///
/// ```
/// use dendro_wire_core::{Map, Outbox, Publisher, PublisherConfig, SourceDecl};
///
/// let mut p: Publisher<[u8; 512], 1> = Publisher::new(PublisherConfig {
///     full_every: 60,
///     frame_buffer: 256,
/// });
/// let decl = SourceDecl {
///     uuid: None,
///     labels: Map::EMPTY,
///     metadata: Map::EMPTY,
///     clock_anchor_wall_ns: 0,
///     complete: false,
///     streams: &["t"],
///     index_stream: None,
/// };
/// let s = p.add_source(&decl, [0; 512])?;
/// p.connected();
/// p.observe(s.stream(0), 1, 0, &[7; 4])?;
/// p.end_interval();
///
/// // A link that takes at most 5 bytes a call.
/// let (mut frame_buffer, mut wire) = ([0u8; 256], Vec::new());
/// let mut out = Outbox::new(&mut frame_buffer);
/// while let Some(bytes) = out.pending(&mut p)? {
///     let took = bytes.len().min(5);
///     wire.extend_from_slice(&bytes[..took]);
///     out.advance(took);
/// }
/// assert_eq!(p.stats().frames_sent, 2); // the handshake, the Rows frame
/// assert_eq!(out.frames_done(), 2);
/// # Ok::<(), dendro_wire_core::PublishError>(())
/// ```
#[derive(Debug)]
pub struct Outbox<'a> {
    buf: &'a mut [u8],
    /// The frame in the buffer: its bytes, and those taken.
    len: usize,
    taken: usize,
    frame: Option<Transmit>,
    done: u64,
}

impl<'a> Outbox<'a> {
    /// An empty outbox over `buf`, which should hold
    /// [`frame_buffer`](crate::PublisherConfig::frame_buffer) bytes: the
    /// largest frame the publisher makes.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Outbox {
            buf,
            len: 0,
            taken: 0,
            frame: None,
            done: 0,
        }
    }

    /// The bytes of the frame under way the link has not taken, polling
    /// the next frame from `publisher` when none is under way; `None` when
    /// nothing is left to send.
    pub fn pending<S: Storage, const N: usize>(
        &mut self,
        publisher: &mut Publisher<S, N>,
    ) -> Result<Option<&[u8]>, PublishError> {
        if self.frame.is_none() {
            match publisher.poll_transmit(self.buf)? {
                Some((bytes, t)) => {
                    (self.len, self.taken) = (bytes.len(), 0);
                    self.frame = Some(t);
                }
                None => return Ok(None),
            }
        }
        Ok(self.buf.get(self.taken..self.len))
    }

    /// The link took `n` more bytes of the frame under way (at most what
    /// [`pending`](Self::pending) gave); the frame is done once it has
    /// taken them all.
    pub fn advance(&mut self, n: usize) {
        self.taken = (self.taken + n).min(self.len);
        if self.frame.is_some() && self.taken == self.len {
            self.frame = None;
            self.done += 1;
        }
    }

    /// The frame under way, if one has been polled and not all taken, and
    /// how many of its bytes the link took.
    pub fn under_way(&self) -> Option<(Transmit, usize)> {
        self.frame.map(|t| (t, self.taken))
    }

    /// Forget the frame under way, for a link that went down with part of
    /// it sent: the next connection starts at a frame boundary, with its
    /// preamble. The frame given up is counted in `publisher`'s stats
    /// ([`frames_cut`](crate::PublisherStats::frames_cut),
    /// [`rows_cut`](crate::PublisherStats::rows_cut)) and returned.
    pub fn abandon<S: Storage, const N: usize>(
        &mut self,
        publisher: &mut Publisher<S, N>,
    ) -> Option<Transmit> {
        (self.len, self.taken) = (0, 0);
        let cut = self.frame.take()?;
        publisher.cut(&cut);
        Some(cut)
    }

    /// Frames the link has taken whole.
    pub fn frames_done(&self) -> u64 {
        self.done
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Outbox<'_> {
    /// The frame under way and how much of it the link took, not the
    /// buffer's bytes.
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Outbox frame={} taken={=usize} of {=usize} done={=u64}",
            self.frame,
            self.taken,
            self.len,
            self.done
        );
    }
}
