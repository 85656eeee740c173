//! The plugin/Core compatibility gate behind `theurian compat check`.
//!
//! A client plugin declares the Core range and wire protocol it works with
//! (`schemas/protocol/compatibility.schema.json`); Core decides, so no plugin has to carry its own
//! Semantic Versioning comparison. The decision never changes anything on the machine: a mismatch
//! is reported with what to do about it, and the caller stops.

use crate::yaml;
use serde_json::{json, Value};
use std::cmp::Ordering;
use std::path::Path;
use std::sync::LazyLock;
use theurian_protocol::bounded;
use theurian_protocol::protocol::{CompatVerdict, CompatVerdictOutcome, Compatibility};

/// The schema a declaration satisfies.
pub const DECLARATION_SCHEMA: &str = "protocol/compatibility.schema.json";

/// The largest declaration file read; a real one is a few hundred bytes.
pub const MAX_DECLARATION_BYTES: u64 = 64 * 1024;

static VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> = LazyLock::new(|| {
    theurian_protocol::seat::compile(DECLARATION_SCHEMA).map_err(|e| e.to_string())
});

/// Why a declaration cannot be used. The text names the key path and the rule, never more of
/// the declared value than a bounded quote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DeclarationError(pub String);

/// What to do about an unusable declaration.
pub const DECLARATION_CURE: &str = "Give the plugin's declaration as the schema protocol/compatibility.schema.json describes it: `pluginVersion`, `coreCompatibility.minimum` and `coreCompatibility.maximumExclusive` as Semantic Versioning versions with the maximum above the minimum, and `protocolVersion` as `theurian/v<N>`.";

/// A declaration that passed its schema, with its range parsed for comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    /// The declaration as given.
    pub raw: Compatibility,
    minimum: semver::Version,
    maximum_exclusive: semver::Version,
}

/// Checks a declaration against the schema and the one rule a schema cannot state (the range
/// is not empty), and decodes it.
pub fn declaration(value: Value) -> Result<Declaration, DeclarationError> {
    let validator = VALIDATOR.as_ref().map_err(|e| {
        DeclarationError(format!("The compatibility schema does not compile ({e})."))
    })?;
    if let Some((at, rule)) = theurian_protocol::seat::first_error(validator, &value) {
        // The schema's version pattern is long and unreadable; say what it means instead.
        let rule = if !rule.contains("('pattern')") {
            rule
        } else if at == "protocolVersion" {
            "must be `theurian/v` followed by a positive whole number, such as theurian/v1"
                .to_owned()
        } else {
            "must be a Semantic Versioning version, such as 1.4.0 or 0.2.0-rc.1".to_owned()
        };
        return Err(DeclarationError(format!(
            "The compatibility declaration is not valid at {at}: {rule}."
        )));
    }
    let raw: Compatibility = serde_json::from_value(value).map_err(|e| {
        DeclarationError(format!(
            "The compatibility declaration passed its schema but could not be decoded ({e})."
        ))
    })?;
    let minimum = parse(&raw.core_compatibility.minimum, "coreCompatibility/minimum")?;
    let maximum_exclusive = parse(
        &raw.core_compatibility.maximum_exclusive,
        "coreCompatibility/maximumExclusive",
    )?;
    parse(&raw.plugin_version, "pluginVersion")?;
    if maximum_exclusive.cmp_precedence(&minimum) != Ordering::Greater {
        return Err(DeclarationError(format!(
            "The compatibility declaration is not valid at coreCompatibility/maximumExclusive: \
             {} must be above the minimum {}, or no Core version fits the range.",
            quote(&raw.core_compatibility.maximum_exclusive),
            quote(&raw.core_compatibility.minimum),
        )));
    }
    Ok(Declaration {
        raw,
        minimum,
        maximum_exclusive,
    })
}

/// The declaration from the four values given on the command line.
pub fn from_values(
    plugin_version: &str,
    minimum: &str,
    maximum_exclusive: &str,
    protocol_version: &str,
) -> Result<Declaration, DeclarationError> {
    declaration(json!({
        "pluginVersion": plugin_version,
        "coreCompatibility": {"minimum": minimum, "maximumExclusive": maximum_exclusive},
        "protocolVersion": protocol_version,
    }))
}

