//! `prof flame` on recorded real runs: the `waits` example's busy-waits of known lengths
//! (`tests/data/diff-corpus`, quiet runs as they are and with the attention forward 75% slower)
//! give the frames' widths and the differential graph's colours; the dlrm fixtures of
//! `tests/data/cli` the filter, the groups and the icicle; and the errors of bad input.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use profiler_analysis::diff::{diff_runs, DiffOptions, Verdict};
use profiler_analysis::flame::verdict_color;
use profiler_format::read::parse_profile;
use profiler_format::Profile;

use crate::common;
use common::{prof, scratch};

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/diff-corpus")
        .join(name)
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cli")
        .join(name)
        .display()
        .to_string()
}

/// A corpus run, unzipped into `dir` (prof reads plain JSON), and parsed.
fn unzipped(name: &str, dir: &Path) -> (String, Profile) {
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(corpus(name)).unwrap())
        .read_to_end(&mut bytes)
        .unwrap();
    let path = dir.join(name.trim_end_matches(".gz"));
    std::fs::write(&path, &bytes).unwrap();
    let profile = parse_profile(&bytes, &path).unwrap();
    (path.display().to_string(), profile)
}

fn ok(args: &[&str]) -> String {
    let out = prof(args);
    assert!(
        out.status.success(),
        "prof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `prof flame --folded` of `file`: each stack's weight by its last frame.
fn folded(file: &str, extra: &[&str], dir: &Path) -> (String, HashMap<String, u64>) {
    let out = dir.join("out.folded");
    let mut args = vec!["flame", file, "--folded", "-o", out.to_str().unwrap()];
    args.extend(extra);
    ok(&args);
    let text = std::fs::read_to_string(&out).unwrap();
    let weights = text
        .lines()
        .map(|l| {
            let (stack, w) = l.rsplit_once(' ').unwrap();
            let leaf = stack.rsplit(';').next().unwrap().to_owned();
            (leaf, w.parse().unwrap())
        })
        .collect();
    (text, weights)
}

/// The busy-waits of `examples/waits.rs`: each frame is at least its wait (a busy wait cannot
/// end early; the runs add the clock reads) and, in a quiet run, within 3% of it (a mean: a run
/// the scheduler interrupted counts in full); the graph is the mean measured iteration exactly.
#[test]
fn widths_are_the_known_busy_waits() {
    let dir = scratch("flame-waits");
    let (file, profile) = unzipped("waits-quiet-base-0.json.gz", &dir);
    let (text, w) = folded(&file, &[], &dir);
    let known = [
        ("attn/fwd/Model::forward", 200_000),
        ("ffn/fwd/Model::ffn_forward#0", 100_000),
        ("ffn/fwd/Model::ffn_forward#1", 100_000),
        ("ffn/bwd/Model::ffn_backward#0", 100_000),
        ("ffn/bwd/Model::ffn_backward#1", 100_000),
        ("attn/bwd/Model::backward", 200_000),
        ("comm/comm/Model::allreduce", 150_000),
        ("optim/update/Model::update", 50_000),
    ];
    for (frame, wait) in known {
        let got = w[frame];
        assert!(
            got >= wait && (got as f64) <= wait as f64 * 1.03,
            "{frame}: {got} ns for a wait of {wait} ns\n{text}"
        );
    }
    // The exact means, as prof report computes them (mean × calls per iteration): each frame
    // within 1 ns of its event's mean.
    for e in &profile.events {
        let frame = w.iter().find(|(k, _)| {
            k.ends_with(&format!("/{}#{}", e.display_name(), e.occurrence))
                || k.ends_with(&format!("/{}", e.display_name()))
        });
        let (_, got) = frame.unwrap_or_else(|| panic!("no frame for {}", e.id));
        assert!(got.abs_diff(e.stats.mean_ns) <= 1, "{}: {got}", e.id);
    }
    let walls = &profile.iterations.wall_ns[profile.run.warmup as usize..];
    let mean = walls.iter().sum::<u64>() as f64 / walls.len() as f64;
    assert_eq!(w.values().sum::<u64>(), mean.round() as u64, "{text}");
    assert!(w["other"] > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fill of the frame named `name` in an SVG of inferno's.
fn fill_of(svg: &str, name: &str) -> String {
    let at = svg
        .find(&format!("<title>{name} ("))
        .unwrap_or_else(|| panic!("no frame {name}"));
    let rect = &svg[at..];
    let start = rect.find("fill=\"").unwrap() + 6;
    rect[start..start + rect[start..].find('"').unwrap()].to_owned()
}

/// Colours are `prof diff`'s verdicts: the attention forward made 75% slower is red, and blue
/// the other way round; every event's frame has its verdict's colour; the widths are the new
/// run's.
#[test]
fn a_differential_graph_is_coloured_by_the_verdicts() {
    let dir = scratch("flame-diff");
    let (base, base_p) = unzipped("waits-quiet-base-0.json.gz", &dir);
    let (slow, slow_p) = unzipped("waits-quiet-slow75-0.json.gz", &dir);
    let rgb = |v: Option<Verdict>| {
        let (r, g, b) = verdict_color(v);
        format!("rgb({r},{g},{b})")
    };
    for (new, new_p, old, old_p, verdict) in [
        (&slow, &slow_p, &base, &base_p, Verdict::Regressed),
        (&base, &base_p, &slow, &slow_p, Verdict::Improved),
    ] {
        let out = dir.join("diff.svg");
        ok(&["flame", new, "--diff", old, "-o", out.to_str().unwrap()]);
        let svg = std::fs::read_to_string(&out).unwrap();
        assert_eq!(fill_of(&svg, "attn/fwd/Model::forward"), rgb(Some(verdict)));
        let verdicts = diff_runs(
            std::slice::from_ref(old_p),
            std::slice::from_ref(new_p),
            &DiffOptions::default(),
        );
        for d in &verdicts.events {
            let name = format!(
                "{}/{}/{}",
                d.identity.layer.as_deref().unwrap_or("-"),
                d.identity.phase.as_deref().unwrap_or("-"),
                d.identity.display_name()
            );
            let repeated = verdicts
                .events
                .iter()
                .filter(|x| x.identity.id == d.identity.id)
                .count()
                > 1;
            let name = if repeated {
                format!("{name}#{}", d.identity.occurrence)
            } else {
                name
            };
            assert_eq!(fill_of(&svg, &name), rgb(Some(d.verdict)), "{name}");
        }
        assert!(svg.contains(&format!("; {}: median ", verdict.as_str())));
        // Widths from the new run: forward 350 µs slowed, 200 µs not.
        let forward = &svg[svg.find("<title>attn/fwd/Model::forward (").unwrap()..];
        let w_at = forward.find("fg:w=\"").unwrap() + 6;
        let width: u64 = forward[w_at..w_at + forward[w_at..].find('"').unwrap()]
            .parse()
            .unwrap();
        let expect = if verdict == Verdict::Regressed {
            350_000
        } else {
            200_000
        };
        assert!(width >= expect && width < expect + expect / 50, "{width}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The filter keeps the matching events (and their context), the groups put a root frame per
/// layer or phase, the icicle hangs down, several runs are averaged.
#[test]
fn filter_group_icicle_and_several_runs() {
    let dir = scratch("flame-options");
    let b32 = fixture("batch32.json");
    let (all, _) = folded(&b32, &[], &dir);
    let (text, _) = folded(&b32, &["--filter", "layer=top_mlp"], &dir);
    assert!(!text.is_empty());
    for line in text.lines() {
        let (stack, _) = line.rsplit_once(' ').unwrap();
        assert!(stack.starts_with("top_mlp/"), "{line}");
        // Linear layers have no layer: they are inside top_mlp's events, in their self time.
        assert!(!stack.contains(';'), "{line}");
    }
    let (text, _) = folded(&b32, &["--filter", "name=linear_forward"], &dir);
    for line in text.lines() {
        let frames: Vec<&str> = line.split(';').collect();
        assert_eq!(frames.len(), 2, "context, then the match: {line}");
        assert!(frames[1].starts_with("-/fwd/linear_forward#"), "{line}");
    }
    let (text, _) = folded(&b32, &["--group", "phase"], &dir);
    for line in text.lines() {
        assert!(
            line.starts_with("phase=") || line.starts_with("other "),
            "{line}"
        );
    }
    assert_eq!(text.lines().count(), all.lines().count());
    let out = dir.join("icicle.svg");
    ok(&["flame", &b32, "--icicle", "-o", out.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("var inverted = true"));
    // Two runs: the mean of their stacks.
    let rerun = fixture("batch32-rerun.json");
    let (_, one) = folded(&b32, &[], &dir);
    let (_, two) = folded(&rerun, &[], &dir);
    let out = dir.join("two.folded");
    ok(&[
        "flame",
        &b32,
        &rerun,
        "--folded",
        "-o",
        out.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&out).unwrap();
    let (_, w) = text.lines().last().unwrap().rsplit_once(' ').unwrap();
    let mean = (one["other"] + two["other"]) as f64 / 2.0;
    assert!((w.parse::<f64>().unwrap() - mean).abs() <= 2.0, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad input: status 2 and a message that says what is wrong, before anything is written.
#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let dir = scratch("flame-errors");
    let b32 = fixture("batch32.json");
    let out = dir.join("f.svg");
    let out = out.to_str().unwrap();
    let cases: [(Vec<&str>, &str); 6] = [
        (
            vec!["flame", &b32, "--filter", "layr=mlp", "-o", out],
            "error: invalid --filter at column 1: unknown key `layr`",
        ),
        (
            vec!["flame", &b32, "--filter", "layer=nope", "-o", out],
            "--filter `layer=nope` matches no event",
        ),
        (vec!["flame", &b32, "-o", "/"], "names a directory"),
        (
            vec!["flame", "/no/such/prof.json", "-o", out],
            "/no/such/prof.json",
        ),
        (
            vec!["flame", &b32, "--folded", "--diff", &b32, "-o", out],
            "cannot be used with",
        ),
        (
            vec!["flame", &b32, "--group", "module", "-o", out],
            "invalid value 'module'",
        ),
    ];
    for (args, says) in cases {
        let o = prof(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!Path::new(out).exists(), "{args:?} wrote {out}");
    }
    // A profile without a measured iteration: nothing to draw, the file named.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&b32).unwrap()).unwrap();
    v["iterations"]["count"] = 0.into();
    v["iterations"]["wall_ns"] = serde_json::json!([]);
    v["run"]["warmup"] = 0.into();
    for e in v["events"].as_array_mut().unwrap() {
        e["sample_iters"] = serde_json::json!([]);
        e["samples_ns"] = serde_json::json!([]);
        e["offsets_ns"] = serde_json::json!([]);
        e["stats"] = serde_json::json!({"count": 0, "mean_ns": 0, "median_ns": 0, "min_ns": 0,
            "max_ns": 0, "stddev_ns": 0, "p90_ns": 0});
    }
    let empty = dir.join("empty.json");
    std::fs::write(&empty, v.to_string()).unwrap();
    let o = prof(&["flame", empty.to_str().unwrap(), "-o", out]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("empty.json: the profile has no measured iteration"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
