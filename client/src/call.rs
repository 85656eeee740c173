//! One typed tool call: the input serialised to arguments, the `tools/call` round trip, a
//! refusal read from the result's `_meta`, `CAPACITY_EXCEEDED` retried after the wait the daemon
//! names, and the structured answer decoded into the tool's response type with the key path of
//! any mismatch.

use crate::{Client, Error};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::time::Duration;
use theurian_protocol::mcp::{RefusalMeta, RefusalMetaCode};
use theurian_protocol::tools::ToolId;

/// The input key that pins a project-scoped call to one state.
const SNAPSHOT_KEY: &str = "snapshotId";

impl Client {
    /// Calls `tool` with arguments given as JSON and returns its structured answer as JSON, for
    /// a caller that forwards arguments it did not build (a proxy, a scripting bridge). Refusals,
    /// retries and errors are as for the typed methods; the answer is not checked against types.
    pub async fn call_json(&self, tool: ToolId, arguments: &Value) -> Result<Value, Error> {
        self.call(tool, arguments, None).await
    }

    /// Calls `tool` with `input` and decodes its answer; `snapshot` pins a project-scoped call.
    pub(crate) async fn call<I, O>(
        &self,
        tool: ToolId,
        input: &I,
        snapshot: Option<&str>,
    ) -> Result<O, Error>
    where
        I: Serialize + ?Sized,
        O: DeserializeOwned,
    {
        let spec = tool.spec();
        let arguments = arguments(spec.name, input, snapshot.filter(|_| pinnable(tool)))?;
        let mut retries_left = self.options.capacity_retries;
        loop {
            let result = self.round_trip(spec.name, arguments.clone()).await?;
            if result.is_error != Some(true) {
                return decode(spec.name, result);
            }
            let refusal = refusal(spec.name, &result)?;
            match refusal {
                Error::Refusal {
                    code: RefusalMetaCode::CapacityExceeded,
                    retry_after_ms,
                    ..
                } if retries_left > 0 => {
                    retries_left -= 1;
                    let asked = Duration::from_millis(retry_after_ms.unwrap_or(100));
                    tokio::time::sleep(asked.min(self.options.max_retry_wait)).await;
                }
                other => return Err(other),
            }
        }
    }

    async fn round_trip(
        &self,
        tool: &'static str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult, Error> {
        let request = CallToolRequestParams::new(tool).with_arguments(arguments);
        let timeout = self.options.call_timeout;
        tokio::time::timeout(timeout, self.session.call_tool(request))
            .await
            .map_err(|_| Error::Transport {
                message: format!("{tool}: no answer within {} s", timeout.as_secs()),
            })?
            .map_err(|e| Error::Transport {
                message: format!("{tool}: {e}"),
            })
    }
}

/// Whether `tool` takes the shared context's `snapshotId` (project-scoped tools do).
fn pinnable(tool: ToolId) -> bool {
    tool.spec().schema_keys.contains(&SNAPSHOT_KEY)
}

/// The input as a JSON object, with the pin set when there is one.
fn arguments<I: Serialize + ?Sized>(
    tool: &'static str,
    input: &I,
    snapshot: Option<&str>,
) -> Result<Map<String, Value>, Error> {
    let value = serde_json::to_value(input).map_err(|e| Error::Invalid {
        message: format!("{tool}: the input cannot be written as JSON: {e}"),
    })?;
    let Value::Object(mut arguments) = value else {
        return Err(Error::Invalid {
            message: format!("{tool}: the input must serialise to a JSON object"),
        });
    };
    if let Some(snapshot) = snapshot {
        arguments.insert(SNAPSHOT_KEY.into(), Value::String(snapshot.to_owned()));
    }
    Ok(arguments)
}

/// A refused result as [`Error::Refusal`], from its `_meta` and text.
fn refusal(tool: &'static str, result: &CallToolResult) -> Result<Error, Error> {
    let meta = result.meta.as_ref().map(|m| Value::Object(m.0.clone()));
    let meta: RefusalMeta = match meta {
        Some(meta) => typed(tool, "_meta", meta)?,
        None => {
            return Err(Error::Protocol {
                tool,
                path: "_meta".into(),
                message: "a refused call carries no refusal code".into(),
            })
        }
    };
    Ok(Error::Refusal {
        tool,
        code: meta.code,
        retryable: meta.retryable,
        retry_after_ms: meta.retry_after_ms.map(|ms| ms.get()),
        message: text(result),
    })
}

/// A successful result's `structuredContent` as the tool's response type.
fn decode<O: DeserializeOwned>(tool: &'static str, result: CallToolResult) -> Result<O, Error> {
    let Some(structured) = result.structured_content else {
        return Err(Error::Protocol {
            tool,
            path: "structuredContent".into(),
            message: "the answer carries no structured content".into(),
        });
    };
    typed(tool, "structuredContent", structured)
}

/// Decodes `value`, naming the key path of the first mismatch.
fn typed<O: DeserializeOwned>(tool: &'static str, root: &str, value: Value) -> Result<O, Error> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        Error::Protocol {
            tool,
            path: if inner == "." {
                root.to_owned()
            } else {
                format!("{root}.{inner}")
            },
            message: e.into_inner().to_string(),
        }
    })
}

/// The text blocks of a result, joined.
fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}
