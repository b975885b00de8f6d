//! Unit tests of `analysis::report`.

use super::*;
use profiler_format::{Iterations, Run, Stats};
use profiler_tables::summary::summary;
use profiler_tables::table_text::human_ns;

/// An event with durations `samples` taken in iterations `iters`.
fn ev(
    order: u32,
    name: &str,
    layer: Option<&str>,
    parent: Option<u32>,
    samples: &[u64],
    iters: &[u32],
) -> Event {
    Event {
        id: format!("m::{name}"),
        name: name.to_owned(),
        layer: layer.map(str::to_owned),
        phase: Some("fwd".to_owned()),
        kind: "fn".to_owned(),
        module: "m".to_owned(),
        file: "m.rs".to_owned(),
        line: 1,
        order,
        parent,
        samples_ns: samples.to_vec(),
        offsets_ns: vec![0; samples.len()],
        sample_iters: iters.to_vec(),
        stats: Stats::of(samples),
        ..Default::default()
    }
}

/// An event of one sample of `ns`, armed in iteration 2.
fn flat(order: u32, name: &str, layer: Option<&str>, parent: Option<u32>, ns: u64) -> Event {
    ev(order, name, layer, parent, &[ns], &[2])
}

fn profile(warmup: u32, walls: &[u64], events: Vec<Event>) -> Profile {
    Profile {
        schema: profiler_format::SCHEMA.to_owned(),
        complete: true,
        run: Run {
            program: "toy".to_owned(),
            pid: 1,
            host: "h".to_owned(),
            rank: 0,
            mode: "sample".to_owned(),
            filter: String::new(),
            warmup,
            repeat: 1,
            clock: "fake".to_owned(),
            max_events: 4096,
            timer_floor_ns: 20,
            profiler_version: "0".to_owned(),
            windows: None,
            on_demand: None,
            delay: None,
            peak: None,
        },
        iterations: Iterations {
            first: 0,
            count: walls.len() as u64,
            wall_ns: walls.to_vec(),
            device_memory: Vec::new(),
        },
        events,
        windows: Vec::new(),
        before_loop: Vec::new(),
        cpu_samples: None,
    }
}

/// A -> {B -> D, C}; E top level. Means 100, 30, 20, 10, 40.
fn nested() -> Profile {
    profile(
        2,
        &[1000, 1000, 1000, 1000],
        vec![
            flat(0, "a", Some("m"), None, 100),
            flat(1, "b", Some("m"), Some(0), 30),
            flat(2, "d", None, Some(1), 10),
            flat(3, "c", None, Some(0), 20),
            flat(4, "e", Some("m"), None, 40),
        ],
    )
}

fn by_name<'a>(r: &'a Report, name: &str) -> &'a EventRow {
    r.events.iter().find(|e| e.identity.name == name).unwrap()
}

#[test]
fn calls_per_iteration_of_merged_events() {
    let mut merged = ev(
        0,
        "sgd",
        None,
        None,
        &[10, 20, 30, 40, 50, 60],
        &[2, 2, 2, 3, 3, 3],
    );
    merged.merged = true;
    let plain = ev(1, "p", None, None, &[10, 30], &[4, 5]);
    let r = build(
        &profile(2, &[9, 9, 9, 9, 9, 9], vec![merged, plain]),
        &ReportOptions::default(),
    );
    let sgd = by_name(&r, "sgd");
    assert_eq!(sgd.calls_per_iter, 3.0);
    assert_eq!(sgd.mean_ns, 35.0);
    assert_eq!(sgd.total_ns, 105.0);
    assert_eq!(by_name(&r, "p").calls_per_iter, 1.0);
    assert_eq!(by_name(&r, "p").total_ns, 20.0);
    // A merged event with no sample: no division by zero.
    let mut empty = ev(0, "x", None, None, &[], &[]);
    empty.merged = true;
    let r = build(&profile(0, &[5], vec![empty]), &ReportOptions::default());
    assert_eq!(r.events[0].calls_per_iter, 0.0);
    assert_eq!(r.events[0].total_ns, 0.0);
}

#[test]
fn self_time_subtracts_children_totals() {
    let r = build(&nested(), &ReportOptions::default());
    let selfs: Vec<(&str, f64, f64)> = r
        .events
        .iter()
        .map(|e| (e.identity.name.as_str(), e.total_ns, e.self_ns))
        .collect();
    assert_eq!(
        selfs,
        [
            ("a", 100.0, 50.0),
            ("b", 30.0, 20.0),
            ("d", 10.0, 10.0),
            ("c", 20.0, 20.0),
            ("e", 40.0, 40.0)
        ]
    );
    // Children longer than their parent (other iterations, noise): self never negative.
    let p = profile(
        0,
        &[100],
        vec![
            flat(0, "p", None, None, 10),
            flat(1, "k", None, Some(0), 15),
        ],
    );
    let r = build(&p, &ReportOptions::default());
    assert_eq!(by_name(&r, "p").self_ns, 0.0);
    // A merged child counts with all its calls.
    let mut kid = ev(1, "k", None, Some(0), &[10, 10, 10, 10], &[0, 0, 1, 1]);
    kid.merged = true;
    let p = profile(0, &[100, 100], vec![flat(0, "p", None, None, 50), kid]);
    let r = build(&p, &ReportOptions::default());
    assert_eq!(by_name(&r, "p").self_ns, 30.0);
}

#[test]
fn depth_follows_parents_and_survives_cycles() {
    let r = build(&nested(), &ReportOptions::default());
    let depths: Vec<u32> = r.events.iter().map(|e| e.depth).collect();
    assert_eq!(depths, [0, 1, 2, 1, 0]);
    let p = profile(
        0,
        &[100],
        vec![
            flat(0, "x", None, Some(1), 10),
            flat(1, "y", None, Some(0), 10),
            flat(2, "orphan", None, Some(99), 10),
            flat(3, "me", None, Some(3), 10),
        ],
    );
    let r = build(&p, &ReportOptions::default());
    let depths: Vec<u32> = r.events.iter().map(|e| e.depth).collect();
    assert_eq!(depths, [1, 1, 0, 0]);
    assert_eq!(by_name(&r, "orphan").self_ns, 10.0);
    assert_eq!(by_name(&r, "me").self_ns, 10.0);
}

