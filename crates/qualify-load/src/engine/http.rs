//! One HTTP/1.1 exchange over a pooled keep-alive connection (hyper's client connection API):
//! take an idle connection or open one, send the rendered request, read the whole answer,
//! classify it, and put the connection back when it can carry another request. A request that
//! a reused connection could not even start (the server had closed it while idle) is retried
//! once on a fresh connection; nothing that reached the server is retried.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::HOST;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use super::{Shared, classify_hyper, classify_io};
use crate::plan::CompiledRequest;
use crate::record::Ending;
use crate::report::ErrorClass;

/// An idle keep-alive connection; dropping it closes the socket (its driver task is aborted,
/// so abandoned connections never linger while a stopped server holds them open).
pub(crate) struct Conn {
    sender: SendRequest<Full<Bytes>>,
    driver: JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

async fn connect(sh: &Shared) -> Result<Conn, Ending> {
    let stream = TcpStream::connect(sh.target)
        .await
        .map_err(|e| classify_io(&e, "connect"))?;
    let _ = stream.set_nodelay(true);
    sh.rec.borrow_mut().connections += 1;
    let (sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| classify_hyper(&e))?;
    let driver = tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    Ok(Conn { sender, driver })
}

fn idle(sh: &Shared) -> Option<Conn> {
    let mut pool = sh.http_pool.borrow_mut();
    while let Some(conn) = pool.pop() {
        if !conn.sender.is_closed() {
            return Some(conn);
        }
    }
    None
}

/// Send request `seq`; the caller bounds it with the timeout.
pub(crate) async fn exchange(sh: &Shared, seq: u64) -> Ending {
    let CompiledRequest::Http {
        method,
        path,
        body,
        headers,
        expect_status,
    } = sh.compiled.request(seq)
    else {
        return Ending::failed(
            ErrorClass::Other,
            "an HTTP exchange for a TCP template".into(),
        );
    };
    let mut uri = Vec::with_capacity(64);
    path.render_into(seq, &mut uri);
    let uri = match Uri::try_from(uri) {
        Ok(uri) => uri,
        Err(e) => {
            return Ending::failed(
                ErrorClass::Other,
                format!("the rendered path is not a URI path: {e}"),
            );
        }
    };
    let body = body
        .as_ref()
        .map_or_else(Bytes::new, |b| Bytes::from(b.render(seq)));
    let mut builder = Request::builder().method(method.clone()).uri(uri);
    if !headers.iter().any(|(name, _)| name == HOST) {
        builder = builder.header(HOST, sh.host.clone());
    }
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    let mut request = match builder.body(Full::new(body)) {
        Ok(r) => r,
        Err(e) => {
            return Ending::failed(ErrorClass::Other, format!("cannot build the request: {e}"));
        }
    };

    let (mut conn, mut reused) = match idle(sh) {
        Some(conn) => (conn, true),
        None => match connect(sh).await {
            Ok(conn) => (conn, false),
            Err(ending) => return ending,
        },
    };
    let response = loop {
        if conn.sender.ready().await.is_ok() {
            match conn.sender.try_send_request(request).await {
                Ok(response) => break response,
                Err(mut e) => match e.take_message() {
                    Some(unsent) if reused => request = unsent,
                    _ => return classify_hyper(e.error()),
                },
            }
        } else if !reused {
            return Ending::failed(
                ErrorClass::Reset,
                "the new connection closed before the request".into(),
            );
        }
        // The idle connection had been closed by the server: once more on a fresh one.
        conn = match connect(sh).await {
            Ok(conn) => conn,
            Err(ending) => return ending,
        };
        reused = false;
    };

    let status = response.status().as_u16();
    let mut incoming = response.into_body();
    while let Some(frame) = incoming.frame().await {
        if let Err(e) = frame {
            return classify_hyper(&e);
        }
    }
    if !conn.sender.is_closed() {
        sh.http_pool.borrow_mut().push(conn);
    }
    let expected = if expect_status.is_empty() {
        (200..400).contains(&status)
    } else {
        expect_status.contains(&status)
    };
    if expected {
        return Ending::success();
    }
    let class = match status {
        429 => ErrorClass::Status429,
        400..=499 => ErrorClass::Status4xx,
        500..=599 => ErrorClass::Status5xx,
        _ => ErrorClass::UnexpectedReply,
    };
    Ending::answer_error(
        class,
        status == 429 || status == 503,
        format!("HTTP {status}"),
    )
}
