//! The device's workload, shared by `device` (the blocking drain) and
//! `async_device` (the async one): its two sources, sized at build time,
//! their storage and frame buffer in `static`s, and 300 intervals of
//! readings with a rail switched every 50 between two of them. Each
//! program says how every interval's frames go out, to `NAME.dwr`.

use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;

use dendro_wire_core::{
    emit_preamble, Budget, Map, Outbox, Publisher, PublisherConfig, Sizing, SourceDecl, SourceId,
    PREAMBLE_BYTES,
};
use dendro_wire_firmware::{measure, publisher_counts, stack, Console, HostFile};

const INTERVALS: u32 = 300;
const INTERVAL_NS: i64 = 10_000_000;
const START_NS: i64 = 1_764_672_000_000_000_000;
/// A rail is switched every this many intervals, between two readings.
pub const SWITCH_EVERY: u32 = 50;

pub const ENV_STREAMS: [&str; 3] = ["env/rh", "env/temp_mc", "env/pressure_pa"];
pub const POWER_STREAMS: [&str; 4] = [
    "power/rail0/ma",
    "power/rail1/ma",
    "power/rail2/current",
    "power/rail3/milliamp",
];
pub const RAILS: [&[u8]; 4] = [b"rail0", b"rail1", b"rail2", b"rail3"];

pub const ENV: SourceDecl<'static> = SourceDecl {
    uuid: Some("6f1c2e3d-4b5a-4697-8877-665544332212"),
    labels: Map::from_pairs(&[("device", "sensor-8"), ("source", "env")]),
    metadata: Map::from_pairs(&[("encoder", "sensor-8-env-v1")]),
    clock_anchor_wall_ns: START_NS,
    complete: false,
    streams: &ENV_STREAMS,
    index_stream: None,
};
pub const POWER: SourceDecl<'static> = SourceDecl {
    uuid: Some("6f1c2e3d-4b5a-4697-8877-665544332213"),
    labels: Map::from_pairs(&[("device", "sensor-8"), ("source", "power")]),
    metadata: Map::from_pairs(&[("encoder", "sensor-8-power-v1")]),
    clock_anchor_wall_ns: START_NS,
    complete: false,
    streams: &POWER_STREAMS,
    index_stream: Some("power/rails"),
};

/// The most each source is given in an interval: a reading per stream,
/// and for the power source its rails, one switched at a time.
pub const ENV_BUDGET: Budget = Budget::rows(8, 3);
pub const POWER_BUDGET: Budget = Budget::rows(12, 4).with_slots(4, 8, 1);
pub const ENV_SIZE: Sizing = ENV.sizing(&ENV_BUDGET);
pub const POWER_SIZE: Sizing = POWER.sizing(&POWER_BUDGET);
pub const FRAME_BUFFER: usize = if ENV_SIZE.frame_buffer > POWER_SIZE.frame_buffer {
    ENV_SIZE.frame_buffer
} else {
    POWER_SIZE.frame_buffer
};

pub type Publishing = Publisher<&'static mut [u8], 2>;

static mut ENV_STORAGE: [u8; ENV_SIZE.storage] = [0; ENV_SIZE.storage];
static mut POWER_STORAGE: [u8; POWER_SIZE.storage] = [0; POWER_SIZE.storage];
static mut FRAME: [u8; FRAME_BUFFER] = [0; FRAME_BUFFER];
static mut PUBLISHER: MaybeUninit<Publishing> = MaybeUninit::uninit();

