//! The ranked path of knowledge.search over real tantivy builds made by the real CLI.

use crate::fixture::PROJECT;
use crate::migrate::sha256;
use crate::migrate_apply::{git, Repo};
use crate::support::{item_ids, Daemon};
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_protocol::seat::Seat;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

pub(crate) async fn daemon_for(repo: &Repo) -> Daemon {
    Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await
}

fn search_body(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    let body = result["structuredContent"].clone();
    Seat::new()
        .expect("seat")
        .check_response(ToolId::KnowledgeSearch, &body)
        .unwrap_or_else(|e| panic!("{e}"));
    body
}

/// Gives items of a [`project_with`] repository new public, approved revisions in one committed
/// and applied migration. Each entry is (its position in `project_with`, item id, new body).
pub(crate) fn revise(repo: &Repo, items: &[(usize, &str, &str)]) {
    let dir = repo.dir.path().join(".theurian");
    let mut operations = String::new();
    let mut after = Vec::new();
    for (position, item, body) in items {
        let n = position + 1;
        let file = format!("{item}.v2.md");
        std::fs::write(dir.join("knowledge").join(&file), body).expect("body");
        operations.push_str(&format!(
            "  - op: upsertRevision\n    itemId: {item}\n    revisionId: 01K1CCCCCC00000000000001{n:02}\n    expectedRevision: 01K1CCCCCC00000000000000{n:02}\n    contentFile: ../knowledge/{file}\n    contentSha256: {}\n    metadata: {{title: {item}, contentType: text/markdown, kind: architecture, namespace: t, status: approved, owner: o, sensitivity: public, labels: [authored-in-theurian]}}\n",
            sha256(body.as_bytes())
        ));
        after.push(format!("01K1BBBBBB00000000000000{n:02}"));
    }
    std::fs::write(
        dir.join("migrations/01K1BBBBBB0000000000000099.yaml"),
        format!(
            "apiVersion: theurian.dev/v1\nid: 01K1BBBBBB0000000000000099\ncreatedAt: 2026-07-16T00:00:00Z\nauthor: t\ndependsOn: [{}]\noperations:\n{operations}",
            after.join(", ")
        ),
    )
    .expect("migration");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "new revisions"]);
    repo.ok(&["--json", "migrate", "apply"]);
}

/// [`project_with`] for generated items: (item id, body) pairs, all at one sensitivity.
pub(crate) fn project_of(bodies: &[(String, String)], sensitivity: &str) -> Repo {
    let items: Vec<(&str, &str, &str)> = bodies
        .iter()
        .map(|(id, body)| (id.as_str(), sensitivity, body.as_str()))
        .collect();
    project_with(&items)
}

/// Runs `index build` in `repo`: its JSON answer, and the published build's directory.
pub(crate) fn built(repo: &Repo) -> (Value, std::path::PathBuf) {
    let built = repo.ok(&["--json", "index", "build"]);
    let id = built["indexBuildId"].as_str().expect("build id");
    let dir = repo
        .dir
        .path()
        .join(format!(".theurian/state/theurian-index-{id}"));
    (built, dir)
}

/// A repository with one migration per (item, sensitivity, body), committed and applied. The
/// items are the test's own: no corpus lies beneath them, and no `config.yaml` (the defaults).
pub(crate) fn project_with(items: &[(&str, &str, &str)]) -> Repo {
    let source = tempfile::tempdir().expect("tempdir");
    let dir = source.path().join(".theurian");
    std::fs::create_dir_all(dir.join("knowledge")).expect("mkdir");
    std::fs::create_dir_all(dir.join("migrations")).expect("mkdir");
    for (i, (item, labels, body)) in items.iter().enumerate() {
        // `labels` is "sensitivity" or "sensitivity:status".
        let (sensitivity, status) = labels.split_once(':').unwrap_or((labels, "approved"));
        let file = format!("{item}.md");
        std::fs::write(dir.join("knowledge").join(&file), body).expect("body");
        let id = format!("01K1BBBBBB00000000000000{:02}", i + 1);
        let rev = format!("01K1CCCCCC00000000000000{:02}", i + 1);
        std::fs::write(
            dir.join("migrations").join(format!("{id}.yaml")),
            format!(
                "apiVersion: theurian.dev/v1\nid: {id}\ncreatedAt: 2026-07-15T10:00:00Z\nauthor: t\noperations:\n  - op: upsertRevision\n    itemId: {item}\n    revisionId: {rev}\n    contentFile: ../knowledge/{file}\n    contentSha256: {}\n    metadata: {{title: {item}, contentType: text/markdown, kind: architecture, namespace: t, status: {status}, owner: o, sensitivity: {sensitivity}, labels: [authored-in-theurian]}}\n",
                sha256(body.as_bytes())
            ),
        )
        .expect("migration");
    }
    let repo = Repo::of(source.path());
    repo.ok(&["--json", "project", "register", "--project-id", "ranked"]);
    repo.ok(&["--json", "migrate", "apply"]);
    repo
}

