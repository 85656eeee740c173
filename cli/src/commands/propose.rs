//! `theurian propose` (draft a proposal from files) and `theurian propose accept <id>` (move a
//! proposal's files into place). Neither approves anything: merging the change does.

use super::findings::theurian_root;
use crate::args::{ProposeArgs, ProposeCommand};
use serde_json::Value;
use theurian_core::proposal::accept::accept;
use theurian_core::proposal::draft::{Anchor, ContentRequest, DraftOnly, Evidence, AUTHORED_HERE};
use theurian_core::CoreError;

pub fn run(args: ProposeArgs) -> Result<Value, CoreError> {
    if let Some(ProposeCommand::Accept { proposal_id }) = &args.command {
        return accept(&theurian_root()?, proposal_id);
    }
    let root = theurian_root()?;
    let request = request(args)?;
    let payload = DraftOnly::open(&root, None)?.draft_content(&request)?;
    serde_json::to_value(payload).map_err(|e| {
        CoreError::failure(
            format!("The proposal was written, but its summary could not be printed ({e})."),
            "Look under .theurian/proposals/ for it.",
        )
    })
}

fn request(a: ProposeArgs) -> Result<ContentRequest, CoreError> {
    let required = [
        ("--item-id", a.item_id.is_none()),
        ("--title", a.title.is_none()),
        ("--kind", a.kind.is_none()),
        ("--owner", a.owner.is_none()),
        ("--author", a.author.is_none()),
        ("--description", a.description.is_none()),
        ("--body-file", a.body_file.is_none()),
        ("--agent-id", a.agent_id.is_none()),
        ("--task-id", a.task_id.is_none()),
        ("--model", a.model.is_none()),
        ("--reasoning", a.reasoning.is_none()),
    ];
    let missing: Vec<&str> = required
        .iter()
        .filter(|(_, m)| *m)
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        return Err(CoreError::usage(
            format!("A draft needs {}.", missing.join(", ")),
            "Give every option named; `theurian propose --help` describes them.",
        ));
    }
    let (body, content_type) = read_body(&a.body_file.unwrap_or_default())?;
    check_lists(&a.scope_paths, &a.labels)?;
    let mut labels = a.labels;
    if a.authored_here && !labels.iter().any(|l| l == AUTHORED_HERE) {
        labels.push(AUTHORED_HERE.to_owned());
    }
    let source_anchors = a
        .source_uri
        .map(|uri| Anchor {
            provider: a.source_provider,
            source_uri: uri,
            repository: None,
            commit_sha: a.source_commit,
            file_path: a.source_path,
        })
        .into_iter()
        .collect();
    Ok(ContentRequest {
        item_id: a.item_id.unwrap_or_default(),
        title: a.title.unwrap_or_default(),
        kind: a.kind.unwrap_or_default(),
        owner: a.owner.unwrap_or_default(),
        author: a.author.unwrap_or_default(),
        description: a.description.unwrap_or_default(),
        body,
        content_type: content_type.to_owned(),
        evidence: Evidence {
            agent_id: a.agent_id.unwrap_or_default(),
            task_id: a.task_id.unwrap_or_default(),
            model: a.model.unwrap_or_default(),
            reasoning: a.reasoning.unwrap_or_default(),
        },
        source_anchors,
        labels,
        scope_paths: a.scope_paths,
        namespace: a.namespace,
        trust_level: a.trust_level,
        sensitivity: a.sensitivity,
        expected_revision: a.expected_revision,
        local: a.local,
        record_defaults: false,
    })
}

/// A body file's text and the content type its extension names, refused past 8 MiB or when it
/// is not UTF-8.
pub fn read_body(body_file: &std::path::Path) -> Result<(String, &'static str), CoreError> {
    let ext = body_file
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let content_type = match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        _ => {
            return Err(CoreError::usage(
                format!("{} has no body extension this tool knows.", body_file.display()),
                "Name the body .md, .markdown, .json, .yaml or .yml; the extension decides its content type.",
            ))
        }
    };
    let meta = std::fs::metadata(body_file).map_err(|e| CoreError::io("read", body_file, &e))?;
    if meta.len() > theurian_core::paths::MAX_SOURCE_FILE_BYTES {
        return Err(CoreError::usage(
            format!("{} is larger than 8 MiB.", body_file.display()),
            "Split the knowledge into several items.",
        ));
    }
    let body = std::fs::read_to_string(body_file).map_err(|_| {
        CoreError::usage(
            format!("{} is not UTF-8 text.", body_file.display()),
            "Save the body as UTF-8.",
        )
    })?;
    Ok((body, content_type))
}

/// Refuses an empty scope glob, and a label that is empty or holds a control character.
pub fn check_lists(scope_paths: &[String], labels: &[String]) -> Result<(), CoreError> {
    if scope_paths.iter().any(|p| p.is_empty()) {
        return Err(CoreError::usage(
            "An empty --scope-path matches nothing.",
            "Drop it, or give a glob such as src/**.",
        ));
    }
    if labels
        .iter()
        .any(|l| l.is_empty() || l.chars().any(char::is_control))
    {
        return Err(CoreError::usage(
            "A --label is empty or holds a control character.",
            "Give each label as plain text.",
        ));
    }
    Ok(())
}
