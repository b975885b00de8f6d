//! The `PROF_*` variables, read and validated once at start-up into a [`Config`].
//!
//! Every bad value is reported before any training runs, in the shape of a compiler error: the
//! variable, the value, a caret under the offending column and what was expected. The variables
//! themselves (name, default, meaning, parser) are one table, [`vars::VARIABLES`], which drives
//! the parsing, the list of known names and the reference in `docs/reference.md` (a test holds
//! the two together); where the results go (`PROF_OUT`'s placeholders, the rank, the checks of
//! the path) is `output/`.

use std::fmt;

use profiler_format::filter::{render_error, Filter};
pub(crate) use profiler_format::write::shorten;

pub(crate) mod vars;
pub(crate) use vars::unknown_vars;

/// What the profiler does after warmup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One event measured per iteration, `repeat` iterations per event (the default).
    Sample,
    /// Every selected event measured in each of `repeat` iterations.
    Trace,
    /// `sample` forever: each pass of the schedule is a window whose statistics are kept (up
    /// to `windows` of them) and written as the run goes.
    Continuous,
    /// Nothing armed, nothing written.
    Off,
}

impl Mode {
    /// The name used in `PROF_MODE` and `prof.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sample => "sample",
            Mode::Trace => "trace",
            Mode::Continuous => "continuous",
            Mode::Off => "off",
        }
    }
}

/// The profiler's settings, normally read from the `PROF_*` variables.
#[derive(Clone, Debug)]
pub struct Config {
    /// Which probes take part (`PROF_FILTER`).
    pub filter: Filter,
    /// `PROF_MODE`.
    pub mode: Mode,
    /// Iterations before the first measurement (`PROF_WARMUP`).
    pub warmup: u32,
    /// Measured iterations per event, or active iterations in `trace` mode (`PROF_REPEAT`).
    pub repeat: u32,
    /// The output path template, with `%p` and `%r` not yet expanded (`PROF_OUT`).
    pub out: String,
    /// Exit the process with status 0 once the results are written (`PROF_EXIT=1`).
    pub exit: bool,
    /// Bound on distinct events kept (`PROF_MAX_EVENTS`).
    pub max_events: u32,
    /// Bound on the probes that take part in a run, those registered while it runs included
    /// (`PROF_MAX_PROBES`); the later ones are not measured.
    pub max_probes: u32,
    /// Bound on the distinct input shapes kept per event of a probe with a `shape` key
    /// (`PROF_SHAPES`): the ones with the most samples; the rest are counted as others, with
    /// a warning.
    pub max_shapes: u32,
    /// `continuous` mode: the most windows kept (`PROF_WINDOWS`) besides the baseline windows;
    /// the oldest is dropped first.
    pub windows: u32,
    /// `continuous` mode: how many of the first windows after warmup are kept for the whole run
    /// (`PROF_BASELINE_WINDOWS`), so that drift can be judged against the run's start; 0 keeps
    /// none.
    pub baseline_windows: u32,
    /// Print the summary table on stderr when the results are written.
    pub summary: bool,
    /// The most memory reserved for samples (default 1 GiB); events past it are left out with
    /// a warning rather than risking the program on an allocation.
    pub sample_budget_bytes: usize,
    /// Push an NVTX range around every selected probe (`PROF_NVTX=1`; `cuda` builds).
    pub nvtx: bool,
    /// Limit the CUDA profiler's capture to the measured iterations (`PROF_CAPTURE=1`).
    pub capture: bool,
    /// Device synchronization level, 0 to 3 (`PROF_SYNC`).
    pub sync: u8,
    /// Attribute kernels to the measured events through CUPTI (`PROF_KERNELS=1`).
    pub kernels: bool,
    /// `continuous` mode: the control file asking for traces on demand (`PROF_CONTROL`).
    pub control: Option<String>,
    /// `continuous` mode: where traces taken on demand go (`PROF_TRACE_OUT`; `None`: beside
    /// `PROF_OUT`).
    pub trace_out: Option<String>,
    /// `continuous` mode: where the Prometheus endpoint listens (`PROF_METRICS`, `ADDR:PORT`;
    /// each rank binds `PORT` plus its rank, port 0 any free port).
    pub metrics: Option<String>,
    /// A bind failure of `PROF_METRICS` is a warning, not an error (`PROF_METRICS_OPTIONAL=1`).
    pub metrics_optional: bool,
    /// The `job` label of the series served (`PROF_JOB`; `None`: the program's file name).
    pub job: Option<String>,
    /// The machine's peak FLOP/s given by the user (`PROF_PEAK_FLOPS`).
    pub peak_flops: Option<f64>,
    /// The machine's peak memory bandwidth in bytes/s given by the user (`PROF_PEAK_BYTES`).
    pub peak_bytes: Option<f64>,
    /// The peak read from a `peak.json` written by `prof peak` (`PROF_PEAK`), and its path.
    pub peak_file: Option<(String, profiler_format::peak::Peak)>,
    /// Which probes `delay` delays (`PROF_DELAY_FILTER`).
    pub delay_filter: Option<Filter>,
    /// The delay after every run of the probes `delay_filter` selects (`PROF_DELAY`).
    pub delay: Option<DelayAmount>,
    /// CPU samples per second of each thread's CPU time (`PROF_CPU_SAMPLE`), `None`: off.
    pub cpu_sample: Option<u32>,
    /// What interrupts the sampled threads (`PROF_CPU_SAMPLE_CLOCK`).
    pub cpu_sample_clock: SampleClock,
}

