//! One HTTP/1.1 exchange over a pooled keep-alive connection: take an idle connection (one
//! the server has not closed) or open one, write the rendered request in one `write`, read
//! the status line and headers (parsed with `httparse`), read the whole body
//! (`Content-Length`, chunked, or until close), classify the status, and put the connection
//! back when it can carry another request.
//!
//! A small client of its own rather than hyper's: on a loopback round trip of ~30 µs, hyper's
//! per-request work (a dispatch task and channels per connection, `http` types) measured
//! 5–7 µs on the latency path, a quarter of what the generator would report; this exchange
//! is a single task doing one write and usually one read. Nothing that reached the server is
//! retried; a connection the server closed while idle is noticed before it is used.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{Shared, classify_io};
use crate::plan::CompiledRequest;
use crate::record::Ending;
use crate::report::ErrorClass;

/// The most header bytes read before an answer counts as malformed.
const MAX_HEAD: usize = 64 * 1024;
/// The most headers an answer may carry.
const MAX_HEADERS: usize = 64;

/// An idle keep-alive connection and what has been read from it beyond the last answer
/// (nothing, for a reusable connection).
pub(crate) struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// `buf[pos..len]` holds read, unconsumed bytes.
    pos: usize,
    len: usize,
}

/// Why reading an answer failed.
pub(crate) enum ReadError {
    Io(io::Error),
    /// The connection closed before the answer was complete.
    Closed(&'static str),
    Malformed(String),
}

impl Conn {
    pub(crate) fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            buf: vec![0; 4 * 1024],
            pos: 0,
            len: 0,
        }
    }

    /// Whether the server closed the connection (or sent something unasked) while it was
    /// idle. Costs a syscall only when the event loop saw the socket become readable.
    pub(crate) fn closed_while_idle(&self) -> bool {
        let mut probe = [0u8; 1];
        !matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Read more bytes into the buffer (compacting or growing it); `Ok(false)` at EOF.
    async fn fill(&mut self) -> Result<bool, ReadError> {
        if self.pos > 0 && self.pos == self.len {
            self.pos = 0;
            self.len = 0;
        }
        if self.len == self.buf.len() {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.len, 0);
                self.len -= self.pos;
                self.pos = 0;
            } else {
                let grown = self.buf.len() * 2;
                self.buf.resize(grown, 0);
            }
        }
        let n = self
            .stream
            .read(&mut self.buf[self.len..])
            .await
            .map_err(ReadError::Io)?;
        self.len += n;
        Ok(n > 0)
    }

    fn unread(&self) -> &[u8] {
        &self.buf[self.pos..self.len]
    }

    /// Read and discard exactly `n` body bytes.
    async fn skip(&mut self, mut n: u64) -> Result<(), ReadError> {
        loop {
            let here = (self.len - self.pos) as u64;
            if here >= n {
                self.pos += n as usize;
                return Ok(());
            }
            n -= here;
            self.pos = self.len;
            if !self.fill().await? {
                return Err(ReadError::Closed("in the middle of the body"));
            }
        }
    }

    /// One line (without its CRLF) as an owned string, reading as needed.
    async fn line(&mut self) -> Result<String, ReadError> {
        loop {
            if let Some(at) = self.unread().windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.unread()[..at]).into_owned();
                self.pos += at + 2;
                return Ok(line);
            }
            if self.len - self.pos > MAX_HEAD {
                return Err(ReadError::Malformed("a chunk line is too long".into()));
            }
            if !self.fill().await? {
                return Err(ReadError::Closed("in the middle of a chunked body"));
            }
        }
    }

    /// A chunked body, trailers included.
    async fn skip_chunked(&mut self) -> Result<(), ReadError> {
        loop {
            let line = self.line().await?;
            let size = line.split(';').next().unwrap_or("").trim();
            let size = u64::from_str_radix(size, 16)
                .map_err(|_| ReadError::Malformed(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !self.line().await?.is_empty() {}
                return Ok(());
            }
            self.skip(size).await?;
            if !self.line().await?.is_empty() {
                return Err(ReadError::Malformed("no CRLF after a chunk".into()));
            }
        }
    }

    /// Read one whole answer; returns its status and whether the connection can be reused.
    async fn answer(&mut self, head_request: bool) -> Result<(u16, bool), ReadError> {
        loop {
            let (status, consumed, framing, keep_alive) = loop {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut response = httparse::Response::new(&mut headers);
                match response.parse(self.unread()) {
                    Ok(httparse::Status::Complete(consumed)) => {
                        let status = response.code.unwrap_or(0);
                        let http10 = response.version == Some(0);
                        let (framing, keep_alive) = framing(response.headers, http10)?;
                        break (status, consumed, framing, keep_alive);
                    }
                    Ok(httparse::Status::Partial) => {
                        if self.len - self.pos > MAX_HEAD {
                            return Err(ReadError::Malformed(
                                "the answer's head is too long".into(),
                            ));
                        }
                        if !self.fill().await? {
                            let detail = if self.len == self.pos {
                                "before an answer"
                            } else {
                                "in the middle of the answer's head"
                            };
                            return Err(ReadError::Closed(detail));
                        }
                    }
                    Err(e) => {
                        return Err(ReadError::Malformed(format!("invalid HTTP answer: {e}")));
                    }
                }
            };
            self.pos += consumed;
            if (100..200).contains(&status) {
                // An interim answer (100 Continue, 103 Early Hints): the real one follows.
                continue;
            }
            let bodiless = head_request || status == 204 || status == 304;
            let reusable = match framing {
                _ if bodiless => keep_alive,
                Framing::Chunked => {
                    self.skip_chunked().await?;
                    keep_alive
                }
                Framing::Length(n) => {
                    self.skip(n).await?;
                    keep_alive
                }
                Framing::UntilClose => {
                    while self.fill().await? {
                        self.pos = self.len;
                    }
                    false
                }
            };
            // Bytes beyond the answer were never asked for: the connection is out of step.
            return Ok((status, reusable && self.pos == self.len));
        }
    }
}

enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// How the body is delimited, and whether the connection stays open after it.
fn framing(headers: &[httparse::Header<'_>], http10: bool) -> Result<(Framing, bool), ReadError> {
    let mut framing = Framing::UntilClose;
    let mut keep_alive = !http10;
    for h in headers {
        if h.name.eq_ignore_ascii_case("content-length") {
            if !matches!(framing, Framing::Chunked) {
                let n = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .ok_or_else(|| {
                        ReadError::Malformed(format!(
                            "bad Content-Length {:?}",
                            String::from_utf8_lossy(h.value)
                        ))
                    })?;
                framing = Framing::Length(n);
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if contains_ignore_case(h.value, b"chunked") {
                framing = Framing::Chunked;
            }
        } else if h.name.eq_ignore_ascii_case("connection") {
            if contains_ignore_case(h.value, b"close") {
                keep_alive = false;
            } else if contains_ignore_case(h.value, b"keep-alive") {
                keep_alive = true;
            }
        }
    }
    Ok((framing, keep_alive))
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

async fn connect(sh: &Shared) -> Result<Conn, Ending> {
    let stream = TcpStream::connect(sh.target)
        .await
        .map_err(|e| classify_io(&e, "connect"))?;
    let _ = stream.set_nodelay(true);
    sh.rec.borrow_mut().connections += 1;
    Ok(Conn::new(stream))
}

fn idle(sh: &Shared) -> Option<Conn> {
    let mut pool = sh.http_pool.borrow_mut();
    while let Some(conn) = pool.pop() {
        if !conn.closed_while_idle() {
            return Some(conn);
        }
    }
    None
}

/// Render request `seq` into `out`: request line, Host, the template's headers, a
/// Content-Length for a body (or for a body-carrying method without one), the body.
fn render(sh: &Shared, seq: u64, out: &mut Vec<u8>) -> Option<bool> {
    render_request(sh.compiled.request(seq), &sh.host, seq, out)
}

/// Render `request` for `seq` into `out`; `Some(true)` for a HEAD request, `None` for a TCP
/// template.
pub(crate) fn render_request(
    request: &CompiledRequest,
    host: &str,
    seq: u64,
    out: &mut Vec<u8>,
) -> Option<bool> {
    let CompiledRequest::Http {
        method,
        path,
        body,
        headers,
        ..
    } = request
    else {
        return None;
    };
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    path.render_into(seq, out);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !headers.has_host {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(host.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(&headers.block);
    match body {
        Some(body) => {
            let mut rendered = Vec::new();
            body.render_into(seq, &mut rendered);
            out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", rendered.len()).as_bytes());
            out.extend_from_slice(&rendered);
        }
        None if matches!(method.as_str(), "POST" | "PUT" | "PATCH") => {
            out.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        }
        None => out.extend_from_slice(b"\r\n"),
    }
    Some(method == "HEAD")
}

/// Send the rendered `request` on `conn` and read the whole answer: its status and whether
/// the connection can carry another request.
pub(crate) async fn send(
    conn: &mut Conn,
    request: &[u8],
    head_request: bool,
) -> Result<(u16, bool), ReadError> {
    conn.stream
        .write_all(request)
        .await
        .map_err(ReadError::Io)?;
    conn.answer(head_request).await
}

/// Send request `seq`; the caller bounds it with the timeout.
pub(crate) async fn exchange(sh: &Shared, seq: u64) -> Ending {
    let mut request = Vec::with_capacity(256);
    let Some(head_request) = render(sh, seq, &mut request) else {
        return Ending::failed(
            ErrorClass::Other,
            "an HTTP exchange for a TCP template".into(),
        );
    };
    let mut conn = match idle(sh) {
        Some(conn) => conn,
        None => match connect(sh).await {
            Ok(conn) => conn,
            Err(ending) => return ending,
        },
    };
    if let Err(e) = conn.stream.write_all(&request).await {
        return classify_io(&e, "write");
    }
    let (status, reusable) = match conn.answer(head_request).await {
        Ok(answer) => answer,
        Err(ReadError::Io(e)) => return classify_io(&e, "read"),
        Err(ReadError::Closed(when)) => {
            return Ending::failed(ErrorClass::Reset, format!("the connection closed {when}"));
        }
        Err(ReadError::Malformed(what)) => return Ending::failed(ErrorClass::Other, what),
    };
    if reusable {
        sh.http_pool.borrow_mut().push(conn);
    }
    let CompiledRequest::Http { expect_status, .. } = sh.compiled.request(seq) else {
        return Ending::failed(
            ErrorClass::Other,
            "an HTTP exchange for a TCP template".into(),
        );
    };
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
