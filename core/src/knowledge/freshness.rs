//! Which served knowledge may no longer hold, as `knowledge.checkFreshness` reports it: items
//! outside their validity window at a moment, and items whose source anchors point at files
//! that changed in the project's Git history since the revision was written (the knowledge may
//! describe code that is no longer there), and items callers reported as outdated or wrong
//! through `knowledge.submitFeedback` ([`QUESTIONING`]). Each finding carries its evidence and what would
//! refresh it. Only items the caller may read are checked, so nothing else is counted.

use crate::anchor_history::{Drift, History};
use crate::model::read::{self, Anchor, ItemView, ReadError};
use crate::model::text::age_days;
use crate::time::parse;
use chrono::{DateTime, FixedOffset};
use sqlx::sqlite::SqlitePool;
use sqlx::Row;
use std::collections::HashMap;
use std::path::Path;

/// The feedback signals that question a revision (and so make an item a finding).
pub const QUESTIONING: [theurian_protocol::mcp::FeedbackSignal; 2] = [
    theurian_protocol::mcp::FeedbackSignal::Outdated,
    theurian_protocol::mcp::FeedbackSignal::Wrong,
];

/// Why an item may be out of date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Its validity window ended before the moment checked.
    Expired { valid_to: String },
    /// Its validity window starts after the moment checked.
    NotYetValid { valid_from: String },
    /// An anchored file has other content at HEAD than at the commit the revision describes.
    AnchorChanged {
        file_path: String,
        since: String,
        commits: Vec<(String, String)>,
        more: bool,
    },
    /// An anchored file present at that commit is absent at HEAD.
    AnchorGone { file_path: String, since: String },
    /// The feedback log holds `reports` reports of `signal` (outdated or wrong) on the current
    /// revision, the latest at `last_at`.
    Reported {
        signal: String,
        reports: usize,
        last_at: String,
    },
}

/// Reports per revision and signal, as [`crate::feedback::against_revisions`] gives them.
pub type Reports =
    std::collections::BTreeMap<String, std::collections::BTreeMap<String, (usize, String)>>;

/// One item that may be out of date.
#[derive(Debug, Clone)]
pub struct Finding {
    pub item: ItemView,
    pub age_days: u64,
    pub reasons: Vec<Reason>,
}

/// What is checked.
pub struct Ask<'a> {
    pub statuses: &'a [&'a str],
    pub visible: &'a [&'a str],
    /// The moment validity windows are judged at.
    pub at: DateTime<FixedOffset>,
    /// Check anchors against Git history too.
    pub anchors: bool,
    /// Findings after this item id only.
    pub after: Option<&'a str>,
    pub limit: usize,
    /// Feedback reports of the signals that question an item (outdated, wrong).
    pub reported: &'a Reports,
}

/// The page of findings, whether more follow, and how many items were checked in all.
pub struct Report {
    pub findings: Vec<Finding>,
    pub more: bool,
    pub checked: usize,
    /// The commit anchors were compared with; None when they were not (no Git HEAD, or not
    /// asked).
    pub head: Option<String>,
}

/// Items read in the first round; each later round reads four times the one before. A page
/// often fills within the first round, so a call reads about as many items as it reports on,
/// and a check of every item still takes only a few rounds.
const FIRST_ROUND: i64 = 256;

/// Checks every served item of `project` in item-id order, a round of items at a time, until
/// a page of findings is full.
pub async fn check(
    pool: &SqlitePool,
    project: &str,
    root: &Path,
    ask: &Ask<'_>,
) -> Result<Report, ReadError> {
    let checked = read::count_servable(pool, project, ask.statuses, ask.visible).await?;
    let mut head = None;
    let mut findings = Vec::new();
    let mut more = false;
    let mut after = ask.after.map(str::to_owned);
    let mut round = FIRST_ROUND;
    'rounds: loop {
        let items = read::servable_heads(
            pool,
            project,
            ask.statuses,
            ask.visible,
            after.as_deref(),
            round,
        )
        .await?;
        let Some(last) = items.last() else { break };
        after = Some(last.item_id.clone());
        let last_round = items.len() < round as usize;
        round = round.saturating_mul(4);
        let (anchors, written_at) = if ask.anchors {
            let revisions: Vec<&str> = items.iter().map(|i| i.revision_id.as_str()).collect();
            (
                read::anchors_for(pool, project, &revisions).await?,
                source_commits(pool, project, &revisions).await?,
            )
        } else {
            (HashMap::new(), HashMap::new())
        };
        // Opened after the round's reads and dropped before the next: gix's repository cannot
        // cross an await on this runtime. Not opened for a round with no anchor to compare.
        let history = if anchors.is_empty() {
            None
        } else {
            History::open(root)
        };
        if head.is_none() {
            head = history.as_ref().map(History::head);
        }
        for item in items {
            let reasons = reasons(&item, ask, history.as_ref(), &anchors, &written_at);
            if reasons.is_empty() {
                continue;
            }
            if findings.len() == ask.limit {
                more = true;
                break 'rounds;
            }
            let age = parse(&item.created_at).map_or(0, |c| age_days(&ask.at, &c));
            findings.push(Finding {
                item,
                age_days: age,
                reasons,
            });
        }
        if last_round {
            break;
        }
    }
    if head.is_none() && ask.anchors {
        // No anchor was compared, but the answer still names the commit they would be.
        head = History::open(root).map(|h| h.head());
    }
    Ok(Report {
        findings,
        more,
        checked,
        head,
    })
}

