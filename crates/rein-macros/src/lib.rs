//! rein's attribute macros, re-exported by the `rein` facade as [`rein::resource`].
//!
//! kube-derive's `#[derive(CustomResource)]` and `#[derive(KubeSchema)]` write paths such as
//! `::kube::core` and `::k8s_openapi` into the code they generate, so a crate that depends on
//! `rein` alone (not on `kube`, `k8s-openapi` or `serde_json`) must name rein's re-exports in a
//! `#[kube(crates(...))]` block on every type. `#[rein::resource]`, placed above the derive,
//! adds that block. In a crate that depends on `rein` the attribute takes no argument; in this
//! example, where a module `rein` stands in for the facade (this crate cannot depend on what
//! re-exports it), `crate = "..."` names where rein is, as it would for a renamed dependency:
//!
//! ```
//! use rein::CustomResource;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[rein::resource(crate = "crate::rein")]
//! #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
//! pub struct WidgetSpec {
//!     pub size: i32,
//! }
//!
//! # fn main() {
//! use rein::CustomResourceExt as _;
//! assert_eq!(Widget::crd().metadata.name.as_deref(), Some("widgets.example.com"));
//! # }
//! # mod rein {
//! #     pub use kube_core as core;
//! #     pub use kube_core::CustomResourceExt;
//! #     pub use kube_derive::CustomResource;
//! #     pub use k8s_openapi;
//! #     pub use rein_macros::resource;
//! #     pub use serde_json;
//! # }
//! ```
//!
//! [`rein::resource`]: https://docs.rs/rein/latest/rein/attr.resource.html

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2, TokenTree};
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{Attribute, DeriveInput, LitStr, Path, Token};

/// Points the code kube-derive generates for the item at rein's re-exports: adds
/// `#[kube(crates(kube_core = "::rein::core", k8s_openapi = "::rein::k8s_openapi",
/// serde_json = "::rein::serde_json"))]` when the item derives `CustomResource`, and
/// `#[x_kube(crates(kube_core = "::rein::core", serde_json = "::rein::serde_json"))]` when it
/// derives `KubeSchema`, unless the item already has such a block.
///
/// Place it **above** the `#[derive(...)]` (attributes expand top-down, so a derive above it
/// would run first). `#[rein::resource(crate = "::my_rein")]` names rein under another path,
/// for a crate that renamed its `rein` dependency. Misplaced or misused, it is a compile error
/// that says so.
#[proc_macro_attribute]
pub fn resource(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args.into(), item.into()).into()
}

/// The expansion, on `proc_macro2` tokens so that it can be tested.
fn expand(args: TokenStream2, item: TokenStream2) -> TokenStream2 {
    match try_expand(args, item) {
        Ok(tokens) => tokens,
        Err(err) => err.to_compile_error(),
    }
}

fn try_expand(args: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let rein = rein_path(args)?;
    let mut input: DeriveInput = syn::parse2(item)?;
    let derives = derived(&input.attrs)?;
    let custom_resource = derives.iter().any(|d| d == "CustomResource");
    let kube_schema = derives.iter().any(|d| d == "KubeSchema");
    if !custom_resource && !kube_schema {
        return Err(syn::Error::new(
            Span::call_site(),
            "#[rein::resource] goes above a #[derive(CustomResource)] or #[derive(KubeSchema)] \
             (attributes expand top-down: a derive placed above it has already run)",
        ));
    }
    let core = format!("{rein}::core");
    let k8s_openapi = format!("{rein}::k8s_openapi");
    let serde_json = format!("{rein}::serde_json");
    if custom_resource && !names_crates(&input.attrs, "kube") {
        input.attrs.push(syn::parse_quote! {
            #[kube(crates(kube_core = #core, k8s_openapi = #k8s_openapi, serde_json = #serde_json))]
        });
    }
    if kube_schema && !names_crates(&input.attrs, "x_kube") {
        input.attrs.push(syn::parse_quote! {
            #[x_kube(crates(kube_core = #core, serde_json = #serde_json))]
        });
    }
    Ok(quote!(#input))
}

/// The path rein is reachable at: `::rein`, or the `crate = "..."` argument.
fn rein_path(args: TokenStream2) -> syn::Result<String> {
    if args.is_empty() {
        return Ok("::rein".to_owned());
    }
    let mut path = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            let lit: LitStr = meta.value()?.parse()?;
            let parsed: Path = lit.parse()?;
            path = Some(quote!(#parsed).to_string().replace(' ', ""));
            Ok(())
        } else {
            Err(meta.error("#[rein::resource] takes one argument: crate = \"::path::to::rein\""))
        }
    });
    syn::parse::Parser::parse2(parser, args)?;
    Ok(path.unwrap_or_else(|| "::rein".to_owned()))
}

/// The last segment of every path the item's `#[derive(...)]` attributes name.
fn derived(attrs: &[Attribute]) -> syn::Result<Vec<String>> {
    let mut names = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let paths = attr.parse_args_with(Punctuated::<Path, Token![,]>::parse_terminated)?;
        names.extend(
            paths
                .iter()
                .filter_map(|p| p.segments.last())
                .map(|s| s.ident.to_string()),
        );
    }
    Ok(names)
}

