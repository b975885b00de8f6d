//! Zero overhead without `enable` (SPEC section 1): "the machine code of an annotated function is
//! identical to that of the same function without the annotation", and no descriptor is
//! registered.
//!
//! The fixture crate `tests/fixtures/zero-overhead/` holds one `#[no_mangle]` function per shape
//! that `#[profiled]` and `probe!` accept (free fn, `&self` and `&mut self` methods, a generic fn
//! instantiated in a wrapper, an `unsafe fn`, the guard and the block forms of `probe!`, a fn
//! returning `impl Iterator`, a fn and a guard with the `flops`, `bytes` and `shape` keys, a
//! runtime probe entered with its work), each annotated with `zo_marker_*` names, layers and
//! phases. Its path dependency `twins/` holds a `twin_*` of each with the same body minus the
//! annotation; a separate crate, so that LLVM cannot merge a pair into one function (in one
//! crate it does, which would make the byte comparison vacuous). The bodies are leaves (no calls,
//! no loads of
//! constants from memory, no panics), so two copies of the same code have the same bytes
//! wherever they are placed.
//!
//! The test builds the fixture, its compared code optimized as release builds it, with the
//! `cargo` running it, reads the ELF binary with `object`, and checks:
//!
//! 1. without `enable`, each annotated function's bytes (address and size from the symbol table)
//!    equal its twin's (two symbols at one address also count: the code was folded into one);
//! 2. without `enable`, no `zo_marker_*` string, no descriptor symbol (`__PROFILER_DESC`,
//!    `__profiler_anchor`, ...) and no registration section is in the binary;
//! 3. with `enable` (sanity: the checks can fail), the markers and descriptor symbols are there,
//!    `.init_array` (where `inventory` registers) is larger, and `annotated_free` differs from
//!    `twin_free`.
//!
//! The fixture's own crates build at opt-level 3, without debug assertions or overflow checks,
//! in 16 codegen units (release's settings), and its dependencies (profiler-core and what
//! `enable` brings) as the workspace's dev profile builds them (its `Cargo.toml`): the compared
//! functions are the fixture's, and the enabled build took 2.6 times the CPU time with optimized
//! dependencies. The profile is `dev` and the target directory the workspace's, so that the
//! dependencies `cargo test` built for the workspace with the same features are reused (45 of
//! the enabled build's 50 units, not the profiler's own crates; the fixture asks for `syn`,
//! `rustix` and a few others with the workspace's features so that they and what is built on
//! them are among them): the two builds took 40 s of CPU in a target directory of their own, in
//! release mode, 28 s with only the crates whose features already matched reused, and 15 s now
//! (user time, quiet machine, the workspace's tests built, the fixture's own units removed).
//!
//! Both builds are shared by the tests of this file. Only ELF on Linux is checked; elsewhere the
//! tests print that they skip and pass.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use object::{Object, ObjectSection, ObjectSymbol};

/// Each annotated function of the fixture and its unannotated twin.
const PAIRS: &[(&str, &str)] = &[
    ("annotated_free", "twin_free"),
    ("annotated_method_ref", "twin_method_ref"),
    ("annotated_method_mut", "twin_method_mut"),
    ("annotated_generic", "twin_generic"),
    ("annotated_unsafe", "twin_unsafe"),
    ("annotated_guard", "twin_guard"),
    ("annotated_block", "twin_block"),
    ("annotated_iter", "twin_iter"),
    ("annotated_work", "twin_work"),
    ("annotated_work_guard", "twin_work_guard"),
    ("annotated_key_only", "twin_key_only"),
    ("annotated_runtime_work", "twin_runtime_work"),
];

/// Every name, layer and phase value in the fixture's annotations starts with one of these.
const MARKERS: &[&str] = &[
    "zo_marker_layer",
    "zo_marker_phase",
    "zo_marker_name_free",
    "zo_marker_name_mut",
    "zo_marker_probe_guard",
    "zo_marker_probe_block",
    "zo_marker_runtime_work",
    "zo_marker_probe_key_only",
];

/// Parts of the names of the items an enabled annotation generates (see profiler-macros'
/// `expand.rs`); none may be in the disabled binary's symbol table.
const DESCRIPTOR_SYMBOLS: &[&str] = &["__PROFILER_DESC", "__profiler_anchor", "__ProfilerAnchor"];

/// The fixture binary, built once per feature set.
struct Built {
    path: PathBuf,
    bytes: Vec<u8>,
    /// The compiler's warnings about the fixture's own code, rendered.
    warnings: Vec<String>,
}

