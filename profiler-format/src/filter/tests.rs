use super::parse::*;
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
}

/// The "did you mean" of keys, variables and values: close typos only.
#[test]
fn nearest_finds_likely_typos_only() {
    use super::nearest;
    let vars = ["PROF_REPEAT", "PROF_WARMUP", "PROF_MODE"];
    assert_eq!(nearest("PROF_REPAET", &vars), Some("PROF_REPEAT"));
    assert_eq!(nearest("prof_warmpu", &vars), Some("PROF_WARMUP"));
    assert_eq!(nearest("PROF_COLOUR", &vars), None);
    let modes = ["sample", "trace", "continuous", "off"];
    assert_eq!(nearest("sampel", &modes), Some("sample"));
    assert_eq!(nearest("Trace", &modes), Some("trace"));
    assert_eq!(nearest("fast", &modes), None);
    assert_eq!(nearest("x", &["id"]), None);
}

/// A probe whose `layer`, `phase` and `id` are not known yet (a span before its fields are
/// read) could be selected unless the known keys rule it out.
#[test]
fn could_select_rules_out_only_by_what_is_known() {
    let unknown = [Key::Layer, Key::Phase, Key::Id];
    let span = |key: Key| match key {
        Key::Name => Some("matmul"),
        Key::Kind => Some("span"),
        _ => None,
    };
    for (filter, could) in [
        ("", true),
        ("layer=mlp", true),
        ("phase!=bwd", true),
        ("kind=span", true),
        ("kind=fn", false),
        ("name=conv*", false),
        ("name=conv* | layer=mlp", true),
        ("name=matmul & kind=span", true),
    ] {
        let f = Filter::parse(filter).unwrap();
        assert_eq!(f.could_select(span, &unknown), could, "{filter}");
    }
}