#[tokio::test]
async fn retrievers_fuse_and_name_themselves_and_the_envelope_is_complete() {
    let repo = project_with(&[
        ("arch.retry", "public", "# Retry\n\nRetry idempotent requests with exponential backoff and jitter. Retry budgets cap load."),
        ("arch.auth", "public", "# Auth\n\nEvery request carries a signed token. 認証トークンは毎回検証する。"),
        ("arch.cache", "internal", "# Cache\n\nThe cache holds rendered pages for five minutes."),
    ]);
    let built = repo.ok(&["--json", "index", "build"]);
    assert_eq!(
        (built["items"].clone(), built["chunks"].clone()),
        (json!(3), json!(3))
    );
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;

    let s = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "retry backoff"}),
        )
        .await,
    );
    let r = &s["retrieval"];
    assert_eq!(
        (
            r["indexed"].clone(),
            r["fallbackReason"].clone(),
            r["mode"].clone(),
            r["stale"].clone()
        ),
        (json!(true), Value::Null, json!("lexical"), json!(false))
    );
    assert_eq!(r["indexBuildId"], built["indexBuildId"]);
    assert_eq!(r["staleAgainst"], "builtState");
    assert_eq!(r["embeddingModel"], "");
    let top = &s["results"][0];
    assert_eq!(top["itemId"], "arch.retry");
    assert_eq!(top["foundBy"], json!(["lexical", "substring"]));
    // Rank 1 in both retrievers: 1/61 + 1/61.
    assert_eq!(top["fusedScore"], json!(0.032787));

    let cjk = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "トークン"}),
        )
        .await,
    );
    assert_eq!(cjk["results"][0]["itemId"], "arch.auth");
    assert!(cjk["results"][0]["foundBy"]
        .as_array()
        .expect("foundBy")
        .contains(&json!("substring")));
    let short = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "認証"}),
        )
        .await,
    );
    assert_eq!(
        short["results"][0]["itemId"], "arch.auth",
        "below three characters the scan answers"
    );

    let dense = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "retry requests", "useDense": true}),
        )
        .await,
    );
    assert_eq!(
        dense["retrieval"]["embeddingModel"],
        "theurian-hashed-char-ngram"
    );
    assert_eq!(dense["retrieval"]["mode"], "hybrid");
    assert!(dense["results"][0]["foundBy"]
        .as_array()
        .expect("foundBy")
        .contains(&json!("dense")));

    let none = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "zebra"}),
        )
        .await,
    );
    assert_eq!(
        (none["count"].clone(), none["retrieval"]["mode"].clone()),
        (json!(0), json!("none"))
    );
    let early = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "retry", "asOf": "2001-01-01T00:00:00Z"}),
        )
        .await,
    );
    assert_eq!(early["count"], 0);
    let drafts = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "retry", "includeUnapproved": true}),
        )
        .await,
    );
    assert_eq!(
        drafts["retrieval"]["fallbackReason"],
        "unapproved-not-indexed"
    );
    daemon.shutdown().await;
}

