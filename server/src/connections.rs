//! The daemon's own accept loop: every connection has a deadline for its request head and a
//! place in a bounded table, so no local process can exhaust the daemon by opening sockets.
//!
//! The daemon listens on loopback without asking for a token until a request arrives, so any
//! process on the machine can connect. A generic server loop keeps every connection until its
//! peer leaves; a few thousand silent sockets then use up the descriptor limit and real clients
//! time out. Three rules keep it serving:
//!
//! * **A deadline for each request head** ([`HEADER_READ_TIMEOUT`]): counted from the moment
//!   the connection waits for a request, so it bounds both a slow sender and a keep-alive
//!   connection left idle.
//! * **A bounded table** ([`MAX_CONNECTIONS`]): a connection past the bound takes the place of
//!   the idle connection that has been quiet longest (as a busy web server drains keep-alive
//!   connections), so a flood of silent sockets only ever displaces itself.
//! * **A designed answer when every place is busy**: HTTP 503 with `Retry-After` and a
//!   JSON-RPC error body, then the connection is closed.

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};

/// Connections held open at once, across every serving thread.
pub const MAX_CONNECTIONS: usize = 512;
/// How long a connection may take to send a complete request head, from connecting or from
/// its previous answer. Clients' own keep-alive pools expire sooner (4–5 s for Node's and
/// httpx's), and one that keeps a connection longer opens a new one when this one is gone.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long shutdown waits for requests in flight before closing what remains.
const DRAIN: Duration = Duration::from_secs(10);
/// The `Retry-After` a refused connection is told, in seconds.
const RETRY_AFTER_SECONDS: u64 = 1;

/// What one connection is doing, shared with the table that may close it.
#[derive(Debug, Default)]
struct Activity {
    /// Requests being answered (never closed while above zero).
    in_flight: AtomicUsize,
    /// The table clock when it last started or finished a request (or connected).
    last: AtomicU64,
}

#[derive(Debug)]
struct Entry {
    activity: Arc<Activity>,
    close: Arc<Notify>,
}

/// Every open connection, so a new one can find the longest-idle one to replace.
#[derive(Debug, Default)]
pub struct Table {
    open: Mutex<HashMap<u64, Entry>>,
    next_id: AtomicU64,
    clock: AtomicU64,
    /// Connections closed to make room for newer ones.
    displaced: AtomicU64,
    /// Connections refused because every place was busy.
    refused: AtomicU64,
    /// The head deadline in milliseconds when set (0: [`HEADER_READ_TIMEOUT`]).
    head_timeout_ms: AtomicU64,
}

/// A connection's place in the table; dropping it gives the place back.
struct Slot {
    table: Arc<Table>,
    id: u64,
    activity: Arc<Activity>,
    close: Arc<Notify>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.lock().remove(&self.id);
    }
}

