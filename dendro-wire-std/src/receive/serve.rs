//! [`serve`] and (feature `tokio`) [`serve_async`]: one connection's stream
//! applied to a subscriber, blocking or on tokio.

use std::io::Read;

use super::error::ServeError;
use super::sink::Sink;
use super::subscriber::SinkSubscriber;
use crate::reader::FrameReader;

/// Read one connection's stream and apply it to `subscriber` until a clean
/// end or an error, blocking. Bounds on time are the reader's own (a
/// socket's read timeout, say); memory follows the bytes that arrived, as
/// [`FrameReader`] keeps it, and a sink's [backlog](super::Backlog), when it
/// is full, is waited for before the next frame is read.
///
/// ```
/// use dendro_wire_core::{ClockOffset, Frame, Handshake, Map};
/// use dendro_wire_std::receive::serve;
/// use dendro_wire_std::{CountingSink, FrameWriter, SinkSubscriber};
///
/// let mut w = FrameWriter::new(Vec::new())?;
/// w.write_frame(&Frame::Handshake(Handshake { source: 0, uuid: None, labels: Map::EMPTY,
///     metadata: Map::EMPTY, clock_anchor_wall_ns: 0, complete: false }))?;
/// w.write_frame(&Frame::ClockOffset(ClockOffset { source: 0, ts: 1, offset_ns: 2 }))?;
/// let stream = w.into_inner();
///
/// let mut subscriber = SinkSubscriber::new(CountingSink::default());
/// serve(&stream[..], &mut subscriber)?;
/// assert_eq!(subscriber.tally().clock_offsets, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn serve<R: Read, S: Sink>(
    reader: R,
    subscriber: &mut SinkSubscriber<S>,
) -> Result<(), ServeError> {
    let mut frames = FrameReader::new(reader).map_err(ServeError::Read)?;
    while let Some((frame, at)) = frames.next_frame_at().map_err(ServeError::Read)? {
        subscriber
            .apply(&frame)
            .map_err(|e| ServeError::Subscribe(at, e))?;
        // A sink that queues work is waited for before the next frame is
        // read, as a session waits for it.
        if let Some(backlog) = subscriber.backlog() {
            backlog.wait_for_room();
        }
    }
    Ok(())
}

/// Read one connection's stream and apply it to `subscriber`, until a clean
/// end or an error, on tokio: the same session a [`Server`](super::Server)
/// runs for each connection, with its default bounds (the buffer grows with
/// the bytes that arrived; a minute with no whole frame, or a minute for one
/// frame to finish, ends the connection).
#[cfg(feature = "tokio")]
pub async fn serve_async<R: tokio::io::AsyncRead + Unpin, S: Sink>(
    mut reader: R,
    subscriber: &mut SinkSubscriber<S>,
) -> Result<(), ServeError> {
    let limits = super::session::Limits::default();
    let (result, _) = super::session::Session::new(&mut reader, subscriber, limits, None)
        .run()
        .await;
    result
}