#[tokio::test]
async fn a_withheld_item_is_never_returned_counted_or_allowed_to_move_a_rank() {
    let shared_items = [
        (
            "arch.one",
            "public",
            "# One\n\nShared words about retry budgets and retry storms.",
        ),
        (
            "arch.two",
            "public",
            "# Two\n\nRetry storms start when every client retries at once.",
        ),
    ];
    let secret = (
        "arch.secret",
        "confidential",
        "# Secret\n\nRetry retry retry: the vendor's retry quota is 17 per second.",
    );
    let with = project_with(&[shared_items[0], shared_items[1], secret]);
    let without = project_with(&shared_items);
    with.ok(&["--json", "index", "build"]);
    without.ok(&["--json", "index", "build"]);
    let (d1, d2) = (daemon_for(&with).await, daemon_for(&without).await);
    let (c1, c2) = (d1.typed().await, d2.typed().await);
    for query in ["retry", "retry quota", "storms"] {
        let a = search_body(
            &c1.call(
                "knowledge.search",
                json!({"projectId": "ranked", "query": query, "useDense": true}),
            )
            .await,
        );
        let b = search_body(
            &c2.call(
                "knowledge.search",
                json!({"projectId": "ranked", "query": query, "useDense": true}),
            )
            .await,
        );
        let strip = |v: &Value| -> Vec<(Value, Value, Value)> {
            v["results"]
                .as_array()
                .expect("results")
                .iter()
                .map(|h| {
                    (
                        h["itemId"].clone(),
                        h["fusedScore"].clone(),
                        h["foundBy"].clone(),
                    )
                })
                .collect()
        };
        assert_eq!(strip(&a), strip(&b), "query {query:?}");
        assert!(!a.to_string().contains("arch.secret") && !a.to_string().contains("quota is 17"));
        assert_eq!(
            a["retrieval"]["droppedForBudget"],
            b["retrieval"]["droppedForBudget"]
        );
    }
    d1.shutdown().await;
    d2.shutdown().await;
}

#[tokio::test]
async fn a_stale_index_is_labelled_and_its_outdated_passages_are_gated_out() {
    let repo = project_with(&[("arch.retry", "public", "# Retry\n\nRetry with backoff.")]);
    repo.ok(&["--json", "index", "build"]);
    // A new revision of the same item: the index still holds the old passage.
    revise(
        &repo,
        &[(
            0,
            "arch.retry",
            "# Retry\n\nNever retry non-idempotent writes.",
        )],
    );
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let s = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "backoff"}),
        )
        .await,
    );
    assert_eq!(s["retrieval"]["stale"], true);
    assert!(s["retrieval"]["note"]
        .as_str()
        .is_some_and(|n| n.contains("theurian index build")));
    assert_eq!(
        s["count"], 0,
        "the old revision's passage no longer matches the canonical state"
    );
    let status = repo.ok(&["--json", "index", "status"]);
    assert_eq!(status["stale"], true);
    // A rebuild supersedes the stale build; gc removes it and keeps the published one.
    let fresh = repo.ok(&["--json", "index", "build"]);
    std::fs::create_dir_all(
        repo.dir
            .path()
            .join(".theurian/state/theurian-index-01K1DDDDDD0000000000000000.building"),
    )
    .expect("abandoned");
    let planned = repo.ok(&["--json", "index", "gc", "--dry-run"]);
    let swept = repo.ok(&["--json", "index", "gc"]);
    assert_eq!(planned["reclaimed"], swept["reclaimed"]);
    assert_eq!(
        (planned["dryRun"].as_bool(), swept["dryRun"].as_bool()),
        (Some(true), Some(false))
    );
    // The first build and the one the apply's purge derived from it; the abandoned `.building`
    // one may be a build in progress, so it is reported, never removed.
    assert_eq!(
        swept["reclaimed"].as_array().map(Vec::len),
        Some(2),
        "{swept}"
    );
    assert!(swept["bytesReclaimed"].as_u64().is_some_and(|b| b > 0));
    assert_eq!(
        swept["strandedBuilding"],
        serde_json::json!(["theurian-index-01K1DDDDDD0000000000000000.building"])
    );
    assert_eq!(swept["publishedIndexBuildId"], fresh["indexBuildId"]);
    assert!(repo
        .dir
        .path()
        .join(format!(
            ".theurian/state/theurian-index-{}",
            fresh["indexBuildId"].as_str().expect("id")
        ))
        .is_dir());
    daemon.shutdown().await;
}

