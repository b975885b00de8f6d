//! The rules this module adds (`straggler`, `drift`, `too-noisy`'s runs) fire on profiles made
//! to show them and are silent on others; on dlrm's quiet recorded profile only the rules true
//! there fire; the text and JSON outputs.

use std::io::Read;
use std::path::Path;

use super::*;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// A recorded profile: `tests/data/...` (gzipped) or `profiler-cli/tests/data/cli/...`.
fn recorded(path: &str) -> Profile {
    let path = root().join(path);
    let mut bytes = Vec::new();
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if path.extension().is_some_and(|x| x == "gz") {
        flate2::read::GzDecoder::new(file)
            .read_to_end(&mut bytes)
            .unwrap();
    } else {
        std::io::BufReader::new(file)
            .read_to_end(&mut bytes)
            .unwrap();
    }
    profiler_format::read::parse_profile(&bytes, &path).unwrap_or_else(|e| panic!("{e}"))
}

fn ids(advice: &Advice) -> Vec<&str> {
    advice.findings.iter().map(|f| f.id.as_str()).collect()
}

fn advise_on(profiles: &[Profile]) -> Advice {
    advise(profiles, &AdviceOptions::default()).unwrap()
}

/// dlrm on the quiet VM (`tests/data/diff-corpus/dlrm-quiet-base-0`): two rules are true there
/// and only they fire. `dominant-layer`: the top MLP (its forward and backward, 512-wide
/// layers) takes 51.5% of the iteration, against the embeddings, the interaction and the
/// bottom MLP. `too-noisy`: six events have a cv above 25%, the sub-microsecond `sgd` updates
/// and the interaction's forward pass, whose runs the timer's floor and cache misses scatter;
/// the loop itself is steady. No input phase, no work counts, no `Alloc`, no device, no shapes,
/// no perturbation beyond its interval, no reliable uncovered stretch, one rank, no windows.
#[test]
fn dlrm_quiet_fires_only_the_rules_true_there() {
    let advice = advise_on(&[recorded("tests/data/diff-corpus/dlrm-quiet-base-0.json.gz")]);
    assert_eq!(ids(&advice), ["dominant-layer", "too-noisy"], "{advice:#?}");
    let layer = &advice.findings[0];
    assert!(layer.title.starts_with("layer top_mlp "), "{}", layer.title);
    assert!(layer.at_stake_ns <= advice.iteration_ns);
    let noisy = &advice.findings[1];
    assert!(noisy.evidence.figures.contains_key("ab_runs"), "{noisy:?}");
    assert!(noisy.evidence.summary.contains("`prof ab` would need"));
}

/// `p` with every time 30% longer.
fn slow_copy(p: &Profile) -> Profile {
    let mut slow = p.clone();
    let stretch = |v: &mut u64| *v = *v * 13 / 10;
    slow.iterations.wall_ns.iter_mut().for_each(stretch);
    for e in &mut slow.events {
        e.samples_ns.iter_mut().for_each(stretch);
        e.stats = profiler_format::Stats::of(&e.samples_ns);
    }
    slow
}

#[test]
fn straggler_fires_on_a_slower_rank_and_not_on_equal_ones() {
    let a = recorded("profiler-cli/tests/data/cli/batch32.json");
    // The same run as rank 1, every time 30% longer.
    let mut slow = slow_copy(&a);
    slow.run.rank = 1;
    let advice = advise_on(&[a.clone(), slow]);
    let f = advice
        .findings
        .iter()
        .find(|f| f.id == "straggler")
        .unwrap_or_else(|| panic!("{advice:#?}"));
    assert_eq!(f.evidence.figures["rank"], 1.0);
    assert_eq!(advice.rank, 1, "the other rules judge the slowest rank");
    assert!(f.title.starts_with("rank 1 is "), "{}", f.title);

    // Two inputs that both say rank 0: `prof merge` numbers them by position, and so does
    // the rule (the slower second input is rank 1, and the one judged).
    let mut second = slow_copy(&a);
    second.run.rank = 0;
    second.run.pid = 99;
    let advice = advise_on(&[a.clone(), second]);
    assert!(ids(&advice).contains(&"straggler"), "{advice:#?}");
    assert_eq!(
        advice.rank, 1,
        "named as the straggler finding names it: {advice:#?}"
    );
    assert_eq!(advice.warnings.len(), 1, "{advice:#?}");
    assert!(
        (advice.iteration_ns - advise_on(&[slow_copy(&a)]).iteration_ns).abs() < 1e-6,
        "the slower input is the one judged"
    );

    let mut same = a.clone();
    same.run.rank = 1;
    let advice = advise_on(&[a.clone(), same]);
    assert!(!ids(&advice).contains(&"straggler"), "{advice:#?}");
    // One profile: no ranks to compare.
    assert!(!ids(&advise_on(&[a])).contains(&"straggler"));
}

/// `profiler-cli/tests/data/cli/continuous-slow.json`: a continuous dlrm run slowed long before
/// its recent windows (`prof report` calls its iteration slower); `continuous.json`, the same
/// run not slowed.
#[test]
fn drift_fires_on_a_slowed_continuous_run_and_not_on_a_steady_one() {
    let advice = advise_on(&[recorded("profiler-cli/tests/data/cli/continuous-slow.json")]);
    let f = advice
        .findings
        .iter()
        .find(|f| f.id == "drift")
        .unwrap_or_else(|| panic!("{advice:#?}"));
    assert!(f.at_stake_ns > 0.0);
    let advice = advise_on(&[recorded("profiler-cli/tests/data/cli/continuous.json")]);
    assert!(!ids(&advice).contains(&"drift"), "{advice:#?}");
    // Not continuous: no windows, no drift.
    let advice = advise_on(&[recorded("profiler-cli/tests/data/cli/batch32.json")]);
    assert!(!ids(&advice).contains(&"drift"));
}

