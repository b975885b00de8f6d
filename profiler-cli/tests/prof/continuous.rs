//! `prof` on `continuous`-mode profiles. The fixtures are real runs of the dlrm example:
//!
//! - `tests/data/cli/continuous.json`: `PROF_MODE=continuous PROF_WARMUP=5 PROF_REPEAT=5
//!   PROF_WINDOWS=10 dlrm --iters 2000` (15 windows of 125 iterations closed, the last 10 kept;
//!   the run ended 120 iterations into the 16th), written before the baseline windows were kept:
//!   it stands for the older files. Its events are steady; the tests make a drift by slowing one
//!   event's samples in the last windows of a copy.
//! - `tests/data/cli/continuous-slow.json`: `PROF_MODE=continuous PROF_WARMUP=100 PROF_REPEAT=5
//!   PROF_WINDOWS=8 dlrm --iters 2600 --slow bottom_mlp --slow-from 900`: 20 windows closed, the
//!   first 3 kept as the baseline and the last 8 (12-19); `bottom_backward` slowed from iteration
//!   900 (window 6), long before every recent window kept.

use std::path::{Path, PathBuf};
use std::process::Output;

use profiler_analysis::load_profile;
use profiler_format::{Profile, Stats};
use serde_json::Value;

use crate::common;
use common::{prof, scratch};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cli/continuous.json")
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The fixture with the samples of the event named `name` times `factor` in the last `last`
/// windows (their statistics recomputed).
pub fn slowed(mut profile: Profile, name: &str, factor: f64, last: usize) -> Profile {
    let order = profile
        .events
        .iter()
        .find(|e| e.name == name)
        .unwrap()
        .order;
    let n = profile.windows.len();
    for w in &mut profile.windows[n - last..] {
        for e in w.events.iter_mut().filter(|e| e.order == order) {
            e.samples_ns = e
                .samples_ns
                .iter()
                .map(|&s| (s as f64 * factor).round() as u64)
                .collect();
            e.stats = Stats::of(&e.samples_ns);
        }
    }
    profile
}

fn write(dir: &Path, name: &str, profile: &Profile) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(profile).unwrap()).unwrap();
    path
}

/// The windows section of a table: from its `windows:` line to the end.
fn section(table: &str) -> Vec<&str> {
    let start = table
        .find("\nwindows: ")
        .unwrap_or_else(|| panic!("no windows section:\n{table}"));
    table[start + 1..].lines().collect()
}

#[test]
fn report_shows_a_steady_run_window_by_window() {
    let table = ok(&prof(&["report", p(&fixture())]));
    assert!(
        table.starts_with(
            "dlrm: continuous mode, 2000 iterations (5 warmup); the last window's 125 \
             iterations (from iteration 1755) and 25 events below"
        ),
        "{table}"
    );
    assert!(
        table.contains("perturbation: unknown (continuous mode"),
        "{table}"
    );
    let lines = section(&table);
    assert_eq!(
        lines[0],
        "windows: 10 kept of 15 closed (PROF_WINDOWS=10), 125 iterations each"
    );
    // A file written before the baseline windows were kept: the recent past only.
    assert_eq!(
        lines[1],
        "drift: the change points of each series of fastest-5% times per window (at least 12 \
         windows; threshold 2.0%, alpha 0.05, Holm over the series; intervals 95%); and the \
         recent windows 13-14 (2): in the recent past, against windows 5-9 (5); since the \
         start: no baseline windows in this file (PROF_BASELINE_WINDOWS=0, or written before \
         profiler-core kept them); by prof diff's statistics"
    );
    // Header, the iteration, 25 events, the closing line.
    assert_eq!(lines.len(), 2 + 1 + 1 + 25 + 1, "{table}");
    assert!(lines[3].contains("iteration"), "{}", lines[3]);
    for row in &lines[3..29] {
        let spark = row.chars().filter(|c| ('▁'..='█').contains(c)).count();
        assert_eq!(spark, 10, "{row}");
        assert!(!row.contains('┊'), "{row}");
    }
    // No event drifted, and none can rule out a 2% drift with 5 samples a window.
    assert!(
        lines[29].starts_with("? no event drifted, but 25 of 25 events are inconclusive"),
        "{}",
        lines[29]
    );
}

