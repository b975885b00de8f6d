//! A machine's achievable peak, measured: FLOP/s by a GEMM on every thread, and memory
//! bandwidth by STREAM's copy and triad, each the median of the fastest tenth of many timed
//! repetitions after a warmup, with its spread. The CPU's ([`measure`]); a GPU's with the
//! feature `cuda` (`gpu::measure`: cuBLAS's GEMM and a device copy, timed by CUDA events).
//!
//! What `prof peak` runs and writes as `peak.json` ([`Measured::peak`], schema
//! `profiler-core/peak/v1`), the peak MFU is judged against. The `prof` command holds only its
//! flags and the writing of the file; the benchmark is here, so that the report tool does not
//! carry GEMM kernels in its source tree.

#![warn(missing_docs)]

mod affinity;
mod gemm;
#[cfg(feature = "cuda")]
pub mod gpu;
mod stream;
mod timing;

use std::time::Duration;

use gemm::Element;
use profiler_format::peak::{Peak, PEAK_SCHEMA};

/// The element type of the GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// `sgemm`.
    F32,
    /// `dgemm`.
    F64,
}

/// What to measure, and for how long.
#[derive(Clone, Debug)]
pub struct Options {
    /// Threads: one GEMM each, on its own matrices; the STREAM arrays split among them.
    pub threads: usize,
    /// The time budget, split evenly between the GEMM and STREAM (at least 3, `timing::MIN_REPS`,
    /// timed repetitions each, however long they take).
    pub seconds: f64,
    /// The GEMM's element type.
    pub dtype: Dtype,
    /// The side of the GEMM's square matrices; `None`: [`default_size`].
    pub size: Option<usize>,
    /// The STREAM arrays' total size in MiB (three arrays); `None`: four times the last-level
    /// cache each, from 256 MiB to 1 GiB in all, and at most a quarter of the available memory.
    pub stream_mib: Option<u64>,
}

/// One figure over the timed repetitions, as rates per second.
#[derive(Clone, Debug)]
pub struct Figure {
    /// The peak: the median rate of the fastest tenth of the repetitions (at least one). Not
    /// the single best: on a VM the best moment of a run is now and then a burst of a higher
    /// clock that the next run does not see, and the best of thousands of short repetitions
    /// is that burst; the fastest tenth is a rate the machine kept up (measured in
    /// docs/overhead.md, `prof peak`).
    pub peak: f64,
    /// The best repetition's rate.
    pub best: f64,
    /// The median repetition's.
    pub median: f64,
    /// The worst repetition's.
    pub worst: f64,
    /// How many timed repetitions.
    pub reps: usize,
    /// How many untimed warmup repetitions ran before them.
    pub warmup: usize,
}

impl Figure {
    /// `work` units per repetition over each repetition's time, after `warmup` untimed ones.
    fn of(work: f64, times: &[Duration], warmup: usize) -> Figure {
        let mut rates: Vec<f64> = times
            .iter()
            .map(|t| work / t.as_secs_f64().max(1e-9))
            .collect();
        rates.sort_by(f64::total_cmp);
        let n = rates.len();
        let median = if n % 2 == 1 {
            rates[n / 2]
        } else {
            (rates[n / 2 - 1] + rates[n / 2]) / 2.0
        };
        // The fastest tenth, fastest last; its median.
        let fastest = &rates[n - n.div_ceil(10)..];
        let k = fastest.len();
        let peak = if k % 2 == 1 {
            fastest[k / 2]
        } else {
            (fastest[k / 2 - 1] + fastest[k / 2]) / 2.0
        };
        Figure {
            peak,
            best: rates[n - 1],
            median,
            worst: rates[0],
            reps: n,
            warmup,
        }
    }

    /// (best − worst) / best: how far apart the repetitions were, as a fraction.
    pub fn spread(&self) -> f64 {
        (self.best - self.worst) / self.best
    }

    /// `94.8 (best 95.3, median 93.1, worst 90.2, spread 5.3%, 120 repetitions after 12 warmup)`,
    /// in units of `unit`.
    fn describe(&self, unit: f64) -> String {
        format!(
            "{:.1} (best {:.1}, median {:.1}, worst {:.1}, spread {:.1}%, {} repetitions after \
             {} warmup)",
            self.peak / unit,
            self.best / unit,
            self.median / unit,
            self.worst / unit,
            self.spread() * 100.0,
            self.reps,
            self.warmup
        )
    }
}

