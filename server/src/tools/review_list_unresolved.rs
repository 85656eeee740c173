//! `review.listUnresolved`: open review threads, newest first, filtered and paged under the
//! same size budget as review.search. The cursor is the last served thread's position (its
//! opening time and evidence file), so pages do not shift when threads open or close between
//! calls.

use super::prelude::*;
use super::review_shared::{check_filter, page, redacts_names, review_store, Store};
use super::shape::cursor_not_issued;
use theurian_core::review::cursor;
use theurian_core::review::ingest::screen::redacted;
use theurian_core::review::unresolved::{days_before, open_threads, Filters, Open};
use theurian_protocol::mcp::{ReviewListUnresolvedResponse, Thread, UntrustedClassification};
use theurian_protocol::tools::args::ReviewListUnresolvedArgs;

const TOOL: ToolId = ToolId::ReviewListUnresolved;

const STORE: Store = review_store("This project's open review threads cannot be listed: no review search store built by this installation is current. Run `theurian review build` in the project, then retry.");

const EMPTY: &str = "matches nothing";

/// The filters, the age window and the cursor are checked before the project is looked at.
pub(crate) fn check(args: &ReviewListUnresolvedArgs) -> Result<(), Refusal> {
    check_filter("repository", &args.repository, EMPTY)?;
    check_filter("pathPrefix", &args.path_prefix, EMPTY)?;
    check_filter("author", &args.author, EMPTY)?;
    if let (Some(min), Some(max)) = (args.min_age_days, args.max_age_days) {
        if min > max {
            return Err(Refusal::argument(
                "minAgeDays",
                "it is larger than maxAgeDays, so no thread could be both that old and that young",
                "Send a minAgeDays no larger than maxAgeDays, or leave one out.",
            ));
        }
    }
    position(args.cursor.as_ref().map(|c| c.as_str())).map(drop)
}

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: ReviewListUnresolvedArgs,
) -> Result<ReviewListUnresolvedResponse, Refusal> {
    let ReviewListUnresolvedArgs {
        repository,
        pull_request,
        path_prefix,
        author,
        min_age_days,
        max_age_days,
        limit,
        cursor,
    } = args;
    let store = STORE.locate(state, &opened)?;
    let root = &opened.resolved.root;
    let redact = redacts_names(root)?;
    let _permit = state.review_gate.enter().await?;
    let now = chrono::Utc::now();
    let limit = usize::try_from(limit.get()).unwrap_or(usize::MAX);
    let filters = Filters {
        repository: repository.as_ref().map(|v| v.as_str()),
        pull_request: pull_request.and_then(|n| i64::try_from(n.get()).ok()),
        path_prefix: path_prefix.as_ref().map(|v| v.as_str()),
        author: author.as_ref().map(|v| v.as_str()),
        opened_by: min_age_days.map(|d| days_before(now, d)),
        opened_since: max_age_days.map(|d| days_before(now, d)),
        after: position(cursor.as_ref().map(|c| c.as_str()))?,
        rows: limit.saturating_add(1),
    };
    let rows = open_threads(&store, &filters)
        .await
        .map_err(|_| STORE.unavailable())?;
    let threads = rows
        .into_iter()
        .map(|o| thread(o, now, redact))
        .collect::<Result<Vec<_>, _>>()?;
    let (threads, more) = page(threads, limit);
    let next = match threads.last() {
        Some(last) if more => Some(cursor::encode(&last.opened_at, last.record_path.as_str())),
        _ => None,
    };
    Ok(ReviewListUnresolvedResponse {
        project_id: opened.project_id.clone(),
        count: i64::try_from(threads.len()).unwrap_or(i64::MAX),
        threads,
        next_cursor: next,
    })
}

/// The position a cursor names, or the refusal of one this tool never issued.
fn position(cursor: Option<&str>) -> Result<Option<(&str, &str)>, Refusal> {
    cursor
        .map(|c| cursor::open_thread(c).ok_or_else(|| cursor_not_issued("open thread")))
        .transpose()
}

fn thread(o: Open, now: chrono::DateTime<chrono::Utc>, redact: bool) -> Result<Thread, Refusal> {
    let (author_id, author_name) = if redact {
        redacted(&o.author_external_id, &o.author_display_name)
    } else {
        (o.author_external_id, o.author_display_name)
    };
    let age = chrono::DateTime::parse_from_rfc3339(&o.opened_at)
        .map(|at| (now - at.with_timezone(&chrono::Utc)).num_days().max(0))
        .unwrap_or(0);
    Ok(Thread {
        repository: o.repository.try_into().or_internal(TOOL)?,
        record_key: o.record_key.try_into().or_internal(TOOL)?,
        record_path: o.rel.try_into().or_internal(TOOL)?,
        pull_request: super::review_shared::pull_request_number(o.pull_request),
        file_path: o.file_path,
        source_uri: o.source_uri.try_into().or_internal(TOOL)?,
        author_external_id: author_id.try_into().or_internal(TOOL)?,
        author_display_name: author_name,
        opened_at: o.opened_at,
        last_comment_at: o.last_comment_at,
        age_days: age as u64,
        comments: u64::try_from(o.comments)
            .ok()
            .and_then(std::num::NonZeroU64::new)
            .ok_or("a stored thread has no comments")
            .or_internal(TOOL)?,
        excerpt: o.excerpt,
        content_classification: UntrustedClassification::UntrustedKnowledge,
        may_contain_instructions: Default::default(),
        executable: Default::default(),
    })
}
