//! `theurian bench tools`: the latency of the designed tools (getContext, trace, listChanges,
//! checkFreshness, submitFeedback, project.status, system.indexStatus) over a real socket, on a
//! generated corpus of N items given relations, a second state (owners changed on a tenth of
//! the items), a Git history and a ranked index — the shapes each tool walks.

use super::bench_search::{percentiles, post, Serving};
use serde_json::{json, Value};
use std::io::BufReader;
use std::net::TcpStream;
use std::path::Path;
use std::time::Instant;
use theurian_core::datadir::DataDir;
use theurian_core::gitdir::Repo;
use theurian_core::index::build::{build, BuildOptions};
use theurian_core::migrate::MigrationSet;
use theurian_core::pipeline::{self, Project};
use theurian_core::registry::Registry;
use theurian_core::{corpus, CoreError};

fn fail(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The tools benchmark could not {what}: {e}."),
        "It needs the `git` command on PATH and a writable $TMPDIR.",
    )
}

fn git(root: &Path, args: &[&str]) -> Result<(), CoreError> {
    let out = std::process::Command::new("git")
        .current_dir(root)
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
        ])
        .args(args)
        .output()
        .map_err(|e| fail("run git", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(fail("run git", String::from_utf8_lossy(&out.stderr)))
    }
}

/// The generated items' ids, in item order, read back from the migrations.
fn item_ids(root: &Path) -> Result<Vec<String>, CoreError> {
    let set = MigrationSet::load(root)?;
    let mut ids = Vec::new();
    for m in &set.ordered {
        for op in &m.doc.operations {
            if let theurian_protocol::migration::Operation::UpsertRevision(u) = op {
                ids.push(u.item_id.to_string());
            }
        }
    }
    Ok(ids)
}

/// A migration relating every third item to the next and moving a tenth to another owner.
fn second_state(root: &Path, ids: &[String]) -> Result<(), CoreError> {
    let mut ops = String::new();
    for pair in ids.windows(2).step_by(3) {
        ops.push_str(&format!(
            "  - {{op: addRelation, sourceItemId: {}, relationType: depends_on, targetItemId: {}}}\n",
            pair[0], pair[1]
        ));
    }
    for id in ids.iter().step_by(10) {
        ops.push_str(&format!(
            "  - {{op: changeOwner, itemId: {id}, owner: platform}}\n"
        ));
    }
    let id = "7ZZZZZZZZZ0000000000000001";
    let path = root.join(format!(".theurian/migrations/{id}-relations.yaml"));
    std::fs::write(
        &path,
        format!("apiVersion: theurian.dev/v1\nid: {id}\ncreatedAt: 2026-09-01T00:00:00Z\nauthor: bench@example.com\noperations:\n{ops}"),
    )
    .map_err(|e| CoreError::io("write", &path, &e))
}

async fn apply(data: &DataDir, project: &Project, root: &Path) -> Result<String, CoreError> {
    let set = MigrationSet::load(root)?;
    pipeline::apply(data, project, &set, &theurian_core::progress::SILENT).await?;
    Ok(set.state_hash)
}

/// Refuses an answer that is a refusal or does not match the tool's output schema.
fn conforms(
    seat: &theurian_protocol::seat::Seat,
    tool: &str,
    answer: &str,
) -> Result<(), CoreError> {
    let value: Value =
        serde_json::from_str(answer).map_err(|e| fail(&format!("read {tool}'s answer"), e))?;
    let result = &value["result"];
    if result["isError"] != json!(false) {
        let text: String = result.to_string().chars().take(400).collect();
        return Err(fail(&format!("call {tool}"), text));
    }
    let id = theurian_protocol::tools::ToolId::from_wire_name(tool)
        .ok_or_else(|| fail("name a tool", tool))?;
    seat.check_response(id, &result["structuredContent"])
        .map_err(|e| fail(&format!("match {tool}'s answer to its schema"), e))
}

/// A generated project of `items` items registered as `bench`, committed to Git and applied
/// once, with the runtime it was applied on (kept entered while the value lives).
pub(super) struct Bench {
    /// Held so the scratch directory lives as long as the run.
    pub _work: tempfile::TempDir,
    pub root: std::path::PathBuf,
    pub data: DataDir,
    pub project: Project,
    /// The state hash of the first apply.
    pub first: String,
    pub runtime: tokio::runtime::Runtime,
}

