//! `prof`: answers from profiler-core's `prof.json`.
//!
//! A thin shell over `profiler_analysis`: every number it prints is computed there, the
//! same code that prints the end-of-run summary. Exit status: 0 on success, 1 when
//! `diff --fail-on-regression` finds a regression, 2 on bad input (a missing, malformed or
//! foreign file, a bad option, an output that cannot be written), 3 when
//! `diff --fail-on-regression` finds none but is inconclusive (one could have gone unseen).
//!
//! Every command and flag, with its values, defaults and outputs, is in the repository's
//! `docs/reference.md` (section "prof"; `tests/docs.rs` holds it to `--help`); how to read
//! the reports, with examples, in `docs/guide.md`.

mod ab;
mod peak;
mod trigger;
mod watch;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use profiler_analysis::{self as analysis, diff, flame, html, merge, report, scale, trace, Format};
use profiler_format::Profile;

#[derive(Parser)]
#[command(
    name = "prof",
    version,
    about = "Reports, traces, comparisons and HTML from profiler-core's prof.json",
    after_help = "Exit status: 0 success, 1 regression found (diff --fail-on-regression), 2 bad input, 3 inconclusive: no regression found, but one of the threshold's size could have gone unseen (diff --fail-on-regression)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One row per event (and per group): calls per iteration, median, mean, min, max, stddev,
    /// p90, coefficient of variation, share, self and total time; noisy events and the
    /// profiler's own perturbation are flagged.
    Report {
        /// The prof.json to read.
        file: PathBuf,
        /// Also print one row per group.
        #[arg(long, value_enum)]
        group_by: Option<GroupByArg>,
        /// Row order.
        #[arg(long, value_enum, default_value = "order")]
        sort: SortArg,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: FormatArg,
        /// Flag events whose coefficient of variation is above this.
        #[arg(long, default_value_t = 0.25, value_parser = non_negative)]
        cv_threshold: f64,
        /// Continuous mode: the smallest drift that matters (0.02 or 2%); an event is stable
        /// only where its windows rule out a drift of this size, else inconclusive.
        #[arg(long, default_value = "2%", value_parser = fraction)]
        drift_threshold: f64,
        /// A peak.json written by `prof peak`: the peak the MFU and roofline columns are
        /// judged against, instead of the profile's run.peak.
        #[arg(long)]
        peak: Option<PathBuf>,
    },
    /// Chrome Trace Event Format (Kineto flavoured) that opens in Perfetto and loads in
    /// HolisticTraceAnalysis, or Perfetto's protobuf trace for large profiles; `.gz` output is
    /// compressed.
    Trace {
        /// The prof.json to read.
        file: PathBuf,
        /// Where to write the trace (`trace.json`, `trace.json.gz`, `trace.pftrace`).
        #[arg(short, long)]
        output: PathBuf,
        /// The trace's format: json (Chrome JSON, what HolisticTraceAnalysis reads) or perfetto
        /// (Perfetto's protobuf, about a fourteenth of the size, which its UI opens where the JSON
        /// is too large); by default perfetto for an output ending in `.pftrace` or
        /// `.perfetto-trace` (then `.gz` or not), json otherwise.
        #[arg(long, value_enum)]
        format: Option<TraceFormatArg>,
        /// Only these iterations of a trace-mode profile: A..B (A to B-1), A..=B or A.., as
        /// numbered in the trace (`ProfilerStep#A`); to split a long run's trace.
        #[arg(long, value_parser = iteration_range)]
        iterations: Option<trace::IterationRange>,
    },
    /// Compare two runs: per event and for the whole iteration, the median ratio with a
    /// bootstrap 95% confidence interval, a Mann-Whitney p-value and a verdict. With several
    /// runs a side (`prof diff b1.json b2.json -- a1.json a2.json`), the run is the unit.
    Diff {
        /// The baseline run, then the run to judge; or, with `--`, every baseline run.
        #[arg(required = true, num_args = 1..)]
        before: Vec<PathBuf>,
        /// After `--`: every run to judge (several runs a side).
        #[arg(last = true)]
        after: Vec<PathBuf>,
        /// Changes smaller than this are noise (0.02 or 2%).
        #[arg(long, default_value = "2%", value_parser = fraction)]
        threshold: f64,
        /// Significance level, after Holm's correction across events.
        #[arg(long, default_value_t = 0.05, value_parser = probability)]
        alpha: f64,
        /// Bootstrap resamples, from 100 to 1000000.
        #[arg(long, default_value_t = 2000, value_parser = resamples_range())]
        resamples: usize,
        /// Seed of the bootstrap (results are reproducible).
        #[arg(long, default_value_t = 0x5eed)]
        seed: u64,
        /// Exit with status 1 when the iteration or an event that matters regressed, 3 when none
        /// did but a regression of the threshold's size could have gone unseen in one of them
        /// (inconclusive), for CI.
        #[arg(long)]
        fail_on_regression: bool,
        /// The K-th before run and the K-th after run ran adjacent, in rounds (as `prof ab` runs
        /// them): compare round by round. Needs as many runs a side.
        #[arg(long)]
        paired: bool,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: FormatArg,
    },
    /// How each event's time grows with a parameter (batch size, GPU count), against ideal
    /// scaling, with the efficiency per step.
    Scale {
        /// One prof.json per parameter value, in the order of --param's values.
        #[arg(required = true, num_args = 2..)]
        files: Vec<PathBuf>,
        /// The parameter and its value for each file: `batch=256,512,1024`.
        #[arg(long)]
        param: String,
        /// Ideal scaling: linear (time grows with the parameter, e.g. batch size), inverse
        /// (time shrinks as 1/parameter, e.g. GPU count), constant.
        #[arg(long, value_enum, default_value = "linear")]
        ideal: IdealArg,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: FormatArg,
    },
    /// Run two commands, before and after, in randomized interleaved order (several runs each,
    /// each with its own PROF_OUT and a random environment size), then compare them with the
    /// run as the unit, as `prof diff b1 b2 -- a1 a2` does.
    Ab {
        /// The baseline command, as one string split as a shell would (`'./before --steps 500'`).
        #[arg(long)]
        before: String,
        /// The command to judge, as one string.
        #[arg(long)]
        after: String,
        /// Most rounds (a run of each command per round; at least 2). Unless --until is given,
        /// prof ab stops earlier, from 5 rounds on, once every row that matters is resolved
        /// (its interval within the threshold of its change).
        #[arg(short = 'n', long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(2..=1000))]
        runs: u32,
        /// Where the runs' profiles go (before-K.json, after-K.json).
        #[arg(long, default_value = "prof-ab")]
        dir: PathBuf,
        /// Stop once every interval is narrower than this (a fraction, `3%`), after 2 rounds.
        #[arg(long, value_parser = fraction)]
        until: Option<f64>,
        /// Stop starting rounds after this many seconds (after 2 rounds; default 300).
        #[arg(long, default_value_t = 300)]
        budget: u64,
        /// Seed of the run order and the environment padding.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Changes smaller than this are noise (0.02 or 2%).
        #[arg(long, default_value = "2%", value_parser = fraction)]
        threshold: f64,
        /// Accepted for scripts written before it became the default: prof ab always exits
        /// with status 1 when the iteration or an event that matters regressed, 3 when one is
        /// inconclusive, 0 otherwise.
        #[arg(long)]
        fail_on_regression: bool,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: FormatArg,
    },
    /// Merge the profiles of several ranks: per event the min, median and max across ranks,
    /// and the straggler.
    Merge {
        /// One prof.json per rank.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where to write the merged JSON (schema profiler-core/merged/v1).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Format of what is printed.
        #[arg(long, value_enum, default_value = "table")]
        format: FormatArg,
    },
    /// A flame graph of the mean iteration: an interactive SVG (or folded stacks), one frame per
    /// event, as wide as its time per iteration, nested by parent; with --diff, frames coloured
    /// by prof diff's verdicts.
    Flame {
        /// The prof.json to draw; several: the mean of their stacks (several runs of one side).
        #[arg(required = true, num_args = 1..)]
        files: Vec<PathBuf>,
        /// Where to write the SVG (or, with --folded, the folded stacks).
        #[arg(short, long)]
        output: PathBuf,
        /// Write folded stacks (`frame;frame;frame ns` per line) instead of the SVG.
        #[arg(long, conflicts_with_all = ["icicle", "diff"])]
        folded: bool,
        /// Draw the stacks hanging from the top (an icicle graph).
        #[arg(long)]
        icicle: bool,
        /// A root frame per layer or phase of the top-level events.
        #[arg(long, value_enum)]
        group: Option<FlameGroupArg>,
        /// Only the events this PROF_FILTER expression matches, with the events they ran inside
        /// as context (`layer=mlp&phase=bwd`).
        #[arg(long, value_name = "EXPR")]
        filter: Option<String>,
        /// A baseline run: frames coloured by prof diff's verdict on their event (red regressed,
        /// blue improved, grey no change, pale inconclusive); repeat it for several baseline runs.
        #[arg(long, value_name = "BASE")]
        diff: Vec<PathBuf>,
        /// With --diff: changes smaller than this are noise (0.02 or 2%), as in prof diff.
        #[arg(long, default_value = "2%", value_parser = fraction)]
        threshold: f64,
    },
    /// A live terminal view of running continuous-mode jobs, from the files they rewrite as
    /// their windows close: per layer and per event the median, share, calls, the median per
    /// window and the drift; the step breakdown; one tab per file. `?` shows the keys.
    Watch {
        /// The prof.json files to follow, one per rank (`prof-*.json`).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Seconds between two reads of the files (each is read again only when it changed).
        #[arg(long, default_value = "1", value_parser = seconds)]
        interval: f64,
        /// The smallest drift that matters (0.02 or 2%), as `prof report --drift-threshold`.
        #[arg(long, default_value = "2%", value_parser = fraction)]
        drift_threshold: f64,
        /// Print one frame per file as text and exit, instead of the interactive view (for
        /// scripts, CI, and ssh sessions without a terminal); status 2 when a file cannot be
        /// read.
        #[arg(long)]
        once: bool,
        /// The control file the job's ranks read (PROF_CONTROL): `t` then asks every rank for
        /// a trace through it, instead of signalling the process shown.
        #[arg(long)]
        control: Option<PathBuf>,
    },
    /// One self-contained HTML report (no network needed to view it).
    Html {
        /// The prof.json to read.
        file: PathBuf,
        /// A baseline run to compare against.
        #[arg(long)]
        diff: Option<PathBuf>,
        /// Where to write the report.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Ask a running continuous-mode job for a trace of its next iterations: one process by
    /// SIGUSR2, or every rank through the control file PROF_CONTROL names.
    #[command(group = clap::ArgGroup::new("target").required(true))]
    Trigger {
        /// The process to ask (it must be a profiler-core program in continuous mode, on this
        /// host).
        #[arg(group = "target")]
        pid: Option<u32>,
        /// The control file the job's ranks read (PROF_CONTROL): all of them trace the same
        /// iterations.
        #[arg(long, group = "target")]
        control: Option<PathBuf>,
        /// How many iterations, 1 to 4294967295: the job takes at most its PROF_REPEAT (the
        /// default), by signal as through the control file, and says so.
        #[arg(long, value_parser = trigger_iterations)]
        iterations: Option<u32>,
        /// With --control: the iteration to start at (by default rank 0 picks one half a
        /// second ahead).
        #[arg(long, requires = "control")]
        at: Option<u32>,
    },
    /// Measure this machine's achievable peak: FLOP/s by a GEMM (matrixmultiply) on every
    /// thread, memory bandwidth by STREAM's copy and triad, each the median of the fastest tenth
    /// of its timed repetitions; written as peak.json, the peak MFU is computed against. With
    /// --device cuda (a prof built with the `cuda` feature), a GPU's: cuBLAS's GEMM and a
    /// device copy, timed by CUDA events.
    Peak {
        /// What to measure: cpu, or cuda / cuda:N, the GPU of that ordinal (a prof built with
        /// `--features cuda`, and the NVIDIA driver and cuBLAS at run time).
        #[arg(long, default_value = "cpu", value_parser = peak_device)]
        device: PeakDevice,
        /// Where to write the peak (schema profiler-core/peak/v1).
        #[arg(short, long, default_value = "peak.json")]
        output: PathBuf,
        /// Threads, one GEMM each on its own matrices (default: every core available).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
        threads: Option<u32>,
        /// Time budget in seconds, half for the GEMM and half for STREAM, a tenth of each for
        /// warmup (at least 3 timed repetitions of each after a warmup, however long they
        /// take).
        #[arg(long, default_value = "4", value_parser = peak_seconds)]
        seconds: f64,
        /// The GEMM's element type: f32 (sgemm) or f64 (dgemm); on a GPU also bf16 and f16
        /// (cublasGemmEx, f32 accumulation; default there: bf16).
        #[arg(long, value_enum)]
        dtype: Option<DtypeArg>,
        /// The side of the GEMM's square matrices (default: the largest multiple of 64 whose
        /// three matrices fill at most half of one core's L2 cache, 128 to 1024; 256 when the
        /// L2 is not known; on a GPU, 8192).
        #[arg(long, value_parser = clap::value_parser!(u32).range(16..=16384))]
        size: Option<u32>,
        /// The STREAM arrays' total size in MiB (default: 4x the last-level cache per array,
        /// 256 MiB to 1 GiB in all, at most a quarter of the available memory); on a GPU, the
        /// device copy's buffer (default: 1 GiB, at most an eighth of the free memory).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
        stream_mib: Option<u64>,
        /// Format of what is printed (the file is JSON either way).
        #[arg(long, value_enum, default_value = "table")]
        format: PeakFormatArg,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DtypeArg {
    F32,
    F64,
    Bf16,
    F16,
}

/// `prof peak --device`.
#[derive(Clone, Copy, Debug)]
enum PeakDevice {
    Cpu,
    Cuda(usize),
}

/// `cpu`, `cuda` (device 0) or `cuda:N`.
fn peak_device(s: &str) -> Result<PeakDevice, String> {
    match s {
        "cpu" => Ok(PeakDevice::Cpu),
        "cuda" => Ok(PeakDevice::Cuda(0)),
        _ => s
            .strip_prefix("cuda:")
            .and_then(|n| n.parse().ok())
            .map(PeakDevice::Cuda)
            .ok_or_else(|| format!("`{s}`: expected cpu, cuda or cuda:N (a device ordinal)")),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum PeakFormatArg {
    Table,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum GroupByArg {
    Layer,
    Phase,
    #[value(name = "layer,phase")]
    LayerPhase,
}

#[derive(Clone, Copy, ValueEnum)]
enum FlameGroupArg {
    Layer,
    Phase,
}

impl From<FlameGroupArg> for flame::Grouping {
    fn from(g: FlameGroupArg) -> Self {
        match g {
            FlameGroupArg::Layer => flame::Grouping::Layer,
            FlameGroupArg::Phase => flame::Grouping::Phase,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum SortArg {
    Order,
    Median,
    Total,
    /// Median bytes allocated per run (needs memory figures: `profiler_core::Alloc`).
    Alloc,
    /// Median peak of live bytes per run (needs memory figures).
    Peak,
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    Table,
    Csv,
    Json,
    Markdown,
}

/// `--iterations`: `A..B`, `A..=B` or `A..`.
fn iteration_range(s: &str) -> Result<trace::IterationRange, String> {
    s.parse()
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TraceFormatArg {
    Json,
    Perfetto,
}

impl TraceFormatArg {
    /// The format an output's name asks for: perfetto for `.pftrace` and `.perfetto-trace`
    /// (then `.gz` or not), json otherwise.
    fn of_output(path: &Path) -> TraceFormatArg {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        if name.ends_with(".pftrace") || name.ends_with(".perfetto-trace") {
            TraceFormatArg::Perfetto
        } else {
            TraceFormatArg::Json
        }
    }
}

/// Above this many bytes (uncompressed), a JSON trace is too large for Perfetto's UI to open
/// (`prof trace` then suggests `--format perfetto`): the UI parses JSON inside its 32-bit
/// WebAssembly trace processor, whose 4 GiB address space holds the text and what it is parsed
/// into.
const JSON_TRACE_WARN_BYTES: u64 = 1_000_000_000;

#[derive(Clone, Copy, ValueEnum)]
enum IdealArg {
    Linear,
    Inverse,
    Constant,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Csv => Format::Csv,
            FormatArg::Json => Format::Json,
            FormatArg::Markdown => Format::Markdown,
        }
    }
}

impl From<GroupByArg> for report::GroupBy {
    fn from(g: GroupByArg) -> report::GroupBy {
        match g {
            GroupByArg::Layer => report::GroupBy::Layer,
            GroupByArg::Phase => report::GroupBy::Phase,
            GroupByArg::LayerPhase => report::GroupBy::LayerPhase,
        }
    }
}

impl From<SortArg> for report::SortBy {
    fn from(s: SortArg) -> report::SortBy {
        match s {
            SortArg::Order => report::SortBy::Order,
            SortArg::Median => report::SortBy::Median,
            SortArg::Total => report::SortBy::Total,
            SortArg::Alloc => report::SortBy::Alloc,
            SortArg::Peak => report::SortBy::Peak,
        }
    }
}

impl From<IdealArg> for scale::Ideal {
    fn from(i: IdealArg) -> scale::Ideal {
        match i {
            IdealArg::Linear => scale::Ideal::Linear,
            IdealArg::Inverse => scale::Ideal::Inverse,
            IdealArg::Constant => scale::Ideal::Constant,
        }
    }
}

/// The values `--resamples` accepts: fewer than 100 resamples make a confidence interval of
/// little use, and each resample of each event costs time (and the ratios, memory).
fn resamples_range() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(100..=1_000_000)
}

/// `prof trigger --iterations`: the rule the job reads a request's count by.
fn trigger_iterations(s: &str) -> Result<u32, String> {
    profiler_format::control::check_iterations(s)
}

fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a non-negative number")),
    }
}

fn probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a probability between 0 and 1 (like 0.05)"
        )),
    }
}

