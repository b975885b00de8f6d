//! The `tracing` bridge (feature `tracing`): every span of code instrumented with `tracing`
//! (candle, candle-transformers, your own) becomes a probe, with the schedule of the
//! annotations: learned in warmup, one event measured per iteration, occurrences, trace mode.
//!
//! [`TracingBridge`] is a `tracing` subscriber of its own rather than a layer over
//! `tracing-subscriber`'s registry: it keeps no per-span data (a span's id is its probe's
//! descriptor) except for the spans that count work (below), so a selected span that is not
//! armed costs a few loads and branches, where the registry alone allocates a slot per span. The price: it does not compose with other layers
//! (install it for profiling runs; keep your `fmt` subscriber for the others).
//!
//! Which spans: a span's probe has kind `span`, name = the span's name, module = its target,
//! file and line from its metadata, and layer and phase from the span's fields named `layer` and
//! `phase` (strings), so `PROF_FILTER='kind=span&layer=mlp'` works as for annotations. A span
//! the filter cannot select (judged by name, target, file and kind when it has no `layer` or
//! `phase` field) gets `Interest::never`: it costs what tracing costs with no subscriber. Events
//! (`tracing::info!` and the like) are never enabled.
//!
//! Work: a span whose callsite has fields named `flops` and/or `bytes` counts that work, as the
//! keys of `#[profiled]` do (its descriptor gets the work bits from the field names, so the plan
//! reserves work storage for its events; the bits are part of the probe's identity). Such a span
//! is the one kind that has data of its own: its values, from `new_span` and from any `record`
//! before an entry, live in a reference-counted [`Counted`] that its id points to (tagged by the
//! id's low bit), allocated by `new_span` and freed when its last handle closes. Entering it
//! reads them only when its event is armed. Numeric fields named `shape` or `shape.<anything>`
//! (`shape.m = m, shape.k = k`) give the run's input shape the same way (the `shape` key of
//! `#[profiled]`): one list of dimensions in the fields' order, at most 8 (`32x512x1024`).
//! Spans without those fields keep id = descriptor and
//! no per-span data; what they pay more is one test of the id's low bit at entry and one of the
//! descriptor's work bits at creation.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::{Interest, Subscriber};
use tracing_core::{Event, Metadata};

use crate::probes::runtime::{counted, register, Site};
use crate::probes::timer::{self, Count, ProbeGuard, Work};
use crate::register::descriptor::{Descriptor, Kind, WORK_BYTES, WORK_FLOPS, WORK_SHAPE};
use profiler_format::filter::Key;

/// A `tracing` subscriber that turns spans into probes. Install it once, after the profiler has
/// started (`#[profiler_core::main]` or `init()`), so that it knows `PROF_FILTER`:
///
/// ```no_run
/// # #[cfg(feature = "tracing")]
/// tracing::subscriber::set_global_default(profiler_core::TracingBridge::new())
///     .expect("no other subscriber is installed");
/// ```
///
/// A span's fields named `layer` and `phase` (strings) give its probe's layer and phase; fields
/// named `flops` and `bytes` (numbers: integers or floats, counted as the keys of
/// [`#[profiled]`](crate::profiled) count them) give the work of each run, as those keys do.
/// Their values are read when the span is entered, so a span made once can record new ones
/// before each entry (a field never given a number counts 0):
///
/// ```no_run
/// let (m, n, k) = (64u64, 256u64, 128u64);
/// let span = tracing::trace_span!(
///     "matmul",
///     layer = "mlp",
///     flops = 2 * m * n * k,
///     bytes = tracing::field::Empty, // recorded below
/// );
/// span.record("bytes", 4 * (m * k + k * n + m * n));
/// let _entered = span.enter(); // one run, with its FLOPs and bytes when armed
/// ```
#[derive(Debug, Default)]
pub struct TracingBridge {
    /// Per callsite (its metadata's address): the probe of a span without `layer`/`phase`
    /// fields, or `None` for one whose probe depends on those fields' values.
    callsites: Mutex<HashMap<usize, Option<&'static Descriptor>>>,
}

impl TracingBridge {
    /// A bridge; see the type's docs.
    pub fn new() -> TracingBridge {
        TracingBridge::default()
    }
}

/// Slots of the per-thread callsite cache (direct-mapped; a miss goes to the shared map).
const CACHE_SLOTS: usize = 64;

