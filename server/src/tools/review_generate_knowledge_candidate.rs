//! `review.generateKnowledgeCandidate`: one ingested review thread plus the caller's
//! generalisation becomes an `inferred` proposal, only when the promotion gate recomputed from
//! the stored records holds and the named fix commit is verified in the local repository.
//! Like every write-intent tool it holds only the draft-only facade.

use super::knowledge_propose_change::{anchors, evidence, refusal};
use super::prelude::*;
use super::review_shared::{review_store, Store};
use theurian_core::proposal::candidate::CandidateRequest;
use theurian_core::proposal::draft::DraftOnly;
use theurian_protocol::mcp::ReviewGenerateKnowledgeCandidateResponse;
use theurian_protocol::tools::args::ReviewGenerateKnowledgeCandidateArgs;

const TOOL: ToolId = ToolId::ReviewGenerateKnowledgeCandidate;

/// The store the candidate's records are looked up in.
const STORE: Store = review_store("This project's review evidence cannot be read for a candidate: no review search store built by this installation is current. Run `theurian review build` in the project, then retry.");

pub(crate) use super::no_check as check;

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: ReviewGenerateKnowledgeCandidateArgs,
) -> Result<ReviewGenerateKnowledgeCandidateResponse, Refusal> {
    let store = STORE.locate(state, &opened)?;
    let request = candidate_request(args, &opened)?;
    let visible: Vec<String> = state
        .visible_levels()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let root = opened.resolved.root.clone();
    let payload = tokio::task::spawn_blocking(move || {
        let runtime = theurian_core::runtime::current_thread()?;
        let facade = DraftOnly::open(&root, Some(visible))?;
        runtime.block_on(facade.draft_candidate(&store, &request))
    })
    .await
    .or_internal(TOOL)?
    .map_err(refusal)?;
    Ok(ReviewGenerateKnowledgeCandidateResponse(payload))
}

/// The candidate request, after the checks that need no store: a usable item id and agent
/// labels that agree with the evidence.
fn candidate_request(
    args: ReviewGenerateKnowledgeCandidateArgs,
    call: &Opened,
) -> Result<CandidateRequest, Refusal> {
    let ReviewGenerateKnowledgeCandidateArgs {
        repository,
        record_key,
        fix_commit,
        item_id,
        title,
        body,
        kind,
        // Only checked (by the schema, at the seat); nothing records it.
        category: _,
        owner,
        author,
        description,
        evidence: stated,
        source_anchors,
        labels,
        scope_paths,
        namespace,
        expected_revision,
    } = args;
    super::shape::draftable_item_id(item_id.as_str(), "reliability.lock-after-read")?;
    let evidence = evidence(&stated, call)?;
    Ok(CandidateRequest {
        repository,
        record_key,
        fix_commit: fix_commit.to_string(),
        item_id: item_id.to_string(),
        title,
        body: body.to_string(),
        kind,
        owner,
        author,
        description,
        evidence,
        source_anchors: anchors(&source_anchors),
        labels: labels.unwrap_or_default(),
        scope_paths,
        namespace,
        expected_revision,
    })
}
