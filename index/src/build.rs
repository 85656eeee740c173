//! `theurian index build`: chunk every servable revision of the active state into a fresh
//! tantivy directory (with embeddings beside it), then publish it by swapping
//! `active-index.json`. A build is written under a `.building` name and renamed only when
//! complete, so readers never open half an index, and a crash leaves the previous build serving.
//! [`write_build`] is shared with the review similarity index; [`gc`] is `theurian index gc`.

use super::chunk::chunk;
use super::embed::{Embedder, DIMENSION, MODEL};
use super::fields::{register, schema};
use super::pointer::{self, BuildInfo, IndexPointer, FORMAT_VERSION};
use crate::datadir::DataDir;
use crate::fsutil::write_atomic;
use crate::hash::sha256_hex;
use crate::model::read;
use crate::model::text::served_text;
use crate::model::{APPROVED_ONLY, SURFACEABLE};
use crate::statedir::lock::{acquire, WRITE_LOCK_WAIT};
use crate::statedir::{pointer as state_pointer, provenance};
use crate::time;
use crate::CoreError;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::path::Path;
use tantivy::{doc, Index, IndexWriter};

/// What to build.
#[derive(Clone, Copy)]
pub struct BuildOptions<'a> {
    /// Told as items are indexed: the CLI's progress bar.
    pub progress: &'a dyn crate::progress::Progress,
    /// Index drafts and proposals too.
    pub include_unapproved: bool,
    /// Skip the dense embeddings.
    pub no_embeddings: bool,
    /// Build the extractive summary forest too.
    pub raptor: bool,
    /// Vectors by meaning for every passage, when a model is configured and installed.
    pub semantic: Option<&'a dyn super::semantic::PassageVectors>,
}

impl Default for BuildOptions<'_> {
    fn default() -> Self {
        BuildOptions {
            progress: &crate::progress::SILENT,
            include_unapproved: false,
            no_embeddings: false,
            raptor: false,
            semantic: None,
        }
    }
}

fn index_error(e: impl std::fmt::Display) -> CoreError {
    CoreError::state(format!("The index could not be written: {e}."), "Check free disk space and permissions on .theurian/state/, then run `theurian index build` again.")
}

/// The command named in refusals about the state directory.
const BUILD: &str = "theurian index build";

