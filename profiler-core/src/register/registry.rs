//! The registry: every descriptor the annotations submitted, with its id, read once at start-up.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::register::descriptor::{Descriptor, Kind, Registration};
use crate::register::info::ProbeInfo;
use crate::sync::lock;
use profiler_format::filter::{Filter, Key};

/// One registered descriptor and its start-up facts.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub desc: &'static Descriptor,
    pub id: String,
}

impl Entry {
    /// The value of a filter key for this probe.
    pub fn field(&self, key: Key) -> Option<&str> {
        let info = &self.desc.info;
        match key {
            Key::Name => Some(info.name),
            Key::Id => Some(&self.id),
            Key::Layer => info.layer,
            Key::Phase => info.phase,
            Key::Kind => Some(info.kind.as_str()),
            Key::Module => Some(info.module),
            Key::File => Some(info.file),
        }
    }

    /// Whether `filter` selects this probe.
    pub fn selected_by(&self, filter: &Filter) -> bool {
        filter.matches(|key| self.field(key))
    }

    /// The listing's view of this probe.
    pub fn info(&self, selected: bool) -> ProbeInfo {
        let info = &self.desc.info;
        ProbeInfo {
            id: self.id.clone(),
            name: info.name,
            layer: info.layer,
            phase: info.phase,
            kind: info.kind.as_str(),
            module: info.module,
            file: info.file,
            line: info.line,
            selected,
        }
    }
}

/// All descriptors: the annotations' in file and line order, then those registered at run time
/// (runtime probes, `tracing` spans) in the order they came; each with a unique id. Entries are
/// only ever appended, so an entry's index (kept in its descriptor) never changes.
#[derive(Debug)]
pub(crate) struct Registry {
    entries: boxcar::Vec<Entry>,
    /// How many times each base id is used, for `.2`, `.3`, ... (registration only).
    ids: Mutex<HashMap<String, u32>>,
}

impl Registry {
    fn collect() -> Registry {
        let mut descs: Vec<&'static Descriptor> = inventory::iter::<Registration>
            .into_iter()
            .map(|r| r.0)
            .collect();
        descs.sort_by(|a, b| {
            let (a, b) = (&a.info, &b.info);
            (a.file, a.line, a.name).cmp(&(b.file, b.line, b.name))
        });
        descs.dedup_by(|a, b| std::ptr::eq(*a, *b));
        let registry = Registry {
            entries: boxcar::Vec::new(),
            ids: Mutex::new(HashMap::new()),
        };
        {
            let mut ids = lock(&registry.ids);
            for desc in descs {
                registry.push(&mut ids, desc);
            }
        }
        registry
    }

    /// Appends `desc` with a unique id; returns its index. `ids` is the held registration lock.
    fn push(&self, ids: &mut HashMap<String, u32>, desc: &'static Descriptor) -> usize {
        let base = base_id(desc);
        let n = ids.entry(base.clone()).or_insert(0);
        *n += 1;
        let id = if *n == 1 { base } else { format!("{base}.{n}") };
        let index = self.entries.push(Entry { desc, id });
        // Each descriptor knows its position, so that the probe path never searches.
        desc.index
            .store(index as u32, std::sync::atomic::Ordering::Relaxed);
        index
    }

    /// Registers a descriptor made at run time; returns its index.
    pub fn add(&self, desc: &'static Descriptor) -> usize {
        let mut ids = lock(&self.ids);
        self.push(&mut ids, desc)
    }

    /// The entry at `index` (every index a descriptor holds is one).
    pub fn entry(&self, index: usize) -> &Entry {
        &self.entries[index]
    }

    /// Every entry, in index order.
    pub fn iter(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.entries.iter().map(|(_, e)| e)
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.count()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The registry, built on first use.
pub(crate) fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::collect)
}

fn base_id(desc: &Descriptor) -> String {
    let info = &desc.info;
    let function = || {
        let path = function_path((info.anchor)(), info.module);
        if path.is_empty() {
            format!("{}::{}", info.module, info.name)
        } else {
            path
        }
    };
    match info.kind {
        Kind::Fn => function(),
        Kind::Probe => format!("{}::{}", function(), info.name),
        // A name known at run time is its own id; a span's is its target and name.
        Kind::Runtime => info.name.to_owned(),
        Kind::Span => format!("{}::{}", info.module, info.name),
    }
}

