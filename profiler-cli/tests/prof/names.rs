//! Names that would act on a terminal: a probe's name, layer, phase or id, or the program's
//! name, holding ESC sequences (clear the screen, colours, the window's title), BEL, a line
//! break. Every text `prof` prints shows them as visible escapes (`\e`, `\u{7}`, `\n`): no raw
//! control character reaches the terminal, and a name with a line break adds no line. CSV and
//! JSON keep the names whole, quoted and escaped by their own rules.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common;
use common::{prof, scratch};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cli")
        .join(name)
}

/// What every name gets: clear the screen, ring the bell, set the window's title, a line break.
const EVIL: &str = "\u{1b}[2J\u{7}\u{1b}]0;pwned\u{7}\n!";

/// [`EVIL`] as it is shown.
const SHOWN: &str = "\\e[2J\\u{7}\\e]0;pwned\\u{7}\\n!";

/// A copy of `source` whose program, and every event's name, id, layer and phase, end with
/// [`EVIL`] (`clean` false), or with `_` (`clean` true: names as long as the evil ones are
/// shown, for comparing the line counts, wrapped lines included).
fn named(dir: &Path, source: &str, clean: bool) -> PathBuf {
    let tail = if clean {
        "_".repeat(SHOWN.chars().count())
    } else {
        EVIL.to_owned()
    };
    let mut v: Value = serde_json::from_slice(&std::fs::read(data(source)).unwrap()).unwrap();
    v["run"]["program"] = format!("train{tail}").into();
    for e in v["events"].as_array_mut().unwrap() {
        for key in ["name", "id", "layer", "phase"] {
            if let Some(s) = e[key].as_str() {
                e[key] = format!("{s}{tail}").into();
            }
        }
    }
    let path = dir.join(format!("{}-{source}", if clean { "clean" } else { "evil" }));
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    path
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Every control character of `text` but its line breaks.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect()
}

/// Runs `prof args` (with `{}` standing for each file in turn: the evil one, then the clean
/// one) and checks that the evil run's stdout and stderr hold no raw control character, show
/// the escapes, and have as many lines as the clean run's.
fn shown_escaped(what: &str, evil: &[&str], clean: &[&str]) {
    let run = |args: &[&str]| -> Output { prof(args) };
    let (e, c) = (run(evil), run(clean));
    assert_eq!(e.status.code(), c.status.code(), "{what}");
    for (stream, evil, clean) in [
        ("stdout", &e.stdout, &c.stdout),
        ("stderr", &e.stderr, &c.stderr),
    ] {
        let evil = String::from_utf8_lossy(evil);
        let clean = String::from_utf8_lossy(clean);
        assert!(
            raw_controls(&evil).is_empty(),
            "{what}, {stream}: raw {:?} in\n{evil}",
            raw_controls(&evil)
        );
        assert_eq!(
            evil.lines().count(),
            clean.lines().count(),
            "{what}, {stream}: a name's line break made a line:\n{evil}"
        );
    }
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&e.stdout),
        String::from_utf8_lossy(&e.stderr)
    );
    // Markdown escapes the bracket too (`\[`: a renderer shows `[`, and makes no link).
    assert!(
        all.contains("\\e[2J\\u{7}") || all.contains("\\e\\[2J\\u{7}"),
        "{what}: no escape shown:\n{all}"
    );
}

