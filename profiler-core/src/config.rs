//! The `PROF_*` variables, read and validated once at start-up into a [`Config`].
//!
//! Every bad value is reported before any training runs, in the shape of a compiler error: the
//! variable, the value, a caret under the offending column and what was expected.

use std::fmt;
use std::path::PathBuf;

use crate::filter::{render_error, Filter};
pub(crate) use profiler_format::write::shorten;

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
            windows: 100,
            baseline_windows: 3,
            summary: true,
            sample_budget_bytes: 1 << 30,
            nvtx: false,
            capture: false,
            sync: 0,
            kernels: false,
        }
    }
}

/// The variables this build understands, for the unknown-variable warning.
pub const KNOWN_VARS: [&str; 14] = [
    "PROF_FILTER",
    "PROF_MODE",
    "PROF_WARMUP",
    "PROF_REPEAT",
    "PROF_OUT",
    "PROF_EXIT",
    "PROF_MAX_EVENTS",
    "PROF_MAX_PROBES",
    "PROF_WINDOWS",
    "PROF_BASELINE_WINDOWS",
    "PROF_NVTX",
    "PROF_CAPTURE",
    "PROF_SYNC",
    "PROF_KERNELS",
];

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

    fn at(
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
/// The most windows `continuous` mode may keep (`PROF_WINDOWS`).
pub const MAX_WINDOWS: u32 = 100_000;
/// The most baseline windows `continuous` mode may keep (`PROF_BASELINE_WINDOWS`).
pub const MAX_BASELINE_WINDOWS: u32 = 1_000;

fn parse_count(var: &'static str, value: &str, min: u32, max: u32) -> Result<u32, ConfigError> {
    let trimmed = value.trim();
    let lead = value.len() - value.trim_start().len();
    if let Some((i, c)) = trimmed.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        let column = value[..lead + i].chars().count() + 1;
        return Err(ConfigError::at(
            var,
            value,
            column,
            1,
            &format!("unexpected character `{c}`"),
            "a whole number, like 10",
        ));
    }
    if trimmed.is_empty() {
        return Err(ConfigError::at(
            var,
            value,
            1,
            1,
            "empty value",
            "a whole number, like 10",
        ));
    }
    match trimmed.parse::<u32>() {
        Ok(n) if n >= min && n <= max => Ok(n),
        Ok(n) if n > max => Err(ConfigError::at(
            var,
            value,
            lead + 1,
            trimmed.len(),
            &format!("{n} is too large"),
            &format!("a whole number from {min} to {max}"),
        )),
        Ok(n) => Err(ConfigError::at(
            var,
            value,
            lead + 1,
            trimmed.len(),
            &format!("{n} is too small"),
            &format!("a whole number of at least {min}"),
        )),
        Err(_) => Err(ConfigError::at(
            var,
            value,
            lead + 1,
            trimmed.len(),
            "number too large",
            &format!("a whole number from {min} to {max}"),
        )),
    }
}

fn check_out_template(value: &str) -> Result<(), ConfigError> {
    if value.trim().is_empty() {
        return Err(ConfigError::at(
            "PROF_OUT",
            value,
            1,
            1,
            "empty path",
            "a file path such as prof.json or runs/prof-%r.json",
        ));
    }
    let chars: Vec<char> = value.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '%' {
            match chars.get(i + 1) {
                Some('p' | 'r' | '%') => i += 1,
                _ => {
                    return Err(ConfigError::at(
                        "PROF_OUT",
                        value,
                        i + 1,
                        2.min(chars.len() - i),
                        "unknown `%` placeholder",
                        "%p (process id), %r (rank) or %% (a literal %)",
                    ))
                }
            }
        }
        i += 1;
    }
    Ok(())
}

/// A `0`/`1` switch.
fn parse_flag(var: &'static str, value: &str, meaning: &str) -> Result<bool, ConfigError> {
    match value.trim() {
        "1" => Ok(true),
        "0" | "" => Ok(false),
        _ => Err(ConfigError::at(
            var,
            value,
            1,
            value.chars().count().max(1),
            "unknown value",
            &format!("1 ({meaning}) or 0"),
        )),
    }
}

impl Config {
    /// Reads the `PROF_*` variables of this process.
    ///
    /// A variable whose value is not valid UTF-8 is an error naming it (never treated as unset).
    pub fn from_env() -> Result<Config, ConfigError> {
        for var in KNOWN_VARS {
            env_text(var)?;
        }
        Config::from_lookup(|var| std::env::var(var).ok())
    }