/// `--interval`: seconds, from 0.05 to one day.
fn seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.05..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "`{s}` is not a number of seconds from 0.05 to 86400"
        )),
    }
}

/// `prof peak --seconds`: from 0 (the fewest repetitions) to an hour.
fn peak_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds from 0 to 3600")),
    }
}

/// `0.02` or `2%`.
fn fraction(s: &str) -> Result<f64, String> {
    let (text, scale) = match s.strip_suffix('%') {
        Some(t) => (t, 0.01),
        None => (s, 1.0),
    };
    match text.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() && v * scale < 1.0 => Ok(v * scale),
        _ => Err(format!("`{s}` is not a fraction like 0.02 or 2%")),
    }
}

/// `batch=256,512,1024` -> ("batch", [256, 512, 1024]).
fn parse_param(text: &str) -> Result<(String, Vec<f64>), String> {
    let (name, values) = text
        .split_once('=')
        .ok_or_else(|| format!("--param `{text}`: expected NAME=V1,V2,..., like batch=256,512"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!(
            "--param `{text}`: the parameter needs a name, like batch=256,512"
        ));
    }
    let values = values
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| format!("--param `{text}`: `{v}` is not a positive number"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((name.to_owned(), values))
}

/// A failure the user can fix: the message, which starts with `error:`, and exit status 2.
struct Failure(String);

impl Failure {
    /// `message`, with `error: ` in front unless it starts with it already.
    fn new(message: impl std::fmt::Display) -> Failure {
        let message = message.to_string();
        if message.starts_with("error:") {
            Failure(message)
        } else {
            Failure(format!("error: {message}"))
        }
    }
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure::new(e)
    }
}