type CacheSlot = (usize, Option<&'static Descriptor>);

/// A slot of the per-thread cache of spans decided by their values: (callsite, hash), probe.
type ValuedSlot = ((usize, u64), Option<&'static Descriptor>);

thread_local! {
    /// Per thread: callsites seen (as in `TracingBridge::callsites`), without the lock or a
    /// hash map: the slot is a multiplicative hash of the metadata's address.
    static CALLSITES: RefCell<[CacheSlot; CACHE_SLOTS]> =
        const { RefCell::new([(0, None); CACHE_SLOTS]) };
    /// Per thread: the probes of spans whose `layer`/`phase` fields decide them, by
    /// (callsite, hash of the values).
    static VALUED: RefCell<[ValuedSlot; CACHE_SLOTS]> =
        const { RefCell::new([((0, 0), None); CACHE_SLOTS]) };
    /// The spans entered on this thread that are being measured (or learned, or published as
    /// open events while CPU sampling is on), innermost last.
    static OPEN: RefCell<Vec<(u64, ProbeGuard)>> = const { RefCell::new(Vec::new()) };
}

fn has_keys(meta: &Metadata<'_>) -> bool {
    meta.fields().field("layer").is_some() || meta.fields().field("phase").is_some()
}

/// The work bits of a callsite: from its fields named `flops`, `bytes` and `shape` (or
/// `shape.<anything>`).
fn work_bits(meta: &Metadata<'_>) -> u8 {
    let has = |name| meta.fields().field(name).is_some();
    let shape = meta.fields().iter().any(|f| is_shape(f.name()));
    (if has("flops") { WORK_FLOPS } else { 0 })
        | (if has("bytes") { WORK_BYTES } else { 0 })
        | (if shape { WORK_SHAPE } else { 0 })
}

/// Whether a field gives a dimension of the span's shape: `shape`, or `shape.<anything>`.
fn is_shape(name: &str) -> bool {
    name == "shape" || name.starts_with("shape.")
}

fn site<'a>(meta: &'a Metadata<'a>, layer: Option<&'a str>, phase: Option<&'a str>) -> Site<'a> {
    Site {
        kind: Kind::Span,
        module: meta.target(),
        name: meta.name(),
        layer,
        phase,
        file: meta.file().unwrap_or("<unknown>"),
        line: meta.line().unwrap_or(0),
        work: work_bits(meta),
    }
}

/// The low bit of a span id that points to a [`Counted`] rather than to a descriptor (both are
/// at least 8-byte aligned, so the bit is free in either).
const COUNTED: u64 = 1;

const _: () = assert!(std::mem::align_of::<Descriptor>() > 1);
const _: () = assert!(std::mem::align_of::<Counted>() > 1);

/// A span that counts its work: its probe and the values of its `flops` and `bytes` fields
/// (0 for one not given), shared by its handles (`clone_span`) and freed by the last
/// `try_close`. Atomic: a span may be recorded on one thread and entered on another.
#[derive(Debug)]
struct Counted {
    desc: &'static Descriptor,
    flops: AtomicU64,
    bytes: AtomicU64,
    /// The callsite's fields, to place a shape field among the others.
    fields: &'static tracing_core::field::FieldSet,
    /// The values of its shape fields, in their order (at most [`SHAPE_FIELDS`]).
    dims: [AtomicU64; SHAPE_FIELDS],
    /// How many shape fields the callsite has (0: none).
    shape_fields: u8,
}

/// The most shape fields of a span that are kept (the `shape` key keeps 8 numbers).
const SHAPE_FIELDS: usize = 8;

impl Counted {
    /// The `Counted` an id made by [`Counted::open`] points to.
    ///
    /// # Safety
    /// `id` carries [`COUNTED`] and came from `open`, and its span has not been closed (tracing
    /// hands a subscriber only ids of spans that are alive).
    unsafe fn of<'a>(id: u64) -> &'a Counted {
        // SAFETY: as the caller promises, the address is that of a live `Arc<Counted>`.
        unsafe { &*((id & !COUNTED) as *const Counted) }
    }

    /// A new span of `desc` that counts work, its values from `attrs`: its id.
    fn open(desc: &'static Descriptor, attrs: &Attributes<'_>) -> Id {
        let fields = attrs.metadata().fields();
        let shape_fields = if desc.info.work & WORK_SHAPE != 0 {
            fields
                .iter()
                .filter(|f| is_shape(f.name()))
                .count()
                .min(SHAPE_FIELDS) as u8
        } else {
            0
        };
        let counted = Counted {
            desc,
            flops: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            fields,
            dims: Default::default(),
            shape_fields,
        };
        attrs.record(&mut &counted);
        Id::from_u64(Arc::into_raw(Arc::new(counted)) as u64 | COUNTED)
    }
}

/// Reads the `flops` and `bytes` fields of a counting span (numbers, counted as the keys of
/// `#[profiled]` count them; any other value is ignored).
impl Visit for &Counted {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field, value.count());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field, value.count());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field, value.count());
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        self.set(field, value.count());
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        self.set(field, value.count());
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

