//! The tables of one profile, computed by one call ([`profile_tables`]) so that `prof report`
//! and the end-of-run summary build theirs the same way: the rows ([`crate::rows`]) and what
//! comes of them, the breakdown ([`crate::breakdown`]) and the step's work
//! ([`crate::step_work`]).

use crate::breakdown::{breakdown, Breakdown};
use crate::rows::{device_usage, profile_rows, DeviceUsageRow, ProfileRows};
use crate::step_work::work_line;
use profiler_format::Profile;

/// Everything the tables of one profile are made of, computed by one call ([`profile_tables`]),
/// so that `prof report` and the end-of-run summary build theirs the same way: the rows, where
/// the mean iteration goes, the line on the step's work and each device's memory.
#[derive(Clone, Debug)]
pub struct ProfileTables {
    /// The measures ([`profile_rows`]), the event rows in the order of `profile.events`.
    pub rows: ProfileRows,
    /// Where the mean iteration goes ([`breakdown`] of the rows); `None`
    /// without a measured iteration.
    pub breakdown: Option<Breakdown>,
    /// The line on the step's work with the peak's whole detail and the definitions (`prof
    /// report`'s, [`work_line`]); `None` when no event counts its work.
    pub work: Option<String>,
    /// The same line brief, as the end-of-run summary gives it.
    pub work_brief: Option<String>,
    /// Each device's memory in use over the steps ([`device_usage`]).
    pub device_memory: Vec<DeviceUsageRow>,
}

/// The tables of `profile`, with [`profile_rows`]'s thresholds: the rows and what is computed
/// from them, once.
pub fn profile_tables(
    profile: &Profile,
    cv_threshold: f64,
    perturbation_threshold: f64,
) -> ProfileTables {
    let rows = profile_rows(profile, cv_threshold, perturbation_threshold);
    let breakdown = breakdown(profile, &rows);
    let peak = profile.run.peak.as_ref();
    let line = |definitions| work_line(&rows.events, rows.iteration.mean_ns, peak, definitions);
    let (work, work_brief) = (line(true), line(false));
    ProfileTables {
        breakdown,
        work,
        work_brief,
        device_memory: device_usage(profile),
        rows,
    }
}
