//! An event split by input shape: what the `shape` key of its annotation makes of its samples.
//! Each shape the profile kept gets a row of its own (its samples' median, p90 and achieved
//! rates, computed as the event's are, [`WorkRow`]), and the samples of the shapes past
//! `PROF_SHAPES` one row, `others`.

use serde::Serialize;

use crate::work::WorkRow;
use profiler_format::peak::Peak;
use profiler_format::{Event, SampleWork, Stats};

/// The label of the row holding the samples of the shapes past the bound.
pub const OTHERS: &str = "others";

/// One shape of an event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShapeRow {
    /// The shape (`32x512, 512x1024`), or [`OTHERS`].
    pub shape: String,
    /// How many distinct shapes the row holds: 1, or for `others` how many were past the bound.
    pub shapes: u64,
    /// Samples of this shape.
    pub samples: u64,
    /// Median duration of its runs.
    pub median_ns: f64,
    /// 90th percentile of its runs.
    pub p90_ns: f64,
    /// Its achieved rates, when the annotation counts its work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<WorkRow>,
}

/// The rows of `e`'s shapes, in the order the profile lists them (the most samples first),
/// then `others`; empty for an event without a `shape` key, or whose lists do not match its
/// samples (a file the reader checked never has such).
pub fn shape_rows(e: &Event, peak: Option<&Peak>) -> Vec<ShapeRow> {
    let Some(shapes) = &e.shapes else {
        return Vec::new();
    };
    if shapes.sample_shapes.len() != e.samples_ns.len() {
        return Vec::new();
    }
    let row = |shape: String, count: u64, pick: &dyn Fn(Option<u32>) -> bool| {
        let idx: Vec<usize> = (0..e.samples_ns.len())
            .filter(|&i| pick(shapes.sample_shapes[i]))
            .collect();
        if idx.is_empty() {
            return None;
        }
        let ns: Vec<u64> = idx.iter().map(|&i| e.samples_ns[i]).collect();
        let pick_list = |l: &Option<Vec<u64>>| {
            l.as_ref()
                .filter(|l| l.len() == e.samples_ns.len())
                .map(|l| idx.iter().map(|&i| l[i]).collect())
        };
        let part = Event {
            work: e.work.as_ref().map(|w| SampleWork {
                flops: pick_list(&w.flops),
                bytes: pick_list(&w.bytes),
            }),
            stats: Stats::of(&ns),
            samples_ns: ns,
            ..Event::default()
        };
        Some(ShapeRow {
            shape,
            shapes: count,
            samples: part.stats.count,
            median_ns: part.stats.median_ns as f64,
            p90_ns: part.stats.p90_ns as f64,
            work: WorkRow::of(&part, peak),
        })
    };
    let mut rows: Vec<ShapeRow> = shapes
        .values
        .iter()
        .enumerate()
        .filter_map(|(k, name)| row(name.clone(), 1, &|s| s == Some(k as u32)))
        .collect();
    if let Some(others) = row(OTHERS.to_owned(), shapes.others, &|s| s.is_none()) {
        rows.push(others);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use profiler_format::Shapes;

    #[test]
    fn samples_split_by_shape_with_their_own_rates() {
        let e = Event {
            samples_ns: vec![10, 20, 12, 40, 14],
            stats: Stats::of(&[10, 20, 12, 40, 14]),
            work: Some(SampleWork {
                flops: Some(vec![100, 400, 100, 1600, 100]),
                bytes: None,
            }),
            shapes: Some(Shapes {
                values: vec!["8x4".into(), "16x4".into()],
                sample_shapes: vec![Some(0), Some(1), Some(0), None, Some(0)],
                others: 2,
            }),
            ..Event::default()
        };
        let rows = shape_rows(&e, None);
        let got: Vec<(&str, u64, u64, f64)> = rows
            .iter()
            .map(|r| (r.shape.as_str(), r.shapes, r.samples, r.median_ns))
            .collect();
        assert_eq!(
            got,
            [
                ("8x4", 1, 3, 12.0),
                ("16x4", 1, 1, 20.0),
                (OTHERS, 2, 1, 40.0)
            ]
        );
        // 100 flops in 12 ns: the shape's own rate, not the event's.
        let rate = rows[0].work.as_ref().unwrap().flops_per_s.unwrap().median;
        assert!((rate - 100e9 / 12.0).abs() < 1.0, "{rate}");
        assert_eq!(
            rows[2].work.as_ref().unwrap().flops_per_s.unwrap().median,
            40e9
        );
        assert!(shape_rows(&Event::default(), None).is_empty());
    }
}
