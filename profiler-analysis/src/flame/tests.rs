//! Flame graphs of synthetic profiles whose every number is known: the folded stacks exactly,
//! the filter, the groups, threads, merged events, and the SVG's frames.

use super::*;
use profiler_format::{Event, Iterations, Run, Stats, SCHEMA};

fn event(order: u32, name: &str, layer: Option<&str>, phase: Option<&str>, dur: u64) -> Event {
    Event {
        id: format!("t::{name}"),
        name: name.to_owned(),
        layer: layer.map(str::to_owned),
        phase: phase.map(str::to_owned),
        kind: "fn".to_owned(),
        module: "t".to_owned(),
        file: "t.rs".to_owned(),
        line: 10 + order,
        order,
        samples_ns: vec![dur; 4],
        offsets_ns: vec![100 * u64::from(order); 4],
        sample_iters: vec![2, 3, 4, 5],
        stats: Stats::of(&[dur; 4]),
        ..Default::default()
    }
}

fn profile(events: Vec<Event>, wall: u64) -> Profile {
    Profile {
        schema: SCHEMA.to_owned(),
        complete: true,
        run: Run {
            program: "t".into(),
            pid: 1,
            host: "h".into(),
            rank: 0,
            mode: "sample".into(),
            filter: String::new(),
            warmup: 2,
            repeat: 4,
            clock: "fake".into(),
            max_events: 4096,
            timer_floor_ns: 0,
            profiler_version: String::new(),
            windows: None,
            on_demand: None,
            delay: None,
            peak: None,
        },
        iterations: Iterations {
            count: 6,
            first: 0,
            wall_ns: vec![wall; 6],
            device_memory: Vec::new(),
        },
        events,
        windows: Vec::new(),
        before_loop: Vec::new(),
        cpu_samples: None,
    }
}

/// forward (1000 ns) holding inner (300 ns); two runs of ffn (200 ns each); a merged event of
/// 50 ns run twice an iteration (8 runs in its 4 armed iterations); iterations of 2000 ns.
fn model() -> Profile {
    let mut inner = event(1, "inner", Some("attn"), Some("fwd"), 300);
    inner.parent = Some(0);
    let ffn0 = event(2, "ffn", Some("ffn"), Some("fwd"), 200);
    let mut ffn1 = event(3, "ffn", Some("ffn"), Some("fwd"), 200);
    ffn1.occurrence = 1;
    let mut step = event(4, "step", None, None, 50);
    step.merged = true;
    step.samples_ns = vec![50; 8];
    step.offsets_ns = vec![900; 8];
    step.sample_iters = vec![2, 2, 3, 3, 4, 4, 5, 5];
    step.stats = Stats::of(&step.samples_ns);
    profile(
        vec![
            event(0, "forward", Some("attn"), Some("fwd"), 1000),
            inner,
            ffn0,
            ffn1,
            step,
        ],
        2000,
    )
}

fn folded(p: &Profile, options: &FlameOptions) -> String {
    flame(std::slice::from_ref(p), options).unwrap().folded()
}

#[test]
fn folded_stacks_are_self_times_per_iteration() {
    let p = model();
    assert_eq!(
        folded(&p, &FlameOptions::default()),
        "attn/fwd/forward 700\n\
         attn/fwd/forward;attn/fwd/inner 300\n\
         ffn/fwd/ffn#0 200\n\
         ffn/fwd/ffn#1 200\n\
         -/-/step 100\n\
         other 500\n"
    );
    let f = flame(&[p], &FlameOptions::default()).unwrap();
    assert_eq!(f.width_ns(), 2000);
    assert_eq!(f.iteration_ns, 2000.0);
    let step = f.frames.iter().find(|f| f.name == "-/-/step").unwrap();
    assert_eq!((step.calls_per_iter, step.total_ns), (2.0, 100.0));
    assert!(frame_title_of(&f, "-/-/step").contains("2.00 calls per iteration; merged"));
    assert!(frame_title_of(&f, "attn/fwd/forward")
        .starts_with("attn/fwd/forward (self 700ns, total 1.0µs per iteration, 50.0% of it;"));
}

fn frame_title_of(f: &Flame, name: &str) -> String {
    let frame = f.frames.iter().find(|x| x.name == name).unwrap();
    svg::frame_title(f, frame)
}

