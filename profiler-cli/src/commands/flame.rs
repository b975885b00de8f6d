//! `prof flame`: a flame graph of the mean iteration, as SVG or folded stacks.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use profiler_analysis::{self as analysis, diff, flame};

use crate::common::{
    check_output, fraction, load_all, no_cpu_samples, no_sampled_stack, parse_cpu_filter,
    parse_filter, write_output, Failure,
};
use profiler_analysis::load_profile;

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
    /// Draw the CPU samples (taken with PROF_CPU_SAMPLE) instead: a root frame per event
    /// (`layer/phase/name`, `(no event)` for samples outside every event) with the sampled
    /// stacks above it, as wide as their samples; --filter keeps the events it matches.
    #[arg(long, conflicts_with_all = ["icicle", "diff", "group"])]
    cpu: bool,
}

/// `prof flame --cpu`: the sampled stacks under their events' frames.
fn cpu_flame(
    args: &FlameArgs,
    filter: Option<&profiler_format::filter::Filter>,
) -> Result<ExitCode, Failure> {
    let [file] = args.files.as_slice() else {
        return Err(Failure::new(
            "error: prof flame --cpu draws one prof.json\n  = help: give one file",
        ));
    };
    let profile = load_profile(file)?;
    let Some(folded) = analysis::cpu::folded(&profile, filter) else {
        return Err(no_cpu_samples(file));
    };
    if folded.is_empty() {
        return Err(no_sampled_stack(file, args.filter.as_deref()));
    }
    let bytes = if args.folded {
        folded.into_bytes()
    } else {
        let title = format!(
            "CPU samples: {} ({})",
            profile.run.program, profile.run.mode
        );
        analysis::cpu::svg(&folded, &title)
            .map_err(|e| Failure::new(format!("error: cannot draw the flame graph: {e}")))?
            .into_bytes()
    };
    write_output(&args.output, &bytes)?;
    Ok(ExitCode::SUCCESS)
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
    check_output(output, &[&args.files[..], &args.diff[..]].concat())?;
    if args.cpu {
        let filter = parse_cpu_filter(args.filter.as_deref())?;
        return cpu_flame(&args, filter.as_ref());
    }
    let filter = parse_filter(args.filter.as_deref())?;
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
    say!(
        "prof: wrote {} ({} frames, {} ns: {})",
        output.display(),
        graph.frames.len(),
        graph.width_ns(),
        analysis::printable(&graph.title)
    );
    Ok(ExitCode::SUCCESS)
}
