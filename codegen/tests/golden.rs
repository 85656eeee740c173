//! Golden tests of the generator, one small schema tree per feature under `tests/golden/`, each
//! with the Rust (`expected.rs`) and TypeScript (`expected.ts`) it must generate. They run with
//! the generator alone (`cargo test -p theurian-codegen`), and a change to the generator shows
//! its effect on a few dozen lines per feature instead of on the whole contract.
//!
//! `THEURIAN_BLESS=1 cargo test -p theurian-codegen` rewrites the expected files from what the
//! generator now writes; review the diff before committing it.
//!
//! | fixture | what it pins |
//! |---|---|
//! | `tool_table` | the tool table, generated key usage (a read-only tool leaves the agent labels unread, a write-intent one reads them), each project-scoped tool's own arguments and the `split` that parts them from the shared context, the handler trait with the context opener and pre-open checks for project-scoped tools only, dispatch, and the `tool_handlers!` and `with_tools!` macros |
//! | `cross_group_ref` | a `$ref` into another schema group's `$defs` uses that group's type (one type per concept); the shared context folded into a closed input |
//! | `nullable_and_enums` | a required key that may be null, an optional nullable key, a nullable `oneOf`, and string enums with their `VALUES`, `ALL` and `as_str` |

use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compares `actual` with the file `expected`, or rewrites it under `THEURIAN_BLESS=1`.
fn check(expected: &Path, actual: &str) {
    if std::env::var_os("THEURIAN_BLESS").is_some() {
        std::fs::write(expected, actual).expect("bless");
        return;
    }
    let want = std::fs::read_to_string(expected).unwrap_or_default();
    if want != actual {
        let first = want
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| want.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from what the generator writes (first at line {}). Review the change, then run `THEURIAN_BLESS=1 cargo test -p theurian-codegen` to accept it.",
            expected.display(),
            first + 1
        );
    }
}

fn golden(name: &str) {
    let dir = fixture(name);
    let schemas = dir.join("schemas");
    let rust = theurian_codegen::generate(&schemas, &format!("tests/golden/{name}/schemas"))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    check(&dir.join("expected.rs"), &rust);
    let ts = theurian_codegen::typescript(&schemas).unwrap_or_else(|e| panic!("{name}: {e}"));
    check(&dir.join("expected.ts"), &ts);
}

#[test]
fn the_tool_table_trait_dispatch_and_macros() {
    golden("tool_table");
}

#[test]
fn a_cross_group_ref_uses_the_owning_groups_type() {
    golden("cross_group_ref");
    let rust =
        std::fs::read_to_string(fixture("cross_group_ref").join("expected.rs")).expect("expected");
    assert!(
        rust.contains("pub sensitivity: crate::migration::Sensitivity"),
        "the response names the migration group's type"
    );
    assert_eq!(
        rust.matches("pub enum Sensitivity").count(),
        1,
        "one type for the concept"
    );
}

#[test]
fn nullable_keys_and_enum_value_lists() {
    golden("nullable_and_enums");
    let rust = std::fs::read_to_string(fixture("nullable_and_enums").join("expected.rs"))
        .expect("expected");
    assert!(rust.contains("pub const VALUES"), "enums list their values");
}

#[test]
fn a_contract_without_project_scoped_tools_has_no_project_opener() {
    let rust = std::fs::read_to_string(fixture("nullable_and_enums").join("expected.rs"))
        .expect("expected");
    assert!(!rust.contains("fn open_project"));
    let tools =
        std::fs::read_to_string(fixture("tool_table").join("expected.rs")).expect("expected");
    assert!(tools.contains("fn open_project"));
    assert!(
        tools.contains("fn check_item_get"),
        "a scoped tool has a pre-open check"
    );
    assert!(
        !tools.contains("fn check_system_ping"),
        "an unscoped tool has none"
    );
    assert!(
        tools.contains("pub fn split(self) -> (ToolContext, ItemGetArgs)"),
        "a scoped tool's input parts into the context and its own arguments"
    );
    assert!(
        !tools.contains("SystemPingArgs"),
        "an unscoped tool keeps its input whole"
    );
}

#[test]
fn a_scoped_tool_missing_part_of_the_shared_context_is_refused_by_name() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("golden-partial-context");
    let _ = std::fs::remove_dir_all(&dir);
    let from = fixture("tool_table").join("schemas");
    for group in ["mcp", "protocol"] {
        std::fs::create_dir_all(dir.join(group)).expect("mkdir");
        for entry in std::fs::read_dir(from.join(group)).expect("fixture") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), dir.join(group).join(entry.file_name())).expect("copy");
        }
    }
    // item.get names the project and the pin itself instead of including the whole context.
    let input = dir.join("mcp/item-get-input.schema.json");
    let mut schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&input).expect("read")).expect("json");
    schema.as_object_mut().expect("object").remove("allOf");
    schema["properties"]["projectId"] = serde_json::json!({"type": "string"});
    schema["properties"]["snapshotId"] = serde_json::json!({"type": "string"});
    std::fs::write(&input, schema.to_string()).expect("write");
    let err = theurian_codegen::generate(&dir, "golden-partial-context")
        .expect_err("a scoped tool needs the whole context");
    let message = err.to_string();
    assert!(message.contains("item.get"), "{message}");
    assert!(
        message.contains("agent_id") || message.contains("task_id"),
        "{message}"
    );
}
