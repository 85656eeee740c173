//! The Open Knowledge Format bundle, both ways: `theurian okf import` (in `import`, turning a
//! bundle into a proposal) and `theurian okf export`, written here: the project's approved knowledge as an Open Knowledge Format v0.2
//! bundle — one Markdown concept per item (YAML front matter, the body, a generated
//! `## Relations` section), a sidecar beside any body that is not Markdown, an `index.md` in
//! every directory, and a manifest carrying a digest over every other file.
//!
//! A bundle holds exactly what this deployment serves by default: approved items at or below
//! the serving profile's ceiling, and no option widens that. Everything in it is a function of
//! the state: two exports of one state are byte-identical. The layout, the front matter and
//! the index files are written as the reference writes them, so bundles interchange.

mod import;
mod yaml;

pub use import::{bundle_files, concept, import, Importer};

use crate::fsutil::hex;
use crate::CoreError;
use sha2::{Digest, Sha256};
use sqlx::Row;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use yaml::Node;

/// The manifest's file name and title.
pub const MANIFEST: &str = "theurian-bundle.md";
const MANIFEST_TYPE: &str = "Theurian Bundle";
const INDEX: &str = "index.md";

/// One exported item.
struct Concept {
    item_id: String,
    revision_id: String,
    title: String,
    body: String,
    content_type: String,
    kind: String,
    namespace: String,
    owner: String,
    trust_level: String,
    status: String,
    sensitivity: String,
    labels: Vec<String>,
    created_at: String,
    valid_to: Option<String>,
    anchors: Vec<crate::model::read::Anchor>,
    /// `(type, target, note)`, seen from this item, both ends exported.
    relations: Vec<(String, String, Option<String>)>,
}

/// The concept document's path: the item id's namespace segments as directories, its last
/// segment as the file, a reserved name taking `_item`.
fn concept_path(item_id: &str) -> String {
    let (dirs, leaf) = match item_id.rsplit_once('.') {
        Some((d, l)) => (Some(d), l),
        None => (None, item_id),
    };
    let reserved = matches!(leaf, "index" | "log") || (dirs.is_none() && leaf == "theurian-bundle");
    let stem = if reserved {
        format!("{leaf}_item")
    } else {
        leaf.to_owned()
    };
    match dirs {
        Some(d) => format!("{}/{stem}.md", d.replace('.', "/")),
        None => format!("{stem}.md"),
    }
}

fn sidecar_extension(content_type: &str) -> &'static str {
    if content_type == "application/json" || content_type.ends_with("+json") {
        ".json"
    } else if matches!(content_type, "application/yaml" | "text/x-yaml")
        || content_type.ends_with("+yaml")
    {
        ".yaml"
    } else {
        ".txt"
    }
}

/// Whitespace runs that would break a Markdown line (line terminators and tabs) become one
/// space; then the inline constructs are escaped.
fn escape_inline(text: &str) -> String {
    let mut folded = String::with_capacity(text.len());
    let mut in_run = false;
    for c in text.chars() {
        if matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}' | '\t') {
            if !in_run {
                folded.push(' ');
            }
            in_run = true;
        } else {
            folded.push(c);
            in_run = false;
        }
    }
    let mut out = folded.replace('\\', "\\\\");
    for c in ['[', ']', '<', '>', '`'] {
        out = out.replace(c, &format!("\\{c}"));
    }
    out
}

/// A relation note's line: inline escapes, and a construct that would open at the line's
/// start (a heading, a list, a rule, a numbered item) defeated with one backslash.
fn escape_list_line(text: &str) -> String {
    let line = escape_inline(text);
    let after_spaces = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[after_spaces..];
    let point = if rest.starts_with(['#', '`', '~', '>', '-', '+', '*', '=', '_']) {
        Some(after_spaces)
    } else {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        (digits > 0 && rest[digits..].starts_with(['.', ')'])).then_some(after_spaces + digits)
    };
    match point {
        Some(p) => format!("{}\\{}", &line[..p], &line[p..]),
        None => line,
    }
}

fn link(text: &str, target: &str) -> String {
    format!("[{}]({target})", escape_inline(text))
}

/// Blocks joined by one blank line, each stripped of surrounding newlines, one final newline.
fn document(blocks: &[&str]) -> String {
    let parts: Vec<&str> = blocks.iter().map(|b| b.trim_matches('\n')).collect();
    format!("{}\n", parts.join("\n\n"))
}

