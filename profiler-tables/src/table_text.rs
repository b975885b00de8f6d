//! Text for people: durations, percentages and aligned columns, and names made safe to show
//! ([`printable`]).

use std::borrow::Cow;
use std::fmt::Write;

/// Whether [`printable`] writes `c` as an escape: a control character (C0, DEL, C1: a terminal
/// would act on it, XML 1.0 forbids most of them), one that changes the direction of the text
/// around it (it can make a name read as another), a line or paragraph separator, or a
/// noncharacter XML 1.0 forbids (U+FFFE, U+FFFF).
fn escaped(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}'
        )
}

/// `text` as it can be shown in a terminal or in XML: every control character (and the few
/// others `escaped` names) written as a visible escape, `\n`, `\r`, `\t`, `\0`, `\e` (ESC),
/// else `\u{hex}` (BEL: `\u{7}`), so that a name from a profile can neither move the cursor,
/// change colours, break a table's lines nor make an XML file ill-formed. The escapes are
/// printable ASCII, one column per character, so a table that counts characters stays aligned;
/// the text itself when nothing needs escaping.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            '\u{1b}' => out.push_str("\\e"),
            c if escaped(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A whole text of several lines made safe to print as [`printable`] does, its line breaks
/// (`\n`) kept: the last pass over a rendered report, whose names were escaped already where
/// they stand in cells and sentences.
pub fn printable_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && escaped(c)) {
        return Cow::Borrowed(text);
    }
    let lines: Vec<Cow<str>> = text.split('\n').map(printable).collect();
    Cow::Owned(lines.join("\n"))
}

/// A duration for people: `850ns`, `12.3µs`, `4.56ms`, `1.20s`.
pub fn human_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "-".to_owned();
    }
    let a = ns.abs();
    if a < 999.5 {
        format!("{ns:.0}ns")
    } else if a < 999_950.0 {
        format!("{:.1}µs", ns / 1e3)
    } else if a < 999_995_000.0 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// The widest a cell of a table may be, in characters: a name of 10 kB must not make every
/// line of a summary as wide (the JSON outputs keep names whole).
pub const MAX_CELL: usize = 64;

/// `text` itself when it has at most `max` characters, else its start and end around `…`, in
/// `max` characters (the end is kept because that is where names differ: `.2`, `#3`).
pub fn clip(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max || max < 3 {
        return text.to_owned();
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let mut out: String = text.chars().take(head).collect();
    out.push('…');
    out.extend(text.chars().skip(n - tail));
    out
}

/// Aligned columns: the first `left` columns left-aligned, the others right-aligned; each
/// line starts with two spaces and ends with a newline. Control characters in a cell are shown
/// as escapes ([`printable`]); a cell longer than [`MAX_CELL`] characters is then shortened
/// (see [`clip`]).
pub fn aligned(headers: &[&str], rows: &[Vec<String>], left: usize) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|cell| clip(&printable(cell), MAX_CELL))
                .collect()
        })
        .collect();
    let headers: Vec<Cow<str>> = headers.iter().map(|h| printable(h)).collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
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
    let headers: Vec<&str> = headers.iter().map(|h| h.as_ref()).collect();
    let mut out = line(&headers);
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        out.push_str(&line(&cells));
    }
    out
}

/// A size for people: `512B`, `12.3KiB`, `4.56MiB`, `1.20GiB`.
pub fn human_bytes(bytes: f64) -> String {
    if !bytes.is_finite() {
        return "-".to_owned();
    }
    let a = bytes.abs();
    if a < 1023.5 {
        format!("{bytes:.0}B")
    } else if a < 1024.0 * 1023.95 {
        format!("{:.1}KiB", bytes / 1024.0)
    } else if a < 1024.0 * 1024.0 * 1023.995 {
        format!("{:.2}MiB", bytes / (1024.0 * 1024.0))
    } else {
        format!("{:.2}GiB", bytes / (1024.0 * 1024.0 * 1024.0))
    }
}

