//! `prof html`: one self-contained HTML file (inline CSS and JavaScript, no external resource, a
//! Content-Security-Policy that forbids any network access) that draws a profile: the iteration
//! times, the breakdown by phase and by layer, a sortable table of the events with the
//! distribution of each event's samples (and, when some event counts its work, its achieved
//! rates: the cells of `prof report`'s work columns, as texts, with an MFU over 100% flagged,
//! and the report's work line naming the peak and its source), the average iteration as a
//! timeline and, when a
//! baseline is given, the comparison with it. A `continuous`-mode profile also gets a "Windows
//! over time" section: each event's median per kept window as a time series (one inline SVG
//! chart, every event relative to its median over the baseline windows (the run's first; else
//! the earlier windows), the windows compared shaded, a dashed line where windows were dropped
//! after the baseline ones, the drifted events in colour and listed with how they drifted,
//! the others grey, the iteration dashed), and a sortable table with each event's series, first
//! and last median, and both drift comparisons, since the start and in the recent past
//! ([`drift::windows`](super::drift::windows), the statistics of `prof diff`). Its iteration
//! chart shows the last window's iterations, numbered from `iterations.first`.
//!
//! The numbers come from [`report::build`] and [`diff::diff`], exactly as `prof report` and
//! `prof diff` print them; the page adds only each event's median start offset (for the
//! timeline) and the samples themselves (for the histograms). They are embedded as JSON in a
//! `<script type="application/json" id="data">` element (every `<`, `>` and `&` written as a
//! `\u` escape, so no string from the profile can end the element), and the page's script builds
//! the document from them with DOM calls (text nodes only, never markup from data). Without
//! JavaScript a `<noscript>` summary table is shown.
//!
//! To bound the file's size, at most [`MAX_ITERATIONS`] iteration times are embedded (every
//! n-th one beyond that) and at most [`MAX_SAMPLES`] samples in all, spread evenly over the
//! events (at least 50 and at most 1000 per event, every n-th one beyond that); the statistics
//! shown are always those of all samples.
//!
//! The flame graph (`prof flame`'s SVG, differential with a baseline) is embedded in the data
//! and shown in an `<iframe>` whose `srcdoc` the script sets: the SVG keeps its own script (zoom,
//! search), which expects a document of its own (its element ids, its window's events), and the
//! frame inherits the page's Content-Security-Policy. Once the frame has loaded, the script
//! checks that its frames were drawn (`data-frames` and `data-drawn` on the card: how many
//! frames, and how many have a width on screen), and records an error otherwise.
//!
//! When the page has drawn itself, its script sets `data-rendered="ok"` on `<body>` (`"error"`
//! if a section failed); a script error is listed at the top of the page and recorded in the
//! `data-errors` attribute of `<body>`, so that a headless browser can check the page.

use std::collections::HashMap;
use std::fmt::Write;

use serde::Serialize;
use serde_json::Value;

use super::diff::{self, DiffOptions};
use super::flame;
use super::report::{self, EventRow, GroupBy, GroupRow, ReportOptions};
use super::stats;
use super::trace::{self, AverageIteration};
use profiler_format::{Event, Profile, Run};
use profiler_tables::columns::{Families, Family, Place};
use profiler_tables::tables::profile_tables;

/// The most iteration wall times embedded in a page.
pub const MAX_ITERATIONS: usize = 5000;
/// The most event samples embedded in a page, over all events.
pub const MAX_SAMPLES: usize = 100_000;
/// The fewest and the most samples embedded per event.
const SAMPLES_PER_EVENT: (usize, usize) = (50, 1000);
/// Rows of the `<noscript>` table.
const NOSCRIPT_ROWS: usize = 200;

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");
/// Installed before anything else: records script errors on `<body>` and on the page.
const ERROR_JS: &str = r#"(function () {
  var errors = [];
  function record(msg) {
    errors.push(String(msg));
    document.body.dataset.errors = errors.join(' | ');
    var box = document.getElementById('errors');
    if (box) {
      box.hidden = false;
      var li = document.createElement('li');
      li.textContent = String(msg);
      box.querySelector('ul').appendChild(li);
    }
  }
  window.__profError = record;
  window.onerror = function (msg, src, line, col) {
    record(msg + ' (line ' + line + ', column ' + col + ')');
  };
  window.addEventListener('unhandledrejection', function (ev) {
    var r = ev.reason;
    record('unhandled rejection: ' + (r && r.message ? r.message : String(r)));
  });
}());"#;

