//! `prof watch` without a terminal: the keys on the model, polling real files, and frames drawn
//! at a fixed size from recorded profiles, compared with the text kept in
//! `tests/data/watch/*.txt` (`PROF_BLESS=1 cargo test -p profiler-cli watch` writes them anew,
//! deliberately).
//!
//! The profiles are real runs of the dlrm example (`tests/data/watch/README.md` says how each
//! was made); a frame's time is fixed (the file's age is counted from a set modification time),
//! so that the frames do not depend on when the test runs.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use profiler_analysis::load_profile;
use profiler_format::Run;

use super::model::{Action, KeyPress, Snapshot, Sort, Update, ViewMode, Watch};
use super::source::Source;
use super::view::render_text;

const WIDTH: u16 = 150;
const HEIGHT: u16 = 40;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// When every test's file was last written.
fn written() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn snapshot(name: &str) -> Box<Snapshot> {
    let profile = load_profile(data(name)).unwrap();
    Box::new(Snapshot::new(&profile, 0.02))
}

fn loaded(name: &str) -> Update {
    Update::Loaded {
        modified: Some(written()),
        snapshot: snapshot(name),
    }
}

fn no_trigger() -> super::Trigger {
    Box::new(|_| Err("not here".to_owned()))
}

/// A watch of `files` (names under tests/data), each read once.
fn watch_of(files: &[&str]) -> Watch {
    let paths: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    let mut watch = Watch::new(&paths, Duration::from_secs(1), no_trigger());
    for (i, f) in files.iter().enumerate() {
        watch.apply(i, loaded(f));
    }
    watch
}

fn frame(watch: &Watch, age: Duration) -> String {
    render_text(watch, WIDTH, HEIGHT, written() + age)
}