/// An event that ran in some of the iterations it was armed in (an optimizer step every fourth
/// batch) has fewer calls than one per iteration: before, its calls were 1 (its runs counted
/// per iteration it ran in), and its total, share and the breakdown 4 times too large.
#[test]
fn an_event_run_in_some_armed_iterations_has_calls_below_one() {
    let run_in = |iters: &[u32], ns: u64| (vec![ns; iters.len()], iters.to_vec());
    // Sample mode, PROF_REPEAT 8: `every` armed in 2..10 and run in each; `some` armed in
    // 10..18, run in 13 and 17.
    let (every_ns, every_it) = run_in(&[2, 3, 4, 5, 6, 7, 8, 9], 100);
    let (some_ns, some_it) = run_in(&[13, 17], 400);
    let mut p = profile(
        2,
        &[1000; 18],
        vec![
            ev(0, "every", None, None, &every_ns, &every_it),
            ev(1, "some", None, None, &some_ns, &some_it),
        ],
    );
    p.run.repeat = 8;
    let r = build(&p, &ReportOptions::default());
    assert_eq!(by_name(&r, "every").calls_per_iter, 1.0);
    assert_eq!(by_name(&r, "some").calls_per_iter, 0.25);
    assert_eq!(by_name(&r, "some").total_ns, 100.0);
    // Its perturbation is of the iterations from its first run to its last, not only those it
    // ran in: here all 1000 ns like the warmup's, so none.
    assert_eq!(by_name(&r, "some").perturbation, Some(0.0));
    // Runs whose device time was lost ran all the same: 2 lost beside its 2 samples.
    let mut lost = p.clone();
    lost.events[1].gpu = Some(profiler_format::Gpu {
        lost: 2,
        ..Default::default()
    });
    let r = build(&lost, &ReportOptions::default());
    assert_eq!(by_name(&r, "some").calls_per_iter, 0.5);
    // Trace mode: every measured iteration from its first run on (a probe first seen late is
    // armed from then): `some` ran in 2 of 13..17.
    p.run.mode = "trace".to_owned();
    let r = build(&p, &ReportOptions::default());
    assert_eq!(by_name(&r, "some").calls_per_iter, 2.0 / 5.0);
    // Continuous mode (traces on demand interrupt a window's schedule, merged events count the
    // whole run): per iteration run in, as before.
    p.run.mode = "continuous".to_owned();
    let r = build(&p, &ReportOptions::default());
    assert_eq!(by_name(&r, "some").calls_per_iter, 1.0);
}

/// A chain 40 deep: the depth is counted whole (40 levels under the first), the name indented by
/// at most 24 levels so that it stays in its cell (before, the deepest names were clipped to
/// spaces, and a chain thousands deep made each row thousands of spaces wide).
#[test]
fn deep_names_are_indented_so_far_and_stay_visible() {
    let events: Vec<Event> = (0..41u32)
        .map(|i| flat(i, &format!("n{i}"), None, i.checked_sub(1), 10))
        .collect();
    let r = build(&profile(0, &[100], events), &ReportOptions::default());
    assert_eq!(by_name(&r, "n40").depth, 40);
    let text = render(&r, Format::Table);
    let row = text
        .lines()
        .find(|l| l.contains(" n40 "))
        .unwrap_or_else(|| panic!("n40 is not shown: {text}"));
    let header = text.lines().find(|l| l.contains(" name ")).unwrap();
    let column = header.find(" name ").unwrap() + 1;
    assert_eq!(row.find("n40").unwrap() - column, 48, "{header}\n{row}");
}

/// A caller that has the tables (`prof html`: the report and the layer groups beside it) hands
/// them over, and the report and the groups are computed from them, not again.
#[test]
fn a_report_and_its_groups_are_built_from_the_tables_given() {
    let p = nested();
    let options = ReportOptions::default();
    let mut tables = profiler_tables::tables::profile_tables(&p, 0.25, 0.05);
    // `e`, at top level in layer m: 40 ns a run, made 400.
    tables.rows.events[4].total_ns = 400.0;
    tables.work = Some("work: as given".to_owned());
    let first_category = |b: Option<&profiler_tables::breakdown::Breakdown>| {
        b.map(|b| (b.categories[0].name.clone(), b.categories[0].total_ns))
    };
    let breakdown = first_category(tables.breakdown.as_ref());
    let layers = groups(&p, &tables.rows, GroupBy::Layer);
    assert_eq!(layers[0].total_ns, 500.0);
    let r = build_from(&p, tables, &options);
    assert_eq!(by_name(&r, "e").total_ns, 400.0);
    assert_eq!(r.work.as_deref(), Some("work: as given"));
    assert_eq!(first_category(r.breakdown.as_ref()), breakdown);
    // Unchanged rows: the groups `build` computes itself.
    let fresh = profiler_tables::rows::profile_rows(&p, 0.25, 0.05);
    let key_total = |g: &GroupRow| (g.key.clone(), g.total_ns);
    let grouped = ReportOptions {
        group_by: Some(GroupBy::Layer),
        ..options
    };
    assert_eq!(
        groups(&p, &fresh, GroupBy::Layer)
            .iter()
            .map(key_total)
            .collect::<Vec<_>>(),
        build(&p, &grouped)
            .groups
            .iter()
            .map(key_total)
            .collect::<Vec<_>>()
    );
}

#[test]
fn groups_do_not_count_nesting_twice() {
    let options = ReportOptions {
        group_by: Some(GroupBy::Layer),
        ..ReportOptions::default()
    };
    let r = build(&nested(), &options);
    let groups: Vec<(&str, usize, f64, f64)> = r
        .groups
        .iter()
        .map(|g| (g.key.as_str(), g.events, g.total_ns, g.self_ns))
        .collect();
    // m: a (100, holding b) + e (40). d and c have no layer: they inherit m from their
    // ancestors, so m's self is 50 + 20 + 40 + 30 and nothing is counted twice.
    assert_eq!(groups, [("m", 5, 140.0, 140.0)]);
    // The mean measured iteration is 1000.
    assert!((r.groups[0].share - 0.14).abs() < 1e-12);
    assert_eq!(r.groups[0].calls_per_iter, 5.0);

    // An event without a layer and without an ancestor that has one is in "-".
    let p = profile(
        0,
        &[1000],
        vec![
            flat(0, "a", Some("m"), None, 100),
            flat(1, "helper", None, Some(0), 30),
            flat(2, "loose", None, None, 20),
        ],
    );
    let r = build(&p, &options);
    let groups: Vec<(&str, usize, f64, f64)> = r
        .groups
        .iter()
        .map(|g| (g.key.as_str(), g.events, g.total_ns, g.self_ns))
        .collect();
    assert_eq!(groups, [("m", 2, 100.0, 100.0), ("-", 1, 20.0, 20.0)]);

    // A member nested in a member through an event of another group is still nested.
    let p = profile(
        0,
        &[1000],
        vec![
            flat(0, "a", Some("m"), None, 100),
            flat(1, "k", Some("n"), Some(0), 60),
            flat(2, "g", Some("m"), Some(1), 50),
        ],
    );
    let r = build(&p, &options);
    assert_eq!(r.groups[0].key, "m");
    assert_eq!(r.groups[0].total_ns, 100.0);
    assert_eq!(r.groups[0].self_ns, 40.0 + 50.0);

    let r = build(
        &nested(),
        &ReportOptions {
            group_by: Some(GroupBy::LayerPhase),
            ..ReportOptions::default()
        },
    );
    let keys: Vec<&str> = r.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["m/fwd"]);
    let r = build(
        &nested(),
        &ReportOptions {
            group_by: Some(GroupBy::Phase),
            ..ReportOptions::default()
        },
    );
    assert_eq!(r.groups.len(), 1);
    assert_eq!(r.groups[0].key, "fwd");
    assert_eq!(r.groups[0].total_ns, 140.0);
    assert!(build(&nested(), &ReportOptions::default())
        .groups
        .is_empty());
}