/// The declaration in a file, JSON or YAML (a plugin ships either).
pub fn from_file(path: &Path) -> Result<Declaration, DeclarationError> {
    let shown = path.display();
    let unreadable = |e: std::io::Error| {
        DeclarationError(format!("The declaration {shown} cannot be read: {e}."))
    };
    let size = std::fs::metadata(path).map_err(unreadable)?.len();
    if size > MAX_DECLARATION_BYTES {
        return Err(DeclarationError(format!(
            "The declaration {shown} is {size} bytes; a compatibility declaration is at most \
             {MAX_DECLARATION_BYTES} bytes."
        )));
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| DeclarationError(format!("The declaration {shown} is not UTF-8 text.")))?;
    let value = yaml::parse(&text).map_err(|yaml::YamlError(why)| {
        DeclarationError(format!(
            "The declaration {shown} is neither JSON nor YAML: {why}."
        ))
    })?;
    declaration(value)
}

fn parse(text: &str, at: &str) -> Result<semver::Version, DeclarationError> {
    semver::Version::parse(text).map_err(|e| {
        DeclarationError(format!(
            "The compatibility declaration is not valid at {at}: {} is not a Semantic \
             Versioning version ({e}).",
            quote(text)
        ))
    })
}

fn quote(text: &str) -> String {
    format!("`{}`", bounded(text))
}

/// Decides whether a plugin with `decl` may work with a Core of `core` speaking
/// `core_protocol`. Ordering is Semantic Versioning precedence (build metadata is ignored, a
/// pre-release sorts before its release). The range is checked before the protocol: a Core
/// outside the range needs a different release whatever it speaks, the more useful thing to say.
pub fn resolve(decl: &Declaration, core: &semver::Version, core_protocol: &str) -> CompatVerdict {
    let raw = &decl.raw;
    let plugin = bounded(&raw.plugin_version);
    let range = format!(
        ">= {}, < {}",
        bounded(&raw.core_compatibility.minimum),
        bounded(&raw.core_compatibility.maximum_exclusive)
    );
    let (outcome, message, remedy) = if core.cmp_precedence(&decl.minimum) == Ordering::Less {
        (
            CompatVerdictOutcome::CoreTooOld,
            format!("Theurian Core {core} is older than plugin {plugin} supports ({range})."),
            format!(
                "Install a Theurian Core release in {range} the way you installed this one, then \
                 start a new session. Nothing was changed."
            ),
        )
    } else if core.cmp_precedence(&decl.maximum_exclusive) != Ordering::Less {
        (
            CompatVerdictOutcome::CoreTooNew,
            format!("Theurian Core {core} is newer than plugin {plugin} supports ({range})."),
            "Update the plugin to a release that supports this Core (in Claude Code: \
             `/plugin update theurian`). Core was not changed."
                .to_owned(),
        )
    } else if raw.protocol_version.as_str() != core_protocol {
        (
            CompatVerdictOutcome::ProtocolMismatch,
            format!(
                "The plugin speaks {}, but this Core speaks {core_protocol}.",
                bounded(&raw.protocol_version)
            ),
            "Install a plugin and Core pair that speak the same protocol version; neither side \
             falls back to the other's."
                .to_owned(),
        )
    } else {
        (
            CompatVerdictOutcome::Compatible,
            format!("Plugin {plugin} works with Theurian Core {core} ({core_protocol})."),
            String::new(),
        )
    };
    CompatVerdict {
        compatible: outcome == CompatVerdictOutcome::Compatible,
        outcome,
        message,
        remedy,
        plugin_version: Some(raw.plugin_version.to_string()),
        core_version: core.to_string(),
        protocol_version: core_protocol.to_owned(),
    }
}

