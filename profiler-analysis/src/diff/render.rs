//! Rendering a [`Diff`] as a table, CSV, JSON or Markdown.

use super::*;

/// Prints a comparison: a table with one row for the iteration and one per event, the events
/// found in only one run, counts, and a closing line naming the regressions (or `no regression`).
/// CSV and JSON give times in nanoseconds and ratios as numbers; CSV lists the events found in
/// one run only as rows with the verdict `only before` or `only after`.
pub fn render(diff: &Diff, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(diff).unwrap_or_default() + "\n",
        Format::Csv => render_csv(diff),
        Format::Table | Format::Markdown => render_text(diff, format == Format::Markdown),
    }
}

pub(super) const CSV_HEADER: &str =
    "id,name,layer,phase,occurrence,before_n,after_n,before_median_ns,\
after_median_ns,ratio,ci_low,ci_high,p_value,p_adjusted,verdict";

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
            text::num(d.before_median_ns),
            text::num(d.after_median_ns),
            text::num(d.ratio),
            text::num(d.ci_low),
            text::num(d.ci_high),
            text::num(d.p_value),
            text::num(d.p_adjusted),
            d.verdict.as_str().to_owned(),
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
                "{},{},,,{},,,,,,,,,,{verdict}\n",
                text::csv_field(&m.id),
                text::csv_field(&m.name),
                m.occurrence
            ));
        }
    }
    out
}

fn missing_label(m: &Missing) -> String {
    if m.occurrence > 0 {
        format!("{}#{} ({})", m.name, m.occurrence, m.id)
    } else {
        format!("{} ({})", m.name, m.id)
    }
}

/// A change as a signed percentage: ratio 1.312 -> `+31.2%`.
fn change(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{:+.1}%", 100.0 * (ratio - 1.0))
    } else {
        "-".to_owned()
    }
}

fn p_text(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

const TEXT_HEADERS: [&str; 10] = [
    "layer", "phase", "name", "occ", "before", "after", "change", "95% CI", "p (adj)", "verdict",
];

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
            crate::report::human_ns(v)
        }
    };
    let mut cells = text::identity_cells(&d.identity, iteration);
    cells.extend([
        times(d.before_median_ns, d.before_n),
        times(d.after_median_ns, d.after_n),
        change(d.ratio),
        ci,
        p_text(d.p_adjusted),
        d.verdict.as_str().to_owned(),
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
    out.push_str(&format!(
        "{bullet}iteration: {}; {} events: {} regressed, {} improved, {} within noise, {} no \
         change (threshold {}%, alpha {}, Holm over {} tests; intervals include the noise \
         allowance)\n",
        diff.iteration.verdict.as_str(),
        diff.events.len(),
        count(Verdict::Regressed),
        count(Verdict::Improved),
        count(Verdict::WithinNoise),
        count(Verdict::NoChange),
        100.0 * diff.threshold,
        diff.alpha,
        all.len()
    ));
    let listed = |v: Verdict| -> String {
        let names: Vec<String> = all
            .iter()
            .filter(|d| d.verdict == v)
            .map(|d| format!("{} ({})", d.identity.label(), change(d.ratio)))
            .collect();
        format!("{} {}: {}", names.len(), v.as_str(), names.join(", "))
    };
    let any = |v: Verdict| all.iter().any(|d| d.verdict == v);
    if any(Verdict::Improved) {
        out.push_str(&format!("{bullet}{}\n", listed(Verdict::Improved)));
    }
    if any(Verdict::Regressed) {
        out.push_str(&format!("{bullet}{}\n", listed(Verdict::Regressed)));
    } else {
        out.push_str(&format!("{bullet}no regression\n"));
    }
    for line in super::memory::lines(&diff.memory) {
        out.push_str(&format!("{bullet}{line}\n"));
    }
    out
}
