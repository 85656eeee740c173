//! `review.listUnresolved`: open review threads, newest first, filtered and paged under the
//! same size budget as review.search. The cursor is the last served thread's position (its
//! opening time and evidence file), so pages do not shift when threads open or close between
//! calls.

use super::review_shared::{check_text, page, Store};
use super::shape::cursor_not_issued;
use crate::state::AppState;
use theurian_core::review::ingest::run::settings;
use theurian_core::review::ingest::screen::redacted;
use theurian_core::review::store::{STORE_FILE, STORE_ID};
use theurian_core::review::unresolved::{days_before, open_threads, Filters, Open};
use theurian_protocol::mcp::{
    ReviewListUnresolvedInput, ReviewListUnresolvedResponse, Thread, UntrustedClassification,
};
use theurian_protocol::Refusal;

const TOOL: &str = "review.listUnresolved";

const STORE: Store = Store {
    kind: "review",
    id: STORE_ID,
    file: STORE_FILE,
    rebuild: "theurian review build",
    unavailable: "This project's open review threads cannot be listed: no review search store built by this installation is current. Run `theurian review build` in the project, then retry.",
};

const EMPTY: &str = "matches nothing";
/// Separates the two halves of a cursor; neither a time nor an evidence path holds it.
const CURSOR_SEPARATOR: char = '|';

/// `value` after the review tools' text checks.
fn text<'a>(value: Option<&'a str>, name: &str) -> Result<Option<&'a str>, Refusal> {
    check_text(name, value, EMPTY).map(|()| value)
}

pub(crate) async fn answer(
    state: &AppState,
    input: ReviewListUnresolvedInput,
) -> Result<ReviewListUnresolvedResponse, Refusal> {
    let repository = text(input.repository.as_ref().map(|v| v.as_str()), "repository")?;
    let path_prefix = text(input.path_prefix.as_ref().map(|v| v.as_str()), "pathPrefix")?;
    let author = text(input.author.as_ref().map(|v| v.as_str()), "author")?;
    if let (Some(min), Some(max)) = (input.min_age_days, input.max_age_days) {
        if min > max {
            return Err(Refusal::argument(
                "minAgeDays",
                "it is larger than maxAgeDays, so no thread could be both that old and that young",
                "Send a minAgeDays no larger than maxAgeDays, or leave one out.",
            ));
        }
    }
    let after = position(input.cursor.as_ref().map(|c| c.as_str()))?;
    let (root, store) = STORE
        .locate_with_root(
            state,
            input.project_id.as_str(),
            input.snapshot_id.as_ref().map(|s| s.as_str()),
        )
        .await?;
    let redact = settings(&root)
        .map_err(|e| {
            Refusal::new(
                theurian_protocol::mcp::RefusalMetaCode::StateUnavailable,
                format!("{} {}", e.message, e.remedy),
            )
        })?
        .redact_participant_names;
    let _permit = state.review_gate.enter().await?;
    let now = chrono::Utc::now();
    let limit = usize::try_from(input.limit.get()).unwrap_or(usize::MAX);
    let filters = Filters {
        repository,
        pull_request: input.pull_request.and_then(|n| i64::try_from(n.get()).ok()),
        path_prefix,
        author,
        opened_by: input.min_age_days.map(|d| days_before(now, d)),
        opened_since: input.max_age_days.map(|d| days_before(now, d)),
        after,
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
        Some(last) if more => Some(format!(
            "{}{CURSOR_SEPARATOR}{}",
            last.opened_at,
            last.record_path.as_str()
        )),
        _ => None,
    };
    Ok(ReviewListUnresolvedResponse {
        project_id: input.project_id,
        count: i64::try_from(threads.len()).unwrap_or(i64::MAX),
        threads,
        next_cursor: next,
    })
}

/// The position a cursor names: (opened at, evidence file).
fn position(cursor: Option<&str>) -> Result<Option<(&str, &str)>, Refusal> {
    let Some(c) = cursor else { return Ok(None) };
    match c.split_once(CURSOR_SEPARATOR) {
        Some((at, rel)) if !rel.is_empty() && chrono::DateTime::parse_from_rfc3339(at).is_ok() => {
            Ok(Some((at, rel)))
        }
        _ => Err(cursor_not_issued("open thread")),
    }
}

fn thread(o: Open, now: chrono::DateTime<chrono::Utc>, redact: bool) -> Result<Thread, Refusal> {
    let bad = |e: theurian_protocol::mcp::error::ConversionError| Refusal::internal(TOOL, &e);
    let (author_id, author_name) = if redact {
        redacted(&o.author_external_id, &o.author_display_name)
    } else {
        (o.author_external_id, o.author_display_name)
    };
    let age = chrono::DateTime::parse_from_rfc3339(&o.opened_at)
        .map(|at| (now - at.with_timezone(&chrono::Utc)).num_days().max(0))
        .unwrap_or(0);
    Ok(Thread {
        repository: o.repository.try_into().map_err(bad)?,
        record_key: o.record_key.try_into().map_err(bad)?,
        record_path: o.rel.try_into().map_err(bad)?,
        pull_request: super::review_shared::pull_request_number(o.pull_request),
        file_path: o.file_path,
        source_uri: o.source_uri.try_into().map_err(bad)?,
        author_external_id: author_id.try_into().map_err(bad)?,
        author_display_name: author_name,
        opened_at: o.opened_at,
        last_comment_at: o.last_comment_at,
        age_days: age as u64,
        comments: u64::try_from(o.comments)
            .ok()
            .and_then(std::num::NonZeroU64::new)
            .ok_or_else(|| Refusal::internal(TOOL, &"a stored thread has no comments"))?,
        excerpt: o.excerpt,
        content_classification: UntrustedClassification::UntrustedKnowledge,
        may_contain_instructions: Default::default(),
        executable: Default::default(),
    })
}
