//! A tool's answer kept typed until the transport writes it.
//!
//! A success is written twice over MCP: as `structuredContent` and, pretty-printed, as the
//! text content. Converting the typed response into a `serde_json::Value` first (a map per
//! object, a string per key) only to serialise that tree again cost a noticeable share of a
//! fast call; an [`Answer`] serialises the typed value directly, into whichever form the
//! transport needs. Both forms hold the same keys in the same order as the tree would.

use serde::Serialize;

/// Serialisation of a typed response, object-safe so every tool's answer has one type.
trait Encode: Send {
    fn value(&self) -> serde_json::Result<serde_json::Value>;
    fn compact(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;
    fn pretty(&self) -> serde_json::Result<String>;
}

impl<T: Serialize + Send> Encode for T {
    fn value(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }

    fn compact(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }

    fn pretty(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }
}

/// One tool's typed response.
pub struct Answer(Box<dyn Encode>);

impl Answer {
    /// Wraps a typed response.
    pub fn new<T: Serialize + Send + 'static>(response: T) -> Answer {
        Answer(Box::new(response))
    }

    /// The response as a JSON tree.
    pub fn to_value(&self) -> serde_json::Result<serde_json::Value> {
        self.0.value()
    }

    /// Appends the response's compact JSON to `out`.
    pub fn write_compact(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        self.0.compact(out)
    }

    /// The response as indented JSON.
    pub fn to_pretty(&self) -> serde_json::Result<String> {
        self.0.pretty()
    }
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Answer(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_matches_the_json_tree() {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Response {
            project_id: &'static str,
            fused_score: f64,
            #[serde(skip_serializing_if = "Option::is_none")]
            note: Option<String>,
            results: Vec<serde_json::Value>,
        }
        let answer = Answer::new(Response {
            project_id: "p",
            fused_score: 0.032787,
            note: None,
            results: vec![serde_json::json!({"b": 1, "a": "x\n\"y\""})],
        });
        let tree = answer.to_value().expect("value");
        let mut compact = Vec::new();
        answer.write_compact(&mut compact).expect("compact");
        assert_eq!(compact, serde_json::to_vec(&tree).expect("tree"));
        assert_eq!(
            answer.to_pretty().expect("pretty"),
            serde_json::to_string_pretty(&tree).expect("tree")
        );
    }
}