/// Every passage's embedding, as little-endian bytes, from each item's passage texts in the
/// order the indexing loop sends them (which is `seq` order), written to `path` once the loop
/// is done. One thread embeds, and another collects the run postings ([`collect_runs`]), while
/// the loop feeds the word index's single indexing thread; each writes its file while the word
/// index is still being written.
fn embed_passages(
    items: std::sync::mpsc::Receiver<Vec<String>>,
    path: &Path,
) -> Result<(), CoreError> {
    let mut embedder = Embedder::default();
    let mut out = Vec::new();
    for text in items.iter().flatten() {
        for x in embedder.embed(&text) {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    write_atomic(path, &out, 0o644)
}

/// How many items' passages may wait for the embedding thread, or the run collector, before
/// the indexing loop waits.
const FEED_QUEUE: usize = 64;

/// Every passage's runs and their postings ([`super::runs`]), from each item's searched texts
/// in `seq` order, written as `runs.bin` into `dir` once the loop is done.
fn collect_runs(
    items: std::sync::mpsc::Receiver<Vec<String>>,
    dir: &Path,
) -> Result<(), CoreError> {
    let mut collector = super::runs::Collector::default();
    for text in items.iter().flatten() {
        collector.add(&text).map_err(index_error)?;
    }
    collector.write(dir).map_err(index_error)
}

/// The indexing thread's memory: past it tantivy writes a segment and starts another, to be
/// merged at the end. Large enough that a corpus of tens of megabytes is one segment.
const INDEXING_MEMORY: usize = 300_000_000;

/// What feeding the index left for the rest of the build.
struct Fed {
    /// The passage table, in `seq` order.
    table: super::passages::TableWriter,
    /// The summary forest's input, when `--raptor` asked for it.
    documents: Vec<super::raptor::DocumentInput>,
    /// How many passages were indexed (the next `seq`).
    passages: u64,
    /// Every passage's text in `seq` order, when vectors by meaning are made.
    texts: Vec<String>,
}

/// Chunks every item and hands each passage to the index writer and the passage table, and
/// each item's passage texts to the embedding thread and its searched texts to the run
/// collector, all in `seq` order.
fn feed(
    writer: &mut IndexWriter,
    f: super::fields::Fields,
    to_runs: &std::sync::mpsc::SyncSender<Vec<String>>,
    items: &[read::ItemView],
    project_id: &str,
    options: &BuildOptions<'_>,
    to_embedder: Option<&std::sync::mpsc::SyncSender<Vec<String>>>,
) -> Result<Fed, CoreError> {
    let mut fed = Fed {
        table: super::passages::TableWriter::default(),
        documents: Vec::new(),
        passages: 0,
        texts: Vec::new(),
    };
    options
        .progress
        .stage("indexing items", Some(items.len() as u64));
    for item in items {
        options.progress.step();
        let served = served_text(&item.title, &item.body);
        let sha = sha256_hex(served.as_bytes());
        let chunks = chunk(&served);
        if options.semantic.is_some() {
            fed.texts.extend(chunks.iter().map(|c| c.text.clone()));
        }
        if let Some(send) = to_embedder {
            send.send(chunks.iter().map(|c| c.text.clone()).collect())
                .map_err(|_| index_error("a passage could not be embedded"))?;
        }
        if options.raptor {
            fed.documents.push(super::raptor::DocumentInput {
                project: project_id.to_owned(),
                sensitivity: item.sensitivity.clone(),
                namespace: item.namespace.clone(),
                status: item.status.clone(),
                kind: item.kind.clone(),
                item_id: item.item_id.clone(),
                passages: chunks
                    .iter()
                    .map(|c| {
                        (
                            format!("{}#{}", item.revision_id, c.ordinal),
                            c.text.clone(),
                        )
                    })
                    .collect(),
            });
        }
        let mut searched_texts = Vec::with_capacity(chunks.len());
        for c in chunks {
            let chunk_id = format!("{}#{}", item.revision_id, c.ordinal);
            fed.table.push(super::passages::NewPassage {
                chunk_id: &chunk_id,
                item_id: &item.item_id,
                revision_id: &item.revision_id,
                served_sha: &sha,
                status: &item.status,
                sensitivity: &item.sensitivity,
                heading: &c.heading,
                text: &c.text,
            });
            // Both the word and the substring retrievers read the heading with the text.
            let searched = format!("{}\n{}", c.heading, c.text);
            searched_texts.push(searched.clone());
            writer
                .add_document(doc!(
                    f.chunk_id => chunk_id,
                    f.item_id => item.item_id.as_str(),
                    f.revision_id => item.revision_id.as_str(),
                    f.served_sha => sha.as_str(),
                    f.status => item.status.as_str(),
                    f.sensitivity => item.sensitivity.as_str(),
                    f.kind => item.kind.as_str(),
                    f.words => searched,
                    f.seq => fed.passages,
                ))
                .map_err(index_error)?;
            fed.passages += 1;
        }
        to_runs
            .send(searched_texts)
            .map_err(|_| index_error("the runs of a passage could not be collected"))?;
    }
    Ok(fed)
}

/// Merges the committed word index's segments into one, in `seq` order, when its indexing
/// thread's memory budget filled and it wrote more than one. One segment: ranking keeps one cut
/// for the whole build instead of starting over per segment, and a build is written once and
/// only read after. In `seq` order: every passage's document number is then its `seq`, the
/// row the run postings name it by, which the substring retriever relies on (and opening
/// checks).
fn one_segment(index: &Index, writer: &mut IndexWriter) -> Result<(), CoreError> {
    let searcher = index.reader().map_err(index_error)?.searcher();
    let mut by_first_seq = Vec::new();
    for segment in searcher.segment_readers() {
        let seq = segment.fast_fields().u64("seq").map_err(index_error)?;
        by_first_seq.push((seq.first(0), segment.segment_id()));
    }
    if by_first_seq.len() > 1 {
        by_first_seq.sort();
        let ids: Vec<_> = by_first_seq.into_iter().map(|(_, id)| id).collect();
        writer.merge(&ids).wait().map_err(index_error)?;
    }
    Ok(())
}

/// What a build records about itself beyond what it counts.
pub struct Stamp<'a> {
    pub build_id: &'a str,
    /// The state the build was made from (for the review index: the stores' build times).
    pub state_hash: &'a str,
    pub indexes_unapproved: bool,
    pub sensitivities: &'a [&'a str],
}

