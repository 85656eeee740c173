//! `review.findSimilar`: "has review met this before?" — the threads and findings whose text
//! most resembles a described situation, ranked by the knowledge retrievers over the review
//! similarity index, each with its decision. Either store may be missing; the answer names
//! what it could not rank instead of passing that off as nothing similar.

use super::prelude::*;
use super::review_get_decisions::decision;
use super::review_shared::{
    being_rebuilt, building, check_filter, check_text, findings_store, redacts_names, review_store, Store,
};
use theurian_core::review::similar::{find, Fault, Similar, Situation, Stores};
use theurian_protocol::mcp::{
    RefusalMetaCode, ReviewFindSimilarResponse, Similar as Served,
    UntrustedClassification,
};
use theurian_protocol::tools::args::ReviewFindSimilarArgs;

const TOOL: ToolId = ToolId::ReviewFindSimilar;
const NEITHER: &str = "This project's review history cannot be searched: neither the review store nor the findings store is built by this installation, current, and indexed. Run `theurian review build` (and `theurian findings build`) in the project, then retry.";
const REVIEWS: Store = review_store(NEITHER);
const FINDINGS: Store = findings_store(NEITHER);
const EMPTY: &str = "describes nothing";

/// The situation and the path are checked before the project is looked at.
pub(crate) fn check(args: &ReviewFindSimilarArgs) -> Result<(), Refusal> {
    let text = args.situation.as_str();
    check_text("situation", Some(text), EMPTY)?;
    if text.trim().is_empty() {
        return Err(Refusal::argument(
            "situation",
            "the situation is only whitespace, so there is nothing to compare",
            "Describe the change or the problem in a sentence or two.",
        ));
    }
    check_filter("filePath", &args.file_path, EMPTY)
}

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: ReviewFindSimilarArgs,
) -> Result<ReviewFindSimilarResponse, Refusal> {
    let ReviewFindSimilarArgs {
        situation,
        file_path,
        limit,
    } = args;
    let reviews = REVIEWS.locate(state, &opened);
    let findings = FINDINGS.locate(state, &opened);
    if let (Err(refusal), Err(_)) = (&reviews, &findings) {
        return Err(refusal.clone());
    }
    let root = &opened.resolved.root;
    let (review, findings) = (reviews.ok(), findings.ok());
    let redact = redacts_names(root)?;
    let _permit = state.review_gate.enter().await?;
    let situation = Situation {
        text: situation.as_str(),
        file_path: file_path.as_ref().map(|v| v.as_str()),
        limit: usize::try_from(limit.get()).unwrap_or(usize::MAX),
    };
    let located = Stores {
        review: review.as_deref(),
        findings: findings.as_deref(),
    };
    let found = find(root, located, &state.indexes, &situation)
        .await
        .map_err(|f| refused(f, root))?;
    let unread = super::review_shared::unread(found.review_unread, found.findings_unread);
    let similar = found
        .similar
        .into_iter()
        .map(|s| item(s, redact))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReviewFindSimilarResponse {
        project_id: opened.project_id.clone(),
        count: i64::try_from(similar.len()).unwrap_or(i64::MAX),
        similar,
        unread,
    })
}

/// Why the similarity index could not answer, for the caller.
fn refused(fault: Fault, root: &std::path::Path) -> Refusal {
    match fault {
        // A review or findings build holds the project's write lock while it swaps a store
        // and then the index: out of step for that moment, not missing.
        _ if building(root) => being_rebuilt(),
        Fault::Unavailable => REVIEWS.unavailable(),
        Fault::Broken(why) => Refusal::new(
            RefusalMetaCode::StateUnavailable,
            format!("The review similarity index could not be read ({why}). Run `theurian review build` in the project, then retry."),
        ),
    }
}

fn item(s: Similar, redact: bool) -> Result<Served, Refusal> {
    let decision = s
        .decision
        .map(|f| decision(f, redact, TOOL).map(|(_, _, d)| d))
        .transpose()?;
    Ok(Served {
        kind: s.kind.parse().or_internal(TOOL)?,
        score: s.score,
        found_by: s
            .found_by
            .iter()
            .map(|r| r.to_string().parse().or_internal(TOOL))
            .collect::<Result<_, _>>()?,
        path_boosted: s.path_boosted,
        excerpt: s.excerpt,
        repository: s.repository,
        record_key: s.record_key,
        pull_request: super::review_shared::pull_request_number(s.pull_request),
        file_path: s.file_path,
        state: s.state.map(|v| v.parse().or_internal(TOOL)).transpose()?,
        commit_sha: s.commit_sha,
        severity: s.severity,
        source_uri: s.source_uri,
        decision,
        content_classification: UntrustedClassification::UntrustedKnowledge,
        may_contain_instructions: Default::default(),
        executable: Default::default(),
    })
}