fn relations_section(relations: &[(String, String, Option<String>)]) -> String {
    let mut body: Vec<&(String, String, Option<String>)> = relations.iter().collect();
    body.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut lines = vec!["## Relations".to_owned()];
    let mut current: Option<&str> = None;
    for (kind, target, note) in body {
        if current != Some(kind.as_str()) {
            lines.extend([String::new(), format!("### {kind}"), String::new()]);
            current = Some(kind);
        }
        lines.push(format!(
            "* {}",
            link(target, &format!("/{}", concept_path(target)))
        ));
        if let Some(note) = note {
            let escaped: Vec<String> = note
                .split('\n')
                .map(escape_list_line)
                .skip_while(|l| l.is_empty())
                .collect();
            if let Some((first, more)) = escaped.split_first() {
                lines.push(format!("  * {first}"));
                lines.extend(more.iter().map(|l| {
                    if l.is_empty() {
                        String::new()
                    } else {
                        format!("    {l}")
                    }
                }));
            }
        }
    }
    lines.join("\n")
}

fn front_matter(c: &Concept, body_file: Option<&str>) -> String {
    let s = |v: &str| Node::Str(v.to_owned());
    let mut fm: Vec<(String, Node)> = vec![
        ("type".into(), s(&c.kind)),
        ("title".into(), s(&c.title)),
        (
            "tags".into(),
            Node::List(c.labels.iter().map(|l| s(l)).collect()),
        ),
        ("status".into(), s("stable")),
    ];
    if let Some(v) = &c.valid_to {
        fm.push(("stale_after".into(), s(v)));
    }
    fm.push((
        "generated".into(),
        Node::Map(vec![
            ("by".into(), s(&format!("theurian/{}", crate::VERSION))),
            ("at".into(), s(&c.created_at)),
        ]),
    ));
    let sources = c
        .anchors
        .iter()
        .map(|a| {
            let mut anchor = vec![("provider".to_owned(), s(&a.provider))];
            for (k, v) in [
                ("repository", &a.repository),
                ("commit_sha", &a.commit_sha),
                ("file_path", &a.file_path),
            ] {
                if let Some(v) = v {
                    anchor.push((k.to_owned(), s(v)));
                }
            }
            for (k, v) in [("line_start", a.line_start), ("line_end", a.line_end)] {
                if let Some(v) = v {
                    anchor.push((k.to_owned(), Node::Int(v)));
                }
            }
            Node::Map(vec![
                ("resource".into(), s(&a.source_uri)),
                ("theurian_anchor".into(), Node::Map(anchor)),
            ])
        })
        .collect();
    fm.push(("sources".into(), Node::List(sources)));
    fm.extend([
        ("theurian_export_version".into(), Node::Int(1)),
        ("theurian_item_id".into(), s(&c.item_id)),
        ("theurian_revision_id".into(), s(&c.revision_id)),
        ("theurian_status".into(), s(&c.status)),
        ("theurian_namespace".into(), s(&c.namespace)),
        ("theurian_owner".into(), s(&c.owner)),
        ("theurian_trust_level".into(), s(&c.trust_level)),
        ("theurian_sensitivity".into(), s(&c.sensitivity)),
        ("theurian_content_type".into(), s(&c.content_type)),
    ]);
    if let Some(f) = body_file {
        fm.push(("theurian_body_file".into(), s(f)));
    }
    let mut rels: Vec<&(String, String, Option<String>)> = c.relations.iter().collect();
    rels.sort_by(|a, b| {
        (&a.0, &a.1, a.2.is_none(), a.2.as_deref().unwrap_or("")).cmp(&(
            &b.0,
            &b.1,
            b.2.is_none(),
            b.2.as_deref().unwrap_or(""),
        ))
    });
    let rels = rels
        .into_iter()
        .map(|(k, t, n)| {
            let mut e = vec![("type".to_owned(), s(k)), ("target".to_owned(), s(t))];
            if let Some(n) = n {
                e.push(("note".to_owned(), s(n)));
            }
            Node::Map(e)
        })
        .collect();
    fm.push(("theurian_relations".into(), Node::List(rels)));
    format!("---\n{}---\n", yaml::dump(&fm))
}

