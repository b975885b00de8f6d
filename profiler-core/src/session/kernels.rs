//! Kernel attribution (`PROF_KERNELS=1`), after onnxruntime's per-operator gatherer and Kineto's
//! launch-to-kernel flows.
//!
//! While an event is measured, the device tags the launches made on the measuring thread with
//! an external id naming (event, iteration) ([`kernel_tag`](crate::measure::kernel_tag)). The device's activity records then give
//! each kernel a correlation id, and each tagged launch a (correlation id, external id) pair;
//! joining the two attributes the kernel to the run whose range contains its launch. This runs
//! at `step()` and at the end, never on the hot path.

use std::collections::{BTreeMap, HashMap};

use crate::instrument::device::{Correlation, KernelActivity};
use profiler_format::{Kernel, Kernels, Stats};

/// The (event, iteration) of a tag made by [`kernel_tag`](crate::measure::kernel_tag).
fn untag(tag: u64) -> Option<(u32, u32)> {
    let high = tag >> 32;
    (high != 0).then(|| ((high - 1) as u32, tag as u32))
}

/// Kernels of one run (or of the runs of a merged event in one iteration).
#[derive(Clone, Copy, Debug, Default)]
struct RunKernels {
    sum: u64,
    first_start: u64,
    last_end: u64,
}

type KernelKey = (String, u32, u64, [u32; 3], [u32; 3]);

/// Correlations kept waiting for their kernel before the oldest are let go. CUPTI correlates
/// every API call made inside a tagged run, not only launches (the profiler's own event records
/// and memory readings among them): those never meet a kernel, and kept for ever they grow
/// without bound in a long run. Past this many, those of all but the last [`KEEP_BATCHES`]
/// batches (a batch is one `step()`) go: a bound on size, not on age, so that a GPU far behind
/// its CPU (a loop of few launches and no synchronization) keeps its kernels' correlations.
const MAX_WAITING: usize = if cfg!(test) { 10_000 } else { 1 << 20 };

/// The batches whose correlations stay when [`MAX_WAITING`] is passed.
const KEEP_BATCHES: u64 = 64;

#[derive(Clone, Copy, Debug, Default)]
struct Durations {
    count: u64,
    total: u64,
    min: u64,
    max: u64,
}

/// What the activity records have told so far.
#[derive(Debug, Default)]
pub(crate) struct Attribution {
    /// Tagged calls whose kernel has not been seen yet: correlation -> (tag, the batch it came
    /// in).
    launches: HashMap<u32, (u64, u64)>,
    /// Batches absorbed so far.
    batches: u64,
    /// Kernels seen before their launch's correlation record; retried once.
    waiting: Vec<KernelActivity>,
    runs: HashMap<(u32, u32), RunKernels>,
    per_event: HashMap<u32, BTreeMap<KernelKey, Durations>>,
    /// Kernels that belong to no measured run (launched outside one).
    pub unattributed: u64,
}

impl Attribution {
    /// Takes in a batch of records. `last`: no more records will come, so kernels still
    /// unmatched are counted as unattributed.
    pub fn absorb(
        &mut self,
        kernels: Vec<KernelActivity>,
        correlations: Vec<Correlation>,
        last: bool,
    ) {
        self.batches += 1;
        for c in correlations {
            self.launches
                .insert(c.correlation, (c.external, self.batches));
        }
        let retry = std::mem::take(&mut self.waiting);
        for (k, retried) in retry
            .into_iter()
            .map(|k| (k, true))
            .chain(kernels.into_iter().map(|k| (k, false)))
        {
            match self
                .launches
                .remove(&k.correlation)
                .and_then(|(tag, _)| untag(tag))
            {
                Some(run) => self.add(run, k),
                None if retried || last => self.unattributed += 1,
                None => self.waiting.push(k),
            }
        }
        if last {
            self.unattributed += self.waiting.len() as u64;
            self.waiting.clear();
            self.launches.clear();
        } else if self.launches.len() > MAX_WAITING {
            let oldest = self.batches.saturating_sub(KEEP_BATCHES);
            self.launches.retain(|_, &mut (_, batch)| batch > oldest);
        }
    }

    fn add(&mut self, (event, iter): (u32, u32), k: KernelActivity) {
        let duration = k.end_ns.saturating_sub(k.start_ns);
        let run = self.runs.entry((event, iter)).or_insert(RunKernels {
            sum: 0,
            first_start: u64::MAX,
            last_end: 0,
        });
        run.sum += duration;
        run.first_start = run.first_start.min(k.start_ns);
        run.last_end = run.last_end.max(k.end_ns);
        let d = self
            .per_event
            .entry(event)
            .or_default()
            .entry((k.name, k.device, k.stream, k.grid, k.block))
            .or_insert(Durations {
                min: u64::MAX,
                ..Durations::default()
            });
        d.count += 1;
        d.total += duration;
        d.min = d.min.min(duration);
        d.max = d.max.max(duration);
    }

    /// Forgets the per-run records of iterations before `iter` (`continuous` mode: their
    /// samples are no longer shown). The per-kernel totals stay.
    pub fn forget_before(&mut self, iter: u32) {
        self.runs.retain(|&(_, i), _| i >= iter);
    }