#[test]
fn noisy_events_are_flagged_above_the_threshold() {
    let p = profile(
        0,
        &[100],
        vec![
            ev(0, "steady", None, None, &[100, 100, 101], &[0, 0, 0]),
            ev(1, "wild", None, None, &[10, 100, 1000], &[0, 0, 0]),
            ev(2, "one", None, None, &[100], &[0]),
        ],
    );
    let r = build(&p, &ReportOptions::default());
    assert!(!by_name(&r, "steady").noisy);
    assert!(by_name(&r, "wild").noisy);
    assert!(!by_name(&r, "one").noisy);
    let wild = by_name(&r, "wild");
    assert!((wild.cv - wild.stddev_ns / wild.mean_ns).abs() < 1e-12);
    let r = build(
        &p,
        &ReportOptions {
            cv_threshold: 10.0,
            ..ReportOptions::default()
        },
    );
    assert!(!by_name(&r, "wild").noisy);
    assert_eq!(r.cv_threshold, 10.0);
}

#[test]
fn perturbation_compares_armed_iterations_with_warmup() {
    // Iteration 0 (start-up) is left out of the baseline: median(100, 110) = 105.
    let walls = [1000, 100, 110, 120, 130, 140, 200];
    let e = ev(0, "a", None, None, &[1, 2, 3], &[3, 3, 4]);
    let p = profile(3, &walls, vec![e.clone()]);
    let r = build(&p, &ReportOptions::default());
    let it = &r.iteration;
    assert_eq!((it.count, it.warmup, it.measured), (7, 3, 4));
    assert_eq!(it.median_ns, 135.0);
    assert_eq!(it.mean_ns, 147.5);
    let pert = r.perturbation.as_ref().unwrap();
    assert_eq!(pert.warmup_median_ns, 105.0);
    assert_eq!(pert.armed_median_ns, 135.0);
    assert!((pert.ratio - 135.0 / 105.0).abs() < 1e-12);
    assert!(pert.flagged);
    // Armed in iterations 3 and 4: median(120, 130) = 125.
    let event = r.events[0].perturbation.unwrap();
    assert!((event - (125.0 / 105.0 - 1.0)).abs() < 1e-12);
    let r = build(
        &p,
        &ReportOptions {
            perturbation_threshold: 0.5,
            ..ReportOptions::default()
        },
    );
    assert!(!r.perturbation.unwrap().flagged);
    // Share uses the mean measured iteration.
    assert!((r.events[0].share - 2.0 / 147.5).abs() < 1e-12);

    // No usable warmup iteration: no perturbation.
    for warmup in [0, 1] {
        let r = build(
            &profile(warmup, &walls, vec![e.clone()]),
            &ReportOptions::default(),
        );
        assert!(r.perturbation.is_none());
        assert!(r.events[0].perturbation.is_none());
    }
    // Stopped during warmup: every iteration is "measured", nothing to compare.
    let r = build(&profile(10, &walls, vec![]), &ReportOptions::default());
    assert_eq!(r.iteration.measured, 7);
    assert!(r.perturbation.is_none());
}

#[test]
fn sort_orders() {
    let p = profile(
        0,
        &[1000],
        vec![
            ev(2, "c", None, None, &[50, 50], &[0, 0]),
            ev(0, "a", None, None, &[10, 10], &[0, 0]),
            ev(1, "b", None, None, &[30, 30, 300], &[0, 0, 0]),
            {
                let mut m = ev(3, "m", None, None, &[20, 20, 20, 20], &[0, 0, 0, 0]);
                m.merged = true;
                m
            },
        ],
    );
    let names = |sort| {
        build(
            &p,
            &ReportOptions {
                sort,
                ..ReportOptions::default()
            },
        )
        .events
        .iter()
        .map(|e| e.identity.name.clone())
        .collect::<Vec<_>>()
    };
    assert_eq!(names(SortBy::Order), ["a", "b", "c", "m"]);
    assert_eq!(names(SortBy::Median), ["c", "b", "m", "a"]);
    // b: mean 120; m: 20 ns x 4 calls per iteration = 80.
    assert_eq!(names(SortBy::Total), ["b", "m", "c", "a"]);
    let p = profile(
        0,
        &[1000],
        vec![
            flat(0, "a", Some("x"), None, 10),
            flat(1, "b", Some("y"), None, 30),
            flat(2, "c", Some("z"), None, 20),
        ],
    );
    let r = build(
        &p,
        &ReportOptions {
            group_by: Some(GroupBy::Layer),
            ..ReportOptions::default()
        },
    );
    let keys: Vec<&str> = r.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["y", "z", "x"]);
}

/// Splits one CSV line, honouring quotes.
fn csv_split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

fn grouped(p: &Profile) -> Report {
    build(
        p,
        &ReportOptions {
            group_by: Some(GroupBy::Layer),
            ..ReportOptions::default()
        },
    )
}

#[test]
fn csv_has_a_header_and_one_row_per_event_and_group() {
    let mut p = nested();
    p.events[0].name = "a,\"b\"".to_owned();
    let r = grouped(&p);
    let text = render(&r, Format::Csv);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 5 + 1);
    let header = csv_split(lines[0]);
    assert_eq!(
        header,
        profiler_tables::columns::headers(profiler_tables::columns::Place::Csv, Default::default())
    );
    for line in &lines[1..] {
        assert_eq!(csv_split(line).len(), header.len(), "{line}");
    }
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let first = csv_split(lines[1]);
    assert_eq!(first[col("row_type")], "event");
    assert_eq!(first[col("name")], "a,\"b\"");
    assert_eq!(first[col("total_ns")], "100");
    assert_eq!(first[col("self_ns")], "50");
    assert_eq!(first[col("share")], "0.1");
    assert_eq!(first[col("perturbation")], "0");
    let group = csv_split(lines[6]);
    assert_eq!(group[col("row_type")], "group");
    assert_eq!(group[col("group")], "m");
    assert_eq!(group[col("total_ns")], "140");
    assert_eq!(group[col("events")], "5");
    assert_eq!(group[col("name")], "");
    // Without groups, only events.
    let text = render(&build(&p, &ReportOptions::default()), Format::Csv);
    assert_eq!(text.lines().count(), 6);
}

