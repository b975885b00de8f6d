//! The `PROF_FILTER` expression language.
//!
//! A filter is parsed once at start-up and applied once per probe descriptor, so this module
//! favours clear code and precise error messages over speed. Grammar (whitespace is allowed
//! between tokens):
//!
//! ```text
//! expr  := and ('|' and)*
//! and   := unary ('&' unary)*
//! unary := '!' unary | '(' expr ')' | key ('=' | '!=') value
//! key   := name | id | layer | phase | kind | module | file
//! value := one or more of [A-Za-z0-9_.:/-*], where '*' matches any run of characters
//! ```
//!
//! `key=value` never matches a probe that lacks the field; `key!=value` is its negation, so it
//! always matches such a probe. Matching is case-sensitive and covers the whole field.

use std::fmt;
use std::str::FromStr;

use crate::write::shorten;

mod parse;
pub use parse::nearest;

use parse::Parser;

/// A field of a probe descriptor that a filter can test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// The probe's name (`name`).
    Name,
    /// The probe's unique id (`id`).
    Id,
    /// The layer the probe belongs to (`layer`); may be absent.
    Layer,
    /// The phase the probe belongs to (`phase`); may be absent.
    Phase,
    /// What kind of annotation registered the probe, `fn` or `probe` (`kind`).
    Kind,
    /// The module path of the annotation (`module`).
    Module,
    /// The source file of the annotation (`file`).
    File,
}

impl Key {
    /// Every key, in the order the grammar lists them.
    pub const ALL: [Key; 7] = [
        Key::Name,
        Key::Id,
        Key::Layer,
        Key::Phase,
        Key::Kind,
        Key::Module,
        Key::File,
    ];

    /// The key as it is written in a filter: `"name"`, `"id"`, `"layer"`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Key::Name => "name",
            Key::Id => "id",
            Key::Layer => "layer",
            Key::Phase => "phase",
            Key::Kind => "kind",
            Key::Module => "module",
            Key::File => "file",
        }
    }

    fn from_word(word: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.as_str() == word)
    }
}

/// The syntax tree of a non-empty filter.
#[derive(Clone, Debug)]
enum Node {
    /// Matches when any child matches (`|`).
    Any(Vec<Node>),
    /// Matches when every child matches (`&`).
    All(Vec<Node>),
    /// Matches when the child does not (`!`).
    Not(Box<Node>),
    /// `key=pattern`, or `key!=pattern` when `negated`.
    Test {
        key: Key,
        negated: bool,
        pattern: String,
    },
}

impl Node {
    /// Whether some test in this tree satisfies `pred(key, negated, pattern)`.
    fn any_test(&self, pred: &dyn Fn(Key, bool, &str) -> bool) -> bool {
        match self {
            Node::Any(children) | Node::All(children) => children.iter().any(|c| c.any_test(pred)),
            Node::Not(child) => child.any_test(pred),
            Node::Test {
                key,
                negated,
                pattern,
            } => pred(*key, *negated, pattern),
        }
    }

    fn eval<'a, F: Fn(Key) -> Option<&'a str>>(&self, field: &F) -> bool {
        match self {
            Node::Any(children) => children.iter().any(|c| c.eval(field)),
            Node::All(children) => children.iter().all(|c| c.eval(field)),
            Node::Not(child) => !child.eval(field),
            Node::Test {
                key,
                negated,
                pattern,
            } => {
                let hit = field(*key).is_some_and(|value| glob_match(pattern, value));
                hit != *negated
            }
        }
    }
}

/// A parsed `PROF_FILTER` expression.
#[derive(Clone, Debug)]
pub struct Filter {
    source: String,
    /// `None` for the filter that selects everything.
    root: Option<Node>,
}

impl Filter {
    /// Parses a filter expression. Empty or whitespace-only input selects every probe.
    pub fn parse(input: &str) -> Result<Filter, FilterError> {
        let root = if input.trim().is_empty() {
            None
        } else {
            Some(Parser::new(input).parse()?)
        };
        Ok(Filter {
            source: input.to_owned(),
            root,
        })
    }

    /// The filter that selects every probe (what empty input parses to).
    pub fn all() -> Filter {
        Filter {
            source: String::new(),
            root: None,
        }
    }

    /// Whether this filter selects every probe because its input was empty or whitespace only.
    pub fn selects_all(&self) -> bool {
        self.root.is_none()
    }

    /// The input the filter was parsed from, as given.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the filter tests `key` anywhere (`key=...` or `key!=...`).
    pub fn mentions(&self, key: Key) -> bool {
        self.root
            .as_ref()
            .is_some_and(|root| root.any_test(&|k, _, _| k == key))
    }

    /// Whether some `key=pattern` test (not `key!=`) accepts `value`: the filter asks for it.
    pub fn asks_for(&self, key: Key, value: &str) -> bool {
        self.root.as_ref().is_some_and(|root| {
            root.any_test(&|k, negated, pattern| k == key && !negated && glob_match(pattern, value))
        })
    }

