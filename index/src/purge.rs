//! The withdrawal purge at the end of `migrate apply`: when an apply withdraws knowledge (a
//! deprecation, a raised sensitivity, a new revision), the passages the published build may no
//! longer hold are deleted into a derived build that replaces it. Answers were already safe
//! (the search gate re-checks every passage against the canonical state); the purge also takes
//! the withdrawn text and its term statistics out of the index itself.

use super::open::OpenIndex;
use super::passages::{NewPassage, PassageTable, TableWriter};
use super::pointer::{BuildInfo, IndexPointer};
use crate::datadir::DataDir;
use crate::statedir::provenance;
use serde_json::{json, Value};
use sqlx::Row;
use std::collections::BTreeSet;
use std::path::Path;
use tantivy::{Index, IndexWriter, Term};

fn report(reason: &str) -> Value {
    json!({"published": false, "indexBuildId": null, "removed": 0, "reason": reason, "failed": false, "remedy": null})
}

/// Copies the build's files (the run postings in `runs.bin` unchanged: a purge deletes rows in
/// the word index only, whose live rows both retrievers read), but not the summary forest: its
/// summaries are sentences lifted from passages, withdrawn ones included, and its node index
/// is a subdirectory left behind. The derived build serves without the summary retriever
/// until the next `index build --raptor`.
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() && entry.file_name() != super::raptor::FOREST_FILE {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Purges what `affected` items' final state no longer allows the published build to hold.
pub async fn purge(
    data: &DataDir,
    root: &Path,
    project_id: &str,
    database: &Path,
    affected: &[String],
) -> Value {
    if affected.is_empty() {
        return report("no-withdrawal");
    }
    let state_dir = root.join(".theurian/state");
    let Ok(text) = std::fs::read_to_string(state_dir.join(super::pointer::POINTER_FILE)) else {
        return report("no-published-index");
    };
    let Ok(pointer) = serde_json::from_str::<IndexPointer>(&text) else {
        return report("index-unusable");
    };
    let levels = theurian_protocol::migration::Sensitivity::VALUES;
    if pointer
        .indexed_sensitivities
        .iter()
        .any(|s| !levels.contains(&s.as_str()))
    {
        return report("index-unusable");
    }
    // Final state of each affected item, and every revision it has.
    let pool = crate::model::pool::ReadPools::default().get(database);
    let ids = serde_json::to_string(affected).unwrap_or_else(|_| "[]".into());
    let items = sqlx::query("SELECT item_id, status, sensitivity, current_revision_id FROM knowledge_items WHERE project_id = ? AND item_id IN (SELECT value FROM json_each(?))")
        .bind(project_id)
        .bind(&ids)
        .fetch_all(&pool)
        .await;
    let revisions = sqlx::query("SELECT item_id, revision_id FROM knowledge_revisions WHERE project_id = ? AND item_id IN (SELECT value FROM json_each(?))")
        .bind(project_id)
        .bind(&ids)
        .fetch_all(&pool)
        .await;
    pool.close().await;
    let (Ok(items), Ok(revisions)) = (items, revisions) else {
        return report("index-unusable");
    };
    let mut doomed: BTreeSet<String> = BTreeSet::new();
    for row in &items {
        let (item, status, sensitivity, current): (String, String, String, Option<String>) = (
            row.try_get("item_id").unwrap_or_default(),
            row.try_get("status").unwrap_or_default(),
            row.try_get("sensitivity").unwrap_or_default(),
            row.try_get("current_revision_id").ok().flatten(),
        );
        let surfaceable = status == "approved"
            || (pointer.indexes_unapproved && (status == "draft" || status == "proposed"));
        let may_hold = surfaceable && pointer.indexed_sensitivities.contains(&sensitivity);
        for r in &revisions {
            let (owner, revision): (String, String) = (
                r.try_get("item_id").unwrap_or_default(),
                r.try_get("revision_id").unwrap_or_default(),
            );
            if owner == item && (!may_hold || current.as_deref() != Some(revision.as_str())) {
                doomed.insert(revision);
            }
        }
    }
    if doomed.is_empty() {
        return report("no-withdrawal");
    }
    let dir = super::pointer::build_dir(&state_dir, &pointer.index_build_id);
    if !provenance::is_recorded(data, root, "index", &pointer.index_build_id) {
        return report("untrusted-source-index");
    }
    let Ok(opened) = OpenIndex::open(&dir) else {
        return report("index-unusable");
    };
    let held = opened
        .passages
        .iter()
        .filter(|p| p.live && doomed.contains(p.revision_id()))
        .count();
    if held == 0 {
        return report("nothing-to-purge");
    }
    match derive(
        data,
        root,
        &state_dir,
        &dir,
        &opened.passages,
        &pointer,
        &doomed,
    ) {
        Ok(new_id) => {
            json!({"published": true, "indexBuildId": new_id, "removed": held, "reason": null, "failed": false, "remedy": null})
        }
        Err(e) => {
            let failed = IndexPointer {
                purge_failed: true,
                ..pointer
            };
            let _ = failed.write(&state_dir);
            json!({"published": false, "indexBuildId": null, "removed": 0, "reason": format!("purge-failed: {e}"), "failed": true,
                   "remedy": "Run `theurian index build`; until then search answers from the unranked scan."})
        }
    }
}

/// Copies the build, deletes the doomed revisions' passages, and publishes the copy.
fn derive(
    data: &DataDir,
    root: &Path,
    state_dir: &Path,
    dir: &Path,
    source: &PassageTable,
    pointer: &IndexPointer,
    doomed: &BTreeSet<String>,
) -> Result<String, String> {
    let new_id = ulid::Ulid::generate().to_string();
    let building = super::pointer::building_dir(state_dir, &new_id);
    copy_dir(dir, &building).map_err(|e| e.to_string())?;
    let index = Index::open_in_dir(&building).map_err(|e| e.to_string())?;
    super::fields::register(&index);
    let (_, fields) = super::fields::schema();
    let mut writer: IndexWriter = index.writer(20_000_000).map_err(|e| e.to_string())?;
    // The run postings name the segment's document numbers; a merge would renumber them.
    writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    for revision in doomed {
        writer.delete_term(Term::from_field_text(fields.revision_id, revision));
    }
    writer.commit().map_err(|e| e.to_string())?;
    writer.wait_merging_threads().map_err(|e| e.to_string())?;
    // The copied passage table still holds the withdrawn text; it is rewritten with those
    // slots emptied (kept, so every other passage keeps its `seq`).
    let mut table = TableWriter::default();
    for p in source.iter() {
        if p.live && !doomed.contains(p.revision_id()) {
            table.push(NewPassage {
                chunk_id: p.chunk_id(),
                item_id: p.item_id(),
                revision_id: p.revision_id(),
                served_sha: p.served_sha(),
                status: p.status(),
                sensitivity: p.sensitivity(),
                heading: p.heading(),
                text: &p.text(),
            });
        } else {
            table.push_empty();
        }
    }
    table.write(&building).map_err(|e| e.to_string())?;
    let mut info = BuildInfo::read(&building).ok_or("build.json is unreadable")?;
    info.index_build_id = new_id.clone();
    info.write(&building).map_err(|e| e.message)?;
    let final_dir = super::pointer::build_dir(state_dir, &new_id);
    std::fs::rename(&building, &final_dir).map_err(|e| e.to_string())?;
    provenance::record(data, root, "index", &new_id).map_err(|e| e.message)?;
    IndexPointer {
        index_build_id: new_id.clone(),
        purge_failed: false,
        ..pointer.clone()
    }
    .write(state_dir)
    .map_err(|e| e.message)?;
    Ok(new_id)
}