/// What interrupts each sampled thread every `1/PROF_CPU_SAMPLE` s of its CPU time
/// (`PROF_CPU_SAMPLE_CLOCK`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SampleClock {
    /// A `perf_event_open` task-clock event per thread (a high-resolution timer: one signal
    /// per period) when the kernel allows it, else a POSIX timer, said once on stderr
    /// (`auto`, the default).
    #[default]
    Auto,
    /// A POSIX timer of each thread's CPU clock (`timer_create`), checked at the kernel's tick:
    /// above the tick rate a signal stands for several periods (`posix`).
    Posix,
}

/// How long `PROF_DELAY` delays each run of a selected probe.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DelayAmount {
    /// A fixed duration, in nanoseconds (`50us`; 0 delays by nothing on the same path).
    Fixed(u64),
    /// A share of the run's own duration (`10%` is 0.1).
    Share(f64),
}

impl fmt::Display for DelayAmount {
    /// The amount as `PROF_DELAY` takes it back (`50us`, `1500ns`, `10%`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DelayAmount::Fixed(0) => f.write_str("0"),
            DelayAmount::Fixed(ns) if ns % 1_000_000 == 0 => write!(f, "{}ms", ns / 1_000_000),
            DelayAmount::Fixed(ns) if ns % 1_000 == 0 => write!(f, "{}us", ns / 1_000),
            DelayAmount::Fixed(ns) => write!(f, "{ns}ns"),
            DelayAmount::Share(share) => write!(f, "{}%", share * 100.0),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            filter: Filter::all(),
            mode: Mode::Sample,
            warmup: 10,
            repeat: 50,
            out: "prof.json".to_owned(),
            exit: false,
            max_events: 4096,
            max_probes: 4096,
            max_shapes: 16,
            windows: 100,
            baseline_windows: 3,
            summary: true,
            sample_budget_bytes: 1 << 30,
            nvtx: false,
            capture: false,
            sync: 0,
            kernels: false,
            control: None,
            trace_out: None,
            metrics: None,
            metrics_optional: false,
            job: None,
            peak_flops: None,
            peak_bytes: None,
            peak_file: None,
            delay_filter: None,
            delay: None,
            cpu_sample: None,
            cpu_sample_clock: SampleClock::Auto,
        }
    }
}