#[tokio::test]
async fn secrets_are_kept_out_of_the_index_under_block_and_reported_under_warn() {
    let leaky = (
        "arch.leaky",
        "public",
        "# Deploy\n\nDeploy with the key AKIAABCDEFGHIJKLMNOP from the vault retry box.",
    );
    let clean = ("arch.clean", "public", "# Retry\n\nRetry with backoff.");
    let repo = project_with(&[leaky, clean]);
    let out = repo.run(&["--json", "index", "build"]);
    assert_eq!(
        out.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err: Value = serde_json::from_slice(&out.stderr).expect("json error");
    let message = err["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("arch.leaky") && !message.contains("AKIA"),
        "{message}"
    );
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(
            repo.dir
                .path()
                .join(".theurian/state/index-secret-scan.json"),
        )
        .expect("record"),
    )
    .expect("json");
    assert_eq!(
        (record["policy"].clone(), record["findings"].clone()),
        (json!("block"), json!(1))
    );
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let s = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "retry"}),
        )
        .await,
    );
    assert_eq!(s["retrieval"]["indexed"], true, "the build was published");
    assert!(!s.to_string().contains("arch.leaky"));
    daemon.shutdown().await;

    std::fs::write(
        repo.dir.path().join(".theurian/config.yaml"),
        "security:\n  secretScan: warn\n",
    )
    .expect("config");
    let warned = repo.ok(&["--json", "index", "build"]);
    assert_eq!(warned["items"], 2);
    assert_eq!(
        warned["secretScan"]["findings"][0]["family"],
        "aws-access-key-id"
    );
    assert_eq!(warned["secretScan"]["withheld"], json!([]));
}

#[tokio::test]
async fn a_build_with_drafts_ranks_them_only_for_callers_who_ask() {
    let repo = project_with(&[
        (
            "arch.approved",
            "public",
            "# Approved\n\nRetry with backoff.",
        ),
        (
            "arch.draft",
            "public:draft",
            "# Draft\n\nRetry with jitter too.",
        ),
    ]);
    let built = repo.ok(&["--json", "index", "build", "--include-unapproved"]);
    assert_eq!(built["items"], 2);
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let approved = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "retry"}),
        )
        .await,
    );
    let ids = item_ids(&approved);
    assert_eq!(ids, ["arch.approved"]);
    assert_eq!(approved["retrieval"]["indexesUnapproved"], true);
    let all = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "retry", "includeUnapproved": true}),
        )
        .await,
    );
    assert_eq!(all["retrieval"]["indexed"], true);
    assert_eq!(all["count"], 2);
    daemon.shutdown().await;
}

#[tokio::test]
async fn a_withdrawal_purges_its_passages_into_a_derived_build() {
    let repo = project_with(&[
        ("arch.keep", "public", "# Keep\n\nRetry with backoff."),
        (
            "arch.gone",
            "public",
            "# Gone\n\nRetry forever without limits.",
        ),
    ]);
    // A forest build: its summaries quote the withdrawn passage too.
    let first = repo.ok(&["--json", "index", "build", "--raptor"]);
    let dir = repo.dir.path().join(".theurian");
    assert!(dir
        .join(format!(
            "state/theurian-index-{}/raptor.json",
            first["indexBuildId"].as_str().expect("id")
        ))
        .is_file());
    std::fs::write(
        dir.join("migrations/01K1BBBBBB0000000000000050.yaml"),
        "apiVersion: theurian.dev/v1\nid: 01K1BBBBBB0000000000000050\ncreatedAt: 2026-07-17T00:00:00Z\nauthor: t\ndependsOn: [01K1BBBBBB0000000000000002]\noperations:\n  - {op: deprecateItem, itemId: arch.gone, reason: Unsafe advice.}\n",
    )
    .expect("migration");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "deprecate"]);
    let applied = repo.ok(&["--json", "migrate", "apply"]);
    let purge = &applied["indexPurge"];
    assert_eq!(purge["published"], true, "{purge}");
    assert_eq!(purge["removed"], 1);
    let new_id = purge["indexBuildId"]
        .as_str()
        .expect("new build")
        .to_owned();
    assert_ne!(new_id, first["indexBuildId"].as_str().expect("id"));
    let pointer: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("state/active-index.json")).expect("pointer"),
    )
    .expect("json");
    assert_eq!(pointer["indexBuildId"], new_id.as_str());
    let derived = theurian_core::index::open::OpenIndex::open(
        &dir.join(format!("state/theurian-index-{new_id}")),
    )
    .expect("open");
    assert!(
        derived.forest.is_none(),
        "the derived build drops the forest"
    );
    assert!(derived
        .passages
        .iter()
        .filter(|p| p.live)
        .all(|p| p.item_id() != "arch.gone"));
    // The withdrawn text is gone from the derived build's passage table itself, while the
    // kept passage still reads back (the copied table held both).
    let derived_dir = dir.join(format!("state/theurian-index-{new_id}"));
    let table = std::fs::read(derived_dir.join("passages.bin")).expect("passage table");
    let holds = |needle: &[u8]| table.windows(needle.len()).any(|w| w == needle);
    assert!(!holds(b"Retry forever without limits"));
    assert!(!holds(b"arch.gone"));
    assert!(holds(b"Retry with backoff"));
    let first_dir = dir.join(format!(
        "state/theurian-index-{}",
        first["indexBuildId"].as_str().expect("id")
    ));
    let before = std::fs::read(first_dir.join("passages.bin")).expect("first table");
    assert!(before
        .windows(b"Retry forever without limits".len())
        .any(|w| w == b"Retry forever without limits"));
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let s = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "retry"}),
        )
        .await,
    );
    assert_eq!(s["retrieval"]["indexBuildId"], new_id.as_str());
    let ids = item_ids(&s);
    assert_eq!(ids, ["arch.keep"]);
    daemon.shutdown().await;
    // Nothing withdrawn: nothing to do.
    let again = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(again["indexPurge"]["reason"], "no-withdrawal");
}

