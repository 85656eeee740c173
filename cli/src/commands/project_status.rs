//! `theurian project status`: what Theurian knows about the repository you stand in —
//! registration, the state its migrations name and the one built, index freshness — read
//! without changing anything. A fault in one part is reported beside the rest (`reason`,
//! `remedy`), never as a failed command, so a session hook can always read the answer.

use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::index::choose::choose;
use theurian_core::migrate::MigrationSet;
use theurian_core::registry::{derive_id, Registry};
use theurian_core::store::pointer;
use theurian_core::{gitcheck, gitdir, serving_profile, CoreError};

pub fn run(data: &DataDir) -> Result<Value, CoreError> {
    let cwd = super::cwd()?;
    if let Err(e) = gitdir::discover(&cwd) {
        return Ok(
            json!({"registered": false, "reason": e.message, "remedy": e.remedy, "unreadable": []}),
        );
    }
    // Refuses (exit 4) when `.theurian` leads outside the repository.
    let root = super::migrate::project_repo()?.root;
    let mut out = serde_json::Map::new();
    let (registered, registered_id, unreadable) = match Registry::load(data) {
        Ok(registry) => {
            let unreadable = registry.unreadable();
            let id = registry
                .entries()
                .into_iter()
                .find(|(_, e)| e.root_path == root)
                .map(|(id, _)| id);
            if !unreadable.is_empty() {
                out.insert("reason".into(), json!(format!("The registry holds entries that cannot be read ({}), so whether this repository is registered is unknown.", unreadable.join(", "))));
                out.insert("remedy".into(), json!("Remove the unreadable entries with `theurian project unregister <id>`, or fix projects.json."));
            }
            let registered = if unreadable.is_empty() {
                json!(id.is_some())
            } else {
                Value::Null
            };
            (registered, id, unreadable)
        }
        Err(e) => {
            out.insert("registryReason".into(), json!(e.message));
            out.insert("registryRemedy".into(), json!(e.remedy));
            (Value::Null, None, Vec::new())
        }
    };
    out.insert("registered".into(), registered);
    out.insert("unreadable".into(), json!(unreadable));
    let set = match MigrationSet::load(&root) {
        Ok(set) => set,
        Err(e) => {
            out.insert("reason".into(), json!(e.message));
            out.insert("remedy".into(), json!(e.remedy));
            return Ok(Value::Object(out));
        }
    };
    let project_id = registered_id.or_else(|| derive_id(&root));
    let state_dir = root.join(".theurian/state");
    let (active, corrupt) = match pointer::read(&state_dir) {
        Ok(active) => (active.map(|a| a.state_hash), false),
        Err(e) => {
            out.insert("reason".into(), json!(e.message));
            out.insert("remedy".into(), json!(e.remedy));
            (None, true)
        }
    };
    let visible = serving_profile::load(data)
        .map(|c| c.visible_names())
        .unwrap_or_default();
    let index_stale = match &project_id {
        Some(id) => match choose(data, &root, id, &visible, false) {
            Ok((published, _)) => published.state_hash != set.state_hash,
            Err(_) => true,
        },
        None => true,
    };
    out.insert("projectId".into(), json!(project_id));
    out.insert("root".into(), json!(root.to_string_lossy()));
    out.insert("initialized".into(), json!(root.join(".theurian").is_dir()));
    out.insert("stateHash".into(), json!(set.state_hash));
    out.insert("activeStateHash".into(), json!(active));
    out.insert(
        "stateBuilt".into(),
        json!(state_dir
            .join(pointer::database_filename(&set.state_hash))
            .is_file()),
    );
    out.insert("indexStale".into(), json!(index_stale));
    out.insert("statePointerCorrupt".into(), json!(corrupt));
    out.insert("migrationCount".into(), json!(set.ordered.len()));
    out.insert("headCommit".into(), json!(gitcheck::head_commit(&root)));
    out.insert(
        "schemaVersion".into(),
        json!(theurian_core::CANONICAL_SCHEMA_VERSION),
    );
    out.insert(
        "engineVersion".into(),
        json!(theurian_core::migrate::hash::ENGINE_VERSION),
    );
    Ok(Value::Object(out))
}