/// What `prof peak` measured.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The GEMM's FLOP/s (2 n³ per GEMM, all threads together).
    pub gemm: Figure,
    /// STREAM copy's bytes per second.
    pub copy: Figure,
    /// STREAM triad's bytes per second.
    pub triad: Figure,
    /// What was asked.
    pub options: Options,
    /// The side of the GEMM's matrices: `options.size`, or [`default_size`].
    pub size: usize,
    /// Whether every thread was pinned to a CPU of its own (for both kernels).
    pub pinned: bool,
    /// Elements of each STREAM array, per thread.
    pub stream_len: usize,
    /// The last-level cache, in bytes, when the system says.
    pub llc: Option<u64>,
    /// A GPU seen on this machine (`NVIDIA`, `AMD`), which was not measured.
    pub gpu: Option<&'static str>,
}

impl Measured {
    /// The `peak.json`: flops from the GEMM's peak, bytes from the better of copy's and triad's
    /// peaks.
    pub fn peak(&self) -> Peak {
        Peak {
            schema: PEAK_SCHEMA.into(),
            flops: Some(self.gemm.peak),
            bytes: Some(self.copy.peak.max(self.triad.peak)),
            source: "measured".into(),
            detail: self.detail(),
            host: profiler_format::json::host_name(),
        }
    }

    /// The kernels, sizes, dtype, threads, repetitions and spreads, in one paragraph.
    fn detail(&self) -> String {
        let o = &self.options;
        let (kernel, dtype) = match o.dtype {
            Dtype::F32 => (f32::KERNEL, f32::NAME),
            Dtype::F64 => (f64::KERNEL, f64::NAME),
        };
        let array_mib = (self.stream_len * 8 * o.threads) as f64 / (1 << 20) as f64;
        let llc = match self.llc {
            Some(llc) if (self.stream_len * 8 * o.threads) as u64 >= 4 * llc => {
                format!("at least 4x the last-level cache of {} MiB", llc >> 20)
            }
            Some(llc) => format!(
                "below 4x the last-level cache of {} MiB (--stream-mib to raise)",
                llc >> 20
            ),
            None => "last-level cache unknown".into(),
        };
        let gpu = match self.gpu {
            Some(vendor) => format!(
                " This machine has an {vendor} GPU, which was not measured: these are the \
                 CPU's figures; measure an NVIDIA GPU's with --device cuda, or give its peak \
                 with PROF_PEAK_FLOPS."
            ),
            None => String::new(),
        };
        let pinned = if self.pinned {
            "each pinned to a CPU of its own"
        } else {
            "not pinned to CPUs"
        };
        format!(
            "CPU, {threads}, {pinned}. FLOP/s: matrixmultiply {kernel} ({dtype}), C = A B on \
             {n}x{n} square matrices, one GEMM per thread on its own matrices, 2 n^3 FLOP each, \
             all threads started together at each repetition; each figure is the median of the \
             fastest tenth of the timed repetitions, GFLOP/s {gemm}. Bytes/s: STREAM copy \
             and triad (f64, 3 arrays of {array_mib:.1} MiB each, all threads together, \
             {llc}), bytes counted as STREAM does (copy 16, triad 24 per element), the better \
             of the two; copy GB/s {copy}; triad GB/s {triad}.{gpu}",
            threads = plural(o.threads, "thread"),
            n = self.size,
            gemm = self.gemm.describe(1e9),
            copy = self.copy.describe(1e9),
            triad = self.triad.describe(1e9),
        )
    }

    /// The table `prof peak` prints.
    pub fn table(&self) -> String {
        let kernel = match self.options.dtype {
            Dtype::F32 => "GEMM sgemm f32",
            Dtype::F64 => "GEMM dgemm f64",
        };
        let mut out = format!(
            "prof peak: this machine's CPU, {} ({}x{} GEMM per thread, STREAM over {:.1} MiB)\n\n",
            plural(self.options.threads, "thread"),
            self.size,
            self.size,
            // With one decimal, as `detail` gives each array: the arrays are rounded down to
            // whole elements per thread, so that a whole number read `--stream-mib 16` as 15.
            (self.stream_len * 8 * 3 * self.options.threads) as f64 / (1u64 << 20) as f64
        );
        out.push_str(&format!(
            "{:<15} {:>10} {:>10} {:>10} {:>10} {:>7} {:>6}  {}\n",
            "figure", "peak", "best", "median", "worst", "spread", "reps", "unit"
        ));
        for (name, figure, unit) in [
            (kernel, &self.gemm, "GFLOP/s"),
            ("STREAM copy", &self.copy, "GB/s"),
            ("STREAM triad", &self.triad, "GB/s"),
        ] {
            out.push_str(&format!(
                "{name:<15} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>6.1}% {:>6}  {unit}\n",
                figure.peak / 1e9,
                figure.best / 1e9,
                figure.median / 1e9,
                figure.worst / 1e9,
                figure.spread() * 100.0,
                figure.reps
            ));
        }
        let peak = self.peak();
        out.push_str(&format!(
            "\npeak: flops {:.1} GFLOP/s (the GEMM's), bytes {:.1} GB/s (the better of copy and \
             triad); a figure's peak is the median of its fastest tenth of repetitions\n",
            peak.flops.unwrap_or(0.0) / 1e9,
            peak.bytes.unwrap_or(0.0) / 1e9
        ));
        if let Some(vendor) = self.gpu {
            out.push_str(&format!(
                "note: this machine has an {vendor} GPU; prof peak measured the CPU, not the \
                 GPU: measure an NVIDIA GPU with --device cuda, or give its peak FLOP/s with \
                 PROF_PEAK_FLOPS\n"
            ));
        }
        out
    }
}