#[test]
fn json_is_the_whole_report() {
    let r = grouped(&nested());
    let text = render(&r, Format::Json);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["program"], "toy");
    assert_eq!(v["mode"], "sample");
    assert_eq!(v["complete"], true);
    assert_eq!(v["iteration"]["measured"], 2);
    assert_eq!(v["events"].as_array().unwrap().len(), 5);
    assert_eq!(v["events"][0]["self_ns"], 50.0);
    assert_eq!(v["events"][1]["parent"], 0);
    assert_eq!(v["events"][2]["depth"], 2);
    for field in [
        "calls_per_iter",
        "p90_ns",
        "cv",
        "share",
        "noisy",
        "perturbation",
    ] {
        assert!(v["events"][0].get(field).is_some(), "{field}");
    }
    assert_eq!(v["groups"][0]["key"], "m");
    assert_eq!(v["groups"][0]["total_ns"], 140.0);
    assert_eq!(v["perturbation"]["ratio"], 1.0);
    assert_eq!(v["cv_threshold"], 0.25);
}

#[test]
fn markdown_has_pipe_tables() {
    let mut p = nested();
    p.events[0].name = "a|b".to_owned();
    let text = render(&grouped(&p), Format::Markdown);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("| layer | phase | name"))
        .unwrap();
    let columns = lines[header].matches(" | ").count() + 1;
    assert!(
        lines[header + 1].starts_with("|:---|"),
        "{}",
        lines[header + 1]
    );
    assert_eq!(lines[header + 1].matches('|').count(), columns + 1);
    assert!(lines[header + 2].contains("a\\|b"));
    for line in &lines[header + 2..header + 7] {
        assert_eq!(line.replace("\\|", "").matches('|').count(), columns + 1);
    }
    assert_eq!(lines[header + 7], "");
    assert!(lines[header + 8].starts_with("| group |"));
    assert!(lines[header + 9].starts_with("|:---|---:|"));
}

#[test]
fn table_is_aligned_and_marks_noisy_events() {
    let mut p = nested();
    p.events
        .push(ev(5, "wild", None, None, &[10, 100, 1000], &[2, 2, 2]));
    let text = render(&grouped(&p), Format::Table);
    let lines: Vec<&str> = text.lines().collect();
    let header = lines.iter().position(|l| l.contains("name")).unwrap();
    assert!(lines[header].contains("self") && lines[header].contains("p90"));
    // Six events, then a blank line and the group table.
    let events = &lines[header + 1..header + 7];
    assert!(events[5].contains("wild") && events[5].ends_with('!'));
    assert!(!events[0].ends_with('!'));
    // Nested names are indented by depth.
    assert!(events[2].contains("    d"));
    // The numbers are right-aligned: every row ends its median column at the same place.
    let median_end = lines[header].find("median").unwrap() + "median".len();
    for row in events {
        assert_ne!(row.as_bytes()[median_end - 1], b' ', "{row}");
    }
    assert_eq!(lines[header + 7], "");
    assert!(lines[header + 8].trim_start().starts_with("group"));
    assert!(text.contains("! = noisy (cv above 25.0%)"));
    assert!(text.contains("toy: sample mode"));
}

#[test]
fn summary_says_complete_or_incomplete() {
    let mut p = nested();
    let text = summary(&p, "out/prof.json");
    assert!(text.starts_with("profiler-core: sample mode, 4 iterations (2 warmup), 5 events"));
    assert!(text.contains(", complete"));
    assert!(!text.contains("INCOMPLETE"));
    assert!(text.contains("share"));
    assert!(text.contains("results in out/prof.json"));
    assert!(text.contains("20ns"));
    assert!(!text.ends_with('\n'));
    // One row per event, in execution order.
    let names: Vec<&str> = text
        .lines()
        .skip(2)
        .take(5)
        .map(|l| l.split_whitespace().nth(2).unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "d", "c", "e"]);
    p.complete = false;
    assert!(summary(&p, "prof.json").contains("INCOMPLETE"));
    let empty = profile(0, &[], vec![]);
    assert!(summary(&empty, "prof.json").contains("no iteration completed"));
}

#[test]
fn human_units() {
    assert_eq!(human_ns(850.0), "850ns");
    assert_eq!(human_ns(12_345.0), "12.3µs");
    assert_eq!(human_ns(4_560_000.0), "4.56ms");
    assert_eq!(human_ns(1_200_000_000.0), "1.20s");
    assert_eq!(human_ns(999.7), "1.0µs");
    assert_eq!(human_ns(999_990.0), "1.00ms");
    assert_eq!(human_ns(0.0), "0ns");
}

/// `wall_ns[k]` is iteration `first + k`: the warmup, the measured iterations and the armed
/// iterations are found by iteration number, not by position.
#[test]
fn iterations_are_numbered_from_first() {
    // Iteration 0 is not listed; 1 and 2 are warmup (median 105), 3 to 6 measured.
    let walls = [100, 110, 120, 130, 140, 200];
    let e = ev(0, "a", None, None, &[1, 2, 3], &[3, 3, 4]);
    let mut p = profile(3, &walls, vec![e]);
    p.iterations.first = 1;
    p.iterations.count = 7;
    assert_eq!(
        profiler_tables::rows::measured_walls(&p),
        [120, 130, 140, 200]
    );
    let r = build(&p, &ReportOptions::default());
    assert_eq!((r.iteration.first, r.iteration.measured), (1, 4));
    assert_eq!(r.iteration.median_ns, 135.0);
    let pert = r.perturbation.as_ref().unwrap();
    assert_eq!(pert.warmup_median_ns, 105.0);
    // Armed in iterations 3 and 4: median(120, 130) = 125.
    let event = r.events[0].perturbation.unwrap();
    assert!((event - (125.0 / 105.0 - 1.0)).abs() < 1e-12, "{event}");

    // Continuous mode: the listed iterations (the last window's) come long after the warmup,
    // all are measured, and there is no baseline to measure a perturbation against.
    let e = ev(0, "a", None, None, &[1, 2, 3], &[43, 43, 44]);
    let mut p = profile(3, &walls, vec![e]);
    p.run.mode = "continuous".to_owned();
    p.iterations.first = 40;
    p.iterations.count = 46;
    assert_eq!(profiler_tables::rows::measured_walls(&p), walls);
    let r = build(&p, &ReportOptions::default());
    assert_eq!((r.iteration.first, r.iteration.measured), (40, 6));
    assert_eq!(r.iteration.median_ns, 125.0);
    assert!(r.perturbation.is_none() && r.events[0].perturbation.is_none());
    assert!(r.windows.is_none());
    let table = render(&r, Format::Table);
    assert!(
        table.starts_with(
            "toy: continuous mode, 46 iterations (3 warmup); the last window's 6 iterations \
             (from iteration 40)"
        ),
        "{table}"
    );
    assert!(
        table.contains("perturbation: unknown (continuous mode keeps the last window's"),
        "{table}"
    );
}

/// 20 windows closed of 10 iterations per event: the first 3 kept as the baseline, and the last
/// 8 (windows 12 to 19).
fn continuous_report(slow: &[(&str, f64, usize)]) -> Report {
    let all =
        crate::drift::tests::continuous(&crate::diff::tests::model(), 10, 20, 20, 0.02, slow, 5);
    build(
        &crate::drift::tests::pinned(all, 3, 8),
        &ReportOptions::default(),
    )
}

