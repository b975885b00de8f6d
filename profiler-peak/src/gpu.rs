//! `prof peak --device cuda[:N]`: a GPU's achievable peak, measured on the device (feature
//! `cuda`): FLOP/s by cuBLAS's GEMM (`sgemm`, `dgemm`, or `GemmEx` in bf16 or f16 with f32
//! accumulation, on tensor cores where the GPU has them), and memory bandwidth by a device to
//! device copy (`cuMemcpyDtoD`, counted as STREAM counts a copy: each byte read and written).
//! Each repetition is timed by two CUDA events on the stream, after warmup repetitions; the
//! best is the peak, as on the CPU.
//!
//! The driver and cuBLAS are loaded at run time (`cudarc`'s dynamic loading, as profiler-core's
//! `cuda` feature does): a machine without them gets an error naming what is missing, never a
//! panic, and this module is checked beside them first.

use std::sync::Arc;

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{sys::CUevent_flags, CudaContext, CudaStream, DeviceRepr, ValidAsZeroBits};

use super::Figure;
use profiler_format::peak::{Peak, PEAK_SCHEMA};

/// The element type of the GPU's GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuDtype {
    /// `cublasSgemm` (f32; tensor cores only if the library's math mode allows TF32).
    F32,
    /// `cublasDgemm` (f64).
    F64,
    /// `cublasGemmEx`, bf16 inputs and output, f32 accumulation: what mixed-precision training
    /// runs, and the figure an MFU is usually quoted against.
    Bf16,
    /// `cublasGemmEx`, f16 inputs and output, f32 accumulation.
    F16,
}

impl GpuDtype {
    /// The name `--dtype` takes and the detail writes.
    pub fn name(self) -> &'static str {
        match self {
            GpuDtype::F32 => "f32",
            GpuDtype::F64 => "f64",
            GpuDtype::Bf16 => "bf16",
            GpuDtype::F16 => "f16",
        }
    }

    fn kernel(self) -> &'static str {
        match self {
            GpuDtype::F32 => "cublasSgemm",
            GpuDtype::F64 => "cublasDgemm",
            GpuDtype::Bf16 | GpuDtype::F16 => "cublasGemmEx (f32 accumulation)",
        }
    }
}

/// What to measure on the GPU.
#[derive(Clone, Debug)]
pub struct GpuOptions {
    /// The device ordinal (`cuda:N`).
    pub ordinal: usize,
    /// The GEMM's element type.
    pub dtype: GpuDtype,
    /// The side of the GEMM's square matrices.
    pub size: usize,
    /// The copy's buffer size in MiB (`--stream-mib`); `None`: 1 GiB, or an eighth of the free
    /// memory if less.
    pub copy_mib: Option<u64>,
    /// The time budget, split evenly between the GEMM and the copy (at least [`MIN_REPS`]
    /// timed repetitions each).
    pub seconds: f64,
}

/// The default side of the GEMM's matrices on a GPU: 8192 (about 1.1 TFLOP a GEMM, a few
/// milliseconds on a data-centre GPU; 384 MiB of bf16 matrices).
pub const DEFAULT_SIZE: usize = 8192;
/// Timed repetitions at least, however long they take.
pub const MIN_REPS: usize = 5;
/// Timed repetitions at most.
pub const MAX_REPS: usize = 1000;
/// Untimed repetitions first (clocks ramp up, cuBLAS picks and loads its kernel).
pub const WARMUP_REPS: usize = 3;

/// What was measured on the GPU.
#[derive(Clone, Debug)]
pub struct GpuMeasured {
    /// The device's name, as the driver gives it.
    pub name: String,
    /// The GEMM's FLOP/s (2 n³ per GEMM).
    pub gemm: Figure,
    /// The copy's bytes per second (each byte read and written: twice the buffer).
    pub copy: Figure,
    /// What was asked.
    pub options: GpuOptions,
    /// The copy's buffer, in bytes.
    pub copy_bytes: usize,
}

