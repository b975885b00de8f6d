//! The parser of `PROF_FILTER`: recursive descent over the grammar in the module above, with
//! errors that point at the column and say what was expected.

use super::{FilterError, Key, Node};

/// The deepest nesting of `(` and `!` a filter may use; deeper input is rejected (this bounds
/// the recursion of the parser and of the evaluator).
pub(super) const MAX_DEPTH: usize = 64;

pub(super) const KEYS_EXPECTED: &str =
    "one of the keys: name, id, layer, phase, kind, module, file";
pub(super) const TERM_EXPECTED: &str =
    "a key (name, id, layer, phase, kind, module, file), `!` or `(`";
pub(super) const OP_EXPECTED: &str = "`=` or `!=`";
pub(super) const VALUE_EXPECTED: &str =
    "a value made of ASCII letters, digits, `_`, `.`, `:`, `/`, `-` and `*` (any run of characters)";
pub(super) const VALUE_CHARS: &str =
    "a value character (ASCII letter, digit, `_`, `.`, `:`, `/`, `-` or `*`)";

pub(super) fn is_value_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-' | '*')
}

pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

pub(super) fn is_operator_char(c: char) -> bool {
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

/// The candidate closest to `word` (ignoring case), if it is close enough to be a likely typo:
/// at most two edits, and not more than half the candidate (`x` is not a typo of `id`). Used for
/// the "did you mean" of variables and their values as well as filter keys.
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_lowercase();
    candidates
        .iter()
        .map(|&c| (strsim::levenshtein(&lower, &c.to_lowercase()), c))
        .filter(|&(d, c)| d <= 2 && 2 * d <= c.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// The valid key closest to an unknown word, if it is close enough to be a likely typo.
pub(super) fn suggest_key(word: &str) -> Option<Key> {
    let lower = word.to_lowercase();
    if let Some(key) = Key::from_word(&lower) {
        return Some(key);
    }
    let names: Vec<&str> = Key::ALL.iter().map(|k| k.as_str()).collect();
    nearest(&lower, &names).and_then(Key::from_word)
}

/// Recursive-descent parser over the input's characters; positions are character indices.
pub(super) struct Parser<'s> {
    input: &'s str,
    chars: Vec<char>,
    pos: usize,
    /// Current nesting of `(` and `!`, bounded by [`MAX_DEPTH`].
    depth: usize,
    /// Columns of the `(` that are open at `pos`, innermost last.
    open_parens: Vec<usize>,
}

impl<'s> Parser<'s> {
    pub(super) fn new(input: &'s str) -> Self {
        Parser {
            input,
            chars: input.chars().collect(),
            pos: 0,
            depth: 0,
            open_parens: Vec::new(),
        }
    }

    pub(super) fn parse(mut self) -> Result<Node, FilterError> {
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