#[test]
fn continuous_mode_has_a_windows_section_in_every_format() {
    // Slower from window 7: after the baseline windows, before every recent window kept.
    let r = continuous_report(&[("top_backward", 1.25, 7)]);
    let w = r.windows.as_ref().unwrap();
    assert_eq!((w.kept, w.closed, w.iterations_per_window), (11, 20, 250));
    let table = render(&r, Format::Table);
    let section = &table[table.find("\nwindows: ").expect("no windows section") + 1..];
    let lines: Vec<&str> = section.lines().collect();
    assert_eq!(
        lines[0],
        "windows: 11 kept of 20 closed (the first 3, and the last 8: PROF_WINDOWS=8), 250 \
         iterations each"
    );
    assert_eq!(
        lines[1],
        "drift: the change points of each series of fastest-5% times per window (at least 12 \
         windows; threshold 2.0%, alpha 0.05, Holm over the series; intervals 95%); and the \
         recent windows 18-19 (2): since the start, against the baseline windows 0-2 (3); in \
         the recent past, against windows 12-15 (4); by prof diff's statistics"
    );
    assert!(lines[2].contains("median per window"), "{}", lines[2]);
    assert!(lines[2].contains("since start") && lines[2].ends_with("recent past"));
    assert!(lines[3].contains("iteration"), "{}", lines[3]);
    // The iteration, 25 events, and the closing line.
    assert_eq!(lines.len(), 3 + 1 + 25 + 1, "{section}");
    let row = lines.iter().find(|l| l.contains("top_backward")).unwrap();
    // The baseline windows, a separator for the windows dropped, the last 8.
    let spark: String = row
        .chars()
        .filter(|c| ('▁'..='█').contains(c) || *c == '┊')
        .collect();
    let (baseline, recent) = spark.split_once('┊').unwrap_or_else(|| panic!("{row}"));
    assert!(baseline.chars().all(|c| "▁▂".contains(c)), "{row}");
    assert_eq!(baseline.chars().count(), 3, "{row}");
    assert!(recent.chars().all(|c| "▇█".contains(c)), "{row}");
    assert_eq!(recent.chars().count(), 8, "{row}");
    // Slower since the start; stable in the recent past (it was slow in every recent window).
    assert!(
        row.contains("SLOWER +2") && row.contains("(95% CI +"),
        "{row}"
    );
    // Stable in the recent past: it was slow in every recent window, and windows of one run
    // move together (their fastest samples' intervals rule out a 2% drift).
    assert!(row.trim_end().ends_with("stable"), "{row}");
    // 11 windows, too few for change points: the headline is the comparison since the start.
    let steady = lines.iter().find(|l| l.contains(" lookup ")).unwrap();
    assert_eq!(
        steady.matches("inconclusive (95% CI ").count(),
        3,
        "{steady}"
    );
    assert_eq!(
        lines.last().unwrap(),
        &"! drifted: top_mlp/bwd top_backward (slower since the start) (1 of 25 events)"
    );

    let json: serde_json::Value = serde_json::from_str(&render(&r, Format::Json)).unwrap();
    let windows = &json["windows"];
    assert_eq!(
        (
            windows["kept"].as_u64(),
            windows["baseline_windows"].as_u64()
        ),
        (Some(11), Some(3))
    );
    assert_eq!(
        windows["indices"],
        serde_json::json!([0, 1, 2, 12, 13, 14, 15, 16, 17, 18, 19])
    );
    assert_eq!(
        windows["start"],
        serde_json::json!({"first": 0, "last": 2, "windows": 3})
    );
    assert_eq!(
        windows["earlier"],
        serde_json::json!({"first": 12, "last": 15, "windows": 4})
    );
    assert_eq!(
        windows["recent"],
        serde_json::json!({"first": 18, "last": 19, "windows": 2})
    );
    let tb = windows["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "top_backward")
        .unwrap();
    assert_eq!(
        (tb["drift"].as_str(), tb["drift_against"].as_str()),
        (Some("slower"), Some("start"))
    );
    assert_eq!(tb["medians_ns"].as_array().unwrap().len(), 11);
    assert_eq!(tb["comparison"]["verdict"], "regressed");
    assert!(tb["comparison"]["ci_low"].as_f64().unwrap() > 1.1);
    assert_eq!(tb["since_start"]["drift"], "slower");
    assert_eq!(tb["since_start"]["comparison"]["verdict"], "regressed");
    assert_eq!(tb["recent_past"]["drift"], "stable");
    assert_eq!(windows["iteration"]["id"], "iteration");

    let csv = render(&r, Format::Csv);
    let header = csv_split(csv.lines().next().unwrap());
    assert_eq!(
        header.len(),
        profiler_tables::columns::headers(profiler_tables::columns::Place::Csv, Default::default())
            .len()
            + 19
    );
    assert_eq!(
        header[27..31],
        ["window", "first_iteration", "baseline_window", "drift"]
    );
    assert_eq!(header[31..33], ["drift_against", "drift_ratio"]);
    assert_eq!(header[36..38], ["start_drift", "start_ratio"]);
    assert_eq!(header[41..43], ["recent_past_drift", "recent_past_ratio"]);
    let rows: Vec<Vec<String>> = csv.lines().skip(1).map(csv_split).collect();
    assert!(rows.iter().all(|r| r.len() == header.len()));
    let tb_event = rows
        .iter()
        .find(|r| r[0] == "event" && r[3] == "top_backward")
        .unwrap();
    assert_eq!(
        (tb_event[30].as_str(), tb_event[31].as_str()),
        ("slower", "start")
    );
    assert!(tb_event[32].parse::<f64>().unwrap() > 1.2);
    assert_eq!(tb_event[36], "slower");
    assert_eq!(tb_event[37], tb_event[32]);
    assert_eq!(tb_event[41], "stable");
    // One window row per event and kept window, and per kept window for the iteration.
    let window_rows: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == "window").collect();
    assert_eq!(window_rows.len(), 26 * 11);
    assert_eq!(window_rows[0][2], "iteration");
    let cells = |r: &Vec<String>| (r[27].clone(), r[28].clone(), r[29].clone());
    assert_eq!(
        cells(window_rows[0]),
        ("0".into(), "10".into(), "true".into())
    );
    assert_eq!(
        cells(window_rows[3]),
        ("12".into(), "3010".into(), "false".into())
    );
    assert!(window_rows
        .iter()
        .all(|r| r[12].parse::<u64>().unwrap() > 0));

    let md = render(&r, Format::Markdown);
    assert!(md.contains("**windows: 11 kept of 20 closed"), "{md}");
    assert!(
        md.contains("and the recent windows 18-19 (2): since the start"),
        "{md}"
    );
    assert!(
        md.contains("| layer | phase | name | occ | median per window |"),
        "{md}"
    );
    assert!(md.contains("| since start | recent past |"), "{md}");
    assert!(
        md.contains("! drifted: top_mlp/bwd top_backward (slower since the start)"),
        "{md}"
    );
}