#[tokio::test]
async fn the_gate_drops_passages_whose_canonical_text_no_longer_matches() {
    let repo = project_with(&[
        ("arch.one", "public", "# One\n\nRetry with backoff."),
        ("arch.two", "public", "# Two\n\nRetry with jitter."),
    ]);
    repo.ok(&["--json", "index", "build"]);
    // Tamper with the canonical revision behind arch.one: its served text no longer hashes to
    // what the index holds, so the index must not answer with it.
    let db = repo
        .dir
        .path()
        .join(".theurian/state")
        .join(repo.active()["databaseFilename"].as_str().expect("name"));
    {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .expect("open");
        sqlx::query("UPDATE knowledge_revisions SET body = 'something else entirely' WHERE item_id = 'arch.one'").execute(&mut conn).await.expect("tamper");
    }
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let s = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "retry"}),
        )
        .await,
    );
    assert_eq!(s["retrieval"]["indexed"], true);
    let ids = item_ids(&s);
    assert_eq!(ids, ["arch.two"]);
    daemon.shutdown().await;
}

#[tokio::test]
async fn a_raptor_build_adds_the_summary_retriever_and_raptor_paths() {
    let repo = crate::fixture::repo();
    repo.ok(&["--json", "project", "register", "--project-id", PROJECT]);
    repo.ok(&["--json", "migrate", "apply"]);
    let built = repo.ok(&["--json", "index", "build", "--raptor"]);
    // The 22 items served by default each cut into at least three passages, so each has a
    // Document node; three (sensitivity, namespace) scopes hold three documents of one kind
    // (public api/api, public ledger/domain, internal security/security), so three Domain
    // nodes; no scope has three domains, so no Catalog node: 22 + 3.
    assert_eq!(
        (built["items"].clone(), built["chunks"].clone()),
        (json!(22), json!(101))
    );
    assert_eq!(built["raptorNodes"], 25);
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let query = json!({"projectId": PROJECT, "query": "secrets vault", "limit": 3});
    let s = search_body(&c.call("knowledge.search", query.clone()).await);
    let top = &s["results"][0];
    assert_eq!(top["itemId"], "security.secrets-from-vault");
    assert!(
        top["foundBy"]
            .as_array()
            .expect("foundBy")
            .contains(&json!("summary")),
        "{top}"
    );
    let levels: Vec<u64> = top["raptorPath"]
        .as_array()
        .expect("raptorPath")
        .iter()
        .filter_map(|p| p["level"].as_u64())
        .collect();
    assert_eq!(levels, [2, 1], "root first: the domain, then the document");
    assert!(top["raptorPath"][0]["title"]
        .as_str()
        .is_some_and(|t| !t.is_empty()));
    // The security domain's summary also brings in its siblings, which no other retriever
    // finds for these words.
    let summary_only: Vec<&str> = s["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|h| h["foundBy"] == json!(["summary"]))
        .filter_map(|h| h["itemId"].as_str())
        .collect();
    assert_eq!(
        summary_only,
        ["security.pii-in-logs", "security.service-auth-mtls"]
    );
    // Without --raptor there is no summary retriever and no path.
    repo.ok(&["--json", "index", "build"]);
    let plain = search_body(&c.call("knowledge.search", query).await);
    assert_eq!(plain["results"][0]["itemId"], "security.secrets-from-vault");
    for hit in plain["results"].as_array().expect("results") {
        assert!(hit.get("raptorPath").is_none(), "{hit}");
        assert!(
            !hit["foundBy"]
                .as_array()
                .expect("foundBy")
                .contains(&json!("summary")),
            "{hit}"
        );
    }
    daemon.shutdown().await;
}

#[test]
fn concurrent_first_opens_share_one_copy_and_embeddings_load_on_demand() {
    let repo = project_with(&[
        (
            "arch.one",
            "internal",
            "# One\n\nRetry requests with backoff.\n",
        ),
        (
            "arch.two",
            "internal",
            "# Two\n\nThe daemon token lives in the data directory.\n",
        ),
    ]);
    let (_, dir) = built(&repo);
    let cache = std::sync::Arc::new(theurian_core::index::open::IndexCache::default());
    let opened: Vec<_> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                let (cache, dir) = (cache.clone(), dir.clone());
                s.spawn(move || cache.open(&dir).expect("open"))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("thread"))
            .collect()
    });
    assert!(
        opened.iter().all(|o| std::sync::Arc::ptr_eq(o, &opened[0])),
        "concurrent first opens made more than one copy"
    );
    let idx = &opened[0];
    assert!(idx.has_embeddings);
    let dimension = theurian_core::index::embed::DIMENSION;
    assert_eq!(
        idx.embeddings().expect("embeddings").len(),
        idx.passages.len() * dimension
    );

    // Each chunk is found by its id, and a revision's chunks together, from the mapped table.
    for seq in 0..idx.passages.len() {
        let p = idx.passage(seq);
        assert_eq!(idx.seq_of_chunk(p.chunk_id()), Some(seq));
        assert!(idx.revision_passages(p.revision_id()).contains(&seq));
    }
    assert_eq!(idx.seq_of_chunk("no-such-chunk#0"), None);
    assert!(idx.revision_passages("no-such-revision").is_empty());

    // A damaged passage table is refused when opened, naming the file.
    let table = dir.join(theurian_core::index::passages::PASSAGES_FILE);
    let whole = std::fs::read(&table).expect("table");
    std::fs::write(&table, &whole[..whole.len() - 1]).expect("cut");
    let refused = theurian_core::index::open::OpenIndex::open(&dir).expect_err("refused");
    assert!(refused.contains("passages.bin"), "{refused}");
    std::fs::write(&table, &whole).expect("restore");

    // A build whose vectors do not match its passages is refused when opened, not at the
    // first dense search.
    let vectors = dir.join(theurian_core::index::pointer::EMBEDDINGS_FILE);
    let bytes = std::fs::read(&vectors).expect("vectors");
    std::fs::write(&vectors, &bytes[..bytes.len() - 4]).expect("truncate");
    let refused = theurian_core::index::open::OpenIndex::open(&dir).expect_err("refused");
    assert!(refused.contains("embeddings"), "{refused}");
}

