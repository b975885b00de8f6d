//! The `prof` binary as a user runs it: each command on real profiles of the dlrm example
//! (`tests/data/cli/`, made with PROF_WARMUP=3 PROF_REPEAT=8), and bad input of every kind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common;
use common::{prof, scratch};

mod peak;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cli")
        .join(name)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstderr: {}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn report_in_every_format() {
    let file = data("batch32.json");
    let table = ok(&prof(&["report", p(&file)]));
    for word in ["linear_forward", "top_backward", "median", "p90", "self"] {
        assert!(table.contains(word), "{word} missing:\n{table}");
    }
    let grouped = ok(&prof(&[
        "report",
        p(&file),
        "--group-by",
        "layer,phase",
        "--sort",
        "total",
    ]));
    assert!(grouped.contains("top_mlp/bwd"), "{grouped}");
    let csv = ok(&prof(&["report", p(&file), "--format", "csv"]));
    let header = csv.lines().next().unwrap();
    assert!(header.contains("median_ns"), "{header}");
    let json: Value =
        serde_json::from_str(&ok(&prof(&["report", p(&file), "--format", "json"]))).unwrap();
    assert_eq!(json["events"].as_array().unwrap().len(), 25);
    let md = ok(&prof(&["report", p(&file), "--format", "markdown"]));
    assert!(
        md.lines().any(|l| l.starts_with("|") && l.contains("---")),
        "{md}"
    );
}

