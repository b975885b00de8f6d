//! Probes whose names are known only at run time (`layers.3.attn`), and the registration that
//! runtime probes and `tracing` spans share.
//!
//! A registration leaks one descriptor (and its strings) for the life of the process, as the
//! annotations' statics live for it; the same (kind, module, name, layer, phase, work keys)
//! registered again returns the same descriptor, so a wrapper built on every call leaks nothing
//! more. A probe
//! registered while a session runs joins it if `PROF_FILTER` selects it: during warmup it is
//! learned with the others, after warmup it is scheduled after them (as a probe first seen late).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::probes::timer::{self, Count, ProbeGuard, Work};
use crate::register::descriptor::{
    Descriptor, Kind, StaticInfo, WORK_BYTES, WORK_FLOPS, WORK_SHAPE,
};
pub use crate::register::work::WorkKeys;

/// A probe whose name is known only at run time: a layer in a list (`layers.0`, `layers.1`,
/// ...), a module found by walking a model. It is listed by [`probes`](crate::probes) (kind
/// `runtime`, id = its name) and selected by `PROF_FILTER` like an annotation, and measured with
/// the same schedule. Register it before or during warmup; later it is scheduled after the
/// others. Cheap to copy: keep it beside the code it times.
///
/// ```no_run
/// let probes: Vec<profiler_core::RuntimeProbe> = (0..4)
///     .map(|i| profiler_core::RuntimeProbe::new(&format!("layers.{i}"), Some("block"), Some("fwd")))
///     .collect();
/// for probe in &probes {
///     let _p = probe.enter(); // measures until the end of this scope
///     // ... the layer's forward pass
/// }
/// ```
///
/// Characters a `PROF_FILTER` value cannot hold (anything but `[A-Za-z0-9_.:/-]`) become `_`, so
/// that every listed name can be typed into a filter. Two names that become the same (`a b`
/// and `a_b`) stay two probes: the second's id ends in `.2` (as for any two probes with the
/// same id), so each can be selected on its own.
///
/// At most `PROF_MAX_PROBES` probes (default 4096) take part in a run, those registered while
/// it runs included; the ones past it cost one atomic load and a branch, and a warning names
/// the first of them.
///
/// A probe that counts its work (the `flops` and `bytes` keys of `#[profiled]`) is registered
/// with [`with_work`](RuntimeProbe::with_work) and entered with
/// [`enter_work`](RuntimeProbe::enter_work) or [`measure_work`](RuntimeProbe::measure_work).
#[derive(Clone, Copy)]
pub struct RuntimeProbe {
    pub(crate) desc: &'static Descriptor,
}

/// Short: the probe's name, layer and phase (`RuntimeProbe { name: "conv1", layer: Some("conv"),
/// phase: None }`), never the descriptor behind it, so that a model holding a probe per
/// instance (in a field its framework skips) prints readably.
impl std::fmt::Debug for RuntimeProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let info = &self.desc.info;
        f.debug_struct("RuntimeProbe")
            .field("name", &info.name)
            .field("layer", &info.layer)
            .field("phase", &info.phase)
            .finish()
    }
}

impl RuntimeProbe {
    /// Registers (or finds) the probe `name`, with an optional `layer` and `phase`.
    pub fn new(name: &str, layer: Option<&str>, phase: Option<&str>) -> RuntimeProbe {
        RuntimeProbe::with_work(name, layer, phase, WorkKeys::NONE)
    }

