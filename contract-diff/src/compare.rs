//! Two shapes of the same schema position, old and new, turned into findings: one per kind of
//! change, at the place in the schemas where it is written, each carrying its rule. Whether a
//! finding breaks anyone is decided later, from the direction of the schema it was reached from.

use super::rules::{self, Rule};
use super::shape::{canonical, expand, shape_of, value_type, Part, Shape, Types, UPPER_BOUNDS};
use super::tree::{Loc, SchemaTree};
use std::collections::{BTreeMap, BTreeSet};

/// How deep property nesting is followed (the shape builder guards `$ref` cycles itself).
const MAX_NESTING: usize = 64;

/// One change, before a direction gives it a verdict.
#[derive(Debug, Clone)]
pub struct Finding {
    pub rule: &'static Rule,
    pub loc: Loc,
    pub message: String,
}

/// Shape pairs one comparison may compare; past it the rest is reported undecidable.
const MAX_STEPS: usize = 50_000;

/// The places of one side's parts: what a pair of positions is remembered by.
type Places = Vec<Loc>;

/// Compares shapes; holds both trees so nested parts can be read on demand.
pub struct Comparer<'a> {
    pub old: &'a SchemaTree,
    pub new: &'a SchemaTree,
    pub findings: Vec<Finding>,
    /// Pairs of positions already compared. A pair met again (a definition reached through
    /// two properties, a recursive type) gives the same findings at the same places, so it is
    /// compared once: the walk stays linear in the pairs, however the references fan out.
    compared: BTreeSet<(Places, Places)>,
    steps: usize,
    /// Whether the overrun has been reported (once per comparison).
    overrun: bool,
}

/// Where a finding about `new`/`old` is reported: the new side when it is written there.
fn place(new: &Shape<'_>, old: &Shape<'_>) -> Loc {
    new.loc
        .clone()
        .or_else(|| old.loc.clone())
        .unwrap_or_else(|| Loc::root(""))
}

fn show_types(t: &Types) -> String {
    let shown: Vec<&str> = t
        .iter()
        .copied()
        .filter(|x| !(*x == "integer" && t.contains("number")))
        .collect();
    if shown.is_empty() {
        "nothing".into()
    } else {
        shown.join(", ")
    }
}

fn show_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

impl<'a> Comparer<'a> {
    pub fn new(old: &'a SchemaTree, new: &'a SchemaTree) -> Self {
        Comparer {
            old,
            new,
            findings: Vec::new(),
            compared: BTreeSet::new(),
            steps: 0,
            overrun: false,
        }
    }

    fn report(&mut self, rule: &'static Rule, loc: Loc, message: String) {
        self.findings.push(Finding { rule, loc, message });
    }