/// Everything that questions `item`: its window, reports against its revision, and its
/// anchors' drift when a history is open.
fn reasons(
    item: &ItemView,
    ask: &Ask<'_>,
    history: Option<&History>,
    anchors: &HashMap<String, Vec<Anchor>>,
    written_at: &HashMap<String, String>,
) -> Vec<Reason> {
    let mut reasons = window(item, &ask.at);
    if let Some(signals) = ask.reported.get(&item.revision_id) {
        reasons.extend(
            signals
                .iter()
                .map(|(signal, (reports, last_at))| Reason::Reported {
                    signal: signal.clone(),
                    reports: *reports,
                    last_at: last_at.clone(),
                }),
        );
    }
    if let Some(history) = history {
        let boundary = written_at
            .get(&item.revision_id)
            .cloned()
            .or_else(|| parse(&item.created_at).and_then(|t| history.at_time(t.timestamp())));
        for anchor in anchors.get(&item.revision_id).into_iter().flatten() {
            reasons.extend(drift(history, anchor, boundary.as_deref()));
        }
    }
    reasons
}

/// The validity reasons for `item` at `at`.
fn window(item: &ItemView, at: &DateTime<FixedOffset>) -> Vec<Reason> {
    let mut out = Vec::new();
    if let Some(to) = item.valid_to.as_deref() {
        if parse(to).is_some_and(|t| t <= *at) {
            out.push(Reason::Expired {
                valid_to: to.to_owned(),
            });
        }
    }
    if parse(&item.valid_from).is_some_and(|f| *at < f) {
        out.push(Reason::NotYetValid {
            valid_from: item.valid_from.clone(),
        });
    }
    out
}

/// The anchor's drift since its own commit, or else since the revision's.
fn drift(history: &History, anchor: &Anchor, revision_commit: Option<&str>) -> Option<Reason> {
    let path = anchor.file_path.as_deref().filter(|p| !p.is_empty())?;
    let since = anchor.commit_sha.as_deref().or(revision_commit)?;
    Some(match history.drift(path, since)? {
        Drift::Changed { commits, more } => Reason::AnchorChanged {
            file_path: path.to_owned(),
            since: since.to_owned(),
            commits,
            more,
        },
        Drift::Gone => Reason::AnchorGone {
            file_path: path.to_owned(),
            since: since.to_owned(),
        },
    })
}

/// The commit each revision records it was written at, where it records one.
async fn source_commits(
    pool: &SqlitePool,
    project: &str,
    revisions: &[&str],
) -> Result<HashMap<String, String>, ReadError> {
    let rows = sqlx::query(
        "SELECT revision_id, source_commit FROM knowledge_revisions
         WHERE project_id = ? AND revision_id IN (SELECT value FROM json_each(?))
           AND source_commit IS NOT NULL AND source_commit <> ''",
    )
    .bind(project)
    .bind(read::json_list(revisions))
    .fetch_all(pool)
    .await?;
    let mut out = HashMap::with_capacity(rows.len());
    for r in &rows {
        out.insert(r.try_get("revision_id")?, r.try_get("source_commit")?);
    }
    Ok(out)
}

/// What would refresh an item, by the strongest reason it has.
pub fn refresh_advice(reasons: &[Reason]) -> &'static str {
    let anchored = reasons
        .iter()
        .any(|r| matches!(r, Reason::AnchorChanged { .. } | Reason::AnchorGone { .. }));
    if anchored {
        "Read the anchored files as they are now; if the knowledge no longer holds, draft a new revision with knowledge.proposeChange (new anchors at the current commit), or retire the item."
    } else if reasons.iter().any(|r| matches!(r, Reason::Reported { .. })) {
        "Check the reports (`theurian feedback report`) against the knowledge; if they hold, draft a corrected revision with knowledge.proposeChange, or retire the item."
    } else if reasons.iter().any(|r| matches!(r, Reason::Expired { .. })) {
        "Confirm the knowledge still holds and draft a revision with a new validity window with knowledge.proposeChange, or retire the item."
    } else {
        "Nothing to do until the window begins; until then searches with asOf earlier than it leave the item out."
    }
}