/// Every file of the bundle but the manifest, by path.
fn render(concepts: &[Concept]) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut listings: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    listings.insert(String::new(), Vec::new());
    for c in concepts {
        let path = concept_path(&c.item_id);
        let relations = relations_section(&c.relations);
        if c.content_type == "text/markdown" {
            files.insert(
                path.clone(),
                document(&[&front_matter(c, None), &c.body, &relations]),
            );
        } else {
            let stem = path
                .rsplit('/')
                .next()
                .unwrap_or(&path)
                .trim_end_matches(".md")
                .to_owned();
            let name = format!("{stem}{}", sidecar_extension(&c.content_type));
            let paragraph = format!(
                "The body of this concept is not Markdown; it is kept beside this document, byte for byte, in [{name}]({name})."
            );
            files.insert(
                path.clone(),
                document(&[&front_matter(c, Some(&name)), &paragraph, &relations]),
            );
            let dir = path
                .rsplit_once('/')
                .map_or(String::new(), |(d, _)| format!("{d}/"));
            files.insert(format!("{dir}{name}"), c.body.clone());
        }
        // Every directory on the way gets an index, listing its subdirectories.
        let mut dir = path
            .rsplit_once('/')
            .map_or(String::new(), |(d, _)| d.to_owned());
        listings
            .entry(dir.clone())
            .or_default()
            .push((format!("/{path}"), c.title.clone()));
        while !dir.is_empty() {
            let parent = dir
                .rsplit_once('/')
                .map_or(String::new(), |(p, _)| p.to_owned());
            let name = dir.rsplit('/').next().unwrap_or(&dir).to_owned();
            let entry = (format!("/{dir}/"), name);
            let siblings = listings.entry(parent.clone()).or_default();
            if !siblings.contains(&entry) {
                siblings.push(entry);
            }
            listings.entry(dir.clone()).or_default();
            dir = parent;
        }
    }
    if let Some(root) = listings.get_mut("") {
        root.push((format!("/{MANIFEST}"), MANIFEST_TYPE.to_owned()));
    }
    for (dir, mut entries) in listings {
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let heading = if dir.is_empty() {
            format!("# {MANIFEST_TYPE}")
        } else {
            format!("# {}", dir.rsplit('/').next().unwrap_or(&dir))
        };
        let mut lines = vec![heading, String::new()];
        lines.extend(
            entries
                .iter()
                .map(|(path, title)| format!("* {}", link(title, path))),
        );
        let body = lines.join("\n");
        if dir.is_empty() {
            files.insert(
                INDEX.to_owned(),
                document(&["---\nokf_version: '0.2'\n---\n", &body]),
            );
        } else {
            files.insert(format!("{dir}/{INDEX}"), document(&[&body]));
        }
    }
    files
}

/// SHA-256 over every file but the manifest, in bytewise path order: each contributes
/// `"<path>\n<sha256 hex of its bytes>\n"`.
pub fn digest(files: &BTreeMap<String, Vec<u8>>) -> String {
    digest_of_hashes(
        files
            .iter()
            .map(|(p, bytes)| (p.clone(), hex(&Sha256::digest(bytes)))),
    )
}

/// [`digest`] from each file's own SHA-256 (hex), so a bundle can be checked one file at a
/// time instead of held in memory whole.
pub fn digest_of_hashes(files: impl IntoIterator<Item = (String, String)>) -> String {
    let mut files: Vec<(String, String)> = files
        .into_iter()
        .filter(|(p, _)| p.as_str() != MANIFEST)
        .collect();
    files.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut outer = Sha256::new();
    for (p, inner) in files {
        outer.update(format!("{p}\n{inner}\n").as_bytes());
    }
    hex(&outer.finalize())
}

fn manifest(digest: &str) -> String {
    format!(
        "---\ntype: {MANIFEST_TYPE}\ntheurian_export_version: 1\ntheurian_bundle_digest: {digest}\n---\n\n# {MANIFEST_TYPE}\n\n\
This bundle is a copy of a project's approved knowledge as one Theurian deployment served it\n\
at one moment. It is derived, never the record itself: the record is the project's Git\n\
history, and this copy can be deleted without losing anything.\n\n\
Nothing done to the deployment afterwards reaches this copy. A withdrawn item, a correction\n\
or a removed secret changes the deployment and the indexes built from it, not a bundle already\n\
handed on, and no file here can be updated in place.\n\n\
Do not treat it as current: export again from the deployment and compare\n\
`theurian_bundle_digest` before relying on what it says.\n"
    )
}

