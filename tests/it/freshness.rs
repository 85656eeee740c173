//! `knowledge.checkFreshness` over a real socket, on a real git repository built in the test:
//! validity windows at a moment, and anchored files changed or deleted after the commit a
//! revision describes, with the changing commits newest first; what is withheld is neither
//! checked nor counted; paging.

use crate::knowledge::ok;
use crate::migrate_apply::{git, git_command, Repo};
use crate::ranked::daemon_for;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use theurian_protocol::tools::ToolId;

fn head(repo: &Repo) -> String {
    let out = git_command(repo.dir.path())
        .args(["rev-parse", "HEAD"])
        .output()
        .expect("rev-parse");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn write(repo: &Repo, rel: &str, text: &str) {
    let path = repo.dir.path().join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Items (id, sensitivity, extra metadata, anchored file) in one migration.
fn knowledge(repo: &Repo, items: &[(&str, &str, &str, Option<&str>)], at: &str) {
    let mut ops = String::new();
    for (n, (id, sensitivity, extra, file)) in items.iter().enumerate() {
        let body = format!("About {id}.\n");
        write(repo, &format!(".theurian/knowledge/{id}.md"), &body);
        // Valid from long ago unless the item says otherwise, so only the windows tested close.
        let from = if extra.contains("validFrom") {
            ""
        } else {
            ", validFrom: '2019-01-01T00:00:00Z'"
        };
        let anchors = file.map_or(String::new(), |f| {
            format!(", sourceAnchors: [{{provider: git, sourceUri: 'https://example.com/{f}', commitSha: '{at}', filePath: {f}}}]")
        });
        ops.push_str(&format!(
            "  - {{op: upsertRevision, itemId: {id}, revisionId: 01K1CCCCCC00000000000000{:02}, contentFile: ../knowledge/{id}.md, contentSha256: {:x}, metadata: {{title: {id}, contentType: text/markdown, kind: architecture, namespace: f, status: approved, owner: o, sensitivity: {sensitivity}, labels: [authored-in-theurian]{from}{extra}{anchors}}}}}\n",
            n + 1,
            Sha256::digest(body.as_bytes())
        ));
    }
    write(
        repo,
        ".theurian/migrations/01K1BBBBBB0000000000000001.yaml",
        &format!("apiVersion: theurian.dev/v1\nid: 01K1BBBBBB0000000000000001\ncreatedAt: 2026-07-15T10:00:00Z\nauthor: t\noperations:\n{ops}"),
    );
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "knowledge"]);
}

fn summary(body: &Value) -> Vec<String> {
    body["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let kinds: Vec<&str> = f["reasons"]
                .as_array()
                .expect("reasons")
                .iter()
                .filter_map(|r| r["kind"].as_str())
                .collect();
            format!("{} {}", f["itemId"].as_str().unwrap_or(""), kinds.join(","))
        })
        .collect()
}

#[tokio::test]
async fn stale_windows_and_anchors_changed_in_git_are_found_with_their_commits() {
    let source = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(source.path().join(".theurian/knowledge")).expect("mkdir");
    std::fs::write(source.path().join(".theurian/knowledge/.keep"), "").expect("keep");
    let repo = Repo::of(source.path());
    write(&repo, "src/lib.rs", "pub fn one() {}\n");
    write(&repo, "src/gone.rs", "pub fn gone() {}\n");
    write(&repo, "src/other.rs", "pub fn other() {}\n");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "code"]);
    let described = head(&repo);
    knowledge(
        &repo,
        &[
            ("f.anchored", "public", "", Some("src/lib.rs")),
            (
                "f.expired",
                "public",
                ", validTo: '2020-01-01T00:00:00Z'",
                None,
            ),
            (
                "f.future",
                "public",
                ", validFrom: '2999-01-01T00:00:00Z'",
                None,
            ),
            ("f.gone", "public", "", Some("src/gone.rs")),
            (
                "f.hidden",
                "confidential",
                ", validTo: '2020-01-01T00:00:00Z'",
                Some("src/lib.rs"),
            ),
            ("f.stable", "public", "", Some("src/other.rs")),
        ],
        &described,
    );
    repo.ok(&["--json", "project", "register", "--project-id", "fresh"]);
    repo.ok(&["--json", "migrate", "apply"]);
    // Two commits change the anchored file (one also deletes another); one changes nothing
    // anchored.
    write(&repo, "src/lib.rs", "pub fn one() { two() }\n");
    std::fs::remove_file(repo.dir.path().join("src/gone.rs")).expect("rm");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "b"]);
    let b = head(&repo);
    write(&repo, "src/lib.rs", "pub fn one() { three() }\n");
    git(repo.dir.path(), &["commit", "-qam", "c"]);
    let c = head(&repo);
    write(&repo, "README", "unrelated\n");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "d"]);

    let daemon = daemon_for(&repo).await;
    let client = daemon.typed().await;
    let check = |args: Value| {
        let client = &client;
        async move {
            let mut full = json!({"projectId": "fresh"});
            if let (Some(f), Some(a)) = (full.as_object_mut(), args.as_object()) {
                f.extend(a.clone());
            }
            ok(
                &client.call("knowledge.checkFreshness", full).await,
                ToolId::KnowledgeCheckFreshness,
            )
        }
    };

    let all = check(json!({})).await;
    assert_eq!(
        summary(&all),
        [
            "f.anchored anchor-changed",
            "f.expired expired",
            "f.future not-yet-valid",
            "f.gone anchor-gone"
        ],
        "{all}"
    );
    assert_eq!(
        (&all["checked"], &all["head"]),
        (&json!(5), &json!(head(&repo)))
    );
    let changed = &all["findings"][0]["reasons"][0];
    assert_eq!(
        (&changed["filePath"], &changed["since"]),
        (&json!("src/lib.rs"), &json!(described))
    );
    let shas: Vec<&str> = changed["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .filter_map(|c| c["sha"].as_str())
        .collect();
    assert_eq!(shas, [c.as_str(), b.as_str()]);
    assert_eq!(changed["moreCommits"], false);
    assert!(all["findings"][0]["refresh"]
        .as_str()
        .is_some_and(|r| r.contains("knowledge.proposeChange")));
    assert!(!all.to_string().contains("f.hidden"), "{all}");

    let windows = check(json!({"anchors": false})).await;
    assert_eq!(
        summary(&windows),
        ["f.expired expired", "f.future not-yet-valid"]
    );
    assert_eq!(windows["head"], Value::Null);
    let earlier = check(json!({"anchors": false, "asOf": "2019-06-01T00:00:00+09:00"})).await;
    assert_eq!(summary(&earlier), ["f.future not-yet-valid"]);

    let mut paged = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = check(json!({"limit": 1, "cursor": cursor})).await;
        paged.extend(summary(&page));
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(paged, summary(&all));
    daemon.shutdown().await;
}