/// Writes a complete build of `items` into `building`: the word index (one segment), the
/// passage table, the run postings (`runs.bin`), the embeddings unless
/// `options.no_embeddings`, `build.json`, and the summary forest when asked. Returns the
/// build's record and its forest node count. Publishing (the rename and the pointer) is the
/// caller's.
pub fn write_build(
    building: &Path,
    items: &[read::ItemView],
    project_id: &str,
    options: &BuildOptions<'_>,
    stamp: &Stamp<'_>,
) -> Result<(BuildInfo, usize), CoreError> {
    std::fs::create_dir_all(building).map_err(|e| CoreError::io("create", building, &e))?;
    let (schema, f) = schema();
    let index = Index::create_in_dir(building, schema).map_err(index_error)?;
    register(&index);
    let mut writer: IndexWriter = index
        .writer_with_num_threads(1, INDEXING_MEMORY)
        .map_err(index_error)?;
    // The embeddings and the run postings are each computed on another thread while this one
    // feeds the word index, which has a single indexing thread of its own (so it is one
    // segment in `seq` order with no merge, and its document numbers are the passages' `seq`).
    std::thread::scope(|scope| {
        let (to_embedder, embedding) = if options.no_embeddings {
            (None, None)
        } else {
            let (send, receive) = std::sync::mpsc::sync_channel(FEED_QUEUE);
            let path = building.join(pointer::EMBEDDINGS_FILE);
            (
                Some(send),
                Some(scope.spawn(move || embed_passages(receive, &path))),
            )
        };
        let embedder_gone = || index_error("a passage could not be embedded");
        let (to_runs, from_feed) = std::sync::mpsc::sync_channel(FEED_QUEUE);
        let runs_written = scope.spawn(move || collect_runs(from_feed, building));
        let fed = feed(
            &mut writer,
            f,
            &to_runs,
            items,
            project_id,
            options,
            to_embedder.as_ref(),
        )?;
        let (table, documents, seq, texts) = (fed.table, fed.documents, fed.passages, fed.texts);
        drop(to_embedder);
        drop(to_runs);
        // The passage table is complete: it is written while the index commits.
        let table_path = building.join(super::passages::PASSAGES_FILE);
        let table_written = scope.spawn(move || table.write(building));
        writer.commit().map_err(index_error)?;
        one_segment(&index, &mut writer)?;
        writer.wait_merging_threads().map_err(index_error)?;
        runs_written
            .join()
            .map_err(|_| index_error("the run postings could not be written"))??;
        if let Some(worker) = embedding {
            worker.join().map_err(|_| embedder_gone())??;
        }
        let semantic = match options.semantic {
            Some(model) => Some(semantic_vectors(building, model, &texts, options.progress)?),
            None => None,
        };
        let info = BuildInfo {
            format_version: FORMAT_VERSION,
            index_build_id: stamp.build_id.to_owned(),
            state_hash: stamp.state_hash.to_owned(),
            project_id: project_id.to_owned(),
            embedding_model: if options.no_embeddings {
                String::new()
            } else {
                MODEL.to_owned()
            },
            embedding_dimension: if options.no_embeddings { 0 } else { DIMENSION },
            built_at: time::now_micros(),
            items: items.len(),
            chunks: seq as usize,
            indexes_unapproved: stamp.indexes_unapproved,
            indexed_sensitivities: stamp.sensitivities.iter().map(|s| s.to_string()).collect(),
            semantic,
        };
        table_written
            .join()
            .map_err(|_| index_error("the passage table could not be written"))?
            .map_err(|e| CoreError::io("write", &table_path, &e))?;
        info.write(building)?;
        if options.raptor {
            options.progress.stage("building summaries", None);
        }
        let nodes = if options.raptor {
            let forest = super::raptor::build_forest(&documents);
            super::raptor::write(building, &forest).map_err(index_error)?;
            forest.nodes.len()
        } else {
            0
        };
        Ok((info, nodes))
    })
}

