//! Text helpers shared by the renderers of reports, diffs, scalings and merges: aligned
//! columns, CSV fields, Markdown tables, numbers and the identity columns of events.

use std::fmt::Write;

use profiler_format::Identity;

/// A CSV field, quoted when it must be. A text that a spreadsheet would take for a formula
/// (it begins with `=`, `+`, `-`, `@`, a tab or a carriage return: a name from a profile, made
/// by anyone) begins with `'`, as OWASP's advice on CSV injection has it, so that it is shown,
/// never run.
pub(crate) fn csv_field(s: &str) -> String {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let s = if formula {
        std::borrow::Cow::Owned(format!("'{s}"))
    } else {
        std::borrow::Cow::Borrowed(s)
    };
    if formula || s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}

pub(crate) use profiler_tables::table_text::{aligned, human_ns, num_sci, percent, printable};

/// An event's label for a sentence of a table or Markdown output (`layer/phase name#occ`), its
/// control characters as visible escapes ([`printable`]).
pub(crate) fn label(identity: &Identity) -> String {
    printable(&identity.label()).into_owned()
}

/// The last pass over a table or Markdown output: any control character left (from a name in
/// a sentence, a program's name) as a visible escape, the line breaks kept
/// ([`profiler_tables::table_text::printable_lines`]). Names inside cells and labels are escaped
/// where they are placed, so that a line break in one is `\n` too.
pub(crate) fn for_terminal(text: String) -> String {
    match profiler_tables::table_text::printable_lines(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(safe) => safe,
    }
}

/// A GitHub-flavoured Markdown table.
pub(crate) fn markdown(headers: &[&str], rows: &[Vec<String>]) -> String {
    let cell = md_cell;
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

/// The identity columns of every CSV of events, `id, name, layer, phase, occurrence`, as
/// fields (an absent layer or phase empty), so that all the CSVs spell them alike.
pub(crate) fn identity_csv(identity: &Identity) -> [String; 5] {
    [
        csv_field(&identity.id),
        csv_field(&identity.name),
        csv_field(identity.layer.as_deref().unwrap_or("")),
        csv_field(identity.phase.as_deref().unwrap_or("")),
        identity.occurrence.to_string(),
    ]
}

/// The identity columns every table of events starts with, `layer, phase, name, occ` (`-` for
/// an absent layer or phase); the whole iteration has no occurrence, so it shows `-` there.
pub(crate) fn identity_cells(identity: &Identity, iteration: bool) -> Vec<String> {
    vec![
        identity.layer.clone().unwrap_or_else(|| "-".to_owned()),
        identity.phase.clone().unwrap_or_else(|| "-".to_owned()),
        identity.display_name().into_owned(),
        if iteration {
            "-".to_owned()
        } else {
            identity.occurrence.to_string()
        },
    ]
}

/// A Markdown table cell (or a paragraph): control characters as visible escapes
/// ([`printable`]: a line break in a name is `\n`), pipes escaped, and what a renderer would
/// take for markup (HTML tags, entities, links) escaped, so that a name from a profile shows as
/// written (`<img onerror=...>` is text, `[x](javascript:...)` no link).
pub(crate) fn md_cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in printable(s).chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '[' => out.push_str("\\["),
            ']' => out.push_str("\\]"),
            c => out.push(c),
        }
    }
    out
}

/// A Markdown table as lines, its first `left` columns aligned left and the others right.
pub(crate) fn md_table(headers: &[&str], rows: &[Vec<String>], left: usize) -> Vec<String> {
    let row = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let mut out = vec![row(headers.iter().map(|h| md_cell(h)).collect())];
    out.push(format!(
        "|{}|",
        (0..headers.len())
            .map(|i| if i < left { ":---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    ));
    for r in rows {
        out.push(row(r.iter().map(|c| md_cell(c)).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{csv_field, md_cell};

    /// A name a spreadsheet would run as a formula is shown as text (`'` first, quoted); names
    /// that need quoting are quoted as before; plain ones are left alone.
    #[test]
    fn csv_cells_that_look_like_formulas_are_text() {
        assert_eq!(
            csv_field("=HYPERLINK(\"http://x/\",\"y\")"),
            "\"'=HYPERLINK(\"\"http://x/\"\",\"\"y\"\")\""
        );
        assert_eq!(csv_field("+cmd|' /C calc'!A0"), "\"'+cmd|' /C calc'!A0\"");
        assert_eq!(csv_field("@SUM(1)"), "\"'@SUM(1)\"");
        assert_eq!(csv_field("-x"), "\"'-x\"");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("mlp::forward"), "mlp::forward");
        assert_eq!(csv_field(""), "");
    }

    /// Markdown shows a name as written: no HTML, no entity, no link, no broken table.
    #[test]
    fn markdown_cells_hold_no_markup() {
        assert_eq!(
            md_cell("<img src=x onerror=alert(1)>"),
            "&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(
            md_cell("[click](javascript:alert(1))"),
            "\\[click\\](javascript:alert(1))"
        );
        assert_eq!(md_cell("a|b &amp;"), "a\\|b &amp;amp;");
        assert_eq!(md_cell("Interaction::forward"), "Interaction::forward");
    }
}
