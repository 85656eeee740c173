//! `review.findSimilar`: "has review met this before?" — the threads and findings whose text
//! most resembles a described situation, ranked by the knowledge retrievers over the review
//! similarity index, each with its decision. Either store may be missing; the answer names
//! what it could not rank instead of passing that off as nothing similar.

use super::review_get_decisions::decision;
use super::review_shared::{
    being_rebuilt, building, check_text, findings_store, redacts_names, review_store, Store,
};
use crate::state::AppState;
use theurian_core::review::similar::{find, Fault, Similar, Situation, Stores};
use theurian_protocol::mcp::{
    EvidenceStore as Unread, RefusalMetaCode, ReviewFindSimilarInput, ReviewFindSimilarResponse,
    Similar as Served, UntrustedClassification,
};
use theurian_protocol::Refusal;

const TOOL: &str = "review.findSimilar";
const NEITHER: &str = "This project's review history cannot be searched: neither the review store nor the findings store is built by this installation, current, and indexed. Run `theurian review build` (and `theurian findings build`) in the project, then retry.";
const REVIEWS: Store = review_store(NEITHER);
const FINDINGS: Store = findings_store(NEITHER);
const EMPTY: &str = "describes nothing";

pub(crate) async fn answer(
    state: &AppState,
    input: ReviewFindSimilarInput,
) -> Result<ReviewFindSimilarResponse, Refusal> {
    let text = input.situation.as_str();
    check_text("situation", Some(text), EMPTY)?;
    if text.trim().is_empty() {
        return Err(Refusal::argument(
            "situation",
            "the situation is only whitespace, so there is nothing to compare",
            "Describe the change or the problem in a sentence or two.",
        ));
    }
    let file_path = input.file_path.as_ref().map(|v| v.as_str());
    check_text("filePath", file_path, EMPTY)?;
    let (project, snapshot) = (
        input.project_id.as_str(),
        input.snapshot_id.as_ref().map(|s| s.as_str()),
    );
    let reviews = REVIEWS.locate_with_root(state, project, snapshot).await;
    let findings = FINDINGS.locate_with_root(state, project, snapshot).await;
    let root = match (&reviews, &findings) {
        (Ok((root, _)), _) | (_, Ok((root, _))) => root.clone(),
        // Both stores resolve the project the same way, so the review store's refusal says
        // whether the project itself cannot be served.
        (Err(refusal), Err(_)) => return Err(refusal.clone()),
    };
    let review = reviews.ok().map(|(_, path)| path);
    let findings = findings.ok().map(|(_, path)| path);
    let redact = redacts_names(&root)?;
    let _permit = state.review_gate.enter().await?;
    let situation = Situation {
        text,
        file_path,
        limit: usize::try_from(input.limit.get()).unwrap_or(usize::MAX),
    };
    let located = Stores {
        review: review.as_deref(),
        findings: findings.as_deref(),
    };
    let found = find(&root, located, &state.indexes, &situation)
        .await
        .map_err(|f| match f {
            // A review or findings build holds the project's write lock while it swaps a store
            // and then the index: out of step for that moment, not missing.
            _ if building(&root) => being_rebuilt(),
            Fault::Unavailable => REVIEWS.unavailable(),
            Fault::Broken(why) => Refusal::new(
                RefusalMetaCode::StateUnavailable,
                format!("The review similarity index could not be read ({why}). Run `theurian review build` in the project, then retry."),
            ),
        })?;
    let mut unread = Vec::new();
    if found.review_unread {
        unread.push(Unread::Review);
    }
    if found.findings_unread {
        unread.push(Unread::Findings);
    }
    let similar = found
        .similar
        .into_iter()
        .map(|s| item(s, redact))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReviewFindSimilarResponse {
        project_id: input.project_id,
        count: i64::try_from(similar.len()).unwrap_or(i64::MAX),
        similar,
        unread,
    })
}

/// A stored value the contract does not admit: a defect, whichever module's type refused it.
fn bad(e: impl std::fmt::Display) -> Refusal {
    Refusal::internal(TOOL, &e)
}

fn item(s: Similar, redact: bool) -> Result<Served, Refusal> {
    let decision = s
        .decision
        .map(|f| decision(f, redact).map(|(_, _, d)| d))
        .transpose()?;
    Ok(Served {
        kind: s.kind.parse().map_err(bad)?,
        score: s.score,
        found_by: s
            .found_by
            .iter()
            .map(|r| r.to_string().parse().map_err(bad))
            .collect::<Result<_, _>>()?,
        path_boosted: s.path_boosted,
        excerpt: s.excerpt,
        repository: s.repository,
        record_key: s.record_key,
        pull_request: super::review_shared::pull_request_number(s.pull_request),
        file_path: s.file_path,
        state: s.state.map(|v| v.parse().map_err(bad)).transpose()?,
        commit_sha: s.commit_sha,
        severity: s.severity,
        source_uri: s.source_uri,
        decision,
        content_classification: UntrustedClassification::UntrustedKnowledge,
        may_contain_instructions: Default::default(),
        executable: Default::default(),
    })
}
