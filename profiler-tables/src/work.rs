//! Achieved rates: what the `flops` and `bytes` keys of an event's annotation make of its
//! samples. Each sample's rate is its run's count over its own duration (so that runs of
//! different sizes are each judged by their own work); an event's rate is the median of its
//! samples' rates, with a distribution-free 95% interval of that median (order statistics,
//! [`median_interval_ranks`]). Against a peak (`run.peak`, or `prof report --peak`), the FLOP/s
//! make the MFU and the arithmetic intensity places the event on the roofline.
//!
//! `docs/reference.md` ("Definitions of `prof report`") defines each figure.

use serde::Serialize;

use crate::descriptive_stats::{median, median_interval_ranks, sorted};
use profiler_format::peak::Peak;
use profiler_format::Event;

/// The confidence of the rates' intervals.
pub const CONFIDENCE: f64 = 0.95;

/// A rate per second: the median of the samples' rates and its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rate {
    /// The median of the samples' rates, per second.
    pub median: f64,
    /// The interval's low end.
    pub low: f64,
    /// The interval's high end.
    pub high: f64,
}

impl Rate {
    /// The rate of `counts[i]` in `ns[i]` nanoseconds, over the samples with a duration;
    /// `None` when none has one.
    pub fn of(counts: &[u64], ns: &[u64]) -> Option<Rate> {
        let rates: Vec<f64> = counts
            .iter()
            .zip(ns)
            .filter(|(_, &ns)| ns > 0)
            .map(|(&c, &ns)| c as f64 * 1e9 / ns as f64)
            .collect();
        if rates.is_empty() {
            return None;
        }
        let rates = sorted(&rates);
        let (lo, hi) = median_interval_ranks(rates.len(), CONFIDENCE);
        Some(Rate {
            median: median(&rates),
            low: rates[lo],
            high: rates[hi],
        })
    }
}

/// Where an event sits on the roofline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Its intensity is at or above the ridge point (peak FLOP/s over peak bytes/s).
    Compute,
    /// Its intensity is below the ridge point.
    Memory,
}

impl Bound {
    /// `compute` or `memory`.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        }
    }
}

/// An event's achieved rates.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkRow {
    /// FLOP/s, when the annotation has a `flops` key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flops_per_s: Option<Rate>,
    /// Bytes/s, when the annotation has a `bytes` key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<Rate>,
    /// The mean FLOPs of a run (over the samples), for the step's MFU.
    #[serde(skip)]
    pub flops_per_run: Option<f64>,
    /// Arithmetic intensity, FLOPs per byte: the samples' FLOPs over their bytes (with both
    /// keys and some bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intensity: Option<f64>,
    /// Against a peak with both figures: compute- or memory-bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// The median FLOP/s over the peak's (with a `flops` key and a peak with FLOP/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mfu: Option<f64>,
}

impl WorkRow {
    /// The rates of `e`, against `peak` when one is known; `None` for an event without work.
    pub fn of(e: &Event, peak: Option<&Peak>) -> Option<WorkRow> {
        let work = e.work.as_ref()?;
        let n = e.samples_ns.len();
        fn fits(l: &Option<Vec<u64>>, n: usize) -> Option<&Vec<u64>> {
            l.as_ref().filter(|l| l.len() == n)
        }
        let (flops, bytes) = (fits(&work.flops, n), fits(&work.bytes, n));
        if flops.is_none() && bytes.is_none() {
            return None;
        }
        let flops_per_s = flops.and_then(|f| Rate::of(f, &e.samples_ns));
        let bytes_per_s = bytes.and_then(|b| Rate::of(b, &e.samples_ns));
        let sum = |l: &Vec<u64>| l.iter().map(|&v| v as f64).sum::<f64>();
        let intensity = match (flops, bytes) {
            (Some(f), Some(b)) if sum(b) > 0.0 => Some(sum(f) / sum(b)),
            _ => None,
        };
        let positive = |v: Option<f64>| v.filter(|v| v.is_finite() && *v > 0.0);
        let peak_flops = positive(peak.and_then(|p| p.flops));
        let peak_bytes = positive(peak.and_then(|p| p.bytes));
        let bound = match (intensity, peak_flops, peak_bytes) {
            (Some(i), Some(pf), Some(pb)) => Some(if i >= pf / pb {
                Bound::Compute
            } else {
                Bound::Memory
            }),
            _ => None,
        };
        let mfu = match (flops_per_s, peak_flops) {
            (Some(r), Some(pf)) => Some(r.median / pf),
            _ => None,
        };
        Some(WorkRow {
            flops_per_s,
            bytes_per_s,
            flops_per_run: flops
                .filter(|f| !f.is_empty())
                .map(|f| sum(f) / f.len() as f64),
            intensity,
            bound,
            mfu,
        })
    }
}

/// Whether a utilization (MFU) is over 100%: no run can beat the peak, so the peak or the
/// count is wrong. The one rule [`utilization`] and the HTML page flag it by.
pub fn over_peak(v: f64) -> bool {
    v > 1.0
}

/// The text of a utilization (MFU): a percentage, or, above 100%, the figure with a warning,
/// since no run can beat the peak: the peak or the count is wrong.
pub fn utilization(v: f64) -> String {
    if over_peak(v) {
        // Past a million percent (a peak given far too low), in scientific notation.
        let percent = 100.0 * v;
        let figure = if percent >= 1e6 {
            format!("{percent:.2e}")
        } else {
            format!("{percent:.0}")
        };
        format!("{figure}% >100%! check the peak or the flops key")
    } else {
        crate::table_text::percent(v)
    }
}