/// Run the workload, `drain` sending each interval's frames through the
/// outbox to the host file (false if it could not), and print what was
/// done: false if anything failed.
pub fn run(
    out: &mut Console,
    name: &str,
    file_name: &[u8],
    mut drain: impl FnMut(&mut Publishing, &mut Outbox<'_>, &mut HostFile) -> bool,
) -> bool {
    // SAFETY: `run` runs once, so each static is lent once.
    let (p, env, power, frame) = unsafe { lend() };
    let declared = (
        p.add_source_for(&ENV, &ENV_BUDGET, env),
        p.add_source_for(&POWER, &POWER_BUDGET, power),
    );
    let (Ok(env), Ok(power)) = declared else {
        out.str(name).str(": the sources do not fit\n");
        return false;
    };
    let mut ok = true;
    for rail in RAILS {
        ok &= p.set_slot(power, rail, b"on").is_ok();
    }
    let Some(mut file) = HostFile::create(file_name) else {
        return false;
    };
    let mut preamble = [0u8; PREAMBLE_BYTES];
    ok &= emit_preamble(&mut preamble).is_ok() && file.write_all(&preamble);
    p.connected();
    let mut outbox = Outbox::new(frame);
    let mut ticks = 0;
    // Which rail is switched next, and to what; counted rather than
    // divided out of the interval (a Cortex-M0 has no divide).
    let (mut rail, mut until_switch) = (0, SWITCH_EVERY / 2);
    for i in 0..INTERVALS {
        let switch = match until_switch {
            0 => {
                until_switch = SWITCH_EVERY;
                rail += 1;
                // Each rail off, then each on again, in turn.
                let state: &[u8] = if (rail - 1) / RAILS.len() % 2 == 0 {
                    b"off"
                } else {
                    b"on"
                };
                RAILS.get((rail - 1) % RAILS.len()).map(|r| (*r, state))
            }
            _ => None,
        };
        until_switch -= 1;
        ok &= interval(p, (env, power), i, switch, &mut ticks);
        p.end_interval();
        ok &= drain(p, &mut outbox, &mut file);
    }
    ok &= file.close();
    let stats = p.stats();
    let counted = publisher_counts(out, name, &stats);
    out.field("frames_sent", stats.frames_sent as u32);
    measure::report(out, "observe_ticks", ticks);
    measure::calibration(out);
    out.str("\n");
    ok && counted
}

/// The publisher, made in place in its static, each source's storage
/// (env's, then power's) and the frame buffer.
///
/// # Safety
///
/// Called once: each call lends the same statics again.
// Out of line: the publisher is made on the stack before it is written
// into place, and inlined, that stayed in the caller's frame for the run.
#[inline(never)]
pub unsafe fn lend() -> (
    &'static mut Publishing,
    &'static mut [u8],
    &'static mut [u8],
    &'static mut [u8],
) {
    (
        (*addr_of_mut!(PUBLISHER)).write(publisher()),
        &mut *addr_of_mut!(ENV_STORAGE),
        &mut *addr_of_mut!(POWER_STORAGE),
        &mut *addr_of_mut!(FRAME),
    )
}

/// The publisher, made out of line: in the return slot it is given,
/// zeroed through `memclr8`, which `declare` calls too. Made inline in
/// `lend`, it was zeroed through `memclr4`, in no other path, before the
/// copy into the static that both ways make.
#[inline(never)]
fn publisher() -> Publishing {
    Publisher::new(PublisherConfig {
        full_every: 100,
        frame_buffer: FRAME_BUFFER,
    })
}

/// The peak stack, for the program's last line.
pub fn report(out: &mut Console) {
    stack::report(out, FRAME_BUFFER).str("\n");
}

/// One interval's readings, seven rows, and every `SWITCH_EVERY` a rail
/// switched between the env readings and the power readings; the ticks
/// the `observe` calls took (the rows built before) added to `ticks`.
#[inline(never)]
fn interval(
    p: &mut Publishing,
    (env, power): (SourceId, SourceId),
    i: u32,
    switch: Option<(&[u8], &[u8])>,
    ticks: &mut u32,
) -> bool {
    let ts = START_NS + i64::from(i) * INTERVAL_NS;
    let env_rows: [[u8; 8]; 3] = core::array::from_fn(|s| {
        (u64::from(s as u32) << 32 | u64::from(i * 7 + s as u32)).to_le_bytes()
    });
    let power_rows: [[u8; 12]; 4] = core::array::from_fn(|s| {
        let words = u128::from(i) << 64 | (s as u128) << 32 | u128::from(i * 11 + s as u32);
        *words.to_le_bytes().first_chunk::<12>().unwrap_or(&[0; 12])
    });
    let mut ok = true;
    let at = measure::now();
    for (s, row) in (0..).zip(&env_rows) {
        ok &= p.observe(env.stream(s), ts + i64::from(s), 0, row).is_ok();
    }
    *ticks += measure::since(at);
    if let Some((rail, state)) = switch {
        ok &= p.set_slot(power, rail, state).is_ok();
    }
    let at = measure::now();
    for (s, row) in (0..).zip(&power_rows) {
        ok &= p
            .observe(power.stream(s), ts + 10 + i64::from(s), 0, row)
            .is_ok();
    }
    *ticks += measure::since(at);
    ok
}
