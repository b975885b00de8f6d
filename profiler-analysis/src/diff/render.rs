//! Rendering a [`Diff`] as a table, CSV, JSON or Markdown.

use super::*;
use profiler_format::identity::display_name;

/// Prints a comparison: a table with one row for the iteration and one per event, the events
/// found in only one run, counts, and a closing line naming the regressions, or saying that the
/// comparison is inconclusive (a regression of the threshold's size could have gone unseen),
/// or `no regression`.
/// CSV and JSON give times in nanoseconds and ratios as numbers; CSV lists the events found in
/// one run only as rows with the verdict `only before` or `only after`.
pub fn render(diff: &Diff, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(diff).unwrap_or_default() + "\n",
        Format::Csv => render_csv(diff),
        Format::Table | Format::Markdown => {
            text::for_terminal(render_text(diff, format == Format::Markdown))
        }
    }
}

pub(super) const CSV_HEADER: &str =
    "id,name,layer,phase,occurrence,before_n,after_n,before_ns,after_ns,before_median_ns,\
after_median_ns,ratio,ci_low,ci_high,p_value,p_adjusted,verdict,allowance,detectable,\
typical_ratio,typical,share,matters";

fn render_csv(diff: &Diff) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for d in std::iter::once(&diff.iteration).chain(&diff.events) {
        let [id, name, layer, phase, occurrence] = text::identity_csv(&d.identity);
        let fields = [
            id,
            name,
            layer,
            phase,
            occurrence,
            d.before_n.to_string(),
            d.after_n.to_string(),
            text::num_sci(d.before_ns),
            text::num_sci(d.after_ns),
            text::num_sci(d.before_median_ns),
            text::num_sci(d.after_median_ns),
            text::num_sci(d.ratio),
            text::num_sci(d.ci_low),
            text::num_sci(d.ci_high),
            text::num_sci(d.p_value),
            text::num_sci(d.p_adjusted),
            d.verdict.as_str().to_owned(),
            text::num_sci(d.allowance),
            d.detectable.map_or_else(String::new, text::num_sci),
            text::num_sci(d.typical_ratio),
            d.typical
                .map_or_else(String::new, |v| v.as_str().to_owned()),
            text::num_sci(d.share),
            d.matters.to_string(),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    for (list, verdict) in [
        (&diff.only_before, "only before"),
        (&diff.only_after, "only after"),
    ] {
        for m in list {
            out.push_str(&format!(
                "{},{},,,{},,,,,,,,,,,,{verdict},,,,,,\n",
                text::csv_field(&m.id),
                text::csv_field(&m.name),
                m.occurrence
            ));
        }
    }
    out
}

fn missing_label(m: &Missing) -> String {
    let name = display_name(&m.id, &m.name);
    let label = if m.occurrence > 0 {
        format!("{name}#{} ({})", m.occurrence, m.id)
    } else {
        format!("{name} ({})", m.id)
    };
    text::printable(&label).into_owned()
}

/// A change as a signed percentage: ratio 1.312 -> `+31.2%`; from 10 times on as a factor
/// (`x12.5`), and past 100 times as `>x100`, where a percentage would only be noise.
pub(crate) fn change(ratio: f64) -> String {
    if !ratio.is_finite() {
        "-".to_owned()
    } else if ratio >= 100.0 {
        ">x100".to_owned()
    } else if ratio >= 10.0 {
        format!("x{ratio:.1}")
    } else {
        format!("{:+.1}%", 100.0 * (ratio - 1.0))
    }
}

fn p_text(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

const TEXT_HEADERS: [&str; 12] = [
    "layer",
    "phase",
    "name",
    "occ",
    "share",
    "before",
    "after",
    "change",
    "95% CI",
    "detectable",
    "p (adj)",
    "verdict",
];

/// The smallest change a row could call a regression: `12.0%` (a factor from 10 times on),
/// `none` when its sample counts are too small for any, `-` when a side has no sample.
fn detectable_text(d: &EventDiff) -> String {
    match d.detectable {
        Some(x) if x >= 9.0 => change(1.0 + x),
        Some(x) => crate::text::percent(x),
        None if d.before_n > 0 && d.after_n > 0 => "none".to_owned(),
        None => "-".to_owned(),
    }
}

fn text_cells(d: &EventDiff, iteration: bool) -> Vec<String> {
    let ci = if d.ci_low.is_finite() || d.ci_high.is_finite() {
        format!("{} .. {}", change(d.ci_low), change(d.ci_high))
    } else {
        "-".to_owned()
    };
    let times = |v: f64, n: usize| {
        if n == 0 {
            "-".to_owned()
        } else {
            crate::text::human_ns(v)
        }
    };
    let share = if iteration {
        "-".to_owned()
    } else if d.share.is_finite() {
        crate::text::percent(d.share)
    } else {
        "?".to_owned()
    };
    let verdict = if iteration || d.matters {
        d.verdict.as_str().to_owned()
    } else {
        // Reported, never deciding the gate.
        format!("({})", d.verdict.as_str())
    };
    let mut cells = text::identity_cells(&d.identity, iteration);
    cells.extend([
        share,
        times(d.before_ns, d.before_n),
        times(d.after_ns, d.after_n),
        change(d.ratio),
        ci,
        detectable_text(d),
        p_text(d.p_adjusted),
        verdict,
    ]);
    cells
}

fn render_text(diff: &Diff, markdown: bool) -> String {
    let mut rows = vec![text_cells(&diff.iteration, true)];
    rows.extend(diff.events.iter().map(|d| text_cells(d, false)));
    let mut out = if markdown {
        text::markdown(&TEXT_HEADERS, &rows)
    } else {
        text::aligned(&TEXT_HEADERS, &rows, 3)
    };
    let bullet = if markdown { "\n" } else { "" };
    for (list, which) in [(&diff.only_before, "before"), (&diff.only_after, "after")] {
        if !list.is_empty() {
            let names: Vec<String> = list.iter().map(missing_label).collect();
            out.push_str(&format!(
                "{bullet}only in {which} ({}): {}\n",
                list.len(),
                names.join(", ")
            ));
        }
    }
    let all: Vec<&EventDiff> = std::iter::once(&diff.iteration)
        .chain(&diff.events)
        .collect();
    let count = |v: Verdict| diff.events.iter().filter(|d| d.verdict == v).count();
    let intervals = match (diff.runs_compared, diff.paired) {
        (Some(_), true) => "each interval is of the rounds' ratios, paired".to_owned(),
        (Some(_), false) => "each interval is of the runs' times, Welch's t".to_owned(),
        (None, _) => format!(
            "each interval is of the event's change, widened by how far these events moved \
             between the runs (\u{b1}{:.1}%) and towards no change by their shared shift",
            100.0 * diff.machine.spread
        ),
    };
    out.push_str(&format!(
        "{bullet}iteration: {}; {} events: {} regressed, {} improved, {} within noise, {} no \
         change, {} inconclusive (threshold {}%, alpha {}, Holm over {} tests; {intervals})\n",
        diff.iteration.verdict.as_str(),
        diff.events.len(),
        count(Verdict::Regressed),
        count(Verdict::Improved),
        count(Verdict::WithinNoise),
        count(Verdict::NoChange),
        count(Verdict::Inconclusive),
        100.0 * diff.threshold,
        diff.alpha,
        all.len()
    ));
    out.push_str(&format!(
        "{bullet}before, after, change: the {} time of each run's samples (the code's cost, \
         which a busy machine's delays cannot move; the typical time, the median, is in \
         --format json); share: of the iteration's; a verdict in parentheses does not decide \
         the gate: the event is below {t}% of the iteration and its change did not move the \
         iteration by {t}%, or it is inconclusive and what its interval leaves open could not \
         move the iteration by {t}% (share x reach)\n",
        diff.estimator,
        t = 100.0 * diff.threshold,
    ));
    if let Some((b, a)) = diff.runs_compared {
        out.push_str(&if diff.paired {
            format!(
                "{bullet}runs: {b} rounds, each a before and an after run adjacent; each event \
                 is compared round by round (the ratio within a round, Student's t over the \
                 rounds: a machine that changes over minutes falls on both runs of a round)\n"
            )
        } else {
            format!(
                "{bullet}runs: {b} before, {a} after; each event is compared by its time in \
                 each run (Welch's t on their logarithms: the run is the unit, so a shift of \
                 one run is measured as the runs' own spread); if the runs were made in rounds, \
                 --paired compares them round by round\n"
            )
        });
    }
    if diff.runs_compared.is_none() {
        let how_many = match diff.runs_needed {
            Some(n) => format!(
                "; these events moved \u{b1}{:.1}% around their shared shift, so about {n} runs \
                 a side would resolve {:.1}% for a typical event (prof diff b1.json ... -- a1.json ..., or prof ab -n \
                 {n})",
                100.0 * diff.machine.spread,
                100.0 * diff.threshold
            ),
            None => "; several runs a side measure it (prof diff b1.json ... -- a1.json ..., or \
                     prof ab)"
                .to_owned(),
        };
        out.push_str(&format!(
            "{bullet}one run a side: a shift of a whole run (where code and data landed in \
             memory, what the machine did) cannot be told from a change of the code{how_many}\n"
        ));
    }
    if let Some(load) = diff.load.as_ref().filter(|l| l.differs && diff.paired) {
        out.push_str(&format!(
            "{bullet}load: the before runs' iterations took over {SLOW_ITERATION}x their \
             fastest {:.1}% of the time (median of the runs), the after runs' {:.1}% \
             (Mann-Whitney p {}); the runs were paired in rounds, each round's two runs under \
             the same machine, so the verdicts stand\n",
            100.0 * load.before_slow_share,
            100.0 * load.after_slow_share,
            p_text(load.p_value)
        ));
    }
    if let Some(load) = diff.load.as_ref().filter(|l| l.differs && !diff.paired) {
        out.push_str(&format!(
            "{bullet}LOAD DIFFERS between the sides: the before runs' iterations took over \
             {SLOW_ITERATION}x their fastest {:.1}% of the time (median of the runs), the after \
             runs' {:.1}% (Mann-Whitney p {}); the machine was busier on one side, so no change \
             can be told from the load and every verdict is inconclusive. Run the two sides \
             interleaved (prof ab does) or on a quieter machine\n",
            100.0 * load.before_slow_share,
            100.0 * load.after_slow_share,
            p_text(load.p_value)
        ));
    }
    if let Some(load) = diff.load.as_ref().filter(|l| {
        !l.differs && (l.after_slow_share - l.before_slow_share).abs() >= super::LOAD_MARGIN
    }) {
        let (b, a) = diff.runs_compared.unwrap_or((0, 0));
        let few = if b.min(a) < super::LOAD_MIN_RUNS {
            format!(
                "; {b} and {a} are too few runs a side to tell (the test cannot reach {} with \
                 fewer than {} a side)",
                super::LOAD_ALPHA,
                super::LOAD_MIN_RUNS
            )
        } else {
            String::new()
        };
        // Runs paired in rounds were interleaved already: advising it would send a `prof ab`
        // user to run `prof ab`.
        let advice = if diff.paired {
            "the runs were paired in rounds, each round's two runs under the same machine"
        } else {
            "if the machine was busier on one side, interleave the runs (prof ab)"
        };
        out.push_str(&format!(
            "{bullet}load: the before runs' iterations took over {SLOW_ITERATION}x their fastest \
             {:.1}% of the time, the after runs' {:.1}%, not a significant difference \
             (Mann-Whitney p {}){few}; {advice}\n",
            100.0 * load.before_slow_share,
            100.0 * load.after_slow_share,
            p_text(load.p_value)
        ));
    }
    for line in machine_lines(diff) {
        out.push_str(&format!("{bullet}{line}\n"));
    }
    for (v, which, meaning) in [
        (
            Verdict::Regressed,
            "slower",
            "occasional stalls, not the code's cost",
        ),
        (
            Verdict::Improved,
            "faster",
            "occasional stalls gone, not the code's cost",
        ),
    ] {
        let moved: Vec<String> = diff
            .events
            .iter()
            // "Fastest unchanged" only where the fastest time was not judged to move (an
            // event regressed by its fastest time as well is told as regressed, not here).
            .filter(|d| {
                d.typical == Some(v)
                    && d.share >= diff.threshold
                    && !matches!(d.verdict, Verdict::Regressed | Verdict::Improved)
            })
            .map(|d| format!("{} {}", text::label(&d.identity), change(d.typical_ratio)))
            .collect();
        if !moved.is_empty() {
            out.push_str(&format!(
                "{bullet}typical time {which}, fastest unchanged ({meaning}): {}\n",
                moved.join(", ")
            ));
        }
    }
    let listed = |v: Verdict, deciding: bool| -> Vec<String> {
        all.iter()
            .filter(|d| d.verdict == v && (d.matters == deciding))
            .map(|d| format!("{} ({})", text::label(&d.identity), change(d.ratio)))
            .collect()
    };
    for v in [Verdict::Improved, Verdict::Regressed] {
        let names = listed(v, true);
        // Regressions that matter are the closing line.
        if !names.is_empty() && v == Verdict::Improved {
            out.push_str(&format!(
                "{bullet}{} {}: {}\n",
                names.len(),
                v.as_str(),
                names.join(", ")
            ));
        }
        let small = listed(v, false);
        if !small.is_empty() {
            out.push_str(&format!(
                "{bullet}{} {}, too small to matter (not deciding): {}\n",
                small.len(),
                v.as_str(),
                small.join(", ")
            ));
        }
    }
    let deciding: Vec<&EventDiff> = diff.deciding().collect();
    out.push_str(&format!(
        "{bullet}{}\n",
        match diff.gate() {
            Gate::Regressed => {
                let names = listed(Verdict::Regressed, true);
                format!("{} regressed: {}", names.len(), names.join(", "))
            }
            Gate::Inconclusive => inconclusive_line(diff, &deciding),
            Gate::Pass => {
                let small = diff
                    .events
                    .iter()
                    .filter(|d| !d.matters && d.verdict == Verdict::Inconclusive)
                    .count();
                if small > 0 {
                    format!(
                        "no regression in what matters ({} rows decided; {small} events too \
                         small to matter are inconclusive and do not decide)",
                        deciding.len()
                    )
                } else {
                    format!("no regression ({} rows decided)", deciding.len())
                }
            }
        }
    ));
    for line in super::memory::lines(&diff.memory) {
        out.push_str(&format!("{bullet}{line}\n"));
    }
    for w in &diff.warnings {
        out.push_str(&format!("{bullet}warning: {w}\n"));
    }
    out
}

/// What the runs say about the machine: how far the events moved together, and which run looks
/// disturbed and how far that widened the intervals.
fn machine_lines(diff: &Diff) -> Vec<String> {
    let mut lines = Vec::new();
    let m = &diff.machine;
    if m.events >= MIN_EVENTS_FOR_SPREAD {
        lines.push(if diff.runs_compared.is_some() {
            format!(
                "machine: the events moved {} together (spread {:.1}%), reported only: with \
                 several runs a side each event is judged on its own change",
                change(1.0 + m.shift),
                100.0 * m.spread
            )
        } else {
            format!(
                "machine: the events moved {} together (spread {:.1}%); each event is judged on \
                 its change beyond that",
                change(1.0 + m.shift),
                100.0 * m.spread
            )
        });
    }
    let runs = [("before", &diff.runs.before), ("after", &diff.runs.after)];
    for (i, (which, run)) in runs.iter().enumerate() {
        if !run.disturbed {
            continue;
        }
        let (other, other_run) = runs[1 - i];
        lines.push(format!(
            "{which} looks disturbed: {:.0}% of its iterations took over {SLOW_ITERATION}x its \
             fastest (median {}, fastest 5% {}; {other}: {:.0}%); the verdicts judge each \
             event's fastest 5%, which such delays leave alone",
            100.0 * run.slow_share,
            crate::text::human_ns(run.median_ns),
            crate::text::human_ns(run.fastest_ns),
            100.0 * other_run.slow_share,
        ));
    }
    lines
}

/// The closing line of a comparison that found no regression but could have missed one: how
/// many rows are inconclusive, how far their intervals reach, and what settles it.
fn inconclusive_line(diff: &Diff, all: &[&EventDiff]) -> String {
    let rows: Vec<&&EventDiff> = all
        .iter()
        .filter(|d| d.verdict == Verdict::Inconclusive)
        .collect();
    let iteration = diff.iteration.verdict == Verdict::Inconclusive;
    let events = rows.len() - usize::from(iteration);
    let what = match (iteration, events) {
        (true, 0) => "the iteration".to_owned(),
        (true, n) => format!("the iteration and {n} of {} events", diff.events.len()),
        (false, n) => format!("{n} of {} events", diff.events.len()),
    };
    // How far each row's interval reaches from no change: what it cannot rule out.
    let reach: Vec<f64> = rows
        .iter()
        .map(|d| (d.ci_high - 1.0).max(1.0 - d.ci_low))
        .filter(|r| r.is_finite())
        .collect();
    let range = match (
        reach.iter().copied().reduce(f64::min),
        reach.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(_)) if reach.len() == 1 && rows.len() == 1 => {
            format!("; its interval reaches \u{b1}{}", pct(lo))
        }
        (Some(lo), Some(hi)) if reach.len() == rows.len() => {
            format!(
                "; their intervals reach \u{b1}{} to \u{b1}{}",
                pct(lo),
                pct(hi)
            )
        }
        (Some(lo), Some(hi)) => format!(
            "; their intervals reach \u{b1}{} to \u{b1}{}, {} have none (no sample on a side)",
            pct(lo),
            pct(hi),
            rows.len() - reach.len()
        ),
        _ => "; none has an interval (no sample on a side)".to_owned(),
    };
    // Rounds already paired (`prof ab`, `prof diff --paired`) want more of them, not runs a
    // side.
    let more = if diff.paired {
        "More rounds (prof ab's -n and --budget)"
    } else {
        "Several runs a side (prof diff b1.json b2.json -- a1.json a2.json, or prof ab)"
    };
    format!(
        "INCONCLUSIVE, no regression found but one could have gone unseen: {what} cannot rule \
         out a change of {:.1}% (the threshold){range}. {more}, more samples (PROF_REPEAT), a \
         quieter machine, or the change that matters to you as --threshold settles it \
         (--fail-on-regression exits 3)",
        100.0 * diff.threshold
    )
}

/// A relative change as a percentage, from 10 times on as a factor.
fn pct(x: f64) -> String {
    if x >= 9.0 {
        change(1.0 + x)
    } else {
        crate::text::percent(x)
    }
}
