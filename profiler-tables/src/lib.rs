//! The tables computed from a `prof.json` (read through `profiler-format`), all of them by one
//! call ([`tables::profile_tables`]): the measures of each event and of the iteration
//! ([`rows`]), the one table of columns every output renders ([`columns`]), where the mean iteration goes ([`breakdown`]), and the end-of-run summary
//! ([`summary`]), with the descriptive statistics ([`descriptive_stats`]) and the text for people
//! ([`table_text`]) they need. The profiled program prints its summary from here (through
//! profiler-core's `enable` feature) and `prof report` builds its rows from here (through
//! `profiler-analysis`), so that both print the same numbers.
//!
//! `docs/reference.md` ("prof report", "The end-of-run summary") defines each column;
//! `docs/architecture.md` shows where this crate sits in the pipeline.
#![warn(missing_docs)]

pub mod advice;
pub mod breakdown;
pub mod columns;
pub mod descriptive_stats;
pub mod rows;
pub mod shapes;
pub mod summary;
pub mod table_text;
pub mod tables;
pub mod work;