    /// Registers (or finds) the probe `name`, with an optional `layer` and `phase`, that counts
    /// the work `keys` names: each run's counts come from [`enter_work`](Self::enter_work) or
    /// [`measure_work`](Self::measure_work).
    ///
    /// The keys are part of the probe's identity: `new("gemm", ..)` and
    /// `with_work("gemm", .., WorkKeys::FLOPS)` are two probes (the second's id ends in `.2`).
    ///
    /// ```no_run
    /// use profiler_core::{RuntimeProbe, WorkKeys};
    ///
    /// let (m, n, k) = (64usize, 256usize, 128usize);
    /// let gemm = RuntimeProbe::with_work("layers.0.gemm", Some("block"), Some("fwd"), WorkKeys::BOTH);
    /// let c = gemm.measure_work(
    ///     || (2 * m * n * k, 4 * (m * k + k * n + m * n)), // FLOPs, bytes: only when armed
    ///     || vec![0f32; m * n],                            // the product
    /// );
    /// # drop(c);
    /// ```
    pub fn with_work(
        name: &str,
        layer: Option<&str>,
        phase: Option<&str>,
        keys: WorkKeys,
    ) -> RuntimeProbe {
        RuntimeProbe {
            desc: register(Site {
                kind: Kind::Runtime,
                module: "runtime",
                name,
                layer,
                phase,
                file: "<runtime>",
                line: 0,
                work: keys.bits(),
            }),
        }
    }

    /// The work this probe counts (as registered).
    pub fn work_keys(&self) -> WorkKeys {
        WorkKeys {
            flops: self.desc.info.work & WORK_FLOPS != 0,
            bytes: self.desc.info.work & WORK_BYTES != 0,
            shape: self.desc.info.work & WORK_SHAPE != 0,
        }
    }

    /// [`enter`](Self::enter) for a probe that counts its work: `work` gives this run's
    /// (FLOPs, bytes), any primitive integers or floats (as the `flops` and `bytes` keys take),
    /// and is called only when this probe's event is armed in this iteration (`sample` mode
    /// after warmup), before the start mark: unarmed, this costs what `enter` costs, one load
    /// and a branch. A count for a key the probe was not registered with is dropped.
    /// [`enter`](Self::enter) and [`measure`](Self::measure) on such a probe count 0.
    ///
    /// ```no_run
    /// use profiler_core::{RuntimeProbe, WorkKeys};
    ///
    /// let copy = RuntimeProbe::with_work("copy", Some("io"), None, WorkKeys::BYTES);
    /// let src = vec![1u8; 1 << 20];
    /// let _p = copy.enter_work(|| (0, 2 * src.len())); // read and written; no FLOPs
    /// let dst = src.clone();
    /// # drop(dst);
    /// ```
    #[inline]
    pub fn enter_work<F: Count, B: Count>(&self, work: impl FnOnce() -> (F, B)) -> ProbeGuard {
        self.enter_with(|| {
            let (flops, bytes) = work();
            counted(flops.count(), bytes.count())
        })
    }

    /// The entry of a probe with keys: one load and a branch unarmed; `work` called only when
    /// this probe's event is armed.
    #[inline(always)]
    fn enter_with(&self, work: impl FnOnce() -> Work) -> ProbeGuard {
        match timer::active(self.desc) {
            None => ProbeGuard::inert(),
            Some(state) => {
                let work = if timer::is_armed(state) {
                    work()
                } else {
                    Work::NONE
                };
                timer::enter_work(self.desc, state, &work)
            }
        }
    }

    /// [`enter_work`](Self::enter_work) for a probe that keeps its runs' input shapes too
    /// (registered with `shape: true` in its [`WorkKeys`]): `work` gives (FLOPs, bytes, shape),
    /// the shape anything the `shape` key takes ([`Shape`](crate::Shape): integers, slices,
    /// arrays, `Vec`s and tuples of them), called only when armed, as for `enter_work`. The
    /// reports split the probe's events by shape.
    ///
    /// ```no_run
    /// use profiler_core::{RuntimeProbe, WorkKeys};
    ///
    /// let matmul = RuntimeProbe::with_work("layers.0.matmul", Some("block"), None, WorkKeys::ALL);
    /// let (m, n, k) = (32usize, 64usize, 16usize);
    /// let _p = matmul.enter_shaped(|| (2 * m * n * k, 4 * (m * k + k * n + m * n), ([m, k], [k, n])));
    /// ```
    #[inline]
    pub fn enter_shaped<F: Count, B: Count, S: crate::Shape>(
        &self,
        work: impl FnOnce() -> (F, B, S),
    ) -> ProbeGuard {
        self.enter_with(|| {
            let (flops, bytes, shape) = work();
            Work {
                shape: timer::shape_of(&shape),
                ..counted(flops.count(), bytes.count())
            }
        })
    }

