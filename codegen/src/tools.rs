//! The tool table, the handler trait and the dispatch function, derived from the MCP input and
//! response schemas.
//!
//! A tool exists in the contract when `schemas/mcp/<tool>-input.schema.json` names it with
//! `x-theurian-tool`; its response schema is the file with the same stem ending in `-response`.
//! One without the other stops generation, so a half-published tool cannot compile.

use crate::flatten::pascal;
use crate::{CodegenError, SchemaFile, SchemaSet};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use serde_json::Value;
use std::collections::BTreeSet;
use syn::Ident;

pub(crate) struct Tool {
    pub name: String,
    pub summary: String,
    pub write_intent: bool,
    pub base: String,
    input: String,
    response: String,
    pub schema_keys: Vec<String>,
    input_fields: Vec<String>,
}

fn str_key<'a>(f: &'a SchemaFile, key: &str) -> Result<&'a str, CodegenError> {
    f.doc
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| CodegenError::Schema {
            path: f.rel_path.clone(),
            message: format!("an input schema needs a string `{key}` at its root"),
        })
}

/// The property names an object schema admits, following `allOf` and `$ref` into other files.
fn schema_keys(
    set: &SchemaSet,
    file: &SchemaFile,
    node: &Value,
    out: &mut BTreeSet<String>,
) -> Result<(), CodegenError> {
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        out.extend(props.keys().cloned());
    }
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let (target, fragment) = set.split_ref(file, r)?;
        let target_node = set.pointer(target, fragment)?;
        schema_keys(set, target, target_node, out)?;
    }
    if let Some(all) = node.get("allOf").and_then(Value::as_array) {
        for branch in all {
            schema_keys(set, file, branch, out)?;
        }
    }
    Ok(())
}

/// The serde names of a generated struct's fields, read back from the generated code itself so
/// the key-set test compares three independent things: schema, type and handler.
fn struct_fields(file: &syn::File, type_name: &str) -> Vec<String> {
    fn find<'a>(items: &'a [syn::Item], name: &str) -> Option<&'a syn::ItemStruct> {
        items.iter().find_map(|item| match item {
            syn::Item::Struct(s) if s.ident == name => Some(s),
            syn::Item::Mod(m) => m.content.as_ref().and_then(|(_, items)| find(items, name)),
            _ => None,
        })
    }
    let Some(s) = find(&file.items, type_name) else {
        return Vec::new();
    };
    // A newtype over another generated struct (a tool whose input is only the shared context)
    // has that struct's fields.
    if let syn::Fields::Unnamed(unnamed) = &s.fields {
        if let Some(syn::Type::Path(p)) = unnamed.unnamed.first().map(|f| &f.ty) {
            if let Some(last) = p.path.segments.last() {
                let inner = last.ident.to_string();
                if inner != type_name && find(&file.items, &inner).is_some() {
                    return struct_fields(file, &inner);
                }
            }
        }
        return Vec::new();
    }
    s.fields
        .iter()
        .filter_map(|field| {
            let mut renamed = None;
            for attr in &field.attrs {
                if !attr.path().is_ident("serde") {
                    continue;
                }
                let _ = attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("rename") {
                        let lit: syn::LitStr = meta.value()?.parse()?;
                        renamed = Some(lit.value());
                    } else if meta.input.peek(syn::Token![=]) {
                        let _: syn::Expr = meta.value()?.parse()?;
                    }
                    Ok(())
                });
            }
            renamed.or_else(|| {
                field
                    .ident
                    .as_ref()
                    .map(|i| i.to_string().trim_start_matches("r#").to_owned())
            })
        })
        .collect()
}