#[test]
fn report_flags_an_event_whose_recent_windows_are_slower() {
    let dir = scratch("slowed");
    let slow = slowed(load_profile(fixture()).unwrap(), "bottom_backward", 1.25, 3);
    let file = write(&dir, "slowed.json", &slow);
    let table = ok(&prof(&["report", p(&file)]));
    let lines = section(&table);
    let row = lines
        .iter()
        .find(|l| l.contains("bottom_backward"))
        .unwrap();
    assert!(row.contains("SLOWER +2"), "{row}");
    assert!(row.contains("(95% CI +"), "{row}");
    assert!(row.trim_end().ends_with("%)"), "{row}");
    assert_eq!(
        *lines.last().unwrap(),
        "! drifted: bottom_mlp/bwd bottom_backward (slower in the recent past) (1 of 25 events)"
    );

    let json: Value =
        serde_json::from_str(&ok(&prof(&["report", p(&file), "--format", "json"]))).unwrap();
    let w = &json["windows"];
    assert_eq!(
        (w["kept"].as_u64(), w["closed"].as_u64()),
        (Some(10), Some(15))
    );
    let events = w["events"].as_array().unwrap();
    assert_eq!(events.len(), 25);
    let drifted: Vec<&str> = events
        .iter()
        .filter(|e| e["drift"] == "slower" || e["drift"] == "faster")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(drifted, ["bottom_backward"]);
    let bb = events
        .iter()
        .find(|e| e["name"] == "bottom_backward")
        .unwrap();
    assert_eq!(bb["drift"], "slower");
    assert_eq!(bb["comparison"]["verdict"], "regressed");
    assert_eq!(bb["medians_ns"].as_array().unwrap().len(), 10);

    let csv = ok(&prof(&["report", p(&file), "--format", "csv"]));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let drift = header.iter().position(|h| *h == "drift").unwrap();
    let bb_row: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("event,") && l.contains(",bottom_backward,"))
        .unwrap()
        .split(',')
        .collect();
    assert_eq!(bb_row[drift], "slower");
    assert_eq!(
        csv.lines().filter(|l| l.starts_with("window,")).count(),
        26 * 10
    );

    let md = ok(&prof(&["report", p(&file), "--format", "markdown"]));
    assert!(md.contains("**windows: 10 kept of 15 closed"), "{md}");
    assert!(md.contains("SLOWER +2"), "{md}");
}

/// The case, from a real run: a layer slowed long before every recent window kept is
/// flagged since the start (against the run's baseline windows), in every format, and stays
/// inconclusive in the recent past (its windows cannot rule out a 2% drift).
#[test]
fn report_finds_a_slowdown_older_than_every_recent_window() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cli/continuous-slow.json");
    let table = ok(&prof(&["report", p(&file)]));
    let lines = section(&table);
    assert_eq!(
        lines[0],
        "windows: 11 kept of 20 closed (the first 3, and the last 8: PROF_WINDOWS=8), 125 \
         iterations each"
    );
    assert!(
        lines[1].starts_with(
            "drift: the change points of each series of fastest-5% times per window (at least \
             12 windows; threshold 2.0%, alpha 0.05, Holm over the series; intervals 95%); and \
             the recent windows 18-19 (2): since the start, against the baseline windows 0-2 \
             (3); in the recent past, against windows 12-15 (4);"
        ),
        "{}",
        lines[1]
    );
    let row = lines
        .iter()
        .find(|l| l.contains("bottom_backward"))
        .unwrap();
    assert!(row.contains("▁▁▁┊████████"), "{row}");
    assert!(row.contains("SLOWER +"), "{row}");
    // In the recent past, stable: slow in every recent window.
    assert!(row.trim_end().ends_with("stable"), "{row}");
    assert_eq!(
        *lines.last().unwrap(),
        "! drifted: bottom_mlp/bwd bottom_backward (slower since the start) (1 of 25 events)"
    );

    let json: Value =
        serde_json::from_str(&ok(&prof(&["report", p(&file), "--format", "json"]))).unwrap();
    let w = &json["windows"];
    assert_eq!(w["baseline_windows"], 3);
    assert_eq!(w["start"]["last"], 2);
    let bb = w["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "bottom_backward")
        .unwrap();
    assert_eq!(bb["drift"], "slower");
    assert_eq!(bb["drift_against"], "start");
    assert_eq!(bb["since_start"]["comparison"]["verdict"], "regressed");
    assert!(bb["since_start"]["comparison"]["ci_low"].as_f64().unwrap() > 1.3);
    assert_eq!(bb["recent_past"]["drift"], "stable");

    let csv = ok(&prof(&["report", p(&file), "--format", "csv"]));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let bb_row: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("event,") && l.contains(",bottom_backward,"))
        .unwrap()
        .split(',')
        .collect();
    assert_eq!(bb_row[col("start_drift")], "slower");
    assert_eq!(bb_row[col("recent_past_drift")], "stable");
    assert_eq!(bb_row[col("drift_against")], "start");
    let baseline_rows = csv
        .lines()
        .filter(|l| l.starts_with("window,"))
        .filter(|l| l.split(',').nth(col("baseline_window")) == Some("true"))
        .count();
    assert_eq!(baseline_rows, 26 * 3);

    let md = ok(&prof(&["report", p(&file), "--format", "markdown"]));
    assert!(
        md.contains("bottom_backward (slower since the start)"),
        "{md}"
    );
}

