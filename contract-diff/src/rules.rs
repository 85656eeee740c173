//! The rules table: every kind of change the checker reports, and whether it widens or narrows
//! what a schema accepts. The direction of the schema turns that into a verdict: an input (or a
//! stored file) may widen, since every old caller's document still passes; a response may
//! narrow, since every new answer still passes the old client's check. docs/contract-evolution.md
//! prints this table (a test keeps it current).

use serde::Serialize;

/// What a change does to the set of documents a schema accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Accepts more than before.
    Widens,
    /// Accepts less than before.
    Narrows,
    /// Accepts some new documents and refuses some old ones, or the checker cannot tell.
    Both,
    /// Changes only what a schema says about itself.
    Annotation,
    /// Compatible whatever the direction (tool-level rules).
    Compatible,
    /// Breaking whatever the direction (tool-level rules).
    Breaking,
}

/// Which way documents flow through a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Written by callers, read by the daemon (tool inputs and the shared context).
    Input,
    /// Written by the daemon, validated by clients (tool responses).
    Response,
    /// Files already on disk that a newer build must still read (migrations, config, evidence).
    Stored,
    /// The tool set itself: names and intents.
    Tool,
}

/// The verdict on one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Some existing caller, client or stored file stops working.
    Breaking,
    /// Everything that worked still works.
    Compatible,
    /// Documentation only.
    Annotation,
}

impl Effect {
    /// The verdict of this effect on a schema read in `direction`.
    pub fn verdict(self, direction: Direction) -> Verdict {
        match (self, direction) {
            (Effect::Annotation, _) => Verdict::Annotation,
            (Effect::Compatible, _) => Verdict::Compatible,
            (Effect::Breaking | Effect::Both, _) => Verdict::Breaking,
            (Effect::Widens, Direction::Response) => Verdict::Breaking,
            (Effect::Narrows, Direction::Response) => Verdict::Compatible,
            (Effect::Widens, _) => Verdict::Compatible,
            (Effect::Narrows, _) => Verdict::Breaking,
        }
    }
}

impl Verdict {
    /// The spelling used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Breaking => "breaking",
            Verdict::Compatible => "compatible",
            Verdict::Annotation => "annotation",
        }
    }
}

impl Direction {
    /// The spelling used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Input => "input",
            Direction::Response => "response",
            Direction::Stored => "stored",
            Direction::Tool => "tool",
        }
    }
}

/// One kind of change.
#[derive(Debug)]
pub struct Rule {
    /// Stable id, as reports and the docs name it.
    pub id: &'static str,
    pub effect: Effect,
    /// What the change is, for the docs table.
    pub summary: &'static str,
}

macro_rules! rules {
    ($($konst:ident = $id:literal, $effect:ident, $summary:literal;)*) => {
        $(
            #[doc = $summary]
            pub const $konst: &Rule = &Rule { id: $id, effect: Effect::$effect, summary: $summary };
        )*
        /// Every rule, in the order the docs list them.
        pub const RULES: &[&Rule] = &[$($konst),*];
    };
}

