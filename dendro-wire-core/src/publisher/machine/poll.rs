//! The publisher's frames handed out: what is due, polled into a buffer
//! or lent from a source's storage, dropped when the link cannot carry it;
//! and frames built elsewhere, encoded after the rules.

use super::PublisherIn;
use crate::codec::copy;
use crate::frame::Frame;
use crate::publisher::config::{SourceId, Transmit};
use crate::publisher::error::PublishError;
use crate::publisher::outgoing::{next_due, Due};
use crate::publisher::source::Dropped;
use crate::publisher::stats::Waiting;
use crate::publisher::table::SourceTable;
use crate::storage::Storage;

impl<S: Storage, T: SourceTable<S>> PublisherIn<S, T> {
    /// What is due and not yet polled: its frames, their bytes and the rows
    /// observed in them. A caller whose link cannot carry it before the
    /// next interval ends may [`drop_waiting`](Self::drop_waiting) rather
    /// than send part of it late.
    pub fn waiting(&self) -> Waiting {
        let mut w = Waiting::default();
        for s in self.sources.sources() {
            s.add_waiting(&mut w);
        }
        w
    }

    /// Drop every frame due, as [`end_interval`](Self::end_interval) drops
    /// those of the interval before: lost in transit, counted, each `seq`
    /// spent. For a link that is up but cannot carry them; a link that is
    /// down is [`disconnected`](Self::disconnected). Handshakes stay due.
    pub fn drop_waiting(&mut self) {
        self.drop_due(Dropped::Lost);
    }

    /// Write the next frame the rules require into `buf`, and return its
    /// bytes there and what it is: `None` when none is left. A buffer too
    /// small is refused with the size needed and the frame stays due; a
    /// buffer of [`frame_buffer`](crate::PublisherConfig::frame_buffer) bytes
    /// always holds it. An [`Outbox`](crate::Outbox) holds one frame written this way for
    /// a link that takes it in pieces.
    pub fn poll_transmit<'b>(
        &mut self,
        buf: &'b mut [u8],
    ) -> Result<Option<(&'b [u8], Transmit)>, PublishError> {
        let Some(due) = self.peek() else {
            return Ok(None);
        };
        let len = due.range.len();
        if buf.len() < len {
            return Err(PublishError::BufferTooSmall {
                needed: len,
                have: buf.len(),
            });
        }
        let t = self.take(&due)?;
        let shrank = PublishError::StorageShrank {
            source: due.source as u32,
        };
        let written = buf.get_mut(..len).ok_or(shrank)?;
        let stored = self.sources.sources().get(due.source);
        let stored = stored.and_then(|s| s.stored(due.range));
        stored.and_then(|src| copy(written, src)).ok_or(shrank)?;
        Ok(Some((written, t)))
    }

    /// The next frame, as [`poll_transmit`](Self::poll_transmit) gives it,
    /// without a copy: every frame due is held encoded in its source's
    /// storage, and lent from there. For a caller that hands the bytes
    /// straight to a transport.
    pub fn poll_frame(&mut self) -> Result<Option<(&[u8], Transmit)>, PublishError> {
        let Some(due) = self.peek() else {
            return Ok(None);
        };
        let t = self.take(&due)?;
        let stored = self.sources.sources().get(due.source);
        match stored.and_then(|s| s.stored(due.range)) {
            Some(bytes) => Ok(Some((bytes, t))),
            None => Err(PublishError::StorageShrank {
                source: due.source as u32,
            }),
        }
    }

    /// The size of the frame the next poll returns, or `None` if none is
    /// due: for a caller that sizes its buffer to the frame.
    pub fn next_frame_len(&self) -> Option<usize> {
        self.peek().map(|due| due.range.len())
    }

    /// Encode a frame built elsewhere — a `Segment`, a `ClockOffset`, a
    /// frame of a kind this crate does not know — into `buf`, after the
    /// rules: its source must be handshaken on this connection (rule 1).
    /// Returns its length.
    pub fn encode_passthrough(
        &mut self,
        frame: &Frame<'_>,
        buf: &mut [u8],
    ) -> Result<usize, PublishError> {
        match frame {
            Frame::Segment(_) | Frame::ClockOffset(_) | Frame::Unknown { .. } => {}
            other => return Err(PublishError::NotPassthrough { kind: other.kind() }),
        }
        let mut s = None;
        if let Some(source) = frame.source() {
            let found = self.source(SourceId(source))?;
            s = Some(source as usize);
            if !found.handshake_sent() {
                return Err(PublishError::NotHandshaken {
                    source,
                    kind: frame.kind(),
                });
            }
        }
        let n = frame.emit(buf)?;
        match s.and_then(|i| self.sources.sources_mut().get_mut(i)) {
            Some(s) => s.count_sent(),
            None => self.stats.frames_sent += 1,
        }
        Ok(n)
    }

    /// Drop every frame still due, counting it as `why` says.
    pub(super) fn drop_due(&mut self, why: Dropped) {
        for s in self.sources.sources_mut() {
            s.drop_due(why);
        }
    }

    /// The next frame due, without taking it.
    fn peek(&self) -> Option<Due> {
        next_due(self.sources.sources(), self.policy, self.turn)
    }

    /// Take the frame [`peek`](Self::peek) found: record that it went out,
    /// and say what it is.
    fn take(&mut self, due: &Due) -> Result<Transmit, PublishError> {
        let source = due.source as u32;
        let s = self
            .sources
            .sources_mut()
            .get_mut(due.source)
            .ok_or(PublishError::UnknownSource { source })?;
        s.take(due.handshake, due.range.clone())
    }

    /// A frame polled and then cut off by its link: counted, not sent
    /// whole.
    pub(in crate::publisher) fn cut(&mut self, t: &Transmit) {
        self.stats.frames_cut += 1;
        self.stats.rows_cut += u64::from(t.rows);
    }
}
