//! How each event's time grows with a parameter: `prof scale a.json b.json c.json --param
//! batch=256,512,1024`.
//!
//! Each run is tagged with the parameter's value (batch size, GPU count, sequence length...); the
//! runs are sorted by it: p_0 < p_1 < ... Events are matched across runs by identity ([`event_key`],
//! probe id and occurrence), in the order of their first appearance; an event missing from a run
//! has no time there. An event's time t_i in run i is the median of its samples (`samples_ns`;
//! the recorded `stats.median_ns` when the samples were not kept); the whole iteration is a row
//! too, with the median wall time of the run's measured iterations (index >= `run.warmup`; all
//! of them when there is none; in `continuous` mode, the last window's, see
//! [`measured_walls`](profiler_tables::rows::measured_walls)).
//!
//! - **ratio** r_i = t_i / t_0: how the time grew from the first (smallest) value.
//! - **efficiency** e_i: the ideal growth over the actual one, against run 0; 1 is ideal scaling,
//!   below 1 worse than ideal, above 1 better. What is ideal depends on the parameter ([`Ideal`]):
//!   - `linear` (work grows with the parameter, e.g. batch size: the time per item should stay
//!     the same): e_i = (p_i / p_0) / (t_i / t_0);
//!   - `inverse` (strong scaling, e.g. GPU count for a fixed problem: time should shrink as 1/p):
//!     e_i = (t_0 / t_i) / (p_i / p_0);
//!   - `constant` (the time should not change, e.g. weak scaling): e_i = t_0 / t_i.
//! - **step efficiency**: the same between consecutive values (run i - 1 in place of run 0),
//!   which shows where the scaling breaks down; none for the first run.
//!
//! A value is `None` (empty in CSV, `null` in JSON, `-` in tables) where a time it needs is
//! unknown or zero.

use serde::Serialize;

use super::text;
use super::{event_key, event_time, stats, Format};
use profiler_format::{Event, Identity, Profile};

/// How an event's time should ideally grow with the parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ideal {
    /// In proportion to the parameter (batch size): efficiency = (p_i / p_0) / (t_i / t_0).
    Linear,
    /// In inverse proportion (strong scaling over GPUs): efficiency = (t_0 / t_i) / (p_i / p_0).
    Inverse,
    /// Not at all: efficiency = t_0 / t_i.
    Constant,
}

impl Ideal {
    /// `"linear"`, `"inverse"` or `"constant"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Ideal::Linear => "linear",
            Ideal::Inverse => "inverse",
            Ideal::Constant => "constant",
        }
    }

    /// Efficiency of going from parameter `p0` and time `t0` to `p1` and `t1`.
    pub fn efficiency(self, p0: f64, t0: f64, p1: f64, t1: f64) -> Option<f64> {
        if !(t0 > 0.0 && t1 > 0.0 && p0 > 0.0 && p1 > 0.0) {
            return None;
        }
        let e = match self {
            Ideal::Linear => (p1 / p0) / (t1 / t0),
            Ideal::Inverse => (t0 / t1) / (p1 / p0),
            Ideal::Constant => t0 / t1,
        };
        e.is_finite().then_some(e)
    }

    fn meaning(self) -> &'static str {
        match self {
            Ideal::Linear => "time should grow in proportion to",
            Ideal::Inverse => "time should shrink in inverse proportion to",
            Ideal::Constant => "time should stay the same whatever",
        }
    }
}

/// One event (or the iteration) across the runs, in the order of [`Scaling::values`].
#[derive(Clone, Debug, Serialize)]
pub struct ScaleRow {
    /// Which event (`id` and `name` `"iteration"` for the whole iteration); flattened, so that
    /// JSON has its `id`, `name`, `layer`, `phase` and `occurrence` as keys of the row.
    #[serde(flatten)]
    pub identity: Identity,
    /// Median time in each run; `None` where the event is absent.
    pub times_ns: Vec<Option<f64>>,
    /// t_i / t_0.
    pub ratio: Vec<Option<f64>>,
    /// Efficiency against run 0 (1 for run 0 itself).
    pub efficiency: Vec<Option<f64>>,
    /// Efficiency against the previous run; `None` for the first.
    pub step_efficiency: Vec<Option<f64>>,
}