/// Counts one request as in flight until dropped (also when the connection dies mid-request).
struct Busy(Arc<Activity>, Arc<Table>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.last.store(self.1.tick(), Ordering::Relaxed);
    }
}

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        // The map holds only handles; a panic elsewhere cannot leave it inconsistent.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// Shortens (or lengthens) the head deadline for connections accepted from now on, so a
    /// test or the soak benchmark can see it act without waiting half a minute.
    pub fn set_head_timeout(&self, deadline: Duration) {
        let ms = u64::try_from(deadline.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        self.head_timeout_ms.store(ms, Ordering::Relaxed);
    }

    fn head_timeout(&self) -> Duration {
        match self.head_timeout_ms.load(Ordering::Relaxed) {
            0 => HEADER_READ_TIMEOUT,
            ms => Duration::from_millis(ms),
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.lock().len()
    }

    /// Connections closed so far to make room for newer ones.
    pub fn displaced(&self) -> u64 {
        self.displaced.load(Ordering::Relaxed)
    }

    /// Connections refused so far because every place was busy.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// A place for a new connection: a free one, or the longest-idle connection's, which is
    /// told to close. `None` when every connection has a request in flight.
    fn admit(self: &Arc<Self>, bound: usize) -> Option<Slot> {
        let mut open = self.lock();
        while open.len() >= bound {
            let idle = open
                .iter()
                .filter(|(_, e)| e.activity.in_flight.load(Ordering::Relaxed) == 0)
                .min_by_key(|(_, e)| e.activity.last.load(Ordering::Relaxed))
                .map(|(id, _)| *id);
            let entry = idle.and_then(|id| open.remove(&id));
            let Some(entry) = entry else {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            };
            entry.close.notify_one();
            self.displaced.fetch_add(1, Ordering::Relaxed);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity::default());
        activity.last.store(self.tick(), Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        open.insert(
            id,
            Entry {
                activity: activity.clone(),
                close: close.clone(),
            },
        );
        Some(Slot {
            table: self.clone(),
            id,
            activity,
            close,
        })
    }
}

/// Accepts on `listener` until `shutdown`, then lets requests in flight finish (for at most
/// [`DRAIN`]) and closes the rest.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    table: Arc<Table>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let (stop, stopping) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => match table.admit(MAX_CONNECTIONS) {
                Some(slot) => {
                    tokio::spawn(connection(stream, app.clone(), slot, stopping.clone()));
                }
                None => {
                    tokio::spawn(refuse(stream));
                }
            },
            // Out of descriptors or memory, or a connection reset before it was accepted:
            // pause briefly so a full table does not spin, then accept again.
            Err(e) => {
                tracing::debug!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    let _ = stop.send(true);
    drop(stopping);
    let _ = tokio::time::timeout(DRAIN, stop.closed()).await;
}

/// Serves one connection until its peer leaves, its head deadline passes, the table gives its
/// place to a newer connection, or shutdown (which lets a request in flight finish).
async fn connection(
    stream: TcpStream,
    app: Router,
    slot: Slot,
    mut stopping: watch::Receiver<bool>,
) {
    let (activity, table) = (slot.activity.clone(), slot.table.clone());
    let head_timeout = table.head_timeout();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        let busy = Busy(activity.clone(), table.clone());
        let app = app.clone();
        async move {
            let answer = tower::ServiceExt::oneshot(app, request).await;
            drop(busy);
            answer
        }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(head_timeout);
    let conn = http.serve_connection(TokioIo::new(stream), service);
    let mut conn = std::pin::pin!(conn);
    let mut draining = false;
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(e) = served {
                    tracing::trace!("connection ended: {e}");
                }
                break;
            }
            _ = slot.close.notified() => break,
            changed = stopping.wait_for(|stop| *stop), if !draining => {
                draining = true;
                if changed.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
    drop(slot);
}

/// Answers a connection that found every place busy, then closes it.
async fn refuse(mut stream: TcpStream) {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32000,
            "message": format!("The daemon is serving its limit of {MAX_CONNECTIONS} connections, each with a request in flight, so this connection was closed before it was read. Retry after {RETRY_AFTER_SECONDS} s; reuse one connection for many calls rather than opening one per call."),
        }
    })
    .to_string();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {RETRY_AFTER_SECONDS}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_displaces_the_longest_idle_connection_and_never_a_busy_one() {
        let table = Arc::new(Table::default());
        let first = table.admit(2).expect("room");
        let second = table.admit(2).expect("room");
        // The first is busy: the second, though newer, is the one displaced.
        first.activity.in_flight.fetch_add(1, Ordering::Relaxed);
        let third = table.admit(2).expect("displaces the idle one");
        assert_eq!(table.open(), 2);
        assert_eq!(table.displaced(), 1);
        assert!(!table.lock().contains_key(&second.id));
        // Both places busy: refused.
        third.activity.in_flight.fetch_add(1, Ordering::Relaxed);
        assert!(table.admit(2).is_none());
        assert_eq!(table.refused(), 1);
        // A place given back is free again.
        drop(first);
        assert!(table.admit(2).is_some());
    }
}
