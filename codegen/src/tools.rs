//! Everything generated per tool, derived from the MCP input and response schemas: the tool
//! table, each tool's key usage, the handler trait with its project opener, typed dispatch, and
//! the `tool_handlers!` and `with_tools!` macros.
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

impl Tool {
    /// Whether the tool answers about one project at a pinnable state: its input names
    /// `projectId` and `snapshotId`, and the seam opens the project before the handler runs.
    pub fn scoped(&self) -> bool {
        ["projectId", "snapshotId"]
            .iter()
            .all(|k| self.schema_keys.iter().any(|s| s == k))
    }

    /// The agent labels a read-only tool accepts and leaves unread (a write-intent tool records
    /// them on its draft).
    fn unread(&self) -> Vec<&'static str> {
        if self.write_intent {
            return Vec::new();
        }
        ["agentId", "taskId"]
            .into_iter()
            .filter(|k| self.schema_keys.iter().any(|s| s == k))
            .collect()
    }
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

/// The generated struct named `name`, in whichever module typify put it.
fn find<'a>(items: &'a [syn::Item], name: &str) -> Option<&'a syn::ItemStruct> {
    items.iter().find_map(|item| match item {
        syn::Item::Struct(s) if s.ident == name => Some(s),
        syn::Item::Mod(m) => m.content.as_ref().and_then(|(_, items)| find(items, name)),
        _ => None,
    })
}