/// Measures the GEMM, then STREAM, with `options`.
pub fn measure(options: &Options) -> Result<Measured, String> {
    let available = available_memory();
    let caches = caches();
    let llc = caches.iter().map(|&(_, size)| size).max();
    let n = options.size.unwrap_or_else(|| {
        let l2 = caches.iter().filter(|&&(level, _)| level == 2);
        default_size(options.dtype, l2.map(|&(_, size)| size).max())
    });
    let gemm_bytes = 3 * n * n * dtype_bytes(options.dtype) * options.threads;
    if let Some(available) = available {
        if gemm_bytes as u64 > available / 2 {
            return Err(format!(
                "--size {n} on {} threads needs {} MiB of matrices, more than half the memory \
                 available ({} MiB)",
                options.threads,
                gemm_bytes >> 20,
                available >> 20
            ));
        }
    }
    let stream_bytes = stream_total(options.stream_mib, llc, available)?;
    // Each thread's arrays, whole elements.
    let stream_len = ((stream_bytes / 3 / 8) as usize / options.threads).max(1);
    let budget = Duration::from_secs_f64(options.seconds / 2.0);
    let (gemm, gemm_pinned) = match options.dtype {
        Dtype::F32 => time_gemm::<f32>(options.threads, n, budget)?,
        Dtype::F64 => time_gemm::<f64>(options.threads, n, budget)?,
    };
    let (copy, triad, stream_pinned) = time_stream(options.threads, stream_len, budget)?;
    Ok(Measured {
        gemm,
        copy,
        triad,
        options: options.clone(),
        size: n,
        pinned: gemm_pinned && stream_pinned,
        stream_len,
        llc,
        gpu: gpu(),
    })
}

/// The GEMM's default size: the largest multiple of 64 whose three matrices fill at most half
/// of one core's L2 cache (`l2` bytes; the other half for the kernel's packed panels), from 128
/// to 1024; 256 when the L2 is not known. A product that lives in L2 does not depend on the
/// shared last-level cache (on a VM, shared with other machines), and a short one fits in the
/// moments a shared machine leaves: on 2 MiB of L2 a core, 256 (f32) and 192 (f64), on 1 MiB
/// 192 and 128, a fraction of a millisecond a repetition.
pub fn default_size(dtype: Dtype, l2: Option<u64>) -> usize {
    let Some(l2) = l2 else { return 256 };
    let per_matrix = l2 / 2 / 3 / dtype_bytes(dtype) as u64;
    let side = (per_matrix as f64).sqrt() as usize;
    (side / 64 * 64).clamp(128, 1024)
}

fn dtype_bytes(dtype: Dtype) -> usize {
    match dtype {
        Dtype::F32 => 4,
        Dtype::F64 => 8,
    }
}

/// The STREAM arrays' total bytes: `--stream-mib` when given (at most half the available
/// memory), else 4x the last-level cache per array, within 256 MiB to 1 GiB in all and at most
/// a quarter of the available memory.
fn stream_total(
    asked: Option<u64>,
    llc: Option<u64>,
    available: Option<u64>,
) -> Result<u64, String> {
    const MIB: u64 = 1 << 20;
    match asked {
        Some(mib) => {
            let bytes = mib.saturating_mul(MIB);
            match available {
                Some(available) if bytes > available / 2 => Err(format!(
                    "--stream-mib {mib} is more than half the memory available ({} MiB)",
                    available / MIB
                )),
                _ => Ok(bytes),
            }
        }
        None => {
            let wanted = (3 * 4 * llc.unwrap_or(0)).clamp(256 * MIB, 1024 * MIB);
            Ok(match available {
                Some(available) => wanted.min(available / 4).max(MIB),
                None => wanted,
            })
        }
    }
}

