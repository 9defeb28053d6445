//! Which source a slow link loses: the issue-29 device (an "env" source of
//! three streams of 8-byte readings, a "power" source of four streams of
//! 12-byte readings with its four rails as index slots, one switched every
//! 50 intervals) on a link that carries 74% of the bytes it produces,
//! drained through an `Outbox` as a socket takes it. Round robin, the
//! default, shares the losses; declaration order loses the second source
//! only, as chosen.

use dendro_wire_core::*;

const ENV: [&str; 3] = ["env/rh", "env/temp_mc", "env/pressure_pa"];
const POWER: [&str; 4] = [
    "power/rail0/ma",
    "power/rail1/ma",
    "power/rail2/current",
    "power/rail3/milliamp",
];
const RAILS: [&[u8]; 4] = [b"rail0", b"rail1", b"rail2", b"rail3"];
const INTERVALS: u32 = 300;

fn decl<'a>(streams: &'a [&'a str], index_stream: Option<&'a str>) -> SourceDecl<'a> {
    SourceDecl {
        streams,
        index_stream,
        ..SourceDecl::default()
    }
}

/// The device's 300 intervals on a link that takes at most `per_interval`
/// bytes an interval (everything if `None`): the stats of each source, and
/// the bytes it produced.
fn run(policy: DropPolicy, per_interval: Option<usize>) -> (PublisherStats, PublisherStats, usize) {
    let mut p: Publisher<[u8; 4096], 2> = Publisher::new(PublisherConfig {
        full_every: 100,
        frame_buffer: 1024,
    });
    p.set_drop_policy(policy);
    let env = p.add_source(&decl(&ENV, None), [0; 4096]).unwrap();
    let power = p
        .add_source(&decl(&POWER, Some("power/rails")), [0; 4096])
        .unwrap();
    for rail in RAILS {
        p.set_slot(power, rail, b"on").unwrap();
    }
    p.connected();
    let mut buf = [0u8; 1024];
    let mut out = Outbox::new(&mut buf);
    let mut produced = 0;
    for i in 0..INTERVALS {
        let ts = i64::from(i) * 10_000_000;
        for s in 0..3u32 {
            p.observe(env.stream(s), ts + i64::from(s), 0, &[i as u8; 8])
                .unwrap();
        }
        if i % 50 == 25 {
            let on: &[u8] = if (i / 50) % 2 == 0 { b"off" } else { b"on" };
            p.set_slot(power, RAILS[(i / 50) as usize % 4], on).unwrap();
        }
        for s in 0..4u32 {
            p.observe(power.stream(s), ts + 10 + i64::from(s), 0, &[i as u8; 12])
                .unwrap();
        }
        p.end_interval();
        produced += p.waiting().bytes;
        let mut budget = per_interval.unwrap_or(usize::MAX);
        while budget > 0 {
            let Some(bytes) = out.pending(&mut p).unwrap() else {
                break;
            };
            let took = bytes.len().min(budget);
            out.advance(took);
            budget -= took;
        }
    }
    // What is still due belongs to no connection now.
    p.disconnected();
    let env_stats = p.source_stats(env).unwrap();
    let power_stats = p.source_stats(power).unwrap();
    (env_stats, power_stats, produced)
}

/// The share of a source's `Rows` frames lost.
fn loss(s: &PublisherStats) -> f64 {
    s.frames_dropped as f64 / f64::from(INTERVALS)
}

#[test]
fn on_a_link_carrying_74_percent_each_source_loses_within_10_percent_of_the_other() {
    let (_, _, produced) = run(DropPolicy::RoundRobin, None);
    let per_interval = produced * 74 / 100 / INTERVALS as usize;
    let (env, power, _) = run(DropPolicy::RoundRobin, Some(per_interval));
    let (a, b) = (loss(&env), loss(&power));
    eprintln!(
        "round robin: env lost {} of {INTERVALS} frames ({} rows), power {} ({} rows)",
        env.frames_dropped, env.rows_dropped, power.frames_dropped, power.rows_dropped
    );
    assert!(a > 0.0 && b > 0.0, "the link must lose frames: {a} {b}");
    assert!(
        (a - b).abs() <= 0.1 * a.max(b),
        "env lost {a:.3}, power {b:.3}: not within 10% of each other"
    );
    // Every reading still counted once, per source.
    for s in [env, power] {
        assert_eq!(
            s.rows_sent + s.rows_dropped + s.rows_unsent,
            s.rows_observed,
            "{s:?}"
        );
    }

    // Declaration order: the link carries env, and power loses.
    let (env, power, _) = run(DropPolicy::DeclarationOrder, Some(per_interval));
    eprintln!(
        "declaration order: env lost {} frames, power {}",
        env.frames_dropped, power.frames_dropped
    );
    assert_eq!(env.frames_dropped, 0);
    assert!(power.frames_dropped > 100, "{power:?}");
}