impl Counted {
    fn set(&self, field: &Field, count: u64) {
        match field.name() {
            "flops" => self.flops.store(count, Relaxed),
            "bytes" => self.bytes.store(count, Relaxed),
            name if self.shape_fields > 0 && is_shape(name) => {
                let position = self
                    .fields
                    .iter()
                    .filter(|f| is_shape(f.name()))
                    .position(|f| f == *field);
                if let Some(cell) = position.and_then(|k| self.dims.get(k)) {
                    cell.store(count, Relaxed);
                }
            }
            _ => {}
        }
    }

    /// The span's shape: its shape fields' values, one list.
    fn shape(&self) -> crate::store::shape::Dims {
        let mut dims = crate::store::shape::Dims::EMPTY;
        for cell in &self.dims[..self.shape_fields as usize] {
            dims.push(cell.load(Relaxed));
        }
        dims.end();
        dims
    }
}

/// Whether the running session's filter could select a span of `meta` (with unknown `layer`
/// and `phase` when it has such fields).
fn may_select(meta: &Metadata<'_>, desc: Option<&'static Descriptor>) -> bool {
    if crate::start::startup::listing_pending() {
        return true; // `--list-probes=warmup`: every span is registered, to be listed
    }
    let Some(session) = crate::session::current().filter(|s| !s.is_done()) else {
        return false;
    };
    let filter = &session.config().filter;
    match desc {
        Some(desc) => crate::register::registry::registry()
            .entry(desc.index.load(std::sync::atomic::Ordering::Relaxed) as usize)
            .selected_by(filter),
        // `layer`/`phase` come with each span and `id` once it is registered: only the other
        // keys can rule it out now.
        None => {
            let known = |key: Key| match key {
                Key::Name => Some(meta.name()),
                Key::Module => Some(meta.target()),
                Key::File => meta.file(),
                Key::Kind => Some("span"),
                Key::Id | Key::Layer | Key::Phase => None,
            };
            filter.could_select(known, &[Key::Layer, Key::Phase, Key::Id])
        }
    }
}

/// A hash of a new span's `layer` and `phase` values, taken without allocating (values recorded
/// as strings; others are formatted first).
#[derive(Default)]
struct KeyHash(u64);

impl KeyHash {
    fn add(&mut self, tag: u64, bytes: &[u8]) {
        // FNV-1a over the tag and the bytes: enough to tell a callsite's few values apart.
        let mut h = self.0 ^ tag.wrapping_mul(0x100_0000_01b3);
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        self.0 = h ^ 0xcbf2_9ce4_8422_2325;
    }
}

impl Visit for KeyHash {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "layer" => self.add(1, value.as_bytes()),
            "phase" => self.add(2, value.as_bytes()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if matches!(field.name(), "layer" | "phase") {
            let text = format!("{value:?}");
            self.record_str(field, text.trim_matches('"'));
        }
    }
}

/// Reads the `layer` and `phase` fields of a new span.
#[derive(Default)]
struct Keys {
    layer: Option<String>,
    phase: Option<String>,
}

impl Visit for Keys {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "layer" => self.layer = Some(value.to_owned()),
            "phase" => self.phase = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if matches!(field.name(), "layer" | "phase") {
            let text = format!("{value:?}");
            let text = text.trim_matches('"').to_owned();
            self.record_str(field, &text);
        }
    }
}

impl TracingBridge {
    /// The callsite entry of `meta`, registering it on first sight.
    fn callsite(&self, meta: &'static Metadata<'static>) -> Option<&'static Descriptor> {
        let key = meta as *const Metadata<'static> as usize;
        let slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) % CACHE_SLOTS;
        if let Some(found) = CALLSITES.with(|c| {
            let (k, found) = c.borrow()[slot];
            (k == key).then_some(found)
        }) {
            return found;
        }
        let found = *self
            .callsites
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(key)
            .or_insert_with(|| (!has_keys(meta)).then(|| register(site(meta, None, None))));
        CALLSITES.with(|c| c.borrow_mut()[slot] = (key, found));
        found
    }
}