/// How every event scales with a parameter.
#[derive(Clone, Debug, Serialize)]
pub struct Scaling {
    /// The parameter's name (`batch`, `gpus`...).
    pub param: String,
    /// Its value in each run, ascending.
    pub values: Vec<f64>,
    /// The ideal the efficiencies are measured against.
    pub ideal: Ideal,
    /// The whole iteration (`id` and `name` `"iteration"`).
    pub iteration: ScaleRow,
    /// The events, in the order of their first appearance (run 0's order first).
    pub events: Vec<ScaleRow>,
}

/// Median wall time of the measured iterations (index >= warmup; all when none is).
pub(crate) fn iteration_time(p: &Profile) -> Option<f64> {
    let measured = profiler_tables::rows::measured_walls(p);
    (!measured.is_empty()).then(|| stats::median(&stats::as_f64(measured)))
}

/// A row with its identity taken from `e` (or the iteration's when `None`).
fn row(e: Option<&Event>, times_ns: Vec<Option<f64>>, values: &[f64], ideal: Ideal) -> ScaleRow {
    let t0 = times_ns[0];
    let ratio = times_ns
        .iter()
        .map(|t| match (t0, *t) {
            (Some(t0), Some(t)) if t0 > 0.0 => Some(t / t0),
            _ => None,
        })
        .collect();
    let efficiency = times_ns
        .iter()
        .zip(values)
        .map(|(t, &p)| ideal.efficiency(values[0], t0?, p, (*t)?))
        .collect();
    let step_efficiency = (0..times_ns.len())
        .map(|i| {
            if i == 0 {
                return None;
            }
            ideal.efficiency(values[i - 1], times_ns[i - 1]?, values[i], times_ns[i]?)
        })
        .collect();
    ScaleRow {
        identity: e.map_or_else(|| Identity::named("iteration"), Event::identity),
        times_ns,
        ratio,
        efficiency,
        step_efficiency,
    }
}

/// Scaling of every event with the parameter `param`, one run per value (in any order: they are
/// sorted by value). Errors: fewer than 2 runs, a value that is not a positive finite number, or
/// the same value twice.
pub fn scale(runs: &[(f64, &Profile)], param: &str, ideal: Ideal) -> Result<Scaling, String> {
    if runs.len() < 2 {
        return Err(format!("scaling needs at least 2 runs, got {}", runs.len()));
    }
    if let Some((v, _)) = runs.iter().find(|(v, _)| !(v.is_finite() && *v > 0.0)) {
        return Err(format!(
            "{param}={v}: every value of the parameter must be a positive number"
        ));
    }
    let mut runs: Vec<(f64, &Profile)> = runs.to_vec();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let Some(w) = runs.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!(
            "{param}={} is given twice: give each run its own value",
            w[0].0
        ));
    }
    let values: Vec<f64> = runs.iter().map(|r| r.0).collect();

    // Events in order of first appearance; the first of duplicated keys in a run wins.
    let mut keys: Vec<(String, u32)> = Vec::new();
    let mut first: Vec<&Event> = Vec::new();
    let mut index = std::collections::HashMap::new();
    let mut per_run: Vec<std::collections::HashMap<(String, u32), &Event>> = Vec::new();
    for (_, p) in &runs {
        let mut map = std::collections::HashMap::new();
        for e in &p.events {
            let key = event_key(e);
            if !index.contains_key(&key) {
                index.insert(key.clone(), keys.len());
                keys.push(key.clone());
                first.push(e);
            }
            map.entry(key).or_insert(e);
        }
        per_run.push(map);
    }
    let events = keys
        .iter()
        .zip(&first)
        .map(|(key, e)| {
            let times = per_run
                .iter()
                .map(|m| m.get(key).and_then(|e| event_time(e)))
                .collect();
            row(Some(e), times, &values, ideal)
        })
        .collect();
    let iteration_times = runs.iter().map(|(_, p)| iteration_time(p)).collect();
    let iteration = row(None, iteration_times, &values, ideal);
    Ok(Scaling {
        param: param.to_owned(),
        values,
        ideal,
        iteration,
        events,
    })
}

/// A parameter value without needless decimals: `256`, `0.5`.
fn value_text(v: f64) -> String {
    text::num_sci(v)
}