#[test]
fn a_build_is_published_as_one_segment() {
    // One segment, so a top-k search keeps one pruning threshold across the whole build.
    let bodies: Vec<(String, String)> = (0..60)
        .map(|i| {
            (
                format!("arch.item-{i:02}"),
                format!(
                    "# Item {i}\n\nRetry budget {i} for the gateway.\n\nThe daemon token {i}.\n"
                ),
            )
        })
        .collect();
    let repo = project_of(&bodies, "internal");
    let (built, dir) = built(&repo);
    let idx = theurian_core::index::open::OpenIndex::open(&dir).expect("open");
    assert_eq!(
        idx.passages.len(),
        built["chunks"].as_u64().expect("chunks") as usize
    );
    assert_eq!(idx.reader.searcher().segment_readers().len(), 1);
    // The text is served from the passage table; the doc store does not hold a second copy.
    let schema = idx.index.schema();
    for field in [idx.fields.text, idx.fields.heading] {
        assert!(!schema.get_field_entry(field).is_stored());
    }
    assert!(schema.get_field_entry(idx.fields.chunk_id).is_stored());
    assert!(idx.passage(0).text().contains("Retry budget"));
}

#[test]
fn two_builds_of_one_state_write_the_same_bytes() {
    // Enough text that the embedding thread and the indexing thread overlap; only the build's
    // identity (its id, time, and tantivy's segment name and file list) may differ.
    let bodies: Vec<(String, String)> = (0..40)
        .map(|i| {
            let line =
                format!("Passage {i} of the retry policy names gateway-{i} and Straße {i}. ");
            (
                format!("arch.item-{i:02}"),
                format!("# Item {i}\n\n{}\n", line.repeat(60)),
            )
        })
        .collect();
    let repo = project_of(&bodies, "internal");
    let contents = |dir: &std::path::Path| -> std::collections::BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(dir)
            .expect("build dir")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.is_file())
            .filter(|path| {
                !["meta.json", "build.json", ".managed.json"]
                    .iter()
                    .any(|n| path.ends_with(n))
            })
            .map(|path| {
                // A segment file is named by its random id: compare it by its extension.
                let name = path
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned();
                let key = match name.split_once('.') {
                    Some((stem, ext)) if stem.len() == 32 => format!("segment.{ext}"),
                    _ => name,
                };
                (key, std::fs::read(&path).expect("read"))
            })
            .collect()
    };
    let (_, first) = built(&repo);
    let (_, second) = built(&repo);
    assert_ne!(first, second);
    let (first, second) = (contents(&first), contents(&second));
    assert!(first.contains_key("embeddings.f32") && first.contains_key("segment.idx"));
    assert!(first.contains_key("runs.bin") && first.contains_key("passages.bin"));
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        second.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &first {
        assert!(second[name] == *bytes, "{name} differs between two builds");
    }
}