    /// Measures one call of `f`, counting the work `work` gives (see
    /// [`enter_work`](Self::enter_work)).
    ///
    /// ```no_run
    /// use profiler_core::{RuntimeProbe, WorkKeys};
    ///
    /// let dot = RuntimeProbe::with_work("dot", None, None, WorkKeys::BOTH);
    /// let (a, b) = (vec![1.0f64; 4096], vec![2.0f64; 4096]);
    /// let d: f64 = dot.measure_work(|| (2 * a.len(), 16 * a.len()), || a.iter().zip(&b).map(|(x, y)| x * y).sum());
    /// # drop(d);
    /// ```
    #[inline]
    pub fn measure_work<T, F: Count, B: Count>(
        &self,
        work: impl FnOnce() -> (F, B),
        f: impl FnOnce() -> T,
    ) -> T {
        let _guard = self.enter_work(work);
        f()
    }

    /// Starts a measurement that lasts until the guard is dropped (when this probe is armed;
    /// otherwise the guard is inert and this cost one load and a branch).
    #[inline]
    pub fn enter(&self) -> ProbeGuard {
        crate::probes::timer::enter(self.desc)
    }

    /// Measures one call of `f`.
    #[inline]
    pub fn measure<T>(&self, f: impl FnOnce() -> T) -> T {
        let _guard = self.enter();
        f()
    }

    /// The probe's name as registered (after the character substitution).
    pub fn name(&self) -> &'static str {
        self.desc.info.name
    }
}

/// What identifies a probe registered at run time.
pub(crate) struct Site<'a> {
    pub kind: Kind,
    pub module: &'a str,
    pub name: &'a str,
    pub layer: Option<&'a str>,
    pub phase: Option<&'a str>,
    pub file: &'a str,
    pub line: u32,
    /// [`StaticInfo::work`]: which work its runs count.
    pub work: u8,
}

/// A run's work as `prof.json` keeps it: these counts, and [`Work::NONE`]'s "not given" for
/// the rest (a runtime probe or a span has no `shape` key).
#[inline(always)]
pub(crate) fn counted(flops: u64, bytes: u64) -> Work {
    Work {
        flops,
        bytes,
        ..Work::NONE
    }
}

type SiteKey = (
    &'static str,
    String,
    String,
    Option<String>,
    Option<String>,
    u8,
);

/// Registers `site` (or returns its descriptor if it is registered already).
pub(crate) fn register(site: Site<'_>) -> &'static Descriptor {
    static INTERNED: OnceLock<Mutex<HashMap<SiteKey, &'static Descriptor>>> = OnceLock::new();
    // Keyed by the names as given: two names that differ only in characters a filter cannot
    // hold (`a b`, `a_b`) are two probes, and the registry gives the second id a `.2`. The work
    // keys are part of the key: the plan reserves work storage by the descriptor's bits, so a
    // probe that counts and one that does not cannot share one.
    let key: SiteKey = (
        site.kind.as_str(),
        site.module.to_owned(),
        site.name.to_owned(),
        site.layer.map(str::to_owned),
        site.phase.map(str::to_owned),
        site.work,
    );
    let mut interned = crate::sync::lock(INTERNED.get_or_init(Default::default));
    if let Some(desc) = interned.get(&key) {
        return desc;
    }
    let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
    let desc: &'static Descriptor = Box::leak(Box::new(Descriptor::new(StaticInfo {
        name: leak(&clean(site.name)),
        layer: site.layer.map(|l| leak(&clean(l))),
        phase: site.phase.map(|p| leak(&clean(p))),
        kind: site.kind,
        module: leak(&clean(site.module)),
        file: leak(site.file),
        line: site.line,
        work: site.work,
        anchor: no_anchor,
    })));
    interned.insert(key, desc);
    drop(interned);
    let index = crate::register::registry::registry().add(desc);
    if let Some(session) = crate::session::current() {
        session.adopt(index);
    }
    desc
}

fn no_anchor() -> &'static str {
    ""
}

/// `text` with every character a filter value cannot hold replaced by `_` (never empty).
fn clean(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    }
}
