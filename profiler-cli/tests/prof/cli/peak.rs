//! `prof peak`: its flags, its output checked before anything is measured, the peak.json it
//! writes (read back with `profiler_format::peak::load_peak`). Small problems only (64x64
//! matrices, 1 MiB of STREAM arrays, no time budget): what is tested is the command, not the
//! machine, so no figure is compared with any expectation beyond being positive. A module of
//! `tests/cli.rs` rather than a test target of its own: one test binary less to link.

use std::path::Path;

use crate::common::{prof, scratch};

/// `prof peak` on the smallest problems, writing `output`, with `extra` flags.
fn quick_peak(output: &Path, extra: &[&str]) -> std::process::Output {
    let output = output.to_str().unwrap();
    let mut args = vec![
        "peak",
        "-o",
        output,
        "--seconds",
        "0",
        "--size",
        "64",
        "--stream-mib",
        "1",
    ];
    args.extend_from_slice(extra);
    prof(&args)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn peak_json_is_written_and_loads() {
    let dir = scratch("peak-json");
    let path = dir.join("peak.json");
    let out = quick_peak(&path, &["--threads", "2", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let peak = profiler_format::peak::load_peak(&path).unwrap();
    assert_eq!(peak.schema, "profiler-core/peak/v1");
    assert_eq!(peak.source, "measured");
    assert!(peak.flops.unwrap() > 0.0, "{peak:?}");
    assert!(peak.bytes.unwrap() > 0.0, "{peak:?}");
    assert!(!peak.host.is_empty());
    for word in [
        "sgemm (f32)",
        "64x64",
        "2 threads",
        "3 repetitions",
        "spread",
        "STREAM copy and triad",
    ] {
        assert!(peak.detail.contains(word), "{word}: {}", peak.detail);
    }
    // --format json prints what was written.
    let printed: profiler_format::peak::Peak = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, peak);
}

#[test]
fn the_table_and_dgemm() {
    let dir = scratch("peak-table");
    let path = dir.join("peak.json");
    let out = quick_peak(&path, &["--threads", "1", "--dtype", "f64"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    for word in [
        "1 thread ",
        "GEMM dgemm f64",
        "STREAM copy",
        "STREAM triad",
        "GFLOP/s",
        "spread",
    ] {
        assert!(table.contains(word), "{word}: {table}");
    }
    let peak = profiler_format::peak::load_peak(&path).unwrap();
    assert!(peak.detail.contains("dgemm (f64)"), "{}", peak.detail);
}

/// More threads than the cores the process may run on: measured all the same, with a warning
/// that the peak is below the machine's (before, nothing said so: 64 threads on 2 cores gave
/// 0.3 GFLOP/s).
#[test]
fn more_threads_than_cores_are_warned_of() {
    let dir = scratch("peak-threads");
    let cores = std::thread::available_parallelism().unwrap().get();
    let over = (cores + 1).to_string();
    let out = quick_peak(&dir.join("over.json"), &["--threads", &over]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "warning: --threads {over} is more than the {cores} cores"
        )),
        "{}",
        stderr(&out)
    );
    let out = quick_peak(&dir.join("fits.json"), &["--threads", "1"]);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn a_bad_output_fails_before_measuring() {
    let dir = scratch("peak-bad-output");
    let missing = dir.join("no-such-dir/peak.json");
    for target in [dir.as_path(), missing.as_path(), Path::new("/dev/null")] {
        let out = quick_peak(target, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).starts_with("error: cannot write"),
            "{}",
            stderr(&out)
        );
        // Nothing was measured, so nothing printed.
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn bad_flags_are_refused() {
    let dir = scratch("peak-bad-flags");
    let path = dir.join("peak.json");
    for flags in [
        &["--threads", "0"][..],
        &["--seconds", "-1"],
        &["--seconds", "lots"],
        &["--dtype", "f16"],
        &["--dtype", "bf16"],
        &["--dtype", "tf32"],
        &["--device", "gpu"],
        &["--device", "cuda:x"],
        &["--device", "cuda", "--threads", "1"],
        &["--size", "8"],
        &["--stream-mib", "0"],
        &["--format", "csv"],
    ] {
        let out = quick_peak(&path, flags);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("error:"), "{}", stderr(&out));
    }
    assert!(!path.exists());
    // More than the machine holds: refused, not an allocation that aborts.
    let out = quick_peak(&path, &["--stream-mib", "16777216"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--stream-mib"), "{}", stderr(&out));
}

#[test]
fn a_gpu_is_measured_only_where_one_can_be() {
    // The tests' prof has no `cuda` feature: --device cuda says how to get one; a prof with it
    // on a machine without a driver says that (profiler-peak's unit tests, `--features cuda`).
    let dir = scratch("peak-gpu");
    let path = dir.join("peak.json");
    let out = quick_peak(&path, &["--device", "cuda"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--device cuda")
            && (err.contains("--features cuda") || err.contains("driver")),
        "{err}"
    );
    assert!(!path.exists());
    let out = quick_peak(&path, &["--device", "cpu", "--dtype", "f64"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
