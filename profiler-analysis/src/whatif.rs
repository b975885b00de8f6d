//! `prof whatif`: how much the iteration changes per unit of delay injected into some probes.
//!
//! The runs come in rounds, as `prof ab` makes them: in each, one run of the program with the
//! delay (`PROF_DELAY`) and one with a delay of 0 on the same probes (the same path through the
//! profiler, so that the only difference is the spin). Each delayed run says how much delay it
//! asked for and how long its spins took (`run.delay.requested_ns` and `injected_ns`, over
//! `iterations.count - 1`: the delay begins at the first `step()`). Per round `k`:
//!
//! `slope_k = (fast wall of the delayed run - fast wall of the base run) / delay asked for per
//! iteration`,
//!
//! where a run's fast wall is the fastest-5% time of its measured iterations ([`stats::fast`],
//! what `prof ab` judges: on a shared machine delays only add, and the fastest iterations are
//! what they cannot move; measured on `examples/whatif.rs` while a build ran, one round's
//! medians gave 1.85 where its fastest-5% times gave 1.00). The medians are reported beside it.
//! The delay in the fastest iterations is the one asked for: a spin takes longer than asked
//! only when its thread loses the processor before its end, which the fastest iterations are
//! the ones without. Divided by the spins' measured time instead, the estimates came out low by
//! that overrun under load (0.92 and 0.45 for 1 and 0.5, with spins 10% and 13% over;
//! docs/overhead.md). The spins' time is reported beside.
//! The estimate is the mean of the rounds'
//! slopes and its interval the paired one-sample t over the rounds that `prof ab` uses
//! ([`paired_interval`]): about 1 means every nanosecond of the probes' runs is on the
//! iteration's critical path, about 0 that they are hidden behind other work, in between that
//! they are partly hidden.
//!
//! A delay measures the cost of slowing down. It equals the gain of speeding up only where the
//! schedule does not change (Coz's argument, Curtsinger and Berger, SOSP 2015): where the
//! probes' work waits for something else (slack before a join), a delay first fills the slack
//! and costs nothing, while a speedup gains nothing either; where they are on the critical path
//! both are 1. The two differ where a speedup would let another path become the critical one:
//! then speeding up gains less than the slope says, past the point where the other path takes
//! over.

use serde::Serialize;

use crate::diff::paired_interval;
use crate::stats;
use profiler_format::Profile;

/// One round: the two runs' iterations and the delay injected per iteration.
#[derive(Clone, Debug, Serialize)]
pub struct Round {
    /// The base run's fastest-5% iteration (ns).
    pub base_ns: f64,
    /// The delayed run's fastest-5% iteration (ns).
    pub delayed_ns: f64,
    /// The base run's median iteration (ns).
    pub base_median_ns: f64,
    /// The delayed run's median iteration (ns).
    pub delayed_median_ns: f64,
    /// The delay the delayed run asked for per iteration (ns), less the base run's.
    pub delay_ns: f64,
    /// The time the delayed run's spins took per iteration (ns).
    pub injected_ns: f64,
    /// `(delayed_ns - base_ns) / delay_ns`.
    pub slope: f64,
}

/// What `prof whatif` found.
#[derive(Clone, Debug, Serialize)]
pub struct WhatIf {
    /// The probes delayed (`PROF_DELAY_FILTER`).
    pub filter: String,
    /// The delay of each of their runs (`PROF_DELAY`).
    pub delay: String,
    /// The rounds compared.
    pub rounds: usize,
    /// The median of the base runs' fastest-5% iterations (ns).
    pub base_iteration_ns: f64,
    /// The median of the delayed runs' fastest-5% iterations (ns).
    pub delayed_iteration_ns: f64,
    /// The median of the base runs' median iterations (ns).
    pub base_median_ns: f64,
    /// The median of the delayed runs' median iterations (ns).
    pub delayed_median_ns: f64,
    /// The median over the rounds of the delay asked for per iteration (ns).
    pub delay_per_iteration_ns: f64,
    /// The median over the rounds of the time the spins took per iteration (ns): at least the
    /// delay asked for; more where a thread lost the processor before a spin's end.
    pub injected_per_iteration_ns: f64,
    /// The delayed runs' delayed runs of the probes per iteration (median over the rounds).
    pub calls_per_iteration: f64,
    /// The change of the iteration per unit of delay: the mean of the rounds' slopes.
    pub per_unit: f64,
    /// The lower bound of its interval.
    pub ci_low: f64,
    /// The upper bound of its interval.
    pub ci_high: f64,
    /// The interval's level is `1 - alpha`.
    pub alpha: f64,
    /// What the estimate means: `critical` (at least 0.85), `hidden` (at most 0.15) or
    /// `partly hidden`, when its whole interval says so; `inconclusive` when the interval
    /// reaches into two of them (or there is none).
    pub reading: &'static str,
    /// Each round.
    pub per_round: Vec<Round>,
}

