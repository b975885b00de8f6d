//! The documentation held to `prof` itself:
//!
//! - every command `prof --help` lists, and every option, value and default each
//!   `prof <command> -h` prints, is in `docs/reference.md`, in that command's section, whose
//!   usage line is clap's;
//! - every `prof` command line in a `sh` block of the README or of `docs/` runs: the files it
//!   names are replaced by the fixtures of `tests/data/cli/` (the fixture of the same name when
//!   there is one, else the next of a fixed list), its outputs (`-o`) go to a scratch folder,
//!   and it must exit 0 (or 1 with `--fail-on-regression`); every command appears in one;
//! - every link between these pages leads to a file that exists and a heading it has.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;
use common::{prof, scratch};

/// The pages of the documentation, from the repository's root.
const PAGES: [&str; 5] = [
    "README.md",
    "docs/guide.md",
    "docs/reference.md",
    "docs/overhead.md",
    "docs/architecture.md",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(page: &str) -> String {
    let path = root().join(page);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The entries of a help text's section (`Commands:`, `Options:`), up to the next blank line,
/// one per command or option: a line indented deeper than the section's first that does not
/// start a new option (`--...` at most 4 columns deeper) continues the entry before it (clap
/// wraps long help when the build has its `wrap_help` feature, which another crate of the
/// workspace may turn on).
fn section(help: &str, title: &str) -> Vec<String> {
    let lines: Vec<&str> = help
        .lines()
        .skip_while(|l| l.trim_end() != title)
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let first = lines.first().map_or(0, |l| indent(l));
    let mut entries: Vec<String> = Vec::new();
    for line in lines {
        match entries.last_mut() {
            // An option without a short form (`      --seconds`) sits 4 columns deeper than one
            // with (`  -o, --output`); deeper still, a line is wrapped text, even when it starts
            // with `--` (`--device cuda ...` in a command's summary).
            Some(last)
                if indent(line) > first
                    && (!line.trim_start().starts_with('-') || indent(line) > first + 4) =>
            {
                last.push(' ');
                last.push_str(line.trim());
            }
            _ => entries.push(line.to_owned()),
        }
    }
    entries
}

/// The text between `...` brackets that start with `key` in a help line: `[default: 2%]`.
fn bracket(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("[{key}: "))? + key.len() + 3;
    let end = start + line[start..].find(']')?;
    Some(line[start..end].to_owned())
}

/// One option as `prof <command> -h` prints it.
#[derive(Debug)]
struct Opt {
    short: Option<String>,
    long: String,
    values: Vec<String>,
    default: Option<String>,
}

fn options(help: &str) -> Vec<Opt> {
    section(help, "Options:")
        .into_iter()
        .map(|line| {
            let flags = line.split("  ").find(|s| !s.is_empty()).unwrap().trim();
            let short = flags
                .strip_prefix('-')
                .filter(|s| !s.starts_with('-'))
                .map(|s| format!("-{}", &s[..1]));
            let at = line.find("--").expect("an option without a long form");
            let long: String = line[at..]
                .chars()
                .take_while(|c| *c == '-' || c.is_ascii_alphanumeric())
                .collect();
            let values = bracket(&line, "possible values")
                .map(|v| v.split(", ").map(str::to_owned).collect())
                .unwrap_or_default();
            Opt {
                short,
                long,
                values,
                default: bracket(&line, "default"),
            }
        })
        .collect()
}

/// The commands `prof --help` lists, `help` left out.
fn commands() -> Vec<String> {
    let help = stdout_of(&prof(&["--help"]));
    let commands: Vec<String> = section(&help, "Commands:")
        .into_iter()
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 6, "too few commands in:\n{help}");
    commands
}

/// The text of the Markdown section whose heading line is `heading`, to the next heading of
/// the same or a higher level.
fn md_section<'a>(text: &'a str, heading: &str) -> Option<&'a str> {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let start = text.find(&format!("\n{heading}\n"))? + 1;
    let body = &text[start + heading.len()..];
    let end = body
        .match_indices("\n#")
        .find(|(i, _)| {
            let hashes = body[i + 1..].chars().take_while(|c| *c == '#').count();
            hashes <= level && body[i + 1 + hashes..].starts_with(' ')
        })
        .map_or(body.len(), |(i, _)| i);
    Some(&body[..end])
}