#[test]
fn diff_of_the_same_build_says_no_regression_and_a_slowed_layer_is_named() {
    // Two runs of the same build, the first disturbed (48% of its iterations slow): nothing
    // regressed, but nothing can be ruled out either, and the gate says so with its own status.
    let (a, b) = (data("batch32.json"), data("batch32-rerun.json"));
    let out = prof(&["diff", p(&a), p(&b), "--fail-on-regression"]);
    let report = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{report}\n{}",
        text(&out.stderr)
    );
    let last = report.lines().last().unwrap();
    assert!(
        last.starts_with("INCONCLUSIVE, no regression found but one could have gone unseen")
            && last.contains("(--fail-on-regression exits 3)"),
        "{report}"
    );
    // Without --fail-on-regression the command succeeded.
    assert_eq!(prof(&["diff", p(&a), p(&b)]).status.code(), Some(0));

    // Make one layer's backward pass 40% slower in a copy of the first run: the same machine
    // state, so only that change can show.
    let dir = scratch("diff");
    let slow = dir.join("slow.json");
    common::slowed_copy(&a, "top_backward", 1.4, &slow);
    let out = prof(&[
        "diff",
        p(&a),
        p(&slow),
        "--fail-on-regression",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let diff: Value = serde_json::from_slice(&out.stdout).unwrap();
    let regressed: Vec<&str> = diff["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["verdict"] == "regressed")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(regressed, ["top_backward"]);
    // Without --fail-on-regression the status stays 0.
    let out = prof(&["diff", p(&a), p(&slow)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("top_backward"));
}

#[test]
fn scale_merge_trace_and_html_write_their_outputs() {
    let dir = scratch("outputs");
    let out = ok(&prof(&[
        "scale",
        p(&data("batch32.json")),
        p(&data("batch64.json")),
        "--param",
        "batch=32,64",
    ]));
    assert!(out.contains("batch"), "{out}");

    let merged = dir.join("merged.json");
    let out = ok(&prof(&[
        "merge",
        p(&data("batch32.json")),
        p(&data("rank1.json")),
        "-o",
        p(&merged),
    ]));
    assert!(out.contains("straggler"), "{out}");
    let m: Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(m["ranks"], serde_json::json!([0, 1]));

    let trace = dir.join("trace.json.gz");
    ok(&prof(&["trace", p(&data("batch32.json")), "-o", p(&trace)]));
    let mut json = String::new();
    use std::io::Read;
    flate2_read(&trace).read_to_string(&mut json).unwrap();
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert!(!doc["traceEvents"].as_array().unwrap().is_empty());

    let html = dir.join("report.html");
    ok(&prof(&[
        "html",
        p(&data("batch32.json")),
        "--diff",
        p(&data("batch32-rerun.json")),
        "-o",
        p(&html),
    ]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"));
}

fn flate2_read(path: &Path) -> impl std::io::Read {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "not gzip");
    flate2::read::GzDecoder::new(std::io::Cursor::new(bytes))
}

/// Missing file, not JSON, another schema, truncated file, empty events, bad options, an
/// unwritable output: each a clear message and status 2, never a panic.
#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = scratch("bad");
    let good = std::fs::read_to_string(data("batch32.json")).unwrap();
    let write = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        path
    };
    let not_json = write("not.json", "this is not json\n");
    let other = write(
        "other.json",
        &good.replace("profiler-core/prof/v1", "other/v3"),
    );
    let truncated = write("cut.json", &good[..good.len() / 3]);
    let mut empty: Value = serde_json::from_str(&good).unwrap();
    empty["events"] = Value::Array(vec![]);
    let empty = write("empty.json", &empty.to_string());
    let missing = dir.join("missing.json");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["report".into(), p(&missing).into()], "no such file"),
        (vec!["report".into(), p(&not_json).into()], "not JSON"),
        (vec!["report".into(), p(&other).into()], "other/v3"),
        (vec!["report".into(), p(&truncated).into()], "truncated"),
        (vec!["report".into(), p(&empty).into()], "no event"),
        (
            vec![
                "diff".into(),
                p(&empty).into(),
                p(&data("batch32.json")).into(),
            ],
            "no event",
        ),
        (
            vec![
                "html".into(),
                p(&not_json).into(),
                "-o".into(),
                p(&dir.join("x.html")).into(),
            ],
            "not JSON",
        ),
        (
            vec![
                "trace".into(),
                p(&data("batch32.json")).into(),
                "-o".into(),
                "/nonexistent-dir/t.json".into(),
            ],
            "cannot write",
        ),
        (
            vec![
                "scale".into(),
                p(&data("batch32.json")).into(),
                p(&data("batch64.json")).into(),
                "--param".into(),
                "batch=32".into(),
            ],
            "one value per file",
        ),
        (
            vec![
                "scale".into(),
                p(&data("batch32.json")).into(),
                p(&data("batch64.json")).into(),
                "--param".into(),
                "32,64".into(),
            ],
            "NAME=",
        ),
        // A value given twice, refused before any file is read (these do not exist).
        (
            vec![
                "scale".into(),
                "/nonexistent-dir/a.json".into(),
                "/nonexistent-dir/b.json".into(),
                "--param".into(),
                "batch=32,32".into(),
            ],
            "batch=32 is given twice",
        ),
        (
            vec![
                "report".into(),
                p(&data("batch32.json")).into(),
                "--sort".into(),
                "speed".into(),
            ],
            "speed",
        ),
        (
            vec![
                "diff".into(),
                p(&data("batch32.json")).into(),
                p(&data("batch32.json")).into(),
                "--threshold".into(),
                "lots".into(),
            ],
            "lots",
        ),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = prof(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(expected),
            "{args:?}: expected {expected:?} in:\n{err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(!dir.join("x.html").exists());
}

/// Runs `prof` and checks that it failed as bad input does: status 2, a first line that starts
/// with `error:`, no panic. Returns stderr.
fn fails_with_2(args: &[&str]) -> String {
    let out = prof(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.starts_with("error:"), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    err
}

/// `--resamples` has a stated range: values that used to panic (capacity overflow) or abort
/// (allocation failure), and values below the floor that used to be raised silently, are
/// usage errors.
#[test]
fn resamples_outside_its_range_is_a_usage_error() {
    let a = data("batch32.json");
    for bad in ["18446744073709551615", "100000000000", "1000001", "99", "0"] {
        let err = fails_with_2(&["diff", p(&a), p(&a), "--resamples", bad]);
        assert!(err.contains("--resamples"), "{bad}: {err}");
        assert!(err.contains("100..=1000000"), "{bad}: {err}");
    }
    ok(&prof(&["diff", p(&a), p(&a), "--resamples", "100"]));
    let help = ok(&prof(&["diff", "--help"]));
    assert!(help.contains("100 to 1000000"), "{help}");
}

/// A copy of batch32.json, changed by `edit`, written to `dir/name`.
fn mutated(dir: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(data("batch32.json")).unwrap()).unwrap();
    edit(&mut v);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    path
}

/// Files that parse but do not add up are refused, naming the file, the event and the fault.
#[test]
fn profiles_that_do_not_add_up_are_refused() {
    let dir = scratch("inconsistent");
    // Each case: the file, then what the message must say besides the file name.
    let cases: Vec<(PathBuf, Vec<&str>)> = vec![
        (
            mutated(&dir, "cycle.json", |v| {
                // Events 1 and 2 each name the other as parent.
                let (o1, o2) = (
                    v["events"][1]["order"].clone(),
                    v["events"][2]["order"].clone(),
                );
                v["events"][1]["parent"] = o2;
                v["events"][2]["parent"] = o1;
            }),
            vec!["parent", "cycle"],
        ),
        (
            mutated(&dir, "self-parent.json", |v| {
                v["events"][3]["parent"] = v["events"][3]["order"].clone();
            }),
            vec!["parent", "cycle"],
        ),
        (
            mutated(&dir, "parent-range.json", |v| {
                v["events"][4]["parent"] = 4000.into()
            }),
            vec!["parent 4000", "no event has order 4000"],
        ),
        (
            mutated(&dir, "iters.json", |v| {
                let count = v["iterations"]["count"].as_u64().unwrap();
                v["events"][5]["sample_iters"][0] = (count + 7).into();
            }),
            vec!["sample_iters", "1012"],
        ),
        (
            mutated(&dir, "count.json", |v| {
                let n = v["events"][6]["samples_ns"].as_array().unwrap().len();
                v["events"][6]["stats"]["count"] = (n + 1).into();
            }),
            vec!["stats.count", "samples_ns"],
        ),
        (
            mutated(&dir, "merged-count.json", |v| {
                v["events"][6]["merged"] = true.into();
                v["events"][6]["stats"]["count"] = 1.into();
            }),
            vec!["stats.count", "merged"],
        ),
        (
            mutated(&dir, "mode.json", |v| v["run"]["mode"] = "turbo".into()),
            vec!["run.mode", "turbo"],
        ),
        (
            mutated(&dir, "repeat.json", |v| v["run"]["repeat"] = 0.into()),
            vec!["run.repeat"],
        ),
        (
            mutated(&dir, "walls.json", |v| {
                v["iterations"]["wall_ns"].as_array_mut().unwrap().pop();
            }),
            vec!["iterations.count", "wall_ns"],
        ),
    ];
    for (file, expected) in &cases {
        let err = fails_with_2(&["report", p(file)]);
        assert!(
            err.contains(&format!("error: {}: not a valid", file.display())),
            "{}: {err}",
            file.display()
        );
        for word in expected {
            assert!(
                err.contains(word),
                "{}: expected {word:?} in:\n{err}",
                file.display()
            );
        }
    }
    // The event is named: its id.
    let v: Value = serde_json::from_slice(&std::fs::read(data("batch32.json")).unwrap()).unwrap();
    for (i, (file, _)) in cases.iter().enumerate().take(6) {
        let err = text(&prof(&["report", p(file)]).stderr);
        let ids: Vec<&str> = (0..8)
            .map(|k| v["events"][k]["id"].as_str().unwrap())
            .collect();
        assert!(ids.iter().any(|id| err.contains(id)), "case {i}: {err}");
    }
}

/// Absurd values exit 2 naming the field and the event; inputs that are not regular files are
/// refused without reading them (a FIFO would block, `/dev/zero` would fill memory).
#[test]
fn absurd_values_and_inputs_that_are_not_files_exit_2() {
    let dir = scratch("absurd");
    let cases = [
        (
            mutated(&dir, "huge-sample.json", |v| {
                v["events"][1]["samples_ns"][0] = u64::MAX.into()
            }),
            vec!["samples_ns[0] is 18446744073709551615 ns"],
        ),
        (
            mutated(&dir, "min-max.json", |v| {
                v["events"][1]["stats"]["min_ns"] = 1_000_000_000u64.into();
                v["events"][1]["stats"]["max_ns"] = 1.into();
            }),
            vec!["stats do not add up"],
        ),
        (
            mutated(&dir, "wall.json", |v| {
                v["iterations"]["wall_ns"][3] = u64::MAX.into()
            }),
            vec!["iterations.wall_ns[3]"],
        ),
        (
            mutated(&dir, "warmup.json", |v| {
                v["run"]["warmup"] = 1_000_000_000u64.into()
            }),
            vec!["run.warmup is 1000000000"],
        ),
        (
            mutated(&dir, "duplicate.json", |v| {
                let first = v["events"][0].clone();
                v["events"].as_array_mut().unwrap().push(first);
            }),
            vec!["both have order"],
        ),
        (
            mutated(&dir, "negative.json", |v| {
                v["events"][2]["samples_ns"][0] = (-5).into()
            }),
            vec!["events[2].samples_ns[0] (event `", "-5"],
        ),
    ];
    for (file, expected) in &cases {
        let err = fails_with_2(&["report", p(file)]);
        for word in expected {
            assert!(
                err.contains(word),
                "{}: {word:?} not in:\n{err}",
                file.display()
            );
        }
    }
    let err = fails_with_2(&["report", "/dev/zero"]);
    assert!(err.contains("character device"), "{err}");
    let fifo = dir.join("pipe.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let err = fails_with_2(&["report", p(&fifo)]);
    assert!(err.contains("named pipe (FIFO)"), "{err}");
}

/// Every stored profile still loads: the checks refuse nothing the core writes.
#[test]
fn every_stored_profile_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut seen = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        for file in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let file = file.unwrap().path();
            // `peak.json` is a peak (for the docs' `prof report --peak` line), not a profile.
            let peak = file.file_name().is_some_and(|n| n == "peak.json");
            if file.extension().is_some_and(|e| e == "json") && !peak {
                ok(&prof(&["report", p(&file)]));
                seen += 1;
            }
        }
    }
    assert!(seen >= 8, "{seen}");
}

