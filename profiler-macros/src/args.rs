//! Parsing and validation of annotation arguments.
//!
//! Every problem found in one annotation is collected and reported together, each error pointing
//! at the token that caused it. Validation is the same in enabled and disabled builds, so a typo
//! fails to compile in both.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, LitStr, MetaNameValue, Token};

/// The keys every annotation accepts.
const KEYS: [&str; 7] = [
    "name", "layer", "phase", "stream", "flops", "bytes", "shape",
];

/// The keys as the error messages list them.
fn keys_listed() -> String {
    KEYS.map(|k| format!("`{k}`")).join(", ")
}

/// Validated arguments of `#[profiled(...)]` or `probe!(...)`.
#[derive(Default)]
pub struct Args {
    pub name: Option<LitStr>,
    pub layer: Option<LitStr>,
    pub phase: Option<LitStr>,
    /// The CUDA stream expression; accepted in every build, evaluated only with `cuda`.
    pub stream: Option<Expr>,
    /// The work of one run, in floating-point operations: an expression evaluated at entry,
    /// only when the run may be measured.
    pub flops: Option<Expr>,
    /// The work of one run, in bytes moved: as `flops`.
    pub bytes: Option<Expr>,
    /// The input shape of one run: an expression evaluated as `flops` is, whose value
    /// implements `profiler_core::Shape`.
    pub shape: Option<Expr>,
}

impl Args {
    /// Whether the annotation has a key evaluated per measured run (`flops`, `bytes`, `shape`).
    pub fn has_work(&self) -> bool {
        self.flops.is_some() || self.bytes.is_some() || self.shape.is_some()
    }
}

/// Collects errors so that one build reports all of them.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(first) => first.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// True when `value` uses only the characters a `PROF_FILTER` value can hold.
pub fn valid_value(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-'))
}

/// Whether `value` may be a count of work: any expression but a literal that is not an
/// integer or a float (a string, a `bool`, ...), which could never be one.
fn is_count(value: &Expr) -> bool {
    match value {
        Expr::Lit(ExprLit { lit, .. }) => matches!(lit, Lit::Int(_) | Lit::Float(_)),
        _ => true,
    }
}

/// Whether `value` may be a shape: any expression but a literal that is not an integer (a
/// string such as `"32x512"` names a shape but gives no dimension).
fn is_shape(value: &Expr) -> bool {
    match value {
        Expr::Lit(ExprLit { lit, .. }) => matches!(lit, Lit::Int(_)),
        _ => true,
    }
}

/// The message for an unknown key, with a suggestion when one is close.
fn unknown_key(key: &str) -> String {
    let hint = KEYS
        .into_iter()
        .find(|known| strsim::levenshtein(key, known) <= 2)
        .map(|known| format!(" (did you mean `{known}`?)"))
        .unwrap_or_default();
    format!(
        "unknown key `{key}`{hint}: expected one of {}",
        keys_listed()
    )
}

fn check_value(lit: &LitStr, key: &str, errors: &mut Errors) {
    let value = lit.value();
    if value.is_empty() {
        errors.push(syn::Error::new_spanned(
            lit,
            format!("empty `{key}` value: give it at least one letter, digit or `_ . : / -`"),
        ));
    } else if !valid_value(&value) {
        errors.push(syn::Error::new_spanned(
            lit,
            format!(
                "invalid `{key}` value {value:?}: use only letters, digits and `_ . : / -`, \
                 so that the value can be typed into PROF_FILTER unchanged"
            ),
        ));
    }
}