/// A change in the recent past is flagged there and since the start; a file without baseline
/// windows (written before they were kept) is judged in the recent past only, and says so.
#[test]
fn recent_changes_and_files_without_baseline_windows() {
    let r = continuous_report(&[("lookup", 0.8, 16)]);
    let table = render(&r, Format::Table);
    assert!(
        table
            .trim_end()
            .ends_with("! drifted: embedding/fwd lookup (faster since the start) (1 of 25 events)"),
        "{table}"
    );
    let old = crate::drift::tests::continuous(
        &crate::diff::tests::model(),
        10,
        20,
        8,
        0.1,
        &[("top_backward", 1.25, 7)],
        5,
    );
    let table = render(&build(&old, &ReportOptions::default()), Format::Table);
    assert!(
        table.contains(
            "intervals 95%); and the recent windows 18-19 (2): in the recent past, against \
             windows 12-15 (4); since the start: no baseline windows in this file"
        ),
        "{table}"
    );
    assert!(
        table.lines().last().unwrap().starts_with(
            "? no event drifted, but 25 of 25 events are inconclusive (a drift of 2.0% could \
             have gone unseen"
        ),
        "{table}"
    );
    // Where a drift of 60% is what matters, those windows rule it out: no event drifted.
    let wide = ReportOptions {
        drift_threshold: 0.6,
        ..ReportOptions::default()
    };
    let table = render(&build(&old, &wide), Format::Table);
    assert!(
        table
            .trim_end()
            .ends_with("no event drifted (25 events compared)"),
        "{table}"
    );
}

#[test]
fn a_steady_continuous_run_drifts_nowhere_and_the_summary_leaves_windows_out() {
    let r = continuous_report(&[]);
    let table = render(&r, Format::Table);
    assert!(
        table
            .lines()
            .last()
            .unwrap()
            .starts_with("? no event drifted, but 9 of 25 events are inconclusive"),
        "{table}"
    );
    assert!(!table.contains("SLOWER") && !table.contains("FASTER"));
    // Without windows (or with them turned off), no section and no columns.
    let p = crate::drift::tests::continuous(&crate::diff::tests::model(), 10, 3, 3, 0.1, &[], 5);
    let off = build(
        &p,
        &ReportOptions {
            windows: false,
            ..ReportOptions::default()
        },
    );
    assert!(off.windows.is_none());
    assert!(!render(&off, Format::Table).contains("\nwindows: "));
    assert_eq!(
        render(&off, Format::Csv).lines().next().unwrap(),
        profiler_tables::columns::headers(profiler_tables::columns::Place::Csv, Default::default())
            .join(",")
    );
    // The summary computes no drift (a bootstrap per event): one line points to `prof report`.
    let text = summary(&p, "prof.json");
    assert!(!text.contains("\nwindows: "), "{text}");
    let line = text.lines().find(|l| l.contains("continuous:")).unwrap();
    assert!(
        line.contains("3 windows kept of 3 closed") && line.contains("prof report"),
        "{line}"
    );
    let p = crate::drift::tests::pinned(p, 2, 1);
    let text = summary(&p, "prof.json");
    let line = text.lines().find(|l| l.contains("continuous:")).unwrap();
    assert!(
        line.contains("3 windows kept (the first 2, and 1 recent) of 3 closed"),
        "{line}"
    );
}

#[test]
fn one_window_says_it_is_not_enough() {
    let p = crate::drift::tests::continuous(&crate::diff::tests::model(), 10, 1, 5, 0.1, &[], 5);
    let table = render(&build(&p, &ReportOptions::default()), Format::Table);
    assert!(
        table.contains(
            "windows: 1 kept of 1 closed (PROF_WINDOWS=5), 250 iterations each\ndrift: the \
             change points of each series of fastest-5% times per window (at least 12 windows; \
             threshold 2.0%, alpha 0.05, Holm over the series; intervals 95%); since the start: \
             no baseline windows in this file (PROF_BASELINE_WINDOWS=0, or written \
             before profiler-core kept them); in the recent past: not enough windows: 1 kept \
             after the baseline, 2 needed"
        ),
        "{table}"
    );
    assert!(table
        .trim_end()
        .ends_with("no drift verdict: not enough windows yet"));
}

/// Every window kept is a baseline window (PROF_BASELINE_WINDOWS above the windows closed):
/// there is no recent side, but the change points judge the 20 windows, and the summary line
/// names the event they call slower. Before, it said "no drift verdict: not enough windows
/// yet" under a table that said SLOWER.
#[test]
fn change_points_decide_without_a_recent_side_and_the_summary_says_so() {
    let all = crate::drift::tests::continuous(
        &crate::diff::tests::model(),
        10,
        20,
        20,
        0.02,
        &[("top_backward", 1.6, 10)],
        5,
    );
    let report = build(
        &crate::drift::tests::pinned(all, 30, 0),
        &ReportOptions::default(),
    );
    let windows = report.windows.as_ref().unwrap();
    assert!(windows.recent.is_none());
    let table = render(&report, Format::Table);
    let last = table.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with("! drifted: ") && last.contains("top_backward"),
        "{table}"
    );
}

/// Memory figures (from `profiler_core::Alloc`) add three columns, `-` for an event without
/// them, and `--sort alloc|peak` orders by them; without figures nothing changes.
#[test]
fn memory_columns_appear_with_memory_figures_only() {
    let plain = profile(1, &[100, 100, 100], vec![flat(0, "a", None, None, 10)]);
    let before = render(&build(&plain, &ReportOptions::default()), Format::Table);
    assert!(!before.contains("alloc"), "{before}");

    let mut small = flat(0, "small", None, None, 10);
    small.memory = Some(profiler_format::Memory {
        alloc_bytes: vec![2048],
        freed_bytes: vec![2048],
        allocs: vec![2],
        peak_bytes: vec![1024],
    });
    let mut big = flat(1, "big", None, None, 10);
    big.memory = Some(profiler_format::Memory {
        alloc_bytes: vec![3 << 20],
        freed_bytes: vec![0],
        allocs: vec![3],
        peak_bytes: vec![3 << 20],
    });
    let none = flat(2, "none", None, None, 10);
    let p = profile(1, &[100, 100, 100], vec![small, big, none]);
    let table = render(&build(&p, &ReportOptions::default()), Format::Table);
    let header = table.lines().nth(3).unwrap();
    assert!(header.contains("alloc allocs    peak"), "{table}");
    let line = |name: &str| table.lines().find(|l| l.contains(name)).unwrap().to_owned();
    assert!(line("small").contains("2.0KiB      2  1.0KiB"), "{table}");
    assert!(line("big").contains("3.00MiB      3 3.00MiB"), "{table}");
    assert!(line(" none").contains("-      -       -"), "{table}");
    let sorted = build(
        &p,
        &ReportOptions {
            sort: SortBy::Alloc,
            ..ReportOptions::default()
        },
    );
    let names: Vec<&str> = sorted
        .events
        .iter()
        .map(|e| e.identity.name.as_str())
        .collect();
    assert_eq!(names, ["big", "small", "none"]);
    let csv = render(&build(&p, &ReportOptions::default()), Format::Csv);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with("alloc_bytes,freed_bytes,allocs,peak_bytes"),
        "{csv}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render(&build(&p, &ReportOptions::default()), Format::Json)).unwrap();
    assert_eq!(json["events"][1]["memory"]["alloc_bytes"], 3145728.0);
    assert!(json["events"][2].get("memory").is_none());
}