/// A file with nothing in it says so, not "truncated".
#[test]
fn an_empty_file_is_called_empty() {
    let dir = scratch("empty-file");
    for (name, body) in [("zero.json", ""), ("blank.json", " \n\t\r\n")] {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        let err = fails_with_2(&["report", p(&path)]);
        assert!(
            err.contains(&format!("error: {}: the file is empty", path.display())),
            "{err}"
        );
        assert!(
            err.contains("help:") && err.contains("may have failed"),
            "{err}"
        );
        assert!(!err.contains("truncated"), "{err}");
    }
}

/// Every message `prof` prints for a failure starts with `error:`, whatever produced it.
#[test]
fn every_failure_message_starts_with_error() {
    let a = data("batch32.json");
    let b = data("batch64.json");
    for args in [
        vec!["scale", p(&a), p(&b), "--param", "32,64"],
        vec!["scale", p(&a), p(&b), "--param", "=32,64"],
        vec!["scale", p(&a), p(&b), "--param", "batch=32,x"],
        vec!["scale", p(&a), p(&b), "--param", "batch=32"],
        vec!["scale", p(&a), p(&b), "--param", "batch=32,32"],
        vec!["trace", p(&a), "-o", "/nonexistent-dir/t.json"],
        vec!["merge", p(&a), "-o", "/nonexistent-dir/m.json"],
        vec!["report", "/nonexistent-dir/p.json"],
    ] {
        fails_with_2(&args);
    }
}

