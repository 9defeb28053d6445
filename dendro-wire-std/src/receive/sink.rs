//! [`Sink`]: where a subscriber's applied frames land, and
//! [`CountingSink`], the sink that only counts.

use dendro_wire_core::{ClockOffset, Handshake, Index, Rows, Segment, SourceUpdate};

/// What a sink's failure carries.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Where applied frames land: one method per destination table of
/// [protocol §4](dendro_wire_core::protocol) (and `SourceUpdate`'s), each called only for a frame the rules let
/// through. `ordinal` is the connection's handshake ordinal; a sink that
/// outlives connections maps it to its own source at
/// [`open_source`](Sink::open_source) and forgets the mapping at
/// [`end_connection`](Sink::end_connection).
pub trait Sink {
    /// The encoder this sink stores rows for, if it cares: a handshake whose
    /// `encoder` metadata names another is refused.
    fn expected_encoder(&self) -> Option<&str> {
        None
    }
    /// A handshake: the source, bound for `sources`.
    fn open_source(&mut self, ordinal: u32, handshake: &Handshake<'_>) -> Result<(), SinkError>;
    /// An index entry, bound for `caller_rows`.
    fn caller_rows(&mut self, ordinal: u32, index: &Index<'_>) -> Result<(), SinkError>;
    /// Rows the rules let through, bound for `wal`.
    fn wal(&mut self, ordinal: u32, rows: &Rows<'_>) -> Result<(), SinkError>;
    /// A segment, bound for `segments`; `Ok(false)` if already held.
    fn segment(&mut self, ordinal: u32, segment: &Segment<'_>) -> Result<bool, SinkError>;
    /// A clock-drift observation, bound for `clock_offsets`.
    fn clock_offset(&mut self, ordinal: u32, offset: &ClockOffset) -> Result<(), SinkError>;
    /// New labels and metadata for a source.
    fn source_update(&mut self, ordinal: u32, update: &SourceUpdate<'_>) -> Result<(), SinkError>;
    /// The connection ended; its ordinals mean nothing from here on.
    fn end_connection(&mut self) -> Result<(), SinkError> {
        Ok(())
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
            fn caller_rows(&mut self, ordinal: u32, i: &Index<'_>) -> Result<(), SinkError> {
                (**self).caller_rows(ordinal, i)
            }
            fn wal(&mut self, ordinal: u32, r: &Rows<'_>) -> Result<(), SinkError> {
                (**self).wal(ordinal, r)
            }
            fn segment(&mut self, ordinal: u32, s: &Segment<'_>) -> Result<bool, SinkError> {
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
    fn caller_rows(&mut self, _: u32, _: &Index<'_>) -> Result<(), SinkError> {
        self.index_entries += 1;
        Ok(())
    }
    fn wal(&mut self, _: u32, rows: &Rows<'_>) -> Result<(), SinkError> {
        self.rows += rows.rows.len() as u64;
        Ok(())
    }
    fn segment(&mut self, _: u32, _: &Segment<'_>) -> Result<bool, SinkError> {
        self.segments += 1;
        Ok(true)
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
