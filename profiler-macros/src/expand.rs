//! Code generation: for enabled builds the descriptor registration and the wrapped bodies; for
//! disabled ones, the keys referenced without being evaluated.
//!
//! Generated code names everything by absolute path (`::core::`, `::profiler_core::__private::`)
//! so that no name the user defines can shadow it. The user's statements are emitted unchanged
//! inside a new block, so their spans, lints and inference survive.

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{
    AttrStyle, Block, Expr, FnArg, ItemFn, LitStr, Pat, PatIdent, PatType, ReturnType, Signature,
    Stmt, Type,
};

use crate::args::Args;

/// Whether a descriptor comes from `#[profiled]` or from `probe!`.
#[derive(Clone, Copy)]
pub enum Kind {
    Fn,
    Probe,
}

fn opt_lit(lit: Option<&LitStr>) -> TokenStream {
    match lit {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => quote!(::core::option::Option::None),
    }
}

/// Items that declare and register one descriptor named `__PROFILER_DESC` in the current scope.
/// `span` locates the annotation, for `line!()` and `file!()`.
pub fn registration(name: &LitStr, args: &Args, kind: Kind, span: Span) -> TokenStream {
    let layer = opt_lit(args.layer.as_ref());
    let phase = opt_lit(args.phase.as_ref());
    let kind = match kind {
        Kind::Fn => quote!(::profiler_core::__private::Kind::Fn),
        Kind::Probe => quote!(::profiler_core::__private::Kind::Probe),
    };
    // Which work keys the probe has, so that the plan reserves their storage.
    let work = u8::from(args.flops.is_some())
        | (u8::from(args.bytes.is_some()) << 1)
        | (u8::from(args.shape.is_some()) << 2);
    let file = quote_spanned!(span=> ::core::file!());
    let line = quote_spanned!(span=> ::core::line!());
    quote! {
        // Declared here so that its type name spells the enclosing function's path.
        struct __ProfilerAnchor;
        fn __profiler_anchor() -> &'static str {
            ::core::any::type_name::<__ProfilerAnchor>()
        }
        static __PROFILER_DESC: ::profiler_core::__private::Descriptor =
            ::profiler_core::__private::Descriptor::new(::profiler_core::__private::StaticInfo {
                name: #name,
                layer: #layer,
                phase: #phase,
                kind: #kind,
                module: ::core::module_path!(),
                file: #file,
                line: #line,
                work: #work,
                anchor: __profiler_anchor,
            });
        ::profiler_core::__private::inventory::submit! {
            ::profiler_core::__private::Registration(&__PROFILER_DESC)
        }
    }
}