/// An output path that is not a regular file (a device, a FIFO, a directory, a link to a
/// device) is refused before any input is read, and left as it was.
#[cfg(unix)]
#[test]
fn outputs_that_are_not_files_are_refused_up_front() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("special-outputs");
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let link = dir.join("to-stdout");
    std::os::unix::fs::symlink("/dev/stdout", &link).unwrap();
    let sub = dir.join("subdir");
    std::fs::create_dir(&sub).unwrap();
    // A missing input: the output is checked first, so the message is about the output.
    let missing = dir.join("missing.json");
    let good = data("batch32.json");
    for target in [Path::new("/dev/null"), &fifo, &link, &sub] {
        for input in [&missing, &good] {
            for args in [
                vec!["trace", p(input), "-o", p(target)],
                vec!["html", p(input), "-o", p(target)],
                vec!["merge", p(input), "-o", p(target)],
            ] {
                let err = fails_with_2(&args);
                assert!(
                    err.starts_with(&format!("error: cannot write {}: ", target.display())),
                    "{args:?}: {err}"
                );
                assert!(err.contains("help:"), "{args:?}: {err}");
            }
        }
    }
    let t = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(t.is_fifo(), "the FIFO was replaced");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(sub.is_dir());
    // A missing directory is refused up front too.
    let err = fails_with_2(&["trace", p(&missing), "-o", "/nonexistent-dir/t.json"]);
    assert!(
        err.contains("cannot write /nonexistent-dir/t.json"),
        "{err}"
    );
    assert!(err.contains("does not exist"), "{err}");
}