impl GpuMeasured {
    /// The `peak.json`: flops from the GEMM, bytes from the copy.
    pub fn peak(&self) -> Peak {
        Peak {
            schema: PEAK_SCHEMA.into(),
            flops: Some(self.gemm.peak),
            bytes: Some(self.copy.peak),
            source: "measured".into(),
            detail: self.detail(),
            host: profiler_format::json::host_name(),
        }
    }

    /// The table `prof peak --device cuda` prints.
    pub fn table(&self) -> String {
        let o = &self.options;
        let mut out = format!(
            "prof peak: GPU cuda:{} ({}), {n}x{n} {} GEMM, device copy of {} MiB\n\n",
            o.ordinal,
            self.name,
            o.dtype.name(),
            self.copy_bytes >> 20,
            n = o.size,
        );
        out.push_str(&format!(
            "{:<18} {:>10} {:>10} {:>10} {:>10} {:>7} {:>5}  {}\n",
            "figure", "peak", "best", "median", "worst", "spread", "reps", "unit"
        ));
        for (name, figure, unit, scale) in [
            (
                format!("GEMM {}", o.dtype.name()),
                &self.gemm,
                "TFLOP/s",
                1e12,
            ),
            ("device copy".to_owned(), &self.copy, "GB/s", 1e9),
        ] {
            out.push_str(&format!(
                "{name:<18} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>6.1}% {:>5}  {unit}\n",
                figure.peak / scale,
                figure.best / scale,
                figure.median / scale,
                figure.worst / scale,
                figure.spread() * 100.0,
                figure.reps
            ));
        }
        out.push_str(&format!(
            "\npeak: flops {:.1} TFLOP/s ({} GEMM), bytes {:.1} GB/s (device copy)\n",
            self.gemm.peak / 1e12,
            o.dtype.name(),
            self.copy.peak / 1e9
        ));
        out
    }

    /// The kernels, sizes, dtype, repetitions and spreads, in one paragraph.
    pub fn detail(&self) -> String {
        let o = &self.options;
        format!(
            "GPU cuda:{ordinal} ({name}). FLOP/s: cuBLAS {kernel} ({dtype}), C = A B on {n}x{n} \
             square matrices, 2 n^3 FLOP each, timed by CUDA events, three entries of the \
             product checked; the median of the fastest tenth of the timed repetitions, TFLOP/s \
             {gemm}. Bytes/s: cuMemcpyDtoD of {mib:.0} MiB, counted as STREAM counts a copy \
             (each byte read and written); GB/s {copy}.",
            ordinal = o.ordinal,
            name = self.name,
            kernel = o.dtype.kernel(),
            dtype = o.dtype.name(),
            n = o.size,
            gemm = self.gemm.describe(1e12),
            mib = self.copy_bytes as f64 / (1 << 20) as f64,
            copy = self.copy.describe(1e9),
        )
    }
}

/// Library names `cudarc` tries for `lib` (`cuda`, `cublas`), the driver's versioned name first.
fn candidates(lib: &str) -> Vec<String> {
    let mut names = vec![format!("lib{lib}.so.1")];
    names.extend(cudarc::get_lib_name_candidates(lib));
    names
}

/// Whether one of `lib`'s names loads (checked before `cudarc` loads it, which panics when none
/// does).
fn loadable(lib: &str) -> bool {
    candidates(lib).iter().any(|name| {
        // SAFETY: loading a CUDA library runs its initializers, as `cudarc` would.
        unsafe { libloading::Library::new(name) }.is_ok()
    })
}

