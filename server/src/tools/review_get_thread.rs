//! `review.getThread`: one review thread in full, by the `repository` and `recordKey` a
//! review.search record carries. A key the store does not hold and a key naming another kind
//! of record get one refusal, so the answer never says which records exist beyond threads.

use super::prelude::*;
use super::review_shared::{check_text, review_store, Store};
use theurian_core::model::text::cut;
use theurian_core::review::thread::{thread, Fault, Served};
use theurian_protocol::evidence::Participant as Held;
use theurian_protocol::mcp::{
    Comment, Participant, ReviewGetThreadResponse, ReviewGetThreadResponseResolution as Resolution,
    UntrustedClassification,
};
use theurian_protocol::tools::args::ReviewGetThreadArgs;

const TOOL: ToolId = ToolId::ReviewGetThread;

/// Comments served per thread; the rest are counted in `commentsOmitted`.
const MAX_COMMENTS: usize = 200;
/// Characters of one comment served before it is cut.
const MAX_BODY_CHARS: usize = 8_000;

const STORE: Store = review_store("This project's review threads cannot be read: no review search store built by this installation is current. Run `theurian review build` in the project, then retry.");

const EMPTY: &str = "names no record";

/// The record names are checked before the project is looked at.
pub(crate) fn check(args: &ReviewGetThreadArgs) -> Result<(), Refusal> {
    check_text("repository", Some(args.repository.as_str()), EMPTY)?;
    check_text("recordKey", Some(args.record_key.as_str()), EMPTY)
}

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: ReviewGetThreadArgs,
) -> Result<ReviewGetThreadResponse, Refusal> {
    let ReviewGetThreadArgs {
        repository,
        record_key,
    } = args;
    let store = STORE.locate(state, &opened)?;
    let _permit = state.review_gate.enter().await?;
    let root = &opened.resolved.root;
    let served = thread(root, &store, repository.as_str(), record_key.as_str())
        .await
        .map_err(|f| match f {
            Fault::Unavailable => STORE.unavailable(),
            Fault::NotHeld => Refusal::argument(
                "recordKey",
                "this project's review store holds no review thread under that key in that repository",
                "Take `repository` and `recordKey` from a review.search record whose kind is review-thread.",
            ),
            Fault::Unreadable(e) => Refusal::new(
                theurian_protocol::mcp::RefusalMetaCode::StateUnavailable,
                format!("{} {}", e.message, e.remedy),
            ),
        })?;
    shape(
        opened.project_id.clone(),
        (repository.as_str(), record_key.as_str()),
        served,
    )
}

/// The answer for the thread `served`, named by `(repository, recordKey)`.
fn shape(
    project_id: theurian_protocol::mcp::ProjectId,
    (repository, record_key): (&str, &str),
    served: Served,
) -> Result<ReviewGetThreadResponse, Refusal> {
    let t = served.thread;
    let omitted = t.comments.len().saturating_sub(MAX_COMMENTS);
    let comments = t
        .comments
        .into_iter()
        .take(MAX_COMMENTS)
        .map(|c| {
            let cut_body = c.body.chars().count() > MAX_BODY_CHARS;
            Ok(Comment {
                author: participant(c.author)?,
                body: cut(c.body, MAX_BODY_CHARS),
                body_cut: cut_body,
                created_at: c.created_at.to_string(),
                category: c.category,
                line_start: c.line_start,
                line_end: c.line_end,
            })
        })
        .collect::<Result<Vec<_>, Refusal>>()?;
    let resolution = t
        .resolution
        .map(|r| {
            Ok::<_, Refusal>(Resolution {
                state: r.state,
                resolved_by: r.resolved_by.map(participant).transpose()?,
                resolved_at: r.resolved_at.map(|a| a.to_string()),
                fix_commit: r.fix_commit,
            })
        })
        .transpose()?;
    Ok(ReviewGetThreadResponse {
        project_id,
        repository: repository.try_into().or_internal(TOOL)?,
        record_key: record_key.try_into().or_internal(TOOL)?,
        record_path: served.rel.try_into().or_internal(TOOL)?,
        pull_request: super::review_shared::pull_request_number(served.pull_request),
        source_uri: served.source_uri.try_into().or_internal(TOOL)?,
        file_path: t.file_path,
        line_start: t.line_start,
        line_end: t.line_end,
        commit_sha: t.commit_sha,
        state: t.state,
        resolution,
        comments,
        comments_omitted: omitted as u64,
        last_seen_at: served.last_seen_at,
        content_classification: UntrustedClassification::UntrustedKnowledge,
        may_contain_instructions: Default::default(),
        executable: Default::default(),
    })
}

fn participant(p: Held) -> Result<Participant, Refusal> {
    Ok(Participant {
        external_id: p.external_id.as_str().try_into().or_internal(TOOL)?,
        display_name: p.display_name,
    })
}