/// An efficiency as a whole percentage (`85%`), `-` when there is none; from 100 times on as a
/// factor (`x2.0e9`), where a percentage would be a string of digits.
fn whole_percent(v: Option<f64>) -> String {
    match v {
        None => "-".to_owned(),
        Some(v) if v.abs() >= 100.0 && v.is_finite() => format!("x{v:.1e}"),
        Some(v) => format!("{:.0}%", 100.0 * v),
    }
}

/// Prints a scaling: times per value, then the efficiency against the first value and per step.
/// CSV has one row per event (the iteration first) and value: `id, name, layer, phase,
/// occurrence, <param>, time_ns, ratio, efficiency, step_efficiency`.
pub fn render(scaling: &Scaling, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(scaling).unwrap_or_default() + "\n",
        Format::Csv => render_csv(scaling),
        Format::Table | Format::Markdown => {
            text::for_terminal(render_text(scaling, format == Format::Markdown))
        }
    }
}

fn render_csv(s: &Scaling) -> String {
    let mut out = format!(
        "id,name,layer,phase,occurrence,{},time_ns,ratio,efficiency,step_efficiency\n",
        text::csv_field(&s.param)
    );
    let opt = |v: Option<f64>| v.map(text::num_sci).unwrap_or_default();
    for r in std::iter::once(&s.iteration).chain(&s.events) {
        for (i, v) in s.values.iter().enumerate() {
            out.push_str(&format!(
                "{},{},{},{},{},{}\n",
                text::identity_csv(&r.identity).join(","),
                text::num_sci(*v),
                opt(r.times_ns[i]),
                opt(r.ratio[i]),
                opt(r.efficiency[i]),
                opt(r.step_efficiency[i]),
            ));
        }
    }
    out
}

