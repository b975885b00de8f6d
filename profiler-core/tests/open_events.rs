//! The open events without CPU sampling (`publish_open_events`): what a framework integration
//! (burn's backend decorator) reads to attribute its own work to the annotated layer running it.
#![cfg(feature = "enable")]

use profiler_core::{probe, profiled, Config, Filter, Mode};

#[profiled(layer = "open_dense", phase = "fwd")]
fn dense(seen: &mut Vec<Option<(&'static str, &'static str)>>) {
    seen.push(profiler_core::open_layer().map(|l| (l.layer, l.name)));
    {
        // A probe without a layer inside the layer: looked through by `open_layer`.
        let _p = probe!("open_inner");
        seen.push(profiler_core::open_layer().map(|l| (l.layer, l.name)));
        let layer = seen.last().copied().flatten();
        assert_eq!(
            profiler_core::open_event().map(|e| e.name),
            layer.map(|_| "open_inner")
        );
    }
}

fn run(iterations: usize) -> Vec<Option<(&'static str, &'static str)>> {
    let mut seen = Vec::new();
    for _ in 0..iterations {
        dense(&mut seen);
        seen.push(profiler_core::open_layer().map(|l| (l.layer, l.name)));
        profiler_core::step();
    }
    seen
}

#[test]
fn published_open_events_name_the_layer_that_runs_without_sampling() {
    let dir = std::env::temp_dir().join(format!("prof-open-events-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = Config {
        // The layer takes no part: its runs are published all the same.
        filter: Filter::parse("name=open_inner").unwrap(),
        mode: Mode::Sample,
        warmup: 1,
        repeat: 100,
        out: dir.join("prof.json").display().to_string(),
        summary: false,
        ..Config::default()
    };
    let guard = profiler_core::init_with(config.clone(), None).unwrap();
    // Not asked for yet: nothing is known.
    assert_eq!(run(1), [None, None, None]);
    profiler_core::publish_open_events();
    let inside = Some(("open_dense", "dense"));
    assert_eq!(run(3), [inside, inside, None].repeat(3));
    drop(guard);
    // Between sessions nothing is published.
    assert_eq!(run(1), [None, None, None]);
    // The next session publishes them from its start.
    let guard = profiler_core::init_with(config, None).unwrap();
    assert_eq!(run(2), [inside, inside, None].repeat(2));
    drop(guard);
    let profile: profiler_core::Profile =
        profiler_core::format::load_profile(dir.join("prof.json")).unwrap();
    let inner = profile.events.iter().find(|e| e.name == "open_inner");
    assert!(
        inner.is_some_and(|e| !e.samples_ns.is_empty()),
        "the armed probe was measured while published: {:?}",
        profile.events
    );
    let _ = std::fs::remove_dir_all(&dir);
}