/// A number for CSV: at most `digits` decimals, trailing zeros dropped; empty when not finite.
pub fn num(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let s = format!("{v:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    };
    if s == "-0" {
        "0".to_owned()
    } else {
        s
    }
}

/// A number for CSV that keeps a small one's figures: below 1e-3 (and not 0) in scientific
/// notation (`2.5e-7`: a p-value), otherwise [`num`] with 6 decimals (`0.000123` would lose
/// them); empty when not finite.
pub fn num_sci(v: f64) -> String {
    if v.is_finite() && v != 0.0 && v.abs() < 1e-3 {
        format!("{v:e}")
    } else {
        num(v, 6)
    }
}

/// A fraction as a percentage with one decimal: `0.067` → `6.7%`.
pub fn percent(v: f64) -> String {
    format!("{:.1}%", 100.0 * v)
}

/// A signed percentage: `+1.2%`, `-0.3%`.
pub fn signed_percent(v: f64) -> String {
    format!("{:+.1}%", 100.0 * v)
}

/// An optional key's text, `-` when absent.
pub fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "-".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two CSV number formats are one: [`num_sci`] is [`num`] with 6 decimals but for the
    /// small figures it writes in scientific notation.
    #[test]
    fn numbers_for_csv() {
        assert_eq!(num(2.50, 2), "2.5");
        assert_eq!(num(3.0, 0), "3");
        assert_eq!(num(-0.0001, 2), "0");
        assert_eq!(num(f64::NAN, 2), "");
        for v in [
            0.0,
            -0.0,
            1.5,
            0.001,
            123456.789_012_3,
            -7.25,
            f64::INFINITY,
        ] {
            assert_eq!(num_sci(v), num(v, 6), "{v}");
        }
        assert_eq!(num_sci(2.5e-7), "2.5e-7");
        assert_eq!(num_sci(-0.000_123), "-1.23e-4");
        assert_eq!(num_sci(0.0), "0");
        assert_eq!(num_sci(f64::NAN), "");
    }

    #[test]
    fn sizes_for_people() {
        assert_eq!(human_bytes(0.0), "0B");
        assert_eq!(human_bytes(1000.0), "1000B");
        assert_eq!(human_bytes(1536.0), "1.5KiB");
        assert_eq!(human_bytes(3.0 * 1024.0 * 1024.0), "3.00MiB");
        assert_eq!(human_bytes(5e9), "4.66GiB");
    }

    /// Control characters (a name that would clear the screen, ring the bell, set the window's
    /// title or start a new line) come out as visible escapes, and a table stays aligned.
    #[test]
    fn control_characters_are_shown_as_escapes() {
        assert!(matches!(printable("mlp/fwd forward#2"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}[2J\u{7}b\nc\rd\te\0f\u{9b}g\u{7f}h\u{202e}i\u{fffe}"),
            "a\\e[2J\\u{7}b\\nc\\rd\\te\\0f\\u{9b}g\\u{7f}h\\u{202e}i\\u{fffe}"
        );
        // Letters of every script are kept.
        assert_eq!(printable("ÿ µs 层 ✓"), "ÿ µs 层 ✓");
        assert_eq!(printable_lines("a\u{1b}b\nc\u{7}\n"), "a\\eb\nc\\u{7}\n");
        let table = aligned(
            &["name", "n"],
            &[
                vec!["evil\u{1b}]0;x\u{7}\nname".into(), "1".into()],
                vec!["plain".into(), "22".into()],
            ],
            1,
        );
        assert!(!table.contains(['\u{1b}', '\u{7}']), "{table:?}");
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        // The numbers' column ends at the same place on every line.
        let ends: Vec<usize> = lines.iter().map(|l| l.chars().count()).collect();
        assert!(ends.windows(2).all(|w| w[0] == w[1]), "{table}");
    }

    #[test]
    fn long_cells_are_clipped_in_the_middle() {
        assert_eq!(clip("short", 10), "short");
        let long = format!("{}.2", "a".repeat(10_000));
        let clipped = clip(&long, MAX_CELL);
        assert_eq!(clipped.chars().count(), MAX_CELL);
        assert!(
            clipped.ends_with("a.2") && clipped.contains('…'),
            "{clipped}"
        );
        let table = aligned(&["name", "n"], &[vec![long, "1".into()]], 1);
        assert!(table.lines().all(|l| l.chars().count() < 80), "{table}");
    }
}