/// Measures the GPU `options` name; an error says what is missing (no driver, no cuBLAS, no
/// such device, not enough memory) and never panics.
pub fn measure(options: &GpuOptions) -> Result<GpuMeasured, String> {
    if !loadable("cuda") {
        return Err(
            "no CUDA driver: libcuda.so could not be loaded (prof peak --device cuda \
                    needs the NVIDIA driver; without a GPU, measure the CPU with --device cpu)"
                .to_owned(),
        );
    }
    if !loadable("cublas") {
        return Err(
            "cuBLAS could not be loaded (libcublas.so): install the CUDA toolkit's \
                    cuBLAS, or the nvidia-cublas package, and put it on LD_LIBRARY_PATH"
                .to_owned(),
        );
    }
    let ctx = CudaContext::new(options.ordinal)
        .map_err(|e| format!("cannot open CUDA device {}: {e}", options.ordinal))?;
    let name = ctx.name().unwrap_or_else(|_| "unnamed device".to_owned());
    let stream = ctx.default_stream();
    let blas = CudaBlas::new(stream.clone()).map_err(|e| format!("cuBLAS: {e}"))?;
    let budget = options.seconds / 2.0;
    let n = options.size;
    let gemm = match options.dtype {
        GpuDtype::F32 => gemm_figure::<f32>(&stream, &blas, n, budget),
        GpuDtype::F64 => gemm_figure::<f64>(&stream, &blas, n, budget),
        GpuDtype::Bf16 => gemm_figure::<half::bf16>(&stream, &blas, n, budget),
        GpuDtype::F16 => gemm_figure::<half::f16>(&stream, &blas, n, budget),
    }?;
    let (free, _) = ctx
        .mem_get_info()
        .map_err(|e| format!("cuMemGetInfo: {e}"))?;
    let copy_bytes = match options.copy_mib {
        Some(mib) => usize::try_from(mib << 20).unwrap_or(usize::MAX),
        None => (1usize << 30).min(free / 8),
    };
    let copy = copy_figure(&stream, copy_bytes, budget)?;
    Ok(GpuMeasured {
        name,
        gemm,
        copy,
        options: options.clone(),
        copy_bytes,
    })
}

/// Times `op` on `stream` with a pair of events each repetition, after the warmup, until the
/// budget is spent (between [`MIN_REPS`] and [`MAX_REPS`] repetitions); `work` units per
/// repetition.
fn timed(
    stream: &Arc<CudaStream>,
    work: f64,
    budget: f64,
    mut op: impl FnMut() -> Result<(), String>,
) -> Result<Figure, String> {
    let err = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
    for _ in 0..WARMUP_REPS {
        op()?;
    }
    stream.synchronize().map_err(err)?;
    let mut times = Vec::new();
    let mut spent = 0.0;
    while times.len() < MAX_REPS && (times.len() < MIN_REPS || spent < budget) {
        let start = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?;
        op()?;
        let end = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?;
        let ms = start.elapsed_ms(&end).map_err(err)?;
        let t = std::time::Duration::from_secs_f64(f64::from(ms.max(1e-6)) / 1e3);
        spent += t.as_secs_f64();
        times.push(t);
    }
    Ok(Figure::of(work, &times, WARMUP_REPS))
}

/// An element type of the GPU's GEMM, as the host fills and checks it.
trait GpuElement: DeviceRepr + ValidAsZeroBits + Copy {
    fn from_f32(v: f32) -> Self;
    fn to_f64(self) -> f64;
    /// The relative error a product entry may have (the output type's rounding).
    const TOLERANCE: f64;
}

impl GpuElement for f32 {
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    const TOLERANCE: f64 = 1e-4;
}

impl GpuElement for f64 {
    fn from_f32(v: f32) -> Self {
        f64::from(v)
    }
    fn to_f64(self) -> f64 {
        self
    }
    const TOLERANCE: f64 = 1e-9;
}