/// The run fields the page shows.
#[derive(Serialize)]
struct RunInfo<'a> {
    schema: &'a str,
    complete: bool,
    program: &'a str,
    pid: u32,
    host: &'a str,
    rank: u32,
    mode: &'a str,
    filter: &'a str,
    warmup: u32,
    repeat: u32,
    clock: &'a str,
    timer_floor_ns: u64,
    profiler_version: &'a str,
}

impl<'a> RunInfo<'a> {
    fn of(profile: &'a Profile) -> Self {
        let Run {
            program,
            pid,
            host,
            rank,
            mode,
            filter,
            warmup,
            repeat,
            clock,
            timer_floor_ns,
            profiler_version,
            ..
        } = &profile.run;
        RunInfo {
            schema: &profile.schema,
            complete: profile.complete,
            program,
            pid: *pid,
            host,
            rank: *rank,
            mode,
            filter,
            warmup: *warmup,
            repeat: *repeat,
            clock,
            timer_floor_ns: *timer_floor_ns,
            profiler_version,
        }
    }
}

/// A report row with what the page draws beyond it.
#[derive(Serialize)]
struct EventData<'a> {
    #[serde(flatten)]
    row: &'a EventRow,
    kind: Option<&'a str>,
    file: Option<&'a str>,
    line: Option<u32>,
    /// Median start offset from the start of the iteration.
    offset_ns: Option<f64>,
    /// `[start, end]` of its slice on the average iteration (`prof trace`'s drawing).
    drawn_ns: Option<[u64; 2]>,
    /// The samples, every `samples_stride`-th one.
    samples_ns: Vec<u64>,
    samples_stride: usize,
    /// For an event that counts its work: [`work_cells`], its achieved rates as `prof report`
    /// writes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    work_cells: Option<HashMap<&'static str, String>>,
    /// Its MFU is over 100% ([`profiler_tables::work::over_peak`]): the cell is flagged.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    over_peak: bool,
}

#[derive(Serialize)]
struct Groups {
    phase: Vec<GroupRow>,
    layer: Vec<GroupRow>,
}

#[derive(Serialize)]
struct IterationData {
    /// Every `stride`-th wall time; `wall_ns[0]` is iteration `first`.
    wall_ns: Vec<u64>,
    stride: usize,
    /// `iterations.first`: 0, except in `continuous` mode (the last window's iterations).
    first: u64,
    /// `sample` and `continuous` modes: `[first, last, label]` iteration of each event's armed
    /// iterations.
    armed: Vec<(u32, u32, String)>,
}

#[derive(Serialize)]
struct PageData<'a> {
    run: RunInfo<'a>,
    report: Value,
    groups: Groups,
    iterations: IterationData,
    baseline: Option<RunInfo<'a>>,
    diff: Option<Value>,
    /// `prof flame`'s SVG of the profile (coloured by the comparison's verdicts when a baseline
    /// is given); `None` when there is no mean iteration to draw.
    flame: Option<String>,
    /// The events split by input shape, as `prof report` prints the table ([`report::shape_table`]):
    /// its headers and cells; `None` when no event has a `shape` key.
    #[serde(skip_serializing_if = "Option::is_none")]
    shapes: Option<ShapeTable>,
    /// The average iteration's step and `other` stretches, as `prof trace` draws them (each
    /// event's slice is its `drawn_ns`); `None` when it cannot be drawn.
    average: Option<AverageStep>,
}

/// The step of the average iteration and its `other` stretches ([`AverageIteration`]).
#[derive(Serialize)]
struct AverageStep {
    step_ns: u64,
    other: Vec<[u64; 2]>,
}

