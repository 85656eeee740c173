//! `review.generateKnowledgeCandidate`: a caller's generalisation of one ingested review thread,
//! drafted as a content proposal only when the promotion gate holds. The gate is recomputed
//! here from the stored records; nothing the caller sends can satisfy a signal. The named fix
//! commit is verified in the local repository through gix: it must exist and its first-parent
//! change must touch the thread's file.

use super::draft::{Anchor, ContentRequest, DraftOnly, Evidence};
use super::DraftError;
use crate::review::evidence::{Document, Record};
use crate::review::store::STORE_FILE;
use std::path::Path;
use theurian_protocol::evidence::ThreadState;
use theurian_protocol::mcp::ProposalPayload;

/// The one answer for a record this installation's store cannot vouch for (unknown key, wrong
/// kind, unknown pull request): what separates them is not the caller's to learn.
pub const UNRESOLVED: &str = "No candidate can be drafted for that record: the review evidence it needs is not in this installation's built review store. Land and project the repository's review history first: `theurian review ingest <owner>/<name>`, then `theurian review build`.";

/// What checking a fix commit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixCommit {
    Verified,
    /// The commit is not here, or it touched something else: one answer, since which of the
    /// two is a fact about the repository's contents, not about the request.
    NotVerified,
}

/// Whether `sha` is a commit of the repository at `root` whose first-parent change (the whole
/// tree for a root commit) adds, removes or modifies `path`.
pub fn verify_fix_commit(root: &Path, sha: &str, path: &str) -> FixCommit {
    let check = || -> Option<bool> {
        let repo = gix::open(root).ok()?;
        let id = gix::ObjectId::from_hex(sha.as_bytes()).ok()?;
        let commit = repo.find_object(id).ok()?.peel_to_commit().ok()?;
        let entry =
            |c: &gix::Commit<'_>| -> Option<Option<(gix::objs::tree::EntryMode, gix::ObjectId)>> {
                let tree = c.tree().ok()?;
                Some(
                    tree.lookup_entry_by_path(path)
                        .ok()?
                        .map(|e| (e.mode(), e.object_id())),
                )
            };
        let now = entry(&commit)?;
        let before = match commit.parent_ids().next() {
            Some(parent) => entry(&repo.find_object(parent).ok()?.peel_to_commit().ok()?)?,
            None => None,
        };
        Some(now != before)
    };
    if check() == Some(true) {
        FixCommit::Verified
    } else {
        FixCommit::NotVerified
    }
}

/// What the caller asks for.
#[derive(Debug, Clone)]
pub struct CandidateRequest {
    pub repository: String,
    pub record_key: String,
    pub fix_commit: String,
    pub item_id: String,
    pub title: String,
    pub body: String,
    pub kind: String,
    pub owner: String,
    pub author: String,
    pub description: String,
    pub evidence: Evidence,
    pub source_anchors: Vec<Anchor>,
    pub labels: Vec<String>,
    pub scope_paths: Vec<String>,
    pub namespace: Option<String>,
    pub expected_revision: Option<String>,
}

fn unresolved() -> DraftError {
    DraftError::refused(UNRESOLVED, "")
}

/// The stored record at `(repository, key)`, through the built store, re-read from disk.
async fn stored(
    root: &Path,
    store: &Path,
    repository: &str,
    key: &str,
) -> Result<Document, DraftError> {
    use crate::review::thread::{document, Fault};
    match document(root, store, repository, key).await {
        Ok(Some((_, doc))) => Ok(doc),
        Ok(None) | Err(Fault::Unavailable | Fault::NotHeld) => Err(unresolved()),
        Err(Fault::Unreadable(core)) => Err(DraftError::refused(core.message, core.remedy)),
    }
}