/// A rate per second with an SI prefix: `1.23T`, `456G`, `12.0M`, `980`; from 1,000 E (1e21)
/// on, in scientific notation (`1.00e308`: a peak given as `PROF_PEAK_FLOPS=1e308`), never a
/// figure of hundreds of digits.
pub fn human_rate(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_owned();
    }
    let a = v.abs();
    let (scaled, prefix) = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
    ]
    .into_iter()
    .find(|(unit, _)| a >= *unit * 0.9995)
    .map_or((v, ""), |(unit, p)| (v / unit, p));
    if scaled.abs() >= 999.5 {
        // Beyond the largest prefix.
        format!("{v:.2e}")
    } else if scaled.abs() >= 99.95 {
        format!("{scaled:.0}{prefix}")
    } else if scaled.abs() >= 9.995 {
        format!("{scaled:.1}{prefix}")
    } else {
        format!("{scaled:.2}{prefix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profiler_format::{SampleWork, Stats};

    fn event(ns: &[u64], flops: Option<&[u64]>, bytes: Option<&[u64]>) -> Event {
        Event {
            samples_ns: ns.to_vec(),
            offsets_ns: vec![0; ns.len()],
            sample_iters: (0..ns.len() as u32).collect(),
            stats: Stats::of(ns),
            work: Some(SampleWork {
                flops: flops.map(<[u64]>::to_vec),
                bytes: bytes.map(<[u64]>::to_vec),
            }),
            ..Default::default()
        }
    }

    fn peak(flops: Option<f64>, bytes: Option<f64>) -> Peak {
        Peak {
            flops,
            bytes,
            source: "given".to_owned(),
            ..Default::default()
        }
    }

    #[test]
    fn known_durations_and_counts_give_exact_rates() {
        // 1,000 ns each; 2e6, 4e6, 6e6 FLOPs: 2, 4, 6 TFLOP/s; 1e6 bytes each: 1 TB/s.
        let e = event(
            &[1000, 1000, 1000],
            Some(&[2_000_000, 4_000_000, 6_000_000]),
            Some(&[1_000_000; 3]),
        );
        let w = WorkRow::of(&e, Some(&peak(Some(8e12), Some(2e12)))).unwrap();
        let f = w.flops_per_s.unwrap();
        assert_eq!((f.median, f.low, f.high), (4e12, 2e12, 6e12));
        assert_eq!(w.bytes_per_s.unwrap().median, 1e12);
        assert_eq!(w.intensity, Some(4.0));
        // Ridge point 8e12 / 2e12 = 4 FLOPs/byte: at it, compute-bound.
        assert_eq!(w.bound, Some(Bound::Compute));
        assert_eq!(w.mfu, Some(0.5));
        let w = WorkRow::of(&e, Some(&peak(Some(8e12), Some(1e12)))).unwrap();
        assert_eq!(w.bound, Some(Bound::Memory));
        // Without a peak: rates, no MFU, no bound.
        let w = WorkRow::of(&e, None).unwrap();
        assert_eq!((w.mfu, w.bound), (None, None));
        // Sizes that change with the run: each sample by its own work.
        let e = event(&[100, 200], Some(&[100, 200]), None);
        assert_eq!(
            WorkRow::of(&e, None).unwrap().flops_per_s.unwrap().median,
            1e9
        );
    }

    #[test]
    fn over_100_percent_is_flagged_and_lists_of_the_wrong_length_are_ignored() {
        assert!(utilization(1.5).contains(">100%! check the peak or the flops key"));
        assert!(over_peak(1.0001) && !over_peak(1.0) && !over_peak(f64::NAN));
        assert_eq!(utilization(0.425), "42.5%");
        let e = event(&[10, 10], Some(&[1]), None);
        assert_eq!(WorkRow::of(&e, None), None);
        assert_eq!(WorkRow::of(&Event::default(), None), None);
        assert_eq!(human_rate(1.234e12), "1.23T");
        assert_eq!(human_rate(45.6e9), "45.6G");
        assert_eq!(human_rate(980.0), "980");
    }

    /// A peak of 1e308 (`PROF_PEAK_FLOPS=1e308`) and the tiny MFU against it, or an MFU of
    /// 1e300 against a tiny peak, print as short figures: SI prefixes up to E (exa), then
    /// scientific notation, never hundreds of digits.
    #[test]
    fn huge_and_tiny_figures_stay_short() {
        assert_eq!(human_rate(1e308), "1.00e308");
        assert_eq!(human_rate(-2.5e40), "-2.50e40");
        assert_eq!(human_rate(1.5e18), "1.50E");
        assert_eq!(human_rate(999.4e18), "999E");
        assert_eq!(human_rate(999.6e18), "1.00e21");
        assert_eq!(human_rate(f64::MAX), "1.80e308");
        assert_eq!(utilization(1e-300), "0.0%");
        let huge = utilization(1e300);
        assert!(huge.starts_with("1.00e302% >100%!"), "{huge}");
        for v in [1e308, f64::MAX, 1e-308, 5e-324, 1e300] {
            assert!(human_rate(v).len() <= 10, "{v}: {}", human_rate(v));
            assert!(utilization(v).len() <= 60, "{v}: {}", utilization(v));
        }
    }
}