    /// The kernels of `event`, with per-sample sums and projections for the samples taken in
    /// `iters` (0 where a sample launched no kernel that was seen). `None` when no kernel was
    /// attributed to the event.
    pub fn of(&self, event: u32, iters: &[u32]) -> Option<Kernels> {
        let per_kernel = self.per_event.get(&event)?;
        let run = |iter: &u32| self.runs.get(&(event, *iter)).copied();
        let sum_ns: Vec<u64> = iters.iter().map(|i| run(i).map_or(0, |r| r.sum)).collect();
        let projection_ns: Vec<u64> = iters
            .iter()
            .map(|i| run(i).map_or(0, |r| r.last_end.saturating_sub(r.first_start)))
            .collect();
        let mut list: Vec<Kernel> = per_kernel
            .iter()
            .map(|((name, device, stream, grid, block), d)| Kernel {
                name: name.clone(),
                device: *device,
                stream: *stream,
                grid: *grid,
                block: *block,
                count: d.count,
                total_ns: d.total,
                mean_ns: d.total / d.count.max(1),
                min_ns: d.min,
                max_ns: d.max,
            })
            .collect();
        list.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
        Some(Kernels {
            sum_stats: Stats::of(&sum_ns),
            projection_stats: Stats::of(&projection_ns),
            sum_ns,
            projection_ns,
            list,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(correlation: u32, name: &str, start: u64, end: u64) -> KernelActivity {
        KernelActivity {
            correlation,
            name: name.into(),
            start_ns: start,
            end_ns: end,
            device: 0,
            stream: 7,
            grid: [4, 1, 1],
            block: [128, 1, 1],
        }
    }

    /// Correlations of calls that launch nothing (CUPTI correlates every API call inside a
    /// tagged run) are let go past [`MAX_WAITING`], but those of the last [`KEEP_BATCHES`]
    /// batches: before, they were kept for the whole run. A launch whose kernel comes a few
    /// batches later is still joined; below the bound, however late.
    #[test]
    fn correlations_without_a_kernel_are_not_kept_for_ever() {
        let mut a = Attribution::default();
        let tag = crate::measure::kernel_tag(3, 10);
        let mut id = 0u32;
        for batch in 0..10 * KEEP_BATCHES {
            let calls: Vec<Correlation> = (0..100)
                .map(|_| {
                    id += 1;
                    Correlation {
                        correlation: id,
                        external: tag,
                    }
                })
                .collect();
            let late = (batch >= 3).then(|| kernel(id - 300, "gemm", 100, 200));
            a.absorb(late.into_iter().collect(), calls, false);
            assert!(
                a.launches.len() <= MAX_WAITING + 100,
                "{}",
                a.launches.len()
            );
        }
        let k = a.of(3, &[10]).unwrap();
        assert_eq!(
            k.list[0].count,
            10 * KEEP_BATCHES - 3,
            "each late kernel joined"
        );
        assert_eq!(a.unattributed, 0);
        a.absorb(vec![], vec![], true);
        assert!(a.launches.is_empty());
    }

    /// Below the bound, a kernel whose record comes hundreds of steps after its launch (a GPU
    /// far behind its CPU) is still joined to its run.
    #[test]
    fn a_kernel_long_after_its_launch_is_joined() {
        let mut a = Attribution::default();
        let corr = Correlation {
            correlation: 7,
            external: crate::measure::kernel_tag(3, 10),
        };
        a.absorb(vec![], vec![corr], false);
        for _ in 0..500 {
            a.absorb(vec![], vec![], false);
        }
        a.absorb(vec![kernel(7, "gemm", 100, 300)], vec![], true);
        assert_eq!(a.of(3, &[10]).unwrap().sum_ns, vec![200]);
        assert_eq!(a.unattributed, 0);
    }

    #[test]
    fn joins_kernels_to_runs_by_correlation() {
        let mut a = Attribution::default();
        let corr = |correlation, event, iter| Correlation {
            correlation,
            external: crate::measure::kernel_tag(event, iter),
        };
        // Event 3 in iteration 10 launched kernels 1 and 2 (overlapping, then a gap); event 5 in
        // iteration 11 launched kernel 3; kernel 4 was launched outside any measured run.
        a.absorb(
            vec![kernel(1, "gemm", 100, 300), kernel(4, "other", 0, 10)],
            vec![corr(1, 3, 10), corr(2, 3, 10)],
            false,
        );
        // Kernel 2 arrives in a later batch; kernel 3 before its correlation record.
        a.absorb(
            vec![kernel(2, "relu", 250, 400), kernel(3, "gemm", 1000, 1100)],
            vec![],
            false,
        );
        a.absorb(vec![], vec![corr(3, 5, 11)], true);
        let k = a.of(3, &[9, 10]).unwrap();
        assert_eq!(k.sum_ns, vec![0, 200 + 150]);
        assert_eq!(k.projection_ns, vec![0, 300]);
        assert_eq!(k.list.len(), 2);
        assert_eq!(k.list[0].name, "gemm");
        assert_eq!((k.list[0].grid, k.list[0].block), ([4, 1, 1], [128, 1, 1]));
        let k5 = a.of(5, &[11]).unwrap();
        assert_eq!(k5.sum_ns, vec![100]);
        assert_eq!(a.unattributed, 1);
        assert!(a.of(4, &[0]).is_none());
    }
}
