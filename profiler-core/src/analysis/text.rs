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

/// Aligned lines: the first `left` columns left-aligned, the others right-aligned; each
/// line starts with two spaces and ends with a newline.
pub(crate) fn aligned(headers: &[&str], rows: &[Vec<String>], left: usize) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut l = String::from(" ");
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = " ".repeat(w - cell.chars().count());
            if i < left {
                let _ = write!(l, " {cell}{pad}");
            } else {
                let _ = write!(l, " {pad}{cell}");
            }
        }
        l.trim_end().to_owned() + "\n"
    };
    let mut out = line(headers);
    for row in rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        out.push_str(&line(&cells));
    }
    out
}

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