/// The table: the identity columns, then a time per value, then the efficiencies against the
/// first value and per step (none for the first value, which they are measured from).
fn text_headers(s: &Scaling) -> Vec<String> {
    let mut headers: Vec<String> = ["layer", "phase", "name", "occ"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    for v in &s.values {
        headers.push(format!("{}={}", s.param, value_text(*v)));
    }
    for v in &s.values[1..] {
        headers.push(format!("eff {}", value_text(*v)));
    }
    for v in &s.values[1..] {
        headers.push(format!("step {}", value_text(*v)));
    }
    headers
}

/// The cells of a row under [`text_headers`].
fn text_cells(r: &ScaleRow, iteration: bool) -> Vec<String> {
    let mut c = text::identity_cells(&r.identity, iteration);
    c.extend(
        r.times_ns
            .iter()
            .map(|t| t.map_or_else(|| "-".to_owned(), crate::text::human_ns)),
    );
    c.extend(r.efficiency[1..].iter().map(|&e| whole_percent(e)));
    c.extend(r.step_efficiency[1..].iter().map(|&e| whole_percent(e)));
    c
}

/// The line above the table: the parameter, its values, the ideal and how to read the columns.
fn intro(s: &Scaling) -> String {
    format!(
        "scaling with {} ({}), ideal {}: {} {}; eff = efficiency against {}={}, step = \
         against the previous value; 100% is ideal, below is worse\n",
        s.param,
        s.values
            .iter()
            .map(|v| value_text(*v))
            .collect::<Vec<_>>()
            .join(", "),
        s.ideal.as_str(),
        s.ideal.meaning(),
        s.param,
        s.param,
        value_text(s.values[0]),
    )
}

/// The lines below the table: the least efficient events at the largest value, and how many
/// events some runs lack; each line starts with `bullet`.
fn footnotes(s: &Scaling, bullet: &str) -> String {
    let mut out = String::new();
    let last = s.values.len() - 1;
    let mut worst: Vec<(&ScaleRow, f64)> = s
        .events
        .iter()
        .filter_map(|r| Some((r, r.efficiency[last]?)))
        .collect();
    worst.sort_by(|a, b| a.1.total_cmp(&b.1));
    if !worst.is_empty() {
        let names: Vec<String> = worst
            .iter()
            .take(3)
            .map(|(r, e)| format!("{} ({})", text::label(&r.identity), whole_percent(Some(*e))))
            .collect();
        out.push_str(&format!(
            "{bullet}least efficient at {}={}: {}\n",
            s.param,
            value_text(s.values[last]),
            names.join(", ")
        ));
    }
    let absent = s
        .events
        .iter()
        .filter(|r| r.times_ns.iter().any(Option::is_none))
        .count();
    if absent > 0 {
        out.push_str(&format!(
            "{bullet}{absent} event{} missing from some runs (-)\n",
            if absent == 1 { " is" } else { "s are" }
        ));
    }
    out
}

fn render_text(s: &Scaling, markdown: bool) -> String {
    let headers = text_headers(s);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut rows = vec![text_cells(&s.iteration, true)];
    rows.extend(s.events.iter().map(|r| text_cells(r, false)));
    let mut out = intro(s);
    if markdown {
        out.push('\n');
        out.push_str(&text::markdown(&headers, &rows));
    } else {
        out.push_str(&text::aligned(&headers, &rows, 3));
    }
    out.push_str(&footnotes(s, if markdown { "\n" } else { "" }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::tests::{event, profile, Spec};

    /// A run with one sample per event (times in ns) and a constant iteration time.
    fn run(events: &[(&'static str, f64)], iteration: u64) -> Profile {
        let events = events
            .iter()
            .enumerate()
            .map(|(k, &(name, t))| {
                let spec: Spec = (name, Some("layer"), Some("fwd"), 0, t);
                event(
                    &spec,
                    vec![t as u64, t as u64, t as u64],
                    vec![1, 2, 3],
                    k as u32,
                )
            })
            .collect();
        profile(
            0,
            1,
            3,
            vec![999_999, iteration, iteration, iteration],
            events,
        )
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    /// An extreme efficiency reads as a factor, not as `200000000000%`.
    #[test]
    fn extreme_efficiencies_read_as_factors() {
        assert_eq!(whole_percent(Some(0.85)), "85%");
        assert_eq!(whole_percent(Some(99.4)), "9940%");
        assert_eq!(whole_percent(Some(2e9)), "x2.0e9");
        assert_eq!(whole_percent(None), "-");
    }

    #[test]
    fn linear_scaling_efficiencies() {
        // Batch 256 -> 512 -> 1024. "ideal" doubles each time; "sublinear" grows less (better
        // than ideal per item); "bad" quadruples.
        let a = run(
            &[("ideal", 1000.0), ("sublinear", 1000.0), ("bad", 1000.0)],
            10_000,
        );
        let b = run(
            &[("ideal", 2000.0), ("sublinear", 1500.0), ("bad", 4000.0)],
            20_000,
        );
        let c = run(
            &[("ideal", 4000.0), ("sublinear", 2000.0), ("bad", 16000.0)],
            50_000,
        );
        // Given out of order: sorted by value.
        let s = scale(
            &[(1024.0, &c), (256.0, &a), (512.0, &b)],
            "batch",
            Ideal::Linear,
        )
        .unwrap();
        assert_eq!(s.values, [256.0, 512.0, 1024.0]);
        assert_eq!(s.events.len(), 3);
        let ideal = &s.events[0];
        assert_eq!(ideal.times_ns, [Some(1000.0), Some(2000.0), Some(4000.0)]);
        assert!(close(ideal.ratio[2], 4.0));
        assert!(ideal.efficiency.iter().all(|&e| close(e, 1.0)));
        assert_eq!(ideal.step_efficiency[0], None);
        assert!(close(ideal.step_efficiency[2], 1.0));
        let sub = &s.events[1];
        assert!(close(sub.efficiency[1], 2.0 / 1.5));
        assert!(close(sub.efficiency[2], 4.0 / 2.0));
        assert!(close(sub.step_efficiency[2], 2.0 / (2000.0 / 1500.0)));
        let bad = &s.events[2];
        assert!(close(bad.efficiency[1], 0.5));
        assert!(close(bad.efficiency[2], 0.25));
        assert!(close(bad.step_efficiency[2], 0.5));
        // The iteration: 10µs -> 20µs -> 50µs (warmup excluded).
        assert_eq!(s.iteration.identity.id, "iteration");
        assert_eq!(
            s.iteration.times_ns,
            [Some(10_000.0), Some(20_000.0), Some(50_000.0)]
        );
        assert!(close(s.iteration.efficiency[2], 4.0 / 5.0));
        assert!(close(s.iteration.step_efficiency[2], 2.0 / 2.5));
        let text = render(&s, Format::Table);
        assert!(
            text.contains("batch=256") && text.contains("eff 1024") && text.contains("step 512")
        );
        assert!(
            text.contains("least efficient at batch=1024: layer/fwd bad (25%)"),
            "{text}"
        );
    }

    #[test]
    fn inverse_and_constant_efficiencies() {
        // 1, 2, 4 GPUs: "ideal" halves each time; "flat" does not shrink at all.
        let a = run(&[("ideal", 8000.0), ("flat", 1000.0)], 9_000);
        let b = run(&[("ideal", 4000.0), ("flat", 1000.0)], 5_000);
        let c = run(&[("ideal", 2000.0), ("flat", 1000.0)], 3_000);
        let s = scale(&[(1.0, &a), (2.0, &b), (4.0, &c)], "gpus", Ideal::Inverse).unwrap();
        assert!(s.events[0].efficiency.iter().all(|&e| close(e, 1.0)));
        assert!(close(s.events[1].efficiency[2], 0.25));
        assert!(close(s.events[1].step_efficiency[1], 0.5));
        assert!(close(s.iteration.efficiency[2], 9.0 / 3.0 / 4.0));
        let s = scale(&[(1.0, &a), (2.0, &b), (4.0, &c)], "gpus", Ideal::Constant).unwrap();
        assert!(close(s.events[0].efficiency[2], 4.0));
        assert!(s.events[1].efficiency.iter().all(|&e| close(e, 1.0)));
        assert!(close(s.events[0].step_efficiency[1], 2.0));
    }

    #[test]
    fn missing_events_and_bad_parameters() {
        let a = run(&[("x", 1000.0), ("only_a", 10.0)], 5_000);
        let b = run(&[("x", 2000.0), ("only_b", 10.0)], 5_000);
        let s = scale(&[(1.0, &a), (2.0, &b)], "n", Ideal::Linear).unwrap();
        let ids: Vec<&str> = s.events.iter().map(|r| r.identity.name.as_str()).collect();
        assert_eq!(ids, ["x", "only_a", "only_b"]);
        assert_eq!(s.events[1].times_ns, [Some(10.0), None]);
        assert_eq!(s.events[1].efficiency, [Some(1.0), None]);
        assert_eq!(s.events[2].ratio, [None, None]);
        assert_eq!(s.events[2].efficiency, [None, None]);
        assert!(render(&s, Format::Table).contains("2 events are missing from some runs"));
        assert!(scale(&[(1.0, &a)], "n", Ideal::Linear).is_err());
        assert!(scale(&[(1.0, &a), (1.0, &b)], "n", Ideal::Linear)
            .unwrap_err()
            .contains("twice"));
        assert!(scale(&[(0.0, &a), (1.0, &b)], "n", Ideal::Linear).is_err());
        assert!(scale(&[(-1.0, &a), (1.0, &b)], "n", Ideal::Linear).is_err());
        assert!(scale(&[(f64::NAN, &a), (1.0, &b)], "n", Ideal::Linear).is_err());
    }

    #[test]
    fn renders_every_format() {
        let a = run(&[("x", 1000.0), ("y", 10.0)], 5_000);
        let b = run(&[("x", 2000.0)], 8_000);
        let s = scale(&[(256.0, &a), (512.0, &b)], "batch", Ideal::Linear).unwrap();
        let csv = render(&s, Format::Csv);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "id,name,layer,phase,occurrence,batch,time_ns,ratio,efficiency,step_efficiency"
        );
        assert_eq!(lines.len(), 1 + 3 * 2);
        assert_eq!(lines[1], "iteration,iteration,,,0,256,5000,1,1,");
        assert_eq!(lines[2], "iteration,iteration,,,0,512,8000,1.6,1.25,1.25");
        assert_eq!(lines[6], "layer::y,y,layer,fwd,0,512,,,,");
        let json: serde_json::Value = serde_json::from_str(&render(&s, Format::Json)).unwrap();
        assert_eq!(json["ideal"], "linear");
        assert_eq!(json["values"], serde_json::json!([256.0, 512.0]));
        assert!(json["events"][1]["times_ns"][1].is_null());
        let md = render(&s, Format::Markdown);
        assert!(md.contains(
            "| layer | phase | name | occ | batch=256 | batch=512 | eff 512 | step 512 |"
        ));
        assert!(md.contains("| 2.0µs | 100% | 100% |"), "{md}");
    }
}
