//! Text helpers shared by the renderers of reports, diffs, scalings and merges: aligned
//! columns, CSV fields, Markdown tables, numbers and event labels.

use std::fmt::Write;

/// A number for CSV and the like: up to 6 significant decimals, trailing zeros dropped;
/// empty when not finite.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let s = if v != 0.0 && v.abs() < 1e-3 {
        format!("{v:e}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    if s == "-0" {
        "0".to_owned()
    } else {
        s
    }
}

/// A CSV field, quoted when it must be.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

pub(crate) use profiler_format::text::aligned;

/// A GitHub-flavoured Markdown table.
pub(crate) fn markdown(headers: &[&str], rows: &[Vec<String>]) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace(['\n', '\r'], " ");
    let mut out = format!(
        "| {} |\n|{}\n",
        headers
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(headers.len())
    );
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// An event's label for people: `layer/phase name#occurrence` (the occurrence only when above 0,
/// the group only when the event has a layer or a phase).
pub(crate) fn label(
    name: &str,
    occurrence: u32,
    layer: Option<&str>,
    phase: Option<&str>,
) -> String {
    let group: Vec<&str> = [layer, phase].into_iter().flatten().collect();
    let name = if occurrence > 0 {
        format!("{name}#{occurrence}")
    } else {
        name.to_owned()
    };
    if group.is_empty() {
        name
    } else {
        format!("{} {name}", group.join("/"))
    }
}

/// A Markdown table cell: pipes escaped, line breaks flattened.
pub(crate) fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}