#[test]
fn no_profile_is_an_error() {
    assert!(advise(&[], &AdviceOptions::default()).is_err());
}

#[test]
fn text_lists_one_line_per_finding_first_then_the_details() {
    let advice = advise_on(&[recorded("tests/data/diff-corpus/dlrm-quiet-base-0.json.gz")]);
    let text = render_text(&advice, None);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("prof advise: dlrm, sample mode"),
        "{text}"
    );
    assert!(lines[1].starts_with("  1. up to ") && lines[1].contains("dominant-layer"));
    assert!(lines[2].starts_with("  2. up to ") && lines[2].contains("too-noisy"));
    assert!(text.contains("\n1. dominant-layer: "));
    assert!(text.contains("   evidence: ") && text.contains("   try: "));
    let top = render_text(&advice, Some(1));
    assert!(
        top.contains("(+1 more: --top 2)") && !top.contains("\n2. too-noisy"),
        "{top}"
    );

    let json: serde_json::Value = serde_json::from_str(&render_json(&advice, Some(1))).unwrap();
    let findings = json["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1);
    for key in ["id", "title", "at_stake_ns", "evidence", "try"] {
        assert!(findings[0].get(key).is_some(), "{key}");
    }
}

/// `too-noisy`'s runs for `prof ab` are those of the event it names, occurrence included: the
/// second `linear_backward` (`dlrm::Linear::backward#1`) made the noisiest, its first left as
/// recorded. Before, the event was looked up by id alone, and the runs were the first
/// occurrence's.
#[test]
fn too_noisys_runs_are_those_of_the_occurrence_it_names() {
    let mut p = recorded("tests/data/diff-corpus/dlrm-quiet-base-0.json.gz");
    let noisy = p
        .events
        .iter()
        .position(|e| e.id == "dlrm::Linear::backward" && e.occurrence == 1)
        .unwrap();
    for (k, v) in p.events[noisy].samples_ns.iter_mut().enumerate() {
        if k % 2 == 0 {
            *v *= 40;
        }
    }
    p.events[noisy].stats = profiler_format::Stats::of(&p.events[noisy].samples_ns);
    let runs_of = |e: &profiler_format::Event| {
        let samples: Vec<f64> = e.samples_ns.iter().map(|&v| v as f64).collect();
        diff::runs_needed(
            diff::SCATTER_FACTOR * diff::scatter(&samples),
            AB_THRESHOLD,
            diff::LOAD_ALPHA,
        )
    };
    let first = p
        .events
        .iter()
        .position(|e| e.id == "dlrm::Linear::backward")
        .unwrap();
    assert_ne!(runs_of(&p.events[noisy]), runs_of(&p.events[first]));
    let advice = advise_on(std::slice::from_ref(&p));
    let f = advice
        .findings
        .iter()
        .find(|f| f.id == "too-noisy")
        .unwrap();
    assert_eq!(
        f.evidence.events[0].label,
        p.events[noisy].identity().label()
    );
    let expected = runs_of(&p.events[noisy]).map(|n| n as f64);
    assert_eq!(
        f.evidence.figures.get("ab_runs").copied(),
        expected,
        "{f:?}"
    );
}

/// No finding puts more at stake than the judged profile's mean iteration, the added rules
/// included: a straggler rank most of whose iterations take 4 times as long and the rest a
/// tenth (its median 4x, its mean 2.44x) was "up to 3x the iteration (124%)" before, the
/// median rank's median subtracted from its median with no cap.
#[test]
fn no_finding_puts_more_at_stake_than_the_iteration() {
    let base = recorded("tests/data/diff-corpus/dlrm-quiet-base-0.json.gz");
    let mut ranks: Vec<Profile> = (0..3)
        .map(|rank| {
            let mut p = base.clone();
            p.run.rank = rank;
            p
        })
        .collect();
    for (k, w) in ranks[1].iterations.wall_ns.iter_mut().enumerate() {
        *w = if k % 5 < 3 { *w * 4 } else { *w / 10 };
    }
    let advice = advise_on(&ranks);
    assert!(ids(&advice).contains(&"straggler"), "{advice:#?}");
    for f in &advice.findings {
        assert!(
            f.at_stake_ns <= advice.iteration_ns,
            "{}: {} > {}",
            f.id,
            f.at_stake_ns,
            advice.iteration_ns
        );
    }
}

/// A name holding a newline is printed escaped in every sentence of the text (the one-line
/// list, each finding's title and evidence): before, the title and evidence printed it raw and
/// the finding's lines broke in the middle of a name.
#[test]
fn names_with_a_newline_stay_on_their_line() {
    let mut p = recorded("tests/data/diff-corpus/dlrm-quiet-base-0.json.gz");
    for e in &mut p.events {
        if e.layer.as_deref() == Some("top_mlp") {
            e.layer = Some("top\nmlp".to_owned());
        }
        e.name = format!("{}\nX", e.name);
    }
    p.run.program = "dl\nrm".to_owned();
    let advice = advise_on(&[p]);
    assert!(!advice.findings.is_empty());
    let text = render_text(&advice, None);
    assert!(text.contains("top\\nmlp"), "{text}");
    assert!(text.starts_with("prof advise: dl\\nrm,"), "{text}");
    for line in text.lines() {
        assert!(
            !line.starts_with('X') && !line.starts_with("mlp"),
            "a name broke the line: {line:?}\n{text}"
        );
    }
}
