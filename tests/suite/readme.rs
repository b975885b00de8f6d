//! The README held to the program: its first profile is what the `dlrm` example prints today
//! (the summary's header line, its columns, each row's shape, the legend and the last line, on
//! a shorter run made as `tests/common` makes every end-to-end run), and its first screen gives
//! the two set-up commands, the second of which `.ci/run` runs.
#![cfg(feature = "enable")]

use std::path::Path;

use crate::common;
use common::{run, scratch, stderr};

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of the README's first fenced block of the given language (```` ```text ````).
fn first_block<'a>(text: &'a str, lang: &str) -> (usize, Vec<&'a str>) {
    let fence = format!("```{lang}");
    let mut lines = text.lines().enumerate();
    let (start, _) = lines
        .find(|(_, l)| l.trim_end() == fence)
        .unwrap_or_else(|| panic!("README.md has no {fence} block"));
    let body = lines
        .map(|(_, l)| l)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    (start + 1, body)
}

/// The line of `lines` that starts with `prefix` (after indentation), if any.
fn line_with<'a>(lines: &[&'a str], prefix: &str) -> Option<&'a str> {
    lines
        .iter()
        .copied()
        .find(|l| l.trim_start().starts_with(prefix))
}

/// The line with the summary's columns: the one after its header line.
fn columns<'a>(lines: &[&'a str]) -> Option<&'a str> {
    let at = lines
        .iter()
        .position(|l| l.starts_with("profiler-core: "))?;
    lines.get(at + 1).copied()
}

/// `text` with every number (and the time unit right after it) replaced by `#`, so that two
/// runs' lines compare by their words: `1260 iterations (10 warmup), median 453.4µs` ->
/// `# iterations (# warmup), median #`.
fn shape(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
            i += 1;
        }
        let rest: String = chars[i..].iter().take(3).collect();
        for unit in ["ns", "µs", "ms", "s"] {
            let after = chars.get(i + unit.chars().count());
            if rest.starts_with(unit) && !after.is_some_and(|c| c.is_alphabetic()) {
                i += unit.chars().count();
                break;
            }
        }
        out.push('#');
    }
    out
}

/// The words of a line, if there is one.
fn words(line: Option<&str>) -> Option<Vec<&str>> {
    line.map(|l| l.split_whitespace().collect())
}

#[test]
fn the_first_profile_in_the_readme_is_what_the_example_prints() {
    let text = readme();
    let (at, sample) = first_block(&text, "text");
    let dir = scratch("readme");
    let out = run(&dir, &[], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stderr(&out);
    // A build with `cuda` on a machine without a driver says so first; the README shows the
    // CPU build.
    let printed: Vec<&str> = printed
        .lines()
        .filter(|l| !l.starts_with("profiler-core: no CUDA driver"))
        .collect();
    let context = format!(
        "README.md's first profile (line {at}) and what `dlrm` prints now disagree; run \
         `cargo run --release --example dlrm` and paste its summary.\nprinted:\n{}",
        printed.join("\n")
    );

    let header = |lines: &[&str]| line_with(lines, "profiler-core: ").map(shape);
    assert!(header(&sample).is_some(), "no header line\n{context}");
    assert_eq!(header(&sample), header(&printed), "header line\n{context}");

    let (readme_columns, printed_columns) = (words(columns(&sample)), words(columns(&printed)));
    assert!(readme_columns.is_some(), "no column headers\n{context}");
    assert_eq!(readme_columns, printed_columns, "column headers\n{context}");

    // Each row the README shows has a cell per column (and `!` when noisy).
    let n = readme_columns.unwrap().len();
    let header_at = sample
        .iter()
        .position(|l| l.starts_with("profiler-core: "))
        .unwrap();
    for row in sample[header_at + 2..]
        .iter()
        .take_while(|l| !l.trim_start().starts_with("share = "))
        .filter(|l| l.trim() != "...")
    {
        let cells = row.split_whitespace().count();
        let noisy = row.trim_end().ends_with(" !");
        assert_eq!(
            cells,
            n + usize::from(noisy),
            "row `{row}` has {cells} cells for {n} columns\n{context}"
        );
    }

    for prefix in ["share = ", "results in "] {
        assert!(
            line_with(&sample, prefix).is_some(),
            "no `{prefix}` line\n{context}"
        );
        assert_eq!(
            line_with(&sample, prefix).map(shape),
            line_with(&printed, prefix).map(shape),
            "the `{prefix}` line\n{context}"
        );
    }
}

#[test]
fn the_first_screen_gives_the_two_commands_and_ci_runs_the_test_command() {
    let text = readme();
    let (at, commands) = first_block(&text, "sh");
    assert!(
        at <= 20,
        "the set-up commands start on line {at}, past the first screen"
    );
    let commands: Vec<&str> = commands
        .iter()
        .map(|l| l.split(" #").next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        commands,
        [
            "cargo run --release --example dlrm",
            "cargo test --workspace"
        ],
        "README.md's first commands"
    );
    let ci_path = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run");
    let ci = std::fs::read_to_string(&ci_path).unwrap();
    assert!(
        ci.lines()
            .any(|l| l.trim() == format!("tests {}", commands[1])),
        ".ci/run must run the README's test command `{}` as it is",
        commands[1]
    );
}