fn load(path: &Path) -> Result<Profile, Failure> {
    Ok(analysis::load_profile(path)?)
}

/// Every profile of `paths`, in order; the first that cannot be loaded is the failure.
fn load_all(paths: &[PathBuf]) -> Result<Vec<Profile>, Failure> {
    paths.iter().map(|f| load(f)).collect()
}

/// `error: cannot write PATH: WHY`, with a help line.
fn cannot_write(path: &Path, why: impl std::fmt::Display) -> Failure {
    Failure(format!(
        "error: cannot write {}: {why}\n  = help: -o takes the path of a regular file (new, or \
         one to replace) in an existing, writable directory",
        path.display()
    ))
}

/// Checks, before any input is read, that `path` can take the output: it names a regular file
/// or nothing yet (not a directory, a FIFO, a device or a link to one), in a directory that
/// exists.
fn check_output(path: &Path) -> Result<(), Failure> {
    // Follows links, the kernel's too (`/dev/stdout` leads through `/proc/self/fd/1` to a pipe).
    use profiler_format::write::OutputPathError as Why;
    match profiler_format::write::check_output_path(path) {
        Ok(_) => Ok(()),
        Err(Why::Target(why)) => Err(cannot_write(path, why)),
        Err(Why::NoDirectory(dir)) => Err(cannot_write(
            path,
            format_args!("the directory {} does not exist", dir.display()),
        )),
        Err(Why::NotWritable(_, e)) => Err(cannot_write(path, e)),
    }
}