pub(super) fn project(items: usize) -> Result<Bench, CoreError> {
    let work = tempfile::tempdir().map_err(|e| fail("create a scratch directory", e))?;
    let root = work.path().join("corpus");
    corpus::generate(&root, items, 7419)?;
    let root = root
        .canonicalize()
        .map_err(|e| fail("resolve the corpus", e))?;
    git(&root, &["init", "-q", "-b", "main"])?;
    git(&root, &["add", "-A"])?;
    git(&root, &["commit", "-q", "-m", "generated"])?;
    let data = DataDir::at(work.path().join("data"));
    let repo = Repo {
        root: root.clone(),
        branch: "main".into(),
        origin_url: String::new(),
    };
    Registry::load(&data)?.register(&data, &repo, Some("bench"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| fail("start the runtime", e))?;
    let project = Project::new(root.clone(), "bench", &repo, None);
    let first = runtime.block_on(apply(&data, &project, &root))?;
    Ok(Bench {
        _work: work,
        root,
        data,
        project,
        first,
        runtime,
    })
}

/// Arguments of a tool's `i`th timed call.
pub(super) type Arguments<'a> = &'a dyn Fn(usize) -> Value;

/// Serves `data` and times `calls` calls of each tool over one connection, every answer checked
/// against the tool's published output schema (so the run is also a conformance check).
pub(super) fn time_tools(
    data: &DataDir,
    tools: &[(&str, Arguments<'_>)],
    calls: usize,
) -> Result<serde_json::Map<String, Value>, CoreError> {
    let served = Serving::start(data)?;
    let stream = TcpStream::connect(("127.0.0.1", served.port)).map_err(|e| fail("connect", e))?;
    let _ = stream.set_nodelay(true);
    let mut stream = BufReader::new(stream);
    let mut figures = serde_json::Map::new();
    let seat = theurian_protocol::seat::Seat::new()
        .map_err(|e| fail("compile the published schemas", e))?;
    for (tool, args) in tools {
        let mut samples = Vec::with_capacity(calls);
        for i in 0..calls {
            let mut arguments = args(i);
            if let Some(o) = arguments.as_object_mut() {
                o.insert("projectId".into(), json!("bench"));
            }
            let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).to_string();
            let t = Instant::now();
            let answer = post(&mut stream, served.port, &served.token, &body)
                .map_err(|e| fail("call the daemon", e))?;
            samples.push(t.elapsed());
            conforms(&seat, tool, &answer)?;
        }
        figures.insert((*tool).to_owned(), percentiles(samples));
    }
    served.stop();
    Ok(figures)
}

pub fn run(items: usize, calls: usize) -> Result<Value, CoreError> {
    if items < 2 {
        return Err(CoreError::usage(
            "The tools benchmark needs at least two items (relations join pairs of them).",
            "Pass --items 2 or more.",
        ));
    }
    let bench = project(items)?;
    let _context = bench.runtime.enter();
    let (root, data) = (&bench.root, &bench.data);
    let first = &bench.first;
    let ids = item_ids(root)?;
    second_state(root, &ids)?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-q", "-m", "relations"])?;
    bench.runtime.block_on(apply(data, &bench.project, root))?;
    let visible = theurian_core::serving_profile::load(data)?.visible_names();
    bench.runtime.block_on(build(
        data,
        root,
        "bench",
        &visible,
        BuildOptions::default(),
    ))?;
    let tools: [(&str, Arguments<'_>); 7] = [
        ("system.indexStatus", &|_| json!({})),
        ("project.status", &|_| json!({})),
        (
            "knowledge.trace",
            &|i| json!({"itemId": ids[(i * 3) % ids.len()], "depth": 2}),
        ),
        (
            "knowledge.listChanges",
            &|_| json!({"since": first, "limit": 50}),
        ),
        ("knowledge.checkFreshness", &|_| json!({"limit": 25})),
        (
            "knowledge.getContext",
            &|i| json!({"task": format!("{} and its retry rules", ids[(i * 7) % ids.len()].replace(['.', '-'], " ")), "paths": ["docs/1.md"]}),
        ),
        (
            "knowledge.submitFeedback",
            &|i| json!({"itemId": ids[i % ids.len()], "signal": "helpful"}),
        ),
    ];
    let figures = time_tools(data, &tools, calls)?;
    Ok(json!({
        "benchmark": "the designed tools over a real socket",
        "items": items,
        "callsPerTool": calls,
        "latency": figures,
    }))
}
