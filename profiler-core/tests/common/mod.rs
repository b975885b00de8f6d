//! What the simulated-device tests (`device.rs`, `device_memory.rs`) share: two streams, the
//! host's fake clock, one session at a time, and a session started on a `SimDevice`.

use std::sync::{Mutex, MutexGuard, OnceLock};

use profiler_core::device::Stream;
use profiler_core::testing::{FakeClock, SimDevice};
use profiler_core::{Config, Filter, InitGuard, Mode, Profile};

/// A stream of device 0.
pub const A: Stream = Stream::new(0xa0, 0);
/// A stream of device 1.
pub const B: Stream = Stream::new(0xb0, 1);

/// The host clock, advanced by hand.
pub fn host() -> &'static FakeClock {
    static CLOCK: OnceLock<FakeClock> = OnceLock::new();
    CLOCK.get_or_init(FakeClock::new)
}

/// Held while a test runs a session: one session at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A session's configuration, writing `name.json` in a folder of this test binary and process,
/// without a summary.
pub fn config(name: &str, filter: &str, mode: Mode, warmup: u32, repeat: u32) -> Config {
    let dir = std::env::temp_dir().join(format!(
        "prof-{}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    Config {
        filter: Filter::parse(filter).unwrap(),
        mode,
        warmup,
        repeat,
        out: dir.join(format!("{name}.json")).display().to_string(),
        summary: false,
        ..Config::default()
    }
}

/// Starts a session on the host clock and `sim`.
pub fn start(config: Config, sim: &SimDevice) -> InitGuard {
    profiler_core::init_with_device(
        config,
        Some(Box::new(host().clone())),
        Box::new(sim.clone()),
    )
    .unwrap()
}

/// The running session's profile.
pub fn snapshot() -> Profile {
    profiler_core::snapshot().expect("a session runs")
}