#[test]
fn the_reference_gives_every_command_option_value_and_default() {
    let reference = read("docs/reference.md");
    let top = md_section(&reference, "## prof").expect("docs/reference.md has no `## prof`");
    let top_help = stdout_of(&prof(&["--help"]));
    let mut missing = Vec::new();
    for opt in options(&top_help) {
        if !top.contains(&format!("`{}`", opt.long)) {
            missing.push(format!("prof {} (in `## prof`)", opt.long));
        }
    }
    for command in commands() {
        if !top.contains(&format!("`prof {command}")) {
            missing.push(format!("prof {command} in the table of `## prof`"));
        }
        let heading = format!("### `prof {command}`");
        let Some(text) = md_section(&reference, &heading) else {
            missing.push(format!("the section {heading}"));
            continue;
        };
        let help = stdout_of(&prof(&[&command, "-h"]));
        let usage = help
            .lines()
            .find_map(|l| l.strip_prefix("Usage: "))
            .unwrap();
        if !text.contains(&format!("\n{usage}\n")) {
            missing.push(format!("{heading}: the usage line `{usage}`"));
        }
        for opt in options(&help) {
            let mut wanted: Vec<String> = vec![opt.long.clone()];
            wanted.extend(opt.short.clone());
            wanted.extend(opt.values.iter().cloned());
            wanted.extend(opt.default.clone());
            for word in wanted {
                if !text.contains(&format!("`{word}`")) {
                    missing.push(format!("{heading}: `{word}` ({})", opt.long));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/reference.md does not give what `prof --help` says:\n  {}",
        missing.join("\n  ")
    );
}

/// The fenced blocks of `lang` in `text`, each as (line of its first line, its lines).
fn blocks<'a>(text: &'a str, lang: &str) -> Vec<(usize, Vec<&'a str>)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut current, fence) {
            (None, Some(tag)) if tag.trim() == lang => current = Some((i + 2, Vec::new())),
            (Some(_), Some(_)) => out.push(current.take().unwrap()),
            (Some((_, lines)), None) => lines.push(line),
            _ => {}
        }
    }
    out
}

/// A shell line split into words as `sh` would (quotes, backslashes), up to a comment, a pipe
/// or a redirection.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    let mut quote = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, '\\') => word.get_or_insert_with(String::new).extend(chars.next()),
            (None, '#') if word.is_none() => break,
            (None, '|' | '>' | '<' | ';' | '&') if word.is_none() => break,
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    out
}

/// The arguments given to `prof` by a command line, if it runs `prof`: `prof ARGS` or
/// `cargo run ... -p profiler-cli ... -- ARGS`, after any `VAR=value` assignments.
fn prof_args(words: &[String]) -> Option<Vec<String>> {
    let words: Vec<&String> = words.iter().skip_while(|w| w.contains('=')).collect();
    match words.first()?.as_str() {
        "prof" => Some(words[1..].iter().map(|w| w.to_string()).collect()),
        "cargo" if words.get(1).is_some_and(|w| *w == "run") => {
            let package = words
                .windows(2)
                .any(|w| w[0] == "-p" && w[1] == "profiler-cli");
            let dashes = words.iter().position(|w| *w == "--")?;
            package.then(|| words[dashes + 1..].iter().map(|w| w.to_string()).collect())
        }
        _ => None,
    }
}

/// `args` with the files it reads replaced by fixtures, and those it writes by paths in `out`.
fn substituted(args: &[String], out: &Path) -> Vec<String> {
    const ROTATION: [&str; 4] = [
        "batch32.json",
        "batch32-rerun.json",
        "batch64.json",
        "rank1.json",
    ];
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cli");
    let mut next = 0;
    let mut result = Vec::new();
    let mut writes = false;
    let mut previous = "";
    let whatif = args.first().is_some_and(|c| c == "whatif");
    for arg in args {
        // `prof whatif`'s program: one that copies a profile with `run.delay` to its PROF_OUT,
        // the delayed one when PROF_DELAY is not 0 (its iterations 0.5 ms longer for 1 ms of
        // delay).
        if whatif && arg == "--" {
            let script = format!(
                "if [ \"$PROF_DELAY\" = 0 ]; then cp {} \"$PROF_OUT\"; else cp {} \"$PROF_OUT\"; fi",
                data.join("whatif-base.json").display(),
                data.join("whatif-delayed.json").display()
            );
            // Its runs go to the scratch folder, not to `prof-whatif` here.
            if !args.iter().any(|a| a == "--dir") {
                result.extend([
                    "--dir".to_owned(),
                    out.join("whatif-runs").display().to_string(),
                ]);
            }
            result.extend(["--".to_owned(), "sh".to_owned(), "-c".to_owned(), script]);
            break;
        }
        if whatif && previous == "--dir" {
            result.push(out.join("whatif-runs").display().to_string());
            previous = arg;
            continue;
        }
        let name = Path::new(arg).file_name().map(|n| n.to_string_lossy());
        // `prof ab`'s commands: one that copies a fixture to the PROF_OUT it is given, so that
        // the runner's line runs here; its folder of runs: the scratch folder.
        let ab = args.first().is_some_and(|c| c == "ab");
        let replaced = if ab && (previous == "--before" || previous == "--after") {
            format!(
                "sh -c 'cp {} \"$PROF_OUT\"'",
                data.join("batch32.json").display()
            )
        } else if ab && previous == "--dir" {
            out.join("ab-runs").display().to_string()
        } else if writes {
            out.join(name.unwrap().as_ref()).display().to_string()
        } else if !arg.starts_with('-') && arg.ends_with(".json") {
            let own = data.join(name.unwrap().as_ref());
            // The commands that read CPU samples get the profile that has them.
            let cpu =
                args.first().is_some_and(|c| c == "pprof") || args.iter().any(|a| a == "--cpu");
            let fixture = if own.is_file() {
                own
            } else if cpu {
                data.join("sampled.json")
            } else {
                next += 1;
                data.join(ROTATION[(next - 1) % ROTATION.len()])
            };
            fixture.display().to_string()
        } else {
            arg.clone()
        };
        // `prof trigger --control FILE` writes its request there.
        writes = arg == "-o" || arg == "--output" || arg == "--control";
        previous = arg;
        result.push(replaced);
    }
    // Its runs go to the scratch folder, not to `prof-ab` in the package's folder.
    if args.first().is_some_and(|c| c == "ab") && !args.iter().any(|a| a == "--dir") {
        result.extend([
            "--dir".to_owned(),
            out.join("ab-runs").display().to_string(),
        ]);
    }
    result
}

