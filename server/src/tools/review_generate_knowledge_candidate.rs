//! `review.generateKnowledgeCandidate`: one ingested review thread plus the caller's
//! generalisation becomes an `inferred` proposal, only when the promotion gate recomputed from
//! the stored records holds and the named fix commit is verified in the local repository.
//! Like every write-intent tool it holds only the draft-only facade.

use super::knowledge_propose_change::{anchors, evidence, refusal};
use super::review_shared::Store;
use crate::state::AppState;
use theurian_core::proposal::candidate::CandidateRequest;
use theurian_core::proposal::draft::DraftOnly;
use theurian_core::review::store::{STORE_FILE, STORE_ID};
use theurian_protocol::mcp::{
    ReviewGenerateKnowledgeCandidateInput, ReviewGenerateKnowledgeCandidateResponse,
};
use theurian_protocol::Refusal;

const TOOL: &str = "review.generateKnowledgeCandidate";

/// The store the candidate's records are looked up in.
const STORE: Store = Store {
    kind: "review",
    id: STORE_ID,
    file: STORE_FILE,
    rebuild: "theurian review build",
    unavailable: "This project's review evidence cannot be read for a candidate: no review search store built by this installation is current. Run `theurian review build` in the project, then retry.",
};

pub(crate) async fn answer(
    state: &AppState,
    input: ReviewGenerateKnowledgeCandidateInput,
) -> Result<ReviewGenerateKnowledgeCandidateResponse, Refusal> {
    let (root, store) = STORE
        .locate_with_root(
            state,
            input.project_id.as_str(),
            input.snapshot_id.as_ref().map(|s| s.as_str()),
        )
        .await?;
    if input
        .item_id
        .parse::<theurian_protocol::migration::ItemId>()
        .is_err()
    {
        return Err(Refusal::invalid_input(
            "`itemId` is not a usable item id: ids are lower-case dot-separated kebab-case segments (e.g. reliability.lock-after-read), at most 200 characters. Nothing was drafted.",
        ));
    }
    let evidence = evidence(
        &input.evidence,
        input.agent_id.as_ref().map(|a| a.as_str()),
        input.task_id.as_ref().map(|t| t.as_str()),
    )?;
    // The category is only checked (by the schema, at the seat); nothing records it.
    let _category = input.category;
    let request = CandidateRequest {
        repository: input.repository,
        record_key: input.record_key,
        fix_commit: input.fix_commit.to_string(),
        item_id: input.item_id.to_string(),
        title: input.title,
        body: input.body.to_string(),
        kind: input.kind,
        owner: input.owner,
        author: input.author,
        description: input.description,
        evidence,
        source_anchors: anchors(&input.source_anchors),
        labels: input.labels.unwrap_or_default(),
        scope_paths: input.scope_paths,
        namespace: input.namespace,
        expected_revision: input.expected_revision,
    };
    let visible: Vec<String> = state
        .visible_levels()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let payload = tokio::task::spawn_blocking(move || {
        let runtime = theurian_core::runtime::current_thread()?;
        let facade = DraftOnly::open(&root, Some(visible))?;
        runtime.block_on(facade.draft_candidate(&store, &request))
    })
    .await
    .map_err(|e| Refusal::internal(TOOL, &e))?
    .map_err(refusal)?;
    Ok(ReviewGenerateKnowledgeCandidateResponse(payload))
}
