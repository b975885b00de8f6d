//! Property tests of the `PROF_FILTER` language (the module `filter`), through its public API.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

use profiler_format::filter::{Filter, FilterError, Key};
use unicode_width::UnicodeWidthChar;

/// The reference glob: straightforward recursion on characters.
fn ref_glob(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => (0..=text.len()).any(|skip| ref_glob(rest, &text[skip..])),
        Some((c, rest)) => text.first() == Some(c) && ref_glob(rest, &text[1..]),
    }
}

fn ref_glob_str(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    ref_glob(&p, &t)
}

/// The reference syntax tree that the generated expressions are rendered from.
#[derive(Clone, Debug)]
enum Expr {
    Test {
        key: Key,
        negated: bool,
        pattern: String,
    },
    Not(Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    /// Redundant parentheses around an expression.
    Paren(Box<Expr>),
}

type Fields = Vec<Option<String>>;

fn field(fields: &Fields, key: Key) -> Option<&str> {
    let index = Key::ALL.iter().position(|&k| k == key).unwrap();
    fields[index].as_deref()
}

/// The reference evaluator.
fn eval(expr: &Expr, fields: &Fields) -> bool {
    match expr {
        Expr::Test {
            key,
            negated,
            pattern,
        } => {
            let hit = match field(fields, *key) {
                None => false,
                Some(value) => ref_glob_str(pattern, value),
            };
            if *negated {
                !hit
            } else {
                hit
            }
        }
        Expr::Not(inner) => !eval(inner, fields),
        Expr::And(parts) => parts.iter().all(|p| eval(p, fields)),
        Expr::Or(parts) => parts.iter().any(|p| eval(p, fields)),
        Expr::Paren(inner) => eval(inner, fields),
    }
}

fn precedence(expr: &Expr) -> u8 {
    match expr {
        Expr::Or(_) => 0,
        Expr::And(_) => 1,
        _ => 2,
    }
}

/// Renders `expr` with as few parentheses as precedence allows (plus the `Paren` ones), putting
/// the next whitespace from `ws` before every token.
fn render<'w>(expr: &Expr, context: u8, ws: &mut impl Iterator<Item = &'w str>, out: &mut String) {
    fn token<'w>(ws: &mut impl Iterator<Item = &'w str>, out: &mut String, text: &str) {
        out.push_str(ws.next().unwrap());
        out.push_str(text);
    }
    if precedence(expr) < context {
        token(ws, out, "(");
        render(expr, 0, ws, out);
        out.push_str(ws.next().unwrap());
        out.push(')');
        return;
    }
    match expr {
        Expr::Test {
            key,
            negated,
            pattern,
        } => {
            token(ws, out, key.as_str());
            token(ws, out, if *negated { "!=" } else { "=" });
            token(ws, out, pattern);
        }
        Expr::Not(inner) => {
            token(ws, out, "!");
            render(inner, 2, ws, out);
        }
        Expr::And(parts) | Expr::Or(parts) => {
            let (separator, child_context) = match expr {
                Expr::And(_) => ("&", 2),
                _ => ("|", 1),
            };
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    token(ws, out, separator);
                }
                render(part, child_context, ws, out);
            }
        }
        Expr::Paren(inner) => {
            token(ws, out, "(");
            render(inner, 0, ws, out);
            out.push_str(ws.next().unwrap());
            out.push(')');
        }
    }
}

fn expr_strategy() -> impl Strategy<Value = Expr> {
    let leaf = (select(Key::ALL.to_vec()), any::<bool>(), "[ab*]{1,3}").prop_map(
        |(key, negated, pattern)| Expr::Test {
            key,
            negated,
            pattern,
        },
    );
    leaf.prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
            vec(inner.clone(), 2..5).prop_map(Expr::And),
            vec(inner.clone(), 2..5).prop_map(Expr::Or),
            inner.prop_map(|e| Expr::Paren(Box::new(e))),
        ]
    })
}

fn fields_strategy() -> impl Strategy<Value = Fields> {
    vec(proptest::option::of("[ab]{0,4}"), Key::ALL.len())
}

/// Strings of the grammar's own pieces in random order, near misses included.
fn token_soup() -> impl Strategy<Value = String> {
    let pieces = vec![
        "name", "id", "layer", "phase", "kind", "module", "file", "layr", "Name", "=", "!=", "==",
        "!", "&", "|", "(", ")", "mlp", "*", "a*b", "::", "/", ".", "-", "_", " ", "\t", "\n", "é",
        "#", "'", "<", ">", "\u{0}", "日本",
    ];
    vec(select(pieces), 0..24).prop_map(|parts| parts.concat())
}

