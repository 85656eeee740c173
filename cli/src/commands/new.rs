//! `theurian new KIND ITEM_ID --title ... --body-file ... --owner ...`: a person writes a
//! knowledge item. The same drafting and acceptance checks an agent's proposal passes run here
//! (vocabulary, revision conflicts, the secret scan, a rehearsal that the whole set still loads
//! and applies); the difference is that the result lands directly in `.theurian/migrations/`
//! and `.theurian/knowledge/`, because the person running it is the author who will review and
//! commit it. Nothing is approved until that commit is merged.

use super::findings::theurian_root;
use super::propose::{check_lists, read_body};
use crate::args::NewArgs;
use serde_json::{json, Value};
use theurian_core::proposal::accept::accept;
use theurian_core::proposal::draft::{Anchor, ContentRequest, DraftOnly, Evidence, AUTHORED_HERE};
use theurian_core::{gitdir, CoreError};

pub fn run(args: NewArgs) -> Result<Value, CoreError> {
    let root = theurian_root()?;
    let (body, content_type) = read_body(&args.body_file)?;
    check_lists(&args.scope_paths, &args.labels)?;
    let author = match args.author.or_else(|| gitdir::user_email(&root)) {
        Some(a) => a,
        None => {
            return Err(CoreError::usage(
                "No author given, and git has no user.email to take it from.",
                "Pass --author you@example.com (or set it with `git config user.email`).",
            ))
        }
    };
    let mut labels = args.labels;
    if args.source_uri.is_none() && !labels.iter().any(|l| l == AUTHORED_HERE) {
        labels.push(AUTHORED_HERE.to_owned());
    }
    let description = args.description.unwrap_or_else(|| args.title.clone());
    let request = ContentRequest {
        item_id: args.item_id,
        title: args.title,
        kind: args.kind,
        owner: args.owner,
        author: author.clone(),
        body,
        content_type: content_type.to_owned(),
        // Recorded in the scratch proposal's evidence.json only, which is removed below.
        evidence: Evidence {
            agent_id: author,
            task_id: "theurian new".into(),
            model: "none: written by a person".into(),
            reasoning: description.clone(),
        },
        description,
        source_anchors: args
            .source_uri
            .map(|uri| Anchor {
                provider: args.source_provider,
                source_uri: uri,
                repository: None,
                commit_sha: None,
                file_path: None,
            })
            .into_iter()
            .collect(),
        labels,
        scope_paths: args.scope_paths,
        namespace: args.namespace,
        trust_level: args.trust_level,
        sensitivity: args.sensitivity,
        expected_revision: args.expected_revision,
        local: true,
        record_defaults: false,
    };
    let draft = DraftOnly::open(&root, None)?.draft_content(&request)?;
    let staged = root.join(draft.proposal_directory.as_str());
    let landed = accept(&root, draft.proposal_id.as_str());
    // The staging directory was scratch in every case: the files either landed or were refused.
    let _ = std::fs::remove_dir_all(&staged);
    let landed = landed?;
    Ok(json!({
        "itemId": request.item_id,
        "revisionId": draft.revision_id.as_str(),
        "migrationFile": landed["migrationFile"],
        "bodyFile": draft.body_destination.as_str(),
        "nextSteps": [
            "Read the two files: they are the change a reviewer will see.",
            "`theurian migrate validate` checks the whole set; commit both files and open a pull request (merging it approves the item).",
            "Then `theurian migrate apply` and `theurian index build` serve it.",
        ],
    }))
}