#[test]
fn groups_put_a_root_frame_per_layer_or_phase() {
    let p = model();
    let by_layer = FlameOptions {
        group: Some(Grouping::Layer),
        ..FlameOptions::default()
    };
    assert_eq!(
        folded(&p, &by_layer),
        "layer=attn;attn/fwd/forward 700\n\
         layer=attn;attn/fwd/forward;attn/fwd/inner 300\n\
         layer=ffn;ffn/fwd/ffn#0 200\n\
         layer=ffn;ffn/fwd/ffn#1 200\n\
         (no layer);-/-/step 100\n\
         other 500\n"
    );
    let by_phase = FlameOptions {
        group: Some(Grouping::Phase),
        ..FlameOptions::default()
    };
    let text = folded(&p, &by_phase);
    assert!(
        text.starts_with("phase=fwd;attn/fwd/forward 700\n"),
        "{text}"
    );
    assert!(text.contains("\n(no phase);-/-/step 100\n"), "{text}");
    let f = flame(&[p], &by_phase).unwrap();
    let fwd = f.frames.iter().find(|x| x.name == "phase=fwd").unwrap();
    assert_eq!(fwd.width_ns, 1400.0);
}

#[test]
fn a_filter_keeps_matching_events_and_their_context() {
    let p = model();
    let with = |expr: &str| FlameOptions {
        filter: Some(Filter::parse(expr).unwrap()),
        ..FlameOptions::default()
    };
    // inner, with forward as context (only as wide as inner); no `other`.
    assert_eq!(
        folded(&p, &with("name=inner")),
        "attn/fwd/forward;attn/fwd/inner 300\n"
    );
    // forward whole: inner, dropped, is in its self time.
    assert_eq!(folded(&p, &with("name=forward")), "attn/fwd/forward 1000\n");
    assert_eq!(
        folded(&p, &with("layer=ffn|name=step")),
        "ffn/fwd/ffn#0 200\nffn/fwd/ffn#1 200\n-/-/step 100\n"
    );
    let f = flame(std::slice::from_ref(&p), &with("name=inner")).unwrap();
    assert!(
        f.title.contains("--filter name=inner: 300ns (15.0%)"),
        "{}",
        f.title
    );
    assert!(frame_title_of(&f, "attn/fwd/forward").contains("context"));
    // A filter that matches nothing is an error, not an empty graph.
    let err = flame(&[p], &with("layer=nope")).unwrap_err();
    assert_eq!(
        err,
        FlameError::NothingMatches {
            filter: "layer=nope".into()
        }
    );
}

/// Workers a layer waits for (other threads, `concurrent`) are drawn side by side inside it:
/// three of 600 ns under a 1000 ns forward that also holds 300 ns of its own thread share the
/// 700 ns left; forward's self time is 0, not negative, and the graph stays as wide as the
/// iteration.
#[test]
fn concurrent_children_share_their_parents_time() {
    let mut p = model();
    for k in 5..8 {
        let mut w = event(k, &format!("w{k}"), Some("attn"), Some("fwd"), 600);
        w.parent = Some(0);
        w.concurrent = true;
        p.events.push(w);
    }
    let text = folded(&p, &FlameOptions::default());
    assert_eq!(
        text,
        "attn/fwd/forward;attn/fwd/inner 300\n\
         attn/fwd/forward;attn/fwd/w5 233\n\
         attn/fwd/forward;attn/fwd/w6 234\n\
         attn/fwd/forward;attn/fwd/w7 233\n\
         ffn/fwd/ffn#0 200\n\
         ffn/fwd/ffn#1 200\n\
         -/-/step 100\n\
         other 500\n"
    );
    let f = flame(&[p], &FlameOptions::default()).unwrap();
    assert_eq!(f.width_ns(), 2000);
    assert!(frame_title_of(&f, "attn/fwd/w5").contains("drawn 233ns"));
    assert!(frame_title_of(&f, "attn/fwd/w5").contains("on another thread"));
}

/// The same stacks in `trace` mode (every event every iteration), and the mean of two runs.
#[test]
fn trace_mode_and_several_runs() {
    let mut p = model();
    p.run.mode = "trace".into();
    assert!(folded(&p, &FlameOptions::default()).starts_with("attn/fwd/forward 700\n"));
    let mut slower = model();
    for e in &mut slower.events {
        if e.name == "forward" {
            e.samples_ns = vec![1400; 4];
            e.stats = Stats::of(&e.samples_ns);
        }
    }
    slower.iterations.wall_ns = vec![2400; 6];
    let f = flame(&[p, slower], &FlameOptions::default()).unwrap();
    assert_eq!(f.iteration_ns, 2200.0);
    assert!(
        f.folded().starts_with("attn/fwd/forward 900\n"),
        "{}",
        f.folded()
    );
    assert_eq!(f.width_ns(), 2200);
}

