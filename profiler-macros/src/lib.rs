//! Procedural macros of `profiler-core`. Use them through `profiler_core`, never directly.
//!
//! Each macro parses, then validates (collecting every problem of one annotation), then expands.
//! Without the `enable` feature, which `profiler-core/enable` switches on, every macro validates its
//! arguments and returns the item or block it was given, token for token, except that the
//! work keys (`flops`, `bytes`, `shape`) are referenced inside a closure that is
//! never called, first in the body: a variable used only in a key stays used, nothing is evaluated
//! and no code is left (the zero-overhead test compares the machine code). So are the function's
//! parameters that `#[profiled]`'s `stream` names, in every build without `streams`, where the
//! expression is never evaluated.
//!
//! What the annotations accept is in the repository's `docs/reference.md` ("Annotations and the
//! API") and, with examples, `docs/guide.md` ("Annotating code"); where this crate sits in the
//! pipeline, in `docs/architecture.md`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::parse::Parser;
use syn::{Item, ItemFn};

mod args;
mod expand;

use args::{Args, Errors, ProbeInput};

/// Checks that the annotated item is a function `#[profiled]` can wrap.
fn check_fn(item: &Item, attr: &str, errors: &mut Errors) -> Option<ItemFn> {
    match item {
        Item::Fn(f) => {
            if let Some(constness) = &f.sig.constness {
                errors.push(syn::Error::new_spanned(
                    constness,
                    format!("#[{attr}] cannot measure a `const fn`: it may run at compile time"),
                ));
                return None;
            }
            Some(f.clone())
        }
        other => {
            errors.push(syn::Error::new_spanned(
                other,
                format!("#[{attr}] applies only to functions with a body"),
            ));
            None
        }
    }
}

/// Output on error: the errors, plus the original item so the rest of the crate still resolves.
fn with_errors(error: syn::Error, original: TokenStream2) -> TokenStream {
    let errors = error.to_compile_error();
    quote!(#errors #original).into()
}

/// Measures each call of a function. See `profiler_core::profiled`.
#[proc_macro_attribute]
pub fn profiled(attr: TokenStream, item: TokenStream) -> TokenStream {
    let original = TokenStream2::from(item.clone());
    let mut errors = Errors::default();
    let args =
        match (|input: syn::parse::ParseStream| Args::parse_attr(input, &mut errors)).parse(attr) {
            Ok(args) => args,
            Err(e) => {
                errors.push(e);
                Args::default()
            }
        };
    let parsed = match syn::parse::<Item>(item) {
        Ok(item) => check_fn(&item, "profiled", &mut errors),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    if let Some(f) = &parsed {
        // A second `#[profiled]` below this one would expand again inside the first's expansion
        // (in the enabled build, a second descriptor in the same scope).
        if let Some(again) = f.attrs.iter().find(|attr| {
            attr.path()
                .segments
                .last()
                .is_some_and(|segment| segment.ident == "profiled")
        }) {
            errors.push(syn::Error::new_spanned(
                again,
                "`#[profiled]` is given twice on this function: one measurement per function \
                 (measure part of its body with `probe!`)",
            ));
        }
        if args.name.is_none() && !args::valid_value(&expand::unraw(&f.sig.ident)) {
            errors.push(syn::Error::new_spanned(
                &f.sig.ident,
                "this function's name cannot be typed into PROF_FILTER: give the probe one with \
                 `name = \"...\"` (letters, digits and `_ . : / -`)",
            ));
        }
    }
    if let Err(e) = errors.finish() {
        return with_errors(e, original);
    }
    let parsed = parsed.expect("checked above");
    if cfg!(feature = "enable") {
        expand::profiled_fn(&args, parsed).into()
    } else if args.has_work() || !expand::stream_params(&args, &parsed.sig).is_empty() {
        expand::disabled_fn(&args, parsed).into()
    } else {
        original.into()
    }
}

/// Measures from here to the end of the scope, or one block. See `profiler_core::probe!`.
#[proc_macro]
pub fn probe(input: TokenStream) -> TokenStream {
    let ProbeInput {
        args,
        block,
        errors,
    } = match syn::parse::<ProbeInput>(input) {
        Ok(parsed) => parsed,
        Err(e) => return e.to_compile_error().into(),
    };
    if let Some(e) = errors {
        // Keep the block's value so that one typo gives one error.
        let fallback = match &block {
            Some(block) => quote!(#block),
            None => quote!(::profiler_core::ProbeGuard::inert()),
        };
        // A block, so that the errors and the value form one expression.
        let errors = e.to_compile_error();
        return quote!({ #errors #fallback }).into();
    }
    if cfg!(feature = "enable") {
        expand::probe(&args, block).into()
    } else {
        // Keys referenced, never evaluated (so that a local used only in one is used).
        let keys = expand::disabled_keys(&args);
        match block {
            // Braces of the macro's own (the call site's span) around the user's statements:
            // the user's own braces, as a function's tail (`fn f() -> u32 { probe!("f" => {
            // x + 1 }) }`), are `unused_braces` to rustc, an error under `-D warnings`.
            Some(block) if keys.is_empty() => {
                let stmts = &block.stmts;
                quote!({ #(#stmts)* }).into()
            }
            // The keys go first inside the user's own braces: a block of ours around the user's
            // would be `{ keys; { .. } }`, whose inner braces rustc flags as `unused_braces`.
            Some(block) => {
                let stmts = &block.stmts;
                let mut out = TokenStream2::new();
                block
                    .brace_token
                    .surround(&mut out, |tokens| tokens.extend(quote!(#keys #(#stmts)*)));
                out.into()
            }
            None if keys.is_empty() => quote!(::profiler_core::ProbeGuard::inert()).into(),
            None => quote!({ #keys ::profiler_core::ProbeGuard::inert() }).into(),
        }
    }
}

/// Starts profiling before `main`'s body and writes results when it returns. See
/// `profiler_core::main`.
#[proc_macro_attribute]
pub fn main(attr: TokenStream, item: TokenStream) -> TokenStream {
    let original = TokenStream2::from(item.clone());
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.push(syn::Error::new_spanned(
            TokenStream2::from(attr),
            "#[profiler_core::main] takes no arguments: configure it with the PROF_* variables",
        ));
    }
    let parsed = match syn::parse::<Item>(item) {
        Ok(item) => check_fn(&item, "profiler_core::main", &mut errors),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    if let Err(e) = errors.finish() {
        return with_errors(e, original);
    }
    if cfg!(feature = "enable") {
        expand::main_fn(parsed.expect("checked above")).into()
    } else {
        original.into()
    }
}