/// The expression that starts the measurement: `enter` (or `enter_async`), or, in a build with
/// a device backend (feature `streams`, set by profiler-core's `cuda`) and `stream = <expr>`, the
/// same load and branch followed by `enter_on` with a reference to the stream. The expression is
/// evaluated in the user's scope (a temporary such as `s.clone()` lives until the guard is made;
/// a place such as `self.stream` is only borrowed), and only when the probe takes part.
///
/// With `flops`, `bytes` or `shape`, the same load and branch, then the keys' expressions,
/// evaluated only when one of the probe's events is armed in this iteration (`is_armed`), and
/// handed to the `*_work` form of the call, which stores them before the start mark.
fn enter_call(args: &Args, is_async: bool) -> TokenStream {
    let p = quote!(::profiler_core::__private);
    let stream = args.stream.as_ref().filter(|_| cfg!(feature = "streams"));
    let has_work = args.has_work();
    let inert = if is_async {
        quote!(#p::inert_async())
    } else {
        quote!(#p::inert())
    };
    if has_work {
        let count = |expr: Option<&Expr>| match expr {
            Some(expr) => quote_spanned!(expr.span()=> #p::count(#expr)),
            None => quote!(#p::NO_WORK),
        };
        let flops = count(args.flops.as_ref());
        let bytes = count(args.bytes.as_ref());
        let shape = match args.shape.as_ref() {
            Some(expr) => quote_spanned!(expr.span()=> #p::shape_of(&(#expr))),
            None => quote!(#p::Dims::EMPTY),
        };
        let call = match (stream, is_async) {
            (Some(stream), false) => {
                quote!(#p::enter_on_work(&__PROFILER_DESC, __profiler_state, &(#stream), &__profiler_work))
            }
            (Some(stream), true) => {
                quote!(#p::enter_async_on_work(&__PROFILER_DESC, __profiler_state, &(#stream), &__profiler_work))
            }
            (None, false) => {
                quote!(#p::enter_work(&__PROFILER_DESC, __profiler_state, &__profiler_work))
            }
            (None, true) => {
                quote!(#p::enter_async_work(&__PROFILER_DESC, __profiler_state, &__profiler_work))
            }
        };
        return quote! {
            match #p::active(&__PROFILER_DESC) {
                ::core::option::Option::None => #inert,
                ::core::option::Option::Some(__profiler_state) => {
                    let __profiler_work = if #p::is_armed(__profiler_state) {
                        #p::Work { flops: #flops, bytes: #bytes, shape: #shape }
                    } else {
                        #p::Work::NONE
                    };
                    #call
                }
            }
        };
    }
    match stream {
        Some(stream) => {
            let on = if is_async {
                quote!(#p::enter_async_on)
            } else {
                quote!(#p::enter_on)
            };
            quote! {
                match #p::active(&__PROFILER_DESC) {
                    ::core::option::Option::None => #inert,
                    ::core::option::Option::Some(__profiler_state) => {
                        #on(&__PROFILER_DESC, __profiler_state, &(#stream))
                    }
                }
            }
        }
        None if is_async => quote!(#p::enter_async(&__PROFILER_DESC)),
        None => quote!(#p::enter(&__PROFILER_DESC)),
    }
}

/// `item` with its body replaced by `body(signature, statements)`: its outer attributes,
/// visibility and signature kept, its inner attributes (`#![...]`) first in the new body, and
/// the body's braces kept (so that spans point where they did).
fn wrap_body(item: ItemFn, body: impl FnOnce(&Signature, &[Stmt]) -> TokenStream) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = item;
    let (outer, inner): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|attr| matches!(attr.style, AttrStyle::Outer));
    let inside = body(&sig, &block.stmts);
    let mut out = quote! { #(#outer)* #vis #sig };
    block.brace_token.surround(&mut out, |tokens| {
        quote!(#(#inner)* #inside).to_tokens(tokens);
    });
    out
}

/// The work keys' expressions in a build without `enable`, referenced inside a closure that is
/// never called. A parameter or a local used only in a key is then used (no `unused_variables`
/// warning, which would break a `-D warnings` build), while nothing is evaluated and no code is
/// left: the closure is dropped where it is made, and its body is never called. (`stream` is
/// left out: its expression may name what exists only with `cuda`, and is never type-checked
/// without a device backend, as the reference promises; [`stream_refs`] references only the
/// function parameters it names.)
pub fn disabled_keys(args: &Args) -> TokenStream {
    let exprs: Vec<&Expr> = [&args.flops, &args.bytes, &args.shape]
        .into_iter()
        .flatten()
        .collect();
    if exprs.is_empty() {
        return TokenStream::new();
    }
    quote! {
        #[allow(clippy::all, unused_must_use)]
        let _ = || {
            #( let _ = &(#exprs); )*
        };
    }
}

/// The parameters of `sig` that the `stream` expression names, in a build without `streams`
/// (where the expression is never evaluated): a parameter used only there would be reported
/// unused. Only identifiers equal to a parameter bound by a plain identifier pattern without
/// attributes (an attribute such as `#[cfg]` may remove it) count, and not one after `.`, `::`
/// or `'` (a field, a method, a path's segment, a lifetime) nor before `::` or `!` (a path, a
/// macro); `self` is a receiver, never such a parameter. Nothing else is named: the expression
/// may name what exists only with `cuda`.
pub fn stream_params(args: &Args, sig: &Signature) -> Vec<Ident> {
    let Some(stream) = args.stream.as_ref().filter(|_| !cfg!(feature = "streams")) else {
        return Vec::new();
    };
    let params: Vec<&Ident> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(PatType { attrs, pat, .. }) if attrs.is_empty() => match &**pat {
                Pat::Ident(PatIdent { attrs, ident, .. }) if attrs.is_empty() => Some(ident),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let mut named = Vec::new();
    if !params.is_empty() {
        collect_named(stream.to_token_stream(), &params, &mut named);
    }
    named
}

/// Adds to `named` each of `params` that `tokens` name as a variable (see [`stream_params`]).
fn collect_named(tokens: TokenStream, params: &[&Ident], named: &mut Vec<Ident>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let punct =
        |i: Option<&TokenTree>, c: char| matches!(i, Some(TokenTree::Punct(p)) if p.as_char() == c);
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Group(group) => collect_named(group.stream(), params, named),
            TokenTree::Ident(ident) => {
                let before = |back: usize| i.checked_sub(back).and_then(|j| tokens.get(j));
                let after = |ahead: usize| tokens.get(i + ahead);
                // A field, a method or a path's later segment; or a lifetime (`'a`).
                let member = punct(before(1), '.')
                    || punct(before(1), '\'')
                    || (punct(before(1), ':') && punct(before(2), ':'));
                let prefix = punct(after(1), '!') || (punct(after(1), ':') && punct(after(2), ':'));
                if member || prefix {
                    continue;
                }
                if let Some(param) = params.iter().copied().find(|param| *param == ident) {
                    if !named.contains(param) {
                        named.push(param.clone());
                    }
                }
            }
            _ => {}
        }
    }
}

/// The parameters named by the `stream` expression ([`stream_params`]) referenced inside a
/// closure that is never called, as [`disabled_keys`] does for the work keys: each is used,
/// nothing is evaluated and no code is left.
pub fn stream_refs(params: &[Ident]) -> TokenStream {
    if params.is_empty() {
        return TokenStream::new();
    }
    quote! {
        #[allow(clippy::all)]
        let _ = || {
            #( let _ = &#params; )*
        };
    }
}

/// `#[profiled]` in a build without `enable`: the item as it was, but for a function whose
/// annotation has work keys, which are referenced (never evaluated) first in its body
/// ([`disabled_keys`]), or whose `stream` names some of its parameters, which are referenced
/// likewise ([`stream_refs`]). Without either the caller returns the item untouched.
pub fn disabled_fn(args: &Args, item: ItemFn) -> TokenStream {
    let keys = disabled_keys(args);
    let streams = stream_refs(&stream_params(args, &item.sig));
    wrap_body(item, |_, stmts| quote!(#keys #streams #(#stmts)*))
}

/// `#[profiled]` on a function: the measurement wraps the original body.
pub fn profiled_fn(args: &Args, item: ItemFn) -> TokenStream {
    wrap_body(item, |sig, stmts| {
        let name = args
            .name
            .clone()
            .unwrap_or_else(|| LitStr::new(&unraw(&sig.ident), sig.ident.span()));
        let registration = registration(&name, args, Kind::Fn, sig.ident.span());
        // Before the body (and outside an `async fn`'s async block).
        let streams = stream_refs(&stream_params(args, sig));
        let body = if sig.asyncness.is_some() && returns_never(&sig.output) {
            // `-> !`: the future never completes, so there is no `complete()` to reach and no
            // return to infer. An async block would not do: its body `loop { .. }` gives it the
            // output `()`, not `!` (and a fake return edge would need the unstable `!` type).
            // The guard, dropped with the future, records nothing, as for any future dropped
            // before completing.
            let enter = enter_call(args, true);
            quote! {
                let __profiler_guard = #enter;
                #(#stmts)*
            }
        } else if sig.asyncness.is_some() {
            let fake_return = fake_return_edge(&sig.output);
            let enter = enter_call(args, true);
            quote! {
                let __profiler_guard = #enter;
                let __profiler_result = async move {
                    #fake_return
                    #(#stmts)*
                }
                .await;
                __profiler_guard.complete();
                __profiler_result
            }
        } else {
            let enter = enter_call(args, false);
            // The guard is bound by a match arm, whose body (the original block) drops its
            // temporaries when it ends: the guard is dropped after the body's tail expression's
            // temporaries in every edition. With `let __profiler_guard = ..;` first in the body,
            // edition 2021 dropped those temporaries after the guard and 2024 before it, which
            // `tail_expr_drop_order` (in `rust_2024_compatibility`) reported on the user's tail
            // expression, where no `allow` of ours could reach it.
            quote! {
                match #enter {
                    __profiler_guard => { #(#stmts)* }
                }
            }
        };
        quote!(#registration #streams #body)
    })
}

/// An unreachable `return` of the declared type, so that `?` and `return` inside the async
/// block infer the function's return type (as tracing-attributes does). Skipped for
/// `impl Trait`, which a `let` cannot name.
fn fake_return_edge(output: &ReturnType) -> TokenStream {
    let ty = match output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) if mentions_impl_trait(ty) => return TokenStream::new(),
        ReturnType::Type(_, ty) => ty.to_token_stream(),
    };
    quote! {
        #[allow(unreachable_code, clippy::diverging_sub_expression, clippy::needless_return)]
        if false {
            let __profiler_fake_return: #ty = loop {};
            return __profiler_fake_return;
        }
    }
}

/// Whether the function returns `!`.
fn returns_never(output: &ReturnType) -> bool {
    fn never(ty: &Type) -> bool {
        match ty {
            Type::Never(_) => true,
            Type::Paren(inner) => never(&inner.elem),
            Type::Group(inner) => never(&inner.elem),
            _ => false,
        }
    }
    matches!(output, ReturnType::Type(_, ty) if never(ty))
}

fn mentions_impl_trait(ty: &Type) -> bool {
    ty.to_token_stream()
        .into_iter()
        .any(|tt| matches!(&tt, proc_macro2::TokenTree::Ident(i) if i == "impl"))
        || ty.to_token_stream().to_string().contains("impl ")
}

/// `probe!`: the guard form, or the block form measuring one block.
pub fn probe(args: &Args, block: Option<Block>) -> TokenStream {
    let name = args.name.as_ref().expect("probe name is positional");
    let registration = registration(name, args, Kind::Probe, name.span());
    let enter = enter_call(args, false);
    match block {
        None => quote! {
            {
                #registration
                #enter
            }
        },
        Some(block) => quote! {
            {
                #registration
                let __profiler_guard = #enter;
                let __profiler_value = #block;
                ::core::mem::drop(__profiler_guard);
                __profiler_value
            }
        },
    }
}

/// `#[profiler_core::main]`: start the session before the body; the guard writes on return.
pub fn main_fn(item: ItemFn) -> TokenStream {
    wrap_body(item, |_, stmts| {
        // Bound by a match arm, as `profiled_fn`'s guard is: dropped after the temporaries of
        // the body's tail expression in every edition (no `tail_expr_drop_order` report).
        quote! {
            match ::profiler_core::init() {
                __profiler_session => { #(#stmts)* }
            }
        }
    })
}

/// The identifier as written, without a raw `r#` prefix.
pub fn unraw(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}