/// `got` is the text kept in `tests/data/watch/NAME.txt`, or, with `PROF_BLESS=1`, becomes it.
fn golden(name: &str, got: &str) {
    let kept = data(&format!("watch/{name}.txt"));
    if std::env::var_os("PROF_BLESS").is_some() {
        std::fs::write(&kept, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&kept).unwrap_or_default();
    assert!(
        got == want,
        "the frame differs from {} (PROF_BLESS=1 writes it anew if the change is meant):\n{got}",
        kept.display()
    );
}

const LIVE: &str = "watch/live-rank0.json";
const LIVE1: &str = "watch/live-rank1.json";
const SLOW: &str = "cli/continuous-slow.json";

#[test]
fn the_main_view_shows_the_layers_their_events_and_the_drift() {
    let watch = watch_of(&[SLOW]);
    let text = frame(&watch, Duration::from_secs(3));
    // What prof report computes, drawn.
    assert!(text.contains("SLOWER +79.4%"), "{text}");
    assert!(
        text.contains("! drifted: bottom_mlp/bwd bottom_backward"),
        "{text}"
    );
    assert!(text.contains("other "), "{text}");
    golden("main", &text);
}

#[test]
fn a_live_file_says_its_age_and_goes_stale() {
    let watch = watch_of(&[LIVE]);
    let live = frame(&watch, Duration::from_secs(2));
    assert!(live.contains("file 2s old"), "{live}");
    assert!(live.contains("live: rewritten"), "{live}");
    golden("live", &live);
    let stale = frame(&watch, Duration::from_secs(600));
    assert!(
        stale.contains("STALE: not rewritten for 10m 00s"),
        "{stale}"
    );
}

#[test]
fn sorted_by_drift_in_the_events_view() {
    let mut watch = watch_of(&[SLOW]);
    watch.handle_key(KeyPress::Char('v'));
    watch.handle_key(KeyPress::Char('s'));
    watch.handle_key(KeyPress::Char('s'));
    assert_eq!((watch.view, watch.sort), (ViewMode::Events, Sort::Drift));
    let rows = watch.rows();
    assert_eq!(rows[0].name, "iteration");
    assert_eq!(rows[1].name, "bottom_backward");
    golden("sorted-drift", &frame(&watch, Duration::from_secs(3)));
}

/// Layers sorted by drift where the verdicts rest on change points (12 windows or more): the
/// layer whose events changed most first. `continuous-slow.json` (bottom_mlp slower by about
/// 80%) given six more windows in which the interaction layer takes three times as long.
/// Before, a layer's size came from the comparison alone, which change points leave empty:
/// every layer sized 0, in execution order (bottom_mlp above interaction).
#[test]
fn layers_sorted_by_drift_on_change_points_by_the_size_of_their_change() {
    let mut profile = load_profile(data(SLOW)).unwrap();
    let interaction: Vec<u32> = profile
        .events
        .iter()
        .filter(|e| e.layer.as_deref() == Some("interaction"))
        .map(|e| e.order)
        .collect();
    let last = profile.windows.last().unwrap().clone();
    for k in 0..6 {
        let mut w = last.clone();
        w.index = last.index + 1 + k;
        w.first_iteration = last.first_iteration + (k + 1) * w.wall_ns.len() as u64;
        for e in w
            .events
            .iter_mut()
            .filter(|e| interaction.contains(&e.order))
        {
            e.samples_ns.iter_mut().for_each(|v| *v *= 3);
            e.stats = profiler_format::Stats::of(&e.samples_ns);
        }
        profile.windows.push(w);
    }
    profile.run.windows = Some(20);
    let mut watch = Watch::new(
        &["two.json".to_owned()],
        Duration::from_secs(1),
        no_trigger(),
    );
    watch.apply(
        0,
        Update::Loaded {
            modified: Some(written()),
            snapshot: Box::new(Snapshot::new(&profile, 0.02)),
        },
    );
    watch.handle_key(KeyPress::Char('s'));
    watch.handle_key(KeyPress::Char('s'));
    assert_eq!((watch.view, watch.sort), (ViewMode::Layers, Sort::Drift));
    let layers: Vec<String> = watch
        .rows()
        .iter()
        .filter(|r| r.kind == super::model::RowKind::Layer)
        .map(|r| r.name.clone())
        .collect();
    let at = |name: &str| layers.iter().position(|l| l == name).unwrap();
    assert!(at("interaction") < at("bottom_mlp"), "{layers:?}");
}

#[test]
fn filtered_by_layer_then_by_text() {
    let mut watch = watch_of(&[SLOW]);
    let layers = watch.layers();
    // `l` cycles: the first layer, the second, ..., none.
    watch.handle_key(KeyPress::Char('l'));
    assert_eq!(watch.filter.layer.as_ref(), layers.first());
    for _ in 1..layers.len() {
        watch.handle_key(KeyPress::Char('l'));
    }
    assert_eq!(watch.filter.layer.as_ref(), layers.last());
    watch.handle_key(KeyPress::Char('l'));
    assert_eq!(watch.filter.layer, None);
    // bottom_mlp, by cycling to it.
    while watch.filter.layer.as_deref() != Some("bottom_mlp") {
        watch.handle_key(KeyPress::Char('l'));
    }
    let rows = watch.rows();
    assert!(
        rows[1..].iter().all(|r| r.layer == "bottom_mlp"),
        "{rows:?}"
    );
    golden("filter-layer", &frame(&watch, Duration::from_secs(3)));
    // Text: typed after `/`, applied by Enter, on top of the layer.
    for key in [
        KeyPress::Char('/'),
        KeyPress::Char('S'),
        KeyPress::Char('g'),
        KeyPress::Char('d'),
    ] {
        watch.handle_key(key);
    }
    let typing = frame(&watch, Duration::from_secs(3));
    assert!(typing.contains("filter: /Sgd_"), "{typing}");
    watch.handle_key(KeyPress::Enter);
    let names: Vec<String> = watch.rows().iter().map(|r| r.name.clone()).collect();
    assert_eq!(names, ["iteration", "bottom_mlp", "sgd", "sgd#1"]);
    golden("filter-text", &frame(&watch, Duration::from_secs(3)));
    watch.handle_key(KeyPress::Char('c'));
    assert_eq!(watch.rows().len(), 1 + 4 + 25);
}

#[test]
fn several_ranks_have_tabs() {
    let mut watch = watch_of(&[LIVE, LIVE1]);
    let first = frame(&watch, Duration::from_secs(1));
    assert!(first.contains(" rank 0   rank 1"), "{first}");
    watch.handle_key(KeyPress::Tab);
    assert_eq!(watch.selected, 1);
    let second = frame(&watch, Duration::from_secs(1));
    assert!(second.contains("rank 1  pid"), "{second}");
    golden("ranks", &second);
    // Number keys pick the rank, Shift-Tab goes back round.
    watch.handle_key(KeyPress::Char('0'));
    assert_eq!(watch.selected, 0);
    watch.handle_key(KeyPress::BackTab);
    assert_eq!(watch.selected, 1);
    watch.handle_key(KeyPress::Char('7'));
    assert_eq!(watch.selected, 1);
    assert!(watch.status.as_deref().unwrap().contains("no rank 7"));
}

#[test]
fn a_malformed_file_keeps_the_last_good_view() {
    let mut watch = watch_of(&[LIVE, LIVE1]);
    let before = watch.rows();
    let text = std::fs::read(data(LIVE)).unwrap();
    // Half of a rewrite, as a copy caught in the middle would leave it.
    let half = &text[..text.len() / 2];
    let error = profiler_format::read::parse_profile(half, Path::new("prof-rank0.json"))
        .unwrap_err()
        .to_string();
    let message = error.lines().next().unwrap().to_owned();
    watch.apply(
        0,
        Update::Failed {
            modified: Some(written() + Duration::from_secs(1)),
            message,
        },
    );
    assert_eq!(watch.rows(), before);
    let shown = frame(&watch, Duration::from_secs(2));
    assert!(
        shown.contains("truncated) (showing the last good read)"),
        "{shown}"
    );
    assert!(shown.contains(" rank 0 ! "), "{shown}");
    golden("malformed", &shown);
    // The next good read clears it.
    watch.apply(0, loaded(LIVE));
    assert!(watch.current().error.is_none());
}

#[test]
fn a_file_never_read_says_why() {
    let paths = vec!["no-such-prof.json".to_owned()];
    let mut watch = Watch::new(&paths, Duration::from_secs(1), no_trigger());
    let update = Source::new("no-such-prof.json").poll(0.02).unwrap();
    watch.apply(0, update);
    let text = frame(&watch, Duration::from_secs(1));
    assert!(
        text.contains("waiting for no-such-prof.json: error: no-such-prof.json: no such file"),
        "{text}"
    );
    assert!(watch.rows().is_empty());
}

#[test]
fn a_sample_profile_is_a_static_view() {
    let watch = watch_of(&["cli/batch32.json"]);
    let text = frame(&watch, Duration::from_secs(5));
    assert!(text.contains("static view: a sample profile"), "{text}");
    golden("static", &text);
}

#[test]
fn the_help_lists_every_key() {
    let mut watch = watch_of(&[SLOW]);
    watch.handle_key(KeyPress::Char('?'));
    let text = frame(&watch, Duration::from_secs(3));
    for (key, _) in super::model::HELP {
        assert!(text.contains(key), "{key} is not in the help:\n{text}");
    }
    golden("help", &text);
    // Any key closes it, and does nothing else.
    assert_eq!(watch.handle_key(KeyPress::Char('s')), Action::Continue);
    assert!(!watch.help);
    assert_eq!(watch.sort, Sort::Share);
}

#[test]
fn quit_keys_quit() {
    for key in [KeyPress::Char('q'), KeyPress::Esc, KeyPress::Ctrl('c')] {
        let mut watch = watch_of(&[SLOW]);
        assert_eq!(watch.handle_key(key), Action::Quit, "{key:?}");
    }
    // Ctrl-C quits while typing a filter too; Esc there only cancels it.
    let mut watch = watch_of(&[SLOW]);
    watch.handle_key(KeyPress::Char('/'));
    watch.handle_key(KeyPress::Char('x'));
    assert_eq!(watch.handle_key(KeyPress::Esc), Action::Continue);
    assert_eq!(
        (watch.editing.as_deref(), watch.filter.text.as_str()),
        (None, "")
    );
    watch.handle_key(KeyPress::Char('/'));
    assert_eq!(watch.handle_key(KeyPress::Ctrl('c')), Action::Quit);
}

#[test]
fn sort_keys_cycle_both_ways() {
    let mut watch = watch_of(&[SLOW]);
    let mut seen = vec![watch.sort];
    for _ in 0..4 {
        watch.handle_key(KeyPress::Char('s'));
        seen.push(watch.sort);
    }
    assert_eq!(
        seen,
        [
            Sort::Share,
            Sort::Median,
            Sort::Drift,
            Sort::Name,
            Sort::Order
        ]
    );
    watch.handle_key(KeyPress::Char('s'));
    assert_eq!(watch.sort, Sort::Share);
    watch.handle_key(KeyPress::Char('S'));
    assert_eq!(watch.sort, Sort::Order);
    // Sorted by median, each layer's events are in descending median under it.
    watch.handle_key(KeyPress::Char('S'));
    watch.handle_key(KeyPress::Char('S'));
    watch.handle_key(KeyPress::Char('S'));
    assert_eq!(watch.sort, Sort::Median);
    let rows = watch.rows();
    for pair in rows[1..].windows(2) {
        if pair[0].kind == pair[1].kind && pair[0].layer == pair[1].layer {
            assert!(pair[0].median_ns >= pair[1].median_ns, "{pair:?}");
        }
    }
}

#[test]
fn the_trace_key_calls_the_trigger_with_the_run_shown() {
    let calls: Rc<RefCell<Vec<(u32, u32, String)>>> = Rc::default();
    let seen = calls.clone();
    let trigger: super::Trigger = Box::new(move |run: &Run| {
        seen.borrow_mut()
            .push((run.rank, run.pid, run.host.clone()));
        if run.rank == 0 {
            Ok(format!("trace requested from pid {}", run.pid))
        } else {
            Err("the job refused".to_owned())
        }
    });
    let paths = vec![LIVE.to_owned(), LIVE1.to_owned()];
    let mut watch = Watch::new(&paths, Duration::from_secs(1), trigger);
    // Before anything is read there is no process to ask.
    watch.handle_key(KeyPress::Char('t'));
    assert!(calls.borrow().is_empty());
    assert!(watch
        .status
        .as_deref()
        .unwrap()
        .contains("no profile read yet"));
    watch.apply(0, loaded(LIVE));
    watch.apply(1, loaded(LIVE1));
    watch.handle_key(KeyPress::Char('t'));
    let pid = watch.ranks[0].shown.as_ref().unwrap().run.pid;
    assert_eq!(
        watch.status.as_deref(),
        Some(format!("trace requested from pid {pid}").as_str())
    );
    watch.handle_key(KeyPress::Tab);
    watch.handle_key(KeyPress::Char('t'));
    assert_eq!(
        watch.status.as_deref(),
        Some("trace not requested: the job refused")
    );
    let ranks: Vec<u32> = calls.borrow().iter().map(|c| c.0).collect();
    assert_eq!(ranks, [0, 1]);
    let text = frame(&watch, Duration::from_secs(1));
    assert!(
        text.contains("trace not requested: the job refused"),
        "{text}"
    );
}

#[test]
fn pause_freezes_the_view_while_files_are_read() {
    let mut watch = watch_of(&[LIVE]);
    watch.handle_key(KeyPress::Char(' '));
    assert!(watch.paused);
    let frozen = watch.rows();
    watch.apply(0, loaded(SLOW));
    assert_eq!(watch.rows(), frozen);
    let text = frame(&watch, Duration::from_secs(1));
    assert!(
        text.contains("PAUSED (space resumes: newer data read"),
        "{text}"
    );
    watch.handle_key(KeyPress::Char(' '));
    assert_ne!(watch.rows(), frozen);
    assert_eq!(watch.current().shown.as_ref().unwrap().run.pid, {
        load_profile(data(SLOW)).unwrap().run.pid
    });
}

#[test]
fn scrolling_stops_at_the_last_row() {
    let mut watch = watch_of(&[SLOW]);
    watch.handle_key(KeyPress::End);
    let last = watch.scroll;
    assert_eq!(last, watch.rows().len() - 2);
    watch.handle_key(KeyPress::Down);
    assert_eq!(watch.scroll, last);
    watch.handle_key(KeyPress::Home);
    assert_eq!(watch.scroll, 0);
    watch.handle_key(KeyPress::Up);
    assert_eq!(watch.scroll, 0);
    // A short screen shows the iteration and the rows from the scroll on.
    watch.handle_key(KeyPress::PageDown);
    let text = render_text(&watch, WIDTH, 20, written());
    assert!(text.contains("iteration"), "{text}");
}

/// Polling a file that is rewritten by rename, made half-written, removed and written again.
#[test]
fn polling_reads_a_file_again_only_when_it_changed() {
    let dir = std::env::temp_dir().join(format!("prof-watch-poll-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("prof.json");
    let good = std::fs::read(data(LIVE)).unwrap();
    let replace = |bytes: &[u8]| {
        let tmp = dir.join("prof.json.tmp");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    };
    let mut source = Source::new(&path);
    assert!(matches!(
        source.poll(0.02),
        Some(Update::Failed { modified: None, .. })
    ));
    // Missing is said once.
    assert!(source.poll(0.02).is_none());
    replace(&good);
    assert!(matches!(source.poll(0.02), Some(Update::Loaded { .. })));
    assert!(source.poll(0.02).is_none());
    replace(&good[..good.len() / 3]);
    match source.poll(0.02) {
        Some(Update::Failed { message, .. }) => {
            assert!(message.contains("truncated"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    replace(b"{\"schema\": \"something else\"}");
    match source.poll(0.02) {
        Some(Update::Failed { message, .. }) => assert!(message.contains("schema"), "{message}"),
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(source.poll(0.02), Some(Update::Failed { .. })));
    replace(&good);
    assert!(matches!(source.poll(0.02), Some(Update::Loaded { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Any size of terminal, down to nothing, is drawn without a panic, the help too.
#[test]
fn tiny_terminals_are_drawn() {
    let mut watch = watch_of(&[SLOW, LIVE]);
    for help in [false, true] {
        watch.help = help;
        for (w, h) in [(0, 0), (1, 1), (5, 3), (20, 8), (40, 12), (80, 24)] {
            let text = render_text(&watch, w, h, written());
            assert_eq!(text.lines().count(), usize::from(h), "{w}x{h}");
        }
    }
}

/// `--once` prints each file's frame as tall as what it shows: the header, every row of the
/// table, the summary and the status and key lines, with no blank lines filling a terminal's
/// height (one blank line between two files' frames); a profile of more rows than a terminal
/// has lines is printed whole.
#[test]
fn once_prints_every_row_and_no_filler() {
    // Many rows: batch32's events, each a layer of its own (a layer row and an event row).
    let dir = std::env::temp_dir().join(format!("prof-watch-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data("cli/batch32.json")).unwrap()).unwrap();
    for (i, e) in v["events"].as_array_mut().unwrap().iter_mut().enumerate() {
        e["layer"] = format!("layer{i}").into();
    }
    let tall = dir.join("tall.json");
    std::fs::write(&tall, serde_json::to_vec(&v).unwrap()).unwrap();
    let files = [
        data("cli/batch32.json"),
        data(LIVE),
        data(SLOW),
        tall.clone(),
    ];
    for file in &files {
        let options = super::WatchOptions {
            files: vec![file.clone()],
            interval: Duration::from_secs(1),
            drift_threshold: 0.02,
        };
        let (text, error) = super::once(&options);
        assert_eq!(error, None);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.iter().all(|l| !l.trim().is_empty()),
            "{}: blank lines:\n{text}",
            file.display()
        );
        // Every row of the table is there.
        let name = file.to_str().unwrap();
        let watch = watch_of_paths(&[name]);
        let rows = watch.rows();
        let body = lines.iter().filter(|l| l.contains('%')).count();
        assert!(
            body >= rows.len(),
            "{}: {} rows of {}:\n{text}",
            file.display(),
            body,
            rows.len()
        );
        assert!(
            text.ends_with(&format!("{} rows\n", rows.len() - 1)),
            "{text}"
        );
    }
    // Two files: two frames, one blank line between them.
    let options = super::WatchOptions {
        files: files[..2].to_vec(),
        interval: Duration::from_secs(1),
        drift_threshold: 0.02,
    };
    let (text, _) = super::once(&options);
    assert_eq!(
        text.lines().filter(|l| l.trim().is_empty()).count(),
        1,
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A watch of files by their paths, each read once.
fn watch_of_paths(paths: &[&str]) -> Watch {
    let owned: Vec<String> = paths.iter().map(|f| f.to_string()).collect();
    let mut watch = Watch::new(&owned, Duration::from_secs(1), no_trigger());
    for (i, f) in paths.iter().enumerate() {
        let profile = load_profile(f).unwrap();
        watch.apply(
            i,
            Update::Loaded {
                modified: Some(written()),
                snapshot: Box::new(Snapshot::new(&profile, 0.02)),
            },
        );
    }
    watch
}
