//! The validation seat: every `tools/call` is checked against its tool's published input schema
//! on the raw arguments, before decoding and before any handler runs.
//!
//! A refusal names the key path and the rule that failed, never the value that failed it, in
//! the same shape a tool-body refusal has (`INVALID_INPUT`, not retryable). A size walk runs
//! first so a pathological request cannot make the validator itself expensive.

use crate::bundle::bundled;
use crate::refusal::quote_name;
use crate::tools::{ToolId, TOOLS};
use crate::Refusal;
use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use jsonschema::{Draft, Validator};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Deepest nesting accepted, counting the arguments object as level 1.
pub const MAX_NESTING: usize = 32;
/// Most values accepted: keys, values and array elements, plus the root.
pub const MAX_NODES: usize = 100_000;
/// Characters of content allowed beside the longest string an input schema admits (keys,
/// numbers and every other string of the call), in the size check before validation.
pub const ENVELOPE_CHARS: usize = 1024 * 1024;

/// Compiled validators for every tool's input schema, and for response schemas once asked.
///
/// Every call is checked against its input schema, so those compile when the seat is made.
/// Responses are checked only by tests; compiling them on first use keeps their validators
/// (about as much heap again as the inputs') out of the daemon.
pub struct Seat {
    inputs: HashMap<ToolId, Validator>,
    /// Most characters of content accepted, summed over every string, key and number: the
    /// longest string any input schema admits (its `maxLength`) plus [`ENVELOPE_CHARS`], so the
    /// size check never refuses what a schema allows.
    max_content_chars: usize,
    responses: HashMap<ToolId, OnceLock<Result<Validator, String>>>,
}

/// A schema under `schemas/` that does not compile: the build itself is broken.
#[derive(Debug)]
pub struct SeatError(pub String);

impl std::fmt::Display for SeatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the published schemas do not compile: {}", self.0)
    }
}

impl std::error::Error for SeatError {}

/// Compiles the schema file at `path` (under `schemas/`), bundled, as a Draft 2020-12
/// validator without format assertion.
pub fn compile(path: &str) -> Result<Validator, SeatError> {
    let schema = bundled(path).map_err(|e| SeatError(e.to_string()))?;
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(false)
        .build(&schema)
        .map_err(|e| SeatError(format!("{path}: {e}")))
}

impl Seat {
    /// Compiles every tool's input schema. Fails only if the embedded schema set is broken.
    pub fn new() -> Result<Self, SeatError> {
        let mut inputs = HashMap::new();
        let mut responses = HashMap::new();
        let mut longest = 0;
        for t in &TOOLS {
            inputs.insert(t.id, compile(t.input_schema)?);
            responses.insert(t.id, OnceLock::new());
            let schema = bundled(t.input_schema).map_err(|e| SeatError(e.to_string()))?;
            longest = longest.max(longest_string(&schema));
        }
        Ok(Seat {
            inputs,
            responses,
            max_content_chars: longest + ENVELOPE_CHARS,
        })
    }

    /// Most characters of content a call may carry (see the field's note).
    pub fn max_content_chars(&self) -> usize {
        self.max_content_chars
    }

    /// Resolves the tool a caller named, refusing a name this contract does not define.
    pub fn tool(&self, requested: &str) -> Result<ToolId, Refusal> {
        ToolId::from_wire_name(requested).ok_or_else(|| {
            Refusal::argument(
                "params/name",
                "this daemon serves no tool of that name, so nothing ran",
                "tools/list names every tool it serves; call one of those.",
            )
        })
    }

    /// Checks raw arguments against `tool`'s input schema.
    pub fn check_input(&self, tool: ToolId, arguments: &Value) -> Result<(), Refusal> {
        let name = tool.spec().name;
        check_size(name, arguments, self.max_content_chars)?;
        let Some(validator) = self.inputs.get(&tool) else {
            return Err(Refusal::not_served(name));
        };
        match first_error(validator, arguments) {
            None => Ok(()),
            Some((location, detail)) => Err(Refusal::invalid_input(format!(
                "{name}: the arguments do not fit this tool's input schema. At {location}: {detail}. \
                 The schema is this tool's inputSchema in tools/list; correct the arguments and call again."
            ))),
        }
    }