/// Every tool of the contract, read-only ones first. `generated` (the Rust types, when there are
/// any) supplies each input struct's field names.
pub(crate) fn collect(
    set: &SchemaSet,
    generated: Option<&syn::File>,
) -> Result<Vec<Tool>, CodegenError> {
    let mut tools = Vec::new();
    let mut responses_seen = BTreeSet::new();
    for f in set.files_under("mcp") {
        let Some(base) = f.stem().strip_suffix("-input") else {
            continue;
        };
        let name = str_key(f, "x-theurian-tool")?.to_owned();
        let summary = str_key(f, "x-theurian-summary")?.to_owned();
        let write_intent = match str_key(f, "x-theurian-intent")? {
            "read-only" => false,
            "write-intent" => true,
            other => {
                return Err(CodegenError::Schema {
                    path: f.rel_path.clone(),
                    message: format!(
                        "`x-theurian-intent` must be read-only or write-intent, not {other:?}"
                    ),
                })
            }
        };
        let response_path = format!("mcp/{base}-response.schema.json");
        let response = set
            .by_path(&response_path)
            .ok_or_else(|| CodegenError::Schema {
                path: f.rel_path.clone(),
                message: format!("tool {name} has an input schema but no {response_path}"),
            })?;
        responses_seen.insert(response.rel_path.clone());
        let mut keys = BTreeSet::new();
        schema_keys(set, f, &f.doc, &mut keys)?;
        let input_type = pascal(f.stem());
        tools.push(Tool {
            input_fields: generated.map_or_else(Vec::new, |g| struct_fields(g, &input_type)),
            name,
            summary,
            write_intent,
            base: base.to_owned(),
            input: f.rel_path.clone(),
            response: response.rel_path.clone(),
            schema_keys: keys.into_iter().collect(),
        });
    }
    for f in set.files_under("mcp") {
        if f.stem().ends_with("-response") && !responses_seen.contains(&f.rel_path) {
            return Err(CodegenError::Schema {
                path: f.rel_path.clone(),
                message: "a response schema with no matching -input.schema.json".into(),
            });
        }
    }
    // Read-only tools first, then the write-intent ones; alphabetical within each.
    tools.sort_by(|a, b| (a.write_intent, &a.name).cmp(&(b.write_intent, &b.name)));
    Ok(tools)
}

fn ident(s: &str) -> Ident {
    Ident::new(s, Span::call_site())
}