/// Every other command reads a continuous-mode file: its events are the last window's samples.
#[test]
fn every_command_reads_a_continuous_profile() {
    let dir = scratch("commands");
    let file = fixture();
    let trace = dir.join("trace.json");
    ok(&prof(&["trace", p(&file), "-o", p(&trace)]));
    let doc: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let step = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "ProfilerStep#0")
        .unwrap();
    assert_eq!(step["args"]["measured_iterations"], 125);
    let diff = ok(&prof(&["diff", p(&file), p(&file)]));
    assert!(diff.contains("no regression"), "{diff}");
    let batch = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cli/batch32.json");
    ok(&prof(&["diff", p(&batch), p(&file)]));
    ok(&prof(&["merge", p(&file), p(&file)]));
    ok(&prof(&["scale", p(&batch), p(&file), "--param", "run=1,2"]));
    let html = dir.join("report.html");
    ok(&prof(&["html", p(&file), "-o", p(&html)]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("\"windows\":{"),
        "no windows in the page's data"
    );
}

/// A change made to a profile's JSON.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn continuous_profiles_that_do_not_add_up_are_refused() {
    let dir = scratch("refused");
    let base: Value = serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "order.json",
            Box::new(|v| v["windows"][3]["index"] = 2.into()),
            "windows[3] has index 2, not above the previous window's 7",
        ),
        (
            "unknown.json",
            Box::new(|v| v["windows"][0]["events"][4]["order"] = 99.into()),
            "windows[0] (index 5): events[4] has order 99, but no event has that order",
        ),
        (
            "twice.json",
            Box::new(|v| v["windows"][0]["events"][4]["order"] = 3.into()),
            "windows[0] (index 5): order 3 is listed twice",
        ),
        (
            "count.json",
            Box::new(|v| v["windows"][9]["events"][0]["stats"]["count"] = 6.into()),
            "the event of order 0 has stats.count 6 but 5 samples_ns",
        ),
        (
            "iterations.json",
            Box::new(|v| v["iterations"]["first"] = 1900.into()),
            "iterations.count is 2000 but iterations.first + the number of wall_ns is 1900 + 125",
        ),
    ];
    for (name, edit, message) in cases {
        let mut v = base.clone();
        edit(&mut v);
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
        let out = prof(&["report", p(&path)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.starts_with("error:"), "{name}: {err}");
        assert!(err.contains(message), "{name}: {err}");
    }
}

/// `prof watch --once` on a terminal that reports 0 columns (a pseudo-terminal not sized yet,
/// as `docker exec -t` gives early on) draws at the default width: before, it drew an empty
/// frame (one blank line, exit 0).
#[cfg(target_os = "linux")]
#[test]
fn watch_once_on_a_terminal_of_width_0_draws_the_frame() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty(3) writes the two descriptors it opens; the size is read only.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(opened, 0, "openpty");
    // SAFETY: both descriptors were just opened by openpty and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_prof"))
        .args(["watch", "--once", p(&fixture())])
        .stdout(std::process::Stdio::from(slave.try_clone().unwrap()))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(slave);
    let status = child.wait().unwrap();
    let mut text = Vec::new();
    let mut master = std::fs::File::from(master);
    // Reading past the child's output ends in EIO once no slave is open.
    let _ = master.read_to_end(&mut text);
    let text = String::from_utf8_lossy(&text);
    assert!(status.success(), "{status:?}");
    assert!(text.contains("iteration"), "{text:?}");
}

/// A continuous run that ended before its first window closed: its file holds the open
/// window's samples and no window. `prof report` and `prof watch` say so; before, the report
/// called them "the last window's", its status "written while the run went on, or when a
/// signal stopped it" (neither happened), and `prof watch` "not continuous mode".
#[test]
fn a_run_ended_before_its_first_window_closed_is_called_so() {
    let dir = scratch("continuous-open-window");
    let mut profile = profiler_analysis::load_profile(fixture()).unwrap();
    profile.windows.clear();
    profile.complete = false;
    let path = write(&dir, "open.json", &profile);
    let table = ok(&prof(&["report", p(&path)]));
    let first = table.lines().next().unwrap();
    assert!(
        first.contains("no window closed: the open window's")
            && first.contains("INCOMPLETE (written before its first window closed"),
        "{table}"
    );
    let frame = ok(&prof(&["watch", "--once", p(&path)]));
    assert!(
        frame.contains("continuous mode, written before its first window closed"),
        "{frame}"
    );
}