/// The serde names of a generated struct's fields, read back from the generated code itself so
/// the key-set test compares three independent things: schema, type and handler.
fn struct_fields(file: &syn::File, type_name: &str) -> Vec<String> {
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

/// The names one tool goes by in generated code.
struct Names {
    /// `ToolId` variant.
    variant: Ident,
    /// Handler method, and the handler module's name in the server.
    method: Ident,
    /// Registration constant.
    constant: Ident,
    /// The pre-open check method of a project-scoped tool.
    check: Ident,
    input: Ident,
    /// A project-scoped tool's own arguments: its input without the shared context.
    args: Ident,
    output: Ident,
}

impl Names {
    fn of(t: &Tool) -> Names {
        let snake = t.base.replace('-', "_");
        Names {
            variant: ident(&pascal(&t.base)),
            method: ident(&snake),
            constant: ident(&snake.to_uppercase()),
            check: ident(&format!("check_{snake}")),
            input: ident(&pascal(&format!("{}-input", t.base))),
            args: ident(&pascal(&format!("{}-args", t.base))),
            output: ident(&pascal(&format!("{}-response", t.base))),
        }
    }
}

/// The `tools` module of the generated source: the table, the key declarations, the handler
/// trait, dispatch, and the two macros other crates build from (`with_tools!`,
/// `tool_handlers!`).
pub(crate) fn tool_module(
    set: &SchemaSet,
    generated: &syn::File,
) -> Result<TokenStream, CodegenError> {
    let tools = collect(set, Some(generated))?;
    let names: Vec<Names> = tools.iter().map(Names::of).collect();
    let with_tools = with_tools_macro(&tools, &names);
    let handlers_macro = handlers_macro(&tools, &names);
    let table = table(&tools, &names);
    let keys = key_usage(&tools, &names);
    let handler_trait = handler_trait(&tools, &names);
    let dispatch = dispatch(&tools, &names);
    let args = args_module(&tools, &names, generated)?;
    Ok(quote! {
        #with_tools
        #handlers_macro

        /// The tool table, the handler trait and typed dispatch.
        pub mod tools {
            use super::mcp;
            use crate::{KeyUsage, Refusal};
            use std::future::Future;

            #table
            #keys
            #args
            #handler_trait
            #dispatch
        }
    })
}

/// The stem of the schema every project-scoped tool includes whole: the shared context.
pub(crate) const CONTEXT_STEM: &str = "tool-context";

/// `args`: per project-scoped tool, the arguments its handler destructures (the input less the
/// shared context, which the seam consumes: it opens the project and hands on the labels), and
/// `split` on the input type, which parts the two without copying.
fn args_module(
    tools: &[Tool],
    names: &[Names],
    generated: &syn::File,
) -> Result<TokenStream, CodegenError> {
    if !tools.iter().any(Tool::scoped) {
        return Ok(TokenStream::new());
    }
    let context_name = pascal(CONTEXT_STEM);
    let context = find(&generated.items, &context_name).ok_or_else(|| CodegenError::Schema {
        path: format!("mcp/{CONTEXT_STEM}.schema.json"),
        message: "project-scoped tools need the shared context schema every one of them includes"
            .into(),
    })?;
    let context_fields: Vec<&Ident> = context
        .fields
        .iter()
        .filter_map(|f| f.ident.as_ref())
        .collect();
    let context_ty = ident(&context_name);
    let items = tools
        .iter()
        .zip(names)
        .filter(|(t, _)| t.scoped())
        .map(|(t, n)| tool_args(t, n, generated, &context_ty, &context_fields))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(quote! {
        /// Each project-scoped tool's own arguments. The seam splits a decoded input into the
        /// shared context (which it consumes) and these, which the tool's check and handler
        /// receive and destructure, so a key added to a schema reaches exactly one place.
        pub mod args {
            use super::mcp::*;
            #(#items)*
        }
    })
}

/// One tool's arguments struct and its input's `split`.
fn tool_args(
    t: &Tool,
    n: &Names,
    generated: &syn::File,
    context_ty: &Ident,
    context_fields: &[&Ident],
) -> Result<TokenStream, CodegenError> {
    let (input, args) = (&n.input, &n.args);
    let refused = |message: String| CodegenError::Schema {
        path: t.input.clone(),
        message,
    };
    let input_struct = find(&generated.items, &input.to_string())
        .ok_or_else(|| refused(format!("no generated type {input} for tool {}", t.name)))?;
    let doc = format!(
        " `{}`'s own arguments: its input less the shared context.",
        t.name
    );
    let syn::Fields::Named(named) = &input_struct.fields else {
        // typify gives every object input named fields, the context-only ones included; an
        // input of another shape has no keys to part.
        return Err(refused(format!(
            "tool {}'s input was generated as {input} without named fields, so its shared context cannot be split from its arguments",
            t.name
        )));
    };
    let fields: Vec<&syn::Field> = named.named.iter().collect();
    let is_context = |f: &syn::Field| {
        f.ident
            .as_ref()
            .is_some_and(|i| context_fields.contains(&i))
    };
    for c in context_fields {
        if !fields.iter().any(|f| f.ident.as_ref() == Some(*c)) {
            return Err(refused(format!(
                "tool {} is project-scoped but its input lacks the shared context's `{c}`: include {CONTEXT_STEM}.schema.json through allOf",
                t.name
            )));
        }
    }
    let own: Vec<&syn::Field> = fields.iter().copied().filter(|f| !is_context(f)).collect();
    let own_names: Vec<&Ident> = own.iter().filter_map(|f| f.ident.as_ref()).collect();
    let own_decls = own.iter().map(|f| {
        let docs = f.attrs.iter().filter(|a| a.path().is_ident("doc"));
        let (name, ty) = (&f.ident, &f.ty);
        quote! { #(#docs)* pub #name: #ty, }
    });
    Ok(quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, PartialEq)]
        pub struct #args { #(#own_decls)* }
        impl #input {
            /// The shared context the seam consumes, and the arguments the handler reads.
            pub fn split(self) -> (#context_ty, #args) {
                let #input { #(#context_fields,)* #(#own_names,)* } = self;
                (#context_ty { #(#context_fields),* }, #args { #(#own_names),* })
            }
        }
    })
}