impl Subscriber for TracingBridge {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if !meta.is_span() {
            return Interest::never();
        }
        let desc = self.callsite(meta);
        if may_select(meta, desc) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        meta.is_span()
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let meta = attrs.metadata();
        let desc = match self.callsite(meta) {
            Some(desc) => desc,
            None => {
                // The probe depends on this span's `layer` and `phase` values: found from a hash
                // of them in a per-thread cache, registered (interned: the same values give the
                // same probe) on a miss.
                let mut hash = KeyHash::default();
                attrs.record(&mut hash);
                let key = (meta as *const Metadata<'_> as usize, hash.0);
                let slot = ((key.0 as u64 ^ key.1).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58)
                    as usize
                    % CACHE_SLOTS;
                let cached = VALUED.with(|c| {
                    let (k, desc) = c.borrow()[slot];
                    (k == key).then_some(desc).flatten()
                });
                match cached {
                    Some(desc) => desc,
                    None => {
                        let mut keys = Keys::default();
                        attrs.record(&mut keys);
                        let desc =
                            register(site(meta, keys.layer.as_deref(), keys.phase.as_deref()));
                        VALUED.with(|c| c.borrow_mut()[slot] = (key, Some(desc)));
                        desc
                    }
                }
            }
        };
        if desc.info.work != 0 {
            return Counted::open(desc, attrs);
        }
        // A descriptor is leaked for the process: its address is a stable, non-zero id.
        Id::from_u64(desc as *const Descriptor as u64)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let id = span.into_u64();
        if id & COUNTED != 0 {
            // SAFETY: an id with the tag came from `Counted::open`, and tracing records only
            // spans that are alive.
            values.record(&mut unsafe { Counted::of(id) });
        }
    }

    fn clone_span(&self, span: &Id) -> Id {
        let id = span.into_u64();
        if id & COUNTED != 0 {
            // SAFETY: as in `record`; the new handle holds one more count.
            unsafe { Arc::increment_strong_count((id & !COUNTED) as *const Counted) };
        }
        span.clone()
    }

    fn try_close(&self, span: Id) -> bool {
        let id = span.into_u64();
        if id & COUNTED == 0 {
            return false; // a descriptor lives for the process
        }
        // SAFETY: as in `record`; this handle's count is given back (one `try_close` per
        // `new_span` or `clone_span`), and the last one frees it.
        let counted = unsafe { Arc::from_raw((id & !COUNTED) as *const Counted) };
        Arc::into_inner(counted).is_some()
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, span: &Id) {
        let id = span.into_u64();
        if id & COUNTED != 0 {
            return enter_counted(id);
        }
        // SAFETY: every id this subscriber hands out without the tag is the address of a
        // leaked, never freed descriptor (`new_span`), and tracing gives a subscriber only its
        // own ids.
        let desc: &'static Descriptor = unsafe { &*(id as *const Descriptor) };
        open(id, crate::probes::timer::enter(desc));
    }

    fn exit(&self, span: &Id) {
        let id = span.into_u64();
        let guard = OPEN
            .try_with(|open| {
                let mut open = open.borrow_mut();
                match open.last() {
                    Some(&(top, _)) if top == id => open.pop().map(|(_, guard)| guard),
                    _ => None,
                }
            })
            .ok()
            .flatten();
        drop(guard);
    }
}

/// Keeps the guard of span `id` entered on this thread until its exit, if it measures.
#[inline(always)]
fn open(id: u64, guard: ProbeGuard) {
    if guard.is_open() {
        // In a thread-local's destructor `OPEN` may be gone: the span is then not
        // measured (never a panic, which there would abort the program).
        let mut guard = Some(guard);
        let _ = OPEN.try_with(|open| {
            if let Some(guard) = guard.take() {
                open.borrow_mut().push((id, guard));
            }
        });
        if let Some(guard) = guard {
            guard.discard();
        }
    }
}

/// Enters a span that counts its work: as `#[profiled]` with `flops`/`bytes` keys does, its
/// values are read only when its event is armed.
#[inline(never)]
fn enter_counted(id: u64) {
    // SAFETY: an id with the tag came from `Counted::open`, and tracing enters only spans that
    // are alive.
    let span = unsafe { Counted::of(id) };
    let Some(state) = timer::active(span.desc) else {
        return;
    };
    let work = if timer::is_armed(state) {
        Work {
            shape: span.shape(),
            ..counted(span.flops.load(Relaxed), span.bytes.load(Relaxed))
        }
    } else {
        Work::NONE
    };
    open(id, timer::enter_work(span.desc, state, &work));
}