impl Args {
    /// Validates a list of `key = value` pairs. `name_given` is true when the probe's name came
    /// positionally, so a `name = ...` key repeats it.
    fn from_pairs(
        pairs: Punctuated<MetaNameValue, Token![,]>,
        mut args: Args,
        errors: &mut Errors,
    ) -> Args {
        for pair in pairs {
            let Some(key) = pair.path.get_ident().map(|ident| ident.to_string()) else {
                errors.push(syn::Error::new_spanned(
                    &pair.path,
                    format!("unknown key: expected one of {}", keys_listed()),
                ));
                continue;
            };
            let slot = match key.as_str() {
                "name" => &mut args.name,
                "layer" => &mut args.layer,
                "phase" => &mut args.phase,
                "stream" | "flops" | "bytes" | "shape" => {
                    let slot = match key.as_str() {
                        "stream" => &mut args.stream,
                        "flops" => &mut args.flops,
                        "shape" => &mut args.shape,
                        _ => &mut args.bytes,
                    };
                    if slot.is_some() {
                        errors.push(syn::Error::new_spanned(
                            &pair.path,
                            format!("the key `{key}` is given twice"),
                        ));
                    } else if key == "shape" && !is_shape(&pair.value) {
                        errors.push(syn::Error::new_spanned(
                            &pair.value,
                            "the value of `shape` must be an expression giving the run's \
                             dimensions, like shape = (m, n) or shape = (x.dims(), w.dims())",
                        ));
                    } else if matches!(key.as_str(), "flops" | "bytes") && !is_count(&pair.value) {
                        errors.push(syn::Error::new_spanned(
                            &pair.value,
                            format!(
                                "the value of `{key}` must be a numeric expression, like \
                                 {key} = 2 * m * n * k"
                            ),
                        ));
                    } else {
                        *slot = Some(pair.value);
                    }
                    continue;
                }
                _ => {
                    errors.push(syn::Error::new_spanned(&pair.path, unknown_key(&key)));
                    continue;
                }
            };
            let lit = match pair.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(lit), ..
                }) => lit,
                other => {
                    errors.push(syn::Error::new_spanned(
                        other,
                        format!(
                            "the value of `{key}` must be a string literal, like {key} = \"mlp\""
                        ),
                    ));
                    continue;
                }
            };
            check_value(&lit, &key, errors);
            if slot.is_some() {
                errors.push(syn::Error::new_spanned(
                    &pair.path,
                    format!("the key `{key}` is given twice"),
                ));
            } else {
                *slot = Some(lit);
            }
        }
        args
    }

    /// Parses the arguments of `#[profiled(...)]`.
    pub fn parse_attr(input: ParseStream, errors: &mut Errors) -> syn::Result<Args> {
        let pairs = Punctuated::<MetaNameValue, Token![,]>::parse_terminated(input)?;
        Ok(Args::from_pairs(pairs, Args::default(), errors))
    }
}

/// The input of `probe!`: `"name" (, key = value)* (,)? (=> { block })?`.
pub struct ProbeInput {
    pub args: Args,
    pub block: Option<syn::Block>,
    /// Problems in the arguments, reported after the expansion of the original block.
    pub errors: Option<syn::Error>,
}

impl Parse for ProbeInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut errors = Errors::default();
        let name: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "a probe starts with its name as a string literal, like probe!(\"allreduce\", layer = \"mlp\")",
            )
        })?;
        check_value(&name, "name", &mut errors);
        let mut pairs = Punctuated::<MetaNameValue, Token![,]>::new();
        while input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            if input.is_empty() || input.peek(Token![=>]) {
                break;
            }
            pairs.push(input.parse()?);
        }
        let block = if input.peek(Token![=>]) {
            input.parse::<Token![=>]>()?;
            Some(input.parse::<syn::Block>()?)
        } else {
            None
        };
        if !input.is_empty() {
            return Err(input.error(
                "expected `,` followed by `key = \"value\"`, or `=> { ... }` for the block form",
            ));
        }
        // A `name = ...` key repeats the positional name.
        let mut others = Punctuated::<MetaNameValue, Token![,]>::new();
        for pair in pairs {
            if pair.path.is_ident("name") {
                errors.push(syn::Error::new_spanned(
                    &pair.path,
                    "the probe's name is already given as its first argument",
                ));
            } else {
                others.push(pair);
            }
        }
        let args = Args::from_pairs(others, Args::default(), &mut errors);
        let errors = errors.finish().err();
        Ok(ProbeInput {
            args: Args {
                name: Some(name),
                ..args
            },
            block,
            errors,
        })
    }
}
