//! One async method per tool on [`Client`] and on [`Pinned`], expanded from the generated tool
//! table by [`theurian_protocol::with_tools`]: a tool added to `schemas/` gains its methods here
//! with no edit to this file.

use crate::{types, Client, Error};
use theurian_protocol::tools::ToolId;

/// A view of a [`Client`] whose every project-scoped call carries one `snapshotId`, so a
/// sequence of reads sees one state even while the project moves on. The pin replaces any
/// `snapshotId` an input carries. When the daemon no longer holds that state, calls fail with
/// `SNAPSHOT_NOT_FOUND`; the handle never moves to another state by itself.
#[derive(Debug, Clone)]
pub struct Pinned<'a> {
    client: &'a Client,
    snapshot: types::SnapshotId,
}

impl Client {
    /// A handle pinned to `snapshot`: a `stateHash` from `knowledge.status` or any earlier
    /// answer. Refused when it is not a state hash (64 lower-case hex digits).
    pub fn pinned(&self, snapshot: &str) -> Result<Pinned<'_>, Error> {
        let snapshot = types::SnapshotId::try_from(snapshot).map_err(|_| Error::Invalid {
            message: "snapshotId: a pin must be a stateHash, 64 lower-case hexadecimal digits; take one from knowledge.status".into(),
        })?;
        Ok(Pinned {
            client: self,
            snapshot,
        })
    }
}

impl Pinned<'_> {
    /// The state this handle reads.
    pub fn snapshot(&self) -> &types::SnapshotId {
        &self.snapshot
    }
}

macro_rules! tool_methods {
    ($(($method:ident, $variant:ident, $name:literal, $input:ident, $response:ident, $doc:literal)),* $(,)?) => {
        impl Client {
            $(
                #[doc = $doc]
                pub async fn $method(&self, input: &types::$input) -> Result<types::$response, Error> {
                    self.call(ToolId::$variant, input, None).await
                }
            )*
        }

        impl Pinned<'_> {
            $(
                #[doc = $doc]
                ///
                /// Sent with this handle's `snapshotId` when the tool is project-scoped.
                pub async fn $method(&self, input: &types::$input) -> Result<types::$response, Error> {
                    self.client.call(ToolId::$variant, input, Some(self.snapshot.as_str())).await
                }
            )*
        }
    };
}

theurian_protocol::with_tools!(tool_methods);