impl DraftOnly {
    /// Checks the gate for the named thread and, when it holds, drafts the caller's
    /// generalisation as an `inferred` proposal.
    pub async fn draft_candidate(
        &self,
        store: &Path,
        req: &CandidateRequest,
    ) -> Result<ProposalPayload, DraftError> {
        if !store.ends_with(STORE_FILE) {
            return Err(unresolved());
        }
        super::draft::vocabulary(&req.kind, None, None)?;
        let root = self.root().to_path_buf();
        let thread_doc = stored(&root, store, &req.repository, &req.record_key).await?;
        let Record::Thread(thread) = &thread_doc.record else {
            return Err(unresolved());
        };
        let Some(file) = thread.file_path.clone() else {
            return Err(DraftError::refused(
                format!("The stored thread '{}' carries no file anchor, so its fix-commit signal cannot be verified: this thread cannot generate a candidate in this version.", req.record_key),
                "Draft the knowledge directly instead: `theurian propose --item-id <id> --title <title> --body-file <path> ...` (or knowledge.proposeChange).",
            ));
        };
        let pr_number = thread_doc
            .pull_request()
            .ok()
            .flatten()
            .ok_or_else(unresolved)?;
        // Keys are stored as the number's own spelling: `#007` names no stored pull request.
        if !thread
            .event_key
            .as_str()
            .ends_with(&format!("#{pr_number}"))
        {
            return Err(unresolved());
        }
        let pr_doc = stored(&root, store, &req.repository, &pr_number.to_string()).await?;
        let Record::PullRequest(pr) = &pr_doc.record else {
            return Err(unresolved());
        };
        let fix = {
            let (root, sha, file) = (root.clone(), req.fix_commit.clone(), file.clone());
            tokio::task::spawn_blocking(move || verify_fix_commit(&root, &sha, &file))
                .await
                .unwrap_or(FixCommit::NotVerified)
        };
        let refresh = format!("Obtain the signal upstream, then refresh the stored record: `theurian review ingest {}` followed by `theurian review build`.", req.repository);
        let mut unmet: Vec<(String, String)> = Vec::new();
        if !pr.merged {
            unmet.push((
                "pull_request_merged: the stored pull request record does not record it merged"
                    .into(),
                refresh.clone(),
            ));
        }
        if thread.state != ThreadState::Resolved {
            unmet.push((
                "thread_resolved: the stored record does not record this conversation resolved"
                    .into(),
                refresh.clone(),
            ));
        }
        if fix != FixCommit::Verified {
            unmet.push((
                format!("fix_commit_present: the commit this call names is not one this repository has that touched '{file}'"),
                format!("Name a commit of this repository that changed that file: `git log --oneline -- '{file}'` lists them."),
            ));
        }
        if matches!(thread.state, ThreadState::Outdated | ThreadState::Dismissed) {
            unmet.push(("not_dismissed_or_outdated: the stored record marks this conversation dismissed or outdated".into(), refresh.clone()));
        }
        match pr.ci_successful {
            Some(true) => {}
            None => unmet.push((
                "ci_successful: nobody has told Theurian whether this thread's fix passed".into(),
                refresh.clone(),
            )),
            Some(false) => unmet.push((
                "ci_successful: this thread's fix did not pass".into(),
                refresh.clone(),
            )),
        }
        if thread.comments.is_empty() {
            unmet.push((
                "has_evidence: the stored thread holds no comment".into(),
                refresh.clone(),
            ));
        }
        if !unmet.is_empty() {
            let mut remedies: Vec<String> = Vec::new();
            for (_, r) in &unmet {
                if !remedies.contains(r) {
                    remedies.push(r.clone());
                }
            }
            return Err(DraftError::refused(
                format!(
                    "The promotion gate is unmet for '{}': {}.",
                    req.record_key,
                    unmet
                        .iter()
                        .map(|(s, _)| s.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                remedies.join(" "),
            ));
        }
        let content = ContentRequest {
            item_id: req.item_id.clone(),
            title: req.title.clone(),
            kind: req.kind.clone(),
            owner: req.owner.clone(),
            author: req.author.clone(),
            description: req.description.clone(),
            body: req.body.clone(),
            content_type: "text/markdown".into(),
            evidence: req.evidence.clone(),
            source_anchors: req.source_anchors.clone(),
            labels: req.labels.clone(),
            scope_paths: req.scope_paths.clone(),
            namespace: req.namespace.clone(),
            trust_level: Some(theurian_protocol::migration::TrustLevel::Inferred.to_string()),
            // Left to default: an existing item keeps its own, a new one takes the schema's,
            // and the revision states it either way.
            sensitivity: None,
            expected_revision: req.expected_revision.clone(),
            local: false,
            record_defaults: true,
        };
        self.draft_content(&content)
    }
}
