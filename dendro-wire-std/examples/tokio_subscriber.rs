//! A tokio subscriber serving many publishers at once.
//!
//! A listener on loopback spawns a task per connection, each applying its
//! stream (decoded in place, through
//! [`serve_async`](dendro_wire_std::receive::serve_async)) to a sink under
//! the subscriber's rules. To be self-contained, the example
//! also starts four publishers, each a task draining its own publisher's
//! queue over its own connection, and prints what every connection applied.
//!
//! ```sh
//! cargo run -p dendro-wire-std --example tokio_subscriber --features tokio
//! ```

use std::time::Duration;

use dendro_wire_std::receive::serve_async;
use dendro_wire_std::send::{drain_queue_async, DrainOptions};
use dendro_wire_std::{AgentConfig, AgentPublisher, CountingSink, SinkSubscriber, SourceConfig};
use tokio::net::{TcpListener, TcpStream};

const PUBLISHERS: usize = 4;
const INTERVALS: i64 = 1_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    println!("subscriber listening on {addr}");

    // The subscriber: one task per connection.
    let server = tokio::spawn(async move {
        let mut connections = Vec::new();
        for _ in 0..PUBLISHERS {
            let (stream, peer) = listener.accept().await?;
            connections.push(tokio::spawn(async move {
                let mut sub = SinkSubscriber::new(CountingSink::default()).with_source_limit(8);
                let result = serve_async(stream, &mut sub).await;
                (peer, sub.tally(), result.map_err(|e| e.to_string()))
            }));
        }
        let mut done = Vec::new();
        for c in connections {
            done.push(c.await.map_err(std::io::Error::other)?);
        }
        Ok::<_, std::io::Error>(done)
    });

    // The publishers: each samples on its own thread and a task carries its
    // frames, so sampling never waits on the network.
    let mut publishers = Vec::new();
    for n in 0..PUBLISHERS {
        let mut p = AgentPublisher::new(AgentConfig::default());
        let source = p.add_source(
            SourceConfig::new()
                .label("host", format!("agent-{n}"))
                .stream("cpu/usage")
                .stream("mem/used"),
        )?;
        let queue = p.queue();
        let transport = tokio::spawn(drain_queue_async(
            queue.clone(),
            move || TcpStream::connect(addr),
            DrainOptions::default(),
        ));
        let sampler = tokio::task::spawn_blocking(move || {
            // Rows observed before the transport connects would be dropped.
            if !queue.wait_connected(Duration::from_secs(10)) {
                return Err("no connection to the collector in 10 s".into());
            }
            for ts in 0..INTERVALS {
                let row = (ts as u64 * n as u64).to_le_bytes();
                p.observe(source, "cpu/usage", ts, 0, &row)?;
                p.observe(source, "mem/used", ts, 0, &row)?;
                p.end_interval();
            }
            queue.close();
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(p.stats())
        });
        publishers.push((sampler, transport));
    }
    for (sampler, transport) in publishers {
        let stats = sampler
            .await?
            .map_err(|e| e as Box<dyn std::error::Error>)?;
        let sent = transport.await??;
        println!(
            "publisher: {} rows queued, {} frames / {} bytes sent",
            stats.rows_queued, sent.frames, sent.bytes
        );
    }
    for (peer, tally, result) in server.await?? {
        println!(
            "connection from {peer}: {} source(s), {} rows applied, {} skipped, {}",
            tally.sources,
            tally.rows_applied,
            tally.rows_skipped,
            match result {
                Ok(()) => "ended cleanly".to_string(),
                Err(e) => e,
            }
        );
    }
    Ok(())
}
