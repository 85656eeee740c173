//! The front door for `POST /mcp` bodies: what a body must be before anything reads it as MCP,
//! and the JSON-RPC error a client gets when it is not.
//!
//! A transport that meets a body it cannot parse tends to answer in its own terms (an HTTP
//! status and a line of plain text), which an MCP client cannot show its user or match on.
//! Every body is therefore checked once here and a fault answered as JSON-RPC 2.0 says:
//!
//! * not JSON at all (invalid UTF-8, a lone surrogate escape, `NaN`, a syntax error): `-32700`
//!   parse error, HTTP 400;
//! * JSON but not one request (a batch array, a scalar, `jsonrpc` other than `"2.0"`, a method
//!   that is not a string, an id that is neither string nor number, a key given twice at any
//!   depth): `-32600` invalid request, HTTP 400;
//! * a `tools/call` whose `params` is not an object, whose `name` is not a string, or whose
//!   `arguments` is not an object: `-32602` invalid params, HTTP 200 with the request's id.
//!
//! A key given twice is refused rather than resolved, because two readers of the same body
//! could otherwise act on different values (the last one here, the first one elsewhere). No
//! message repeats a value from the body; each names the key path.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// A refused body: the JSON-RPC error and the HTTP status it is sent with.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub status: StatusCode,
    pub code: i64,
    pub message: String,
    /// The request's id, when the body had a usable one.
    pub id: Value,
}

impl Fault {
    fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Fault {
        Fault {
            status,
            code,
            message: message.into(),
            id: Value::Null,
        }
    }

    /// The HTTP answer.
    pub fn response(&self) -> Response {
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code, "message": self.message},
        });
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response()
    }
}

impl Fault {
    /// The JSON-RPC error as one line of bytes (without its newline), for stdio.
    pub fn line(&self) -> Vec<u8> {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code, "message": self.message},
        })
        .to_string()
        .into_bytes()
    }
}

/// The stdio answer to a line past `max_line` bytes (the HTTP body bound), without its newline.
pub fn too_long_line(max_line: usize) -> Vec<u8> {
    Fault::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        INVALID_REQUEST,
        format!("Invalid request: the line is longer than the {max_line} bytes the server reads. Send a smaller request."),
    )
    .line()
}

/// A message that passed [`check`] but is not one MCP knows the shape of (the params of a
/// known method in another shape): `-32602` with the request's id. serde's own message can
/// quote the value, so it is not passed on.
pub fn not_mcp(message: &Value) -> Fault {
    Fault {
        status: StatusCode::OK,
        code: INVALID_PARAMS,
        message: "Invalid params: this message's params do not have the shape its method takes in MCP. Check them against the method's definition.".into(),
        id: message.get("id").cloned().unwrap_or(Value::Null),
    }
}

/// The refusal of a request whose id is still open on this session.
pub fn id_in_use(id: Value) -> Fault {
    Fault {
        status: StatusCode::BAD_REQUEST,
        code: INVALID_REQUEST,
        message: "Invalid request: At id: a request with this id is still being answered. Give each open request its own id.".into(),
        id,
    }
}

/// The answer to a body past `max_body` bytes: HTTP 413 with a JSON-RPC error.
pub fn too_large(max_body: usize) -> Response {
    Fault::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        INVALID_REQUEST,
        format!("Invalid request: the body is larger than the {max_body} bytes the daemon reads. Send a smaller request."),
    )
    .response()
}

/// The body as one JSON-RPC message, or the fault that refuses it.
pub fn check(body: &[u8]) -> Result<Value, Fault> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed = UniqueKeys { path: Vec::new() }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    let message = match parsed {
        Ok(message) => message,
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            return Err(Fault::new(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                format!("Invalid request: {e}. Send each key once."),
            ));
        }
        Err(e) => {
            return Err(Fault::new(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                format!(
                    "Parse error: the body is not JSON ({:?} error at line {}, column {}). Send one JSON-RPC 2.0 request as UTF-8 JSON.",
                    e.classify(),
                    e.line(),
                    e.column()
                ),
            ));
        }
    };
    shape(&message)?;
    Ok(message)
}

