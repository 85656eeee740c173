//! Whether a file a revision is anchored to has changed in the project's Git history since the
//! revision was written: the file's blob at the anchored commit against its blob at HEAD, and
//! when they differ, the commits between that changed it. Read through gix, bounded: a history
//! walk visits at most [`WALK_BUDGET`] commits per check, so a long history costs a bounded
//! answer (flagged as such), never an unbounded call.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

/// Commits one check may visit while listing the changes to a file.
pub const WALK_BUDGET: usize = 2_000;
/// Changing commits listed per file, newest first.
pub const LISTED: usize = 5;
/// First-parent commits remembered for finding the commit a revision was written at.
const TIMELINE: usize = 10_000;

/// What happened to an anchored file since its boundary commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// Different content at HEAD: the newest changing commits (sha, RFC 3339 UTC), and whether
    /// more changed it than are listed (or the walk stopped before the boundary).
    Changed {
        commits: Vec<(String, String)>,
        more: bool,
    },
    /// Present at the boundary, absent at HEAD (deleted or moved).
    Gone,
}

/// One repository opened for anchor checks, remembering what it looked up.
pub struct History {
    repo: gix::Repository,
    head: gix::ObjectId,
    head_tree: gix::ObjectId,
    /// (commit time, id) along HEAD's first parents, newest first; walked on first use, since
    /// only a revision that records no commit needs it.
    timeline: std::cell::OnceCell<Vec<(i64, gix::ObjectId)>>,
    trees: RefCell<HashMap<gix::ObjectId, Option<gix::ObjectId>>>,
}

impl History {
    /// The repository at `root` at its HEAD; None without a readable HEAD commit.
    pub fn open(root: &Path) -> Option<History> {
        let repo = gix::open(root).ok()?;
        let (head, head_tree) = {
            let commit = repo.head_commit().ok()?;
            let tree = commit.tree_id().ok()?.detach();
            (commit.id, tree)
        };
        Some(History {
            repo,
            head,
            head_tree,
            timeline: std::cell::OnceCell::new(),
            trees: RefCell::new(HashMap::new()),
        })
    }

    /// HEAD's commit id.
    pub fn head(&self) -> String {
        self.head.to_string()
    }

    fn first_parents(&self) -> Vec<(i64, gix::ObjectId)> {
        let mut out = Vec::new();
        let mut at = Some(self.head);
        while let Some(id) = at.filter(|_| out.len() < TIMELINE) {
            let Ok(commit) = self.repo.find_commit(id) else {
                break;
            };
            let Ok(time) = commit.time() else { break };
            out.push((time.seconds, id));
            at = commit.parent_ids().next().map(|p| p.detach());
        }
        out
    }

    /// The newest first-parent commit of HEAD made at or before `seconds` (Unix time): the
    /// commit a revision written then described, when the anchor names none.
    pub fn at_time(&self, seconds: i64) -> Option<String> {
        self.timeline
            .get_or_init(|| self.first_parents())
            .iter()
            .find(|(t, _)| *t <= seconds)
            .map(|(_, id)| id.to_string())
    }

    fn tree_of(&self, commit: gix::ObjectId) -> Option<gix::ObjectId> {
        if let Some(known) = self.trees.borrow().get(&commit) {
            return *known;
        }
        let tree = self
            .repo
            .find_commit(commit)
            .ok()
            .and_then(|c| c.tree_id().ok())
            .map(|t| t.detach());
        self.trees.borrow_mut().insert(commit, tree);
        tree
    }

    fn blob_at(&self, tree: gix::ObjectId, path: &str) -> Option<gix::ObjectId> {
        let tree = self.repo.find_tree(tree).ok()?;
        let entry = tree.lookup_entry_by_path(path).ok()??;
        Some(entry.object_id())
    }

    /// What happened to `path` between `boundary` (a commit id, full or abbreviated hex) and
    /// HEAD; None when it did not change, or when the boundary or the file at it is not in this
    /// repository (an anchor into another repository is not ours to judge).
    pub fn drift(&self, path: &str, boundary: &str) -> Option<Drift> {
        let since = self
            .repo
            .rev_parse_single(boundary)
            .ok()
            .map(|id| id.detach())?;
        let since_tree = self.tree_of(since)?;
        let before = self.blob_at(since_tree, path)?;
        match self.blob_at(self.head_tree, path) {
            None => Some(Drift::Gone),
            Some(now) if now == before => None,
            Some(_) => {
                let (commits, more) = self.changing_commits(path, since);
                Some(Drift::Changed { commits, more })
            }
        }
    }

    /// The commits after `since` on HEAD's history that changed `path`, newest first (at most
    /// [`LISTED`]), and whether more did or the walk stopped early.
    fn changing_commits(&self, path: &str, since: gix::ObjectId) -> (Vec<(String, String)>, bool) {
        let Ok(walk) = self.repo.rev_walk([self.head]).first_parent_only().all() else {
            return (Vec::new(), true);
        };
        let mut listed = Vec::new();
        let mut more = false;
        let mut visited = 0;
        let mut reached = false;
        for info in walk {
            let Ok(info) = info else { break };
            if info.id == since {
                reached = true;
                break;
            }
            visited += 1;
            if visited > WALK_BUDGET {
                break;
            }
            let Some(tree) = self.tree_of(info.id) else {
                continue;
            };
            let parent_tree = info
                .parent_ids
                .first()
                .copied()
                .and_then(|p| self.tree_of(p));
            let now = self.blob_at(tree, path);
            let then = parent_tree.and_then(|t| self.blob_at(t, path));
            if now != then {
                if listed.len() == LISTED {
                    more = true;
                    continue;
                }
                let at = self
                    .repo
                    .find_commit(info.id)
                    .ok()
                    .and_then(|c| c.time().ok())
                    .and_then(|t| chrono::DateTime::from_timestamp(t.seconds, 0))
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                    .unwrap_or_default();
                listed.push((info.id.to_string(), at));
            }
        }
        (listed, more || !reached)
    }
}