rules! {
    TYPE_ADDED = "type-added", Widens, "A JSON type is newly allowed (`null` added to a key, `number` where only `integer` was).";
    TYPE_REMOVED = "type-removed", Narrows, "A JSON type is no longer allowed (`null` dropped, `integer` where `number` was).";
    ENUM_VALUE_ADDED = "enum-value-added", Widens, "A value joins an `enum` (or a `oneOf` of constants).";
    ENUM_VALUE_REMOVED = "enum-value-removed", Narrows, "A value leaves an `enum`, or a `const` changes.";
    ENUM_ADDED = "enum-added", Narrows, "A schema that took any value of its type now takes only listed ones (`enum` or `const` added).";
    ENUM_REMOVED = "enum-removed", Widens, "A value list is dropped: any value of the type is taken.";
    BOUND_TIGHTENED = "bound-tightened", Narrows, "A `max*` bound is lowered or added, or a `min*` bound raised or added.";
    BOUND_LOOSENED = "bound-loosened", Widens, "A `max*` bound is raised or dropped, or a `min*` bound lowered or dropped.";
    PATTERN_ADDED = "pattern-added", Narrows, "A `pattern` now constrains a string.";
    PATTERN_REMOVED = "pattern-removed", Widens, "A `pattern` is dropped.";
    PATTERN_CHANGED = "pattern-changed", Both, "A `pattern` is rewritten: whether it accepts the same strings cannot be decided in general.";
    FORMAT_ADDED = "format-added", Narrows, "A `format` is added (the seat asserts formats).";
    FORMAT_REMOVED = "format-removed", Widens, "A `format` is dropped.";
    FORMAT_CHANGED = "format-changed", Both, "A `format` is replaced by another.";
    PROPERTY_ADDED = "property-added", Widens, "A closed object admits a key it refused before.";
    PROPERTY_REMOVED = "property-removed", Narrows, "A closed object no longer admits a key.";
    PROPERTY_CONSTRAINED = "property-constrained", Narrows, "An open object gives a schema to a key (or to its other keys) it took unchecked before.";
    PROPERTY_UNCONSTRAINED = "property-unconstrained", Widens, "An open object drops a key's schema: the key is taken unchecked.";
    REQUIRED_ADDED = "required-added", Narrows, "A key becomes required.";
    REQUIRED_REMOVED = "required-removed", Widens, "A key stops being required (it may be left out).";
    OBJECT_CLOSED = "object-closed", Narrows, "An object is closed (`additionalProperties` or `unevaluatedProperties` false).";
    OBJECT_OPENED = "object-opened", Widens, "A closed object is opened to other keys.";
    DEPENDENCY_ADDED = "dependency-added", Narrows, "A `dependentRequired` rule now asks for a key.";
    DEPENDENCY_REMOVED = "dependency-removed", Widens, "A `dependentRequired` rule no longer asks for a key.";
    ITEMS_CONSTRAINED = "items-constrained", Narrows, "An array's items get a schema they did not have.";
    ITEMS_UNCONSTRAINED = "items-unconstrained", Widens, "An array's item schema is dropped.";
    UNIQUE_ITEMS_ADDED = "unique-items-added", Narrows, "An array must now hold distinct items.";
    UNIQUE_ITEMS_REMOVED = "unique-items-removed", Widens, "An array may now repeat items.";
    CONDITIONAL_ADDED = "conditional-added", Narrows, "An `if`/`then`/`else` rule is added, or gains a branch.";
    CONDITIONAL_REMOVED = "conditional-removed", Widens, "An `if`/`then`/`else` rule is dropped, or loses a branch.";
    ALTERNATIVE_ADDED = "alternative-added", Widens, "A `oneOf`/`anyOf` gains an alternative (matched by its discriminating constant).";
    ALTERNATIVE_REMOVED = "alternative-removed", Narrows, "A `oneOf`/`anyOf` loses an alternative.";
    UNDECIDABLE = "undecidable", Both, "A change the checker cannot decide (a construct it does not model, alternatives it cannot pair, a `$ref` to nothing): reported as breaking, never passed silently.";
    ANNOTATION_CHANGED = "annotation-changed", Annotation, "A description, title, example, default or `x-` annotation changed.";
    SCHEMA_ADDED = "schema-added", Compatible, "A schema file is added.";
    SCHEMA_REMOVED = "schema-removed", Breaking, "A stored-format or shared schema file is removed.";
    TOOL_ADDED = "tool-added", Compatible, "A tool is added.";
    TOOL_REMOVED = "tool-removed", Breaking, "A tool is removed.";
    TOOL_RENAMED = "tool-renamed", Breaking, "A tool's wire name (`x-theurian-tool`) changes.";
    TOOL_INTENT_RAISED = "tool-intent-raised", Breaking, "A read-only tool becomes write-intent (`x-theurian-intent`).";
    TOOL_INTENT_LOWERED = "tool-intent-lowered", Compatible, "A write-intent tool becomes read-only.";
}

/// The rules table as markdown: rule, what changed, and the verdict in each direction.
pub fn markdown_table() -> String {
    let mut out = String::from("| Rule | Change | Input, stored | Response |\n|---|---|---|---|\n");
    for rule in RULES {
        let (input, response) = match rule.effect {
            Effect::Annotation | Effect::Compatible | Effect::Breaking => {
                let v = rule.effect.verdict(Direction::Tool).as_str();
                (v, v)
            }
            e => (
                e.verdict(Direction::Input).as_str(),
                e.verdict(Direction::Response).as_str(),
            ),
        };
        out.push_str(&format!(
            "| `{}` | {} | {input} | {response} |\n",
            rule.id, rule.summary
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_turns_an_effect_into_its_verdict() {
        assert_eq!(
            Effect::Widens.verdict(Direction::Input),
            Verdict::Compatible
        );
        assert_eq!(
            Effect::Widens.verdict(Direction::Stored),
            Verdict::Compatible
        );
        assert_eq!(
            Effect::Widens.verdict(Direction::Response),
            Verdict::Breaking
        );
        assert_eq!(Effect::Narrows.verdict(Direction::Input), Verdict::Breaking);
        assert_eq!(
            Effect::Narrows.verdict(Direction::Response),
            Verdict::Compatible
        );
        assert_eq!(Effect::Both.verdict(Direction::Response), Verdict::Breaking);
        assert_eq!(
            Effect::Annotation.verdict(Direction::Input),
            Verdict::Annotation
        );
    }

    #[test]
    fn rule_ids_are_unique() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }
}