    /// Reads the variables through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        if let Some(value) = lookup("PROF_FILTER") {
            config.filter = Filter::parse(&value)
                .map_err(|e| ConfigError::new("PROF_FILTER", e.to_string()))?;
        }
        if let Some(value) = lookup("PROF_MODE") {
            config.mode = parse_mode(&value)?;
        }
        if let Some(value) = lookup("PROF_WARMUP") {
            config.warmup = parse_count("PROF_WARMUP", &value, 0, u32::MAX)?;
        }
        if let Some(value) = lookup("PROF_REPEAT") {
            config.repeat = parse_count("PROF_REPEAT", &value, 1, MAX_REPEAT)?;
        }
        if let Some(value) = lookup("PROF_MAX_EVENTS") {
            config.max_events = parse_count("PROF_MAX_EVENTS", &value, 1, MAX_EVENTS)?;
        }
        if let Some(value) = lookup("PROF_MAX_PROBES") {
            config.max_probes = parse_count("PROF_MAX_PROBES", &value, 1, MAX_PROBES)?;
        }
        if let Some(value) = lookup("PROF_WINDOWS") {
            config.windows = parse_count("PROF_WINDOWS", &value, 1, MAX_WINDOWS)?;
        }
        if let Some(value) = lookup("PROF_BASELINE_WINDOWS") {
            config.baseline_windows =
                parse_count("PROF_BASELINE_WINDOWS", &value, 0, MAX_BASELINE_WINDOWS)?;
        }
        if let Some(value) = lookup("PROF_EXIT") {
            config.exit = parse_flag("PROF_EXIT", &value, "exit once the results are written")?;
        }
        if let Some(value) = lookup("PROF_NVTX") {
            config.nvtx = parse_flag("PROF_NVTX", &value, "an NVTX range around every probe")?;
        }
        if let Some(value) = lookup("PROF_CAPTURE") {
            config.capture = parse_flag(
                "PROF_CAPTURE",
                &value,
                "cuProfilerStart/Stop around the measured iterations",
            )?;
        }
        if let Some(value) = lookup("PROF_KERNELS") {
            config.kernels = parse_flag(
                "PROF_KERNELS",
                &value,
                "attribute kernels to events through CUPTI",
            )?;
        }
        if let Some(value) = lookup("PROF_SYNC") {
            config.sync = parse_sync(&value)?;
        }
        if let Some(value) = lookup("PROF_OUT") {
            check_out_template(&value)?;
            config.out = value;
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
        if self.max_probes == 0 || self.max_probes > MAX_PROBES {
            return Err(ConfigError::new(
                "PROF_MAX_PROBES",
                format!("error: PROF_MAX_PROBES must be from 1 to {MAX_PROBES}"),
            ));
        }
        Ok(())
    }

    /// The output path: `%p` is the process id, `%r` the rank, `%%` a `%`.
    pub fn output_path(&self) -> PathBuf {
        let mut out = String::new();
        let mut chars = self.out.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('p') => out.push_str(&std::process::id().to_string()),
                Some('r') => out.push_str(&rank().to_string()),
                Some(other) => out.push(other),
                None => out.push('%'),
            }
        }
        PathBuf::from(out)
    }

    /// Checks, before training starts, that the output can be written: the path names a file
    /// (not a directory, a FIFO, a device or an open descriptor such as `/dev/stdout`), its
    /// directory exists, and a temporary file such as the final write renames into place can
    /// be created there (so a directory that cannot be written fails now, not after training). A rank that `%r` cannot use is an error
    /// too.
    pub fn check_output(&self) -> Result<(), ConfigError> {
        if self.out.contains("%r") {
            if let Err(why) = rank_checked() {
                return Err(ConfigError::new(
                    "PROF_OUT",
                    format!(
                        "error: PROF_OUT={} uses %r, but {why}\n  = help: set the rank variable \
                         to a whole number from 0 to {}, or leave %r out of PROF_OUT",
                        shorten(&self.out, 200),
                        u32::MAX
                    ),
                ));
            }
        }
        let path = self.output_path();
        let fail = |reason: String| {
            ConfigError::new(
                "PROF_OUT",
                format!(
                    "error: PROF_OUT={} cannot be written: {reason}\n  = help: point PROF_OUT \
                     at a regular file in an existing, writable directory",
                    shorten(&self.out, 200)
                ),
            )
        };
        let target = profiler_format::check_target(&path).map_err(fail)?;
        let dir = match target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(fail(format!(
                "the directory {} does not exist",
                dir.display()
            )));
        }
        // A new file with a name as long as the target's (created exclusively, so nothing that
        // is there is opened, let alone emptied), removed at once: checks permission and name
        // length now rather than after training.
        profiler_format::write::check_writable(&target).map_err(|e| {
            fail(format!(
                "cannot create a temporary file in {}: {e}",
                dir.display()
            ))
        })?;
        Ok(())
    }
}