/// The GEMM on every thread: each its own A, B and C, filled on the thread, C = A B per
/// repetition. Three entries of each thread's C are checked against the naive product after
/// every repetition, so that the FLOPs counted are those of a real product. The figure, and
/// whether the threads were pinned.
fn time_gemm<T: Element>(
    threads: usize,
    n: usize,
    budget: Duration,
) -> Result<(Figure, bool), String> {
    struct Matrices<T> {
        a: Vec<T>,
        b: Vec<T>,
        c: Vec<T>,
    }
    let wrong = std::sync::Mutex::new(None);
    let timed = timing::repeat(
        threads,
        1,
        budget,
        |thread| {
            let seed = 2 * thread as u64;
            let mut a = timing::try_filled(n * n, T::default(), "a matrix")?;
            gemm::fill(&mut a, seed);
            let mut b = timing::try_filled(n * n, T::default(), "a matrix")?;
            gemm::fill(&mut b, seed + 1);
            let c = timing::try_filled(n * n, T::default(), "a matrix")?;
            Ok(Matrices { a, b, c })
        },
        |m: &mut Matrices<T>, _| {
            T::multiply(n, n, n, &m.a, &m.b, &mut m.c);
            // The last repetition's product is checked; an entry on the diagonal and two
            // corners, cheap next to the product itself.
            for (i, j) in [(0, n - 1), (n / 2, n / 2), (n - 1, 0)] {
                let want = gemm::naive_entry(n, n, &m.a, &m.b, i, j);
                let got = m.c[i * n + j].to_f64();
                if !gemm::agrees::<T>(got, want, n) {
                    *wrong.lock().unwrap_or_else(|p| p.into_inner()) = Some((i, j, got, want));
                }
            }
        },
    )?;
    if let Some((i, j, got, want)) = wrong.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(format!(
            "the GEMM's product is wrong at ({i}, {j}): {got}, the naive product gives {want}; \
             no peak can be measured with it"
        ));
    }
    let flops = 2.0 * (n as f64).powi(3) * threads as f64;
    Ok((
        Figure::of(flops, &timed.times[0], timed.warmup),
        timed.pinned,
    ))
}

/// STREAM copy then triad, each repetition, each thread on its own arrays of `len` elements;
/// each thread checks its arrays after every triad. Copy's figure, triad's, and whether the
/// threads were pinned.
fn time_stream(
    threads: usize,
    len: usize,
    budget: Duration,
) -> Result<(Figure, Figure, bool), String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let wrong = AtomicBool::new(false);
    let timed = timing::repeat(
        threads,
        2,
        budget,
        |_| stream::Arrays::new(len).map(|arrays| (arrays, 0usize)),
        |(arrays, rounds): &mut (stream::Arrays, usize), phase| {
            if phase == 0 {
                arrays.copy();
            } else {
                arrays.triad();
                *rounds += 1;
                if !arrays.check(*rounds) {
                    wrong.store(true, Ordering::Relaxed);
                }
            }
        },
    )?;
    if wrong.into_inner() {
        return Err(
            "the STREAM arrays do not hold what the kernels compute; no bandwidth can \
                    be measured with them"
                .into(),
        );
    }
    let elements = (len * threads) as f64;
    Ok((
        Figure::of(
            stream::COPY_BYTES as f64 * elements,
            &timed.times[0],
            timed.warmup,
        ),
        Figure::of(
            stream::TRIAD_BYTES as f64 * elements,
            &timed.times[1],
            timed.warmup,
        ),
        timed.pinned,
    ))
}

/// `1 thread`, `2 threads`.
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// `MemAvailable` of `/proc/meminfo`, in bytes (Linux).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// CPU 0's data and unified caches, as (level, bytes) (Linux sysfs; none elsewhere).
fn caches() -> Vec<(u32, u64)> {
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let path = entry.ok()?.path();
        let kind = std::fs::read_to_string(path.join("type")).ok()?;
        if kind.trim() == "Instruction" {
            return None;
        }
        let level = std::fs::read_to_string(path.join("level")).ok()?;
        let level = level.trim().parse().ok()?;
        let size = std::fs::read_to_string(path.join("size")).ok()?;
        let size = size.trim();
        let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit())?);
        let scale = match unit {
            "K" => 1 << 10,
            "M" => 1 << 20,
            "G" => 1 << 30,
            _ => return None,
        };
        Some((level, digits.parse::<u64>().ok()? * scale))
    })
    .collect()
}

