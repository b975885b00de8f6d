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

use profiler_format::write::shorten;

/// The deepest nesting of `(` and `!` a filter may use; deeper input is rejected (this bounds
/// the recursion of the parser and of the evaluator).
const MAX_DEPTH: usize = 64;

const KEYS_EXPECTED: &str = "one of the keys: name, id, layer, phase, kind, module, file";
const TERM_EXPECTED: &str = "a key (name, id, layer, phase, kind, module, file), `!` or `(`";
const OP_EXPECTED: &str = "`=` or `!=`";
const VALUE_EXPECTED: &str =
    "a value made of ASCII letters, digits, `_`, `.`, `:`, `/`, `-` and `*` (any run of characters)";
const VALUE_CHARS: &str = "a value character (ASCII letter, digit, `_`, `.`, `:`, `/`, `-` or `*`)";

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

fn is_value_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-' | '*')
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_operator_char(c: char) -> bool {
    matches!(c, '=' | '!' | '<' | '>' | '~')
}

/// A character as it appears in an error message: control characters escaped.
fn show(c: char) -> String {
    if c.is_control() {
        c.escape_debug().to_string()
    } else {
        c.to_string()
    }
}

/// Levenshtein distance in characters (the inputs are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The valid key closest to an unknown word, if it is close enough to be a likely typo.
fn suggest_key(word: &str) -> Option<Key> {
    let lower = word.to_lowercase();
    if let Some(key) = Key::from_word(&lower) {
        return Some(key);
    }
    Key::ALL
        .into_iter()
        .map(|k| (edit_distance(&lower, k.as_str()), k))
        // At most two edits, and not more than half the key (`x` is not a typo of `id`).
        .filter(|&(d, k)| d <= 2 && 2 * d <= k.as_str().len())
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// Recursive-descent parser over the input's characters; positions are character indices.
struct Parser<'s> {
    input: &'s str,
    chars: Vec<char>,
    pos: usize,
    /// Current nesting of `(` and `!`, bounded by [`MAX_DEPTH`].
    depth: usize,
    /// Columns of the `(` that are open at `pos`, innermost last.
    open_parens: Vec<usize>,
}

impl<'s> Parser<'s> {
    fn new(input: &'s str) -> Self {
        Parser {
            input,
            chars: input.chars().collect(),
            pos: 0,
            depth: 0,
            open_parens: Vec::new(),
        }
    }

