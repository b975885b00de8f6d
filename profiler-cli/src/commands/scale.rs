//! `prof scale`: how each event's time grows with a parameter, against ideal scaling.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use profiler_analysis::scale;
use profiler_format::Profile;

use crate::common::{load_all, print, Failure, FormatArg};

/// How each event's time grows with a parameter (batch size, GPU count), against ideal
/// scaling, with the efficiency per step.
#[derive(clap::Args)]
pub struct ScaleArgs {
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
}

/// `--ideal`.
#[derive(Clone, Copy, ValueEnum)]
enum IdealArg {
    Linear,
    Inverse,
    Constant,
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

/// Prints the scaling; `--param` is checked against the files before any of them is read.
pub fn run(args: ScaleArgs) -> Result<ExitCode, Failure> {
    let (name, values) = parse_param(&args.param)?;
    if values.len() != args.files.len() {
        return Err(Failure(format!(
            "error: --param gives {} values for {} files: give one value per file, in the same \
             order",
            values.len(),
            args.files.len()
        )));
    }
    let profiles = load_all(&args.files)?;
    let runs: Vec<(f64, &Profile)> = values.iter().copied().zip(&profiles).collect();
    let scaling = scale::scale(&runs, &name, args.ideal.into())?;
    print(&scale::render(&scaling, args.format.into()))?;
    Ok(ExitCode::SUCCESS)
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
    // Checked here too, before any file is read (the analysis refuses it as well).
    if let Some(v) = values
        .iter()
        .enumerate()
        .find_map(|(i, v)| values[..i].contains(v).then_some(v))
    {
        return Err(format!(
            "--param `{text}`: {name}={v} is given twice: give each run its own value"
        ));
    }
    Ok((name.to_owned(), values))
}
