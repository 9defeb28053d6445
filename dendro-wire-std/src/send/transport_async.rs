//! [`drain_queue_async`]: the publishing transport on tokio, beside the
//! blocking one ([`drain_queue`](super::drain_queue)) and driving the same
//! [`Drain`], so the two differ only in how they connect, write and wait.

use std::io;

use dendro_wire_core::{PREAMBLE, PREAMBLE_BYTES};
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::drain::{Drain, DrainOptions, TransportStats, STOP_CHECK};
use super::queue::FrameQueue;
use super::transport::WRITE_BUFFER;

/// Drain a publisher's queue into connections that `connect` opens, as
/// [`drain_queue`](super::drain_queue) does, on tokio: the same
/// reconnecting, logging, counting and stopping (it is the same code), with
/// the wait for frames a task woken by the queue rather than a thread
/// blocked on it. Returns once the queue is closed and drained, or
/// `options.stop` is set.
pub async fn drain_queue_async<W, C, F>(
    queue: FrameQueue,
    mut connect: C,
    options: DrainOptions,
) -> io::Result<TransportStats>
where
    W: AsyncWrite + Unpin,
    C: FnMut() -> F,
    F: std::future::Future<Output = io::Result<W>>,
{
    let mut drain = Drain::new(&queue, options);
    while !drain.done() {
        let conn = match connect().await {
            Ok(conn) => conn,
            Err(e) => {
                tokio::time::sleep(drain.connect_failed(e)?).await;
                continue;
            }
        };
        drain.connected();
        let written = write_connection(&mut drain, conn).await;
        if let Some(end) = drain.ended(written) {
            return end;
        }
    }
    Ok(drain.finish())
}

/// One connection, as the blocking transport writes it: the preamble, then
/// frames until the queue is closed and drained or the transport stopped
/// (`Ok`), or a write fails (`Err`).
async fn write_connection<W: AsyncWrite + Unpin>(drain: &mut Drain<'_>, conn: W) -> io::Result<()> {
    let mut w = tokio::io::BufWriter::with_capacity(WRITE_BUFFER, conn);
    w.write_all(&PREAMBLE).await?;
    w.flush().await?;
    drain.preamble_written(PREAMBLE_BYTES);
    loop {
        match drain.next_frame() {
            Some(frame) => {
                w.write_all(&frame).await?;
                drain.written(frame);
            }
            None => {
                w.flush().await?;
                if drain.idle_done() {
                    return Ok(());
                }
                // Woken by the next frame or the close; the stop flag is
                // looked at again after at most STOP_CHECK.
                let _ = tokio::time::timeout(STOP_CHECK, drain.queue().ready()).await;
            }
        }
    }
}