    fn parse(mut self) -> Result<Node, FilterError> {
        let node = self.expr()?;
        self.skip_ws();
        if let Some(c) = self.peek() {
            let problem = if c == ')' {
                "unexpected `)` with no matching `(`".to_owned()
            } else {
                format!("unexpected `{}` after a complete expression", show(c))
            };
            return Err(self.error_here(1, problem, "`&`, `|` or the end of the input"));
        }
        Ok(node)
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    /// The 1-based column of the current position.
    fn column(&self) -> usize {
        self.pos + 1
    }

    fn error_at(
        &self,
        column: usize,
        width: usize,
        problem: impl Into<String>,
        expected: impl Into<String>,
    ) -> FilterError {
        FilterError {
            input: self.input.to_owned(),
            column,
            width: width.max(1),
            problem: problem.into(),
            expected: expected.into(),
        }
    }

    fn error_here(
        &self,
        width: usize,
        problem: impl Into<String>,
        expected: impl Into<String>,
    ) -> FilterError {
        self.error_at(self.column(), width, problem, expected)
    }

    /// The last non-whitespace character before the current position.
    fn previous_token(&self) -> Option<char> {
        self.chars[..self.pos]
            .iter()
            .rev()
            .copied()
            .find(|c| !c.is_whitespace())
    }

    /// What may follow a complete operand at the current nesting.
    fn after_operand_expected(&self) -> String {
        match self.open_parens.last() {
            Some(col) => format!("`&`, `|` or `)` to close the `(` at column {col}"),
            None => "`&`, `|` or the end of the input".to_owned(),
        }
    }

    fn enter(&mut self) -> Result<(), FilterError> {
        if self.depth == MAX_DEPTH {
            return Err(self.error_here(
                1,
                format!("expression nested deeper than {MAX_DEPTH} levels"),
                format!("at most {MAX_DEPTH} nested `(` and `!`"),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    fn expr(&mut self) -> Result<Node, FilterError> {
        let mut terms = vec![self.and()?];
        loop {
            self.skip_ws();
            if self.peek() != Some('|') {
                break;
            }
            self.pos += 1;
            terms.push(self.and()?);
        }
        Ok(if terms.len() == 1 {
            terms.pop().expect("one term")
        } else {
            Node::Any(terms)
        })
    }

    fn and(&mut self) -> Result<Node, FilterError> {
        let mut factors = vec![self.unary()?];
        loop {
            self.skip_ws();
            if self.peek() != Some('&') {
                break;
            }
            self.pos += 1;
            factors.push(self.unary()?);
        }
        Ok(if factors.len() == 1 {
            factors.pop().expect("one factor")
        } else {
            Node::All(factors)
        })
    }

    fn unary(&mut self) -> Result<Node, FilterError> {
        self.skip_ws();
        match self.peek() {
            None => {
                let problem = match self.previous_token() {
                    Some(c) => format!("unexpected end of input after `{}`", show(c)),
                    None => "unexpected end of input".to_owned(),
                };
                Err(self.error_here(1, problem, TERM_EXPECTED))
            }
            Some('!') => {
                self.enter()?;
                self.pos += 1;
                let inner = self.unary()?;
                self.depth -= 1;
                Ok(Node::Not(Box::new(inner)))
            }
            Some('(') => {
                self.enter()?;
                let open = self.column();
                self.pos += 1;
                self.open_parens.push(open);
                let inner = self.expr()?;
                self.skip_ws();
                match self.peek() {
                    Some(')') => self.pos += 1,
                    None => {
                        return Err(self.error_here(
                            1,
                            format!(
                                "unexpected end of input: the `(` at column {open} is never closed"
                            ),
                            format!("`)` to close the `(` at column {open}"),
                        ))
                    }
                    Some(c) => {
                        let expected = self.after_operand_expected();
                        return Err(self.error_here(
                            1,
                            format!("unexpected `{}` inside parentheses", show(c)),
                            expected,
                        ));
                    }
                }
                self.open_parens.pop();
                self.depth -= 1;
                Ok(inner)
            }
            Some(c) if is_word_char(c) => self.test(),
            Some(c) => {
                let problem = if matches!(c, '&' | '|' | ')' | '=') {
                    format!("unexpected `{c}` where a key was expected")
                } else {
                    format!(
                        "unexpected character `{}` where a key was expected",
                        show(c)
                    )
                };
                Err(self.error_here(1, problem, TERM_EXPECTED))
            }
        }
    }

    /// `key ('=' | '!=') value`, at a word character.
    fn test(&mut self) -> Result<Node, FilterError> {
        let (key, word) = self.key()?;
        let (negated, op) = self.operator(&word)?;
        let pattern = self.value(&word, &op)?;
        Ok(Node::Test {
            key,
            negated,
            pattern,
        })
    }

    /// A key, and the word it was written as.
    fn key(&mut self) -> Result<(Key, String), FilterError> {
        let start = self.pos;
        while self.peek().is_some_and(is_word_char) {
            self.pos += 1;
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        let Some(key) = Key::from_word(&word) else {
            let mut problem = format!("unknown key `{word}`");
            if let Some(near) = suggest_key(&word) {
                problem.push_str(&format!("; did you mean `{}`?", near.as_str()));
            }
            return Err(self.error_at(start + 1, self.pos - start, problem, KEYS_EXPECTED));
        };
        Ok((key, word))
    }

    /// `=` or `!=` after key `word` (true: negated), and the operator as written.
    fn operator(&mut self, word: &str) -> Result<(bool, String), FilterError> {
        self.skip_ws();
        let op_start = self.pos;
        while self.peek().is_some_and(is_operator_char) {
            self.pos += 1;
        }
        let op: String = self.chars[op_start..self.pos].iter().collect();
        let negated = match op.as_str() {
            "=" => false,
            "!=" => true,
            "" => {
                return Err(match self.peek() {
                    None => self.error_here(
                        1,
                        format!("unexpected end of input after key `{word}`"),
                        OP_EXPECTED,
                    ),
                    Some(c) => self.error_here(
                        1,
                        format!("missing operator after key `{word}`, found `{}`", show(c)),
                        OP_EXPECTED,
                    ),
                })
            }
            _ => {
                let mut problem = format!("unknown operator `{op}`");
                if op == "==" {
                    problem.push_str("; did you mean `=`?");
                }
                return Err(self.error_at(op_start + 1, op.chars().count(), problem, OP_EXPECTED));
            }
        };
        Ok((negated, op))
    }

    /// The value after `word` and `op`: a glob pattern.
    fn value(&mut self, word: &str, op: &str) -> Result<String, FilterError> {
        self.skip_ws();
        let value_start = self.pos;
        while self.peek().is_some_and(is_value_char) {
            self.pos += 1;
        }
        if self.pos == value_start {
            return Err(match self.peek() {
                None => self.error_here(
                    1,
                    format!("unexpected end of input: missing value after `{word}{op}`"),
                    VALUE_EXPECTED,
                ),
                Some(c @ ('&' | '|' | ')')) => self.error_here(
                    1,
                    format!("empty value for key `{word}`, found `{c}`"),
                    VALUE_EXPECTED,
                ),
                Some(c) => self.error_here(
                    1,
                    format!("character `{}` is not allowed in a value", show(c)),
                    VALUE_EXPECTED,
                ),
            });
        }
        if let Some(c) = self.peek() {
            if !c.is_whitespace() && !matches!(c, '&' | '|' | ')') {
                let expected = format!(
                    "{VALUE_CHARS}, or {} after the value",
                    self.after_operand_expected()
                );
                return Err(self.error_here(
                    1,
                    format!("character `{}` is not allowed in a value", show(c)),
                    expected,
                ));
            }
        }
        Ok(self.chars[value_start..self.pos].iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe for the tests: `(key, value)` pairs, absent keys left out.
    fn probe<'a>(fields: &'a [(Key, &'a str)]) -> impl Fn(Key) -> Option<&'a str> + 'a {
        move |key| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    const FULL: &[(Key, &str)] = &[
        (Key::Name, "lookup"),
        (Key::Id, "dlrm::Embedding::lookup"),
        (Key::Layer, "embedding"),
        (Key::Phase, "fwd"),
        (Key::Kind, "fn"),
        (Key::Module, "dlrm::model"),
        (Key::File, "examples/dlrm.rs"),
    ];

    const MLP_BWD: &[(Key, &str)] = &[
        (Key::Name, "allreduce"),
        (Key::Id, "dlrm::Mlp::backward::allreduce"),
        (Key::Layer, "mlp"),
        (Key::Phase, "bwd"),
        (Key::Kind, "probe"),
        (Key::Module, "dlrm::mlp"),
        (Key::File, "src/mlp.rs"),
    ];

    /// No layer and no phase.
    const BARE: &[(Key, &str)] = &[
        (Key::Name, "step"),
        (Key::Id, "dlrm::step"),
        (Key::Kind, "fn"),
        (Key::Module, "dlrm"),
        (Key::File, "src/lib.rs"),
    ];

    fn sel(filter: &str, fields: &[(Key, &str)]) -> bool {
        Filter::parse(filter)
            .unwrap_or_else(|e| panic!("`{filter}` should parse:\n{e}"))
            .matches(probe(fields))
    }

    fn err(filter: &str) -> FilterError {
        match Filter::parse(filter) {
            Ok(f) => panic!("`{filter}` should not parse, got {f:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn keys() {
        assert_eq!(
            Key::ALL.map(Key::as_str),
            ["name", "id", "layer", "phase", "kind", "module", "file"]
        );
        for key in Key::ALL {
            assert_eq!(Key::from_word(key.as_str()), Some(key));
        }
    }

    #[test]
    fn every_key_matches_its_field() {
        let table: &[(&str, bool, bool)] = &[
            // filter, selects FULL, selects MLP_BWD
            ("name=lookup", true, false),
            ("id=dlrm::Embedding::lookup", true, false),
            ("layer=embedding", true, false),
            ("phase=fwd", true, false),
            ("kind=fn", true, false),
            ("module=dlrm::model", true, false),
            ("file=examples/dlrm.rs", true, false),
            ("name=allreduce", false, true),
            ("id=dlrm::Mlp::backward::allreduce", false, true),
            ("layer=mlp", false, true),
            ("phase=bwd", false, true),
            ("kind=probe", false, true),
            ("module=dlrm::mlp", false, true),
            ("file=src/mlp.rs", false, true),
            // Whole-string and case-sensitive.
            ("name=look", false, false),
            ("name=Lookup", false, false),
            ("layer=MLP", false, false),
            ("id=Embedding", false, false),
        ];
        for &(filter, full, mlp) in table {
            assert_eq!(sel(filter, FULL), full, "{filter} on FULL");
            assert_eq!(sel(filter, MLP_BWD), mlp, "{filter} on MLP_BWD");
        }
    }

    #[test]
    fn operators_and_precedence() {
        let table: &[(&str, bool, bool, bool)] = &[
            // filter, FULL, MLP_BWD, BARE
            ("layer=mlp|layer=embedding", true, true, false),
            ("layer=mlp&phase=bwd", false, true, false),
            ("layer=mlp&phase=fwd", false, false, false),
            ("!layer=mlp", true, false, true),
            ("!!layer=mlp", false, true, false),
            ("layer!=mlp", true, false, true),
            // `&` binds tighter than `|`: a | (b & c), not (a | b) & c.
            ("kind=fn|layer=mlp&phase=fwd", true, false, true),
            ("(kind=fn|layer=mlp)&phase=fwd", true, false, false),
            ("layer=mlp&phase=fwd|kind=fn", true, false, true),
            ("layer=mlp&(phase=fwd|kind=probe)", false, true, false),
            // `!` applies to one unary only.
            ("!kind=fn&layer=mlp", false, true, false),
            ("!(kind=fn&layer=embedding)", false, true, true),
            ("!(kind=fn|layer=mlp)", false, false, false),
            ("((((layer=mlp))))", false, true, false),
            ("name=a|name=b|name=step|name=c", false, false, true),
            ("kind=fn&kind=fn&name=step", false, false, true),
            ("!!!kind=fn", false, true, false),
        ];
        for &(filter, full, mlp, bare) in table {
            assert_eq!(sel(filter, FULL), full, "{filter} on FULL");
            assert_eq!(sel(filter, MLP_BWD), mlp, "{filter} on MLP_BWD");
            assert_eq!(sel(filter, BARE), bare, "{filter} on BARE");
        }
    }

    #[test]
    fn absent_fields() {
        // `=` never matches an absent field, even with `*`; `!=` always does.
        assert!(!sel("layer=*", BARE));
        assert!(!sel("phase=fwd", BARE));
        assert!(sel("layer!=mlp", BARE));
        assert!(sel("phase!=*", BARE));
        assert!(sel("!layer=*", BARE));
        assert!(sel("layer=*", FULL));
        assert!(!sel("layer!=*", FULL));
        // A probe without any field.
        let none = Filter::parse("name=*").unwrap();
        assert!(!none.matches(|_| None));
        assert!(Filter::parse("id!=x").unwrap().matches(|_| None));
    }

    #[test]
    fn globs() {
        let table: &[(&str, &str, bool)] = &[
            ("mlp*", "mlp", true),
            ("mlp*", "mlp_top", true),
            ("mlp*", "top_mlp", false),
            ("*fwd", "fwd", true),
            ("*fwd", "attn_fwd", true),
            ("*fwd", "fwd_x", false),
            ("a*b*c", "abc", true),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "abcabc", true),
            ("a*b*c", "acb", false),
            ("a*b*c", "abcb", false),
            ("*", "", true),
            ("*", "anything::at/all", true),
            ("**", "x", true),
            ("a", "a", true),
            ("a", "", false),
            ("", "", true),
            ("", "a", false),
            ("*a", "ba", true),
            ("a*", "", false),
            ("*.rs", "src/mlp.rs", true),
            ("*::lookup", "dlrm::Embedding::lookup", true),
            ("é*", "été", true),
            ("*t*", "été", true),
            ("a*a*a*a*a*a*a*b", &"a".repeat(10_000), false),
        ];
        for &(pattern, text, expected) in table {
            assert_eq!(
                glob_match(pattern, text),
                expected,
                "{pattern:?} on {text:?}"
            );
        }
        assert!(sel("layer=emb*", FULL));
        assert!(sel("name=*e*", MLP_BWD));
        assert!(sel("id=*::allreduce", MLP_BWD));
        assert!(!sel("layer=*mb", FULL));
    }

    #[test]
    fn whitespace_between_tokens() {
        for filter in [
            " layer = mlp ",
            "\tlayer\t!=\tembedding\n",
            "( layer=mlp | name = x ) & ! phase = fwd",
            "! ( layer=embedding )",
            "layer=mlp&phase=bwd",
            "  layer =mlp   &phase=  bwd  ",
        ] {
            assert!(sel(filter, MLP_BWD), "{filter:?}");
        }
    }

    #[test]
    fn empty_input_selects_all() {
        for input in ["", " ", "\t\n  "] {
            let f = Filter::parse(input).unwrap();
            assert!(f.selects_all());
            assert_eq!(f.source(), input);
            assert!(f.matches(|_| None));
            assert!(f.matches(probe(FULL)));
        }
        let all = Filter::all();
        assert!(all.selects_all());
        assert_eq!(all.source(), "");
        assert!(all.matches(|_| None));

        let f: Filter = " layer=mlp ".parse().unwrap();
        assert!(!f.selects_all());
        assert_eq!(f.source(), " layer=mlp ");
        assert!(!Filter::parse("name=*").unwrap().selects_all());
    }

    #[test]
    fn rendered_error_format() {
        let expected = "\
error: invalid PROF_FILTER at column 1: unknown key `layr`
  |
  | layr=mlp
  | ^^^^ expected one of the keys: name, id, layer, phase, kind, module, file";
        assert_eq!(
            render_error(
                "PROF_FILTER",
                "layr=mlp",
                1,
                4,
                "unknown key `layr`",
                KEYS_EXPECTED
            ),
            expected
        );
        // What parsing `layr=mlp` gives: the same, with the suggestion.
        let e = err("layr=mlp");
        assert_eq!(
            (e.column, e.width, e.expected.as_str()),
            (1, 4, KEYS_EXPECTED)
        );
        assert_eq!(e.problem, "unknown key `layr`; did you mean `layer`?");
        assert_eq!(
            e.to_string(),
            "\
error: invalid PROF_FILTER at column 1: unknown key `layr`; did you mean `layer`?
  |
  | layr=mlp
  | ^^^^ expected one of the keys: name, id, layer, phase, kind, module, file"
        );
    }

    #[test]
    fn rendered_error_alignment() {
        // Multi-byte characters count as one column; control characters are shown as spaces.
        let e = err("name=é|ééé=x");
        assert_eq!((e.column, e.width), (6, 1));
        let e = err("name=a|ééé=x");
        assert_eq!((e.column, e.width), (8, 3));
        assert_eq!(
            e.to_string(),
            format!(
                "error: invalid PROF_FILTER at column 8: unknown key `ééé`\n  |\n  | name=a|ééé=x\n  | {}^^^ expected {KEYS_EXPECTED}",
                " ".repeat(7)
            )
        );
        let e = err("name=a\t&\nlayr=x");
        assert_eq!((e.column, e.width), (10, 4));
        let lines: Vec<String> = e.to_string().lines().map(str::to_owned).collect();
        assert_eq!(lines[2], "  | name=a & layr=x");
        assert!(lines[3].starts_with("  |          ^^^^ expected"));
        // End of input: the caret goes just past the input.
        let e = err("layer=mlp&");
        let lines: Vec<String> = e.to_string().lines().map(str::to_owned).collect();
        assert_eq!(
            lines[3],
            format!("  | {}^ expected {TERM_EXPECTED}", " ".repeat(10))
        );
        assert!(!e.to_string().ends_with('\n'));
        // Degenerate arguments do not panic.
        assert_eq!(
            render_error("PROF_MODE", "", 0, 0, "empty", ""),
            "error: invalid PROF_MODE at column 0: empty\n  |\n  |\n  | ^"
        );
    }

    #[test]
    fn mentions_and_asks_for_read_the_tree_not_the_text() {
        let f = Filter::parse("name=hidden_layer | !(kind=sp*) & phase!=bwd").unwrap();
        assert!(f.mentions(Key::Name) && f.mentions(Key::Kind) && f.mentions(Key::Phase));
        // `hidden_layer` holds `id` and `layer` as text, not as keys.
        assert!(!f.mentions(Key::Id) && !f.mentions(Key::Layer));
        assert!(f.asks_for(Key::Kind, "span"));
        assert!(
            !f.asks_for(Key::Phase, "bwd"),
            "a `!=` test does not ask for its value"
        );
        assert!(!Filter::all().mentions(Key::Name));
        assert!(!Filter::all().asks_for(Key::Kind, "span"));
    }

    #[test]
    fn carets_under_wide_characters() {
        // `層` and the emoji take two terminal columns each: two carets under each.
        let e = err("layer=mlp&層=x");
        assert_eq!((e.column, e.width), (11, 1));
        let lines: Vec<String> = e.to_string().lines().map(str::to_owned).collect();
        assert_eq!(lines[2], "  | layer=mlp&層=x");
        assert!(
            lines[3].starts_with(&format!("  | {}^^ expected", " ".repeat(10))),
            "{}",
            lines[3]
        );
        let e = err("name=x|🚀");
        let lines: Vec<String> = e.to_string().lines().map(str::to_owned).collect();
        assert!(
            lines[3].starts_with(&format!("  | {}^^ expected", " ".repeat(7))),
            "{}",
            lines[3]
        );
        // The window's `…` is one column: a wide character after it still lines up.
        let e = err(&format!("{}名", "name=a|".repeat(40)));
        let lines: Vec<String> = e.to_string().lines().map(str::to_owned).collect();
        let caret = lines[3].find('^').unwrap();
        assert_eq!(
            lines[2].chars().nth(caret),
            Some('名'),
            "{}\n{}",
            lines[2],
            lines[3]
        );
        assert!(
            lines[3].ends_with(&format!("^^ expected {KEYS_EXPECTED}"))
                || lines[3].contains("^^ expected")
        );
    }

    #[test]
    fn huge_values_are_not_echoed_whole() {
        // A 131 KB filter with its mistake in the middle.
        let half = "name=a|".repeat(9_400);
        let input = format!("{half}layr=x|{half}name=b");
        let e = err(&input);
        let text = e.to_string();
        assert!(text.len() < 1_000, "{} bytes echoed", text.len());
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[2].starts_with("  | …") && lines[2].ends_with('…'),
            "{}",
            lines[2]
        );
        // The carets still sit under `layr`.
        let caret = lines[3].find('^').unwrap();
        let under: String = lines[2].chars().skip(caret).take(4).collect();
        assert_eq!(under, "layr");
        // A huge token is cut in the problem too.
        let e = err(&format!("{}=x", "k".repeat(200_000)));
        assert!(e.to_string().len() < 1_000);
        assert!(e.to_string().contains(" characters)"), "{e}");
    }

    /// (input, column, width, a fragment of the problem, a fragment of what was expected)
    #[test]
    fn error_cases() {
        #[rustfmt::skip]
        let table: &[(&str, usize, usize, &str, &str)] = &[
            // Unknown keys, with and without a suggestion.
            ("layr=mlp", 1, 4, "unknown key `layr`; did you mean `layer`?", KEYS_EXPECTED),
            ("name=a & colour=red", 10, 6, "unknown key `colour`", KEYS_EXPECTED),
            ("Name=x", 1, 4, "did you mean `name`?", KEYS_EXPECTED),
            ("modle=x", 1, 5, "did you mean `module`?", KEYS_EXPECTED),
            ("naмe=x", 1, 4, "unknown key `naмe`", KEYS_EXPECTED),
            ("(fille=x)", 2, 5, "did you mean `file`?", KEYS_EXPECTED),
            // Missing operator.
            ("layer", 6, 1, "unexpected end of input after key `layer`", OP_EXPECTED),
            ("layer mlp", 7, 1, "missing operator after key `layer`", OP_EXPECTED),
            ("layer&phase=x", 6, 1, "missing operator after key `layer`", OP_EXPECTED),
            ("layer.x=1", 6, 1, "missing operator after key `layer`", OP_EXPECTED),
            // Bad operators.
            ("layer==mlp", 6, 2, "unknown operator `==`; did you mean `=`?", OP_EXPECTED),
            ("layer >= x", 7, 2, "unknown operator `>=`", OP_EXPECTED),
            ("layer!mlp", 6, 1, "unknown operator `!`", OP_EXPECTED),
            ("layer=!mlp", 6, 2, "unknown operator `=!`", OP_EXPECTED),
            // Empty values.
            ("layer=", 7, 1, "missing value after `layer=`", "a value made of"),
            ("layer!= ", 9, 1, "missing value after `layer!=`", "a value made of"),
            ("layer=&phase=x", 7, 1, "empty value for key `layer`", "a value made of"),
            ("(layer= )", 9, 1, "empty value for key `layer`", "a value made of"),
            // Characters not allowed in a value.
            ("name=foo#bar", 9, 1, "character `#` is not allowed in a value", "ASCII letter, digit"),
            ("name=#", 6, 1, "character `#` is not allowed in a value", "ASCII letters, digits"),
            ("name=café", 9, 1, "character `é` is not allowed in a value", "`&`, `|` or the end"),
            ("(name=a b)", 9, 1, "unexpected `b` inside parentheses", "`)` to close the `(` at column 1"),
            ("(name=a'b')", 8, 1, "character `'` is not allowed", "`)` to close the `(` at column 1"),
            ("name=a(b)", 7, 1, "character `(` is not allowed", "value character"),
            ("name=a!", 7, 1, "character `!` is not allowed", "value character"),
            ("name=a\u{0}", 7, 1, "character `\\0` is not allowed", "value character"),
            // Unbalanced parentheses.
            ("(layer=mlp", 11, 1, "the `(` at column 1 is never closed", "`)` to close the `(` at column 1"),
            ("((layer=mlp)", 13, 1, "the `(` at column 1 is never closed", "`)`"),
            ("layer=mlp)", 10, 1, "unexpected `)` with no matching `(`", "`&`, `|` or the end of the input"),
            ("(layer=mlp))", 12, 1, "unexpected `)` with no matching `(`", "`&`, `|`"),
            ("()", 2, 1, "unexpected `)` where a key was expected", TERM_EXPECTED),
            (")", 1, 1, "unexpected `)` where a key was expected", TERM_EXPECTED),
            // Trailing garbage after a complete expression.
            ("layer=mlp phase=bwd", 11, 1, "unexpected `p` after a complete expression", "`&`, `|` or the end of the input"),
            ("layer=mlp (x)", 11, 1, "unexpected `(` after a complete expression", "`&`, `|`"),
            // Unexpected end of input.
            ("layer=mlp&", 11, 1, "unexpected end of input after `&`", TERM_EXPECTED),
            ("layer=mlp | ", 13, 1, "unexpected end of input after `|`", TERM_EXPECTED),
            ("!", 2, 1, "unexpected end of input after `!`", TERM_EXPECTED),
            ("(", 2, 1, "unexpected end of input after `(`", TERM_EXPECTED),
            // An operator where a key was expected.
            ("&layer=x", 1, 1, "unexpected `&` where a key was expected", TERM_EXPECTED),
            ("layer=x||phase=y", 9, 1, "unexpected `|` where a key was expected", TERM_EXPECTED),
            ("layer=x&|phase=y", 9, 1, "unexpected `|` where a key was expected", TERM_EXPECTED),
            ("=mlp", 1, 1, "unexpected `=` where a key was expected", TERM_EXPECTED),
            ("*=x", 1, 1, "unexpected character `*`", TERM_EXPECTED),
            ("\u{1F600}", 1, 1, "unexpected character `\u{1F600}`", TERM_EXPECTED),
        ];
        for &(input, column, width, problem, expected) in table {
            let e = err(input);
            assert_eq!(e.input, input);
            assert_eq!((e.column, e.width), (column, width), "{input:?}: {e:?}");
            assert!(e.problem.contains(problem), "{input:?}: {e:?}");
            assert!(e.expected.contains(expected), "{input:?}: {e:?}");
        }
    }

    #[test]
    fn nesting_limit() {
        let nested = |open: &str, n: usize| format!("{}name=step{}", open.repeat(n), ")".repeat(n));
        // 64 levels are fine, 65 are not, and very deep input is an error, not a stack overflow.
        assert!(sel(&nested("(", MAX_DEPTH), BARE));
        assert!(sel(&nested("!", MAX_DEPTH).replace(')', ""), BARE));
        assert!(!sel(&nested("!", MAX_DEPTH - 1).replace(')', ""), BARE));
        let mixed = format!("{}name=step{}", "!(".repeat(32), ")".repeat(32));
        assert!(sel(&mixed, BARE));
        for input in [
            nested("(", MAX_DEPTH + 1),
            nested("!", MAX_DEPTH + 1).replace(')', ""),
            "(".repeat(1_000_000),
            "!".repeat(1_000_000),
            "!(".repeat(500_000),
        ] {
            let e = err(&input);
            assert_eq!(e.column, MAX_DEPTH + 1);
            assert_eq!(e.width, 1);
            assert!(e.problem.contains("nested deeper than 64 levels"), "{e:?}");
        }
    }

    #[test]
    fn long_flat_input() {
        // Chains of `&` and `|` are not nesting: no limit, no recursion.
        let long = vec!["name=x"; 100_000].join("|");
        assert!(!sel(&long, BARE));
        assert!(sel(&format!("{long}|name=step"), BARE));
        let long = vec!["kind=fn"; 100_000].join("&");
        assert!(sel(&long, BARE));
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest_key("layr"), Some(Key::Layer));
        assert_eq!(suggest_key("phse"), Some(Key::Phase));
        assert_eq!(suggest_key("ID"), Some(Key::Id));
        assert_eq!(suggest_key("kinds"), Some(Key::Kind));
        assert_eq!(suggest_key("colour"), None);
        assert_eq!(suggest_key("stream"), None);
        assert_eq!(suggest_key("x"), None);
        assert_eq!(suggest_key("lay"), Some(Key::Layer));
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("é", "e"), 1);
    }
}
