//! `review.search`: the project's review evidence (pull requests, review submissions, review
//! threads), filtered exactly and case-sensitively except `q` (a literal substring folding ASCII
//! case), in the store's total order, with a response budget that stops at a record boundary.
//! Every filter is checked before anything is read; a store that cannot be served is one
//! constant refusal.

use super::review_shared::{check_text, check_vocabulary, page, Store};
use crate::state::AppState;
use theurian_core::review::store::{read, Filters, STORE_FILE, STORE_ID};
use theurian_protocol::evidence::ThreadState;
use theurian_protocol::mcp::{ReviewSearchInput, ReviewSearchResponse};
use theurian_protocol::Refusal;

/// Most records one call may ask for; outside 1..=50 is refused, never clamped.
pub const MAX_LIMIT: i64 = 50;

/// The store this tool serves.
const STORE: Store = Store {
    kind: "review",
    id: STORE_ID,
    file: STORE_FILE,
    rebuild: "theurian review build",
    unavailable: UNAVAILABLE,
};

const UNAVAILABLE: &str = "This project's review evidence cannot be searched: no review search store built by this installation is current. \
Run `theurian review build` in the project to project the evidence files under .theurian/review/ into it, then retry.";
const EMPTY: &str =
    "matches everything or nothing depending on the filter, rather than what you meant";

pub(crate) async fn answer(
    state: &AppState,
    input: ReviewSearchInput,
) -> Result<ReviewSearchResponse, Refusal> {
    let ReviewSearchInput {
        agent_id: _,
        author,
        file_path,
        limit,
        project_id,
        pull_request,
        q,
        repository,
        snapshot_id,
        task_id: _,
        thread_state,
    } = input;
    // Filters first, in the reference's order; no refusal here repeats a number sent.
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Refusal::argument(
            "limit",
            &format!("a page holds 1 to {MAX_LIMIT} records; nothing was searched"),
            "Send a limit in that range. A larger page is refused rather than quietly shortened, because a shortened page would look like the complete answer: narrow the filters instead.",
        ));
    }
    let (repository, thread_state, author, file_path, q) = (
        repository.as_ref().map(|v| v.as_str()),
        thread_state.as_ref().map(|v| v.as_str()),
        author.as_ref().map(|v| v.as_str()),
        file_path.as_ref().map(|v| v.as_str()),
        q.as_ref().map(|v| v.as_str()),
    );
    check_text("repository", repository, EMPTY)?;
    if pull_request.is_some_and(|n| n < 1) {
        return Err(Refusal::argument(
            "pullRequest",
            "a pull request number is 1 or more; nothing was searched",
            "Send a real pull request number, or leave it out to search the records of every pull request.",
        ));
    }
    check_text("threadState", thread_state, EMPTY)?;
    check_vocabulary(
        "threadState",
        thread_state,
        ThreadState::VALUES,
        " They are lower-case, as stored.",
        "to search every thread as well as the records that are not threads",
    )?;
    check_text("author", author, EMPTY)?;
    check_text("filePath", file_path, EMPTY)?;
    check_text("q", q, EMPTY)?;

    let path = STORE
        .locate(
            state,
            project_id.as_str(),
            snapshot_id.as_ref().map(|s| s.as_str()),
        )
        .await?;
    let _permit = state.review_gate.enter().await?;
    let filters = Filters {
        repository,
        pull_request,
        thread_state,
        author,
        file_path,
        q,
        limit: limit as usize,
    };
    let rows = read(&path, &filters)
        .await
        .map_err(|_| STORE.unavailable())?;
    let (records, truncated) = page(rows, limit as usize);
    Ok(ReviewSearchResponse {
        count: records.len() as u64,
        truncated,
        records,
    })
}