impl Config {
    /// The peak the run records as `run.peak`: the figures `PROF_PEAK_FLOPS` and
    /// `PROF_PEAK_BYTES` give (source `given`, `detail` naming them), a figure they leave out
    /// taken from `PROF_PEAK`'s file when there is one; or that file's peak as it is (its own
    /// `source`, `measured` for `prof peak`'s); `None` when no variable gives one.
    pub fn peak(&self) -> Option<profiler_format::peak::Peak> {
        use profiler_format::peak::{Peak, PEAK_SCHEMA};
        let file = self.peak_file.as_ref();
        if self.peak_flops.is_none() && self.peak_bytes.is_none() {
            return file.map(|(_, peak)| peak.clone());
        }
        let mut detail = Vec::new();
        let mut figure = |given: Option<f64>, var: &str, in_file: Option<f64>, key: &str| match (
            given, file, in_file,
        ) {
            (Some(v), _, _) => {
                detail.push(format!("{var}={v:e}"));
                Some(v)
            }
            (None, Some((path, _)), Some(v)) => {
                detail.push(format!("{key} from PROF_PEAK={path}"));
                Some(v)
            }
            _ => None,
        };
        let flops = figure(
            self.peak_flops,
            "PROF_PEAK_FLOPS",
            file.and_then(|f| f.1.flops),
            "flops",
        );
        let bytes = figure(
            self.peak_bytes,
            "PROF_PEAK_BYTES",
            file.and_then(|f| f.1.bytes),
            "bytes",
        );
        Some(Peak {
            schema: PEAK_SCHEMA.to_owned(),
            flops,
            bytes,
            source: "given".to_owned(),
            detail: detail.join(", "),
            host: String::new(),
        })
    }
}

/// A `PROF_*` value that cannot be used. Its `Display` is the full message for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable at fault.
    pub var: &'static str,
    message: String,
}