/// Reads the approved items the ceiling lets through, with anchors and relations.
async fn concepts(db: &Path, project: &str, visible: &[&str]) -> Result<Vec<Concept>, sqlx::Error> {
    use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(SqliteConnectOptions::new().filename(db).read_only(true))
        .await?;
    let visible_json = serde_json::to_string(visible).unwrap_or_else(|_| "[]".into());
    let rows = sqlx::query(
        "SELECT i.item_id, i.status, i.sensitivity, r.revision_id, r.title, r.body, r.content_type, r.kind,
                r.namespace, r.owner, r.trust_level, r.labels, r.created_at, r.valid_to
         FROM knowledge_items i JOIN knowledge_revisions r
           ON r.project_id = i.project_id AND r.revision_id = i.current_revision_id AND r.item_id = i.item_id
         WHERE i.project_id = ? AND i.status = 'approved'
           AND i.sensitivity IN (SELECT value FROM json_each(?))
         ORDER BY i.item_id",
    )
    .bind(project)
    .bind(&visible_json)
    .fetch_all(&pool)
    .await?;
    let mut out = Vec::new();
    for r in &rows {
        let labels: String = r.try_get("labels")?;
        out.push(Concept {
            item_id: r.try_get("item_id")?,
            status: r.try_get("status")?,
            sensitivity: r.try_get("sensitivity")?,
            revision_id: r.try_get("revision_id")?,
            title: r.try_get("title")?,
            body: r.try_get("body")?,
            content_type: r.try_get("content_type")?,
            kind: r.try_get("kind")?,
            namespace: r.try_get("namespace")?,
            owner: r.try_get("owner")?,
            trust_level: r.try_get("trust_level")?,
            labels: serde_json::from_str(&labels).unwrap_or_default(),
            created_at: r.try_get("created_at")?,
            valid_to: r.try_get("valid_to")?,
            anchors: Vec::new(),
            relations: Vec::new(),
        });
    }
    let revisions: Vec<&str> = out.iter().map(|c| c.revision_id.as_str()).collect();
    let mut anchors = crate::model::read::anchors_for(&pool, project, &revisions)
        .await
        .map_err(|e| sqlx::Error::Protocol(format!("{e:?}")))?;
    let exported: BTreeSet<String> = out.iter().map(|c| c.item_id.clone()).collect();
    let edges = sqlx::query(
        "SELECT source_item_id, relation_type, target_item_id, note FROM knowledge_relations
         WHERE project_id = ? ORDER BY source_item_id, relation_type, target_item_id",
    )
    .bind(project)
    .fetch_all(&pool)
    .await?;
    for c in &mut out {
        c.anchors = anchors.remove(&c.revision_id).unwrap_or_default();
    }
    let position: BTreeMap<String, usize> = out
        .iter()
        .enumerate()
        .map(|(i, c)| (c.item_id.clone(), i))
        .collect();
    for e in &edges {
        let (source, kind, target, note): (String, String, String, Option<String>) = (
            e.try_get("source_item_id")?,
            e.try_get("relation_type")?,
            e.try_get("target_item_id")?,
            e.try_get("note")?,
        );
        if !exported.contains(&source) || !exported.contains(&target) {
            continue;
        }
        if let Some(&i) = position.get(&source) {
            out[i]
                .relations
                .push((kind.clone(), target.clone(), note.clone()));
        }
        let inverse = match kind.as_str() {
            "implements" => Some("implemented_by"),
            "implemented_by" => Some("implements"),
            "supersedes" => Some("superseded_by"),
            "superseded_by" => Some("supersedes"),
            _ => None,
        };
        if let (Some(inv), Some(&i)) = (inverse, position.get(&target)) {
            out[i].relations.push((inv.to_owned(), source, note));
        }
    }
    pool.close().await;
    Ok(out)
}

/// What an export wrote.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Exported {
    pub bundle_path: String,
    pub bundle_digest: String,
    pub concepts: usize,
    pub sidecars: usize,
    pub indexes: usize,
}