fn supported() -> bool {
    if cfg!(target_os = "linux") {
        true
    } else {
        println!("zero_overhead: skipped, only ELF binaries on Linux are checked");
        false
    }
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zero-overhead")
}

/// Builds the fixture (its code optimized, see the module's documentation), with or without
/// `enable`, in the workspace's target directory (the parent of `CARGO_TARGET_TMPDIR`), so that
/// the dependencies the workspace's test build made are reused; each build's binary is read
/// before the other build may start, and replace it.
fn build(enable: bool) -> Built {
    // One build (and the read of its binary) at a time.
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let label = if enable { "enabled" } else { "disabled" };
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is a folder of the target directory");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(fixture_dir().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        .arg("--message-format=json")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    if enable {
        cmd.args(["--features", "enable"]);
    }
    let start = Instant::now();
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the fixture: {e}"));
    let secs = start.elapsed().as_secs_f64();
    assert!(
        output.status.success(),
        "building the fixture ({label}) failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    // The path of the binary, from cargo's messages (it depends on `--target` and the like).
    let stdout = String::from_utf8_lossy(&output.stdout);
    let path = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|msg| {
            msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "zero-overhead-fixture"
        })
        .find_map(|msg| msg["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo did not report the fixture's executable:\n{stdout}"));
    // How many of the build's units were already built (by the workspace's `cargo test`).
    let artifacts: Vec<bool> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|msg| msg["reason"] == "compiler-artifact")
        .map(|msg| msg["fresh"] == true)
        .collect();
    let fresh = artifacts.iter().filter(|&&f| f).count();
    // Warnings about the fixture's code (not its dependencies', which cargo does not show).
    let warnings = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|msg| {
            msg["reason"] == "compiler-message"
                && msg["message"]["level"] == "warning"
                && msg["package_id"]
                    .as_str()
                    .is_some_and(|id| id.contains("zero-overhead"))
        })
        .filter_map(|msg| msg["message"]["rendered"].as_str().map(str::to_owned))
        .collect();
    println!(
        "zero_overhead: fixture built ({label}) in {secs:.1} s, {fresh} of {} units already \
         built: {}",
        artifacts.len(),
        path.display()
    );
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("cannot read the fixture binary {}: {e}", path.display()));
    Built {
        path,
        bytes,
        warnings,
    }
}

fn disabled() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| build(false))
}

fn enabled() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| build(true))
}

/// Parses the binary; `None` (after saying so) when it is not ELF.
fn parse(built: &Built) -> Option<object::File<'_>> {
    match object::File::parse(&*built.bytes) {
        Ok(file) if file.format() == object::BinaryFormat::Elf => Some(file),
        Ok(file) => {
            println!("zero_overhead: skipped, {:?} is not checked", file.format());
            None
        }
        Err(e) => {
            println!(
                "zero_overhead: skipped, {} is not an ELF file object reads: {e}",
                built.path.display()
            );
            None
        }
    }
}

/// A function's address and machine code, from the symbol table.
fn code<'a>(file: &object::File<'a>, name: &str) -> (u64, &'a [u8]) {
    let symbol = file
        .symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| {
            panic!("no symbol `{name}` in the fixture binary (was it stripped or dropped?)")
        });
    assert!(symbol.size() > 0, "symbol `{name}` has no size");
    let section = symbol
        .section_index()
        .and_then(|index| file.section_by_index(index).ok())
        .unwrap_or_else(|| panic!("symbol `{name}` is not in a section"));
    let data = section
        .data()
        .unwrap_or_else(|e| panic!("cannot read the section of `{name}`: {e}"));
    let start = usize::try_from(symbol.address() - section.address()).unwrap();
    let end = start + usize::try_from(symbol.size()).unwrap();
    let bytes = data
        .get(start..end)
        .unwrap_or_else(|| panic!("symbol `{name}` lies outside its section"));
    (symbol.address(), bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .enumerate()
        .map(|(row, chunk)| {
            let words: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
            format!("  {:04x}: {}\n", row * 16, words.join(" "))
        })
        .collect()
}

/// `None` when the two functions are the same code; else a description of the difference.
fn compare(file: &object::File<'_>, annotated: &str, twin: &str) -> Option<String> {
    let (a_addr, a) = code(file, annotated);
    let (t_addr, t) = code(file, twin);
    if a_addr == t_addr && a.len() == t.len() {
        println!(
            "  {annotated} == {twin}: folded into one function ({} bytes)",
            a.len()
        );
        return None;
    }
    if a == t {
        println!("  {annotated} == {twin}: {} identical bytes", a.len());
        return None;
    }
    let first = a
        .iter()
        .zip(t)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(t.len()));
    Some(format!(
        "{annotated} ({} bytes at {a_addr:#x}) differs from {twin} ({} bytes at {t_addr:#x}), \
         first at offset {first:#x}\n{annotated}:\n{}{twin}:\n{}",
        a.len(),
        t.len(),
        hex(a),
        hex(t)
    ))
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