/// An output that is one of the command's inputs (by its own path, or through a link) is
/// refused before anything is written: before, `prof html in.json -o in.json` replaced the
/// profile with its page, and said it wrote it.
#[cfg(unix)]
#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = scratch("output-is-input");
    let input = dir.join("in.json");
    let base = dir.join("base.json");
    std::fs::copy(data("batch32.json"), &input).unwrap();
    std::fs::copy(data("batch64.json"), &base).unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    let before = std::fs::read(&input).unwrap();
    let base_before = std::fs::read(&base).unwrap();
    for target in [&input, &link] {
        for args in [
            vec!["trace", p(&input), "-o", p(target)],
            vec!["html", p(&input), "-o", p(target)],
            vec!["flame", p(&input), "-o", p(target)],
            vec!["pprof", p(&input), "-o", p(target)],
            vec!["merge", p(&base), p(&input), "-o", p(target)],
        ] {
            let err = fails_with_2(&args);
            assert!(
                err.starts_with(&format!(
                    "error: cannot write {}: it is the input {}",
                    target.display(),
                    input.display()
                )),
                "{args:?}: {err}"
            );
            assert!(err.contains("help:"), "{args:?}: {err}");
        }
    }
    // The baseline of a comparison is an input too.
    for args in [
        vec!["html", p(&input), "--diff", p(&base), "-o", p(&base)],
        vec!["flame", p(&input), "--diff", p(&base), "-o", p(&base)],
    ] {
        let err = fails_with_2(&args);
        assert!(err.contains("it is the input"), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read(&input).unwrap(),
        before,
        "the input was replaced"
    );
    assert_eq!(
        std::fs::read(&base).unwrap(),
        base_before,
        "the baseline was replaced"
    );
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["base.json", "in.json", "link.json"]);
}

/// A standard output that cannot be written (a full disk: `/dev/full`) is an error, exit 2;
/// before, `prof report x.json >/dev/full` exited 0 with its table lost. A stderr that cannot
/// be written loses its lines, not the command: before, `prof trace ... 2>/dev/full` panicked
/// (exit 101) after writing its trace.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_an_error_and_a_full_stderr_is_not_a_panic() {
    use std::process::Stdio;
    let full = || {
        Stdio::from(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
    };
    let good = data("batch32.json");
    let other = data("batch64.json");
    for args in [
        vec!["report", p(&good)],
        vec!["advise", "--json", p(&good)],
        vec!["diff", "--fail-on-regression", p(&good), p(&other)],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_prof"))
            .args(&args)
            .stdout(full())
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: cannot write standard output: No space left on device"),
            "{args:?}: {err}"
        );
    }
    let dir = scratch("full-stderr");
    let trace = dir.join("t.json");
    let out = Command::new(env!("CARGO_BIN_EXE_prof"))
        .args(["trace", p(&good), "-o", p(&trace)])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(trace.is_file());
    let missing = dir.join("missing.json");
    let out = Command::new(env!("CARGO_BIN_EXE_prof"))
        .args(["report", p(&missing)])
        .stderr(full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Messages that named the wrong thing: the random name of the probe file made to test a
/// directory (`at path "/proc/.c9PDkCHFoe2U"`), and `error:` twice for a bad filter of
/// `prof whatif`.
#[cfg(target_os = "linux")]
#[test]
fn messages_name_the_users_paths_and_say_error_once() {
    let good = data("batch32.json");
    let err = fails_with_2(&["trace", p(&good), "-o", "/proc/x.json"]);
    assert!(
        err.starts_with("error: cannot write /proc/x.json: "),
        "{err}"
    );
    assert!(!err.contains("at path"), "{err}");
    let err = fails_with_2(&[
        "whatif", "--filter", "layr=x", "--delay", "1ms", "--", "true",
    ]);
    assert!(
        err.starts_with("error: --filter: invalid PROF_FILTER"),
        "{err}"
    );
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    // `prof watch --once` tells a file it cannot read whole, its help line too.
    let err = fails_with_2(&["watch", "--once", "/nonexistent-dir/p.json"]);
    assert!(
        err.contains("no such file") && err.contains("= help:"),
        "{err}"
    );
    // A negative value is refused for what it is, not taken for a flag ("tip: use '-- -1'").
    let err = fails_with_2(&["advise", "--cv-threshold", "-1", p(&good)]);
    assert!(err.contains("`-1` is not a non-negative number"), "{err}");
}
