//! The columns of an event row, in one table: each one's header in the tables (`prof report`'s
//! and the end-of-run summary's), its CSV header, the JSON key it shows, and how its cells are
//! written. `prof report` (table, Markdown, CSV) and the summary both render from
//! [`EVENT_COLUMNS`], so a new column is one entry here.

use crate::rows::EventRow;
use crate::table_text::{human_bytes, human_ns, num, opt, percent, signed_percent};
use crate::work::{human_rate, utilization, Rate, WorkRow};

/// The most nesting levels a name is indented by in `prof report`'s table (two spaces a level),
/// so that the name keeps part of its [`MAX_CELL`](crate::table_text::MAX_CELL) characters.
pub const MAX_INDENT: usize = 24;

/// Where a cell is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// `prof report`'s table or Markdown; `indent`: the name indented by the event's depth.
    Report {
        /// Indent the name by the event's nesting depth.
        indent: bool,
    },
    /// The end-of-run summary.
    Summary,
    /// CSV: plain numbers (nanoseconds, ratios), no units.
    Csv,
}

/// Which rows a column belongs to, beside every event row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Always there.
    Base,
    /// Only when the events carry memory figures (`profiler_core::Alloc`); in CSV, after the
    /// base columns (and the report's window columns).
    Memory,
    /// Only when the profile has device memory figures (events timed on a stream, or the
    /// devices' memory at the steps); in CSV, after the memory columns.
    Device,
    /// Only when some event counts its work (`flops`, `bytes` keys): its achieved rates; in
    /// CSV, last.
    Work,
}

/// The families of columns a table has beside the base ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Families {
    /// The memory columns ([`Family::Memory`]).
    pub memory: bool,
    /// The device memory columns ([`Family::Device`]).
    pub device: bool,
    /// The achieved rates' columns ([`Family::Work`]).
    pub work: bool,
}

impl Families {
    /// Whether columns of `family` are shown.
    pub fn has(self, family: Family) -> bool {
        match family {
            Family::Base => true,
            Family::Memory => self.memory,
            Family::Device => self.device,
            Family::Work => self.work,
        }
    }
}

/// One column of an event row.
pub struct Column {
    /// Its header in `prof report`'s table and Markdown; `None`: not shown there.
    pub report: Option<&'static str>,
    /// Its header in the end-of-run summary; `None`: not shown there.
    pub summary: Option<&'static str>,
    /// Its CSV header; `None`: not in CSV.
    pub csv: Option<&'static str>,
    /// The key of the event row's JSON (`prof report --format json`) that it shows; `None` for
    /// a column of the CSV layout only (`row_type`, `group`, `events`).
    pub json: Option<&'static str>,
    /// Which rows it belongs to.
    pub family: Family,
    /// Its cell for an event row.
    pub cell: fn(&EventRow, Place) -> String,
}

impl Column {
    /// Its header where `place` is.
    pub fn header(&self, place: Place) -> Option<&'static str> {
        match place {
            Place::Report { .. } => self.report,
            Place::Summary => self.summary,
            Place::Csv => self.csv,
        }
    }
}

/// `-` for an event without samples, else `f` of its row.
fn timed(e: &EventRow, place: Place, v: f64) -> String {
    match place {
        Place::Csv => num(v, 3),
        _ if e.samples == 0 => "-".to_owned(),
        _ => human_ns(v),
    }
}

/// Calls per iteration: `1`, or `2.50` when not whole.
pub fn calls(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.2}")
    }
}

/// An event's occurrence, `+` marking a merged event.
pub fn occ(e: &EventRow) -> String {
    if e.merged {
        format!("{}+", e.identity.occurrence)
    } else {
        e.identity.occurrence.to_string()
    }
}