    /// Compares the shapes of two lists of parts.
    pub fn parts(&mut self, old: &[Part<'a>], new: &[Part<'a>], depth: usize) {
        let places = |parts: &[Part<'a>]| parts.iter().map(|p| p.loc.clone()).collect();
        if !self.compared.insert((places(old), places(new))) {
            return;
        }
        let old_shape = shape_of(self.old, old);
        let new_shape = shape_of(self.new, new);
        self.shapes(&old_shape, &new_shape, depth);
    }

    /// Compares two shapes of one position.
    pub fn shapes(&mut self, old: &Shape<'a>, new: &Shape<'a>, depth: usize) {
        let at = place(new, old);
        self.steps += 1;
        if self.steps > MAX_STEPS || self.old.work.exhausted() || self.new.work.exhausted() {
            if !self.overrun {
                self.overrun = true;
                self.report(
                    rules::UNDECIDABLE,
                    at,
                    "the schemas are too large or too tangled to compare within the checker's work budget; from here on nothing was compared".into(),
                );
            }
            return;
        }
        if depth > MAX_NESTING {
            self.report(
                rules::UNDECIDABLE,
                at,
                "nested deeper than the checker follows".into(),
            );
            return;
        }
        self.unreadable(old, new);
        self.types(old, new, &at);
        self.values(old, new, &at);
        self.bounds(old, new);
        self.patterns(old, new);
        self.format(old, new);
        self.objects(old, new, &at, depth);
        self.arrays(old, new, depth);
        self.conditionals(old, new, depth);
        self.alternatives(old, new, &at, depth);
        self.opaque(old, new);
        self.annotations(old, new);
    }

    fn unreadable(&mut self, old: &Shape<'a>, new: &Shape<'a>) {
        let before: BTreeSet<&String> = old.unreadable.iter().map(|(m, _)| m).collect();
        for (message, loc) in &new.unreadable {
            if !before.contains(message) {
                self.report(rules::UNDECIDABLE, loc.clone(), message.clone());
            }
        }
    }

    fn types(&mut self, old: &Shape<'a>, new: &Shape<'a>, at: &Loc) {
        let loc = new.types_at.clone().unwrap_or_else(|| at.clone());
        match (&effective_types(old), &effective_types(new)) {
            (None, None) => {}
            (None, Some(n)) => self.report(
                rules::TYPE_REMOVED,
                loc,
                format!("any JSON type was allowed; now only {}", show_types(n)),
            ),
            (Some(o), None) => self.report(
                rules::TYPE_ADDED,
                old.types_at.clone().unwrap_or(loc),
                format!("only {} was allowed; now any JSON type", show_types(o)),
            ),
            (Some(o), Some(n)) => {
                let added: Types = n.difference(o).copied().collect();
                let removed: Types = o.difference(n).copied().collect();
                if !added.is_empty() {
                    self.report(
                        rules::TYPE_ADDED,
                        loc.clone(),
                        format!("now also allows {}", show_types(&added)),
                    );
                }
                if !removed.is_empty() {
                    self.report(
                        rules::TYPE_REMOVED,
                        loc,
                        format!("no longer allows {}", show_types(&removed)),
                    );
                }
            }
        }
    }

    fn values(&mut self, old: &Shape<'a>, new: &Shape<'a>, at: &Loc) {
        let loc = new.values_at.clone().unwrap_or_else(|| at.clone());
        match (&old.values, &new.values) {
            (None, None) => {}
            (None, Some(n)) => self.report(
                rules::ENUM_ADDED,
                loc,
                format!("now limited to {} listed value(s)", n.len()),
            ),
            (Some(o), None) => self.report(
                rules::ENUM_REMOVED,
                old.values_at.clone().unwrap_or(loc),
                format!(
                    "was limited to {} listed value(s); now any value of its type",
                    o.len()
                ),
            ),
            (Some(o), Some(n)) => {
                let added: Vec<&String> = n.difference(o).collect();
                let removed: Vec<&String> = o.difference(n).collect();
                if !added.is_empty() {
                    self.report(
                        rules::ENUM_VALUE_ADDED,
                        loc.clone(),
                        format!("new value(s) {}", join(&added)),
                    );
                }
                if !removed.is_empty() {
                    self.report(
                        rules::ENUM_VALUE_REMOVED,
                        loc,
                        format!("value(s) {} no longer allowed", join(&removed)),
                    );
                }
            }
        }
    }

    fn bounds(&mut self, old: &Shape<'a>, new: &Shape<'a>) {
        let keywords: BTreeSet<&&str> = old.bounds.keys().chain(new.bounds.keys()).collect();
        for keyword in keywords {
            let upper = UPPER_BOUNDS.contains(keyword);
            match (old.bounds.get(*keyword), new.bounds.get(*keyword)) {
                (None, Some((n, loc))) => self.report(
                    rules::BOUND_TIGHTENED,
                    loc.clone(),
                    format!("`{keyword}` {} added", show_number(*n)),
                ),
                (Some((o, loc)), None) => self.report(
                    rules::BOUND_LOOSENED,
                    loc.clone(),
                    format!("`{keyword}` {} dropped", show_number(*o)),
                ),
                (Some((o, _)), Some((n, loc))) if o != n => {
                    let tighter = if upper { n < o } else { n > o };
                    let rule = if tighter {
                        rules::BOUND_TIGHTENED
                    } else {
                        rules::BOUND_LOOSENED
                    };
                    self.report(
                        rule,
                        loc.clone(),
                        format!("`{keyword}` {} → {}", show_number(*o), show_number(*n)),
                    );
                }
                _ => {}
            }
        }
    }

    fn patterns(&mut self, old: &Shape<'a>, new: &Shape<'a>) {
        let added: Vec<(&String, &Loc)> = new
            .patterns
            .iter()
            .filter(|(p, _)| !old.patterns.contains_key(*p))
            .collect();
        let removed: Vec<(&String, &Loc)> = old
            .patterns
            .iter()
            .filter(|(p, _)| !new.patterns.contains_key(*p))
            .collect();
        if added.len() == 1 && removed.len() == 1 {
            self.report(
                rules::PATTERN_CHANGED,
                added[0].1.clone(),
                format!("`pattern` {:?} → {:?}", removed[0].0, added[0].0),
            );
            return;
        }
        for (p, loc) in added {
            self.report(
                rules::PATTERN_ADDED,
                loc.clone(),
                format!("`pattern` {p:?} added"),
            );
        }
        // A dropped keyword is reported where the old schemas wrote it.
        for (p, loc) in removed {
            self.report(
                rules::PATTERN_REMOVED,
                loc.clone(),
                format!("`pattern` {p:?} dropped"),
            );
        }
    }

    fn format(&mut self, old: &Shape<'a>, new: &Shape<'a>) {
        match (&old.format, &new.format) {
            (None, Some((f, loc))) => self.report(
                rules::FORMAT_ADDED,
                loc.clone(),
                format!("`format` {f:?} added"),
            ),
            (Some((f, loc)), None) => self.report(
                rules::FORMAT_REMOVED,
                loc.clone(),
                format!("`format` {f:?} dropped"),
            ),
            (Some((o, _)), Some((n, loc))) if o != n => self.report(
                rules::FORMAT_CHANGED,
                loc.clone(),
                format!("`format` {o:?} → {n:?}"),
            ),
            _ => {}
        }
    }

    fn objects(&mut self, old: &Shape<'a>, new: &Shape<'a>, at: &Loc, depth: usize) {
        match (&old.allowed, &new.allowed) {
            (None, Some(a)) => self.report(
                rules::OBJECT_CLOSED,
                a.at.clone().unwrap_or_else(|| at.clone()),
                "the object no longer takes keys it does not list".into(),
            ),
            (Some(_), None) => self.report(
                rules::OBJECT_OPENED,
                at.clone(),
                "the object now takes keys it does not list".into(),
            ),
            _ => {}
        }
        let mut names: BTreeSet<&String> = old.properties.keys().collect();
        names.extend(new.properties.keys());
        for a in old.allowed.iter().chain(&new.allowed) {
            names.extend(a.names.iter());
        }
        for name in names {
            self.property(old, new, name, at, depth);
        }
        self.pattern_properties(old, new, at, depth);
        match (old.additional.is_empty(), new.additional.is_empty()) {
            (false, false) => self.parts(&old.additional, &new.additional, depth + 1),
            (true, false) if old.allowed.is_none() => self.report(
                rules::PROPERTY_CONSTRAINED,
                new.additional[0].loc.clone(),
                "keys the object does not list now have a schema".into(),
            ),
            (false, true) if new.allowed.is_none() => self.report(
                rules::PROPERTY_UNCONSTRAINED,
                old.additional[0].loc.clone(),
                "keys the object does not list are no longer checked".into(),
            ),
            _ => {}
        }
        let required_old: BTreeSet<&String> = old.required.keys().collect();
        let required_new: BTreeSet<&String> = new.required.keys().collect();
        for name in required_new.difference(&required_old) {
            self.report(
                rules::REQUIRED_ADDED,
                new.required[*name].clone(),
                format!("`{name}` is now required"),
            );
        }
        for name in required_old.difference(&required_new) {
            self.report(
                rules::REQUIRED_REMOVED,
                old.required[*name].clone(),
                format!("`{name}` is no longer required"),
            );
        }
        self.dependencies(old, new, at);
    }

    fn property(&mut self, old: &Shape<'a>, new: &Shape<'a>, name: &str, at: &Loc, depth: usize) {
        let was = old.properties.get(name);
        let is = new.properties.get(name);
        let admitted_before = admits(old, name);
        let admitted_now = admits(new, name);
        let loc = is
            .or(was)
            .and_then(|p| p.first())
            .map_or_else(|| at.child("properties").child(name), |p| p.loc.clone());
        match (was, is) {
            (Some(o), Some(n)) => self.parts(o, n, depth + 1),
            _ if admitted_before && !admitted_now => self.report(
                rules::PROPERTY_REMOVED,
                loc,
                format!("`{name}` is no longer accepted"),
            ),
            _ if !admitted_before && admitted_now => self.report(
                rules::PROPERTY_ADDED,
                loc,
                format!("`{name}` is now accepted"),
            ),
            (None, Some(n)) if admitted_before && !trivial(self.new, n) => self.report(
                rules::PROPERTY_CONSTRAINED,
                loc,
                format!("`{name}`, taken unchecked before, now has a schema"),
            ),
            (Some(o), None) if admitted_now && !trivial(self.old, o) => self.report(
                rules::PROPERTY_UNCONSTRAINED,
                loc,
                format!("`{name}` is taken unchecked now"),
            ),
            _ => {}
        }
    }

    fn pattern_properties(&mut self, old: &Shape<'a>, new: &Shape<'a>, at: &Loc, depth: usize) {
        let mut patterns: BTreeSet<&String> = old.pattern_properties.keys().collect();
        patterns.extend(new.pattern_properties.keys());
        for p in patterns {
            let loc = at.child("patternProperties").child(p);
            match (old.pattern_properties.get(p), new.pattern_properties.get(p)) {
                (Some(o), Some(n)) => self.parts(o, n, depth + 1),
                (None, Some(_)) if old.allowed.is_some() => self.report(
                    rules::PROPERTY_ADDED,
                    loc,
                    format!("keys matching {p:?} are now accepted"),
                ),
                (None, Some(_)) => self.report(
                    rules::PROPERTY_CONSTRAINED,
                    loc,
                    format!("keys matching {p:?} now have a schema"),
                ),
                (Some(_), None) if new.allowed.is_some() => self.report(
                    rules::PROPERTY_REMOVED,
                    loc,
                    format!("keys matching {p:?} are no longer accepted"),
                ),
                (Some(_), None) => self.report(
                    rules::PROPERTY_UNCONSTRAINED,
                    loc,
                    format!("keys matching {p:?} are taken unchecked now"),
                ),
                (None, None) => {}
            }
        }
    }

    fn dependencies(&mut self, old: &Shape<'a>, new: &Shape<'a>, at: &Loc) {
        let keys: BTreeSet<&String> = old
            .dependent_required
            .keys()
            .chain(new.dependent_required.keys())
            .collect();
        let none = BTreeSet::new();
        for key in keys {
            let before = old.dependent_required.get(key).map_or(&none, |(s, _)| s);
            let (after, loc) = new.dependent_required.get(key).map_or(
                (&none, at.child("dependentRequired").child(key)),
                |(s, l)| (s, l.clone()),
            );
            for need in after.difference(before) {
                self.report(
                    rules::DEPENDENCY_ADDED,
                    loc.clone(),
                    format!("with `{key}`, `{need}` is now required"),
                );
            }
            for need in before.difference(after) {
                self.report(
                    rules::DEPENDENCY_REMOVED,
                    loc.clone(),
                    format!("with `{key}`, `{need}` is no longer required"),
                );
            }
        }
    }

    fn arrays(&mut self, old: &Shape<'a>, new: &Shape<'a>, depth: usize) {
        match (old.items.is_empty(), new.items.is_empty()) {
            (false, false) => self.parts(&old.items, &new.items, depth + 1),
            (true, false) => self.report(
                rules::ITEMS_CONSTRAINED,
                new.items[0].loc.clone(),
                "the items now have a schema".into(),
            ),
            (false, true) => self.report(
                rules::ITEMS_UNCONSTRAINED,
                old.items[0].loc.clone(),
                "the items are no longer checked".into(),
            ),
            (true, true) => {}
        }
        match (&old.unique_items, &new.unique_items) {
            (None, Some(loc)) => self.report(
                rules::UNIQUE_ITEMS_ADDED,
                loc.clone(),
                "items must now be distinct".into(),
            ),
            (Some(loc), None) => self.report(
                rules::UNIQUE_ITEMS_REMOVED,
                loc.clone(),
                "items may now repeat".into(),
            ),
            _ => {}
        }
    }

    fn conditionals(&mut self, old: &Shape<'a>, new: &Shape<'a>, depth: usize) {
        let before: BTreeMap<&String, _> =
            old.conditionals.iter().map(|c| (&c.condition, c)).collect();
        let after: BTreeMap<&String, _> =
            new.conditionals.iter().map(|c| (&c.condition, c)).collect();
        for (condition, n) in &after {
            let Some(o) = before.get(condition) else {
                self.report(
                    rules::CONDITIONAL_ADDED,
                    n.loc.clone(),
                    "a new `if`/`then` rule".into(),
                );
                continue;
            };
            for (was, is, word) in [
                (&o.then, &n.then, "then"),
                (&o.otherwise, &n.otherwise, "else"),
            ] {
                match (was, is) {
                    (Some(w), Some(i)) => {
                        self.parts(std::slice::from_ref(w), std::slice::from_ref(i), depth + 1)
                    }
                    (None, Some(i)) => self.report(
                        rules::CONDITIONAL_ADDED,
                        i.loc.clone(),
                        format!("the rule gains an `{word}` branch"),
                    ),
                    (Some(_), None) => self.report(
                        rules::CONDITIONAL_REMOVED,
                        n.loc.clone(),
                        format!("the rule loses its `{word}` branch"),
                    ),
                    (None, None) => {}
                }
            }
        }
        for (condition, o) in &before {
            if !after.contains_key(condition) {
                let loc = new.loc.clone().unwrap_or_else(|| o.loc.clone());
                self.report(
                    rules::CONDITIONAL_REMOVED,
                    loc,
                    "an `if`/`then` rule was dropped (or its condition rewritten)".into(),
                );
            }
        }
    }

    fn alternatives(&mut self, old: &Shape<'a>, new: &Shape<'a>, at: &Loc, depth: usize) {
        if old.alternatives.is_empty() && new.alternatives.is_empty() {
            return;
        }
        let loc = new.alternatives_at.clone().unwrap_or_else(|| at.clone());
        if old.alternatives.is_empty() || new.alternatives.is_empty() {
            self.report(
                rules::UNDECIDABLE,
                loc,
                "a `oneOf`/`anyOf` was introduced or removed in a form the checker cannot compare"
                    .into(),
            );
            return;
        }
        if let Some(key) = discriminator(self.old, self.new, &old.alternatives, &new.alternatives) {
            let before = by_tag(self.old, &old.alternatives, &key);
            let after = by_tag(self.new, &new.alternatives, &key);
            for (value, n) in &after {
                match before.get(value) {
                    Some(o) => self.shapes(o, n, depth + 1),
                    None => self.report(
                        rules::ALTERNATIVE_ADDED,
                        n.loc.clone().unwrap_or_else(|| loc.clone()),
                        format!("a new alternative with `{key}` {value}"),
                    ),
                }
            }
            for value in before.keys().filter(|v| !after.contains_key(*v)) {
                self.report(
                    rules::ALTERNATIVE_REMOVED,
                    loc.clone(),
                    format!("the alternative with `{key}` {value} was dropped"),
                );
            }
            return;
        }
        if old.alternatives.len() == new.alternatives.len() {
            for (o, n) in old.alternatives.iter().zip(&new.alternatives) {
                self.shapes(o, n, depth + 1);
            }
            return;
        }
        self.report(
            rules::UNDECIDABLE,
            loc,
            format!(
                "the alternatives went from {} to {} with no discriminating constant to pair them by",
                old.alternatives.len(),
                new.alternatives.len()
            ),
        );
    }

    fn opaque(&mut self, old: &Shape<'a>, new: &Shape<'a>) {
        let keys: BTreeSet<&String> = old.opaque.keys().chain(new.opaque.keys()).collect();
        for key in keys {
            let before = old.opaque.get(key);
            let after = new.opaque.get(key);
            if before.map(|(v, _)| v) != after.map(|(v, _)| v) {
                let loc = after
                    .or(before)
                    .map(|(_, l)| l.clone())
                    .unwrap_or_else(|| Loc::root(""));
                self.report(
                    rules::UNDECIDABLE,
                    loc,
                    format!("`{key}` changed, and the checker does not model `{key}`"),
                );
            }
        }
    }

    fn annotations(&mut self, old: &Shape<'a>, new: &Shape<'a>) {
        let keys: BTreeSet<&String> = old
            .annotations
            .keys()
            .chain(new.annotations.keys())
            .collect();
        for key in keys {
            let before = old.annotations.get(key).map(|(v, _)| canonical(v));
            let after = new.annotations.get(key);
            if before != after.map(|(v, _)| canonical(v)) {
                let loc = after
                    .map(|(_, l)| l.clone())
                    .or_else(|| old.annotations.get(key).map(|(_, l)| l.clone()))
                    .unwrap_or_else(|| Loc::root(""));
                let what = match (&before, after) {
                    (None, _) => "added",
                    (_, None) => "dropped",
                    _ => "changed",
                };
                self.report(rules::ANNOTATION_CHANGED, loc, format!("`{key}` {what}"));
            }
        }
    }
}

/// The types a shape really admits: a value list admits only its values' types, whether or not
/// `type` says so (`{"enum": ["a"]}` and `{"type": "string", "enum": ["a"]}` mean the same).
fn effective_types(s: &Shape<'_>) -> Option<Types> {
    let Some(values) = &s.values else {
        return s.types.clone();
    };
    let of_values = expand(
        values
            .iter()
            .filter_map(|v| serde_json::from_str::<serde_json::Value>(v).ok())
            .map(|v| value_type(&v)),
    );
    Some(match &s.types {
        Some(declared) => of_values.intersection(declared).copied().collect(),
        None => of_values,
    })
}

/// Values for a message: the first few, each cut short, and how many more there are.
fn join(values: &[&String]) -> String {
    const SHOWN: usize = 10;
    const CHARS: usize = 80;
    let mut out: Vec<String> = values
        .iter()
        .take(SHOWN)
        .map(|v| match v.char_indices().nth(CHARS) {
            Some((cut, _)) => format!("{}…", &v[..cut]),
            None => (*v).clone(),
        })
        .collect();
    if values.len() > SHOWN {
        out.push(format!("and {} more", values.len() - SHOWN));
    }
    out.join(", ")
}

/// Whether an object shape takes `name`: open, listed, or matching one of its patterns.
fn admits(shape: &Shape<'_>, name: &str) -> bool {
    let Some(allowed) = &shape.allowed else {
        return true;
    };
    allowed.names.contains(name)
        || allowed
            .patterns
            .iter()
            .any(|p| regex::Regex::new(p).is_ok_and(|r| r.is_match(name)))
}

/// Whether parts constrain nothing (`true`, `{}`, annotations only).
fn trivial<'a>(tree: &'a SchemaTree, parts: &[Part<'a>]) -> bool {
    let s = shape_of(tree, parts);
    s.types.is_none()
        && s.values.is_none()
        && s.bounds.is_empty()
        && s.patterns.is_empty()
        && s.format.is_none()
        && s.properties.is_empty()
        && s.required.is_empty()
        && s.allowed.is_none()
        && s.additional.is_empty()
        && s.items.is_empty()
        && s.conditionals.is_empty()
        && s.alternatives.is_empty()
        && s.opaque.is_empty()
}

/// Alternatives by the constant each gives the discriminating `key`.
fn by_tag<'s, 'a>(
    tree: &'a SchemaTree,
    alternatives: &'s [Shape<'a>],
    key: &str,
) -> BTreeMap<String, &'s Shape<'a>> {
    alternatives
        .iter()
        .filter_map(|a| Some((tag(tree, a, key)?, a)))
        .collect()
}

/// The single constant an alternative gives `key`, as canonical JSON.
fn tag<'a>(tree: &'a SchemaTree, alternative: &Shape<'a>, key: &str) -> Option<String> {
    let parts = alternative.properties.get(key)?;
    let values = shape_of(tree, parts).values?;
    (values.len() == 1)
        .then(|| values.into_iter().next())
        .flatten()
}

/// A property every alternative on both sides pins to one distinct constant (`op`, `kind`).
fn discriminator<'a>(
    old_tree: &'a SchemaTree,
    new_tree: &'a SchemaTree,
    old: &[Shape<'a>],
    new: &[Shape<'a>],
) -> Option<String> {
    let first = old.first()?;
    first.properties.keys().find_map(|key| {
        let distinct = |tree: &'a SchemaTree, alts: &[Shape<'a>]| {
            let tags: Option<Vec<String>> = alts.iter().map(|a| tag(tree, a, key)).collect();
            tags.is_some_and(|t| t.iter().collect::<BTreeSet<_>>().len() == t.len())
        };
        (distinct(old_tree, old) && distinct(new_tree, new)).then(|| key.clone())
    })
}