/// `with_tools!`: the table handed to a macro of the caller's.
fn with_tools_macro(tools: &[Tool], names: &[Names]) -> TokenStream {
    let entries = tools.iter().zip(names).map(|(t, n)| {
        let (method, variant, input, output) = (&n.method, &n.variant, &n.input, &n.output);
        let name = &t.name;
        let summary = format!(" `{}`: {}", t.name, t.summary);
        quote! { (#method, #variant, #name, #input, #output, #summary) }
    });
    quote! {
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
    }
}

/// The tool table: `ToolId`, `Intent`, `ToolSpec`, `TOOLS`.
fn table(tools: &[Tool], names: &[Names]) -> TokenStream {
    let variants: Vec<&Ident> = names.iter().map(|n| &n.variant).collect();
    let wire: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let underscores: Vec<String> = tools.iter().map(|t| t.name.replace('.', "_")).collect();
    let count = tools.len();
    let specs = tools.iter().zip(names).map(|(t, n)| {
        let v = &n.variant;
        let (name, summary) = (&t.name, &t.summary);
        let under = t.name.replace('.', "_");
        let intent = if t.write_intent {
            quote!(Intent::WriteIntent)
        } else {
            quote!(Intent::ReadOnly)
        };
        let (input, response) = (&t.input, &t.response);
        let (keys, fields, scoped) = (&t.schema_keys, &t.input_fields, t.scoped());
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
                project_scoped: #scoped,
            }
        }
    });
    quote! {
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
            /// Whether the seam opens a project (at the pinned snapshot) before the handler.
            pub project_scoped: bool,
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
                    #(#wire | #underscores => Some(ToolId::#variants),)*
                    _ => None,
                }
            }
        }
    }
}