fn descriptor_symbols(file: &object::File<'_>) -> Vec<String> {
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter_map(|s| s.name().ok().map(str::to_owned))
        .filter(|name| DESCRIPTOR_SYMBOLS.iter().any(|part| name.contains(part)))
        .collect()
}

fn init_array_size(file: &object::File<'_>) -> u64 {
    file.section_by_name(".init_array").map_or(0, |s| s.size())
}

#[test]
fn disabled_annotated_code_is_identical_to_unannotated_twin() {
    if !supported() {
        return;
    }
    let built = disabled();
    let Some(file) = parse(built) else { return };
    println!("zero_overhead: comparing {}", built.path.display());
    let failures: Vec<String> = PAIRS
        .iter()
        .filter_map(|(annotated, twin)| compare(&file, annotated, twin))
        .collect();
    assert!(
        failures.is_empty(),
        "without `enable`, annotated code differs from the same code without the annotation:\n{}",
        failures.join("\n")
    );
}

/// A parameter or a local used only in a work key (`flops = 2 * n`, a probe's
/// `bytes = 8 * m`) must not be reported unused in either build: a `-D warnings` build of the
/// user's crate would fail. The keys are referenced without being evaluated (the machine code is
/// still the twin's: `annotated_key_only` above). Cargo replays the warnings of a cached build.
#[test]
fn no_warning_for_variables_used_only_in_keys() {
    if !supported() {
        return;
    }
    for built in [disabled(), enabled()] {
        assert!(
            built.warnings.is_empty(),
            "the fixture built with warnings ({}):\n{}",
            built.path.display(),
            built.warnings.join("\n")
        );
    }
}

#[test]
fn disabled_build_registers_no_descriptor() {
    if !supported() {
        return;
    }
    let built = disabled();
    let Some(file) = parse(built) else { return };
    let found: Vec<&str> = MARKERS
        .iter()
        .copied()
        .filter(|marker| contains(&built.bytes, marker))
        .collect();
    assert!(
        found.is_empty(),
        "without `enable`, annotation strings {found:?} made it into {}",
        built.path.display()
    );
    let symbols = descriptor_symbols(&file);
    assert!(
        symbols.is_empty(),
        "without `enable`, descriptor symbols are in the binary: {symbols:?}"
    );
    let sections: Vec<&str> = file
        .sections()
        .filter_map(|s| s.name().ok())
        .filter(|name| {
            let name = name.to_ascii_lowercase();
            ["inventory", "profiler", "zo_marker", "linkme"]
                .iter()
                .any(|part| name.contains(part))
        })
        .collect();
    assert!(
        sections.is_empty(),
        "without `enable`, registration sections are in the binary: {sections:?}"
    );
}

/// Sanity: the same checks see the difference when profiling is compiled in.
#[test]
fn enabled_build_differs_so_the_checks_can_fail() {
    if !supported() {
        return;
    }
    let on = enabled();
    let off = disabled();
    let (Some(on_file), Some(off_file)) = (parse(on), parse(off)) else {
        return;
    };
    let missing: Vec<&str> = MARKERS
        .iter()
        .copied()
        .filter(|marker| !contains(&on.bytes, marker))
        .collect();
    assert!(
        missing.is_empty(),
        "with `enable`, annotation strings {missing:?} are missing from {}: the string check \
         proves nothing",
        on.path.display()
    );
    assert!(
        !descriptor_symbols(&on_file).is_empty(),
        "with `enable`, no descriptor symbol ({DESCRIPTOR_SYMBOLS:?}) in {}: the symbol check \
         proves nothing",
        on.path.display()
    );
    let (on_init, off_init) = (init_array_size(&on_file), init_array_size(&off_file));
    assert!(
        on_init > off_init,
        ".init_array: {on_init} bytes with `enable`, {off_init} without; the registrations \
         should be there"
    );
    let diff = compare(&on_file, "annotated_free", "twin_free");
    assert!(
        diff.is_some(),
        "with `enable`, annotated_free has the same code as twin_free: the comparison proves \
         nothing"
    );
    println!("  with `enable`: annotated_free differs from twin_free, as it should");
}