/// A profile's fastest-5% and median measured iteration (ns), and its delay's requested and
/// injected time and runs per iteration.
fn run_figures(p: &Profile, side: &str, k: usize) -> Result<([f64; 2], [f64; 2], f64), String> {
    let walls = stats::as_f64(profiler_tables::rows::measured_walls(p));
    if walls.is_empty() {
        return Err(format!(
            "error: the {side} run of round {k} completed no iteration\n  = help: the program \
             must call profiler_core::step() once per iteration"
        ));
    }
    let Some(delay) = &p.run.delay else {
        return Err(format!(
            "error: the {side} run of round {k} recorded no run.delay: the program was not built \
             with a profiler-core that knows PROF_DELAY\n  = help: rebuild it with this \
             version of profiler-core (feature enable)"
        ));
    };
    // The iterations after the first step(): the delay begins there (a run before the loop,
    // the model's construction, lengthens no iteration).
    let n = p.iterations.count.saturating_sub(1).max(1) as f64;
    Ok((
        [stats::fast(&walls), stats::median(&walls)],
        [delay.requested_ns as f64 / n, delay.injected_ns as f64 / n],
        delay.calls as f64 / n,
    ))
}

/// The change per unit of delay from the rounds' profiles (`base[k]` and `delayed[k]` ran in
/// round `k`), with a `1 - alpha` interval.
pub fn whatif(base: &[Profile], delayed: &[Profile], alpha: f64) -> Result<WhatIf, String> {
    let mut rounds = Vec::new();
    let mut calls = Vec::new();
    for (k, (b, d)) in base.iter().zip(delayed).enumerate() {
        let ([base_ns, base_median_ns], [base_delay, _], _) = run_figures(b, "base", k)?;
        let ([delayed_ns, delayed_median_ns], [requested, injected_ns], c) =
            run_figures(d, "delayed", k)?;
        let delay_ns = requested - base_delay;
        let delayed_runs = d.run.delay.as_ref().map_or(0, |x| x.calls);
        if delay_ns <= 0.0 && delayed_runs > 0 {
            return Err(format!(
                "error: the delayed run of round {k} asked for no delay: its {delayed_runs} delayed \
                 runs' delays round to 0ns (a delay is counted in whole nanoseconds)\n  = help: \
                 give a larger --delay (1ns or more a run; a share, such as 10%, of runs this \
                 short is less)"
            ));
        }
        if delay_ns <= 0.0 {
            return Err(format!(
                "error: the delayed run of round {k} asked for no delay ({} runs of the probes \
                 delayed in {} iterations)\n  = help: the filter's probes must run inside the \
                 iterations; check it with the program's --list-probes and PROF_FILTER set to it",
                d.run.delay.as_ref().map_or(0, |x| x.calls),
                d.iterations.count
            ));
        }
        calls.push(c);
        rounds.push(Round {
            base_ns,
            delayed_ns,
            base_median_ns,
            delayed_median_ns,
            delay_ns,
            injected_ns,
            slope: (delayed_ns - base_ns) / delay_ns,
        });
    }
    if rounds.is_empty() {
        return Err("error: no round to compare".to_owned());
    }
    let slopes: Vec<f64> = rounds.iter().map(|r| r.slope).collect();
    let (per_unit, ci_low, ci_high) =
        paired_interval(&slopes, alpha).unwrap_or((slopes[0], f64::NEG_INFINITY, f64::INFINITY));
    let of = |f: fn(&Round) -> f64| stats::median(&rounds.iter().map(f).collect::<Vec<_>>());
    let delay = delayed.first().and_then(|p| p.run.delay.as_ref());
    Ok(WhatIf {
        filter: delay.map(|d| d.filter.clone()).unwrap_or_default(),
        delay: delay.map(|d| d.amount.clone()).unwrap_or_default(),
        rounds: rounds.len(),
        base_iteration_ns: of(|r| r.base_ns),
        delayed_iteration_ns: of(|r| r.delayed_ns),
        base_median_ns: of(|r| r.base_median_ns),
        delayed_median_ns: of(|r| r.delayed_median_ns),
        delay_per_iteration_ns: of(|r| r.delay_ns),
        injected_per_iteration_ns: of(|r| r.injected_ns),
        calls_per_iteration: stats::median(&calls),
        per_unit,
        ci_low,
        ci_high,
        alpha,
        reading: reading(ci_low, ci_high),
        per_round: rounds,
    })
}