/// The vendor of a GPU this machine has, from its driver's device files.
fn gpu() -> Option<&'static str> {
    let nvidia = std::fs::read_dir("/proc/driver/nvidia/gpus")
        .is_ok_and(|mut d| d.next().is_some())
        || std::path::Path::new("/dev/nvidia0").exists();
    if nvidia {
        return Some("NVIDIA");
    }
    std::path::Path::new("/dev/kfd").exists().then_some("AMD")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_the_best_median_and_worst_rate() {
        let ms = |v: u64| Duration::from_millis(v);
        let f = Figure::of(1.0, &[ms(500), ms(250), ms(1000)], 1);
        assert_eq!((f.best, f.median, f.worst, f.reps), (4.0, 2.0, 1.0, 3));
        assert_eq!(f.spread(), 0.75);
        // Under ten repetitions, the fastest tenth is the best one.
        assert_eq!(f.peak, 4.0);
    }

    #[test]
    fn the_peak_is_the_median_of_the_fastest_tenth() {
        // Rates 1 to 25 per second: the fastest tenth is 23, 24 and 25 (25 / 10, rounded up).
        let times: Vec<Duration> = (1..=25).map(|r| Duration::from_secs(1) / r).collect();
        let f = Figure::of(1.0, &times, 0);
        assert!((f.peak - 24.0).abs() < 1e-6, "{f:?}");
        assert!((f.best - 25.0).abs() < 1e-6, "{f:?}");
        // Twenty: the fastest two, 19 and 20.
        let f = Figure::of(1.0, &times[..20], 0);
        assert!((f.peak - 19.5).abs() < 1e-6, "{f:?}");
        // Never above the best: the peak is a rate some repetitions reached.
        assert!(f.peak <= f.best);
    }

    #[test]
    fn the_default_size_fits_half_the_l2() {
        const MIB: u64 = 1 << 20;
        // 2 MiB of L2: 3 x 256² x 4 bytes = 768 KiB; 320 would be 1.2 MiB, over half.
        assert_eq!(default_size(Dtype::F32, Some(2 * MIB)), 256);
        assert_eq!(default_size(Dtype::F64, Some(2 * MIB)), 192);
        assert_eq!(default_size(Dtype::F32, Some(MIB)), 192);
        assert_eq!(default_size(Dtype::F64, Some(256 << 10)), 128);
        assert_eq!(default_size(Dtype::F32, Some(64 * MIB)), 1024);
        assert_eq!(default_size(Dtype::F64, None), 256);
        for (dtype, l2) in [
            (Dtype::F32, 2 * MIB),
            (Dtype::F64, 2 * MIB),
            (Dtype::F32, MIB),
        ] {
            let n = default_size(dtype, Some(l2)) as u64;
            assert!(3 * n * n * dtype_bytes(dtype) as u64 <= l2 / 2);
        }
    }

    #[test]
    fn the_stream_arrays_fit_the_cache_and_the_memory() {
        const MIB: u64 = 1 << 20;
        // 4x a 480 MiB cache per array: capped at 1 GiB in all.
        assert_eq!(stream_total(None, Some(480 * MIB), None), Ok(1024 * MIB));
        assert_eq!(stream_total(None, Some(8 * MIB), None), Ok(256 * MIB));
        assert_eq!(
            stream_total(None, Some(32 * MIB), Some(1024 * MIB)),
            Ok(256 * MIB)
        );
        assert_eq!(stream_total(None, None, Some(400 * MIB)), Ok(100 * MIB));
        assert_eq!(stream_total(Some(64), None, Some(1024 * MIB)), Ok(64 * MIB));
        assert!(stream_total(Some(1024), None, Some(1024 * MIB))
            .unwrap_err()
            .contains("half the memory"));
    }

    #[test]
    fn a_short_measurement_gives_positive_figures() {
        let options = Options {
            threads: 2,
            seconds: 0.0,
            dtype: Dtype::F32,
            size: Some(64),
            stream_mib: Some(1),
        };
        let m = measure(&options).unwrap();
        let peak = m.peak();
        assert!(peak.flops.unwrap() > 0.0 && peak.bytes.unwrap() > 0.0);
        assert_eq!(m.gemm.reps, timing::MIN_REPS);
        assert!(peak.detail.contains("sgemm") && peak.detail.contains("64x64"));
        // The table gives the STREAM size asked for (1 MiB, its arrays rounded down to whole
        // elements per thread), not "0 MiB".
        assert!(m.table().contains("STREAM over 1.0 MiB"), "{}", m.table());
    }
}