/// Whether an attribute `#[name(...)]` of the item already has a `crates(...)` entry.
fn names_crates(attrs: &[Attribute], name: &str) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident(name))
        .filter_map(|a| a.meta.require_list().ok())
        .any(|list| {
            list.tokens
                .clone()
                .into_iter()
                .any(|t| matches!(t, TokenTree::Ident(i) if i == "crates"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(args: TokenStream2, item: TokenStream2) -> String {
        expand(args, item).to_string()
    }

    #[test]
    fn a_custom_resource_gets_rein_s_crates() {
        let out = expanded(
            quote!(),
            quote! {
                #[derive(CustomResource, Clone)]
                #[kube(group = "a.b", version = "v1", kind = "W")]
                struct WSpec { x: i32 }
            },
        );
        assert!(out.contains("kube (crates (kube_core = \"::rein::core\" , k8s_openapi = \"::rein::k8s_openapi\" , serde_json = \"::rein::serde_json\"))"), "{out}");
        assert!(!out.contains("x_kube"), "{out}");
    }

    #[test]
    fn a_kube_schema_gets_its_own_block_and_a_path_derive_counts() {
        let out = expanded(
            quote!(crate = "::my_rein"),
            quote! {
                #[derive(rein::CustomResource, rein::KubeSchema)]
                struct WSpec { x: i32 }
            },
        );
        assert!(out.contains("kube_core = \"::my_rein::core\""), "{out}");
        assert!(
            out.contains("x_kube (crates (kube_core = \"::my_rein::core\" , serde_json = \"::my_rein::serde_json\"))"),
            "{out}"
        );
    }

    #[test]
    fn a_crates_block_already_there_is_left_alone() {
        let out = expanded(
            quote!(),
            quote! {
                #[derive(CustomResource)]
                #[kube(crates(kube_core = "::kube::core"))]
                struct WSpec { x: i32 }
            },
        );
        assert!(!out.contains("::rein::core"), "{out}");
    }

    #[test]
    fn misuse_is_a_compile_error_that_says_what_to_do() {
        let no_derive = expanded(
            quote!(),
            quote!(
                struct WSpec {
                    x: i32,
                }
            ),
        );
        assert!(no_derive.contains("compile_error"), "{no_derive}");
        assert!(
            no_derive.contains("goes above a #[derive(CustomResource)]"),
            "{no_derive}"
        );
        let bad_arg = expanded(
            quote!(krate = "x"),
            quote!(
                #[derive(CustomResource)]
                struct S;
            ),
        );
        assert!(bad_arg.contains("takes one argument"), "{bad_arg}");
        let bad_path = expanded(
            quote!(crate = "not a path"),
            quote!(
                #[derive(CustomResource)]
                struct S;
            ),
        );
        assert!(bad_path.contains("compile_error"), "{bad_path}");
    }
}