/// `prof report`'s table of the events by input shape.
#[derive(Serialize)]
struct ShapeTable {
    headers: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

/// Every `stride`-th value, `stride` chosen so that at most `cap` remain.
fn thin(values: &[u64], cap: usize) -> (Vec<u64>, usize) {
    let stride = values.len().div_ceil(cap.max(1)).max(1);
    (values.iter().step_by(stride).copied().collect(), stride)
}

fn label(name: &str, occurrence: u32) -> String {
    if occurrence == 0 {
        name.to_owned()
    } else {
        format!("{name} #{occurrence}")
    }
}

/// Everything the page draws: the report (grouped by phase, with the layer groups beside it),
/// the iterations and, given a baseline, the comparison with it.
fn page_data<'a>(profile: &'a Profile, baseline: Option<&'a Profile>) -> PageData<'a> {
    let options = ReportOptions {
        group_by: Some(GroupBy::Phase),
        ..ReportOptions::default()
    };
    // The rows once, for the report (grouped by phase) and the layer groups beside it.
    let tables = profile_tables(
        profile,
        options.cv_threshold,
        options.perturbation_threshold,
    );
    let layer_groups = report::groups(profile, &tables.rows, GroupBy::Layer);
    let by_phase = report::build_from(profile, tables, &options);
    let average = trace::average_iteration(profile, by_phase.breakdown.as_ref()).ok();
    let rows = event_data(profile, &by_phase.events, average.as_ref());
    let shapes = report::shape_table(&by_phase).map(|(headers, rows)| ShapeTable { headers, rows });
    let mut report = serde_json::to_value(&by_phase).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut report {
        map.remove("groups");
        map.insert(
            "events".to_owned(),
            serde_json::to_value(&rows).unwrap_or(Value::Null),
        );
    }
    // Each stretch no probe covers with its scatter as `prof report` writes it (`±29.70ms ?`):
    // the page shows that text, and recommends only the `reliable` stretches, as the report's
    // rule says.
    if let (Some(b), Some(gaps)) = (
        &by_phase.breakdown,
        report["breakdown"]["gaps"].as_array_mut(),
    ) {
        for (gap, value) in b.gaps.iter().zip(gaps) {
            if let Value::Object(map) = value {
                map.insert("scatter".to_owned(), Value::from(gap.scatter()));
            }
        }
    }
    let (wall_ns, stride) = thin(&profile.iterations.wall_ns, MAX_ITERATIONS);
    let diff = baseline.map(|before| {
        serde_json::to_value(diff::diff(before, profile, &DiffOptions::default()))
            .unwrap_or(Value::Null)
    });
    PageData {
        run: RunInfo::of(profile),
        report,
        groups: Groups {
            phase: by_phase.groups,
            layer: layer_groups,
        },
        iterations: IterationData {
            wall_ns,
            stride,
            first: profile.iterations.first,
            armed: armed(profile),
        },
        baseline: baseline.map(RunInfo::of),
        diff,
        flame: flame_svg(profile, baseline),
        shapes,
        average: average.map(|a| AverageStep {
            step_ns: a.step_ns,
            other: a.other,
        }),
    }
}

/// The flame graph the page embeds: `prof flame FILE` (`--diff BASELINE` when given).
fn flame_svg(profile: &Profile, baseline: Option<&Profile>) -> Option<String> {
    let options = flame::FlameOptions {
        baseline: baseline.map(std::slice::from_ref),
        ..flame::FlameOptions::default()
    };
    let svg = flame::flame(std::slice::from_ref(profile), &options)
        .ok()?
        .svg()
        .ok()?;
    // The frame's document is HTML: the XML declaration and the DTD's doctype are not needed,
    // nor inferno's comments (links to where flame graphs come from: the page names no URL).
    let mut rest = &svg[svg.find("<svg")?..];
    let mut out = String::with_capacity(rest.len());
    while let Some(open) = rest.find("<!--") {
        out.push_str(&rest[..open]);
        let close = rest[open..].find("-->")? + open + 3;
        rest = &rest[close..];
    }
    out.push_str(rest);
    Some(out)
}

/// Each report row with what the page draws beyond it, from the profile's event of the same
/// identity: where it comes from, its median start offset and where the average iteration
/// draws it (for the timeline) and its samples (for the histograms), thinned so that the page
/// stays within [`MAX_SAMPLES`].
fn event_data<'a>(
    profile: &'a Profile,
    rows: &'a [EventRow],
    average: Option<&AverageIteration>,
) -> Vec<EventData<'a>> {
    // By `order`, which is one event's alone: a probe run on two streams is two events of one
    // id and occurrence (counted per stream), whose data one key mixed.
    let events: HashMap<u32, (usize, &Event)> = (profile.events.iter().enumerate())
        .map(|(i, e)| (e.order, (i, e)))
        .collect();
    let n = rows.len().max(1);
    let per_event = (MAX_SAMPLES / n).clamp(SAMPLES_PER_EVENT.0, SAMPLES_PER_EVENT.1);
    rows.iter()
        .map(|row| {
            let found = events.get(&row.order).copied();
            let event = found.map(|(_, e)| e);
            let drawn_ns = found
                .zip(average)
                .and_then(|((i, _), a)| a.spans.get(i).copied().flatten());
            let (samples_ns, samples_stride) = thin(
                event.map(|e| e.samples_ns.as_slice()).unwrap_or(&[]),
                per_event,
            );
            let offset_ns = event
                .filter(|e| !e.offsets_ns.is_empty())
                .map(|e| stats::median(&stats::as_f64(&e.offsets_ns)));
            EventData {
                row,
                kind: event.map(|e| e.kind.as_str()),
                file: event.map(|e| e.file.as_str()),
                line: event.map(|e| e.line),
                offset_ns,
                drawn_ns,
                samples_ns,
                samples_stride,
                work_cells: work_cells(row),
                over_peak: row
                    .work
                    .as_ref()
                    .and_then(|w| w.mfu)
                    .is_some_and(profiler_tables::work::over_peak),
            }
        })
        .collect()
}