/// Every passage's vector by meaning, written beside the build; what the build records of it.
fn semantic_vectors(
    building: &Path,
    model: &dyn super::semantic::PassageVectors,
    texts: &[String],
    progress: &dyn crate::progress::Progress,
) -> Result<pointer::SemanticInfo, CoreError> {
    let started = std::time::Instant::now();
    let (rows, made) = model.vectors(texts, progress)?;
    if rows.len() != texts.len() {
        return Err(index_error(
            "the embedding model did not give one vector per passage",
        ));
    }
    let dimension = rows.first().map_or(0, |r| r.values.len());
    if !rows.is_empty() {
        super::semantic::write(building, dimension, &rows)?;
    }
    Ok(pointer::SemanticInfo {
        model: model.identity().to_owned(),
        dimension,
        embedded: made.embedded,
        cached: made.cached,
        millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// Builds and publishes an index for `project_id` at `root` (canonical).
pub async fn build(
    data: &DataDir,
    root: &Path,
    project_id: &str,
    visible: &[&str],
    options: BuildOptions<'_>,
) -> Result<Value, CoreError> {
    let started = std::time::Instant::now();
    crate::statedir::writable::inside_project(root, BUILD)?;
    let state_dir = root.join(".theurian/state");
    let active = state_pointer::read(&state_dir)?.ok_or_else(|| {
        CoreError::state(
            "This project has no built knowledge state to index.",
            "Run `theurian migrate apply` first, then `theurian index build`.",
        )
    })?;
    if !provenance::is_recorded(data, root, "state", &active.state_hash) {
        return Err(CoreError::state(
            "The active knowledge state was not built by this Theurian installation, so it is not indexed.",
            "Delete .theurian/state/ and run `theurian migrate apply`, then `theurian index build`.",
        ));
    }
    let database = state_dir.join(&active.database_filename);
    let pool = crate::model::pool::ReadPools::default().get(&database);
    let statuses = if options.include_unapproved {
        SURFACEABLE
    } else {
        APPROVED_ONLY
    };
    let read_err = |e: read::ReadError| {
        CoreError::state(
            format!("The state database cannot be read: {e:?}."),
            "Delete .theurian/state/ and run `theurian migrate apply` again.",
        )
    };
    let mut items = read::servable(&pool, project_id, statuses, visible)
        .await
        .map_err(read_err)?;
    // Secrets: under `block` an item whose served text appears to carry one stays out of the
    // index (its text is never published); under `warn` it is indexed and reported.
    let policy = crate::secrets::policy(root)?;
    let mut findings: Vec<Value> = Vec::new();
    let mut withheld: Vec<String> = Vec::new();
    if policy != crate::secrets::Policy::Off {
        // Scanned on every core; kept or withheld in order after.
        let scans: Vec<_> = items
            .par_iter()
            .map(|item| crate::secrets::scan(&served_text(&item.title, &item.body), 20))
            .collect();
        let mut scans = scans.into_iter();
        items.retain(|item| {
            let found = scans.next().unwrap_or_default();
            for f in &found {
                findings.push(json!({"itemId": item.item_id, "revisionId": item.revision_id, "family": f.family, "line": f.line, "column": f.column}));
            }
            let keep = found.is_empty() || policy == crate::secrets::Policy::Warn;
            if !keep {
                withheld.push(item.item_id.clone());
            }
            keep
        });
    }
    // Only an empty selection needs to know whether anything at all is held.
    let held = if items.is_empty() {
        read::servable(
            &pool,
            project_id,
            SURFACEABLE,
            theurian_protocol::migration::Sensitivity::VALUES,
        )
        .await
        .map_err(read_err)?
        .len()
    } else {
        0
    };
    pool.close().await;
    if held > 0 {
        return Err(CoreError::state(
            format!("The state holds {held} item(s) but none may be indexed under the current flags and serving profile; the empty build was not published."),
            "Check the serving profile ceiling and --include-unapproved; the previous index (if any) keeps serving.",
        ));
    }
    let _lock = acquire(&root.join(".theurian/runtime"), WRITE_LOCK_WAIT)?;
    let build_id = ulid::Ulid::generate().to_string();
    let final_dir = super::pointer::build_dir(&state_dir, &build_id);
    let building = super::pointer::building_dir(&state_dir, &build_id);
    crate::statedir::writable::preflight(&state_dir, BUILD)?;
    // Everything up to the rename writes into the building directory only; a failure there
    // (a full disk, most likely) removes it and says why, and the live index keeps serving.
    let stamp = Stamp {
        build_id: &build_id,
        state_hash: &active.state_hash,
        indexes_unapproved: options.include_unapproved,
        sensitivities: visible,
    };
    let written = write_build(&building, &items, project_id, &options, &stamp);
    let (info, nodes) = written.map_err(|e| {
        // Named while the partial build still takes its space: once it is removed, a full
        // disk has room again and the cause could no longer be seen.
        let named = crate::statedir::writable::explain(&state_dir, BUILD, e);
        let _ = std::fs::remove_dir_all(&building);
        named
    })?;
    std::fs::rename(&building, &final_dir).map_err(|e| {
        crate::statedir::writable::explain(
            &state_dir,
            BUILD,
            CoreError::io("publish", &final_dir, &e),
        )
    })?;
    let scan_record =
        json!({"indexBuildId": build_id, "policy": policy.to_string(), "findings": findings.len()});
    write_atomic(
        &state_dir.join("index-secret-scan.json"),
        format!(
            "{}\n",
            serde_json::to_string_pretty(&scan_record).unwrap_or_default()
        )
        .as_bytes(),
        0o644,
    )?;
    provenance::record(data, root, "index", &build_id)?;
    IndexPointer {
        index_build_id: build_id.clone(),
        state_hash: active.state_hash.clone(),
        project_id: project_id.to_owned(),
        indexes_unapproved: options.include_unapproved,
        indexed_sensitivities: info.indexed_sensitivities.clone(),
        purge_failed: false,
    }
    .write(&state_dir)?;
    if !withheld.is_empty() {
        return Err(CoreError {
            message: format!(
                "Index build {build_id} was published, but {} item(s) were left out because their text appears to carry a secret: {}.",
                withheld.len(),
                withheld.join(", ")
            ),
            remedy: "Remove the secret from the body (and rotate it), land the change as a new migration, apply and rebuild. `security.secretScan: warn` in .theurian/config.yaml indexes them anyway and only reports.".into(),
            exit: crate::Exit::SecretWithheld,
        });
    }
    Ok(json!({
        "secretScan": {"policy": policy.to_string(), "findings": findings, "withheld": withheld},
        "indexBuildId": build_id,
        "stateHash": active.state_hash,
        "projectId": project_id,
        "items": info.items,
        "chunks": info.chunks,
        "raptorNodes": nodes,
        "embeddingModel": info.embedding_model,
        "semantic": info.semantic,
        "indexesUnapproved": options.include_unapproved,
        "indexedSensitivities": info.indexed_sensitivities,
        "seconds": (started.elapsed().as_secs_f64() * 1e3).round() / 1e3,
    }))
}

/// `theurian index gc`: removes index builds under `.theurian/state/` that are not the published
/// one (superseded builds and abandoned `.building` directories). Never the published build,
/// never anything that is not an index build of this implementation.
pub fn gc(root: &Path, dry_run: bool) -> Result<Value, CoreError> {
    crate::statedir::writable::inside_project(root, "theurian index gc")?;
    let state_dir = root.join(".theurian/state");
    let published: Option<String> =
        std::fs::read_to_string(state_dir.join(super::pointer::POINTER_FILE))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| {
                v.get("indexBuildId")
                    .and_then(|i| i.as_str())
                    .map(str::to_owned)
            });
    let mut reclaimed: Vec<(String, std::path::PathBuf)> = Vec::new();
    let mut stranded = Vec::new();
    for entry in std::fs::read_dir(&state_dir)
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(super::pointer::BUILD_DIR_PREFIX) else {
            continue;
        };
        if rest.ends_with(".building") {
            // Perhaps a build running now: reported, never removed.
            stranded.push(name);
            continue;
        }
        // Our builds are directories; the reference's are one SQLite file with sidecars.
        let id = rest.split_once(".sqlite").map_or(rest, |(id, _)| id);
        let older = published.as_deref().is_some_and(|p| id < p);
        if id.bytes().all(|b| b.is_ascii_alphanumeric()) && older {
            reclaimed.push((name, entry.path()));
        }
    }
    reclaimed.sort();
    stranded.sort();
    let mut bytes = 0u64;
    for (_, path) in &reclaimed {
        bytes += crate::fsutil::size_of(path);
        if !dry_run {
            let removal = if path.is_dir() {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
            removal.map_err(|e| CoreError::io("remove", path, &e))?;
        }
    }
    let names: Vec<String> = reclaimed.into_iter().map(|(n, _)| n).collect();
    Ok(json!({
        "publishedIndexBuildId": published,
        "reclaimed": names,
        "bytesReclaimed": bytes,
        "strandedBuilding": stranded,
        "dryRun": dry_run,
    }))
}