fn write_output(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    profiler_format::write_atomic(path, bytes).map_err(|e| cannot_write(path, e))
}

fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`prof report x | head`) is not an error worth a panic.
    let _ = out.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// Runs one command; the exit status on success (1 for a regression found with
/// `--fail-on-regression`), a [`Failure`] (status 2) otherwise.
fn run(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Command::Report {
            file,
            group_by,
            sort,
            format,
            cv_threshold,
            drift_threshold,
            peak,
        } => {
            let mut profile = load(&file)?;
            if let Some(path) = peak {
                let peak = profiler_format::peak::load_peak(&path)
                    .map_err(|e| Failure::new(format!("error: --peak {e}")))?;
                profile.run.peak = Some(peak);
            }
            let options = report::ReportOptions {
                group_by: group_by.map(Into::into),
                sort: sort.into(),
                cv_threshold,
                drift_threshold,
                ..report::ReportOptions::default()
            };
            let built = report::build(&profile, &options);
            print(&report::render(&built, format.into()));
        }
        Command::Trace {
            file,
            output,
            format,
            iterations,
        } => {
            let format = format.unwrap_or_else(|| TraceFormatArg::of_output(&output));
            write_trace(&file, &output, format, iterations)?
        }
        Command::Diff {
            before,
            after,
            threshold,
            alpha,
            resamples,
            seed,
            fail_on_regression,
            paired,
            format,
        } => {
            let options = diff::DiffOptions {
                threshold,
                alpha,
                resamples,
                seed,
                paired,
                ..diff::DiffOptions::default()
            };
            let (before, after) = diff_sides(before, after)?;
            if paired && before.len() != after.len() {
                return Err(Failure::new(format!(
                    "error: --paired needs as many runs a side, in round order: {} before, {} \
                     after\n  = help: list the K-th before run and the K-th after run of each \
                     round in the same position, or leave out --paired",
                    before.len(),
                    after.len()
                )));
            }
            return compare(&before, &after, &options, fail_on_regression, format);
        }
        Command::Scale {
            files,
            param,
            ideal,
            format,
        } => print_scaling(&files, &param, ideal, format)?,
        Command::Merge {
            files,
            output,
            format,
        } => merge_ranks(&files, output.as_deref(), format)?,
        Command::Ab {
            before,
            after,
            runs,
            dir,
            until,
            budget,
            seed,
            threshold,
            fail_on_regression: _,
            format,
        } => {
            let plan = ab::Plan {
                before: ab::split(&before, "before").map_err(Failure::new)?,
                after: ab::split(&after, "after").map_err(Failure::new)?,
                runs: runs as usize,
                dir,
                seed,
                until,
                budget: std::time::Duration::from_secs(budget),
            };
            let options = diff::DiffOptions {
                threshold,
                paired: true,
                ..diff::DiffOptions::default()
            };
            let (b, a) = ab::run(&plan, &options).map_err(Failure::new)?;
            let result = diff::diff_runs(&b, &a, &options);
            print(&diff::render(&result, format.into()));
            return Ok(match result.gate() {
                diff::Gate::Regressed => ExitCode::from(1),
                diff::Gate::Inconclusive => ExitCode::from(3),
                diff::Gate::Pass => ExitCode::SUCCESS,
            });
        }
        Command::Html { file, diff, output } => write_html(&file, diff.as_deref(), &output)?,
        Command::Trigger {
            pid,
            control,
            iterations,
            at,
        } => {
            let target = match (pid, control) {
                (_, Some(path)) => trigger::Target::Control(path),
                (Some(pid), None) => trigger::Target::Pid(pid),
                (None, None) => return Err(Failure::new("error: name a PID or --control FILE")),
            };
            let said = trigger::trigger(&target, iterations, at).map_err(Failure::new)?;
            eprintln!("{said}");
        }
        Command::Flame {
            files,
            output,
            folded,
            icicle,
            group,
            filter,
            diff,
            threshold,
        } => {
            let request = FlameRequest {
                folded,
                icicle,
                group: group.map(Into::into),
                filter: filter.as_deref(),
                threshold,
            };
            write_flame(&files, &diff, &output, &request)?
        }
        Command::Watch {
            files,
            interval,
            drift_threshold,
            once,
            control,
        } => {
            let options = watch::WatchOptions {
                files,
                interval: std::time::Duration::from_secs_f64(interval),
                drift_threshold,
            };
            if once {
                let (frames, error) = watch::once(&options);
                print(&frames);
                if let Some(error) = error {
                    return Err(Failure::new(error));
                }
            } else {
                // The `t` key: a trace of the rank shown (by signal, on this host), or of every
                // rank through the control file.
                let trigger: watch::Trigger = Box::new(move |run| {
                    let target = match &control {
                        Some(path) => trigger::Target::Control(path.clone()),
                        None => trigger::Target::on_this_host(run)?,
                    };
                    trigger::trigger(&target, None, None)
                });
                watch::run(&options, trigger).map_err(Failure::new)?;
            }
        }
        Command::Peak {
            output,
            device,
            threads,
            seconds,
            dtype,
            size,
            stream_mib,
            format,
        } => {
            if let PeakDevice::Cuda(ordinal) = device {
                if threads.is_some() {
                    return Err(Failure::new(
                        "--threads is for the CPU: a GPU's GEMM runs on the device",
                    ));
                }
                let request = GpuRequest {
                    ordinal,
                    dtype: dtype.unwrap_or(DtypeArg::Bf16),
                    size: size.map(|n| n as usize),
                    copy_mib: stream_mib,
                    seconds,
                };
                return measure_gpu_peak(&output, request, format).map(|()| ExitCode::SUCCESS);
            }
            let dtype = match dtype.unwrap_or(DtypeArg::F32) {
                DtypeArg::F32 => peak::Dtype::F32,
                DtypeArg::F64 => peak::Dtype::F64,
                other => {
                    return Err(Failure::new(format!(
                        "--dtype {}: the CPU's GEMM takes f32 or f64 (bf16 and f16 are for \
                         --device cuda)",
                        other
                            .to_possible_value()
                            .map_or("?".into(), |v| v.get_name().to_owned())
                    )))
                }
            };
            let threads = match threads {
                Some(n) => n as usize,
                None => std::thread::available_parallelism().map_or(1, |n| n.get()),
            };
            let options = peak::Options {
                threads,
                seconds,
                dtype,
                size: size.map(|n| n as usize),
                stream_mib,
            };
            measure_peak(&output, &options, format)?
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `prof peak --device cuda` was asked (read only by a build with the `cuda` feature).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
struct GpuRequest {
    ordinal: usize,
    dtype: DtypeArg,
    size: Option<usize>,
    copy_mib: Option<u64>,
    seconds: f64,
}

/// `prof peak --device cuda`: the output is checked before anything is measured.
#[cfg(feature = "cuda")]
fn measure_gpu_peak(
    output: &Path,
    request: GpuRequest,
    format: PeakFormatArg,
) -> Result<(), Failure> {
    use peak::gpu::{GpuDtype, GpuOptions};
    check_output(output)?;
    let options = GpuOptions {
        ordinal: request.ordinal,
        dtype: match request.dtype {
            DtypeArg::F32 => GpuDtype::F32,
            DtypeArg::F64 => GpuDtype::F64,
            DtypeArg::Bf16 => GpuDtype::Bf16,
            DtypeArg::F16 => GpuDtype::F16,
        },
        size: request.size.unwrap_or(peak::gpu::DEFAULT_SIZE),
        copy_mib: request.copy_mib,
        seconds: request.seconds,
    };
    let measured = peak::gpu::measure(&options).map_err(Failure::new)?;
    write_peak(output, &measured.peak(), || measured.table(), format)
}

/// `prof peak --device cuda` in a build without the `cuda` feature: said, nothing measured or
/// written.
#[cfg(not(feature = "cuda"))]
fn measure_gpu_peak(
    _output: &Path,
    _request: GpuRequest,
    _format: PeakFormatArg,
) -> Result<(), Failure> {
    Err(Failure::new(
        "--device cuda: this prof was built without GPU support; build it with the `cuda` \
         feature (cargo install --path profiler-cli --features cuda), which needs no CUDA \
         toolkit to build and the NVIDIA driver and cuBLAS to run",
    ))
}

/// `prof peak`: the output is checked before anything is measured.
fn measure_peak(
    output: &Path,
    options: &peak::Options,
    format: PeakFormatArg,
) -> Result<(), Failure> {
    check_output(output)?;
    let measured = peak::measure(options).map_err(Failure::new)?;
    write_peak(output, &measured.peak(), || measured.table(), format)
}

/// Writes `peak` to `output` (checked already) and prints its table or its JSON: the end of
/// `prof peak` on the CPU and on a GPU.
fn write_peak(
    output: &Path,
    peak: &profiler_format::peak::Peak,
    table: impl FnOnce() -> String,
    format: PeakFormatArg,
) -> Result<(), Failure> {
    let json = serde_json::to_string_pretty(peak)?;
    write_output(output, format!("{json}\n").as_bytes())?;
    eprintln!("prof: wrote {}", output.display());
    match format {
        PeakFormatArg::Table => print(&table()),
        PeakFormatArg::Json => print(&json),
    }
    Ok(())
}

/// `prof trace`: the output is checked before the input is read, so that a bad `-o` fails fast.
/// The trace is streamed to the output (through a gzip encoder for `.gz`), never held whole: a
/// profile of ten million samples makes gigabytes of JSON. A JSON trace larger than
/// [`JSON_TRACE_WARN_BYTES`] is written all the same, with a warning suggesting the Perfetto
/// format.
fn write_trace(
    file: &Path,
    output: &Path,
    format: TraceFormatArg,
    iterations: Option<trace::IterationRange>,
) -> Result<(), Failure> {
    check_output(output)?;
    let mut profile = load(file)?;
    if let Some(iterations) = iterations {
        trace::keep_iterations(&mut profile, iterations)
            .map_err(|e| Failure::new(format!("error: {}: {e}", file.display())))?;
    }
    let gz = output.extension().is_some_and(|e| e == "gz");
    // The bytes of the trace (before compression) written to `sink`, and how many.
    let draw = |sink: &mut (dyn Write + Send)| -> std::io::Result<u64> {
        let traced = |e: trace::TraceError| match e {
            trace::TraceError::Io(e) => e,
            other => std::io::Error::other(other.to_string()),
        };
        let mut counted = Counted {
            inner: sink,
            bytes: 0,
        };
        match format {
            // Pretty: HolisticTraceAnalysis finds the rank with a regex that wants `"rank": N`.
            TraceFormatArg::Json => trace::write_chrome_trace(&profile, &mut counted),
            TraceFormatArg::Perfetto => trace::write_perfetto_trace(&profile, &mut counted),
        }
        .map_err(traced)?;
        Ok(counted.bytes)
    };
    let mut text_bytes = 0u64;
    let write = |out: &mut (dyn Write + Send)| -> std::io::Result<()> {
        if gz {
            // The JSON comes in chunks of a megabyte, compressed on the writer's thread.
            let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            text_bytes = draw(&mut encoder)?;
            encoder.finish()?;
        } else {
            text_bytes = draw(out)?;
        }
        Ok(())
    };
    profiler_format::write_atomic_with(output, write).map_err(|e| cannot_write(output, e))?;
    let (what, open) = match format {
        TraceFormatArg::Json => ("", "https://ui.perfetto.dev or chrome://tracing"),
        TraceFormatArg::Perfetto => (", Perfetto protobuf", "https://ui.perfetto.dev"),
    };
    eprintln!(
        "prof: wrote {} ({} mode{what}); open it in {open}",
        output.display(),
        profile.run.mode
    );
    if format == TraceFormatArg::Json && text_bytes > JSON_TRACE_WARN_BYTES {
        eprintln!(
            "warning: the JSON trace is {:.1} GB{}, more than Perfetto's UI can open (about 1              GB)\n  = help: write it with --format perfetto (or to a .pftrace) for Perfetto; keep              the JSON for HolisticTraceAnalysis",
            text_bytes as f64 / 1e9,
            if gz { " before compression" } else { "" }
        );
    }
    Ok(())
}

/// A writer that counts the bytes written through it.
struct Counted<'a> {
    inner: &'a mut (dyn Write + Send),
    bytes: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The runs of `prof diff`'s two sides: `BEFORE AFTER`, or several runs a side around `--`.
fn diff_sides(
    before: Vec<PathBuf>,
    after: Vec<PathBuf>,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Failure> {
    if after.is_empty() {
        return match <[PathBuf; 2]>::try_from(before) {
            Ok([b, a]) => Ok((vec![b], vec![a])),
            Err(_) => Err(Failure::new(
                "error: prof diff takes two files (before, after), or several runs a side \
                 around `--`\n  = help: prof diff before.json after.json, or prof diff b1.json \
                 b2.json -- a1.json a2.json",
            )),
        };
    }
    // Everything after `--` is a file: an option there is a mistake.
    if let Some(option) = after.iter().find(|p| p.to_string_lossy().starts_with('-')) {
        return Err(Failure::new(format!(
            "error: `{}` after `--` would be read as a file\n  = help: options go before `--`: \
             prof diff --fail-on-regression b1.json b2.json -- a1.json a2.json",
            option.display()
        )));
    }
    Ok((before, after))
}

/// `prof diff`: status 1 when `fail_on_regression` and anything regressed, 3 when nothing did
/// but the comparison is inconclusive, for CI.
fn compare(
    before: &[PathBuf],
    after: &[PathBuf],
    options: &diff::DiffOptions,
    fail_on_regression: bool,
    format: FormatArg,
) -> Result<ExitCode, Failure> {
    let b = before
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let a = after
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let result = diff::diff_runs(&b, &a, options);
    print(&diff::render(&result, format.into()));
    if fail_on_regression && result.has_regression() {
        return Ok(ExitCode::from(1));
    }
    if fail_on_regression && result.is_inconclusive() {
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}

/// `prof scale`: `--param` is checked against the files before any of them is read.
fn print_scaling(
    files: &[PathBuf],
    param: &str,
    ideal: IdealArg,
    format: FormatArg,
) -> Result<(), Failure> {
    let (name, values) = parse_param(param)?;
    if values.len() != files.len() {
        return Err(Failure(format!(
            "error: --param gives {} values for {} files: give one value per file, in the same \
             order",
            values.len(),
            files.len()
        )));
    }
    let profiles = load_all(files)?;
    let runs: Vec<(f64, &Profile)> = values.iter().copied().zip(&profiles).collect();
    let scaling = scale::scale(&runs, &name, ideal.into())?;
    print(&scale::render(&scaling, format.into()));
    Ok(())
}

/// `prof merge`: the merged JSON written to `output` when given, the merge printed either way.
fn merge_ranks(files: &[PathBuf], output: Option<&Path>, format: FormatArg) -> Result<(), Failure> {
    if let Some(output) = output {
        check_output(output)?;
    }
    let profiles = load_all(files)?;
    let merged = merge::merge(&profiles)?;
    if let Some(output) = output {
        write_output(output, &serde_json::to_vec_pretty(&merged)?)?;
        eprintln!("prof: wrote {}", output.display());
    }
    print(&merge::render(&merged, format.into()));
    Ok(())
}

/// What `prof flame` was asked for, besides its files.
struct FlameRequest<'a> {
    folded: bool,
    icicle: bool,
    group: Option<flame::Grouping>,
    filter: Option<&'a str>,
    threshold: f64,
}

/// `prof flame`: the output and the filter are checked before any input is read.
fn write_flame(
    files: &[PathBuf],
    baseline: &[PathBuf],
    output: &Path,
    request: &FlameRequest,
) -> Result<(), Failure> {
    check_output(output)?;
    let filter = request
        .filter
        .map(|text| {
            profiler_format::filter::Filter::parse(text).map_err(|e| {
                Failure::new(profiler_format::filter::render_error(
                    "--filter",
                    &e.input,
                    e.column,
                    e.width,
                    &e.problem,
                    &e.expected,
                ))
            })
        })
        .transpose()?;
    let profiles = load_all(files)?;
    let baseline = load_all(baseline)?;
    let options = flame::FlameOptions {
        group: request.group,
        filter,
        icicle: request.icicle,
        baseline: (!baseline.is_empty()).then_some(baseline.as_slice()),
        diff: diff::DiffOptions {
            threshold: request.threshold,
            ..diff::DiffOptions::default()
        },
    };
    let graph = flame::flame(&profiles, &options).map_err(|e| match &e {
        flame::FlameError::NoIteration { index } => {
            Failure::new(format!("{}: {e}", files[*index].display()))
        }
        _ => Failure::new(e),
    })?;
    let bytes = if request.folded {
        graph.folded()
    } else {
        graph
            .svg()
            .map_err(|e| Failure::new(format!("cannot draw the flame graph: {e}")))?
    };
    write_output(output, bytes.as_bytes())?;
    eprintln!(
        "prof: wrote {} ({} frames, {} ns: {})",
        output.display(),
        graph.frames.len(),
        graph.width_ns(),
        analysis::printable(&graph.title)
    );
    Ok(())
}

/// `prof html`, against `baseline` when given.
fn write_html(file: &Path, baseline: Option<&Path>, output: &Path) -> Result<(), Failure> {
    check_output(output)?;
    let profile = load(file)?;
    let baseline = baseline.map(load).transpose()?;
    let page = html::html_report(&profile, baseline.as_ref());
    write_output(output, page.as_bytes())?;
    eprintln!("prof: wrote {}", output.display());
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(Failure(message)) => {
            // Every message starts with `error:`; `Failure::new` and the constructors see to it.
            debug_assert!(message.starts_with("error:"), "{message}");
            // A name or path quoted from the input shows its control characters as escapes.
            eprintln!("{}", analysis::printable_lines(&message));
            ExitCode::from(2)
        }
    }
}
