//! `prof trace`: a profile as a Chrome JSON or Perfetto protobuf trace, streamed to its output.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ValueEnum;
use profiler_analysis::trace;

use crate::common::{cannot_write, check_output, Failure};
use profiler_analysis::load_profile;

/// Chrome Trace Event Format (Kineto flavoured) that opens in Perfetto and loads in
/// HolisticTraceAnalysis, or Perfetto's protobuf trace for large profiles; `.gz` output is
/// compressed.
#[derive(clap::Args)]
pub struct TraceArgs {
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
}

/// `--iterations`: `A..B`, `A..=B` or `A..`.
fn iteration_range(s: &str) -> Result<trace::IterationRange, String> {
    s.parse()
}

/// `--format`.
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

/// Writes the trace of `args.file` to `args.output`, in the format asked for or the one the
/// output's name implies.
pub fn run(args: TraceArgs) -> Result<ExitCode, Failure> {
    let format = args
        .format
        .unwrap_or_else(|| TraceFormatArg::of_output(&args.output));
    write_trace(&args.file, &args.output, format, args.iterations)?;
    Ok(ExitCode::SUCCESS)
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
    check_output(output, &[file])?;
    let mut profile = load_profile(file)?;
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
    say!(
        "prof: wrote {} ({} mode{what}); open it in {open}",
        output.display(),
        profile.run.mode
    );
    if format == TraceFormatArg::Json && text_bytes > JSON_TRACE_WARN_BYTES {
        say!("{}", too_big_for_perfetto(text_bytes, gz));
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

/// The warning for a JSON trace larger than Perfetto's UI opens.
fn too_big_for_perfetto(text_bytes: u64, gz: bool) -> String {
    format!(
        "warning: the JSON trace is {:.1} GB{}, more than Perfetto's UI can open (about 1 GB)\n  \
         = help: write it with --format perfetto (or to a .pftrace) for Perfetto; keep the JSON \
         for HolisticTraceAnalysis",
        text_bytes as f64 / 1e9,
        if gz { " before compression" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_size_warning_reads_as_two_lines_without_runs_of_spaces() {
        let text = super::too_big_for_perfetto(2_500_000_000, true);
        assert_eq!(
            text,
            "warning: the JSON trace is 2.5 GB before compression, more than Perfetto's UI can \
             open (about 1 GB)\n  = help: write it with --format perfetto (or to a .pftrace) for \
             Perfetto; keep the JSON for HolisticTraceAnalysis"
        );
    }
}
