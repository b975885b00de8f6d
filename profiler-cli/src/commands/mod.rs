//! One file per `prof` command: its flags (a `clap::Args` struct, whose doc comment is the
//! command's help) and its `run`, which returns the exit status or a [`Failure`]. What several
//! commands share is in [`crate::common`]; the machinery behind `prof ab`, `prof trigger` and
//! `prof watch` in [`crate::ab`], [`crate::trigger`] and [`crate::watch`], behind `prof peak`
//! in the crate `profiler-peak`, and every report in `profiler-analysis`.
//!
//! [`Failure`]: crate::common::Failure

pub mod ab;
pub mod advise;
pub mod diff;
pub mod flame;
pub mod html;
pub mod merge;
pub mod peak;
pub mod pprof;
pub mod report;
pub mod scale;
pub mod trace;
pub mod trigger;
pub mod watch;
pub mod whatif;
