//! Probes whose names are known only at run time (`layers.3.attn`), and the registration that
//! runtime probes and `tracing` spans share.
//!
//! A registration leaks one descriptor (and its strings) for the life of the process, as the
//! annotations' statics live for it; the same (kind, module, name, layer, phase) registered again
//! returns the same descriptor, so a wrapper built on every call leaks nothing more. A probe
//! registered while a session runs joins it if `PROF_FILTER` selects it: during warmup it is
//! learned with the others, after warmup it is scheduled after them (as a probe first seen late).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::probes::timer::ProbeGuard;
use crate::register::descriptor::{Descriptor, Kind, StaticInfo};

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
#[derive(Clone, Copy, Debug)]
pub struct RuntimeProbe {
    desc: &'static Descriptor,
}

impl RuntimeProbe {
    /// Registers (or finds) the probe `name`, with an optional `layer` and `phase`.
    pub fn new(name: &str, layer: Option<&str>, phase: Option<&str>) -> RuntimeProbe {
        RuntimeProbe {
            desc: register(Site {
                kind: Kind::Runtime,
                module: "runtime",
                name,
                layer,
                phase,
                file: "<runtime>",
                line: 0,
            }),
        }
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
}

type SiteKey = (&'static str, String, String, Option<String>, Option<String>);

/// Registers `site` (or returns its descriptor if it is registered already).
pub(crate) fn register(site: Site<'_>) -> &'static Descriptor {
    static INTERNED: OnceLock<Mutex<HashMap<SiteKey, &'static Descriptor>>> = OnceLock::new();
    // Keyed by the names as given: two names that differ only in characters a filter cannot
    // hold (`a b`, `a_b`) are two probes, and the registry gives the second id a `.2`.
    let key: SiteKey = (
        site.kind.as_str(),
        site.module.to_owned(),
        site.name.to_owned(),
        site.layer.map(str::to_owned),
        site.phase.map(str::to_owned),
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
        work: 0,
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