/// The verdict for a declaration that could not be read: nothing was compared.
pub fn invalid(
    err: &DeclarationError,
    core: &semver::Version,
    core_protocol: &str,
) -> CompatVerdict {
    CompatVerdict {
        outcome: CompatVerdictOutcome::InvalidDeclaration,
        compatible: false,
        message: err.0.clone(),
        remedy: DECLARATION_CURE.to_owned(),
        plugin_version: None,
        core_version: core.to_string(),
        protocol_version: core_protocol.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(min: &str, max: &str, protocol: &str) -> Declaration {
        match from_values("1.2.3", min, max, protocol) {
            Ok(d) => d,
            Err(e) => panic!("declaration refused: {e}"),
        }
    }

    fn core(v: &str) -> semver::Version {
        semver::Version::parse(v).expect("test version")
    }

    fn outcome(min: &str, max: &str, protocol: &str, at: &str) -> CompatVerdictOutcome {
        resolve(&decl(min, max, protocol), &core(at), "theurian/v1").outcome
    }

    #[test]
    fn the_range_is_half_open() {
        use CompatVerdictOutcome::*;
        assert_eq!(
            outcome("0.1.0", "0.2.0", "theurian/v1", "0.1.0"),
            Compatible
        );
        assert_eq!(
            outcome("0.1.0", "0.2.0", "theurian/v1", "0.1.9"),
            Compatible
        );
        assert_eq!(
            outcome("0.1.0", "0.2.0", "theurian/v1", "0.2.0"),
            CoreTooNew
        );
        assert_eq!(
            outcome("0.1.1", "0.2.0", "theurian/v1", "0.1.0"),
            CoreTooOld
        );
    }

    #[test]
    fn precedence_is_semver_precedence() {
        use CompatVerdictOutcome::*;
        // A pre-release sorts before its release, numerically within identifiers.
        assert_eq!(
            outcome("0.2.0", "0.3.0", "theurian/v1", "0.2.0-dev.1"),
            CoreTooOld
        );
        assert_eq!(
            outcome("0.2.0-dev.2", "0.3.0", "theurian/v1", "0.2.0-dev.10"),
            Compatible
        );
        assert_eq!(
            outcome("0.1.0", "0.2.0-alpha", "theurian/v1", "0.2.0-alpha.1"),
            CoreTooNew
        );
        // Build metadata takes no part.
        assert_eq!(
            outcome("0.1.0+a", "0.2.0", "theurian/v1", "0.1.0+zzz"),
            Compatible
        );
    }

    #[test]
    fn the_protocol_must_match_exactly() {
        let verdict = resolve(
            &decl("0.1.0", "0.2.0", "theurian/v2"),
            &core("0.1.0"),
            "theurian/v1",
        );
        assert_eq!(verdict.outcome, CompatVerdictOutcome::ProtocolMismatch);
        assert!(!verdict.compatible);
        assert!(
            verdict.message.contains("theurian/v2"),
            "{}",
            verdict.message
        );
        assert_eq!(verdict.protocol_version, "theurian/v1");
    }

    #[test]
    fn a_core_outside_the_range_is_reported_before_the_protocol() {
        assert_eq!(
            outcome("0.3.0", "0.4.0", "theurian/v9", "0.1.0"),
            CompatVerdictOutcome::CoreTooOld
        );
    }

    #[test]
    fn unusable_declarations_name_the_key_and_stay_bounded() {
        let err = from_values("1.0.0", "0.2.0", "0.2.0", "theurian/v1").unwrap_err();
        assert!(
            err.0.contains("coreCompatibility/maximumExclusive"),
            "{err}"
        );
        let err = from_values("1.0.0", "0.1", "0.2.0", "theurian/v1").unwrap_err();
        assert!(err.0.contains("coreCompatibility/minimum"), "{err}");
        let err = from_values("1.0.0", "0.1.0", "0.2.0", "theurian/v0").unwrap_err();
        assert!(err.0.contains("protocolVersion"), "{err}");
        let err = declaration(json!({"pluginVersion": "1.0.0"})).unwrap_err();
        assert!(err.0.contains("coreCompatibility"), "{err}");
        let long = format!("1.0.0-{}", "a".repeat(5_000));
        let err = from_values("1.0.0", &long, "0.0.1", "theurian/v1").unwrap_err();
        assert!(
            err.0.len() < 1_000,
            "the refusal echoed the value: {} chars",
            err.0.len()
        );
    }

    #[test]
    fn a_declaration_file_may_be_yaml_or_json() {
        let dir = std::env::temp_dir().join(format!("theurian-compat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let yaml = dir.join("compatibility.yaml");
        std::fs::write(
            &yaml,
            "pluginVersion: 0.4.0\ncoreCompatibility:\n  minimum: 0.1.0\n  maximumExclusive: 0.2.0\nprotocolVersion: theurian/v1\n",
        )
        .expect("write");
        let json_file = dir.join("compatibility.json");
        std::fs::write(
            &json_file,
            r#"{"pluginVersion":"0.4.0","coreCompatibility":{"minimum":"0.1.0","maximumExclusive":"0.2.0"},"protocolVersion":"theurian/v1"}"#,
        )
        .expect("write");
        let a = from_file(&yaml).expect("yaml declaration");
        let b = from_file(&json_file).expect("json declaration");
        assert_eq!(a, b);
        let missing = from_file(&dir.join("absent.yaml")).unwrap_err();
        assert!(missing.0.contains("absent.yaml"), "{missing}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