/// The value of `var`, or an error naming it when the value is not valid UTF-8.
pub(crate) fn env_text(var: &'static str) -> Result<Option<String>, ConfigError> {
    let Some(value) = std::env::var_os(var) else {
        return Ok(None);
    };
    match value.into_string() {
        Ok(text) => Ok(Some(text)),
        Err(raw) => {
            let bytes = raw.as_encoded_bytes();
            let valid = match std::str::from_utf8(bytes) {
                Ok(_) => bytes.len(),
                Err(e) => e.valid_up_to(),
            };
            let shown = shorten(&String::from_utf8_lossy(bytes), 200);
            Err(ConfigError::new(
                var,
                format!(
                    "error: {var} is not valid UTF-8: byte {} (0x{:02x}) of `{shown}`\n  = help: \
                     {var} takes plain text; check the script that sets it for a stray byte or \
                     a non-UTF-8 locale",
                    valid + 1,
                    bytes[valid]
                ),
            ))
        }
    }
}

/// The variables a rank is read from, in order.
pub const RANK_VARS: [&str; 3] = ["RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"];

/// This process's rank: the first of `RANK`, `OMPI_COMM_WORLD_RANK`, `SLURM_PROCID` that is
/// set; 0 when none is. A set value that is not a whole number from 0 to `u32::MAX` is an
/// error naming the variable (it is not skipped, nor read as 0).
pub fn rank_checked() -> Result<u32, String> {
    for var in RANK_VARS {
        let Some(value) = std::env::var_os(var) else {
            continue;
        };
        let Some(text) = value.to_str() else {
            return Err(format!("{var} is not valid UTF-8"));
        };
        return text.trim().parse::<u32>().map_err(|_| {
            format!(
                "{var}={} is not a rank (a whole number from 0 to {})",
                shorten(text, 60),
                u32::MAX
            )
        });
    }
    Ok(0)
}

/// This process's rank, as [`rank_checked`], with 0 for a value it rejects (start-up warns or,
/// when `PROF_OUT` uses `%r`, stops before that can happen).
pub fn rank() -> u32 {
    rank_checked().unwrap_or(0)
}

/// `PROF_*` variables in the environment that this build does not know (likely typos).
pub fn unknown_vars() -> Vec<String> {
    let mut unknown: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("PROF_") && !KNOWN_VARS.contains(&k.as_str()))
        .collect();
    unknown.sort();
    unknown
}

/// `PROF_MODE`: `sample` (also empty), `trace`, `continuous` or `off`.
fn parse_mode(value: &str) -> Result<Mode, ConfigError> {
    Ok(match value.trim() {
        "sample" | "" => Mode::Sample,
        "trace" => Mode::Trace,
        "continuous" => Mode::Continuous,
        "off" => Mode::Off,
        _ => {
            return Err(ConfigError::at(
                "PROF_MODE",
                value,
                1,
                value.chars().count().max(1),
                &format!("unknown mode `{value}`"),
                "one of: sample, trace, continuous, off",
            ))
        }
    })
}

/// `PROF_SYNC`: a level from 0 to 3 (empty: 0).
fn parse_sync(value: &str) -> Result<u8, ConfigError> {
    Ok(match value.trim() {
        "" | "0" => 0,
        "1" => 1,
        "2" => 2,
        "3" => 3,
        _ => {
            return Err(ConfigError::at(
                "PROF_SYNC",
                value,
                1,
                value.chars().count().max(1),
                "unknown level",
                "0 (never), 1 (at each step), 2 (also around functions with a phase) \
                 or 3 (around every probe)",
            ))
        }
    })
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
    fn zero_warmup_needs_trace_mode() {
        let e = config(&[("PROF_WARMUP", "0")]).unwrap_err();
        assert!(e.to_string().contains("PROF_MODE=trace"), "{e}");
        assert!(config(&[("PROF_WARMUP", "0"), ("PROF_MODE", "trace")]).is_ok());
    }

    #[test]
    fn output_placeholders_and_checks() {
        let mut c = Config {
            out: "run-%p-%%-%r.json".into(),
            ..Config::default()
        };
        let path = c.output_path();
        let expected = format!("run-{}-%-{}.json", std::process::id(), rank());
        assert_eq!(path, PathBuf::from(expected));
        c.out = "/nonexistent-dir-xyz/prof.json".into();
        let e = c.check_output().unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let dir = std::env::temp_dir();
        c.out = dir.join("prof-check.json").display().to_string();
        c.check_output().unwrap();
        c.out = dir.display().to_string();
        assert!(c
            .check_output()
            .unwrap_err()
            .to_string()
            .contains("is a directory"));
    }
}