/// What an estimate whose interval is `low` to `high` means (see [`WhatIf::reading`]): the
/// reading of the whole interval, `inconclusive` when its ends read differently (a reading
/// from the estimate alone said "on the critical path" of 78 with an interval of -438 to 594).
pub fn reading(low: f64, high: f64) -> &'static str {
    let of = |x: f64| {
        if x >= 0.85 {
            "critical"
        } else if x <= 0.15 {
            "hidden"
        } else {
            "partly hidden"
        }
    };
    if low.is_finite() && high.is_finite() && of(low) == of(high) {
        of(low)
    } else {
        "inconclusive"
    }
}

/// The statement every output carries: what a delay measures, and where it differs from a
/// speedup.
pub const CAVEAT: &str = "A delay measures the cost of slowing these probes down. It equals the \
gain of speeding them up only where the schedule does not change (Coz's argument): a speedup can \
gain less than this, once another path becomes the one the iteration waits for.";

/// The result as text (`json`: as JSON).
pub fn render(w: &WhatIf, json: bool) -> String {
    if json {
        let mut s = serde_json::to_string_pretty(w).unwrap_or_default();
        s.push('\n');
        return s;
    }
    use profiler_tables::table_text::human_ns;
    let meaning = match w.reading {
        "critical" => {
            "on the critical path: every nanosecond of these runs is in the iteration; making \
             them faster pays in full"
        }
        "hidden" => {
            "hidden behind other work: the iteration does not wait for these runs; making them \
             faster buys nothing"
        }
        "partly hidden" => {
            "partly hidden: the iteration waits for part of these runs; making them faster pays \
             in part"
        }
        _ => {
            "inconclusive: the interval reaches into more than one reading (critical from 0.85, \
             hidden up to 0.15, partly hidden between); more rounds (-n, --budget), a larger \
             --delay or more samples a run (PROF_REPEAT) narrow it"
        }
    };
    let sign = |x: f64| if x >= 0.0 { "+" } else { "-" };
    let change = w.delayed_iteration_ns - w.base_iteration_ns;
    let median_change = w.delayed_median_ns - w.base_median_ns;
    format!(
        "prof whatif: {filter} delayed by {delay} a run ({calls:.1} runs an iteration), \
         {rounds} rounds\n\
         \x20 iteration (fastest 5%)   {base} -> {delayed} ({sign}{change})\n\
         \x20 iteration (median)       {base_m} -> {delayed_m} ({sign_m}{change_m})\n\
         \x20 delay asked for          {per_iter} an iteration (the spins took {spun})\n\
         \x20 change per unit of delay {est:.2}  ({level:.0}% interval {lo:.2} to {hi:.2})\n\
         \x20 reading: {meaning}\n\
         note: {caveat}\n",
        filter = w.filter,
        delay = w.delay,
        calls = w.calls_per_iteration,
        rounds = w.rounds,
        base = human_ns(w.base_iteration_ns),
        delayed = human_ns(w.delayed_iteration_ns),
        sign = sign(change),
        change = human_ns(change.abs()),
        base_m = human_ns(w.base_median_ns),
        delayed_m = human_ns(w.delayed_median_ns),
        sign_m = sign(median_change),
        change_m = human_ns(median_change.abs()),
        per_iter = human_ns(w.delay_per_iteration_ns),
        spun = human_ns(w.injected_per_iteration_ns),
        est = w.per_unit,
        level = 100.0 * (1.0 - w.alpha),
        lo = w.ci_low,
        hi = w.ci_high,
        caveat = CAVEAT,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reading is the whole interval's: an estimate of 78 whose interval is -438 to 594
    /// (three rounds of a delay below the iteration's noise, found in review) is inconclusive,
    /// not "on the critical path" as the estimate alone read; an interval across a boundary
    /// too; the guide's three cases read as before.
    #[test]
    fn the_reading_is_the_whole_intervals() {
        assert_eq!(reading(-437.75, 594.41), "inconclusive");
        assert_eq!(reading(0.80, 0.98), "inconclusive");
        assert_eq!(reading(f64::NEG_INFINITY, f64::INFINITY), "inconclusive");
        assert_eq!(reading(0.97, 1.07), "critical");
        assert_eq!(reading(-0.06, 0.03), "hidden");
        assert_eq!(reading(0.45, 0.54), "partly hidden");
    }
}