/// The cells of `row`'s achieved rates, by the header `prof report` gives them (`FLOP/s`,
/// `FLOP/s 95%`, `B/s`, `B/s 95%`, `FLOP/B`, `bound`, `MFU`), each written as the report writes
/// it (the same columns, [`profiler_tables::columns`]): the page shows these texts and never
/// formats a rate itself. `None` for an event without work.
fn work_cells(row: &EventRow) -> Option<HashMap<&'static str, String>> {
    row.work.as_ref()?;
    let families = Families {
        work: true,
        ..Families::default()
    };
    let place = Place::Report { indent: false };
    Some(
        profiler_tables::columns::shown(place, families)
            .filter(|c| c.family == Family::Work)
            .filter_map(|c| Some((c.header(place)?, (c.cell)(row, place))))
            .collect(),
    )
}

/// `sample` and `continuous` modes: the first and last iteration each event was armed in, with
/// its label; none in `trace` mode, where every event is armed in every measured iteration.
fn armed(profile: &Profile) -> Vec<(u32, u32, String)> {
    if !matches!(profile.run.mode.as_str(), "sample" | "continuous") {
        return Vec::new();
    }
    profile
        .events
        .iter()
        .filter_map(|e| {
            let first = *e.sample_iters.iter().min()?;
            let last = *e.sample_iters.iter().max()?;
            Some((first, last, label(&e.display_name(), e.occurrence)))
        })
        .collect()
}