/// The checks on a parsed body's JSON-RPC shape.
fn shape(message: &Value) -> Result<(), Fault> {
    let invalid = |what: &str| {
        Fault::new(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            format!("Invalid request: {what}"),
        )
    };
    let object = match message {
        Value::Object(object) => object,
        Value::Array(_) => return Err(invalid("a batch (JSON array) is not accepted; MCP sends one message per request. Send the requests one by one.")),
        _ => return Err(invalid("the body must be a JSON-RPC 2.0 message object.")),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("At jsonrpc: the value must be the string \"2.0\"."));
    }
    let id = match object.get("id") {
        None => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        Some(_) => return Err(invalid("At id: an id is a string or a number.")),
    };
    let method = match object.get("method") {
        // A response or error from the client: the transport decides what to do with it.
        None if object.contains_key("result") || object.contains_key("error") => return Ok(()),
        None => return Err(invalid("the message has no method.")),
        Some(Value::String(method)) => method,
        Some(_) => return Err(invalid("At method: a method name is a string.")),
    };
    if method == "tools/call" {
        call_params(object.get("params")).map_err(|message| Fault {
            status: StatusCode::OK,
            code: INVALID_PARAMS,
            message: format!("Invalid params: {message}"),
            id,
        })?;
    }
    Ok(())
}

/// What `tools/call` needs of its params, as a message naming the key.
fn call_params(params: Option<&Value>) -> Result<(), &'static str> {
    let Some(Value::Object(params)) = params else {
        return Err("At params: tools/call takes an object holding `name` and `arguments`.");
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
        _ => return Err("At params/name: the tool's name is a string; tools/list names them."),
    }
    // `null` is read as absent, as the typed request does.
    match params.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(_) => Err("At params/arguments: a tool's arguments are a JSON object (or absent)."),
    }
}

/// Reads a JSON value, refusing an object that holds the same key twice.
struct UniqueKeys {
    path: Vec<String>,
}

impl UniqueKeys {
    fn at(&self, key: String) -> UniqueKeys {
        let mut path = self.path.clone();
        path.push(key);
        UniqueKeys { path }
    }
}

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.at(items.len().to_string()))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self.at(key.clone()))?;
            if object.insert(key.clone(), value).is_some() {
                let mut path = self.path.clone();
                path.push(key);
                let path = theurian_protocol::bounded(&path.join("/"));
                return Err(A::Error::custom(format!(
                    "At {path}: the key appears more than once"
                )));
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &[u8]) -> Option<i64> {
        check(body).err().map(|f| f.code)
    }

    #[test]
    fn each_malformed_body_gets_its_json_rpc_code() {
        assert_eq!(code(b"\xff\xfe{}"), Some(PARSE_ERROR));
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"x\ud800"}"#),
            Some(PARSE_ERROR)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":NaN,"method":"ping"}"#),
            Some(PARSE_ERROR)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#),
            Some(PARSE_ERROR)
        );
        assert_eq!(
            code(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":3}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[]}}"#),
            Some(INVALID_PARAMS)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#),
            Some(INVALID_PARAMS)
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            None
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":null}}"#),
            None
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
    }

    #[test]
    fn no_fault_repeats_a_value_from_the_body() {
        for body in [
            &br#"{"jsonrpc":"zq-secret","id":1,"method":"ping"}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"zq-secret","arguments":"zq-secret"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"q":"zq-secret","q":"zq-secret"}}}"#,
        ] {
            let fault = check(body).expect_err("refused");
            assert!(!fault.message.contains("zq-secret"), "{}", fault.message);
            assert!(fault.message.contains("At "), "{}", fault.message);
        }
    }
}
