//! [`Sink`]: where a subscriber's applied frames land, and
//! [`CountingSink`], the sink that only counts.

use dendro_wire_core::{ClockOffset, Handshake, Index, Rows, Segment, SourceUpdate};

use super::backlog::Backlog;

/// What a sink's failure carries.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// What [`Sink::segment`] did with a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentStored {
    /// The sink took it: a segment it did not hold, or one it does not keep
    /// at all.
    Added,
    /// The sink already held this segment, and kept the one it had: counted
    /// in [`SinkSubscriber::segments_held`](crate::SinkSubscriber::segments_held).
    AlreadyHeld,
    /// The sink handed it to a writer that decides later, on its own
    /// thread, whether it already held it, and counts that there: a
    /// connection does not wait on a commit to learn it.
    Queued,
}

/// Where applied frames land: one method per kind of frame that carries
/// data, each called only for a frame the subscriber's rules let through,
/// in the order the frames arrived.
///
/// Only [`rows`](Sink::rows) must be written; every other method does
/// nothing by default, so a sink that counts rows is one method:
///
/// ```
/// use dendro_wire_std::{Rows, Sink, SinkError};
///
/// #[derive(Default)]
/// struct RowCount(u64);
///
/// impl Sink for RowCount {
///     fn rows(&mut self, _source: u32, rows: &Rows<'_>) -> Result<(), SinkError> {
///         self.0 += rows.rows.len() as u64;
///         Ok(())
///     }
/// }
/// ```
///
/// `source` is the connection's handshake ordinal (the frame's own
/// `source` field). It means something only within one connection: a sink
/// that outlives connections maps it to its own source at
/// [`open_source`](Sink::open_source) (from the handshake's uuid or labels)
/// and forgets the mapping at [`end_connection`](Sink::end_connection).
///
/// An error from any method ends the connection, said as the sink's.
/// [Protocol §4](dendro_wire_core::protocol) says what each kind of frame
/// carries, and where dendro's own archive stores it.
pub trait Sink {
    /// The `encoder` this sink stores rows for, if it cares: a handshake
    /// whose `encoder` metadata names another is refused. `None` by
    /// default: any encoder.
    fn expected_encoder(&self) -> Option<&str> {
        None
    }
    /// A source opened by a handshake: its uuid, labels and metadata. Does
    /// nothing by default.
    fn open_source(&mut self, source: u32, handshake: &Handshake<'_>) -> Result<(), SinkError> {
        let _ = (source, handshake);
        Ok(())
    }
    /// Rows the rules let through (never an empty frame, never rows the
    /// rules skip), in the order observed.
    fn rows(&mut self, source: u32, rows: &Rows<'_>) -> Result<(), SinkError>;
    /// An entry of a source's index: a slot state, full or delta (its
    /// `blob` is opaque to the protocol). Does nothing by default.
    fn index_entry(&mut self, source: u32, index: &Index<'_>) -> Result<(), SinkError> {
        let _ = (source, index);
        Ok(())
    }
    /// A segment: rows already sealed into one file. Says whether the sink
    /// added it or already held it; by default it is dropped, said as
    /// [`SegmentStored::Added`].
    fn segment(&mut self, source: u32, segment: &Segment<'_>) -> Result<SegmentStored, SinkError> {
        let _ = (source, segment);
        Ok(SegmentStored::Added)
    }
    /// A clock-drift observation. Does nothing by default.
    fn clock_offset(&mut self, source: u32, offset: &ClockOffset) -> Result<(), SinkError> {
        let _ = (source, offset);
        Ok(())
    }
    /// New labels and metadata for an open source. Does nothing by default.
    fn source_update(&mut self, source: u32, update: &SourceUpdate<'_>) -> Result<(), SinkError> {
        let _ = (source, update);
        Ok(())
    }
    /// The connection ended; its ordinals mean nothing from here on. Does
    /// nothing by default.
    fn end_connection(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    /// The work this sink has taken and not yet finished, if it queues
    /// any: while it is full, a receiver applies no more of a connection's
    /// frames and stops reading it ([`Backlog`]). `None` by default: a
    /// sink that finishes each frame as it is called.
    fn backlog(&self) -> Option<&Backlog> {
        None
    }
}

/// Forwards every [`Sink`] method through a pointer to a sink.
macro_rules! forward_sink {
    ($($ptr:ty),*) => {$(
        impl<S: Sink + ?Sized> Sink for $ptr {
            fn expected_encoder(&self) -> Option<&str> {
                (**self).expected_encoder()
            }
            fn open_source(&mut self, ordinal: u32, h: &Handshake<'_>) -> Result<(), SinkError> {
                (**self).open_source(ordinal, h)
            }
            fn rows(&mut self, ordinal: u32, r: &Rows<'_>) -> Result<(), SinkError> {
                (**self).rows(ordinal, r)
            }
            fn index_entry(&mut self, ordinal: u32, i: &Index<'_>) -> Result<(), SinkError> {
                (**self).index_entry(ordinal, i)
            }
            fn segment(&mut self, ordinal: u32, s: &Segment<'_>) -> Result<SegmentStored, SinkError> {
                (**self).segment(ordinal, s)
            }
            fn clock_offset(&mut self, ordinal: u32, c: &ClockOffset) -> Result<(), SinkError> {
                (**self).clock_offset(ordinal, c)
            }
            fn source_update(&mut self, ordinal: u32, u: &SourceUpdate<'_>) -> Result<(), SinkError> {
                (**self).source_update(ordinal, u)
            }
            fn end_connection(&mut self) -> Result<(), SinkError> {
                (**self).end_connection()
            }
            fn backlog(&self) -> Option<&Backlog> {
                (**self).backlog()
            }
        }
    )*};
}

forward_sink!(&mut S, Box<S>);

/// A sink that keeps only counts, each taken from a frame's head: it never
/// walks a frame's rows, so `check` costs what decoding costs. For `check`,
/// the demo, and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountingSink {
    /// The encoder to insist on, if any.
    pub encoder: Option<String>,
    /// Rows written.
    pub rows: u64,
    /// Index entries written.
    pub index_entries: u64,
    /// Segments written.
    pub segments: u64,
    /// Clock offsets written.
    pub clock_offsets: u64,
    /// Sources opened, over all connections.
    pub sources: u64,
    /// Source updates applied.
    pub source_updates: u64,
    /// Connections ended.
    pub connections: u64,
}

impl Sink for CountingSink {
    fn expected_encoder(&self) -> Option<&str> {
        self.encoder.as_deref()
    }
    fn open_source(&mut self, _: u32, _: &Handshake<'_>) -> Result<(), SinkError> {
        self.sources += 1;
        Ok(())
    }
    fn rows(&mut self, _: u32, rows: &Rows<'_>) -> Result<(), SinkError> {
        self.rows += rows.rows.len() as u64;
        Ok(())
    }
    fn index_entry(&mut self, _: u32, _: &Index<'_>) -> Result<(), SinkError> {
        self.index_entries += 1;
        Ok(())
    }
    fn segment(&mut self, _: u32, _: &Segment<'_>) -> Result<SegmentStored, SinkError> {
        self.segments += 1;
        Ok(SegmentStored::Added)
    }
    fn clock_offset(&mut self, _: u32, _: &ClockOffset) -> Result<(), SinkError> {
        self.clock_offsets += 1;
        Ok(())
    }
    fn source_update(&mut self, _: u32, _: &SourceUpdate<'_>) -> Result<(), SinkError> {
        self.source_updates += 1;
        Ok(())
    }
    fn end_connection(&mut self) -> Result<(), SinkError> {
        self.connections += 1;
        Ok(())
    }
}