/// The enclosing function's path from the type name of an item declared inside it:
/// `<krate::m::T<_> as krate::m::Tr>::go::__ProfilerAnchor` becomes `krate::m::T::go`, closures
/// and generic arguments are dropped, and any character a filter value cannot hold becomes `_`.
/// A trait's method implemented for a type of another crate or none (`impl Tr for u32`, `for
/// Vec<T>`, `for (u8, u16)`) is placed in `module`, the annotation's, under the type's last
/// name: `krate::m::u32::go`, `krate::m::Vec::go` (not `u32::go`, `alloc::vec::Vec::go`, which
/// looked like another crate's and met the same impl in other modules).
pub(crate) fn function_path(type_name: &str, module: &str) -> String {
    let path = type_name
        .strip_suffix("::__ProfilerAnchor")
        .unwrap_or(type_name);
    // `<Type as Trait>::rest` -> `Type::rest`.
    let path = match path.strip_prefix('<') {
        Some(inner) => {
            let mut depth = 1;
            let mut split = None;
            let mut close = None;
            for (i, c) in inner.char_indices() {
                match c {
                    '<' => depth += 1,
                    '>' => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(i);
                            break;
                        }
                    }
                    ' ' if depth == 1 && inner[i..].starts_with(" as ") && split.is_none() => {
                        split = Some(i)
                    }
                    _ => {}
                }
            }
            match close {
                Some(close) => {
                    let ty = &inner[..split.unwrap_or(close)];
                    let rest = &inner[close + 1..];
                    let krate = module.split("::").next().unwrap_or(module);
                    let bare = ty.trim_start_matches('&').trim_start_matches("mut ");
                    let bare = bare.trim_start_matches("dyn ");
                    if split.is_some() && !bare.starts_with(&format!("{krate}::")) {
                        format!("{module}::{}{rest}", last_name(bare))
                    } else {
                        format!("{ty}{rest}")
                    }
                }
                None => path.to_owned(),
            }
        }
        None => path.to_owned(),
    };
    // Drop generic arguments.
    let mut plain = String::with_capacity(path.len());
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let plain = plain
        .trim_start_matches('&')
        .trim_start_matches("mut ")
        .trim_start_matches("dyn ");
    plain
        .split("::")
        .filter(|segment| !segment.is_empty() && !segment.starts_with("{{"))
        .collect::<Vec<_>>()
        .join("::")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A type's last name, its generic arguments dropped: `alloc::vec::Vec<T>` -> `Vec`; a type
/// that is no path (`(u8, u16)`, `[T]`) as it is written.
fn last_name(ty: &str) -> &str {
    let plain = ty.split('<').next().unwrap_or(ty);
    if plain.starts_with('(') || plain.starts_with('[') || plain.is_empty() {
        return ty;
    }
    plain.rsplit("::").next().unwrap_or(plain)
}

#[cfg(test)]
mod tests {
    use super::function_path;

    #[test]
    fn paths_from_type_names() {
        let cases = [
            ("exp::m::gen::__ProfilerAnchor", "exp::m::gen"),
            ("exp::m::T<_>::meth::__ProfilerAnchor", "exp::m::T::meth"),
            (
                "<exp::m::T<_> as exp::m::Tr>::go::__ProfilerAnchor",
                "exp::m::T::go",
            ),
            (
                "<exp::m::T<alloc::vec::Vec<u8>> as exp::m::Tr<u8>>::go::__ProfilerAnchor",
                "exp::m::T::go",
            ),
            ("exp::m::afn::{{closure}}::__ProfilerAnchor", "exp::m::afn"),
            ("<&exp::W as exp::Tr>::f::__ProfilerAnchor", "exp::W::f"),
        ];
        for (input, expected) in cases {
            assert_eq!(function_path(input, "exp::m"), expected, "{input}");
        }
        // A trait implemented for a type of another crate, or of none, is placed in the
        // annotation's module under the type's last name: before, `u32::f`,
        // `alloc::vec::Vec::f`, `_u8__u16_::f`, `___::f`.
        let foreign = [
            ("<u32 as exp::m::Tr>::f::__ProfilerAnchor", "exp::m::u32::f"),
            (
                "<alloc::vec::Vec<u8> as exp::m::Tr>::f::__ProfilerAnchor",
                "exp::m::Vec::f",
            ),
            (
                "<core::option::Option<T> as exp::m::Tr>::f::__ProfilerAnchor",
                "exp::m::Option::f",
            ),
            (
                "<(u8, u16) as exp::m::Tr>::f::__ProfilerAnchor",
                "exp::m::_u8__u16_::f",
            ),
            ("<[T] as exp::Tr>::f::__ProfilerAnchor", "exp::m::_T_::f"),
            ("<&str as exp::Tr>::f::__ProfilerAnchor", "exp::m::str::f"),
        ];
        for (input, expected) in foreign {
            assert_eq!(function_path(input, "exp::m"), expected, "{input}");
        }
    }
}
