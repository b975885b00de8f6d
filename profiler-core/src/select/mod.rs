//! Selection: `PROF_FILTER` and the other `PROF_*` variables, parsed once at start-up into a
//! [`Config`](config::Config) and a [`Filter`](profiler_format::filter::Filter) (the
//! `PROF_FILTER` language lives in `profiler-format`, so that `prof` applies the same filter to a
//! profile's events).

pub(crate) mod config;
