//! A program that handles `SIGPROF` itself (another profiler) keeps its handler: sampling is
//! refused at start (with a warning), nothing is published and `prof.json` has no samples. A
//! test binary of its own, since the handler stays installed for the process.
#![cfg(all(feature = "cpu-sample", target_os = "linux"))]

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use profiler_core::{probe, Config, Filter, Mode};

static THEIRS: AtomicU64 = AtomicU64::new(0);

extern "C" fn their_handler(_: libc::c_int) {
    THEIRS.fetch_add(1, Relaxed);
}

fn current_handler() -> libc::sighandler_t {
    // SAFETY: a null new action only reads the current one.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(
            libc::sigaction(libc::SIGPROF, std::ptr::null(), &mut old),
            0
        );
        old.sa_sigaction
    }
}

#[test]
fn a_program_with_its_own_sigprof_handler_keeps_it() {
    // SAFETY: the handler only touches an atomic.
    unsafe {
        libc::signal(
            libc::SIGPROF,
            their_handler as *const () as libc::sighandler_t,
        )
    };
    let dir = std::env::temp_dir().join(format!("prof-refused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("refused.json");
    let config = Config {
        filter: Filter::all(),
        mode: Mode::Sample,
        warmup: 1,
        repeat: 2,
        out: out.display().to_string(),
        summary: false,
        cpu_sample: Some(1000),
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, None).unwrap();
    for _ in 0..3 {
        let _p = probe!("refused_probe", layer = "refused");
        assert_eq!(profiler_core::open_event(), None, "nothing is published");
        drop(_p);
        profiler_core::step();
    }
    drop(guard);
    assert_eq!(
        current_handler(),
        their_handler as *const () as libc::sighandler_t,
        "the program's handler is still installed"
    );
    let profile = profiler_core::format::load_profile(&out).unwrap();
    assert!(profile.cpu_samples.is_none());
    let _ = std::fs::remove_file(&out);
}
