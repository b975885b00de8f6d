//! The shape of `prof`'s source, checked: `main.rs` is the command line's top and the dispatch
//! only (under 200 lines); each file of `commands/` defines one command (one `clap::Args`
//! struct and one `pub fn run` taking it), and each command of the `Command` enum is one file
//! of `commands/`; the benchmark of `prof peak` lives in its own crate (`profiler-peak`), not in
//! the report tool. (The module cycles of every crate are checked by profiler-core's
//! `tests/layout.rs`.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The most lines `main.rs` may have.
const MAIN_MAX_LINES: usize = 200;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of `text` outside comments (a line's `//` and what follows it left out), trimmed,
/// blank ones dropped.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The command files: every `.rs` of `commands/` but its `mod.rs`, by module name.
fn command_files() -> Vec<(String, PathBuf)> {
    let dir = src().join("commands");
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "mod.rs"))
        .map(|p| {
            assert!(
                p.extension().is_some_and(|e| e == "rs"),
                "{}: commands/ holds one .rs file per command and nothing else",
                p.display()
            );
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, p)
        })
        .collect();
    files.sort();
    files
}

/// The variants of `enum Command` in `main.rs`, each as (variant, the path it wraps).
fn command_variants(main: &str) -> Vec<(String, String)> {
    let lines = code_lines(main);
    let start = lines
        .iter()
        .position(|l| l.starts_with("enum Command"))
        .expect("main.rs: no `enum Command`");
    lines[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with('}'))
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (variant, rest) = l.split_once('(').unwrap_or_else(|| {
                panic!("main.rs: `{l}` is not a variant `Name(commands::x::XArgs)`")
            });
            let wrapped = rest.trim_end_matches(',').trim_end_matches(')');
            (variant.trim().to_owned(), wrapped.to_owned())
        })
        .collect()
}

/// The shape of one command file, or what is wrong with it.
fn check_command_file(name: &str, text: &str) -> Result<String, String> {
    let lines = code_lines(text);
    let derives = lines
        .iter()
        .filter(|l| l.starts_with("#[derive(") && l.contains("Args"))
        .count();
    if derives != 1 {
        return Err(format!(
            "{name}.rs: {derives} `#[derive(clap::Args)]` structs; a command file defines one \
             command (its flags in one Args struct)"
        ));
    }
    let args = lines
        .iter()
        .find_map(|l| {
            l.strip_prefix("pub struct ")
                .map(|r| r.trim_end_matches(" {").to_owned())
        })
        .ok_or_else(|| format!("{name}.rs: no `pub struct` for the command's flags"))?;
    let runs: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("pub fn run("))
        .collect();
    let wanted = format!("pub fn run(args: {args}) -> Result<ExitCode, Failure> {{");
    if runs.len() != 1 || *runs[0] != wanted {
        return Err(format!(
            "{name}.rs: a command file has one `{wanted}` (found {runs:?})"
        ));
    }
    let public: Vec<&&str> = lines
        .iter()
        .filter(|l| {
            l.starts_with("pub ") && !l.starts_with("pub fn run(") && !l.starts_with("pub struct ")
        })
        .collect();
    if !public.is_empty() {
        return Err(format!(
            "{name}.rs: a command file makes public only its Args struct and its run; shared \
             pieces go to common.rs (found {public:?})"
        ));
    }
    Ok(args)
}

#[test]
fn main_rs_is_the_dispatch_only() {
    let main = read(&src().join("main.rs"));
    let lines = main.lines().count();
    assert!(
        lines < MAIN_MAX_LINES,
        "profiler-cli/src/main.rs has {lines} lines, at most {} allowed: a command's flags and \
         glue go to commands/<command>.rs, what commands share to common.rs",
        MAIN_MAX_LINES - 1
    );
    // No command's glue: the only functions are `run` (the dispatch) and `main`.
    let functions: Vec<&str> = code_lines(&main)
        .into_iter()
        .filter(|l| l.starts_with("fn ") || l.starts_with("pub fn "))
        .collect();
    assert_eq!(
        functions,
        [
            "fn run(cli: Cli) -> Result<ExitCode, Failure> {",
            "fn main() -> ExitCode {"
        ],
        "main.rs holds the dispatch and main only"
    );
}

#[test]
fn each_command_is_one_file_of_commands() {
    let main = read(&src().join("main.rs"));
    let variants = command_variants(&main);
    assert!(
        !variants.is_empty(),
        "main.rs: `enum Command` has no variant"
    );
    let files = command_files();
    let mut used = BTreeSet::new();
    for (variant, wrapped) in &variants {
        let module = variant.to_lowercase();
        let path = files
            .iter()
            .find(|(name, _)| *name == module)
            .map(|(_, p)| p)
            .unwrap_or_else(|| panic!("prof {module}: no commands/{module}.rs"));
        let args = check_command_file(&module, &read(path)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            *wrapped,
            format!("commands::{module}::{args}"),
            "main.rs: the variant {variant} wraps its file's Args struct"
        );
        assert!(
            main.contains(&format!(
                "Command::{variant}(args) => commands::{module}::run(args),"
            )),
            "main.rs: Command::{variant} is dispatched to commands::{module}::run"
        );
        used.insert(module);
    }
    for (name, _) in &files {
        assert!(
            used.contains(name),
            "commands/{name}.rs is no command of main.rs's `enum Command`"
        );
    }
    let declared = read(&src().join("commands").join("mod.rs"));
    for name in &used {
        assert!(
            declared.contains(&format!("pub mod {name};")),
            "commands/mod.rs does not declare {name}"
        );
    }
}

#[test]
fn a_file_with_two_commands_is_refused() {
    let one = "#[derive(clap::Args)]\npub struct XArgs {\n}\n\
               pub fn run(args: XArgs) -> Result<ExitCode, Failure> {\n}\n";
    assert_eq!(check_command_file("x", one), Ok("XArgs".into()));
    let two = format!("{one}#[derive(clap::Args)]\npub struct YArgs {{\n}}\n");
    assert!(check_command_file("x", &two).is_err());
    let shared = format!("{one}pub fn load() {{}}\n");
    assert!(check_command_file("x", &shared).is_err());
    let no_run = "#[derive(clap::Args)]\npub struct XArgs {\n}\n";
    assert!(check_command_file("x", no_run).is_err());
}

#[test]
fn the_peak_benchmark_is_not_in_the_report_tool() {
    let manifest = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    for dependency in ["matrixmultiply", "cudarc", "half"] {
        assert!(
            !code_lines(&manifest.replace('#', "//"))
                .iter()
                .any(|l| l.starts_with(&format!("{dependency} ="))),
            "profiler-cli depends on {dependency}: prof peak's benchmark belongs in profiler-peak"
        );
    }
    assert!(
        !src().join("peak").exists(),
        "profiler-cli/src/peak/: the benchmark belongs in profiler-peak"
    );
}