    /// Whether the filter selects a probe. `field(key)` returns the probe's value for that key,
    /// `None` when the probe lacks the field.
    pub fn matches<'a>(&self, field: impl Fn(Key) -> Option<&'a str>) -> bool {
        match &self.root {
            None => true,
            Some(root) => root.eval(&field),
        }
    }

    /// Whether the filter could select a probe some of whose keys (`unknown`) are not known yet,
    /// as a `tracing` span's `layer` and `phase` before its fields are read: it selects the
    /// probe with those keys absent, or it tests one of them (a value could then satisfy it).
    /// `known(key)` gives the other keys as [`matches`](Self::matches) takes them.
    pub fn could_select<'a>(
        &self,
        known: impl Fn(Key) -> Option<&'a str>,
        unknown: &[Key],
    ) -> bool {
        self.matches(|k| if unknown.contains(&k) { None } else { known(k) })
            || unknown.iter().any(|&k| self.mentions(k))
    }
}

impl FromStr for Filter {
    type Err = FilterError;

    /// Same as [`Filter::parse`].
    fn from_str(s: &str) -> Result<Filter, FilterError> {
        Filter::parse(s)
    }
}

/// Why a filter did not parse, with the position of the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    /// The input that failed to parse.
    pub input: String,
    /// 1-based column, counted in characters (not bytes), of the first offending character;
    /// `input.chars().count() + 1` when the problem is an unexpected end of input.
    pub column: usize,
    /// How many characters the caret underline should span (>= 1).
    pub width: usize,
    /// What is wrong, e.g. "unknown key `layr`".
    pub problem: String,
    /// What was expected there, e.g. "one of the keys: name, id, layer, phase, kind, module, file".
    pub expected: String,
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render_error(
            "PROF_FILTER",
            &self.input,
            self.column,
            self.width,
            &self.problem,
            &self.expected,
        ))
    }
}

impl std::error::Error for FilterError {}

/// Renders an error about an environment variable's value the way a compiler would:
///
/// ```text
/// error: invalid PROF_FILTER at column 1: unknown key `layr`
///   |
///   | layr=mlp
///   | ^^^^ expected one of the keys: name, id, layer, phase, kind, module, file
/// ```
///
/// `column` (1-based) and `width` count characters, not bytes. Control characters in `input`
/// are shown as one space each, and the carets are placed by display width (a CJK character or
/// an emoji takes two columns), so that they stay under the offending characters. A long input
/// is shown as a window of about [`SHOWN_CHARS`] characters around the column, with `…` where it
/// is cut; a long `problem` is cut the same way. A column of 0 is treated as 1 and a width of 0
/// as 1. The result has no trailing newline.
pub fn render_error(
    var: &str,
    input: &str,
    column: usize,
    width: usize,
    problem: &str,
    expected: &str,
) -> String {
    use unicode_width::UnicodeWidthChar;
    let chars: Vec<char> = input
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let at = (column.max(1) - 1).min(chars.len());
    let (lo, hi) = if chars.len() <= SHOWN_CHARS {
        (0, chars.len())
    } else {
        let lo = at.saturating_sub(SHOWN_CHARS / 3);
        let hi = (lo + SHOWN_CHARS).min(chars.len());
        (hi.saturating_sub(SHOWN_CHARS).min(lo), hi)
    };
    let cols = |cs: &[char]| -> usize { cs.iter().map(|c| c.width().unwrap_or(0)).sum() };
    let mut shown = String::new();
    let mut pad = 0;
    if lo > 0 {
        shown.push('…');
        pad += 1;
    }
    shown.extend(&chars[lo..hi]);
    if hi < chars.len() {
        shown.push('…');
    }
    pad += cols(&chars[lo..at]);
    let end = (at + width.max(1)).min(hi);
    let carets = cols(&chars[at.min(end)..end]).max(1);
    let mut out = format!(
        "error: invalid {var} at column {column}: {}\n  |\n",
        shorten(problem, SHOWN_CHARS)
    );
    out.push_str(format!("  | {shown}").trim_end());
    out.push_str(&format!("\n  | {}{}", " ".repeat(pad), "^".repeat(carets)));
    if !expected.is_empty() {
        out.push_str(" expected ");
        out.push_str(expected);
    }
    out
}

/// About how many characters of a value an error message shows.
pub const SHOWN_CHARS: usize = 120;

/// Whole-string glob match where `*` in `pattern` matches any run of characters (including
/// none) and every other character matches itself.
///
/// Iterative, with a single backtrack point (the latest `*`), so the worst case is
/// O(pattern × text) rather than exponential. It works on bytes: since both strings are valid
/// UTF-8, a literal can only match at character boundaries, which makes the result the same as
/// a character-wise match.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p = pattern.as_bytes();
    let t = text.as_bytes();
    let (mut pi, mut ti) = (0, 0);
    // Pattern index just after the latest `*`, and the text index that star's run ends at.
    let mut backtrack: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            pi += 1;
            backtrack = Some((pi, ti));
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((star_pi, star_ti)) = backtrack {
            // Let the latest star swallow one more character and retry from there.
            pi = star_pi;
            ti = star_ti + 1;
            backtrack = Some((star_pi, ti));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests;