#[test]
fn reports_diffs_merges_scalings_and_flames_show_control_characters_as_escapes() {
    let dir = scratch("names");
    let (evil, clean) = (
        named(&dir, "batch32.json", false),
        named(&dir, "batch32.json", true),
    );
    let (evil64, clean64) = (
        named(&dir, "batch64.json", false),
        named(&dir, "batch64.json", true),
    );
    let (evil_c, clean_c) = (
        named(&dir, "continuous.json", false),
        named(&dir, "continuous.json", true),
    );
    // A slower copy: the diff names what regressed in a sentence.
    let slow = |file: &Path| {
        let out = dir.join(format!(
            "slow-{}",
            file.file_name().unwrap().to_str().unwrap()
        ));
        let v: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        let target = v["events"][0]["name"].as_str().unwrap().to_owned();
        common::slowed_copy(file, &target, 1.5, &out);
        out
    };
    let (evil_slow, clean_slow) = (slow(&evil), slow(&clean));
    for format in ["table", "markdown"] {
        for extra in [
            &[][..],
            &["--group-by", "layer,phase"][..],
            &["--sort", "median"][..],
        ] {
            let args = |f: &Path| {
                let mut a = vec![
                    "report".to_owned(),
                    p(f).to_owned(),
                    "--format".into(),
                    format.into(),
                ];
                a.extend(extra.iter().map(|s| s.to_string()));
                a
            };
            let (e, c) = (args(&evil), args(&clean));
            let e: Vec<&str> = e.iter().map(String::as_str).collect();
            let c: Vec<&str> = c.iter().map(String::as_str).collect();
            shown_escaped(&format!("report {format} {extra:?}"), &e, &c);
        }
        shown_escaped(
            &format!("report continuous {format}"),
            &["report", p(&evil_c), "--format", format],
            &["report", p(&clean_c), "--format", format],
        );
        shown_escaped(
            &format!("diff {format}"),
            &["diff", p(&evil), p(&evil_slow), "--format", format],
            &["diff", p(&clean), p(&clean_slow), "--format", format],
        );
        shown_escaped(
            &format!("merge {format}"),
            &["merge", p(&evil), p(&evil_slow), "--format", format],
            &["merge", p(&clean), p(&clean_slow), "--format", format],
        );
        shown_escaped(
            &format!("scale {format}"),
            &[
                "scale",
                p(&evil),
                p(&evil64),
                "--param",
                "batch=32,64",
                "--format",
                format,
            ],
            &[
                "scale",
                p(&clean),
                p(&clean64),
                "--param",
                "batch=32,64",
                "--format",
                format,
            ],
        );
    }
    let svg = dir.join("f.svg");
    shown_escaped(
        "flame",
        &["flame", p(&evil), "-o", p(&svg)],
        &["flame", p(&clean), "-o", p(&svg)],
    );
}

#[test]
fn watch_shows_control_characters_as_escapes() {
    let dir = scratch("names-watch");
    for source in ["batch32.json", "continuous.json"] {
        let (evil, clean) = (named(&dir, source, false), named(&dir, source, true));
        shown_escaped(
            &format!("watch --once {source}"),
            &["watch", "--once", p(&evil)],
            &["watch", "--once", p(&clean)],
        );
    }
}

/// An error message that quotes a name (a profile whose events do not add up) shows it escaped.
#[test]
fn error_messages_show_control_characters_as_escapes() {
    let dir = scratch("names-error");
    let evil = named(&dir, "batch32.json", false);
    let mut v: Value = serde_json::from_slice(&std::fs::read(&evil).unwrap()).unwrap();
    v["events"][1]["parent"] = 1.into();
    let broken = dir.join("broken.json");
    std::fs::write(&broken, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = prof(&["report", p(&broken)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(raw_controls(&err).is_empty(), "{err}");
}

/// CSV keeps names whole: a field with a line break is quoted, so every row still parses to
/// the header's number of fields; JSON escapes control characters itself.
#[test]
fn csv_and_json_keep_names_whole() {
    let dir = scratch("names-csv");
    let evil = named(&dir, "batch32.json", false);
    let out = prof(&["report", p(&evil), "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows = csv_rows(&text);
    assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{text}");
    assert!(
        rows.iter().any(|r| r.iter().any(|f| f.ends_with(EVIL))),
        "{text}"
    );
    let out = prof(&["report", p(&evil), "--format", "json"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(raw_controls(&text).is_empty());
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v["events"][0]["name"].as_str().unwrap().ends_with(EVIL));
}

/// The fields of each row of `text` (RFC 4180: quoted fields may hold commas, quotes as `""`,
/// line breaks).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let (mut row, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (c, _) => field.push(c),
        }
    }
    rows
}