/// A CSV field, quoted when it must be.
fn csv_text(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// A device memory figure: bytes in the tables (with their sign when `signed`), plain numbers
/// in CSV, `-` without figures.
fn device_memory(
    e: &EventRow,
    place: Place,
    signed: bool,
    figure: fn(&crate::rows::DeviceMemoryRow) -> f64,
) -> String {
    match (e.device_memory.as_ref().map(figure), place) {
        (Some(v), Place::Csv) => num(v, 1),
        (None, Place::Csv) => String::new(),
        (Some(v), _) if signed && v > 0.0 => format!("+{}", human_bytes(v)),
        (Some(v), _) => human_bytes(v),
        (None, _) => "-".to_owned(),
    }
}

/// A column of the CSV rows of type `device` only (empty on an event row).
const fn device_row_column(csv: &'static str) -> Column {
    Column {
        report: None,
        summary: None,
        csv: Some(csv),
        json: None,
        family: Family::Device,
        cell: |_, _| String::new(),
    }
}

/// A memory figure: bytes in the tables, plain numbers in CSV, `-` without figures.
fn memory(e: &EventRow, place: Place, figure: fn(&crate::rows::MemoryRow) -> f64) -> String {
    match (e.memory.as_ref(), place) {
        (Some(m), Place::Csv) => num(figure(m), 1),
        (None, Place::Csv) => String::new(),
        (Some(m), _) => human_bytes(figure(m)),
        (None, _) => "-".to_owned(),
    }
}

/// Every column of an event row, in the order of the tables; CSV takes the base columns in this
/// order, then the report's window columns when it has them, then the memory columns.
pub const EVENT_COLUMNS: &[Column] = &[
    Column {
        report: None,
        summary: None,
        csv: Some("row_type"),
        json: None,
        family: Family::Base,
        cell: |_, _| "event".to_owned(),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("order"),
        json: Some("order"),
        family: Family::Base,
        cell: |e, _| e.order.to_string(),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("id"),
        json: Some("id"),
        family: Family::Base,
        cell: |e, _| csv_text(&e.identity.id),
    },
    Column {
        report: Some("layer"),
        summary: Some("layer"),
        csv: None,
        json: Some("layer"),
        family: Family::Base,
        cell: |e, _| opt(&e.identity.layer),
    },
    Column {
        report: Some("phase"),
        summary: Some("phase"),
        csv: None,
        json: Some("phase"),
        family: Family::Base,
        cell: |e, _| opt(&e.identity.phase),
    },
    Column {
        report: Some("name"),
        summary: Some("name"),
        csv: Some("name"),
        json: Some("name"),
        family: Family::Base,
        cell: |e, place| match place {
            Place::Csv => csv_text(&e.identity.name),
            Place::Report { indent: true } => {
                // At most MAX_INDENT levels: deeper, the name would be clipped out of its cell
                // (and a chain thousands deep made rows thousands of spaces wide).
                format!(
                    "{}{}",
                    "  ".repeat((e.depth as usize).min(MAX_INDENT)),
                    e.identity.display_name()
                )
            }
            _ => e.identity.display_name().into_owned(),
        },
    },
    Column {
        report: None,
        summary: None,
        csv: Some("layer"),
        json: None,
        family: Family::Base,
        cell: |e, _| {
            e.identity
                .layer
                .as_deref()
                .map(csv_text)
                .unwrap_or_default()
        },
    },
    Column {
        report: None,
        summary: None,
        csv: Some("phase"),
        json: None,
        family: Family::Base,
        cell: |e, _| {
            e.identity
                .phase
                .as_deref()
                .map(csv_text)
                .unwrap_or_default()
        },
    },
    Column {
        report: Some("occ"),
        summary: Some("occ"),
        csv: Some("occurrence"),
        json: Some("occurrence"),
        family: Family::Base,
        cell: |e, place| match place {
            Place::Csv => e.identity.occurrence.to_string(),
            _ => occ(e),
        },
    },
    Column {
        report: None,
        summary: None,
        csv: Some("merged"),
        json: Some("merged"),
        family: Family::Base,
        cell: |e, _| e.merged.to_string(),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("parent"),
        json: Some("parent"),
        family: Family::Base,
        cell: |e, _| e.parent.map(|p| p.to_string()).unwrap_or_default(),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("depth"),
        json: Some("depth"),
        family: Family::Base,
        cell: |e, _| e.depth.to_string(),
    },
    Column {
        report: None,
        summary: Some("samples"),
        csv: Some("samples"),
        json: Some("samples"),
        family: Family::Base,
        cell: |e, _| e.samples.to_string(),
    },
    Column {
        report: Some("calls"),
        summary: None,
        csv: Some("calls_per_iter"),
        json: Some("calls_per_iter"),
        family: Family::Base,
        cell: |e, place| match place {
            Place::Csv => num(e.calls_per_iter, 6),
            _ => calls(e.calls_per_iter),
        },
    },
    Column {
        report: Some("median"),
        summary: Some("median"),
        csv: Some("median_ns"),
        json: Some("median_ns"),
        family: Family::Base,
        cell: |e, place| timed(e, place, e.median_ns),
    },
    Column {
        report: Some("mean"),
        summary: Some("mean"),
        csv: Some("mean_ns"),
        json: Some("mean_ns"),
        family: Family::Base,
        cell: |e, place| timed(e, place, e.mean_ns),
    },
    Column {
        report: Some("min"),
        summary: Some("min"),
        csv: Some("min_ns"),
        json: Some("min_ns"),
        family: Family::Base,
        cell: |e, place| timed(e, place, e.min_ns),
    },
    Column {
        report: Some("max"),
        summary: Some("max"),
        csv: Some("max_ns"),
        json: Some("max_ns"),
        family: Family::Base,
        cell: |e, place| timed(e, place, e.max_ns),
    },
    Column {
        report: Some("stddev"),
        summary: None,
        csv: Some("stddev_ns"),
        json: Some("stddev_ns"),
        family: Family::Base,
        cell: |e, place| timed(e, place, e.stddev_ns),
    },
    Column {
        report: Some("p90"),
        summary: None,
        csv: Some("p90_ns"),
        json: Some("p90_ns"),
        family: Family::Base,
        cell: |e, place| timed(e, place, e.p90_ns),
    },
    Column {
        report: Some("cv"),
        summary: None,
        csv: Some("cv"),
        json: Some("cv"),
        family: Family::Base,
        cell: |e, place| match place {
            Place::Csv => num(e.cv, 6),
            _ if e.samples == 0 => "-".to_owned(),
            _ => percent(e.cv),
        },
    },
    Column {
        report: Some("total"),
        summary: None,
        csv: Some("total_ns"),
        json: Some("total_ns"),
        family: Family::Base,
        cell: |e, place| timed(e, place, e.total_ns),
    },
    Column {
        report: Some("self"),
        summary: None,
        csv: Some("self_ns"),
        json: Some("self_ns"),
        family: Family::Base,
        cell: |e, place| timed(e, place, e.self_ns),
    },
    Column {
        report: Some("share"),
        summary: Some("share"),
        csv: Some("share"),
        json: Some("share"),
        family: Family::Base,
        cell: |e, place| match place {
            Place::Csv => num(e.share, 6),
            Place::Summary if e.samples == 0 => "-".to_owned(),
            _ => percent(e.share),
        },
    },
    Column {
        report: None,
        summary: None,
        csv: Some("noisy"),
        json: Some("noisy"),
        family: Family::Base,
        cell: |e, _| e.noisy.to_string(),
    },
    Column {
        report: Some("perturb"),
        summary: None,
        csv: Some("perturbation"),
        json: Some("perturbation"),
        family: Family::Base,
        cell: |e, place| match (e.perturbation, place) {
            (Some(p), Place::Csv) => num(p, 6),
            (Some(p), _) => signed_percent(p),
            (None, Place::Csv) => String::new(),
            (None, _) => "-".to_owned(),
        },
    },
    Column {
        report: None,
        summary: None,
        csv: Some("group"),
        json: None,
        family: Family::Base,
        cell: |_, _| String::new(),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("events"),
        json: None,
        family: Family::Base,
        cell: |_, _| String::new(),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("shape"),
        json: None,
        family: Family::Base,
        cell: |_, _| String::new(),
    },
    Column {
        report: Some("alloc"),
        summary: Some("alloc"),
        csv: Some("alloc_bytes"),
        json: Some("memory"),
        family: Family::Memory,
        cell: |e, place| memory(e, place, |m| m.alloc_bytes),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("freed_bytes"),
        json: Some("memory"),
        family: Family::Memory,
        cell: |e, place| memory(e, place, |m| m.freed_bytes),
    },
    Column {
        report: Some("allocs"),
        summary: None,
        csv: Some("allocs"),
        json: Some("memory"),
        family: Family::Memory,
        cell: |e, place| match (e.memory.as_ref(), place) {
            (Some(m), Place::Csv) => num(m.allocs, 1),
            (None, Place::Csv) => String::new(),
            (Some(m), _) => calls(m.allocs),
            (None, _) => "-".to_owned(),
        },
    },
    Column {
        report: Some("peak"),
        summary: Some("peak"),
        csv: Some("peak_bytes"),
        json: Some("memory"),
        family: Family::Memory,
        cell: |e, place| memory(e, place, |m| m.peak_bytes),
    },
    Column {
        report: Some("dev used"),
        summary: None,
        csv: Some("device_used_bytes"),
        json: Some("device_memory"),
        family: Family::Device,
        cell: |e, place| device_memory(e, place, false, |d| d.used_bytes),
    },
    Column {
        report: Some("dev change"),
        summary: None,
        csv: Some("device_change_bytes"),
        json: Some("device_memory"),
        family: Family::Device,
        cell: |e, place| device_memory(e, place, true, |d| d.change_bytes),
    },
    device_row_column("device"),
    device_row_column("device_steps"),
    device_row_column("device_min_bytes"),
    device_row_column("device_max_bytes"),
    device_row_column("device_last_bytes"),
    Column {
        report: Some(""),
        summary: Some(""),
        csv: None,
        json: Some("noisy"),
        family: Family::Base,
        cell: |e, _| if e.noisy { "!" } else { "" }.to_owned(),
    },
];

/// A figure of an event's achieved rates: `text` of it in the tables, `digits` decimals in CSV,
/// `-` (empty in CSV) without it.
fn work(
    e: &EventRow,
    place: Place,
    figure: fn(&WorkRow) -> Option<f64>,
    text: fn(f64) -> String,
    digits: usize,
) -> String {
    match (e.work.as_ref().and_then(figure), place) {
        (Some(v), Place::Csv) => num(v, digits),
        (None, Place::Csv) => String::new(),
        (Some(v), _) => text(v),
        (None, _) => "-".to_owned(),
    }
}

/// A rate's interval in the tables: `low-high`.
fn interval(e: &EventRow, place: Place, rate: fn(&WorkRow) -> Option<Rate>) -> String {
    match e.work.as_ref().and_then(rate) {
        Some(r) if place != Place::Csv => format!("{}-{}", human_rate(r.low), human_rate(r.high)),
        _ => "-".to_owned(),
    }
}

/// The columns of the achieved rates ([`Family::Work`]).
const WORK_COLUMNS: [Column; 11] = [
    Column {
        report: Some("FLOP/s"),
        summary: Some("FLOP/s"),
        csv: Some("flops_per_s"),
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| work(e, place, |w| Some(w.flops_per_s?.median), human_rate, 0),
    },
    Column {
        report: Some("FLOP/s 95%"),
        summary: None,
        csv: None,
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| interval(e, place, |w| w.flops_per_s),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("flops_per_s_low"),
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| work(e, place, |w| Some(w.flops_per_s?.low), human_rate, 0),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("flops_per_s_high"),
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| work(e, place, |w| Some(w.flops_per_s?.high), human_rate, 0),
    },
    Column {
        report: Some("B/s"),
        summary: Some("B/s"),
        csv: Some("bytes_per_s"),
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| work(e, place, |w| Some(w.bytes_per_s?.median), human_rate, 0),
    },
    Column {
        report: Some("B/s 95%"),
        summary: None,
        csv: None,
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| interval(e, place, |w| w.bytes_per_s),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("bytes_per_s_low"),
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| work(e, place, |w| Some(w.bytes_per_s?.low), human_rate, 0),
    },
    Column {
        report: None,
        summary: None,
        csv: Some("bytes_per_s_high"),
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| work(e, place, |w| Some(w.bytes_per_s?.high), human_rate, 0),
    },
    Column {
        report: Some("FLOP/B"),
        summary: None,
        csv: Some("intensity"),
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| work(e, place, |w| w.intensity, |v| format!("{v:.2}"), 4),
    },
    Column {
        report: Some("bound"),
        summary: None,
        csv: Some("bound"),
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| match e.work.as_ref().and_then(|w| w.bound) {
            Some(b) => b.as_str().to_owned(),
            None if place == Place::Csv => String::new(),
            None => "-".to_owned(),
        },
    },
    Column {
        report: Some("MFU"),
        summary: Some("MFU"),
        csv: Some("mfu"),
        json: Some("work"),
        family: Family::Work,
        cell: |e, place| work(e, place, |w| w.mfu, utilization, 4),
    },
];

/// Every column: [`EVENT_COLUMNS`] with [`WORK_COLUMNS`] before its last (the noisy flag, which
/// stays last in the tables).
fn all_columns() -> impl Iterator<Item = &'static Column> {
    let (flag, others) = EVENT_COLUMNS.split_last().expect("columns");
    others
        .iter()
        .chain(WORK_COLUMNS.iter())
        .chain(std::iter::once(flag))
}