    /// Rewrites schema-valid whole numbers for decoding: JSON Schema counts `5.0` as an integer,
    /// and a number past the 64-bit range fits the schema but no Rust integer, so the first
    /// becomes `5` and the second is refused with its key path (never its value).
    pub fn whole_numbers(&self, tool: ToolId, arguments: Value) -> Result<Value, Refusal> {
        fn walk(v: Value, at: &mut Vec<String>, name: &str) -> Result<Value, Refusal> {
            match v {
                Value::Number(n) if n.is_i64() => Ok(Value::Number(n)),
                Value::Number(n) => {
                    let whole = n
                        .as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9.223_372_036_854_775e18);
                    match whole {
                        Some(f) => Ok(Value::from(f as i64)),
                        None if n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
                            Err(Refusal::invalid_input(format!(
                                "{name}: at {}, a whole number must lie between -9223372036854775808 and 9223372036854775807; nothing ran. Send a smaller number.",
                                location(at)
                            )))
                        }
                        None => Ok(Value::Number(n)),
                    }
                }
                Value::Array(items) => {
                    let mut out = Vec::with_capacity(items.len());
                    for (i, x) in items.into_iter().enumerate() {
                        at.push(i.to_string());
                        out.push(walk(x, at, name)?);
                        at.pop();
                    }
                    Ok(Value::Array(out))
                }
                Value::Object(map) => {
                    let mut out = serde_json::Map::with_capacity(map.len());
                    for (k, x) in map {
                        at.push(k.clone());
                        let x = walk(x, at, name)?;
                        at.pop();
                        out.insert(k, x);
                    }
                    Ok(Value::Object(out))
                }
                other => Ok(other),
            }
        }
        walk(arguments, &mut Vec::new(), tool.spec().name)
    }

    /// Checks a response against `tool`'s response schema; the error names the first failure.
    pub fn check_response(&self, tool: ToolId, response: &Value) -> Result<(), String> {
        let validator = self
            .responses
            .get(&tool)
            .ok_or_else(|| "no response schema".to_owned())?
            .get_or_init(|| compile(tool.spec().response_schema).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)?;
        match first_error(validator, response) {
            None => Ok(()),
            Some((location, detail)) => Err(format!(
                "{} response at {location}: {detail}",
                tool.spec().name
            )),
        }
    }
}

/// Walks the arguments once, refusing past the nesting, node or content bound.
/// The largest `maxLength` anywhere in `schema`.
fn longest_string(schema: &Value) -> usize {
    match schema {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("maxLength", Value::Number(n)) => n
                    .as_u64()
                    .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)),
                _ => longest_string(v),
            })
            .max()
            .unwrap_or(0),
        Value::Array(items) => items.iter().map(longest_string).max().unwrap_or(0),
        _ => 0,
    }
}

fn check_size(tool: &str, arguments: &Value, max_content_chars: usize) -> Result<(), Refusal> {
    let mut nodes = 0usize;
    let mut chars = 0usize;
    let mut stack = vec![(arguments, 1usize)];
    let refuse = |unit: &str, limit: usize| {
        Refusal::invalid_input(format!(
            "{tool}: the arguments hold more {unit} than the daemon validates ({limit}), so the call was \
             refused and nothing ran. Send a smaller request."
        ))
    };
    while let Some((value, depth)) = stack.pop() {
        nodes += 1;
        if depth > MAX_NESTING {
            return Err(refuse("levels of nesting", MAX_NESTING));
        }
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    nodes += 1;
                    chars += k.chars().count();
                    stack.push((v, depth + 1));
                }
            }
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            Value::String(s) => chars += s.chars().count(),
            Value::Number(n) => chars += n.to_string().len(),
            Value::Bool(_) | Value::Null => {}
        }
        if nodes > MAX_NODES {
            return Err(refuse("values", MAX_NODES));
        }
        if chars > max_content_chars {
            return Err(refuse("characters of content", max_content_chars));
        }
    }
    Ok(())
}

