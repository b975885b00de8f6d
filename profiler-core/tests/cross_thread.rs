//! Work handed to another thread inside a layer (a scoped worker spawned and joined by the
//! layer's function) is nested in that layer's event, marked `concurrent`, in `sample` and in
//! `trace` mode, so that the breakdown and the groups count its time once; a thread that runs
//! on its own (beside whatever the stepping thread does) keeps no parent, is marked
//! `concurrent`, and counts in the breakdown only where the stepping thread's events do not.
#![cfg(feature = "enable")]

use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};

use profiler_core::testing::FakeClock;
use profiler_core::{probe, profiled, Config, Filter, Mode, Profile};

fn clock() -> &'static FakeClock {
    static CLOCK: OnceLock<FakeClock> = OnceLock::new();
    CLOCK.get_or_init(FakeClock::new)
}

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn work_on_worker() {
    let _p = probe!("worker_part", layer = "l2", phase = "bwd");
    clock().advance(40);
}

#[profiled(layer = "l2", phase = "bwd")]
fn l2_backward(side: &Side) {
    clock().advance(10);
    std::thread::scope(|s| {
        s.spawn(work_on_worker).join().unwrap();
    });
    side.run_if(1);
    clock().advance(10);
}

#[profiled(layer = "l1", phase = "fwd")]
fn l1_forward(side: &Side) {
    clock().advance(30);
    side.run_if(0);
    clock().advance(5);
}

/// A thread of its own (a loader): its probe runs when asked, inside whichever layer the
/// stepping thread is in then (`l1_forward` in even iterations, `l2_backward` in odd ones).
struct Side {
    go: mpsc::Sender<()>,
    done: mpsc::Receiver<()>,
    iteration: std::cell::Cell<u32>,
}

impl Side {
    fn run_if(&self, parity: u32) {
        if self.iteration.get() % 2 == parity {
            self.go.send(()).unwrap();
            self.done.recv().unwrap();
        }
    }
}

fn profile_of(mode: Mode) -> Profile {
    let config = Config {
        filter: Filter::parse("layer=l1|layer=l2|layer=side").unwrap(),
        mode,
        warmup: 4,
        repeat: 3,
        out: std::env::temp_dir()
            .join(format!("prof-cross-{}-{mode:?}.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config, Some(Box::new(clock().clone()))).unwrap();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let loader = std::thread::spawn(move || {
        while go_rx.recv().is_ok() {
            {
                let _p = probe!("load", layer = "side", phase = "data");
                clock().advance(7);
            }
            if done_tx.send(()).is_err() {
                break;
            }
        }
    });
    let side = Side {
        go: go_tx,
        done: done_rx,
        iteration: std::cell::Cell::new(0),
    };
    for i in 0..60 {
        side.iteration.set(i);
        l1_forward(&side);
        l2_backward(&side);
        clock().advance(3);
        profiler_core::step();
        if profiler_core::finished() {
            break;
        }
    }
    let p = profiler_core::snapshot().unwrap();
    drop(guard);
    drop(side);
    loader.join().unwrap();
    p
}

#[test]
fn a_worker_inside_a_layer_is_nested_in_it_and_a_free_thread_is_not() {
    let _s = serial();
    for mode in [Mode::Sample, Mode::Trace] {
        let p = profile_of(mode);
        let by = |name: &str| {
            p.events
                .iter()
                .find(|e| e.name == name)
                .unwrap_or_else(|| panic!("{mode:?}: no {name}"))
        };
        let (l2, worker, load) = (by("l2_backward"), by("worker_part"), by("load"));
        assert_eq!(worker.parent, Some(l2.order), "{mode:?}: {worker:?}");
        assert!(worker.concurrent, "{mode:?}");
        assert!(!l2.concurrent && l2.parent.is_none(), "{mode:?}");
        // The loader's runs fell in l1_forward and l2_backward by turns: no parent, and
        // beside the loop.
        assert_eq!(load.parent, None, "{mode:?}: {load:?}");
        assert!(load.concurrent, "{mode:?}");
        // In the breakdown the worker's time is inside l2_backward's, and the loader's, which
        // the loop waited for, inside the layers': the categories never exceed the iteration.
        let b = profiler_tables::breakdown::breakdown(
            &p,
            &profiler_tables::rows::profile_rows(&p, 0.25, 0.05),
        )
        .expect("a breakdown");
        assert_eq!(b.overlap_ns, 0.0, "{mode:?}: {b:?}");
        let data = b.categories.iter().find(|c| c.name == "data").unwrap();
        assert_eq!(data.total_ns, 0.0, "{mode:?}: {b:?}");
    }
}