impl ConfigError {
    /// An error with a ready-made message.
    pub fn new(var: &'static str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            var,
            message: message.into(),
        }
    }

    pub(crate) fn at(
        var: &'static str,
        value: &str,
        column: usize,
        width: usize,
        problem: &str,
        expected: &str,
    ) -> ConfigError {
        ConfigError::new(
            var,
            render_error(var, value, column, width, problem, expected),
        )
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Upper bounds that keep the memory reserved for samples sane (a typo of a few zeros must not
/// take the training job down with an allocation failure).
pub const MAX_REPEAT: u32 = 1_000_000;
/// See [`MAX_REPEAT`].
pub const MAX_EVENTS: u32 = 1_000_000;
/// The most probes `PROF_MAX_PROBES` may let take part.
pub const MAX_PROBES: u32 = 1_000_000;
/// The most distinct shapes `PROF_SHAPES` may keep per event.
pub const MAX_SHAPES: u32 = 10_000;
/// The most windows `continuous` mode may keep (`PROF_WINDOWS`).
pub const MAX_WINDOWS: u32 = 100_000;
/// The most baseline windows `continuous` mode may keep (`PROF_BASELINE_WINDOWS`).
pub const MAX_BASELINE_WINDOWS: u32 = 1_000;

impl Config {
    /// Reads the `PROF_*` variables of this process.
    ///
    /// A variable whose value is not valid UTF-8 is an error naming it (never treated as unset).
    pub fn from_env() -> Result<Config, ConfigError> {
        for var in vars::VARIABLES {
            vars::env_text(var.name)?;
        }
        Config::from_lookup(|var| std::env::var(var).ok())
    }

    /// Reads the variables through `lookup` (tests pass a map), in the order of the variables'
    /// table (`config/vars.rs`, the order of `docs/reference.md`): the first bad value is the
    /// one reported.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        for var in vars::VARIABLES {
            if let Some(value) = lookup(var.name) {
                (var.set)(&mut config, &value)?;
            }
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks the combinations of values that are wrong together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if matches!(self.mode, Mode::Sample | Mode::Continuous) && self.warmup == 0 {
            return Err(ConfigError::new(
                "PROF_WARMUP",
                format!(
                    "error: PROF_WARMUP=0 cannot be used in {} mode: the warmup iterations are \
                     how the events and their order are learned.\n  = help: set PROF_WARMUP to \
                     1 or more (default 10), or use PROF_MODE=trace",
                    self.mode.as_str()
                ),
            ));
        }
        for (var, set) in [
            ("PROF_CONTROL", self.control.is_some()),
            ("PROF_TRACE_OUT", self.trace_out.is_some()),
        ] {
            if set && self.mode != Mode::Continuous {
                return Err(ConfigError::new(
                    var,
                    format!(
                        "error: {var} is for traces taken on demand, which only continuous mode \
                         takes (PROF_MODE={}).\n  = help: set PROF_MODE=continuous, or unset {var}",
                        self.mode.as_str()
                    ),
                ));
            }
        }
        if self.metrics.is_some() && self.mode != Mode::Continuous {
            return Err(ConfigError::new(
                "PROF_METRICS",
                format!(
                    "error: PROF_METRICS serves continuous mode's windows, and PROF_MODE={} has \
                     none.\n  = help: set PROF_MODE=continuous, or unset PROF_METRICS",
                    self.mode.as_str()
                ),
            ));
        }
        if self.windows == 0 || self.windows > MAX_WINDOWS {
            return Err(ConfigError::new(
                "PROF_WINDOWS",
                format!("error: PROF_WINDOWS must be from 1 to {MAX_WINDOWS}"),
            ));
        }
        if self.baseline_windows > MAX_BASELINE_WINDOWS {
            return Err(ConfigError::new(
                "PROF_BASELINE_WINDOWS",
                format!("error: PROF_BASELINE_WINDOWS must be from 0 to {MAX_BASELINE_WINDOWS}"),
            ));
        }
        if self.repeat == 0 || self.repeat > MAX_REPEAT {
            return Err(ConfigError::new(
                "PROF_REPEAT",
                format!("error: PROF_REPEAT must be from 1 to {MAX_REPEAT}"),
            ));
        }
        if self.max_events == 0 || self.max_events > MAX_EVENTS {
            return Err(ConfigError::new(
                "PROF_MAX_EVENTS",
                format!("error: PROF_MAX_EVENTS must be from 1 to {MAX_EVENTS}"),
            ));
        }
        if self.max_shapes == 0 || self.max_shapes > MAX_SHAPES {
            return Err(ConfigError::new(
                "PROF_SHAPES",
                format!("error: PROF_SHAPES must be from 1 to {MAX_SHAPES}"),
            ));
        }
        match (&self.delay_filter, &self.delay) {
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "PROF_DELAY_FILTER",
                    "error: PROF_DELAY_FILTER is set but PROF_DELAY is not: the probes to delay \
                     are named, not by how much.\n  = help: set PROF_DELAY too (50us, 10%), or \
                     unset PROF_DELAY_FILTER (prof whatif sets both)",
                ))
            }
            (None, Some(_)) => {
                return Err(ConfigError::new(
                    "PROF_DELAY",
                    "error: PROF_DELAY is set but PROF_DELAY_FILTER is not: which probes should \
                     it delay?\n  = help: set PROF_DELAY_FILTER to a filter such as layer=mlp \
                     (the PROF_FILTER grammar; --list-probes shows the probes), or unset \
                     PROF_DELAY",
                ))
            }
            _ => {}
        }
        if self.max_probes == 0 || self.max_probes > MAX_PROBES {
            return Err(ConfigError::new(
                "PROF_MAX_PROBES",
                format!("error: PROF_MAX_PROBES must be from 1 to {MAX_PROBES}"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    /// A bad value of any variable, however long, is never echoed whole: each message stays
    /// short (PROF_CPU_SAMPLE_CLOCK's once repeated a 100 KB value).
    #[test]
    fn a_huge_bad_value_is_shortened_in_every_message() {
        let huge = format!("x{}\u{7}", "y".repeat(100_000));
        for var in super::vars::VARIABLES {
            if let Err(e) = config(&[(var.name, &huge)]) {
                let text = e.to_string();
                assert!(text.len() < 2_000, "{}: {} bytes", var.name, text.len());
            }
        }
    }

    #[test]
    fn defaults() {
        let c = config(&[]).unwrap();
        assert_eq!(c.mode, Mode::Sample);
        assert_eq!((c.warmup, c.repeat, c.max_events), (10, 50, 4096));
        assert_eq!(c.out, "prof.json");
        assert!(!c.exit);
        assert!(c.filter.selects_all());
    }

    #[test]
    fn values_parse() {
        let c = config(&[
            ("PROF_MODE", "trace"),
            ("PROF_WARMUP", "0"),
            ("PROF_REPEAT", " 7 "),
            ("PROF_EXIT", "1"),
            ("PROF_MAX_EVENTS", "12"),
            ("PROF_MAX_PROBES", "34"),
            ("PROF_FILTER", "layer=mlp"),
        ])
        .unwrap();
        assert_eq!(
            (c.mode, c.warmup, c.repeat, c.max_events, c.max_probes),
            (Mode::Trace, 0, 7, 12, 34)
        );
        assert!(c.exit);
        assert_eq!(c.filter.source(), "layer=mlp");
    }

    #[test]
    fn bad_numbers_point_at_the_column() {
        let e = config(&[("PROF_WARMUP", "1x")]).unwrap_err();
        assert_eq!(e.var, "PROF_WARMUP");
        let text = e.to_string();
        assert!(text.contains("PROF_WARMUP at column 2"), "{text}");
        assert!(text.contains(" ^ "), "{text}");
        let e = config(&[("PROF_REPEAT", "0")]).unwrap_err();
        assert!(e.to_string().contains("at least 1"), "{e}");
        let e = config(&[("PROF_MAX_EVENTS", "99999999999")]).unwrap_err();
        assert!(e.to_string().contains("too large"), "{e}");
        let e = config(&[("PROF_MAX_PROBES", "0")]).unwrap_err();
        assert_eq!(e.var, "PROF_MAX_PROBES");
        assert!(e.to_string().contains("at least 1"), "{e}");
        let e = config(&[("PROF_MAX_PROBES", "2000000")]).unwrap_err();
        assert!(e.to_string().contains("from 1 to 1000000"), "{e}");
        let e = config(&[("PROF_REPEAT", "5000000")]).unwrap_err();
        assert!(e.to_string().contains("from 1 to 1000000"), "{e}");
        let e = config(&[("PROF_REPEAT", "")]).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
    }

    #[test]
    fn metrics_address_mode_and_job() {
        let c = config(&[
            ("PROF_MODE", "continuous"),
            ("PROF_METRICS", "127.0.0.1:9464"),
            ("PROF_METRICS_OPTIONAL", "1"),
            ("PROF_JOB", "train"),
        ])
        .unwrap();
        assert_eq!(c.metrics.as_deref(), Some("127.0.0.1:9464"));
        assert!(c.metrics_optional);
        assert_eq!(c.job.as_deref(), Some("train"));
        let c = config(&[("PROF_MODE", "continuous"), ("PROF_METRICS", "[::1]:0")]).unwrap();
        assert_eq!(c.metrics.as_deref(), Some("[::1]:0"));
        // Only continuous mode has windows to serve.
        let e = config(&[("PROF_METRICS", "127.0.0.1:9464")]).unwrap_err();
        assert_eq!(e.var, "PROF_METRICS");
        assert!(e.to_string().contains("PROF_MODE=continuous"), "{e}");
        for (bad, says) in [
            ("9464", "no port"),
            (":9464", "no address"),
            ("localhost:http", "not a port"),
            ("localhost:70000", "not a port"),
        ] {
            let e = config(&[("PROF_MODE", "continuous"), ("PROF_METRICS", bad)]).unwrap_err();
            assert_eq!(e.var, "PROF_METRICS");
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
        let e = config(&[("PROF_JOB", " ")]).unwrap_err();
        assert!(e.to_string().contains("empty job name"), "{e}");
    }

    #[test]
    fn bad_mode_exit_and_out() {
        let e = config(&[("PROF_MODE", "samples")]).unwrap_err();
        assert!(
            e.to_string().contains("sample, trace, continuous, off"),
            "{e}"
        );
        let c = config(&[("PROF_MODE", "continuous"), ("PROF_WINDOWS", "7")]).unwrap();
        assert_eq!((c.mode, c.windows), (Mode::Continuous, 7));
        let e = config(&[("PROF_MODE", "continuous"), ("PROF_WARMUP", "0")]).unwrap_err();
        assert!(e.to_string().contains("continuous mode"), "{e}");
        let e = config(&[("PROF_WINDOWS", "0")]).unwrap_err();
        assert_eq!(e.var, "PROF_WINDOWS");
        assert_eq!(config(&[]).unwrap().baseline_windows, 3);
        let c = config(&[("PROF_BASELINE_WINDOWS", "0")]).unwrap();
        assert_eq!(c.baseline_windows, 0);
        let e = config(&[("PROF_BASELINE_WINDOWS", "1001")]).unwrap_err();
        assert_eq!(e.var, "PROF_BASELINE_WINDOWS");
        let text = e.to_string();
        assert!(
            text.contains("invalid PROF_BASELINE_WINDOWS at column 1"),
            "{text}"
        );
        assert!(text.contains("from 0 to 1000"), "{text}");
        let e = config(&[("PROF_BASELINE_WINDOWS", " 3w")]).unwrap_err();
        assert!(e.to_string().contains("at column 3"), "{e}");
        assert!(e.to_string().contains("unexpected character `w`"), "{e}");
        let e = config(&[("PROF_EXIT", "yes")]).unwrap_err();
        assert_eq!(e.var, "PROF_EXIT");
        let e = config(&[("PROF_OUT", "prof-%x.json")]).unwrap_err();
        assert!(e.to_string().contains("column 6"), "{e}");
        let e = config(&[("PROF_OUT", "")]).unwrap_err();
        assert_eq!(e.var, "PROF_OUT");
    }

    #[test]
    fn delay_amounts_parse_and_bad_ones_say_what_is_expected() {
        let c = config(&[("PROF_DELAY_FILTER", "layer=mlp"), ("PROF_DELAY", " 50us")]).unwrap();
        assert_eq!(c.delay, Some(DelayAmount::Fixed(50_000)));
        assert_eq!(c.delay_filter.unwrap().source(), "layer=mlp");
        for (text, amount, back) in [
            ("10%", DelayAmount::Share(0.1), "10%"),
            ("1.5ms", DelayAmount::Fixed(1_500_000), "1500us"),
            ("250ns", DelayAmount::Fixed(250), "250ns"),
            ("0", DelayAmount::Fixed(0), "0"),
            ("1s", DelayAmount::Fixed(1_000_000_000), "1000ms"),
        ] {
            let c = config(&[("PROF_DELAY_FILTER", "name=x"), ("PROF_DELAY", text)]).unwrap();
            assert_eq!(c.delay, Some(amount), "{text}");
            assert_eq!(amount.to_string(), back);
        }
        for (text, problem) in [
            ("50", "no unit"),
            ("50 parsecs", "unknown unit `parsecs`"),
            ("abc", "not a number"),
            ("", "empty value"),
            ("2s", "longer than 1s"),
            ("2000%", "more than 1000%"),
        ] {
            let e = config(&[("PROF_DELAY_FILTER", "name=x"), ("PROF_DELAY", text)]).unwrap_err();
            assert_eq!(e.var, "PROF_DELAY", "{text}");
            assert!(e.to_string().contains(problem), "{text}: {e}");
            assert!(e.to_string().contains("like 50us"), "{text}: {e}");
        }
        let e = config(&[("PROF_DELAY", "10%")]).unwrap_err();
        assert_eq!(e.var, "PROF_DELAY");
        assert!(e.to_string().contains("PROF_DELAY_FILTER"), "{e}");
        let e = config(&[("PROF_DELAY_FILTER", "layer=mlp")]).unwrap_err();
        assert_eq!(e.var, "PROF_DELAY_FILTER");
        let e = config(&[("PROF_DELAY_FILTER", "layer=(")]).unwrap_err();
        assert_eq!(e.var, "PROF_DELAY_FILTER");
    }

    #[test]
    fn zero_warmup_needs_trace_mode() {
        let e = config(&[("PROF_WARMUP", "0")]).unwrap_err();
        assert!(e.to_string().contains("PROF_MODE=trace"), "{e}");
        assert!(config(&[("PROF_WARMUP", "0"), ("PROF_MODE", "trace")]).is_ok());
    }
}