#[test]
fn every_prof_command_line_in_the_docs_runs() {
    let out = scratch("docs");
    let mut ran = Vec::new();
    let mut failures = Vec::new();
    for page in PAGES {
        let text = read(page);
        for (start, lines) in blocks(&text, "sh") {
            // Continuation lines (`\` at the end) make one command.
            let mut line = String::new();
            for (i, part) in lines.iter().enumerate() {
                if let Some(head) = part.trim_end().strip_suffix('\\') {
                    line.push_str(head);
                    line.push(' ');
                    continue;
                }
                line.push_str(part);
                let command = std::mem::take(&mut line);
                let Some(args) = prof_args(&words(&command)) else {
                    continue;
                };
                let run = substituted(&args, &out);
                let result = prof(&run.iter().map(String::as_str).collect::<Vec<_>>());
                let code = result.status.code();
                let allowed = if args.iter().any(|a| a == "--fail-on-regression") {
                    [Some(0), Some(1), Some(3)].contains(&code)
                } else {
                    code == Some(0)
                };
                if !allowed {
                    failures.push(format!(
                        "{page}:{}: `prof {}` exited {code:?}: {}",
                        start + i,
                        args.join(" "),
                        String::from_utf8_lossy(&result.stderr).trim()
                    ));
                }
                ran.push(args);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let shown: BTreeSet<&str> = ran
        .iter()
        .filter_map(|a| a.first().map(String::as_str))
        .collect();
    for command in commands() {
        assert!(
            shown.contains(command.as_str()),
            "no `sh` block of the docs shows `prof {command}` (commands shown: {shown:?})"
        );
    }
}

/// The anchor GitHub gives a heading: lower case, spaces to `-`, punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown page's headings (outside code blocks), `-1`, `-2`... for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        if fenced || !heading.trim_start_matches('#').starts_with(' ') {
            continue;
        }
        let base = slug(heading.trim_start_matches('#'));
        let mut anchor = base.clone();
        let mut n = 0;
        while !seen.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
    }
    seen
}

/// The targets of the inline links `[text](target)` of a page, outside code, with their line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_link_between_the_pages_leads_somewhere() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in PAGES {
        let text = read(page);
        let dir = Path::new(page).parent().unwrap();
        for (line, target) in links(&text) {
            if target.contains("://") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                root().join(page)
            } else {
                root().join(dir).join(file)
            };
            checked += 1;
            if !path.exists() {
                broken.push(format!("{page}:{line}: {target}: no such file"));
                continue;
            }
            if anchor.is_empty() || path.is_dir() {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            if !anchors(&text).contains(anchor) {
                broken.push(format!("{page}:{line}: {target}: no such heading"));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Beside MFU, the guide and the reference say that `prof peak` measures every core (a
/// single-threaded event reaches at most 1/cores of that peak) and how to measure one core's;
/// and no page calls lscpu's total L2 a core's.
#[test]
fn mfu_is_said_to_be_judged_against_every_core() {
    for page in ["docs/guide.md", "docs/reference.md"] {
        let text = read(page);
        let at = text
            .find("1/cores")
            .unwrap_or_else(|| panic!("{page}: no 1/cores"));
        let near = &text[at.saturating_sub(600)..(at + 600).min(text.len())];
        assert!(near.contains("MFU"), "{page}: 1/cores is not beside MFU");
        assert!(
            near.contains("--threads 1"),
            "{page}: no --threads 1 beside it"
        );
    }
    for page in PAGES {
        assert!(!read(page).contains("2 MiB of L2 per core"), "{page}");
    }
}
