//! The shape of the code, checked: `profiler-core/src` is one folder per stage of the pipeline
//! and no stage imports one after it (so there is no cycle between them), the descriptor imports
//! nothing from the crate; and no crate of the workspace has a cycle between its top-level
//! modules, nor between the files of one folder; no two public types of the workspace's crates
//! share a name, and no re-export renames a path.
//!
//! The graph is read from the source: a file of module `m` depends on module `x` when it names
//! `crate::x` outside a comment. Coarse, but it is what a reader follows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The top-level module a file belongs to (`schedule` for `schedule/plan.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// The modules a file names as `crate::x`, comments left out.
fn imports(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

/// Module -> the modules it imports (itself left out; only modules that exist).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = sources(&src);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let deps = graph.entry(module.clone()).or_default();
        for dep in imports(&text) {
            if dep != module && modules.contains(&dep) {
                deps.insert(dep);
            }
        }
    }
    graph
}

/// A cycle through `node`, if any (depth-first search).
fn cycle_from(
    node: &str,
    graph: &BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|n| n == node) {
        let mut cycle = path[at..].to_vec();
        cycle.push(node.to_owned());
        return Some(cycle);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_owned());
    for dep in graph.get(node).into_iter().flatten() {
        if let Some(cycle) = cycle_from(dep, graph, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.insert(node.to_owned());
    None
}

/// The stages of `profiler-core/src`, in the order in which they build on one another (the
/// pipeline of docs/architecture.md), with the two small modules that sit between them: `sync`
/// (a lock that survives a poisoned mutex) under everything, and `testing` (the clocks a test
/// sets, public) on the instruments.
const STAGES: [&str; 13] = [
    "sync",
    "select",
    "register",
    "instrument",
    "testing",
    "store",
    "schedule",
    "measure",
    "sample",
    "output",
    "session",
    "start",
    "probes",
];

/// `ls profiler-core/src` reads as the pipeline: each stage is one folder, and beside them only
/// the crate's root, the disabled build's API and the two small modules above.
#[test]
fn the_core_is_one_folder_per_stage() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut entries: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    entries.sort();
    let mut expected: Vec<String> = STAGES
        .iter()
        .map(|s| match *s {
            "sync" | "testing" => format!("{s}.rs"),
            _ => format!("{s}/"),
        })
        .chain(["lib.rs".to_owned(), "disabled.rs".to_owned()])
        .collect();
    expected.sort();
    assert_eq!(
        entries, expected,
        "profiler-core/src is not one folder per stage"
    );
}

/// No import runs back up the pipeline: each stage names only the stages before it.
#[test]
fn no_import_runs_back_up_the_pipeline() {
    let graph = graph();
    for (i, stage) in STAGES.iter().enumerate() {
        for dep in graph.get(*stage).into_iter().flatten() {
            let at = STAGES.iter().position(|s| s == dep);
            assert!(
                at.is_some_and(|j| j < i),
                "{stage} imports {dep}, which comes after it in the pipeline ({})",
                STAGES.join(" -> ")
            );
        }
    }
    // Within a stage: the descriptor, what a site is, builds on nothing of the crate.
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/register/descriptor.rs"),
    )
    .unwrap();
    assert!(imports(&text).is_empty(), "descriptor.rs is a leaf");
}

/// The crates of the workspace whose modules are checked for cycles.
const CRATES: [&str; 7] = [
    "profiler-macros",
    "profiler-core",
    "profiler-format",
    "profiler-tables",
    "profiler-analysis",
    "profiler-peak",
    "profiler-cli",
];

/// The module path of a source file of a crate: `report::render` for `src/report/render.rs`,
/// `report` for `src/report/mod.rs`, the root (empty) for `lib.rs` and `main.rs`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts
}

