//! `scripts/peers_table.py` keeps each run of the peers bench in view (issue 43): besides the
//! table of the runs' medians, a table of every run's own raw clock pair, armed, `trace` and
//! unarmed medians with their ratios, when it ran, at which commit and under which load (the
//! first line `scripts/peers.sh` writes), and how many runs kept the armed probe within 1.2x the
//! raw pair. Checked on three saved runs (`tests/data/peers/`): one within the bound, one far
//! past it, one saved without the script's first line.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn runs() -> Vec<PathBuf> {
    (1..=3)
        .map(|i| root().join(format!("tests/data/peers/run-{i}.txt")))
        .collect()
}

/// The script's output on `runs`, or `None` where there is no `python3` to run it.
fn table(runs: &[PathBuf]) -> Option<String> {
    let out = match Command::new("python3")
        .arg(root().join("scripts/peers_table.py"))
        .args(runs)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            println!("peers_table.py check skipped: no python3 ({e})");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "peers_table.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("the tables are UTF-8"))
}

#[test]
fn each_run_is_shown_with_its_date_commit_load_and_ratios() {
    let Some(text) = table(&runs()) else { return };
    for row in [
        "| 1/3 | 2026-11-28 04:20 UTC | abc1234 | 9.81 | 28.8 ns | 31.1 ns (1.08×) \
         | 29.0 ns (1.01×) | 1.60 ns (1.00×) |",
        "| 2/3 | 2026-11-28 04:21 UTC | abc1234+changes | 0.12 | 19.2 ns | 32.6 ns (1.70×) \
         | 22.2 ns (1.16×) | 1.61 ns (1.01×) |",
        // Saved without the script's first line: what it does not say is a dash.
        "| - | - | - | - | 28.2 ns | 33.5 ns (1.19×) | 28.4 ns (1.01×) | 1.60 ns (1.00×) |",
    ] {
        assert!(text.lines().any(|l| l == row), "no row\n{row}\nin\n{text}");
    }
    assert!(
        text.contains(
            "armed probe within 1.2× the raw clock pair in 2 of 3 runs; `trace` mode within \
             1.2× the raw clock pair in 3 of 3 runs."
        ),
        "{text}"
    );
}

#[test]
fn the_table_of_medians_is_still_first() {
    let Some(text) = table(&runs()) else { return };
    let first = text.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "| case | median ns (3 runs) | range of the runs' medians | × raw clock pair | × puffin |"
    );
    assert!(
        text.lines().any(|l| {
            l
            == "| **profiler-core, armed probe** (`sample` mode) | 32.6 | 31.1–33.5 | 1.19 | 0.28 |"
        }),
        "{text}"
    );
}
