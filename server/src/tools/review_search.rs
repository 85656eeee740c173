//! `review.search`: the project's review evidence (pull requests, review submissions, review
//! threads), filtered exactly and case-sensitively except `q` (a literal substring folding ASCII
//! case), in the store's total order, with a response budget that stops at a record boundary.
//! Every filter is checked before anything is read; a store that cannot be served is one
//! constant refusal.

use super::prelude::*;
use super::review_shared::{check_filter, check_text, check_vocabulary, page, review_store, Store};
use theurian_core::review::store::{read, Filters};
use theurian_protocol::evidence::ThreadState;
use theurian_protocol::mcp::ReviewSearchResponse;
use theurian_protocol::tools::args::ReviewSearchArgs;

/// Most records one call may ask for; outside 1..=50 is refused, never clamped.
pub const MAX_LIMIT: i64 = 50;

/// The store this tool serves.
const STORE: Store = review_store(UNAVAILABLE);

const UNAVAILABLE: &str = "This project's review evidence cannot be searched: no review search store built by this installation is current. \
Run `theurian review build` in the project to project the evidence files under .theurian/review/ into it, then retry.";
const EMPTY: &str =
    "matches everything or nothing depending on the filter, rather than what you meant";

/// Every filter is checked, in the reference's order, before the project is looked at; no
/// refusal here repeats a number sent.
pub(crate) fn check(args: &ReviewSearchArgs) -> Result<(), Refusal> {
    if !(1..=MAX_LIMIT).contains(&args.limit) {
        return Err(Refusal::argument(
            "limit",
            &format!("a page holds 1 to {MAX_LIMIT} records; nothing was searched"),
            "Send a limit in that range. A larger page is refused rather than quietly shortened, because a shortened page would look like the complete answer: narrow the filters instead.",
        ));
    }
    check_filter("repository", &args.repository, EMPTY)?;
    if args.pull_request.is_some_and(|n| n < 1) {
        return Err(Refusal::argument(
            "pullRequest",
            "a pull request number is 1 or more; nothing was searched",
            "Send a real pull request number, or leave it out to search the records of every pull request.",
        ));
    }
    let thread_state = args.thread_state.as_ref().map(|v| v.as_str());
    check_text("threadState", thread_state, EMPTY)?;
    check_vocabulary(
        "threadState",
        thread_state,
        ThreadState::VALUES,
        " They are lower-case, as stored.",
        "to search every thread as well as the records that are not threads",
    )?;
    check_filter("author", &args.author, EMPTY)?;
    check_filter("filePath", &args.file_path, EMPTY)?;
    check_filter("q", &args.q, EMPTY)
}

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: ReviewSearchArgs,
) -> Result<ReviewSearchResponse, Refusal> {
    let ReviewSearchArgs {
        author,
        file_path,
        limit,
        pull_request,
        q,
        repository,
        thread_state,
    } = args;
    let path = STORE.locate(state, &opened)?;
    let _permit = state.review_gate.enter().await?;
    let filters = Filters {
        repository: repository.as_ref().map(|v| v.as_str()),
        pull_request,
        thread_state: thread_state.as_ref().map(|v| v.as_str()),
        author: author.as_ref().map(|v| v.as_str()),
        file_path: file_path.as_ref().map(|v| v.as_str()),
        q: q.as_ref().map(|v| v.as_str()),
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