/// The `tools` module of the generated source.
pub(crate) fn tool_module(
    set: &SchemaSet,
    generated: &syn::File,
) -> Result<TokenStream, CodegenError> {
    let tools = collect(set, Some(generated))?;
    let variants: Vec<Ident> = tools.iter().map(|t| ident(&pascal(&t.base))).collect();
    let methods: Vec<Ident> = tools
        .iter()
        .map(|t| ident(&t.base.replace('-', "_")))
        .collect();
    let consts: Vec<Ident> = tools
        .iter()
        .map(|t| ident(&t.base.replace('-', "_").to_uppercase()))
        .collect();
    let inputs: Vec<Ident> = tools
        .iter()
        .map(|t| ident(&pascal(&format!("{}-input", t.base))))
        .collect();
    let outputs: Vec<Ident> = tools
        .iter()
        .map(|t| ident(&pascal(&format!("{}-response", t.base))))
        .collect();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let underscores: Vec<String> = tools.iter().map(|t| t.name.replace('.', "_")).collect();
    let count = tools.len();

    let specs = tools.iter().zip(&variants).map(|(t, v)| {
        let name = &t.name;
        let under = t.name.replace('.', "_");
        let summary = &t.summary;
        let intent = if t.write_intent {
            quote!(Intent::WriteIntent)
        } else {
            quote!(Intent::ReadOnly)
        };
        let input = &t.input;
        let response = &t.response;
        let keys = &t.schema_keys;
        let fields = &t.input_fields;
        quote! {
            ToolSpec {
                id: ToolId::#v,
                name: #name,
                underscore_name: #under,
                summary: #summary,
                intent: #intent,
                input_schema: #input,
                response_schema: #response,
                schema_keys: &[#(#keys),*],
                input_fields: &[#(#fields),*],
            }
        }
    });
    let const_docs = tools.iter().map(|t| {
        format!(
            " Whether this build serves `{}`: `None` keeps it out of `tools/list` and refuses calls to it; \
             `Some` declares which input keys the handler reads and which it deliberately leaves unread.",
            t.name
        )
    });
    let method_docs = tools.iter().map(|t| {
        format!(
            " Answers `{}` with arguments that already passed the validation seat.",
            t.name
        )
    });

    let entries = tools.iter().enumerate().map(|(i, t)| {
        let (method, variant, input, output) = (&methods[i], &variants[i], &inputs[i], &outputs[i]);
        let name = &t.name;
        let summary = format!(" `{}`: {}", t.name, t.summary);
        quote! { (#method, #variant, #name, #input, #output, #summary) }
    });

    Ok(quote! {
        /// Hands the tool table to a macro of the caller's, one
        /// `(method, Variant, "wire.name", Input, Response, "doc")` entry per tool in table order,
        /// so code outside this crate (the client's methods, per-tool tests) is generated from the
        /// same table: a new tool schema reaches it with no edit there.
        #[macro_export]
        macro_rules! with_tools {
            ($callback:ident) => {
                $callback! { #(#entries),* }
            };
        }

        /// The tool table, the handler trait and typed dispatch.
        pub mod tools {
            use super::mcp;
            use crate::{KeyUsage, Refusal};
            use std::future::Future;

            /// Every tool the contract defines.
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum ToolId { #(#variants),* }

            /// Whether a tool only reads, or drafts proposals on disk.
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub enum Intent {
                /// Reads derived state; changes nothing.
                ReadOnly,
                /// Writes a proposal for a human to review; never approved state.
                WriteIntent,
            }

            /// One row of the tool table.
            #[derive(Debug)]
            pub struct ToolSpec {
                /// Which tool.
                pub id: ToolId,
                /// The dotted wire name.
                pub name: &'static str,
                /// The same name with `_` for `.`, for clients that reject dots.
                pub underscore_name: &'static str,
                /// The description published in `tools/list`.
                pub summary: &'static str,
                /// Read-only or write-intent.
                pub intent: Intent,
                /// The input schema's path under `schemas/`.
                pub input_schema: &'static str,
                /// The response schema's path under `schemas/`.
                pub response_schema: &'static str,
                /// The keys the input schema admits, `$ref`'d context included, sorted.
                pub schema_keys: &'static [&'static str],
                /// The serde names of the generated input type's fields.
                pub input_fields: &'static [&'static str],
            }

            /// All tools, in the order `tools/list` publishes them.
            pub const TOOLS: [ToolSpec; #count] = [#(#specs),*];

            impl ToolId {
                /// This tool's row of the table.
                pub fn spec(self) -> &'static ToolSpec {
                    match self { #(ToolId::#variants => &TOOLS[ToolId::#variants as usize]),* }
                }
                /// Looks a tool up by either spelling of its name.
                pub fn from_wire_name(name: &str) -> Option<ToolId> {
                    match name {
                        #(#names | #underscores => Some(ToolId::#variants),)*
                        _ => None,
                    }
                }
            }

            /// The daemon's side of the contract. Every tool has a required registration constant
            /// and a required handler method, so a new schema pair does not compile until the
            /// server both decides about it and answers it: no tool can be registered and then
            /// refuse every call for want of a handler.
            pub trait ToolHandlers: Send + Sync + 'static {
                #(
                    #[doc = #const_docs]
                    const #consts: Option<KeyUsage>;
                )*
                #(
                    #[doc = #method_docs]
                    fn #methods(&self, input: mcp::#inputs) -> impl Future<Output = Result<mcp::#outputs, Refusal>> + Send;
                )*
                /// The registration constant of `id`.
                fn key_usage(id: ToolId) -> Option<KeyUsage> {
                    match id { #(ToolId::#variants => Self::#consts),* }
                }
            }

            /// The tools `H` serves, in table order.
            pub fn registered<H: ToolHandlers>() -> impl Iterator<Item = &'static ToolSpec> {
                TOOLS.iter().filter(|t| H::key_usage(t.id).is_some())
            }

            /// Decodes arguments into `id`'s input type and drops them: the typed half of a call
            /// without a handler, for harnesses that exercise the seat and the decode alone.
            pub fn decode_only(id: ToolId, arguments: serde_json::Value) -> Result<(), Refusal> {
                match id {
                    #(
                        ToolId::#variants => serde_json::from_value::<mcp::#inputs>(arguments)
                            .map(drop)
                            .map_err(|e| Refusal::undecodable(id.spec().name, &e)),
                    )*
                }
            }

            /// Decodes validated arguments into the tool's input type, runs its handler, and
            /// returns the typed response for the transport to write.
            pub async fn dispatch<H: ToolHandlers>(
                handlers: &H,
                id: ToolId,
                arguments: serde_json::Value,
            ) -> Result<crate::answer::Answer, Refusal> {
                if H::key_usage(id).is_none() {
                    return Err(Refusal::not_served(id.spec().name));
                }
                match id {
                    #(
                        ToolId::#variants => {
                            let input: mcp::#inputs = serde_json::from_value(arguments)
                                .map_err(|e| Refusal::undecodable(id.spec().name, &e))?;
                            let output = handlers.#methods(input).await?;
                            Ok(crate::answer::Answer::new(output))
                        }
                    )*
                }
            }
        }
    })
}