/// Text for HTML content or a quoted attribute value.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON that can sit inside a `<script>` element: `<`, `>` and `&` (which JSON allows only in
/// strings) as `\u` escapes, so that neither `</script>` nor `<!--` can appear.
fn script_json<T: Serialize>(value: &T) -> String {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The summary shown when scripts are off.
fn noscript(data: &PageData) -> String {
    let mut out = String::new();
    let it = &data.report["iteration"];
    let median = it["median_ns"].as_f64().unwrap_or(f64::NAN);
    let _ = write!(
        out,
        "<noscript><div class=\"noscript\"><p><strong>This report draws its charts with \
         JavaScript, which is disabled.</strong> The main numbers follow; <code>prof report \
         prof.json</code> prints all of them in a terminal.</p><p>{} ({} mode{}): {} \
         iterations, median iteration {}.</p>",
        escape(data.run.program),
        escape(data.run.mode),
        if data.run.complete {
            ""
        } else {
            ", incomplete"
        },
        it["count"].as_u64().unwrap_or(0),
        escape(&crate::text::human_ns(median)),
    );
    let events = data.report["events"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    out.push_str(
        "<table><thead><tr><th class=\"l\">Event</th><th class=\"l\">Layer</th>\
         <th class=\"l\">Phase</th><th>Samples</th><th>Median</th><th>Share</th></tr></thead>\
         <tbody>",
    );
    for e in events.iter().take(NOSCRIPT_ROWS) {
        let text = |k: &str| e[k].as_str().unwrap_or("-").to_owned();
        // A duration of an event without samples is `-`, as `prof report` prints it (its
        // statistics are zeros, not measurements).
        let sampled = e["samples"].as_u64().unwrap_or(0) > 0;
        let ns = |k: &str| match sampled {
            true => crate::text::human_ns(e[k].as_f64().unwrap_or(f64::NAN)),
            false => "-".to_owned(),
        };
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>\
             <td>{}</td><td>{}</td><td>{:.1}%</td></tr>",
            escape(&label(
                &text("name"),
                e["occurrence"].as_u64().unwrap_or(0) as u32
            )),
            escape(&text("layer")),
            escape(&text("phase")),
            e["samples"].as_u64().unwrap_or(0),
            escape(&ns("median_ns")),
            100.0 * e["share"].as_f64().unwrap_or(0.0),
        );
    }
    out.push_str("</tbody></table>");
    if events.len() > NOSCRIPT_ROWS {
        let _ = write!(
            out,
            "<p>… and {} more events.</p>",
            events.len() - NOSCRIPT_ROWS
        );
    }
    // What to do about it: the report's findings, one line each.
    let advice = data.report["advice"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if !advice.is_empty() {
        out.push_str("<p>What to do about it (the most time at stake first):</p><ol>");
        for f in advice {
            let _ = write!(
                out,
                "<li>up to {}/iter: {}: {}</li>",
                escape(&crate::text::human_ns(
                    f["at_stake_ns"].as_f64().unwrap_or(f64::NAN)
                )),
                escape(f["id"].as_str().unwrap_or("-")),
                escape(f["title"].as_str().unwrap_or("-")),
            );
        }
        out.push_str("</ol>");
    }
    out.push_str("</div></noscript>\n");
    out
}

/// A self-contained HTML report (inline CSS and JS, no external resource), with the comparison
/// against `baseline` when given (baseline = before, profile = after).
pub fn html_report(profile: &Profile, baseline: Option<&Profile>) -> String {
    let data = page_data(profile, baseline);
    let title = match baseline {
        Some(b) => format!("{} vs {} — profile", profile.run.program, b.run.program),
        None => format!("{} — profile", profile.run.program),
    };
    let mut html = String::with_capacity(CSS.len() + JS.len() + 64 * 1024);
    html.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n",
    );
    let _ = writeln!(html, "<title>{}</title>", escape(&title));
    let _ = writeln!(html, "<style>\n{CSS}</style>\n</head>\n<body>");
    let _ = writeln!(html, "<script>\n{ERROR_JS}\n</script>");
    html.push_str(&noscript(&data));
    html.push_str(
        "<main>\n<div id=\"errors\" hidden><strong>The report could not be drawn completely \
         (please report this with the prof.json):</strong><ul></ul></div>\n\
         <div id=\"app\"></div>\n</main>\n",
    );
    let _ = writeln!(
        html,
        "<script type=\"application/json\" id=\"data\">{}</script>",
        script_json(&data)
    );
    let _ = writeln!(html, "<script>\n{JS}</script>\n</body>\n</html>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let s = script_json(&"</script><!-- & \u{2028}");
        assert!(!s.contains('<') && !s.contains('>'));
        assert_eq!(
            serde_json::from_str::<String>(&s).unwrap(),
            "</script><!-- & \u{2028}"
        );
    }

    /// Events `a` (1,000 FLOPs and 400 bytes in 100 ns), `b` (3,000 FLOPs in 100 ns: more
    /// than the peak) and `c` (no work keys), against a given peak of 2e10 FLOP/s and 1e9 B/s;
    /// without `work`, none counts its work.
    fn with_work(work: bool) -> Profile {
        let event = |order: u32, name: &str, flops: Option<u64>, bytes: Option<u64>| Event {
            id: format!("m::{name}"),
            name: name.to_owned(),
            layer: Some("mlp".to_owned()),
            kind: "fn".to_owned(),
            order,
            samples_ns: vec![100; 3],
            offsets_ns: vec![0; 3],
            sample_iters: vec![2, 3, 4],
            stats: profiler_format::Stats::of(&[100; 3]),
            work: (work && (flops.is_some() || bytes.is_some())).then(|| {
                profiler_format::SampleWork {
                    flops: flops.map(|f| vec![f; 3]),
                    bytes: bytes.map(|b| vec![b; 3]),
                }
            }),
            ..Default::default()
        };
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
                warmup: 2,
                repeat: 3,
                clock: "fake".to_owned(),
                max_events: 4096,
                timer_floor_ns: 20,
                profiler_version: "0".to_owned(),
                windows: None,
                on_demand: None,
                delay: None,
                peak: Some(profiler_format::peak::Peak {
                    schema: profiler_format::peak::PEAK_SCHEMA.to_owned(),
                    flops: Some(2e10),
                    bytes: Some(1e9),
                    source: "given".to_owned(),
                    detail: "PROF_PEAK_FLOPS=2e10".to_owned(),
                    host: String::new(),
                }),
            },
            iterations: profiler_format::Iterations {
                first: 0,
                count: 5,
                wall_ns: vec![1000; 5],
                device_memory: Vec::new(),
            },
            events: vec![
                event(0, "a", Some(1000), Some(400)),
                event(1, "b", Some(3000), None),
                event(2, "c", None, None),
            ],
            windows: Vec::new(),
            before_loop: Vec::new(),
            cpu_samples: None,
        }
    }

    /// The page's data of `profile`, as its script reads it.
    fn data_of(profile: &Profile) -> Value {
        let html = html_report(profile, None);
        let open = "<script type=\"application/json\" id=\"data\">";
        let start = html.find(open).unwrap() + open.len();
        let len = html[start..].find("</script>").unwrap();
        serde_json::from_str(&html[start..start + len]).unwrap()
    }

    #[test]
    fn events_with_work_carry_the_reports_rate_cells() {
        let data = data_of(&with_work(true));
        let events = data["report"]["events"].as_array().unwrap();
        let cells = |i: usize| &events[i]["work_cells"];
        // `a`: 1e10 FLOP/s, half the peak; 4e9 B/s; 2.5 FLOP/B, under the ridge of 20: the
        // texts of `prof report`'s columns, by their headers.
        let a = cells(0);
        for (header, text) in [
            ("FLOP/s", "10.0G"),
            ("FLOP/s 95%", "10.0G-10.0G"),
            ("B/s", "4.00G"),
            ("B/s 95%", "4.00G-4.00G"),
            ("FLOP/B", "2.50"),
            ("bound", "memory"),
            ("MFU", "50.0%"),
        ] {
            assert_eq!(a[header], text, "{header}: {a}");
        }
        assert!(events[0].get("over_peak").is_none());
        // `b`: 3e10 FLOP/s against a peak of 2e10: flagged as `prof report` flags it.
        assert_eq!(
            cells(1)["MFU"],
            "150% >100%! check the peak or the flops key"
        );
        assert_eq!(cells(1)["B/s"], "-");
        assert_eq!(events[1]["over_peak"], true);
        // `c` counts nothing: no cells.
        assert!(events[2].get("work_cells").is_none());
        // No shape key, no shape table; with one, prof report's table.
        assert!(data.get("shapes").is_none());
        let mut shaped = with_work(true);
        shaped.events[0].shapes = Some(profiler_format::Shapes {
            values: vec!["8x4".to_owned()],
            sample_shapes: vec![Some(0), Some(0), None],
            others: 1,
        });
        let table = &data_of(&shaped)["shapes"];
        assert_eq!(table["headers"][4], "shape");
        assert_eq!(table["rows"][0][4], "8x4");
        assert_eq!(table["rows"][1][4], "others (1 shape)");
        assert!(JS.contains("D.shapes"));
        // The peak's source, and the report's line on the work, for the page to show.
        assert_eq!(data["report"]["peak"]["source"], "given");
        let line = data["report"]["work"].as_str().unwrap();
        assert!(line.contains("(given: PROF_PEAK_FLOPS=2e10)"), "{line}");
        // The script draws the columns from these cells (drawn in a browser by
        // profiler-cli/tests/prof/html_chromium.rs).
        for wired in [
            "e.work_cells",
            "e.over_peak",
            "rep.work",
            "'MFU'",
            "'FLOP/s 95%'",
        ] {
            assert!(JS.contains(wired), "the script does not read {wired}");
        }
        // Without work keys, no event has cells, and the script adds no column.
        let data = data_of(&with_work(false));
        let events = data["report"]["events"].as_array().unwrap();
        assert!(events.iter().all(|e| e.get("work_cells").is_none()));
    }

    /// The stretches no probe covers, on the page as in `prof report`: each with its scatter as
    /// the report writes it (`±18.1µs ?`), and the script recommends only those that stand out
    /// of it (drawn in a browser by profiler-cli/tests/prof/html_chromium.rs).
    #[test]
    fn gaps_carry_the_reports_scatter_and_only_reliable_ones_are_recommended() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../profiler-cli/tests/data/html/before.json"
        );
        let profile = crate::load_profile(path).unwrap();
        let report = report::build(&profile, &ReportOptions::default());
        let b = report.breakdown.as_ref().unwrap();
        assert!(b.gaps.iter().any(|g| g.reliable), "{:?}", b.gaps);
        assert!(b.gaps.iter().any(|g| !g.reliable), "{:?}", b.gaps);
        let table = report::render(&report, crate::Format::Table);
        let data = data_of(&profile);
        let gaps = data["report"]["breakdown"]["gaps"].as_array().unwrap();
        assert_eq!(gaps.len(), b.gaps.len());
        for (g, shown) in b.gaps.iter().zip(gaps) {
            let scatter = shown["scatter"].as_str().unwrap();
            assert_eq!(scatter, g.scatter());
            assert!(table.contains(scatter), "{scatter} is not in\n{table}");
            assert_eq!(shown["reliable"], g.reliable);
            assert_eq!(scatter.ends_with(" ?"), !g.reliable, "{scatter}");
        }
        for wired in [
            "g.scatter",
            "g.reliable === true",
            "where to put the next probe!",
        ] {
            assert!(JS.contains(wired), "the script does not have {wired}");
        }
    }

    /// A probe run on two streams is two events of one id and occurrence (counted per
    /// stream): each row of the page carries its own event's samples. Before, the rows were
    /// matched to events by id and occurrence, and one event's samples went to both rows.
    #[test]
    fn events_of_one_probe_on_two_streams_keep_their_own_samples() {
        let event = |order: u32, stream: &str, ns: u64| Event {
            id: "m::copy".to_owned(),
            name: "copy".to_owned(),
            kind: "probe".to_owned(),
            order,
            device: Some(0),
            stream: Some(stream.to_owned()),
            samples_ns: vec![ns; 3],
            offsets_ns: vec![0; 3],
            sample_iters: vec![2, 3, 4],
            stats: profiler_format::Stats::of(&[ns; 3]),
            ..Default::default()
        };
        let mut profile = with_work(false);
        profile.events = vec![event(0, "7", 1_000), event(1, "8", 2_000)];
        let data = data_of(&profile);
        let rows = data["report"]["events"].as_array().unwrap();
        for (row, ns) in rows.iter().zip([1_000u64, 2_000]) {
            assert_eq!(row["samples_ns"][0], ns, "{row}");
        }
    }

    #[test]
    fn thinning() {
        let v: Vec<u64> = (0..10).collect();
        assert_eq!(thin(&v, 100), (v.clone(), 1));
        assert_eq!(thin(&v, 5), (vec![0, 2, 4, 6, 8], 2));
        assert_eq!(thin(&v, 3), (vec![0, 4, 8], 4));
        assert_eq!(thin(&[], 3), (vec![], 1));
    }
}