/// The paths a file names (`crate::a::b`, `super::x`, `self::y`), resolved to module paths of
/// the crate from the file's own module `at`; test code (files named `tests.rs`, and what follows
/// a `#[cfg(test)]` line) left out.
fn named_paths(text: &str, at: &[String], is_folder_root: bool) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        for (prefix, base) in [("crate::", 0), ("super::", 1), ("self::", 2)] {
            let mut rest = code;
            while let Some(pos) = rest.find(prefix) {
                let boundary = rest[..pos]
                    .chars()
                    .last()
                    .is_none_or(|c| !c.is_alphanumeric() && c != '_');
                rest = &rest[pos + prefix.len()..];
                if !boundary {
                    continue;
                }
                let chain: Vec<String> = rest
                    .split("::")
                    .map(|seg| {
                        seg.chars()
                            .take_while(|c| {
                                c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_'
                            })
                            .collect::<String>()
                    })
                    .take_while(|seg| !seg.is_empty())
                    .collect();
                // A file's own module: `self` is itself; `super` is its parent (for a folder's
                // mod.rs, the folder's parent).
                let mut path: Vec<String> = match base {
                    0 => Vec::new(),
                    1 if is_folder_root || !at.is_empty() => {
                        at[..at.len().saturating_sub(1)].to_vec()
                    }
                    _ => at.to_vec(),
                };
                path.extend(chain);
                found.push(path);
            }
        }
    }
    found
}

/// The module graphs of a crate, one per level: at level 1, each file counts as its top-level
/// module (`report` for `report/render.rs`) and an edge joins two top-level modules when a file
/// of one names the other; at level 2, the files of one folder (`report::render`,
/// `report::breakdown`) and the edges between them, the folder's own `mod.rs`, which declares
/// and re-exports them, left out. Each named path is resolved to the longest module it begins
/// with.
fn crate_graphs(krate: &str) -> [BTreeMap<String, BTreeSet<String>>; 2] {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src");
    let files: Vec<PathBuf> = sources(&src)
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "tests.rs"))
        .collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(&src, f)).collect();
    let mut graphs: [BTreeMap<String, BTreeSet<String>>; 2] = Default::default();
    for file in &files {
        let at = module_path(&src, file);
        let folder_root = file.file_name().is_some_and(|n| n == "mod.rs");
        let text = std::fs::read_to_string(file).unwrap();
        for mut path in named_paths(&text, &at, folder_root) {
            while !path.is_empty() && !modules.contains(&path) {
                path.pop();
            }
            for (level, graph) in graphs.iter_mut().enumerate() {
                let depth = level + 1;
                let same_parent = at.len() >= depth
                    && path.len() >= depth
                    && at[..depth - 1] == path[..depth - 1];
                if same_parent && at[..depth] != path[..depth] {
                    graph
                        .entry(at[..depth].join("::"))
                        .or_default()
                        .insert(path[..depth].join("::"));
                }
            }
        }
    }
    graphs
}

#[test]
fn no_crate_of_the_workspace_has_a_module_cycle() {
    for krate in CRATES {
        for graph in crate_graphs(krate) {
            let mut done = BTreeSet::new();
            for node in graph.keys() {
                let cycle = cycle_from(node, &graph, &mut Vec::new(), &mut done);
                assert!(
                    cycle.is_none(),
                    "{krate}: import cycle between modules: {}",
                    cycle.unwrap().join(" -> ")
                );
            }
        }
    }
}

/// Files whose public types are not the crate's public API of their own, with why.
const NOT_API: [(&str, &str); 2] = [
    // The disabled build's twins of the enabled API (`cfg(not(feature = "enable"))`): the same
    // items, one build or the other, never both.
    (
        "profiler-core/src/disabled.rs",
        "the disabled build of the same items",
    ),
    // Perfetto's message types as prost generates them, in a `pub(super)` module.
    (
        "profiler-analysis/src/trace/perfetto/protos.rs",
        "generated from Perfetto's .proto, private",
    ),
];

/// The `pub struct`, `enum`, `trait`, `type` and `union` names a source file declares (public
/// ones only: `pub(crate)` and the like left out), outside its `#[cfg(test)] mod tests`.
fn public_type_names(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    let mut names = Vec::new();
    for line in code.lines() {
        let line = line.trim_start();
        for kind in ["struct", "enum", "trait", "type", "union"] {
            if let Some(rest) = line.strip_prefix(&format!("pub {kind} ")) {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                names.push(name);
            }
        }
    }
    names
}