/// Exports the state at `db` (the project's serving database) into `target`, which must be
/// absent or an empty directory. Written beside it first and moved into place whole.
pub fn export(
    db: &Path,
    project: &str,
    visible: &[&str],
    target: &Path,
) -> Result<Exported, CoreError> {
    let target = resolve_target(target)?;
    let runtime = crate::runtime::current_thread()?;
    let concepts = runtime
        .block_on(concepts(db, project, visible))
        .map_err(|e| {
            CoreError::state(
                format!(
                    "The project's state at {} cannot be read ({e}).",
                    db.display()
                ),
                "Rebuild it with `theurian migrate apply`, then export again.",
            )
        })?;
    let rendered = render(&concepts);
    let mut files: BTreeMap<String, Vec<u8>> = rendered
        .into_iter()
        .map(|(p, t)| (p, t.into_bytes()))
        .collect();
    let bundle_digest = digest(&files);
    files.insert(MANIFEST.to_owned(), manifest(&bundle_digest).into_bytes());
    let indexes = files
        .keys()
        .filter(|p| p.rsplit('/').next() == Some(INDEX))
        .count();
    let sidecars = files.len() - indexes - 1 - concepts.len();
    write_tree(&target, &files)?;
    Ok(Exported {
        bundle_path: target.to_string_lossy().into_owned(),
        bundle_digest,
        concepts: concepts.len(),
        sidecars,
        indexes,
    })
}

/// The target with its parent resolved; refused when it holds anything or is not a directory.
fn resolve_target(target: &Path) -> Result<PathBuf, CoreError> {
    let absolute = if target.is_absolute() {
        target.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| CoreError::io("read", Path::new("."), &e))?
            .join(target)
    };
    let name = absolute
        .file_name()
        .map(|n| n.to_os_string())
        .ok_or_else(|| {
            CoreError::usage(
                format!("{} does not name a directory to create.", target.display()),
                "Name a new or empty directory, such as ./bundle.",
            )
        })?;
    let parent = absolute.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent).map_err(|e| CoreError::io("create", parent, &e))?;
    let resolved = parent
        .canonicalize()
        .map_err(|e| CoreError::io("resolve", parent, &e))?
        .join(name);
    match std::fs::symlink_metadata(&resolved) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => Err(CoreError::failure(
            format!("The export target {} is not a directory.", resolved.display()),
            "Name a new or empty directory.",
        )),
        Ok(_) if std::fs::read_dir(&resolved).map(|mut d| d.next().is_some()).unwrap_or(true) => {
            Err(CoreError::failure(
                format!(
                    "The export target {} is not empty. A bundle's digest covers every file in its tree, so it is written into an empty directory, never merged into another.",
                    resolved.display()
                ),
                "Name a new or empty directory, or remove the old bundle first.",
            ))
        }
        _ => Ok(resolved),
    }
}

fn write_tree(target: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), CoreError> {
    let parent = target.parent().unwrap_or(Path::new("/"));
    let mut random = [0u8; 8];
    let _ = getrandom::fill(&mut random);
    let staging = parent.join(format!(".okf-export-{}", hex(&random)));
    let written = (|| -> std::io::Result<()> {
        for (path, bytes) in files {
            let dest = staging.join(path);
            if let Some(dir) = dest.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&dest, bytes)?;
        }
        if target.exists() {
            std::fs::remove_dir(target)?;
        }
        std::fs::rename(&staging, target)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_dir_all(&staging);
        CoreError::io("write the bundle at", target, &e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_come_from_the_item_id_and_reserved_names_are_escaped() {
        assert_eq!(
            concept_path("decision.idempotency-keys"),
            "decision/idempotency-keys.md"
        );
        assert_eq!(concept_path("a.b.c"), "a/b/c.md");
        assert_eq!(concept_path("x.index"), "x/index_item.md");
        assert_eq!(concept_path("theurian-bundle"), "theurian-bundle_item.md");
        assert_eq!(concept_path("x.theurian-bundle"), "x/theurian-bundle.md");
    }

    #[test]
    fn markdown_escapes_defeat_links_and_line_starts() {
        assert_eq!(
            escape_inline("An [odd] `title` <b>"),
            "An \\[odd\\] \\`title\\` \\<b\\>"
        );
        assert_eq!(escape_list_line("# heading"), "\\# heading");
        assert_eq!(escape_list_line("12. item"), "12\\. item");
        assert_eq!(escape_list_line("a\tb\n\nc"), "a b c");
    }

    #[test]
    fn documents_join_blocks_by_one_blank_line() {
        assert_eq!(document(&["a\n", "\nb\n\n", "c"]), "a\n\nb\n\nc\n");
    }
}
