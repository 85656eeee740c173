//! Loading `schemas/`: every `*.schema.json` file, keyed by its path and by its `$id`.

use crate::CodegenError;
use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One schema file.
#[derive(Debug, Clone)]
pub struct SchemaFile {
    /// Path relative to the schema directory, with `/` separators (`mcp/tool-context.schema.json`).
    pub rel_path: String,
    /// The file's `$id`, or its relative path when it declares none.
    pub id: String,
    /// The parsed document.
    pub doc: Value,
}

impl SchemaFile {
    /// The file name without `.schema.json` (`tool-context`).
    pub fn stem(&self) -> &str {
        let name = self.rel_path.rsplit('/').next().unwrap_or(&self.rel_path);
        name.strip_suffix(".schema.json").unwrap_or(name)
    }
}

/// Every schema file under one directory, sorted by path so output is deterministic.
#[derive(Debug, Default)]
pub struct SchemaSet {
    files: BTreeMap<String, SchemaFile>,
}

impl SchemaSet {
    /// Reads every `*.schema.json` below `dir`.
    pub fn load(dir: &Path) -> Result<Self, CodegenError> {
        let mut set = SchemaSet::default();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let entries = std::fs::read_dir(&d).map_err(|source| CodegenError::Read {
                path: d.display().to_string(),
                source,
            })?;
            for entry in entries {
                let entry = entry.map_err(|source| CodegenError::Read {
                    path: d.display().to_string(),
                    source,
                })?;
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                if !name.ends_with(".schema.json") {
                    continue;
                }
                let rel_path = path
                    .strip_prefix(dir)
                    .unwrap_or(&path)
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                let text = std::fs::read_to_string(&path).map_err(|source| CodegenError::Read {
                    path: rel_path.clone(),
                    source,
                })?;
                let doc: Value =
                    serde_json::from_str(&text).map_err(|source| CodegenError::Json {
                        path: rel_path.clone(),
                        source,
                    })?;
                let id = doc
                    .get("$id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| rel_path.clone());
                set.files
                    .insert(rel_path.clone(), SchemaFile { rel_path, id, doc });
            }
        }
        Ok(set)
    }

    /// All files, sorted by path.
    pub fn files(&self) -> impl Iterator<Item = &SchemaFile> {
        self.files.values()
    }

    /// The files whose path starts with `dir/`.
    pub fn files_under<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a SchemaFile> {
        self.files.values().filter(move |f| {
            f.rel_path.starts_with(dir) && f.rel_path[dir.len()..].starts_with('/')
        })
    }

    /// The file with this `$id`.
    pub fn by_id(&self, id: &str) -> Option<&SchemaFile> {
        self.files.values().find(|f| f.id == id)
    }

    /// The file at this relative path.
    pub fn by_path(&self, rel_path: &str) -> Option<&SchemaFile> {
        self.files.get(rel_path)
    }

    /// Splits a `$ref` made inside `from` into the file it points at and its JSON pointer
    /// fragment (without `#`).
    pub fn split_ref<'a>(
        &'a self,
        from: &'a SchemaFile,
        reference: &'a str,
    ) -> Result<(&'a SchemaFile, &'a str), CodegenError> {
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let target = if base.is_empty() {
            from
        } else {
            self.by_id(base).ok_or_else(|| CodegenError::Schema {
                path: from.rel_path.clone(),
                message: format!("`$ref` {reference} names no schema file under schemas/"),
            })?
        };
        Ok((target, fragment))
    }

    /// Follows a JSON pointer fragment inside `file`.
    pub fn pointer<'a>(
        &self,
        file: &'a SchemaFile,
        fragment: &str,
    ) -> Result<&'a Value, CodegenError> {
        file.doc
            .pointer(fragment)
            .ok_or_else(|| CodegenError::Schema {
                path: file.rel_path.clone(),
                message: format!("no definition at #{fragment}"),
            })
    }
}

/// The `schemas` module of the generated source: every schema file embedded verbatim, so the
/// validators and `tools/list` serve exactly the committed files.
pub(crate) fn embedded_schemas(set: &SchemaSet, manifest_relative: &str) -> TokenStream {
    let entries = set.files().map(|f| {
        let rel = &f.rel_path;
        let id = &f.id;
        let include = format!("/{manifest_relative}/{rel}");
        quote! {
            SchemaDocument {
                path: #rel,
                id: #id,
                text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), #include)),
            }
        }
    });
    quote! {
        /// Every schema file under `schemas/`, embedded at build time.
        pub mod schemas {
            /// One embedded schema file.
            #[derive(Debug, Clone, Copy)]
            pub struct SchemaDocument {
                /// Path under `schemas/`.
                pub path: &'static str,
                /// The file's `$id`.
                pub id: &'static str,
                /// The file's text.
                pub text: &'static str,
            }
            /// All schema files, sorted by path.
            pub const ALL: &[SchemaDocument] = &[#(#entries),*];
        }
    }
}