/// One meaning per name: a public type name is declared once across the crates (a reader who
/// meets `Filter` or `Run` knows which it is). profiler-macros is left out: a proc-macro crate
/// exports only its macros (its `Kind` mirrors profiler-core's, which it expands to).
#[test]
fn no_two_public_types_of_the_workspace_share_a_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut declared: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for krate in CRATES.iter().filter(|&&k| k != "profiler-macros") {
        for file in sources(&root.join(krate).join("src")) {
            let rel = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if file.file_name().is_some_and(|n| n == "tests.rs")
                || NOT_API.iter().any(|(f, _)| *f == rel)
            {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for name in public_type_names(&text) {
                declared.entry(name).or_default().push(rel.clone());
            }
        }
    }
    let repeated: Vec<String> = declared
        .iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|(name, files)| format!("{name}: {}", files.join(", ")))
        .collect();
    assert!(
        repeated.is_empty(),
        "public type names declared more than once (rename one, so that each names one thing):\n{}",
        repeated.join("\n")
    );
}

/// No alias of an old path: a re-export that renames (`pub use a::b as c`) leaves two names for
/// one thing. The one kept: `profiler_core::format`, how a profiled program names `prof.json`'s
/// types (what `snapshot` returns) without depending on profiler-format itself.
#[test]
fn no_re_export_renames_a_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for krate in CRATES {
        for file in sources(&root.join(krate).join("src")) {
            let rel = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let line = line.trim_start();
                let re_export = line.starts_with("pub use ") || line.starts_with("pub(");
                if re_export
                    && line.contains(" use ")
                    && line.contains(" as ")
                    && line != "pub use profiler_format as format;"
                {
                    found.push(format!("{rel}:{}: {line}", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "re-exports under another name (import the item's own path instead):\n{}",
        found.join("\n")
    );
}

/// A file's code: comments left out, and test code (what follows a `#[cfg(test)]` line).
fn code_of(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        code.push_str(line.split("//").next().unwrap_or(""));
        code.push('\n');
    }
    code
}

/// The identifiers of `code`, in order.
fn identifiers(code: &str) -> Vec<&str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The names a file takes from `prefix` (`super::`, `crate::session::`): `super::{a, b::C}`
/// gives `a`, `b`, `C`; `super::x::Y` gives `x`, `Y`.
fn names_taken_from<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let boundary = rest[..at]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        rest = &rest[at + prefix.len()..];
        if !boundary {
            continue;
        }
        let end = if rest.starts_with('{') {
            let mut depth = 0;
            rest.char_indices()
                .find_map(|(i, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    (depth == 0).then_some(i + 1)
                })
                .unwrap_or(rest.len())
        } else {
            rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len())
        };
        names.extend(identifiers(&rest[..end]));
    }
    names
}

/// The files of `profiler-core/src/session` that are `Session`'s own; every other file there is
/// a component (a mode or a service of the run).
const SESSION_FILES: [&str; 2] = ["mod.rs", "step.rs"];

/// `Session` is its configuration, its `Measuring` and its components: its methods (and the
/// traits it implements) are in its own files only, and a component never imports the session
/// back (`use super::{.., Session, ..}`, `super::Control`): it is given what it needs.
#[test]
fn the_session_is_made_of_components() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/session");
    let mut components = 0;
    for file in sources(&dir) {
        let name = file
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if SESSION_FILES.contains(&name.as_str()) {
            continue;
        }
        components += 1;
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        // An `impl` header: from `impl` to its `{`.
        for (at, _) in code.match_indices("impl") {
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let header = &code[at..];
            let header = &header[..header.find(['{', ';']).unwrap_or(header.len())];
            let words = identifiers(header);
            assert!(
                words.first() != Some(&"impl") || !words.contains(&"Session"),
                "session/{name}: `{}`: `impl Session` belongs in {} only; a component is a \
                 struct of its own, given what it needs",
                header.trim(),
                SESSION_FILES.map(|f| format!("session/{f}")).join(" and ")
            );
        }
        for prefix in ["super::", "crate::session::"] {
            let back: Vec<&str> = names_taken_from(&code, prefix)
                .into_iter()
                .filter(|n| matches!(*n, "Session" | "Control"))
                .collect();
            assert!(
                back.is_empty(),
                "session/{name} imports {} from the session ({prefix}): a component takes \
                 the config, the Measuring and what it acts on as arguments",
                back.join(", ")
            );
        }
    }
    assert!(components >= 6, "the session's components were not found");
}