/// An event that one of two runs lacks: drawn at its mean over both runs (half as wide), but
/// its title's figures are its mean over the run that has it, and the title says why it is
/// narrower. Before, its total, self time and calls per iteration were halved too ("0.50
/// calls per iteration" for an event called once an iteration).
#[test]
fn an_event_some_runs_lack_keeps_its_own_figures() {
    let with = model();
    let mut without = model();
    without.events.retain(|e| e.name != "inner");
    let f = flame(&[with, without], &FlameOptions::default()).unwrap();
    let inner = f
        .frames
        .iter()
        .find(|fr| fr.key == FrameKey::Event("t::inner".into(), 0))
        .unwrap();
    assert_eq!(inner.total_ns, 300.0);
    assert_eq!(inner.self_ns, 300.0);
    assert_eq!(inner.calls_per_iter, 1.0);
    assert_eq!(inner.width_ns, 150.0);
    assert_eq!(inner.missing_from, 1);
    let forward = f
        .frames
        .iter()
        .find(|fr| fr.key == FrameKey::Event("t::forward".into(), 0))
        .unwrap();
    assert_eq!((forward.total_ns, forward.missing_from), (1000.0, 0));
    let svg = f.svg().unwrap();
    assert!(
        svg.contains("self 300ns, total 300ns per iteration")
            && svg.contains("its mean over every run drawn, 1 of which lacks it"),
        "{svg}"
    );
}

/// Names a folded line cannot hold are cleaned; two probes with the same name are told apart.
#[test]
fn names_stay_distinct_and_foldable() {
    let mut p = model();
    p.events[2].name = "a;b\tc".into();
    p.events[2].id = "x::a".into();
    p.events[3].name = "a;b\tc".into();
    p.events[3].id = "y::a".into();
    p.events[3].occurrence = 0;
    let text = folded(&p, &FlameOptions::default());
    assert!(text.contains("\nffn/fwd/a_b_c 200\n"), "{text}");
    assert!(text.contains("\nffn/fwd/a_b_c (y::a) 200\n"), "{text}");
}

/// A name that ends in a number (`block 1`) stays one frame with its own width: inferno took
/// the number for a count (a differential graph's "before": one frame for both blocks,
/// coloured as a regression); a layer that begins with `# ` is not a comment line it drops.
/// The space becomes a no-break space, which looks the same.
#[test]
fn names_that_end_in_a_number_or_begin_with_a_hash_stay_frames() {
    let mut p = model();
    p.events[2].name = "block 1".into();
    p.events[3].name = "block 2".into();
    p.events[3].id = "y::block".into();
    p.events[3].occurrence = 0;
    p.events[0].layer = Some("# net".into());
    let text = folded(&p, &FlameOptions::default());
    assert!(text.contains("ffn/fwd/block\u{a0}1 200\n"), "{text}");
    assert!(text.contains("ffn/fwd/block\u{a0}2 200\n"), "{text}");
    assert!(text.starts_with("#\u{a0}net/"), "{text}");
    let f = flame(std::slice::from_ref(&p), &FlameOptions::default()).unwrap();
    let svg = f.svg().unwrap();
    // Each block is a frame of its own (its tooltip says its self time), and the `# net`
    // frame is drawn.
    assert!(
        svg.contains("ffn/fwd/block\u{a0}1 ("),
        "no frame of block 1"
    );
    assert!(
        svg.contains("ffn/fwd/block\u{a0}2 ("),
        "no frame of block 2"
    );
    assert!(svg.contains("#\u{a0}net/"), "the # net frame was dropped");
}

/// The SVG: inferno's, with its script; each frame as wide (`fg:w`) as its stacks, titled with
/// its times; icicle inverted; a differential graph's colours from the verdicts.
#[test]
fn svg_frames_match_the_stacks() {
    let p = model();
    let f = flame(std::slice::from_ref(&p), &FlameOptions::default()).unwrap();
    let svg = f.svg().unwrap();
    assert!(svg.contains("<script"));
    assert!(svg.contains("var inverted = false"));
    for (name, width) in [
        ("attn/fwd/forward", 1000),
        ("attn/fwd/inner", 300),
        ("-/-/step", 100),
        ("other", 500),
    ] {
        let title = format!("<title>{name}");
        let at = svg
            .find(&title)
            .unwrap_or_else(|| panic!("no frame {name}"));
        let rect = &svg[at..at + svg[at..].find("/>").unwrap()];
        assert!(
            rect.contains(&format!("fg:w=\"{width}\"")),
            "{name}: {rect}"
        );
    }
    let icicle = FlameOptions {
        icicle: true,
        ..FlameOptions::default()
    };
    let svg = flame(std::slice::from_ref(&p), &icicle)
        .unwrap()
        .svg()
        .unwrap();
    assert!(svg.contains("var inverted = true"));
    // Every verdict its own colour; the neutral ones pale.
    let colors: std::collections::HashSet<Rgb> = [
        Some(Verdict::Regressed),
        Some(Verdict::Improved),
        Some(Verdict::NoChange),
        Some(Verdict::WithinNoise),
        Some(Verdict::Inconclusive),
        None,
    ]
    .into_iter()
    .map(verdict_color)
    .collect();
    assert_eq!(colors.len(), 6);
    let (r, g, b) = verdict_color(Some(Verdict::Regressed));
    assert!(r > 200 && g < 100 && b < 100);
    let (r, g, b) = verdict_color(Some(Verdict::Improved));
    assert!(b > 200 && r < 100 && g < 150);
}

