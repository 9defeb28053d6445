//! The sending side: an agent's observations turned into frames
//! ([`AgentPublisher`], the core's publisher machine with storage that
//! grows), handed over through a bounded [`FrameQueue`] that drops and
//! counts rather than waiting, and drained into a connection by a
//! publishing transport ([`publish_tcp`], [`publish_unix`],
//! [`publish_to_writer`], or [`drain_queue`] over any connection, and with
//! the `tokio` feature `drain_queue_async`), which reconnects as
//! [`DrainOptions`] say.
//!
//! The receiving side is [`receive`](crate::receive).

mod agent;
mod drain;
mod queue;
mod source;
mod transport;
#[cfg(feature = "tokio")]
mod transport_async;

pub use agent::{AgentConfig, AgentError, AgentPublisher, AgentStats, MAX_SOURCES};
/// backon's trait that turns a builder into its waits: what calls
/// [`ExponentialBuilder::build`] (to see the waits a backoff gives).
pub use backon::BackoffBuilder;
pub use drain::{
    default_backoff, DrainOptions, ExponentialBuilder, Reconnect, TransportStats, STOP_CHECK,
};
pub use queue::{FrameQueue, Pushed, QueueLen, QueueStats, Ready, WaitConnected};
pub use source::SourceConfig;
#[cfg(unix)]
pub use transport::publish_unix;
pub use transport::{closed_by_subscriber, drain_queue, publish_tcp, publish_to_writer, Socket};
#[cfg(feature = "tls")]
pub(crate) use transport::{closed_by_subscriber_ending, connect_tcp, drain_checked};
#[cfg(feature = "tokio")]
pub use transport_async::drain_queue_async;
