//! For every registered tool, the keys the schema admits (context included), the fields of the
//! generated input type, and the generated key usage (every key read, but the agent labels a
//! read-only tool leaves unread, each with why) agree. The handler's side is held by the
//! compiler: the seam splits a project-scoped input into the shared context, which the opener
//! destructures exhaustively, and the tool's own arguments, which its handler destructures
//! exhaustively, so a key added to a schema does not compile until the code that owns it binds
//! it or ignores it by name.

use std::collections::BTreeSet;
use theurian_protocol::tools::{registered, ToolHandlers, TOOLS};
use theurian_server::tools::Handlers;

#[test]
fn schema_keys_generated_fields_and_handler_declarations_agree() {
    for spec in registered::<Handlers>() {
        let usage = Handlers::key_usage(spec.id).expect("registered tools declare their keys");
        let schema: BTreeSet<&str> = spec.schema_keys.iter().copied().collect();
        let fields: BTreeSet<&str> = spec.input_fields.iter().copied().collect();
        let read: BTreeSet<&str> = usage.read.iter().copied().collect();
        let unread: BTreeSet<&str> = usage.unread.iter().map(|(k, _)| *k).collect();
        assert!(
            read.is_disjoint(&unread),
            "{}: a key is declared both read and unread",
            spec.name
        );
        let declared: BTreeSet<&str> = read.union(&unread).copied().collect();
        assert_eq!(
            schema, fields,
            "{}: schema keys vs generated input fields",
            spec.name
        );
        assert_eq!(
            schema, declared,
            "{}: schema keys vs what the handler declares",
            spec.name
        );
        for (key, why) in usage.unread {
            assert!(
                !why.trim().is_empty(),
                "{}: unread key {key} needs a reason",
                spec.name
            );
        }
    }
}

#[test]
fn every_project_scoped_tool_admits_the_shared_context() {
    for spec in &TOOLS {
        if spec.schema_keys.is_empty() {
            continue;
        }
        for key in ["projectId", "snapshotId", "agentId", "taskId"] {
            assert!(
                spec.schema_keys.contains(&key),
                "{} does not admit {key}",
                spec.name
            );
        }
        let schema: BTreeSet<&str> = spec.schema_keys.iter().copied().collect();
        let fields: BTreeSet<&str> = spec.input_fields.iter().copied().collect();
        assert_eq!(
            schema, fields,
            "{}: generated fields differ from schema keys",
            spec.name
        );
    }
}