fn check_error(input: &str, e: &FilterError) -> Result<(), TestCaseError> {
    let chars = input.chars().count();
    prop_assert_eq!(&e.input, input);
    prop_assert!(
        (1..=chars + 1).contains(&e.column),
        "column {} out of 1..={}",
        e.column,
        chars + 1
    );
    prop_assert!(e.width >= 1);
    prop_assert!(!e.problem.is_empty());
    prop_assert!(!e.expected.is_empty());

    let rendered = e.to_string();
    prop_assert!(rendered.contains('^'));
    let lines: Vec<&str> = rendered.lines().collect();
    prop_assert_eq!(lines.len(), 4, "{}", rendered);
    let header = format!("error: invalid PROF_FILTER at column {}: ", e.column);
    prop_assert!(lines[0].starts_with(&header));
    // The input line shows the input (control characters as spaces), or a window of it cut
    // with `…`; the carets start under the offending character, counted in display columns
    // (two for a wide character), and span the display width of `width` characters.
    let shown: Vec<char> = lines[2].chars().skip(4).collect();
    let caret_line: Vec<char> = lines[3].chars().collect();
    let first_caret = caret_line.iter().position(|&c| c == '^').unwrap();
    let carets = caret_line[first_caret..]
        .iter()
        .take_while(|&&c| c == '^')
        .count();
    let input_chars: Vec<char> = input
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    // Walk the shown line to the caret's display column.
    let mut col = 0;
    let mut at = 0;
    while at < shown.len() && col < first_caret - 4 {
        col += shown[at].width().unwrap_or(0);
        at += 1;
    }
    // (Past the end of the right-trimmed line, the caret stands over trimmed spaces.)
    if at < shown.len() {
        prop_assert_eq!(
            col,
            first_caret - 4,
            "caret inside a wide character:\n{}",
            rendered
        );
    }
    let offending = input_chars.get(e.column - 1);
    match (shown.get(at), offending) {
        (Some(&c), Some(&o)) => prop_assert_eq!(c, o, "caret not under the column:\n{}", rendered),
        // Past the end of the (right-trimmed) line: the column is at or after trailing spaces.
        (None, o) => prop_assert!(o.is_none_or(|&o| o == ' ' || o.is_whitespace())),
        (Some(_), None) => prop_assert!(false, "caret before the end of input:\n{}", rendered),
    }
    let end = (e.column - 1 + e.width).min(input_chars.len());
    let want: usize = input_chars[(e.column - 1).min(end)..end]
        .iter()
        .map(|c| c.width().unwrap_or(0))
        .sum();
    // The window may cut a wide span short; never more carets than the span's width.
    prop_assert!(
        carets <= want.max(1) && carets >= 1,
        "{} carets, want {}",
        carets,
        want
    );
    if input_chars.len() <= 120 {
        prop_assert_eq!(carets, want.max(1));
        prop_assert!(shown.len() <= chars);
    }
    Ok(())
}

fn check_any_input(input: &str) -> Result<(), TestCaseError> {
    match Filter::parse(input) {
        Ok(filter) => {
            prop_assert_eq!(filter.source(), input);
            prop_assert_eq!(filter.selects_all(), input.trim().is_empty());
            // Evaluating never panics either.
            filter.matches(|_| None);
            filter.matches(|_| Some("a"));
        }
        Err(e) => check_error(input, &e)?,
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// (a) Arbitrary strings parse or give a well-placed error; nothing panics.
    #[test]
    fn any_string_parses_or_errors(input in any::<String>()) {
        check_any_input(&input)?;
    }

    /// (a) The same for strings made of the grammar's characters.
    #[test]
    fn grammar_characters_parse_or_error(input in "[ a-z=!&|()*._:/#\\-\t\n\u{e9}\u{65e5}]{0,40}") {
        check_any_input(&input)?;
    }

    /// (a) The same for the grammar's tokens in random order.
    #[test]
    fn token_soup_parses_or_errors(input in token_soup()) {
        check_any_input(&input)?;
    }

    /// (b) Expressions generated from the grammar parse and agree with the reference evaluator.
    #[test]
    fn generated_expressions_agree_with_reference(
        expr in expr_strategy(),
        ws in vec(select(vec!["", "", "", " ", "  ", "\t", "\n"]), 1..16),
        probes in vec(fields_strategy(), 1..8),
    ) {
        let mut source = String::new();
        render(&expr, 0, &mut ws.iter().copied().cycle(), &mut source);
        let filter = Filter::parse(&source)
            .map_err(|e| TestCaseError::fail(format!("`{source}` did not parse:\n{e}")))?;
        prop_assert_eq!(filter.source(), source.as_str());
        prop_assert!(!filter.selects_all());
        let reparsed: Filter = source.parse().unwrap();
        for fields in &probes {
            let expected = eval(&expr, fields);
            prop_assert_eq!(filter.matches(|k| field(fields, k)), expected, "{} on {:?}", source, fields);
            prop_assert_eq!(reparsed.matches(|k| field(fields, k)), expected);
        }
    }

    /// (c) Glob matching agrees with the recursive reference matcher.
    #[test]
    fn glob_agrees_with_reference(pattern in "[ab*]{1,7}", text in "[ab\u{e9}]{0,9}") {
        let filter = Filter::parse(&format!("name={pattern}")).unwrap();
        prop_assert_eq!(
            filter.matches(|k| (k == Key::Name).then_some(text.as_str())),
            ref_glob_str(&pattern, &text),
            "{} on {}", pattern, text
        );
        // `!=` is the negation, and `=` never matches an absent field.
        let negated = Filter::parse(&format!("name!={pattern}")).unwrap();
        prop_assert_eq!(
            negated.matches(|k| (k == Key::Name).then_some(text.as_str())),
            !ref_glob_str(&pattern, &text)
        );
        prop_assert!(!filter.matches(|_| None));
        prop_assert!(negated.matches(|_| None));
    }
}

/// A glob that backtracks would take longer than the age of the universe here (ten stars over
/// 20,000 characters); the matcher is linear, so this finishes in milliseconds. No time is
/// asserted (a verdict must not hang on how busy the machine is): a backtracking matcher shows
/// as a test that never ends.
#[test]
fn pathological_glob_is_matched_without_backtracking() {
    let filter = Filter::parse("name=a*a*a*a*a*a*a*a*a*a*b").unwrap();
    let text = "a".repeat(20_000);
    assert!(!filter.matches(|_| Some(text.as_str())));
}