#[tokio::test]
async fn the_scan_below_three_characters_ranks_by_occurrences_and_skips_gated_rows() {
    // Item i holds the two-letter needle i + 1 times, inside longer words (so the lexical
    // retriever has no token to match) and in mixed case (so only ASCII folding counts it).
    let spellings = ["aZQb", "bzqc", "cZqd", "dzQe"];
    let bodies: Vec<(String, String)> = (0..70)
        .map(|i| {
            let words: Vec<&str> = (0..=i).map(|k| spellings[k % spellings.len()]).collect();
            (
                format!("arch.s-{i:02}"),
                format!("# Section {i}\n\n{}.\n", words.join(" ")),
            )
        })
        .collect();
    let repo = project_of(&bodies, "public");
    repo.ok(&["--json", "index", "build"]);
    // New revisions of the three best matches after the build: their indexed passages no
    // longer match the canonical text, so the gate must drop them without spending a rank.
    let rewritten: Vec<(usize, String, String)> = (67..70)
        .map(|i| {
            (
                i,
                format!("arch.s-{i:02}"),
                format!("# Section {i}\n\nRewritten without the needle.\n"),
            )
        })
        .collect();
    let rewritten: Vec<(usize, &str, &str)> = rewritten
        .iter()
        .map(|(i, id, body)| (*i, id.as_str(), body.as_str()))
        .collect();
    revise(&repo, &rewritten);

    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let s = search_body(
        &c.call(
            "knowledge.search",
            json!({"projectId": "ranked", "query": "zq", "limit": 50, "maxTokens": 32000}),
        )
        .await,
    );
    let ids = item_ids(&s);
    let expected: Vec<String> = (17..=66).rev().map(|i| format!("arch.s-{i:02}")).collect();
    assert_eq!(ids, expected, "most occurrences first, gated rows skipped");
    assert_eq!(s["results"][0]["foundBy"], json!(["substring"]));
    assert_eq!(
        s["results"][0]["fusedScore"],
        json!(0.016393),
        "the first visible row takes rank 1: 1/61"
    );
    daemon.shutdown().await;
}