#[test]
fn a_profile_without_a_measured_iteration_is_an_error() {
    let mut p = model();
    p.iterations.wall_ns.clear();
    p.iterations.count = 0;
    assert_eq!(
        flame(&[p], &FlameOptions::default()).unwrap_err(),
        FlameError::NoIteration { index: 0 }
    );
    assert_eq!(
        flame(&[], &FlameOptions::default()).unwrap_err(),
        FlameError::NoProfile
    );
}

/// What XML 1.0 forbids (NUL, ESC, BEL, a lone CR's friends, U+FFFE) and what it must escape
/// (`<`, `&`, `]]>`), in every string of a profile that reaches the SVG: the program (the
/// title), the ids (the tooltips), the names, layers and phases (the frames).
fn hostile(p: &mut Profile) {
    p.run.program = "train\u{0}\u{1b}[2J\u{7}<b>&amp;]]>\u{fffe}".into();
    for e in &mut p.events {
        e.id = format!("{}\u{0}\u{1b}[31m\u{7}\u{8}\u{1f}<x>&]]>\u{ffff}", e.id);
        e.name = format!("{}\u{1b}]0;pwned\u{7}<&\u{ffff}", e.name);
        e.layer = e.layer.as_ref().map(|l| format!("{l}\u{0}\u{c}\u{fffe}"));
    }
}

/// Parses `svg` as XML (strictly: every character XML 1.0 allows, every entity known), or
/// panics with the parser's error and where.
fn well_formed(svg: &str, what: &str) {
    // roxmltree refuses a DTD that could expand: the doctype inferno writes names only the SVG
    // DTD, which it does not fetch.
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    if let Err(e) = roxmltree::Document::parse_with_options(svg, options) {
        let pos = e.pos();
        let line = svg.lines().nth(pos.row as usize - 1).unwrap_or("");
        panic!("{what}: not well-formed XML: {e}\n{line:?}");
    }
    for c in ['\u{0}', '\u{1b}', '\u{7}', '\u{fffe}', '\u{ffff}'] {
        assert!(!svg.contains(c), "{what}: {c:?} in the SVG");
    }
}

/// Every SVG `prof flame` draws (plain, icicle, grouped by layer and by phase, filtered,
/// differential) is well-formed XML whatever the names: what XML cannot hold is shown as a
/// visible escape, the rest escaped as markup.
#[test]
fn every_svg_is_well_formed_xml_with_hostile_names() {
    let mut p = model();
    hostile(&mut p);
    let mut base = model();
    hostile(&mut base);
    base.events[0].samples_ns = vec![700; 4];
    base.events[0].stats = Stats::of(&base.events[0].samples_ns);
    let filter = profiler_format::filter::Filter::parse("phase=fwd").unwrap();
    let variants: Vec<(&str, FlameOptions)> = vec![
        ("plain", FlameOptions::default()),
        (
            "icicle",
            FlameOptions {
                icicle: true,
                ..FlameOptions::default()
            },
        ),
        (
            "group layer",
            FlameOptions {
                group: Some(Grouping::Layer),
                ..FlameOptions::default()
            },
        ),
        (
            "group phase",
            FlameOptions {
                group: Some(Grouping::Phase),
                ..FlameOptions::default()
            },
        ),
        (
            "filter",
            FlameOptions {
                filter: Some(filter),
                ..FlameOptions::default()
            },
        ),
        (
            "diff",
            FlameOptions {
                baseline: Some(std::slice::from_ref(&base)),
                ..FlameOptions::default()
            },
        ),
    ];
    for (what, options) in &variants {
        let f = flame(std::slice::from_ref(&p), options).unwrap();
        let svg = f.svg().unwrap();
        well_formed(&svg, what);
        // The title says whose graph it is, its escapes visible.
        assert!(
            svg.contains("train\\0\\e[2J\\u{7}&lt;b&gt;&amp;amp;]]&gt;\\u{fffe}"),
            "{what}"
        );
        // A tooltip's id, escaped the same way.
        assert!(
            svg.contains("id t::forward\\0\\e[31m\\u{7}\\u{8}\\u{1f}&lt;x&gt;&amp;]]&gt;\\u{ffff}"),
            "{what}"
        );
    }
}
