//! `prof flame`: a flame graph of the mean iteration, as SVG or folded stacks.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use profiler_analysis::{self as analysis, diff, flame};

use crate::common::{check_output, fraction, load_all, write_output, Failure};

/// A flame graph of the mean iteration: an interactive SVG (or folded stacks), one frame per
/// event, as wide as its time per iteration, nested by parent; with --diff, frames coloured
/// by prof diff's verdicts.
#[derive(clap::Args)]
pub struct FlameArgs {
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
}

/// `--group`.
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

/// Writes the flame graph; the output and the filter are checked before any input is read.
pub fn run(args: FlameArgs) -> Result<ExitCode, Failure> {
    let output = &args.output;
    check_output(output)?;
    let filter = args
        .filter
        .as_deref()
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
    let profiles = load_all(&args.files)?;
    let baseline = load_all(&args.diff)?;
    let options = flame::FlameOptions {
        group: args.group.map(Into::into),
        filter,
        icicle: args.icicle,
        baseline: (!baseline.is_empty()).then_some(baseline.as_slice()),
        diff: diff::DiffOptions {
            threshold: args.threshold,
            ..diff::DiffOptions::default()
        },
    };
    let graph = flame::flame(&profiles, &options).map_err(|e| match &e {
        flame::FlameError::NoIteration { index } => {
            Failure::new(format!("{}: {e}", args.files[*index].display()))
        }
        _ => Failure::new(e),
    })?;
    let bytes = if args.folded {
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
    Ok(ExitCode::SUCCESS)
}
