//! `prof peak`: the flags, and the writing of `peak.json`; the benchmark is the crate
//! `profiler-peak`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ValueEnum;
use profiler_peak as peak;

use crate::common::{check_output, print, write_output, Failure};

/// Measure this machine's achievable peak: FLOP/s by a GEMM (matrixmultiply) on every
/// thread, memory bandwidth by STREAM's copy and triad, each the median of the fastest tenth
/// of its timed repetitions; written as peak.json, the peak MFU is computed against. With
/// --device cuda (a prof built with the `cuda` feature), a GPU's: cuBLAS's GEMM and a
/// device copy, timed by CUDA events.
#[derive(clap::Args)]
pub struct PeakArgs {
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
    #[arg(long, default_value = "4", value_parser = peak_seconds, allow_negative_numbers = true)]
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
}

/// `--dtype`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DtypeArg {
    F32,
    F64,
    Bf16,
    F16,
}

/// `--device`.
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

/// `--format`: what is printed (the file is JSON either way).
#[derive(Clone, Copy, ValueEnum)]
enum PeakFormatArg {
    Table,
    Json,
}

/// `--seconds`: from 0 (the fewest repetitions) to an hour.
fn peak_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds from 0 to 3600")),
    }
}

/// Measures the CPU's peak, or a GPU's with `--device cuda`, and writes it; the flags and the
/// output are checked before anything is measured.
pub fn run(args: PeakArgs) -> Result<ExitCode, Failure> {
    let PeakArgs {
        output,
        device,
        threads,
        seconds,
        dtype,
        size,
        stream_mib,
        format,
    } = args;
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
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = match threads {
        Some(n) => n as usize,
        None => available,
    };
    if threads > available {
        // Each thread's GEMM then shares a core: the peak measured is below the machine's.
        say!(
            "prof peak: warning: --threads {threads} is more than the {available} cores this \
             process may run on: the threads share them, and the peak measured is below what \
             the cores can do (leave --threads out to use every core)"
        );
    }
    let options = peak::Options {
        threads,
        seconds,
        dtype,
        size: size.map(|n| n as usize),
        stream_mib,
    };
    measure_peak(&output, &options, format)?;
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
    check_output::<&Path>(output, &[])?;
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
    check_output::<&Path>(output, &[])?;
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
    say!("prof: wrote {}", output.display());
    match format {
        PeakFormatArg::Table => print(&table())?,
        PeakFormatArg::Json => print(&json)?,
    }
    Ok(())
}