/// The violation to report, as (key path, rule): the deepest first, then by path and rule, so the answer is stable and
/// a nested fault wins over the root-level "unexpected key" it also causes.
pub fn first_error(validator: &Validator, instance: &Value) -> Option<(String, String)> {
    let mut errors: Vec<(Vec<String>, String, String)> = validator
        .iter_errors(instance)
        .map(|e| {
            let segments: Vec<String> = e
                .instance_path()
                .iter()
                .map(|s| match s {
                    LocationSegment::Property(p) => p.to_string(),
                    LocationSegment::Index(i) => i.to_string(),
                })
                .collect();
            (segments, e.kind().keyword().to_owned(), describe(e.kind()))
        })
        .collect();
    errors.sort_by(|a, b| {
        b.0.len()
            .cmp(&a.0.len())
            .then_with(|| a.0.cmp(&b.0))
            .then_with(|| a.1.cmp(&b.1))
    });
    let (segments, _, detail) = errors.into_iter().next()?;
    Some((location(&segments), detail))
}

fn location(segments: &[String]) -> String {
    if segments.is_empty() {
        return "<root>".to_owned();
    }
    crate::refusal::bounded(&segments.join("/"))
}

fn keys(list: &[String]) -> String {
    let mut sorted: Vec<&String> = list.iter().collect();
    sorted.sort();
    sorted
        .iter()
        .map(|k| quote_name(k))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Says which rule failed in terms of the schema alone; the instance never appears.
fn describe(kind: &ValidationErrorKind) -> String {
    use ValidationErrorKind as K;
    match kind {
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            let noun = if unexpected.len() == 1 { "key" } else { "keys" };
            format!("this tool accepts no {noun} {}", keys(unexpected))
        }
        K::Required { property } => format!(
            "the required key {} is missing",
            quote_name(property.as_str().unwrap_or_default())
        ),
        K::Type { kind } => {
            let names: Vec<String> = match kind {
                jsonschema::error::TypeKind::Single(t) => vec![t.to_string()],
                jsonschema::error::TypeKind::Multiple(set) => {
                    set.iter().map(|t| t.to_string()).collect()
                }
            };
            format!("must be of type {} ('type')", names.join(" or "))
        }
        K::MaxLength { limit } => {
            format!("longer than the {limit} characters allowed ('maxLength')")
        }
        K::MinLength { limit } => {
            format!("shorter than the {limit} characters required ('minLength')")
        }
        K::Pattern { pattern } => format!("does not match the pattern {pattern} ('pattern')"),
        K::Enum { options } => format!("is not one of {options} ('enum')"),
        K::Constant { expected_value } => format!("must be exactly {expected_value} ('const')"),
        K::Minimum { limit } => format!("is below the minimum {limit} ('minimum')"),
        K::Maximum { limit } => format!("is above the maximum {limit} ('maximum')"),
        K::ExclusiveMinimum { limit } => {
            format!("must be greater than {limit} ('exclusiveMinimum')")
        }
        K::ExclusiveMaximum { limit } => format!("must be less than {limit} ('exclusiveMaximum')"),
        K::MaxItems { limit } => format!("holds more than {limit} items ('maxItems')"),
        K::MinItems { limit } => format!("holds fewer than {limit} items ('minItems')"),
        K::MaxProperties { limit } => format!("holds more than {limit} keys ('maxProperties')"),
        K::MinProperties { limit } => format!("holds fewer than {limit} keys ('minProperties')"),
        K::FalseSchema => {
            "is not allowed in this case (the schema forbids the key here)".to_owned()
        }
        other => format!("does not satisfy the schema's '{}' rule", other.keyword()),
    }
}