/// Device memory: per event timed on a stream, two columns (the median bytes in use at a run's
/// end and the median change over it, `-` without them), and a line per device with its memory
/// over the steps, in every format; without it nothing changes.
#[test]
fn device_memory_columns_and_lines_appear_with_device_figures_only() {
    let plain = profile(1, &[100, 100, 100], vec![flat(0, "a", None, None, 10)]);
    let before: Vec<String> = [Format::Table, Format::Csv, Format::Json, Format::Markdown]
        .map(|f| render(&build(&plain, &ReportOptions::default()), f))
        .to_vec();
    for text in &before {
        assert!(
            !text.contains("dev used") && !text.contains("device"),
            "{text}"
        );
    }

    let mut gemm = ev(0, "gemm", None, None, &[10, 10, 10], &[1, 2, 3]);
    gemm.gpu = Some(profiler_format::Gpu {
        memory: Some(profiler_format::DeviceMemory {
            used_bytes: vec![Some(3 << 20), Some(4 << 20), None],
            change_bytes: vec![Some(1 << 20), Some(-2048), Some(1 << 20)],
        }),
        ..Default::default()
    });
    let cpu = flat(1, "cpu", None, None, 10);
    let mut p = profile(1, &[100, 100, 100, 100], vec![gemm, cpu]);
    p.iterations.device_memory = vec![
        profiler_format::DeviceUsage {
            device: 1,
            used_bytes: vec![None, Some(5 << 30), Some(7 << 30), Some(6 << 30)],
        },
        profiler_format::DeviceUsage {
            device: 0,
            used_bytes: vec![Some(2 << 20), Some(1 << 20), Some(3 << 20), Some(4 << 20)],
        },
    ];
    let report = build(&p, &ReportOptions::default());
    assert_eq!(
        report.device_memory,
        vec![
            DeviceUsageRow {
                device: 0,
                steps: 4,
                min_bytes: 1 << 20,
                max_bytes: 4 << 20,
                last_bytes: 4 << 20
            },
            DeviceUsageRow {
                device: 1,
                steps: 3,
                min_bytes: 5 << 30,
                max_bytes: 7 << 30,
                last_bytes: 6 << 30
            },
        ]
    );

    let table = render(&report, Format::Table);
    assert!(table.contains(
        "device 0 memory in use at the steps: min 1.00MiB, max 4.00MiB, last 4.00MiB (4 steps)"
    ));
    assert!(table.contains(
        "device 1 memory in use at the steps: min 5.00GiB, max 7.00GiB, last 6.00GiB (3 steps)"
    ));
    let header = table.lines().find(|l| l.starts_with("  layer")).unwrap();
    assert!(
        header.trim_end().ends_with("dev used dev change"),
        "{table}"
    );
    let line = |name: &str| table.lines().find(|l| l.contains(name)).unwrap().to_owned();
    // Medians: used of (3, 4) MiB; change of (1 MiB, -2 KiB, 1 MiB).
    assert!(
        line("gemm").trim_end().ends_with("3.50MiB   +1.00MiB"),
        "{table}"
    );
    assert!(
        line("fwd   cpu").trim_end().ends_with("-          -"),
        "{table}"
    );

    let csv = render(&report, Format::Csv);
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].ends_with(
        "device_used_bytes,device_change_bytes,device,device_steps,device_min_bytes,\
         device_max_bytes,device_last_bytes"
    ));
    let width = rows[0].split(',').count();
    assert!(rows.iter().all(|r| r.split(',').count() == width), "{csv}");
    let gemm_row = rows.iter().find(|r| r.contains(",gemm,")).unwrap();
    assert!(gemm_row.ends_with(",3670016,1048576,,,,,"), "{gemm_row}");
    assert!(rows.contains(&"device,,,,,,,,,,,,,,,,,,,,,,,,,,,,,0,4,1048576,4194304,4194304"));
    assert!(
        rows.contains(&"device,,,,,,,,,,,,,,,,,,,,,,,,,,,,,1,3,5368709120,7516192768,6442450944")
    );

    let json: serde_json::Value = serde_json::from_str(&render(&report, Format::Json)).unwrap();
    assert_eq!(json["events"][0]["device_memory"]["used_bytes"], 3670016.0);
    assert_eq!(
        json["events"][0]["device_memory"]["change_bytes"],
        1048576.0
    );
    assert!(json["events"][1].get("device_memory").is_none());
    assert_eq!(json["device_memory"][1]["max_bytes"], 7516192768u64);

    let md = render(&report, Format::Markdown);
    assert!(md.contains("| dev used | dev change |"), "{md}");
    assert!(
        md.contains("device 1 memory in use at the steps: min 5.00GiB"),
        "{md}"
    );
}

/// `nested()` with work: A (1,000 FLOPs a run of 100 ns, 400 bytes) holds B (300 FLOPs, 30 ns),
/// whose FLOPs are part of A's; E (4,000 bytes in 40 ns) counts bytes only.
fn with_work(peak: Option<profiler_format::peak::Peak>) -> Profile {
    let mut p = nested();
    let work = |flops: Option<u64>, bytes: Option<u64>| profiler_format::SampleWork {
        flops: flops.map(|f| vec![f]),
        bytes: bytes.map(|b| vec![b]),
    };
    p.events[0].work = Some(work(Some(1000), Some(400)));
    p.events[1].work = Some(work(Some(300), None));
    p.events[4].work = Some(work(None, Some(4000)));
    p.run.peak = peak;
    p
}

fn peak(flops: f64, bytes: f64) -> profiler_format::peak::Peak {
    profiler_format::peak::Peak {
        schema: profiler_format::peak::PEAK_SCHEMA.to_owned(),
        flops: Some(flops),
        bytes: Some(bytes),
        source: "given".to_owned(),
        detail: "PROF_PEAK_FLOPS=2e10".to_owned(),
        host: String::new(),
    }
}