impl GpuElement for half::bf16 {
    fn from_f32(v: f32) -> Self {
        half::bf16::from_f32(v)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
    const TOLERANCE: f64 = 1e-2;
}

impl GpuElement for half::f16 {
    fn from_f32(v: f32) -> Self {
        half::f16::from_f32(v)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
    const TOLERANCE: f64 = 2e-3;
}

/// Entry `i` of a filled matrix: eighths from 0 to 12/8, exact in every element type, and small
/// enough that an n = 16384 product stays exact in f32 accumulation and within f16's range.
fn entry(i: usize, seed: usize) -> f32 {
    ((i.wrapping_mul(7).wrapping_add(seed * 5)) % 13) as f32 / 8.0
}

/// The GEMM's figure in element type `T`: C = A B on filled matrices, three entries of the last
/// product checked against the naive one on the host, so that the FLOPs counted are those of a
/// real product.
fn gemm_figure<T>(
    stream: &Arc<CudaStream>,
    blas: &CudaBlas,
    n: usize,
    budget: f64,
) -> Result<Figure, String>
where
    T: GpuElement,
    CudaBlas: Gemm<T>,
{
    let side = i32::try_from(n).map_err(|_| format!("--size {n} is too large for cuBLAS"))?;
    let host =
        |seed: usize| -> Vec<T> { (0..n * n).map(|i| T::from_f32(entry(i, seed))).collect() };
    let (ha, hb) = (host(0), host(1));
    let no_memory = |what: &str, e: cudarc::driver::DriverError| {
        format!(
            "cannot allocate the GEMM's {what} ({n}x{n} of {} bytes) on the device: {e}; a \
             smaller --size needs less",
            std::mem::size_of::<T>()
        )
    };
    let a = stream.clone_htod(&ha).map_err(|e| no_memory("A", e))?;
    let b = stream.clone_htod(&hb).map_err(|e| no_memory("B", e))?;
    let mut c = stream
        .alloc_zeros::<T>(n * n)
        .map_err(|e| no_memory("C", e))?;
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: side,
        n: side,
        k: side,
        alpha: T::from_f32(1.0),
        lda: side,
        ldb: side,
        beta: T::from_f32(0.0),
        ldc: side,
    };
    let flops = 2.0 * (n as f64).powi(3);
    let figure = timed(stream, flops, budget, || {
        // SAFETY: A, B and C are n x n on this stream, and the leading dimensions are n.
        unsafe { blas.gemm(cfg, &a, &b, &mut c) }.map_err(|e| format!("cuBLAS gemm: {e}"))
    })?;
    let hc = stream
        .clone_dtoh(&c)
        .map_err(|e| format!("cannot read the product back: {e}"))?;
    // Column-major, as cuBLAS: C(i, j) = sum over k of A(i, k) B(k, j), X(i, j) = x[i + j n].
    for (i, j) in [(0, n - 1), (n / 2, n / 2), (n - 1, 0)] {
        let want: f64 = (0..n)
            .map(|k| f64::from(entry(i + k * n, 0)) * f64::from(entry(k + j * n, 1)))
            .sum();
        let got = hc[i + j * n].to_f64();
        if (got - want).abs() > T::TOLERANCE * want.abs().max(1.0) {
            return Err(format!(
                "cuBLAS's product is wrong at ({i}, {j}): {got}, the naive product gives \
                 {want}; no peak can be measured with it"
            ));
        }
    }
    Ok(figure)
}

/// The copy's figure: `bytes` copied from one buffer to another, counted twice.
fn copy_figure(stream: &Arc<CudaStream>, bytes: usize, budget: f64) -> Result<Figure, String> {
    let len = bytes / 4;
    let alloc = || {
        stream.alloc_zeros::<f32>(len).map_err(|e| {
            format!(
                "cannot allocate the copy's buffers ({} MiB each): {e}; --stream-mib sets it",
                bytes >> 20
            )
        })
    };
    let (src, mut dst) = (alloc()?, alloc()?);
    timed(stream, 2.0 * (len * 4) as f64, budget, || {
        stream
            .memcpy_dtod(&src, &mut dst)
            .map_err(|e| format!("cuMemcpyDtoD: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_without_a_driver_gets_an_error_not_a_panic() {
        let options = GpuOptions {
            ordinal: 0,
            dtype: GpuDtype::Bf16,
            size: 256,
            copy_mib: Some(16),
            seconds: 0.1,
        };
        if loadable("cuda") {
            // A machine with a driver: measured, or an error naming what is missing.
            match measure(&options) {
                Ok(m) => assert!(m.gemm.best > 0.0 && m.copy.best > 0.0),
                Err(e) => assert!(!e.is_empty()),
            }
            return;
        }
        let e = measure(&options).unwrap_err();
        assert!(e.starts_with("no CUDA driver"), "{e}");
    }
}
