//! Selection: `PROF_FILTER` and the other `PROF_*` variables, parsed once at start-up into a
//! [`Config`](config::Config) and a [`Filter`](filter::Filter).

pub(crate) mod config;
pub(crate) mod filter;
