//! What every project-scoped tool does first: resolve the project to the state database that
//! answers (honouring a `snapshotId` pin), and turn every way that fails into a refusal with its
//! code and cure. Messages quote caller values only within their bound.

use super::OrInternal;
use crate::state::AppState;
use sqlx::sqlite::SqlitePool;
use theurian_core::knowledge::resolve::{resolve, Fault, Resolved};
use theurian_core::knowledge::search::Source;
use theurian_core::model::memo::StateMemo;
use theurian_core::model::read::{self, ReadError};
use theurian_core::model::INTEGRITY_REMEDY;
use theurian_protocol::mcp::{
    AgentId, Integrity, ProjectId, RefusalMetaCode, StateHash, TaskId, ToolContext,
};
use theurian_protocol::tools::ToolId;
use theurian_protocol::{bounded, refusal_quote, Refusal};

const REBUILD: &str = "Delete .theurian/state/ and run `theurian migrate apply`; the state is derived, so nothing authored is lost.";

/// One call's project: the answering state and a pool on it, with what else the call's shared
/// context carried. The drafting tools record the agent labels; the others leave them unread.
pub struct Opened {
    pub resolved: Resolved,
    pub pool: SqlitePool,
    /// The project the call named, as answers echo it.
    pub project_id: ProjectId,
    pub agent_id: Option<AgentId>,
    pub task_id: Option<TaskId>,
}

/// The refusal for each way resolving fails. None repeats the project id sent, and none
/// lists what else is registered: `project.list` answers that, to a caller who asks.
fn refusal_for(fault: Fault) -> Refusal {
    use RefusalMetaCode as C;
    match fault {
        Fault::Registry(msg) => Refusal::new(C::Internal, msg),
        Fault::NotRegistered { unreadable, .. } => {
            let broken = if unreadable.is_empty() {
                ""
            } else {
                " Some registry entries cannot be read and serve nothing until removed: project.list names them."
            };
            Refusal::new(C::ProjectNotRegistered, format!("At projectId: no project of this id is registered with this daemon.{broken} project.list names the registered projects; run `theurian project register` inside a repository to add one."))
        }
        Fault::UnreadableEntry => Refusal::new(
            C::ProjectNotRegistered,
            "At projectId: the registry entry for this project cannot be read, so it serves nothing. Remove it with `theurian project unregister <id>` and register the project again from its repository.",
        ),
        Fault::PathEscape => Refusal::new(C::StateUnavailable, "The project's .theurian directory resolves outside its root, so nothing was read. Make .theurian a real directory inside the repository."),
        Fault::NoState { root } => Refusal::new(C::StateUnavailable, format!("The project has no built knowledge state yet. Run `theurian migrate apply` in {}.", refusal_quote(&root))),
        Fault::PointerCorrupt(msg) => Refusal::new(C::StateUnavailable, format!("The project's state cannot be read: {msg} Delete .theurian/state/active.json and run `theurian migrate apply`; the pointer is derived, so nothing is lost.")),
        Fault::DatabaseOutside(name) => Refusal::new(C::StateUnavailable, format!("The project's active pointer names a state database outside .theurian/state/ ({}). {REBUILD}", refusal_quote(&name))),
        Fault::DatabaseMissing(name) => Refusal::new(C::StateUnavailable, format!("The project's active pointer names a state database that is missing ({}). Run `theurian migrate apply` to rebuild it.", refusal_quote(&name))),
        Fault::NotBuiltHere => Refusal::new(C::StateUnavailable, format!("The project's state database was not built by this Theurian installation (it may have arrived with the repository), so it is not served. {REBUILD}")),
        Fault::SnapshotNotFound => Refusal::new(
            C::SnapshotNotFound,
            "At snapshotId: this machine holds no state with that hash for the project. Omit snapshotId to read the current state, or pin the stateHash that knowledge.status reports now.",
        ),
    }
}