/// Sends `body` to the daemon as raw HTTP with `accept` and an optional protocol version, and
/// returns the status, the content type and the body bytes.
async fn raw_call(
    daemon: &Daemon,
    body: &Value,
    accept: &str,
    version: Option<&str>,
) -> (u16, String, Vec<u8>) {
    let mut request = reqwest::Client::new()
        .post(daemon.url())
        .header("Content-Type", "application/json")
        .header("Accept", accept)
        .header("Authorization", format!("Bearer {}", daemon.token))
        .body(serde_json::to_vec(body).expect("json"));
    if let Some(v) = version {
        request = request.header("MCP-Protocol-Version", v);
    }
    let response = request.send().await.expect("send");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (
        status,
        content_type,
        response.bytes().await.expect("body").to_vec(),
    )
}

#[tokio::test]
async fn plain_tool_calls_answered_directly_match_what_rmcp_answers() {
    let repo = project_with(&[
        (
            "arch.retry",
            "public",
            "# Retry\n\nRetry idempotent requests with exponential backoff and jitter.",
        ),
        (
            "arch.auth",
            "public",
            "# Auth\n\nEvery request carries a signed token.",
        ),
    ]);
    repo.ok(&["--json", "index", "build"]);
    let daemon = daemon_for(&repo).await;
    const PLAIN: &str = "application/json, text/event-stream";
    let calls = [
        json!({"name": "knowledge.search", "arguments": {"projectId": "ranked", "query": "retry backoff"}}),
        json!({"name": "knowledge.search", "arguments": {"projectId": "ranked", "query": "retry", "limit": "many"}}),
        json!({"name": "knowledge.get", "arguments": {"projectId": "ranked", "itemId": "arch.auth"}}),
        json!({"name": "knowledge.get", "arguments": {"projectId": "nowhere", "itemId": "arch.auth"}}),
        json!({"name": "project.list"}),
        json!({"name": "no.such_tool", "arguments": {}}),
    ];
    for (n, params) in calls.iter().enumerate() {
        let body = |params: Value| json!({"jsonrpc": "2.0", "id": n + 7, "method": "tools/call", "params": params});
        let direct = raw_call(&daemon, &body(params.clone()), PLAIN, Some("2025-06-18")).await;
        assert_eq!(
            (direct.0, direct.1.as_str()),
            (200, "application/json"),
            "call {n}"
        );
        let answer: Value = serde_json::from_slice(&direct.2).expect("JSON answer");
        assert_eq!(answer["id"], json!(n + 7));
        assert!(
            answer["result"]["content"][0]["text"].is_string(),
            "call {n}: {answer}"
        );

        // The same call in shapes the direct path leaves to rmcp: `_meta` in the params, and a
        // weighted Accept entry. Both must be answered byte for byte alike.
        let mut with_meta = params.clone();
        with_meta["_meta"] = json!({});
        let by_meta = raw_call(&daemon, &body(with_meta), PLAIN, Some("2025-06-18")).await;
        let by_accept = raw_call(
            &daemon,
            &body(params.clone()),
            "application/json;q=1, text/event-stream",
            Some("2025-06-18"),
        )
        .await;
        for rmcp in [by_meta, by_accept] {
            assert_eq!(
                (rmcp.0, rmcp.1.as_str(), String::from_utf8_lossy(&rmcp.2)),
                (
                    direct.0,
                    direct.1.as_str(),
                    String::from_utf8_lossy(&direct.2)
                ),
                "call {n} answered differently by rmcp"
            );
        }
    }

    // The plain shapes were answered directly, the others not.
    let direct_calls = || {
        daemon
            .state
            .direct_calls
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(direct_calls(), calls.len() as u64);

    // What rmcp refuses still reaches rmcp: an Accept without the event stream, and an unknown
    // protocol version.
    let search = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": calls[0]});
    let (status, _, _) = raw_call(&daemon, &search, "application/json", None).await;
    assert_eq!(status, 406);
    let (status, _, text) = raw_call(&daemon, &search, PLAIN, Some("2099-01-01")).await;
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&text));
    assert_eq!(direct_calls(), calls.len() as u64);
    daemon.shutdown().await;
}