/// The columns shown at `place`, of the `families` wanted, in their order there: the tables'
/// order; for CSV the base columns, then (after the report's window columns, rendered
/// elsewhere) the memory columns, then the device columns.
pub fn shown(place: Place, families: Families) -> impl Iterator<Item = &'static Column> {
    let wanted = move |c: &&Column, family: Option<Family>| {
        c.header(place).is_some() && families.has(c.family) && family.is_none_or(|f| f == c.family)
    };
    let order: Vec<Option<Family>> = if place == Place::Csv {
        vec![
            Some(Family::Base),
            Some(Family::Memory),
            Some(Family::Device),
            Some(Family::Work),
        ]
    } else {
        vec![None]
    };
    order
        .into_iter()
        .flat_map(move |family| all_columns().filter(move |c| wanted(c, family)))
}

/// The headers of the columns shown at `place` (see [`shown`]).
pub fn headers(place: Place, families: Families) -> Vec<&'static str> {
    shown(place, families)
        .filter_map(|c| c.header(place))
        .collect()
}

/// An event row's cells at `place` (see [`shown`]).
pub fn cells(e: &EventRow, place: Place, families: Families) -> Vec<String> {
    shown(place, families).map(|c| (c.cell)(e, place)).collect()
}

/// The position of the CSV column `header` among the base columns, for rows that fill only a
/// few (groups, windows).
pub fn csv_index(header: &str) -> Option<usize> {
    shown(Place::Csv, Families::default()).position(|c| c.csv == Some(header))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_unique_where_they_are_shown() {
        let all = Families {
            memory: true,
            device: true,
            work: true,
        };
        for place in [Place::Report { indent: false }, Place::Summary, Place::Csv] {
            let headers = headers(place, all);
            for (i, h) in headers.iter().enumerate() {
                assert!(
                    h.is_empty() || !headers[..i].contains(h),
                    "{h} twice in {place:?}"
                );
            }
        }
    }

    #[test]
    fn csv_puts_the_memory_columns_last() {
        let memory = Families {
            memory: true,
            device: false,
            work: false,
        };
        let headers = headers(Place::Csv, memory);
        assert_eq!(
            headers[headers.len() - 4..],
            ["alloc_bytes", "freed_bytes", "allocs", "peak_bytes"]
        );
        assert_eq!(csv_index("row_type"), Some(0));
        assert_eq!(csv_index("events"), Some(25));
    }
}