#[test]
fn the_commits_listed_per_file_are_the_schema_s_bound() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            crate::support::root()
                .join("schemas/mcp/knowledge-check-freshness-response.schema.json"),
        )
        .expect("schema"),
    )
    .expect("json");
    assert_eq!(
        schema["$defs"]["staleReason"]["properties"]["commits"]["maxItems"].as_u64(),
        Some(theurian_core::anchor_history::LISTED as u64)
    );
}

/// More items than one round reads, with findings scattered across the rounds' edges: pages of
/// three add up to exactly the items whose window closed or whose anchored file changed, in
/// id order, and every served item is counted.
#[tokio::test]
async fn a_check_pages_through_more_items_than_one_round_reads() {
    let source = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(source.path().join(".theurian/knowledge")).expect("mkdir");
    std::fs::write(source.path().join(".theurian/knowledge/.keep"), "").expect("keep");
    let repo = Repo::of(source.path());
    write(&repo, "src/lib.rs", "pub fn one() {}\n");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "code"]);
    let described = head(&repo);
    let mut ops = String::new();
    let mut expected = Vec::new();
    for i in 0..1_300 {
        let id = format!("f.i{i:04}");
        let expired = i % 97 == 0 || (254..=258).contains(&i) || (1_278..=1_282).contains(&i);
        let anchored = i % 150 == 1;
        let body = format!("About {id}.\n");
        write(&repo, &format!(".theurian/knowledge/{id}.md"), &body);
        let window = if expired {
            ", validTo: '2020-01-01T00:00:00Z'"
        } else {
            ""
        };
        let anchor = if anchored {
            format!(", sourceAnchors: [{{provider: git, sourceUri: 'https://example.com/lib', commitSha: '{described}', filePath: src/lib.rs}}]")
        } else {
            String::new()
        };
        ops.push_str(&format!(
            "  - {{op: upsertRevision, itemId: {id}, revisionId: 01K1CCCCCC{i:016}, contentFile: ../knowledge/{id}.md, contentSha256: {:x}, metadata: {{title: {id}, contentType: text/markdown, kind: architecture, namespace: f, status: approved, owner: o, sensitivity: public, labels: [authored-in-theurian], validFrom: '2019-01-01T00:00:00Z'{window}{anchor}}}}}\n",
            Sha256::digest(body.as_bytes())
        ));
        match (expired, anchored) {
            (true, true) => expected.push(format!("{id} expired,anchor-changed")),
            (true, false) => expected.push(format!("{id} expired")),
            (false, true) => expected.push(format!("{id} anchor-changed")),
            (false, false) => {}
        }
    }
    write(
        &repo,
        ".theurian/migrations/01K1BBBBBB0000000000000001.yaml",
        &format!("apiVersion: theurian.dev/v1\nid: 01K1BBBBBB0000000000000001\ncreatedAt: 2026-07-15T10:00:00Z\nauthor: t\noperations:\n{ops}"),
    );
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "knowledge"]);
    repo.ok(&["--json", "project", "register", "--project-id", "fresh"]);
    repo.ok(&["--json", "migrate", "apply"]);
    write(&repo, "src/lib.rs", "pub fn one() { two() }\n");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "change"]);

    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let mut found = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let args = json!({"projectId": "fresh", "limit": 3, "cursor": cursor});
        let page = ok(
            &c.call("knowledge.checkFreshness", args).await,
            ToolId::KnowledgeCheckFreshness,
        );
        assert_eq!(page["checked"], 1_300, "{page}");
        found.extend(summary(&page));
        pages += 1;
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(found, expected);
    assert_eq!(pages, expected.len().div_ceil(3));
    daemon.shutdown().await;
}