/// The refusal for a fault while reading the answering database.
pub fn read_refusal(e: ReadError) -> Refusal {
    // A reader told to rebuild state should be told so because of the state, never because of
    // the daemon's own pooling; and every such failure leaves a line in the daemon's log.
    tracing::warn!(fault = ?e, "a read of a state database failed");
    let what = match e {
        ReadError::Database(m) => format!("cannot be read ({})", bounded(&m)),
        ReadError::Inconsistent(m) => format!("contradicts itself ({})", bounded(&m)),
        ReadError::Busy(_) => {
            let mut busy = Refusal::new(
                RefusalMetaCode::CapacityExceeded,
                "Every read connection to the project's state was busy for too long. Ask again shortly; the state itself is fine.",
            )
            .retryable();
            busy.meta.retry_after_ms = std::num::NonZeroU64::new(250);
            return busy;
        }
    };
    Refusal::new(
        RefusalMetaCode::StateUnavailable,
        format!("The project's state database {what}. {REBUILD}"),
    )
}

/// The seam's opener ([`theurian_protocol::tools::ToolHandlers::open_project`]): the project a
/// call's context names, opened at the state it pins, keeping the context's labels.
pub async fn open_pinned(state: &AppState, context: ToolContext) -> Result<Opened, Refusal> {
    let ToolContext {
        project_id,
        snapshot_id,
        agent_id,
        task_id,
    } = context;
    let pinned = snapshot_id.as_ref().map(|s| s.as_str());
    let opened = open(state, project_id, pinned).await?;
    Ok(Opened {
        agent_id,
        task_id,
        ..opened
    })
}

/// Resolves `project_id` (pinned to `snapshot` when given) and opens its database, with no
/// agent labels.
pub async fn open(
    state: &AppState,
    project_id: ProjectId,
    snapshot: Option<&str>,
) -> Result<Opened, Refusal> {
    let resolved = resolve(&state.data, project_id.as_str(), snapshot).map_err(refusal_for)?;
    let pool = state.pools.get(&resolved.database);
    if resolved.migration_count.is_none() {
        // A pinned state: the file name carries 48 bits of the hash; the database records all 256.
        let recorded = read::recorded_state_hash(&pool)
            .await
            .map_err(read_refusal)?;
        if recorded.as_deref() != Some(resolved.state_hash.as_str()) {
            return Err(refusal_for(Fault::SnapshotNotFound));
        }
    }
    Ok(Opened {
        resolved,
        pool,
        project_id,
        agent_id: None,
        task_id: None,
    })
}

impl Opened {
    /// The project id the call named.
    pub fn project(&self) -> &str {
        self.project_id.as_str()
    }

    /// The answering state's hash as answers carry it; one that fails its wire type is the
    /// daemon's fault, refused as internal to `tool`.
    pub fn state_hash(&self, tool: ToolId) -> Result<StateHash, Refusal> {
        self.resolved
            .state_hash
            .as_str()
            .try_into()
            .or_internal(tool)
    }

    /// What a search (and getContext's candidates) reads for `project` in this state, with the
    /// daemon's shared caches and the sensitivities `visible` the caller may see.
    pub fn source<'a>(
        &'a self,
        state: &'a AppState,
        project: &'a str,
        visible: &'a [&'a str],
    ) -> Source<'a> {
        Source {
            data: &state.data,
            root: &self.resolved.root,
            project,
            pool: &self.pool,
            database: &self.resolved.database,
            state_hash: &self.resolved.state_hash,
            indexes: &state.indexes,
            memo: &state.memo,
            visible,
            semantic: Some(&state.semantic),
        }
    }

    /// The present-only integrity key.
    pub async fn integrity(&self, memo: &StateMemo) -> Result<Option<Integrity>, Refusal> {
        let damaged = memo
            .damaged(
                &self.pool,
                &self.resolved.database,
                &self.resolved.project_id,
                self.resolved.migration_count,
            )
            .await
            .map_err(read_refusal)?;
        if !damaged {
            return Ok(None);
        }
        let project = &self.resolved.project_id;
        let held = read::holds_project(&self.pool, project)
            .await
            .map_err(read_refusal)?;
        if !held {
            return Err(Refusal::new(
                RefusalMetaCode::StateUnavailable,
                "The project's state was built before it was registered under its present id, so it holds nothing under this one. Run `theurian migrate apply` (then `theurian index build`) in its repository to rebuild it under the registered id; nothing authored is lost.",
            ));
        }
        let remedy = INTEGRITY_REMEDY
            .try_into()
            .map_err(|e| Refusal::internal("integrity", &e))?;
        Ok(Some(Integrity {
            damage_detected: Default::default(),
            remedy,
        }))
    }
}
