//! The shape of the code, checked: the modules of `profiler-core/src` import one another without
//! a cycle (each stage builds on the ones before it), the descriptor imports nothing from the
//! crate, and the schedule never reaches for the session or the timer that use it.
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

#[test]
fn the_core_modules_import_one_another_without_a_cycle() {
    let graph = graph();
    // `lib.rs` is the root: it re-exports everything, and nothing imports it back.
    let mut done = BTreeSet::new();
    for node in graph.keys().filter(|m| *m != "lib") {
        let cycle = cycle_from(node, &graph, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "import cycle between the core's modules: {}",
            cycle.unwrap().join(" -> ")
        );
    }
}

#[test]
fn the_descriptor_imports_nothing_and_the_schedule_not_its_users() {
    let graph = graph();
    assert_eq!(
        graph["descriptor"],
        BTreeSet::new(),
        "descriptor.rs is a leaf"
    );
    for user in ["session", "timer", "startup"] {
        assert!(
            !graph["schedule"].contains(user),
            "schedule/ imports {user}, which is built on it"
        );
    }
    for user in ["schedule", "session", "timer"] {
        assert!(
            !graph["registry"].contains(user),
            "registry.rs imports {user}, which is built on it"
        );
    }
}