/// Each tool's key usage, from its schema: every key read, but the agent labels a read-only
/// tool accepts and leaves unread.
fn key_usage(tools: &[Tool], names: &[Names]) -> TokenStream {
    let consts = tools.iter().zip(names).map(|(t, n)| {
        let c = &n.constant;
        let unread = t.unread();
        let read: Vec<&String> = t
            .schema_keys
            .iter()
            .filter(|k| !unread.contains(&k.as_str()))
            .collect();
        let doc = format!(" What `{}`'s handler reads and leaves unread.", t.name);
        quote! {
            #[doc = #doc]
            pub const #c: KeyUsage = KeyUsage {
                read: &[#(#read),*],
                unread: &[#((#unread, KeyUsage::PROVENANCE_ONLY)),*],
            };
        }
    });
    quote! {
        /// What each tool's handler reads of its input: every key its schema admits, but the
        /// agent labels a read-only tool leaves unread (with why). The handler's exhaustive
        /// destructuring of its input holds it to this at compile time.
        pub mod keys {
            use crate::KeyUsage;
            #(#consts)*
        }
    }
}

/// The trait the daemon implements: a registration constant per tool, the project opener, and
/// per tool a handler method (project-scoped ones also a check that runs before the project
/// opens, so a bad argument is refused before the project is looked at).
fn handler_trait(tools: &[Tool], names: &[Names]) -> TokenStream {
    let consts = tools.iter().zip(names).map(|(t, n)| {
        let c = &n.constant;
        let doc = format!(
            " Whether this build serves `{}`: `None` keeps it out of `tools/list` and refuses calls to it.",
            t.name
        );
        quote! { #[doc = #doc] const #c: Option<KeyUsage>; }
    });
    let methods = tools.iter().zip(names).map(|(t, n)| {
        let (method, check, input, output, args) =
            (&n.method, &n.check, &n.input, &n.output, &n.args);
        let doc = format!(" Answers `{}` with arguments that already passed the validation seat.", t.name);
        if t.scoped() {
            let check_doc = format!(" Refusals of `{}` that need no project, before it is opened.", t.name);
            quote! {
                #[doc = #check_doc]
                fn #check(args: &args::#args) -> Result<(), Refusal>;
                #[doc = #doc]
                fn #method(&self, project: Self::Project, args: args::#args) -> impl Future<Output = Result<mcp::#output, Refusal>> + Send;
            }
        } else {
            quote! {
                #[doc = #doc]
                fn #method(&self, input: mcp::#input) -> impl Future<Output = Result<mcp::#output, Refusal>> + Send;
            }
        }
    });
    let variants = names.iter().map(|n| &n.variant);
    let constants = names.iter().map(|n| &n.constant);
    // Only a contract with project-scoped tools has the project id and snapshot types to open.
    let context_ty = ident(&pascal(CONTEXT_STEM));
    let opener = tools.iter().any(Tool::scoped).then(|| {
        quote! {
            /// A project opened at the state a call pins, as the handlers read it.
            type Project: Send;
            /// Opens the project a call's shared context names, at the state it pins (its current
            /// state when it pins none), or refuses. The project keeps what else of the context
            /// its handlers need.
            fn open_project(&self, context: mcp::#context_ty) -> impl Future<Output = Result<Self::Project, Refusal>> + Send;
        }
    });
    quote! {
        /// The daemon's side of the contract. Every tool has a required registration constant
        /// and a required handler method, so a new schema pair does not compile until the
        /// server both decides about it and answers it. A project-scoped tool's handler is
        /// handed the project already opened at the pinned snapshot (after its check), so no
        /// handler repeats that.
        pub trait ToolHandlers: Send + Sync + 'static {
            #opener
            #(#consts)*
            #(#methods)*
            /// The registration constant of `id`.
            fn key_usage(id: ToolId) -> Option<KeyUsage> {
                match id { #(ToolId::#variants => Self::#constants),* }
            }
        }

        /// The tools `H` serves, in table order.
        pub fn registered<H: ToolHandlers>() -> impl Iterator<Item = &'static ToolSpec> {
            TOOLS.iter().filter(|t| H::key_usage(t.id).is_some())
        }
    }
}

/// `decode_only` and `dispatch`: decode, check, open, answer.
fn dispatch(tools: &[Tool], names: &[Names]) -> TokenStream {
    let variants: Vec<&Ident> = names.iter().map(|n| &n.variant).collect();
    let inputs: Vec<&Ident> = names.iter().map(|n| &n.input).collect();
    let arms = tools.iter().zip(names).map(|(t, n)| {
        let (variant, method, check, input) = (&n.variant, &n.method, &n.check, &n.input);
        let call = if t.scoped() {
            quote! {
                let (context, args) = input.split();
                H::#check(&args)?;
                let project = handlers.open_project(context).await?;
                handlers.#method(project, args).await?
            }
        } else {
            quote! { handlers.#method(input).await? }
        };
        quote! {
            ToolId::#variant => {
                let input: mcp::#input = serde_json::from_value(arguments)
                    .map_err(|e| Refusal::undecodable(id.spec().name, &e))?;
                let output = { #call };
                Ok(crate::answer::Answer::new(output))
            }
        }
    });
    quote! {
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

        /// Decodes validated arguments into the tool's input type, runs its check, opens the
        /// project a project-scoped tool names, runs its handler, and returns the typed response
        /// for the transport to write.
        pub async fn dispatch<H: ToolHandlers>(
            handlers: &H,
            id: ToolId,
            arguments: serde_json::Value,
        ) -> Result<crate::answer::Answer, Refusal> {
            if H::key_usage(id).is_none() {
                return Err(Refusal::not_served(id.spec().name));
            }
            match id { #(#arms)* }
        }
    }
}

/// `tool_handlers!`: the server's whole registration in one invocation. It declares one
/// handler module per served tool (`mod knowledge_get;` beside the invocation), and implements
/// [`tools::ToolHandlers`] by calling each module's `check` and `answer` with the field of the
/// implementing type that holds the daemon's state; a tool listed as unserved is registered as
/// `None`. A tool left out of both lists does not compile.
fn handlers_macro(tools: &[Tool], names: &[Names]) -> TokenStream {
    let served = tools.iter().zip(names).map(|(t, n)| {
        let (method, constant, check, input, output, args) =
            (&n.method, &n.constant, &n.check, &n.input, &n.output, &n.args);
        if t.scoped() {
            quote! {
                (@served #method, $state:ident) => {
                    const #constant: Option<$crate::KeyUsage> = Some($crate::tools::keys::#constant);
                    fn #check(args: &$crate::tools::args::#args) -> Result<(), $crate::Refusal> {
                        #method::check(args)
                    }
                    fn #method(&self, project: Self::Project, args: $crate::tools::args::#args) -> impl ::std::future::Future<Output = Result<$crate::mcp::#output, $crate::Refusal>> + Send {
                        #method::answer(&self.$state, project, args)
                    }
                };
                (@unserved #method) => {
                    const #constant: Option<$crate::KeyUsage> = None;
                    fn #check(_: &$crate::tools::args::#args) -> Result<(), $crate::Refusal> {
                        Ok(())
                    }
                    fn #method(&self, _: Self::Project, _: $crate::tools::args::#args) -> impl ::std::future::Future<Output = Result<$crate::mcp::#output, $crate::Refusal>> + Send {
                        async { Err($crate::Refusal::not_served(stringify!(#method))) }
                    }
                };
            }
        } else {
            quote! {
                (@served #method, $state:ident) => {
                    const #constant: Option<$crate::KeyUsage> = Some($crate::tools::keys::#constant);
                    fn #method(&self, input: $crate::mcp::#input) -> impl ::std::future::Future<Output = Result<$crate::mcp::#output, $crate::Refusal>> + Send {
                        #method::answer(&self.$state, input)
                    }
                };
                (@unserved #method) => {
                    const #constant: Option<$crate::KeyUsage> = None;
                    fn #method(&self, _: $crate::mcp::#input) -> impl ::std::future::Future<Output = Result<$crate::mcp::#output, $crate::Refusal>> + Send {
                        async { Err($crate::Refusal::not_served(stringify!(#method))) }
                    }
                };
            }
        }
    });
    // The project opener is part of the registration only where some tool is project-scoped.
    let context_ty = ident(&pascal(CONTEXT_STEM));
    let main = if tools.iter().any(Tool::scoped) {
        quote! {
            (
                $ty:ty { $state:ident }, project = $project:ty, open = $open:path;
                served: [$($served:ident),* $(,)?];
                unserved: [$($unserved:ident),* $(,)?];
            ) => {
                $(mod $served;)*
                impl $crate::tools::ToolHandlers for $ty {
                    type Project = $project;
                    fn open_project(&self, context: $crate::mcp::#context_ty) -> impl ::std::future::Future<Output = Result<$project, $crate::Refusal>> + Send {
                        $open(&self.$state, context)
                    }
                    $($crate::tool_handlers!(@served $served, $state);)*
                    $($crate::tool_handlers!(@unserved $unserved);)*
                }
            };
        }
    } else {
        quote! {
            (
                $ty:ty { $state:ident };
                served: [$($served:ident),* $(,)?];
                unserved: [$($unserved:ident),* $(,)?];
            ) => {
                $(mod $served;)*
                impl $crate::tools::ToolHandlers for $ty {
                    $($crate::tool_handlers!(@served $served, $state);)*
                    $($crate::tool_handlers!(@unserved $unserved);)*
                }
            };
        }
    };
    quote! {
        /// Implements [`tools::ToolHandlers`] for a server type from one handler module per
        /// tool: `$ty { field }` names the type and its field holding the state each handler
        /// takes, `project = P, open = f` the opened project's type and the async function that
        /// opens one from a call's shared context (`f(&state, context)`), and `served` /
        /// `unserved` list every tool by its handler name. Each served module is declared here
        /// (`mod knowledge_get;`) and provides, when project-scoped, `check(&args)` and
        /// `answer(&state, project, args)` over its `tools::args` struct, otherwise
        /// `answer(&state, input)`.
        #[macro_export]
        macro_rules! tool_handlers {
            #(#served)*
            #main
        }
    }
}
