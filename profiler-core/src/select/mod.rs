//! Selection: `PROF_FILTER` and the other `PROF_*` variables, parsed once at start-up into a
//! [`Config`](config::Config) and a [`Filter`](filter::Filter).

pub(crate) mod config;
/// The `PROF_FILTER` language, which lives in `profiler-format` so that `prof` applies the same
/// filter to a profile's events; re-exported here under its old path.
pub(crate) use profiler_format::filter;
