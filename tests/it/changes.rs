//! `knowledge.listChanges` over a real socket between states built by real migrations in a real
//! git repository: each kind of change against the operations that made it, paging, the
//! ceiling (an item that was above it reads as added, never as restored or relabelled), and the
//! refusals for a state not held and a cursor not issued.

use crate::knowledge::{ok, refused};
use crate::migrate_apply::{git, Repo};
use crate::ranked::{daemon_for, project_with};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use theurian_protocol::tools::ToolId;

fn commit_migration(repo: &Repo, id: &str, after: &str, ops: &str) {
    std::fs::write(
        repo.dir.path().join(format!(".theurian/migrations/{id}.yaml")),
        format!("apiVersion: theurian.dev/v1\nid: {id}\ncreatedAt: 2026-07-17T00:00:00Z\nauthor: t\ndependsOn: [{after}]\noperations:\n{ops}"),
    )
    .expect("migration");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", id]);
    repo.ok(&["--json", "migrate", "apply"]);
}

fn state_hash(repo: &Repo) -> String {
    repo.ok(&["--json", "migrate", "status"])["stateHash"]
        .as_str()
        .expect("hash")
        .to_owned()
}

fn summary(body: &Value) -> Vec<String> {
    body["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            format!(
                "{} {} {}",
                c["itemId"].as_str().unwrap_or(""),
                c["change"].as_str().unwrap_or(""),
                c["relabelled"]
            )
        })
        .collect()
}

const M2: &str = "01K1BBBBBB0000000000000060";
const M3: &str = "01K1BBBBBB0000000000000061";

#[tokio::test]
async fn changes_between_states_follow_the_operations_that_made_them() {
    let repo = project_with(&[
        ("k.a", "public", "A one.\n"),
        ("k.b", "public", "B.\n"),
        ("k.c", "public", "C.\n"),
        ("k.d", "confidential", "D, above the default ceiling.\n"),
        ("k.e", "public", "E.\n"),
    ]);
    let first = state_hash(&repo);
    let body = "A two.\n";
    std::fs::write(repo.dir.path().join(".theurian/knowledge/k.a.v2.md"), body).expect("body");
    std::fs::write(repo.dir.path().join(".theurian/knowledge/k.f.md"), "F.\n").expect("body");
    let sha = |b: &str| format!("{:x}", Sha256::digest(b.as_bytes()));
    let meta = "{title: t, contentType: text/markdown, kind: architecture, namespace: t, status: approved, owner: o, sensitivity: public, labels: [authored-in-theurian]}";
    let after: Vec<String> = (1..=5)
        .map(|n| format!("01K1BBBBBB00000000000000{n:02}"))
        .collect();
    commit_migration(
        &repo,
        M2,
        &after.join(", "),
        &format!(
            "  - {{op: upsertRevision, itemId: k.a, revisionId: 01K1CCCCCC0000000000000091, expectedRevision: 01K1CCCCCC0000000000000001, contentFile: ../knowledge/k.a.v2.md, contentSha256: {}, metadata: {meta}}}\n  - {{op: deprecateItem, itemId: k.b}}\n  - {{op: changeSensitivity, itemId: k.c, sensitivity: internal, reason: r}}\n  - {{op: changeSensitivity, itemId: k.d, sensitivity: public, reason: r}}\n  - {{op: changeOwner, itemId: k.e, owner: someone-else}}\n  - {{op: upsertRevision, itemId: k.f, revisionId: 01K1CCCCCC0000000000000096, contentFile: ../knowledge/k.f.md, contentSha256: {}, metadata: {meta}}}\n",
            sha(body),
            sha("F.\n")
        ),
    );
    let second = state_hash(&repo);
    commit_migration(&repo, M3, M2, "  - {op: restoreItem, itemId: k.b}\n");
    let third = state_hash(&repo);

    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let list = |args: Value| {
        let c = &c;
        async move {
            let mut full = json!({"projectId": "ranked"});
            if let (Some(f), Some(a)) = (full.as_object_mut(), args.as_object()) {
                f.extend(a.clone());
            }
            c.call("knowledge.listChanges", full).await
        }
    };

    let one = ok(
        &list(json!({"since": first, "snapshotId": second})).await,
        ToolId::KnowledgeListChanges,
    );
    assert_eq!(
        summary(&one),
        [
            "k.a revised []",
            "k.b withdrawn []",
            "k.c relabelled [\"sensitivity\"]",
            "k.d added []",
            "k.e relabelled [\"owner\"]",
            "k.f added []",
        ],
        "{one}"
    );
    let a = &one["changes"][0];
    assert_eq!(
        (&a["fromRevisionId"], &a["toRevisionId"], &a["migrationIds"]),
        (
            &json!("01K1CCCCCC0000000000000001"),
            &json!("01K1CCCCCC0000000000000091"),
            &json!([M2])
        )
    );
    // What d was before (its label, its revision) is not disclosed.
    assert_eq!(one["changes"][3]["fromRevisionId"], Value::Null);
    assert_eq!(
        (&one["since"], &one["stateHash"], &one["nextCursor"]),
        (&json!(first), &json!(second), &Value::Null)
    );

    // Withdrawn then restored: between the first and the current state, b did not change.
    let two = ok(
        &list(json!({"since": second})).await,
        ToolId::KnowledgeListChanges,
    );
    assert_eq!(summary(&two), ["k.b restored []"]);
    assert_eq!(two["changes"][0]["migrationIds"], json!([M3]));
    assert_eq!(two["stateHash"], third);
    let both = ok(
        &list(json!({"since": first})).await,
        ToolId::KnowledgeListChanges,
    );
    assert!(
        !summary(&both).iter().any(|s| s.starts_with("k.b")),
        "{both}"
    );
    let none = ok(
        &list(json!({"since": third})).await,
        ToolId::KnowledgeListChanges,
    );
    assert_eq!((&none["count"], &none["changes"]), (&json!(0), &json!([])));

    // Pages of two add up to the whole list.
    let mut paged = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = ok(
            &list(json!({"since": first, "snapshotId": second, "limit": 2, "cursor": cursor}))
                .await,
            ToolId::KnowledgeListChanges,
        );
        paged.extend(summary(&page));
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(paged, summary(&one));

    let unknown = refused(
        &list(json!({"since": "0".repeat(64)})).await,
        "SNAPSHOT_NOT_FOUND",
    );
    assert!(unknown.starts_with("At since:"), "{unknown}");
    let forged = refused(
        &list(json!({"since": first, "cursor": "../../x"})).await,
        "INVALID_INPUT",
    );
    assert!(
        forged.starts_with("At cursor:") && !forged.contains("../../x"),
        "{forged}"
    );
    daemon.shutdown().await;
}