#[test]
fn work_columns_show_rates_mfu_and_the_roofline() {
    // 2e10 FLOP/s and 1e9 B/s: the ridge point is 20 FLOP/B.
    let r = build(&with_work(Some(peak(2e10, 1e9))), &ReportOptions::default());
    let a = by_name(&r, "a").work.as_ref().unwrap();
    // 1,000 FLOPs in 100 ns: 1e10 FLOP/s, half the peak; 400 bytes: 4e9 B/s; 2.5 FLOP/B.
    assert_eq!(a.flops_per_s.unwrap().median, 1e10);
    assert_eq!(a.bytes_per_s.unwrap().median, 4e9);
    assert_eq!(a.intensity, Some(2.5));
    assert_eq!(a.mfu, Some(0.5));
    assert_eq!(a.bound, Some(profiler_tables::work::Bound::Memory));
    assert!(by_name(&r, "c").work.is_none());
    let table = render(&r, Format::Table);
    for text in ["FLOP/s", "MFU", "50.0%", "memory", "10.0G", "4.00G"] {
        assert!(table.contains(text), "{text} missing:\n{table}");
    }
    // The step: A's FLOPs only (B's are inside A's), 1,000 per 1,000 ns iteration: 1e9 FLOP/s,
    // 5% of the peak.
    let line = r.work.as_ref().unwrap();
    assert!(
        line.contains("1.00kFLOP per iteration, step MFU 5.0% (given)"),
        "{line}"
    );
    assert!(line.contains("PROF_PEAK_FLOPS=2e10"), "{line}");
    let csv = render(&r, Format::Csv);
    let header = csv_split(csv.lines().next().unwrap());
    assert!(
        header.ends_with(&[
            "flops_per_s".to_owned(),
            "flops_per_s_low".to_owned(),
            "flops_per_s_high".to_owned(),
            "bytes_per_s".to_owned(),
            "bytes_per_s_low".to_owned(),
            "bytes_per_s_high".to_owned(),
            "intensity".to_owned(),
            "bound".to_owned(),
            "mfu".to_owned(),
        ]),
        "{header:?}"
    );
    let json = render(&r, Format::Json);
    assert!(json.contains("\"mfu\": 0.5"), "{json}");
    assert!(render(&r, Format::Markdown).contains("| MFU |"));
}

#[test]
fn work_columns_appear_only_with_work_and_over_100_percent_is_flagged() {
    let plain = render(&build(&nested(), &ReportOptions::default()), Format::Table);
    assert!(
        !plain.contains("FLOP/s") && !plain.contains("work:"),
        "{plain}"
    );
    let csv = render(&build(&nested(), &ReportOptions::default()), Format::Csv);
    assert!(!csv.contains("mfu"));
    // A peak of 5e9 FLOP/s, below A's 1e10: a wrong peak or a wrong count.
    let r = build(&with_work(Some(peak(5e9, 1e9))), &ReportOptions::default());
    let table = render(&r, Format::Table);
    assert!(
        table.contains(">100%! check the peak or the flops key"),
        "{table}"
    );
    assert!(!table.contains(" 200.0%"), "{table}");
    // Without a peak: rates, no MFU.
    let r = build(&with_work(None), &ReportOptions::default());
    assert_eq!(by_name(&r, "a").work.as_ref().unwrap().mfu, None);
    assert!(r.work.as_ref().unwrap().contains("no peak known"));
}

/// Issue 43, item 17: the events that ran only before the loop are listed apart, with their
/// one run, in every format (the summary names them too).
#[test]
fn events_that_ran_before_the_loop_are_listed_apart() {
    let mut p = nested();
    p.before_loop = vec![
        profiler_format::BeforeLoop {
            id: "m::build".to_owned(),
            name: "build".to_owned(),
            layer: Some("model".to_owned()),
            phase: Some("init".to_owned()),
            kind: "fn".to_owned(),
            module: "m".to_owned(),
            file: "m.rs".to_owned(),
            line: 7,
            occurrence: 0,
            duration_ns: Some(1_200_000),
            offset_ns: Some(35_000),
            ..Default::default()
        },
        profiler_format::BeforeLoop {
            id: "m::load".to_owned(),
            name: "load".to_owned(),
            kind: "fn".to_owned(),
            occurrence: 1,
            ..Default::default()
        },
    ];
    let r = build(&p, &ReportOptions::default());
    let table = render(&r, Format::Table);
    let at = table
        .lines()
        .position(|l| l.starts_with("ran before the loop"))
        .unwrap_or_else(|| panic!("{table}"));
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(at + 1)
        .take(3)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["layer", "phase", "name", "occ", "time", "start"]);
    assert_eq!(rows[1], ["model", "init", "build", "0", "1.20ms", "35.0µs"]);
    assert_eq!(rows[2], ["-", "-", "load", "1", "-", "-"]);
    // Not an event: the event rows and their count are the loop's.
    assert_eq!(r.events.len(), 5);

    let csv = render(&r, Format::Csv);
    let headers: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[0] == "before_loop")
        .collect();
    assert_eq!(rows.len(), 2, "{csv}");
    let cell =
        |row: &[&str], h: &str| row[headers.iter().position(|x| *x == h).unwrap()].to_owned();
    assert_eq!(cell(&rows[0], "name"), "build");
    assert_eq!(cell(&rows[0], "samples"), "1");
    assert_eq!(cell(&rows[0], "median_ns"), "1200000");
    assert_eq!(cell(&rows[1], "samples"), "0");
    assert_eq!(cell(&rows[1], "median_ns"), "");

    let md = render(&r, Format::Markdown);
    assert!(
        md.contains("| model | init | build | 0 | 1.20ms | 35.0µs |"),
        "{md}"
    );
    let json: serde_json::Value = serde_json::from_str(&render(&r, Format::Json)).unwrap();
    assert_eq!(json["before_loop"][0]["duration_ns"], 1_200_000);
    assert_eq!(
        json["before_loop"][1]["duration_ns"],
        serde_json::Value::Null
    );

    let summary = summary(&p, "prof.json");
    assert!(
        summary.contains(
            "  ran before the loop (not scheduled; each one's first run): model/init build \
             1.20ms, load#1 (not timed)\n"
        ),
        "{summary}"
    );
    // Without any, nothing is said.
    let plain = render(&build(&nested(), &ReportOptions::default()), Format::Table);
    assert!(!plain.contains("before the loop"), "{plain}");
}

/// Few windows of three samples each: the slowed event's change passes its own test, not once
/// its p-value is adjusted over the 26 series: the cell gives the adjusted p-value, and the
/// drift line says a drift is likely but not shown, not that "a drift of 2% could have gone
/// unseen" (as it said, beside an interval of -73.9% .. -22.6% in a recorded dlrm run).
#[test]
fn an_interval_beyond_the_threshold_that_holm_does_not_pass_is_told_as_such() {
    let all = crate::drift::tests::continuous(
        &crate::diff::tests::model(),
        3,
        6,
        6,
        0.1,
        &[("top_backward", 1.3, 3)],
        0,
    );
    let report = build(
        &crate::drift::tests::pinned(all, 2, 4),
        &ReportOptions::default(),
    );
    let table = render(&report, Format::Table);
    let last = table.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with(
            "? no event drifted by the test over all 26 series, but 1 of them changed by its \
             own test, not once adjusted"
        ) && last.contains(": top_mlp/bwd top_backward;"),
        "{last}"
    );
    let row = table
        .lines()
        .find(|l| l.contains("top_backward") && l.contains("inconclusive (p adj "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("95% CI +"), "{row}");
}
