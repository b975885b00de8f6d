//! Probes whose names are known only at run time: registered before, during and after warmup,
//! listed and selected like the annotations, measured with the same schedule.
#![cfg(feature = "enable")]

use profiler_core::testing::FakeClock;
use profiler_core::{Config, Filter, Mode, Profile, RuntimeProbe};

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn start(clock: &FakeClock, filter: &str, mode: Mode, name: &str) -> profiler_core::InitGuard {
    let config = Config {
        filter: Filter::parse(filter).unwrap(),
        mode,
        warmup: 2,
        repeat: 3,
        out: std::env::temp_dir()
            .join(format!("prof-runtime-{}-{name}.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap()
}

fn samples(p: &Profile, name: &str) -> Vec<u64> {
    p.events
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no event {name}"))
        .samples_ns
        .clone()
}

#[test]
fn runtime_probes_are_listed_selected_and_measured_like_annotations() {
    let _s = serial();
    let clock = FakeClock::new();
    let layers: Vec<RuntimeProbe> = (0..3)
        .map(|i| RuntimeProbe::new(&format!("layers.{i}"), Some("block"), Some("fwd")))
        .collect();
    // Registering again gives the same probe.
    let again = RuntimeProbe::new("layers.1", Some("block"), Some("fwd"));
    let listed = profiler_core::probes();
    let runtime: Vec<_> = listed.iter().filter(|p| p.kind == "runtime").collect();
    assert!(runtime
        .iter()
        .any(|p| p.id == "layers.0" && p.name == "layers.0"));
    assert_eq!(
        runtime.iter().filter(|p| p.name == "layers.1").count(),
        1,
        "{runtime:?}"
    );
    let _g = start(&clock, "kind=runtime&layer=block", Mode::Sample, "listed");
    let mut steps = 0;
    while !profiler_core::finished() {
        for (i, layer) in layers.iter().enumerate() {
            layer.measure(|| clock.advance(10 * (i as u64 + 1)));
        }
        again.measure(|| clock.advance(5)); // the second run of layers.1: occurrence 1
        profiler_core::step();
        steps += 1;
        assert!(steps < 100);
    }
    let p = profiler_core::snapshot().unwrap();
    // 4 events x 3 repeats after 2 warmup iterations.
    assert_eq!(steps, 2 + 4 * 3);
    assert_eq!(samples(&p, "layers.0"), [10; 3]);
    assert_eq!(samples(&p, "layers.2"), [30; 3]);
    let l1: Vec<_> = p.events.iter().filter(|e| e.name == "layers.1").collect();
    assert_eq!(l1.len(), 2);
    assert_eq!(
        (l1[0].samples_ns.clone(), l1[1].samples_ns.clone()),
        (vec![20; 3], vec![5; 3])
    );
    assert!(p
        .events
        .iter()
        .all(|e| e.kind == "runtime" && e.module == "runtime"));
}

#[test]
fn probes_registered_during_and_after_warmup_join_the_running_session() {
    let _s = serial();
    let clock = FakeClock::new();
    let early = RuntimeProbe::new("stage.early", Some("late_test"), None);
    let _g = start(&clock, "layer=late_test", Mode::Trace, "joining");
    let mut during = None;
    let mut after = None;
    for i in 0..6 {
        early.measure(|| clock.advance(1));
        if i == 1 {
            // During warmup (iterations 0 and 1): learned with the others.
            during = Some(RuntimeProbe::new("stage.during", Some("late_test"), None));
        }
        if i == 3 {
            // After warmup: scheduled after the others, like a probe first seen late.
            after = Some(RuntimeProbe::new("stage.after", Some("late_test"), None));
        }
        if let Some(p) = during {
            p.measure(|| clock.advance(2));
        }
        if let Some(p) = after {
            p.measure(|| clock.advance(3));
        }
        // A probe the filter does not select stays out.
        RuntimeProbe::new("stage.other", Some("elsewhere"), None).measure(|| clock.advance(4));
        profiler_core::step();
    }
    let p = profiler_core::snapshot().unwrap();
    assert_eq!(samples(&p, "stage.early"), [1; 3]);
    assert_eq!(samples(&p, "stage.during"), [2; 3]);
    let after_event = p.events.iter().find(|e| e.name == "stage.after").unwrap();
    assert!(!after_event.samples_ns.is_empty());
    assert!(after_event.samples_ns.iter().all(|&d| d == 3));
    assert!(p.events.iter().all(|e| e.name != "stage.other"));
    let order = |name: &str| p.events.iter().find(|e| e.name == name).unwrap().order;
    assert!(order("stage.after") > order("stage.during"));
}

#[test]
fn names_are_made_filter_safe() {
    // Every test here takes the lock, those that only register included: a registration made
    // while another test's session runs uses up that session's room for late probes.
    let _s = serial();
    let probe = RuntimeProbe::new("layers 3/attn?", None, Some("f w d"));
    assert_eq!(probe.name(), "layers_3/attn_");
    let info = profiler_core::probes()
        .into_iter()
        .find(|p| p.name == "layers_3/attn_")
        .unwrap();
    assert_eq!(info.phase, Some("f_w_d"));
    assert_eq!(RuntimeProbe::new("", None, None).name(), "_");
}

/// Two names that become the same once made filter-safe stay two probes, with distinct ids.
#[test]
fn names_that_collide_once_made_safe_stay_two_probes() {
    let _s = serial();
    let spaced = RuntimeProbe::new("collide a", Some("collide_test"), None);
    let underscored = RuntimeProbe::new("collide_a", Some("collide_test"), None);
    assert_eq!(spaced.name(), underscored.name());
    let ids: Vec<String> = profiler_core::probes()
        .into_iter()
        .filter(|p| p.name == "collide_a")
        .map(|p| p.id)
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_ne!(ids[0], ids[1]);
    assert!(ids.contains(&"collide_a.2".to_owned()), "{ids:?}");
    // The same name again is the same probe.
    let again = RuntimeProbe::new("collide a", Some("collide_test"), None);
    assert_eq!(
        profiler_core::probes()
            .into_iter()
            .filter(|p| p.name == "collide_a")
            .count(),
        2
    );
    let _ = again;
}

/// `PROF_MAX_PROBES` bounds the probes that take part, those selected at start-up and those
/// registered while the run goes on: the ones past it are not measured.
#[test]
fn at_most_max_probes_take_part() {
    let _s = serial();
    let clock = FakeClock::new();
    let before: Vec<RuntimeProbe> = (0..4)
        .map(|i| RuntimeProbe::new(&format!("cap.before.{i}"), Some("cap_test"), None))
        .collect();
    let config = Config {
        filter: Filter::parse("layer=cap_test").unwrap(),
        mode: Mode::Trace,
        warmup: 2,
        repeat: 3,
        max_probes: 6,
        out: std::env::temp_dir()
            .join(format!("prof-runtime-{}-cap.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    let _g = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    // Probes the filter does not select take no room.
    let _others: Vec<RuntimeProbe> = (0..3)
        .map(|i| RuntimeProbe::new(&format!("cap.other.{i}"), Some("elsewhere"), None))
        .collect();
    // Registered during warmup: two fit under the cap of 6, the other three do not.
    let after: Vec<RuntimeProbe> = (0..5)
        .map(|i| RuntimeProbe::new(&format!("cap.after.{i}"), Some("cap_test"), None))
        .collect();
    for _ in 0..5 {
        for p in before.iter().chain(&after) {
            p.measure(|| clock.advance(7));
        }
        profiler_core::step();
    }
    let p = profiler_core::snapshot().unwrap();
    let mut names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "cap.after.0",
            "cap.after.1",
            "cap.before.0",
            "cap.before.1",
            "cap.before.2",
            "cap.before.3"
        ]
    );
    assert!(p.events.iter().all(|e| e.samples_ns == [7; 3]));
}

/// The cap applies to the probes selected at start-up too: the first registered take part.
#[test]
fn a_selection_past_max_probes_keeps_the_first_registered() {
    let _s = serial();
    let clock = FakeClock::new();
    let probes: Vec<RuntimeProbe> = (0..10)
        .map(|i| RuntimeProbe::new(&format!("first.{i}"), Some("first_test"), None))
        .collect();
    let config = Config {
        filter: Filter::parse("layer=first_test").unwrap(),
        mode: Mode::Trace,
        warmup: 1,
        repeat: 2,
        max_probes: 3,
        out: std::env::temp_dir()
            .join(format!("prof-runtime-{}-first.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    let _g = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    for _ in 0..3 {
        for p in &probes {
            p.measure(|| clock.advance(1));
        }
        profiler_core::step();
    }
    let p = profiler_core::snapshot().unwrap();
    let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["first.0", "first.1", "first.2"]);
}

/// Registrations after start-up use the room the routes were given then, whether the filter
/// selects them or not: a selected probe registered past it is not measured, and the run goes on.
#[test]
fn late_registrations_past_the_room_are_not_measured() {
    let _s = serial();
    let clock = FakeClock::new();
    let first = RuntimeProbe::new("room.first", Some("room_test"), None);
    let config = Config {
        filter: Filter::parse("layer=room_test").unwrap(),
        mode: Mode::Trace,
        warmup: 1,
        repeat: 2,
        max_probes: 4,
        out: std::env::temp_dir()
            .join(format!("prof-runtime-{}-room.json", std::process::id()))
            .display()
            .to_string(),
        summary: false,
        ..Config::default()
    };
    let _g = profiler_core::init_with(config, Some(Box::new(clock.clone()))).unwrap();
    let _others: Vec<RuntimeProbe> = (0..4)
        .map(|i| RuntimeProbe::new(&format!("room.other.{i}"), Some("elsewhere"), None))
        .collect();
    // The fifth registration since start-up: past the room of 4, though none before was selected.
    let late = RuntimeProbe::new("room.late", Some("room_test"), None);
    for _ in 0..3 {
        first.measure(|| clock.advance(5));
        late.measure(|| clock.advance(9));
        profiler_core::step();
    }
    let p = profiler_core::snapshot().unwrap();
    let names: Vec<&str> = p.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["room.first"]);
    assert_eq!(samples(&p, "room.first"), [5, 5]);
}

/// A model that keeps a probe per instance prints it, with its own fields (burn's `Debug` of a
/// module, candle's): the probe's `Debug` is its name, layer and phase, not a descriptor with
/// pointers into the registry.
#[test]
fn a_runtime_probe_prints_short() {
    let probe = RuntimeProbe::new("block2", Some("conv"), Some("fwd"));
    assert_eq!(
        format!("{probe:?}"),
        r#"RuntimeProbe { name: "block2", layer: Some("conv"), phase: Some("fwd") }"#
    );
}
