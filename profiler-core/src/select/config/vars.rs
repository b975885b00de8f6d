//! The `PROF_*` variables in one table: each one's name, default, meaning (as the reference in
//! `docs/reference.md` gives it) and how its value sets the [`Config`]. Parsing, the list of
//! known names (the warning about an unknown `PROF_*`) and the reference all come from
//! [`VARIABLES`]; a test holds the reference to it.

use super::{
    Config, ConfigError, Mode, SampleClock, MAX_BASELINE_WINDOWS, MAX_EVENTS, MAX_PROBES,
    MAX_REPEAT, MAX_SHAPES, MAX_WINDOWS,
};
use profiler_format::filter::Filter;
use profiler_format::write::shorten;

/// One `PROF_*` variable.
// `default` and `meaning` are read by the reference's test only: the program needs the names
// and parsers, the documentation the rest.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Variable {
    /// Its name, `PROF_...`.
    pub name: &'static str,
    /// Its default, as the reference shows it.
    pub default: &'static str,
    /// What it does, as the reference says it (Markdown, one line).
    pub meaning: &'static str,
    /// Sets the configuration from a value of the variable, or says what is wrong with it.
    pub set: fn(&mut Config, &str) -> Result<(), ConfigError>,
}

/// Every variable, in the order in which they are read (the first bad value is the one
/// reported), listed in the reference and named in the unknown-variable warning.
pub(crate) const VARIABLES: &[Variable] = &[
    Variable {
        name: "PROF_FILTER",
        default: "all",
        meaning: "which probes take part ([grammar](#prof_filter)); unset or empty: all",
        set: |c, v| {
            c.filter = filter(v)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_MODE",
        default: "`sample`",
        meaning: "`sample`: one event per iteration; `trace`: every selected event in each of \
                  `PROF_REPEAT` iterations after warmup; `continuous`: `sample` forever, in \
                  windows; `off`: nothing armed, nothing written",
        set: |c, v| {
            c.mode = parse_mode(v)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_WARMUP",
        default: "`10`",
        meaning: "iterations before the first measurement (0 only in `trace` mode)",
        set: |c, v| {
            c.warmup = parse_count("PROF_WARMUP", v, 0, u32::MAX)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_REPEAT",
        default: "`50`",
        meaning: "measured iterations per event (`sample`, `continuous`), or active \
                  iterations (`trace`); 1 to 1,000,000",
        set: |c, v| {
            c.repeat = parse_count("PROF_REPEAT", v, 1, MAX_REPEAT)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_OUT",
        default: "`prof.json`",
        meaning: "output path; `%p` is the process id, `%r` the rank (`RANK`, \
                  `OMPI_COMM_WORLD_RANK`, `SLURM_PROCID`, else 0), `%%` a `%`",
        set: |c, v| {
            check_template("PROF_OUT", v, false)?;
            c.out = v.to_owned();
            Ok(())
        },
    },
    Variable {
        name: "PROF_EXIT",
        default: "unset",
        meaning: "`1`: exit with status 0 once the results are written",
        set: |c, v| {
            c.exit = parse_flag("PROF_EXIT", v, "exit once the results are written")?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_MAX_EVENTS",
        default: "`4096`",
        meaning: "bound on distinct events kept; later occurrences fold into merged events \
                  (1 to 1,000,000)",
        set: |c, v| {
            c.max_events = parse_count("PROF_MAX_EVENTS", v, 1, MAX_EVENTS)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_MAX_PROBES",
        default: "`4096`",
        meaning: "bound on the probes that take part, those registered while the run goes on \
                  included (1 to 1,000,000)",
        set: |c, v| {
            c.max_probes = parse_count("PROF_MAX_PROBES", v, 1, MAX_PROBES)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_SHAPES",
        default: "`16`",
        meaning: "bound on the distinct input shapes kept per event of a probe with a `shape` \
                  key: those with the most samples; the rest count as others, with a warning \
                  (1 to 10,000)",
        set: |c, v| {
            c.max_shapes = parse_count("PROF_SHAPES", v, 1, MAX_SHAPES)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_WINDOWS",
        default: "`100`",
        meaning: "`continuous` mode: the most recent windows kept in `prof.json` besides the \
                  baseline windows (1 to 100,000; the oldest is dropped first)",
        set: |c, v| {
            c.windows = parse_count("PROF_WINDOWS", v, 1, MAX_WINDOWS)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_BASELINE_WINDOWS",
        default: "`3`",
        meaning: "`continuous` mode: how many of the first windows after warmup are kept for \
                  the whole run, so that drift is judged against the run's start too (0 to \
                  1,000; 0: none)",
        set: |c, v| {
            c.baseline_windows = parse_count("PROF_BASELINE_WINDOWS", v, 0, MAX_BASELINE_WINDOWS)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_CONTROL",
        default: "unset",
        meaning: "`continuous` mode: a control file asking for a trace on demand (`trace \
                  iterations=N at=ITERATION`; `prof trigger --control` writes it), shared by \
                  the job's ranks",
        set: |c, v| {
            c.control = non_empty_path("PROF_CONTROL", v, "a file path such as prof.control")?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_TRACE_OUT",
        default: "`PROF_OUT` with `.trace-%i` before `.json`",
        meaning: "`continuous` mode: where a trace taken on demand goes; `%i` is its first \
                  iteration, `%p` and `%r` as in `PROF_OUT`",
        set: |c, v| {
            check_template("PROF_TRACE_OUT", v, true)?;
            c.trace_out = Some(v.to_owned());
            Ok(())
        },
    },
    Variable {
        name: "PROF_METRICS",
        default: "unset",
        meaning: "`continuous` mode: serve each closed window's numbers to Prometheus at \
                  `http://ADDR:PORT/metrics` (`ADDR:PORT`, like `0.0.0.0:9464`; each rank binds \
                  `PORT` plus its rank; port `0` picks a free one and prints it; builds with \
                  the `metrics` feature)",
        set: |c, v| {
            c.metrics = Some(parse_metrics_address(v)?);
            Ok(())
        },
    },
    Variable {
        name: "PROF_METRICS_OPTIONAL",
        default: "`0`",
        meaning: "`1`: when `PROF_METRICS` cannot be bound (the port taken, the address not \
                  this machine's), warn and train on without the endpoint instead of exiting \
                  with status 2",
        set: |c, v| {
            let meaning = "a bind failure of PROF_METRICS is a warning";
            c.metrics_optional = parse_flag("PROF_METRICS_OPTIONAL", v, meaning)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_JOB",
        default: "the program's file name",
        meaning: "the `job` label of the series `PROF_METRICS` serves",
        set: |c, v| {
            if v.trim().is_empty() {
                return Err(ConfigError::at(
                    "PROF_JOB",
                    v,
                    1,
                    1,
                    "empty job name",
                    "a name such as dlrm-train (or unset it: the program's name)",
                ));
            }
            c.job = Some(v.to_owned());
            Ok(())
        },
    },
    Variable {
        name: "PROF_NVTX",
        default: "`0`",
        meaning: "`1`: an NVTX range around every selected probe (`cuda` builds)",
        set: |c, v| {
            c.nvtx = parse_flag("PROF_NVTX", v, "an NVTX range around every probe")?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_CAPTURE",
        default: "`0`",
        meaning: "`1`: `cuProfilerStart` when measuring begins, `cuProfilerStop` when the \
                  schedule completes",
        set: |c, v| {
            let meaning = "cuProfilerStart/Stop around the measured iterations";
            c.capture = parse_flag("PROF_CAPTURE", v, meaning)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_SYNC",
        default: "`0`",
        meaning: "`0`-`3`: synchronize the device never, at each `step()`, also around \
                  functions with a `phase`, around every probe",
        set: |c, v| {
            c.sync = parse_sync(v)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_KERNELS",
        default: "`0`",
        meaning: "`1`: attribute CUDA kernels to the measured events through CUPTI",
        set: |c, v| {
            let meaning = "attribute kernels to events through CUPTI";
            c.kernels = parse_flag("PROF_KERNELS", v, meaning)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_PEAK_FLOPS",
        default: "unset",
        meaning: "the machine's peak in FLOP/s (like `1.2e12`), recorded as `run.peak` \
                  (source `given`) for the reports' MFU",
        set: |c, v| {
            c.peak_flops = Some(parse_rate("PROF_PEAK_FLOPS", v, "FLOP/s, like 1.2e12")?);
            Ok(())
        },
    },
    Variable {
        name: "PROF_PEAK_BYTES",
        default: "unset",
        meaning: "the machine's peak memory bandwidth in bytes/s (like `2e11`), recorded as \
                  `run.peak` (source `given`) for the reports' roofline",
        set: |c, v| {
            c.peak_bytes = Some(parse_rate("PROF_PEAK_BYTES", v, "bytes/s, like 2e11")?);
            Ok(())
        },
    },
    Variable {
        name: "PROF_PEAK",
        default: "unset",
        meaning: "a `peak.json` written by `prof peak`, recorded as `run.peak`; \
                  `PROF_PEAK_FLOPS` and `PROF_PEAK_BYTES` override its figures",
        set: |c, v| {
            c.peak_file = Some((v.to_owned(), read_peak(v)?));
            Ok(())
        },
    },
    Variable {
        name: "PROF_DELAY_FILTER",
        default: "unset",
        meaning: "which probes `PROF_DELAY` delays (the `PROF_FILTER` grammar), whether or not \
                  `PROF_FILTER` selects them; set with `PROF_DELAY` (`prof whatif` sets both)",
        set: |c, v| {
            let f = Filter::parse(v)
                .map_err(|e| ConfigError::new("PROF_DELAY_FILTER", e.to_string()))?;
            c.delay_filter = Some(f);
            Ok(())
        },
    },
    Variable {
        name: "PROF_DELAY",
        default: "unset",
        meaning: "a delay after every run of the probes `PROF_DELAY_FILTER` selects once the \
                  loop has begun (the first `step()`; runs before it are not delayed), in every \
                  mode: a duration (`50us`; `ns`, `us`, `ms`, up to `1s`; `0` delays by nothing \
                  on the same path) or a share of the run's own duration (`10%`, up to \
                  `1000%`); a calibrated spin, not in the run's sample, recorded as `run.delay`",
        set: |c, v| {
            c.delay = Some(parse_delay(v)?);
            Ok(())
        },
    },
    Variable {
        name: "PROF_CPU_SAMPLE",
        default: "unset (off)",
        meaning: "CPU samples per second of each thread's CPU time, 1 to 10000: each sample's \
                  stack is tagged with the annotated event open on its thread and written to \
                  `cpu_samples` in `prof.json` (Linux, feature `cpu-sample`)",
        set: |c, v| {
            c.cpu_sample = parse_cpu_sample(v)?;
            Ok(())
        },
    },
    Variable {
        name: "PROF_CPU_SAMPLE_CLOCK",
        default: "`auto`",
        meaning: "what interrupts each thread for `PROF_CPU_SAMPLE`: `auto` (a `perf_event_open` \
                  task-clock event per thread, one signal per period, when the kernel allows \
                  it, else the POSIX timers, said once on stderr) or `posix` (a `timer_create` \
                  timer of each thread's CPU clock, checked at the kernel's tick); recorded as \
                  `cpu_samples.clock`",
        set: |c, v| {
            c.cpu_sample_clock = parse_sample_clock(v)?;
            Ok(())
        },
    },
];

/// `PROF_CPU_SAMPLE_CLOCK`: `auto` or `posix` (empty: `auto`).
fn parse_sample_clock(value: &str) -> Result<SampleClock, ConfigError> {
    match value.trim() {
        "" | "auto" => Ok(SampleClock::Auto),
        "posix" => Ok(SampleClock::Posix),
        other => Err(ConfigError::new(
            "PROF_CPU_SAMPLE_CLOCK",
            format!(
                "error: PROF_CPU_SAMPLE_CLOCK={}: not a sampling clock\n  = help: use \
                 `auto` (a perf_event task clock when the kernel allows it, else POSIX timers) \
                 or `posix` (POSIX CPU-time timers)",
                shorten(other, 60)
            ),
        )),
    }
}

/// `PROF_METRICS`: `ADDR:PORT`, the address a host name or an IP (IPv6 in brackets), the port a
/// number from 0 to 65535. Kept as written: it is resolved and bound at start-up.
fn parse_metrics_address(value: &str) -> Result<String, ConfigError> {
    let expected = "ADDR:PORT, like 127.0.0.1:9464 or 0.0.0.0:0 (port 0: any free port)";
    let Some((host, port)) = value.rsplit_once(':') else {
        let width = value.chars().count().max(1);
        return Err(ConfigError::at(
            "PROF_METRICS",
            value,
            1,
            width,
            "no port",
            expected,
        ));
    };
    let host_width = host.chars().count();
    if host.trim().is_empty() {
        return Err(ConfigError::at(
            "PROF_METRICS",
            value,
            1,
            host_width.max(1),
            "no address",
            expected,
        ));
    }
    if port.parse::<u16>().is_err() {
        return Err(ConfigError::at(
            "PROF_METRICS",
            value,
            host_width + 2,
            port.chars().count().max(1),
            "not a port (a whole number from 0 to 65535)",
            expected,
        ));
    }
    Ok(value.to_owned())
}

/// `PROF_DELAY`: a duration with its unit (`50us`, `1.5ms`, `0`) or a share of each run's own
/// duration (`10%`).
pub(crate) fn parse_delay(value: &str) -> Result<super::DelayAmount, ConfigError> {
    use super::DelayAmount;
    const VAR: &str = "PROF_DELAY";
    const EXPECTED: &str = "a duration like 50us (ns, us, ms or s, at most 1s) or a share of \
                            each run's own duration like 10% (at most 1000%)";
    let trimmed = value.trim();
    let lead = value.len() - value.trim_start().len();
    let width = trimmed.chars().count().max(1);
    let bad = |problem: &str| ConfigError::at(VAR, value, lead + 1, width, problem, EXPECTED);
    if trimmed.is_empty() {
        return Err(bad("empty value"));
    }
    if trimmed == "0" {
        return Ok(DelayAmount::Fixed(0));
    }
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let n: f64 = match number.parse() {
        Ok(n) if f64::is_finite(n) && n >= 0.0 => n,
        _ => return Err(bad("not a number followed by its unit")),
    };
    let scale = match unit.trim() {
        "%" => {
            if n > 1000.0 {
                return Err(bad("more than 1000%"));
            }
            return Ok(DelayAmount::Share(n / 100.0));
        }
        "ns" => 1.0,
        "us" | "\u{b5}s" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(bad("no unit")),
        _ => {
            let unit_at = lead + split + (unit.len() - unit.trim_start().len());
            let unit = unit.trim();
            let column = value[..unit_at].chars().count() + 1;
            return Err(ConfigError::at(
                VAR,
                value,
                column,
                unit.chars().count(),
                &format!("unknown unit `{unit}`"),
                EXPECTED,
            ));
        }
    };
    let ns = (n * scale).round();
    if ns > 1e9 {
        return Err(bad("longer than 1s"));
    }
    Ok(DelayAmount::Fixed(ns as u64))
}

/// `PROF_CPU_SAMPLE`: a rate from 1 to [`MAX_CPU_SAMPLE_HZ`] samples a second (empty: off), in
/// a build that has the sampler.
fn parse_cpu_sample(value: &str) -> Result<Option<u32>, ConfigError> {
    if value.trim().is_empty() {
        return Ok(None);
    }
    let hz = parse_count("PROF_CPU_SAMPLE", value, 1, MAX_CPU_SAMPLE_HZ)?;
    if !SAMPLER {
        return Err(ConfigError::new(
            "PROF_CPU_SAMPLE",
            format!(
                "error: PROF_CPU_SAMPLE={hz}: this build has no CPU sampler\n  = help: build \
                 with the `cpu-sample` feature of profiler-core (on Linux), or unset \
                 PROF_CPU_SAMPLE"
            ),
        ));
    }
    Ok(Some(hz))
}

/// Whether this build has the CPU sampler (Linux, feature `cpu-sample`: `sample/cpu.rs`).
pub(crate) const SAMPLER: bool = cfg!(all(feature = "cpu-sample", target_os = "linux"));

/// The highest `PROF_CPU_SAMPLE` rate: past it the handler's own cost would distort what it
/// measures.
pub(crate) const MAX_CPU_SAMPLE_HZ: u32 = 10_000;

/// A peak rate: a positive, finite number (`1.2e12`, `800000000000`).
fn parse_rate(var: &'static str, value: &str, expected: &str) -> Result<f64, ConfigError> {
    let trimmed = value.trim();
    let lead = value.len() - value.trim_start().len();
    let width = trimmed.chars().count().max(1);
    match trimmed.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err(ConfigError::at(
            var,
            value,
            lead + 1,
            width,
            "not a positive, finite rate",
            &format!("a positive number of {expected}"),
        )),
        Err(_) => Err(ConfigError::at(
            var,
            value,
            lead + 1,
            width,
            if trimmed.is_empty() {
                "empty value"
            } else {
                "not a number"
            },
            &format!("a positive number of {expected}"),
        )),
    }
}

/// `PROF_PEAK`'s file: a `peak.json` of schema `profiler-core/peak/v1` with at least one figure,
/// each positive and finite.
fn read_peak(path: &str) -> Result<profiler_format::peak::Peak, ConfigError> {
    use profiler_format::peak::PEAK_SCHEMA;
    let fail = |why: String| {
        ConfigError::new(
            "PROF_PEAK",
            format!(
                "error: PROF_PEAK={}: {why}\n  = help: PROF_PEAK names a peak.json written \
                 by `prof peak` (schema {PEAK_SCHEMA}); or give the figures with \
                 PROF_PEAK_FLOPS and PROF_PEAK_BYTES",
                shorten(path, 200)
            ),
        )
    };
    if path.trim().is_empty() {
        return Err(fail("empty path".to_owned()));
    }
    // The error names the file first: drop it, `fail` does.
    profiler_format::peak::load_peak(std::path::Path::new(path)).map_err(|e| {
        let why = e.strip_prefix(&format!("{}: ", profiler_format::write::shorten(path, 200)));
        fail(why.unwrap_or(&e).to_owned())
    })
}

/// The reference's table of the variables (Markdown), as `docs/reference.md` holds it.
#[cfg(test)]
pub(crate) fn reference_table() -> String {
    let mut out = String::from("| variable | meaning | default |\n|---|---|---|\n");
    for var in VARIABLES {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            var.name, var.meaning, var.default
        ));
    }
    out
}

/// `PROF_FILTER` as `--list-probes` reads it, before any session and whatever the other
/// variables say: through the same row of [`VARIABLES`] as [`Config::from_env`], so that the
/// filter has one parser and one error; the filter that selects everything when unset or empty.
pub(crate) fn listing_filter() -> Result<Filter, ConfigError> {
    let text = env_text("PROF_FILTER")?;
    Config::from_lookup(|var| (var == "PROF_FILTER").then(|| text.clone()).flatten())
        .map(|c| c.filter)
}

/// `PROF_FILTER`'s value, parsed.
fn filter(value: &str) -> Result<Filter, ConfigError> {
    Filter::parse(value).map_err(|e| ConfigError::new("PROF_FILTER", e.to_string()))
}

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

/// A path that must not be empty.
fn non_empty_path(
    var: &'static str,
    value: &str,
    example: &str,
) -> Result<Option<String>, ConfigError> {
    if value.trim().is_empty() {
        return Err(ConfigError::at(var, value, 1, 1, "empty path", example));
    }
    Ok(Some(value.to_owned()))
}

/// An output path's placeholders: `%p`, `%r`, `%%`, and `%i` where `iteration` allows it.
fn check_template(var: &'static str, value: &str, iteration: bool) -> Result<(), ConfigError> {
    if value.trim().is_empty() {
        return Err(ConfigError::at(
            var,
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
                Some('i') if iteration => i += 1,
                _ => {
                    return Err(ConfigError::at(
                        var,
                        value,
                        i + 1,
                        2.min(chars.len() - i),
                        "unknown `%` placeholder",
                        if iteration {
                            "%i (the trace's first iteration), %p (process id), %r (rank) or \
                             %% (a literal %)"
                        } else {
                            "%p (process id), %r (rank) or %% (a literal %)"
                        },
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

/// `PROF_*` variables that are not settings but are known, so never warned about: `PROF_AB_PAD`,
/// the padding `prof ab` puts in each run's environment (its length moves the stack).
pub(crate) const IGNORED: &[&str] = &["PROF_AB_PAD"];

/// `PROF_*` variables in the environment that this build does not know (likely typos), each
/// with the known variable it is closest to, if one is close enough to be what was meant.
pub fn unknown_vars() -> Vec<(String, Option<&'static str>)> {
    let mut unknown: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| {
            k.starts_with("PROF_")
                && !VARIABLES.iter().any(|v| v.name == k)
                && !IGNORED.contains(&k.as_str())
        })
        .collect();
    unknown.sort();
    let names: Vec<&'static str> = VARIABLES.iter().map(|v| v.name).collect();
    unknown
        .into_iter()
        .map(|k| {
            let near = profiler_format::filter::nearest(&k, &names);
            (k, near)
        })
        .collect()
}

/// `PROF_MODE`: `sample` (also empty), `trace`, `continuous` or `off`.
fn parse_mode(value: &str) -> Result<Mode, ConfigError> {
    Ok(match value.trim() {
        "sample" | "" => Mode::Sample,
        "trace" => Mode::Trace,
        "continuous" => Mode::Continuous,
        "off" => Mode::Off,
        _ => {
            const MODES: [&str; 4] = ["sample", "trace", "continuous", "off"];
            let mut problem = format!("unknown mode `{value}`");
            if let Some(near) = profiler_format::filter::nearest(value.trim(), &MODES) {
                problem.push_str(&format!("; did you mean `{near}`?"));
            }
            return Err(ConfigError::at(
                "PROF_MODE",
                value,
                1,
                value.chars().count().max(1),
                &problem,
                "one of: sample, trace, continuous, off",
            ));
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

    /// The reference gives every variable, its meaning and its default exactly as this table
    /// does: a variable added, renamed or documented anew here shows there (and the reverse).
    #[test]
    fn the_reference_lists_every_variable_as_the_table_does() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/reference.md");
        let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let table = reference_table();
        assert!(
            doc.contains(&table),
            "docs/reference.md must hold the variables' table exactly as the code gives it:\n\n{table}"
        );
        let listed = doc.lines().filter(|l| l.starts_with("| `PROF_")).count();
        assert_eq!(
            listed,
            VARIABLES.len(),
            "docs/reference.md lists other PROF_ variables"
        );
    }

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_lookup(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_cpu_sample_rate_is_checked() {
        assert_eq!(config(&[]).unwrap().cpu_sample, None);
        assert_eq!(config(&[("PROF_CPU_SAMPLE", "")]).unwrap().cpu_sample, None);
        for bad in ["0", "10001", "abc", "-5", "1e3"] {
            let e = config(&[("PROF_CPU_SAMPLE", bad)]).unwrap_err();
            assert_eq!(e.var, "PROF_CPU_SAMPLE", "{bad}");
            assert!(!e.to_string().contains("feature"), "{bad}: {e}");
        }
        for good in ["1", " 1000 ", "10000"] {
            let c = config(&[("PROF_CPU_SAMPLE", good)]);
            if SAMPLER {
                assert_eq!(c.unwrap().cpu_sample, Some(good.trim().parse().unwrap()));
            } else {
                // A build without the sampler names the feature that has it.
                let e = c.unwrap_err();
                assert_eq!(e.var, "PROF_CPU_SAMPLE");
                assert!(e.to_string().contains("`cpu-sample` feature"), "{e}");
            }
        }
    }

    #[test]
    fn the_cpu_sample_clock_is_checked() {
        assert_eq!(config(&[]).unwrap().cpu_sample_clock, SampleClock::Auto);
        for (value, want) in [
            ("", SampleClock::Auto),
            ("auto", SampleClock::Auto),
            (" posix ", SampleClock::Posix),
        ] {
            let c = config(&[("PROF_CPU_SAMPLE_CLOCK", value)]).unwrap();
            assert_eq!(c.cpu_sample_clock, want, "{value:?}");
        }
        for bad in ["perf", "POSIX", "timer", "1"] {
            let e = config(&[("PROF_CPU_SAMPLE_CLOCK", bad)]).unwrap_err();
            assert_eq!(e.var, "PROF_CPU_SAMPLE_CLOCK", "{bad}");
            let text = e.to_string();
            assert!(
                text.contains(bad) && text.contains("`posix`"),
                "{bad}: {text}"
            );
        }
    }

    #[test]
    fn a_peak_given_in_variables_is_recorded_as_given() {
        let c = config(&[("PROF_PEAK_FLOPS", "1.2e12"), ("PROF_PEAK_BYTES", " 2e11 ")]).unwrap();
        let peak = c.peak().unwrap();
        assert_eq!((peak.flops, peak.bytes), (Some(1.2e12), Some(2e11)));
        assert_eq!(peak.source, "given");
        assert!(
            peak.detail.contains("PROF_PEAK_FLOPS=1.2e12"),
            "{}",
            peak.detail
        );
        assert!(config(&[]).unwrap().peak().is_none());
        for bad in ["", "abc", "-1", "0", "inf", "NaN"] {
            let e = config(&[("PROF_PEAK_FLOPS", bad)]).unwrap_err();
            assert_eq!(e.var, "PROF_PEAK_FLOPS", "{bad}");
            assert!(e.to_string().contains("a positive number of FLOP/s"), "{e}");
        }
        let e = config(&[("PROF_PEAK_BYTES", "1e")]).unwrap_err();
        assert_eq!(e.var, "PROF_PEAK_BYTES");
    }

    #[test]
    fn a_peak_file_is_checked_and_the_variables_override_it() {
        let dir = std::env::temp_dir().join(format!("prof-peak-vars-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        };
        let good = write(
            "peak.json",
            r#"{"schema":"profiler-core/peak/v1","flops":5e11,"bytes":1e11,
                "source":"measured","detail":"sgemm 1024","host":"node7"}"#,
        );
        let c = config(&[("PROF_PEAK", &good)]).unwrap();
        let peak = c.peak().unwrap();
        assert_eq!((peak.flops, peak.bytes), (Some(5e11), Some(1e11)));
        assert_eq!(
            (peak.source.as_str(), peak.host.as_str()),
            ("measured", "node7")
        );
        let c = config(&[("PROF_PEAK_FLOPS", "7e11"), ("PROF_PEAK", &good)]).unwrap();
        let peak = c.peak().unwrap();
        assert_eq!((peak.flops, peak.bytes), (Some(7e11), Some(1e11)));
        assert_eq!(peak.source, "given");
        assert!(
            peak.detail.contains("bytes from PROF_PEAK="),
            "{}",
            peak.detail
        );
        let other = write(
            "other.json",
            r#"{"schema":"profiler-core/prof/v1","flops":1,"source":"measured"}"#,
        );
        let empty = write(
            "empty.json",
            r#"{"schema":"profiler-core/peak/v1","source":"x"}"#,
        );
        let missing = dir.join("missing.json").display().to_string();
        for (path, why) in [
            (other.as_str(), "schema"),
            (empty.as_str(), "neither"),
            (missing.as_str(), "no such file"),
            ("", "empty path"),
        ] {
            let e = config(&[("PROF_PEAK", path)]).unwrap_err();
            assert_eq!(e.var, "PROF_PEAK");
            assert!(e.to_string().contains(why), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn names_are_unique_and_well_formed() {
        for (i, var) in VARIABLES.iter().enumerate() {
            assert!(var.name.starts_with("PROF_"), "{}", var.name);
            assert!(!var.meaning.contains('\n') && !var.meaning.contains('|'));
            assert!(
                VARIABLES[..i].iter().all(|v| v.name != var.name),
                "{}",
                var.name
            );
        }
    }
}
