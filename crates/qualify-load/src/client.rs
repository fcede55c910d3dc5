//! [`HttpClient`]: single HTTP/1.1 exchanges outside a load — a service cell's write check
//! reads every acknowledged write back with it. It renders a request template as the load
//! does (`{seq}`, `{pad:N}`, headers, body) and reads answers with the engine's own reader:
//! `Content-Length`, chunked (trailers included), interim 1xx answers, close-delimited, HEAD
//! and 204/304; a keep-alive connection is reused until the server closes it. Blocking: each
//! client owns a current-thread event loop on the calling thread (and so, like [`crate::run`],
//! lives in the calling thread's network namespace).

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::engine::http::{self, Conn, ReadError};
use crate::error::LoadError;
use crate::plan::{CompiledRequest, HttpRequest, LoadPlan, Model, RequestKind, RequestTemplate};

/// Why an exchange got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// Connecting, writing or reading failed (`refused`, `reset`, …).
    Io(String),
    /// No whole answer within the client's timeout.
    Timeout,
    /// The connection closed before the answer was complete.
    Closed(&'static str),
    /// Not an HTTP answer.
    Malformed(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Io(e) => f.write_str(e),
            ClientError::Timeout => f.write_str("no answer within the timeout"),
            ClientError::Closed(when) => write!(f, "the connection closed {when}"),
            ClientError::Malformed(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for ClientError {}

/// One request template sent to one address, one exchange at a time.
pub struct HttpClient {
    runtime: tokio::runtime::Runtime,
    target: SocketAddr,
    host: String,
    request: CompiledRequest,
    timeout: Duration,
    conn: Option<Conn>,
    connections: u64,
}

impl HttpClient {
    /// A client for `request` (checked as a load's template is) to `target`; each exchange,
    /// connecting included, must end within `timeout`.
    pub fn new(
        target: SocketAddr,
        request: &HttpRequest,
        timeout: Duration,
    ) -> Result<HttpClient, LoadError> {
        let plan = LoadPlan {
            requests: vec![RequestTemplate {
                weight: 1,
                kind: RequestKind::Http(request.clone()),
            }],
            ..LoadPlan::http_get(Model::Closed { users: 1 }, "/")
        };
        let compiled = crate::plan::compile(&plan)?;
        let request = compiled.request(0).clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(LoadError::Runtime)?;
        Ok(HttpClient {
            runtime,
            target,
            host: target.to_string(),
            request,
            timeout,
            conn: None,
            connections: 0,
        })
    }

    /// Send the request for `seq` and return the answer's status. A reused connection that
    /// fails is replaced once by a fresh one (nothing is retried on a fresh connection).
    pub fn status(&mut self, seq: u64) -> Result<u16, ClientError> {
        let mut rendered = Vec::with_capacity(256);
        let Some(head) = http::render_request(&self.request, &self.host, seq, &mut rendered) else {
            return Err(ClientError::Malformed("not an HTTP template".into()));
        };
        loop {
            let reused = self.conn.is_some();
            let result = self.exchange(&rendered, head);
            match result {
                Err(_) if reused => continue,
                other => return other,
            }
        }
    }

    /// Connections opened so far.
    pub fn connections(&self) -> u64 {
        self.connections
    }

    fn exchange(&mut self, request: &[u8], head: bool) -> Result<u16, ClientError> {
        let conn = match self.conn.take() {
            Some(conn) if !conn.closed_while_idle() => Some(conn),
            _ => None,
        };
        let fresh = conn.is_none();
        let (target, timeout) = (self.target, self.timeout);
        let outcome = self.runtime.block_on(async move {
            tokio::time::timeout(timeout, async move {
                let mut conn = match conn {
                    Some(conn) => conn,
                    None => {
                        let stream = TcpStream::connect(target)
                            .await
                            .map_err(|e| ClientError::Io(format!("connect: {e}")))?;
                        let _ = stream.set_nodelay(true);
                        Conn::new(stream)
                    }
                };
                let (status, reusable) =
                    http::send(&mut conn, request, head)
                        .await
                        .map_err(|e| match e {
                            ReadError::Io(e) => ClientError::Io(e.to_string()),
                            ReadError::Closed(when) => ClientError::Closed(when),
                            ReadError::Malformed(what) => ClientError::Malformed(what),
                        })?;
                Ok::<_, ClientError>((status, reusable.then_some(conn)))
            })
            .await
            .unwrap_or(Err(ClientError::Timeout))
        });
        if fresh {
            self.connections += 1;
        }
        let (status, conn) = outcome?;
        self.conn = conn;
        Ok(status)
    }
}
