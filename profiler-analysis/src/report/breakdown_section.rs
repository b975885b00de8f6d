//! The report's breakdown section: where the mean iteration goes, by category, and the largest
//! stretches no probe covers (see [`profiler_tables::breakdown`] for the definitions).

use profiler_tables::breakdown::Breakdown;
use profiler_tables::table_text::{self, human_ns, percent};

const CATEGORY_HEADERS: [&str; 4] = ["category", "events", "time", "share"];
const GAP_HEADERS: [&str; 7] = [
    "after", "before", "where", "from", "length", "share", "scatter",
];

/// The section's lines, as aligned text or (`markdown`) as Markdown tables.
pub(super) fn lines(b: &Breakdown, markdown: bool) -> Vec<String> {
    let table = |headers: &[&str], rows: &[Vec<String>], left: usize| -> Vec<String> {
        if markdown {
            crate::text::md_table(headers, rows, left)
        } else {
            table_text::aligned(headers, rows, left)
                .lines()
                .map(str::to_owned)
                .collect()
        }
    };
    let mut out = vec![format!(
        "breakdown of the mean iteration ({}): each category is the time per iteration of its \
         top-level events; other is what none of them covers",
        human_ns(b.iteration_ns)
    )];
    let rows: Vec<Vec<String>> = b
        .categories
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                c.events.to_string(),
                human_ns(c.total_ns),
                percent(c.share),
            ]
        })
        .collect();
    if markdown {
        out.push(String::new());
    }
    out.extend(table(&CATEGORY_HEADERS, &rows, 1));
    if b.overlap_ns > 0.0 {
        if markdown {
            out.push(String::new());
        }
        out.push(format!(
            "the categories exceed the mean iteration by {}: top-level events overlap (on \
             several threads), or were measured in slower iterations than the mean",
            human_ns(b.overlap_ns)
        ));
    }
    if b.gaps.is_empty() {
        return out;
    }
    out.push(String::new());
    out.push(
        "not covered by any probe, largest first (where to annotate next; positions on the \
         median iteration, from the previous step(); scatter: how far the offsets on either side \
         scatter, `?` where the stretch is within it and may be noise)"
            .to_owned(),
    );
    let rows: Vec<Vec<String>> = b
        .gaps
        .iter()
        .map(|g| {
            let side = |s: &Option<profiler_tables::breakdown::Site>, edge: &str| {
                s.as_ref()
                    .map_or_else(|| edge.to_owned(), |s| s.label.clone())
            };
            let place = match (&g.after, &g.before) {
                (Some(a), _) => format!("after {}", a.location),
                (None, Some(b)) => format!("before {}", b.location),
                (None, None) => "-".to_owned(),
            };
            vec![
                side(&g.after, "(iteration start)"),
                side(&g.before, "step()"),
                place,
                human_ns(g.start_ns),
                human_ns(g.len_ns),
                percent(g.share),
                g.scatter(),
            ]
        })
        .collect();
    if markdown {
        out.push(String::new());
    }
    out.extend(table(&GAP_HEADERS, &rows, 3));
    out
}
