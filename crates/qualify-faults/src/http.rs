//! The proxy's HTTP/1.1 mode, for a dependency declared `protocol = "http"` whose fault is not
//! on the wire (`none`, a process fault, or an HTTP fault): each connection is relayed one
//! exchange at a time — the request's head parsed (`httparse`), its body passed on as framed
//! (`Content-Length` or chunked, trailers included), the reply's head parsed and its body passed
//! on (`Content-Length`, chunked, or until close; none after `HEAD`, 1xx, 204 and 304; interim
//! 1xx replies relayed, a 101 switches the connection to a plain tunnel). Keep-alive
//! connections carry any number of exchanges; `Connection: close` (or HTTP/1.0 without
//! keep-alive) ends one after its exchange.
//!
//! Counting: `requests` and `replies` are HTTP requests and final replies, each phase keeps the
//! replies' statuses as the client received them ([`crate::stats::HttpCounters`]). The HTTP
//! faults act per request in the window, a share of them (the fault's toxicity, drawn per
//! request from the seed):
//!
//! | fault | effect |
//! |---|---|
//! | `status(code)` | the request reaches the dependency; its reply is read whole and replaced by an empty one with `code` |
//! | `throttle(code, retry_after d)` | the proxy answers `code` with `Retry-After: d` (seconds); the dependency never sees the request |
//! | `http_delay(d)` | the request is held `d` before it is forwarded (once per request, whatever its size) |

use std::io;
use std::time::{Duration, Instant};

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::fault::{Direction, FaultKind};
use crate::proxy::{Conn, End, rst, unit};
use crate::stats::Phase;

/// The largest message head accepted (request line or status line and headers).
const MAX_HEAD: usize = 64 * 1024;
/// Headers parsed per message.
const MAX_HEADERS: usize = 128;

/// How a message's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    None,
    Length(u64),
    Chunked,
    /// A reply without length: its body ends when the dependency closes.
    UntilClose,
}

/// What a request's head says.
#[derive(Debug)]
struct Request {
    body: Body,
    head_method: bool,
    close: bool,
}

/// What a reply's head says.
#[derive(Debug)]
struct Reply {
    status: u16,
    body: Body,
    close: bool,
}

/// Relay HTTP exchanges between `client` and `upstream` until either side ends; how it ended
/// (both sockets are reset when it ends in [`End::Reset`]).
pub(crate) async fn relay(conn: &Conn, client: TcpStream, upstream: TcpStream) -> End {
    let (cr, mut cw) = client.into_split();
    let (ur, mut uw) = upstream.into_split();
    let mut cr = BufReader::new(cr);
    let mut ur = BufReader::new(ur);
    let end = exchanges(conn, &mut cr, &mut cw, &mut ur, &mut uw).await;
    if end == End::Reset {
        conn.shared.lock().reset();
        rst(cw.as_ref());
        rst(uw.as_ref());
    }
    end
}

/// One exchange after another on a connection.
async fn exchanges(
    conn: &Conn,
    cr: &mut BufReader<OwnedReadHalf>,
    cw: &mut OwnedWriteHalf,
    ur: &mut BufReader<OwnedReadHalf>,
    uw: &mut OwnedWriteHalf,
) -> End {
    let fault = conn.config.fault;
    let mut index: u64 = 0;
    loop {
        let mut head = Vec::with_capacity(512);
        let request = match read_request(cr, &mut head).await {
            Ok(Some(r)) => r,
            Ok(None) => return End::Eof,
            Err(_) => return End::Reset,
        };
        index += 1;
        let phase = {
            let mut c = conn.shared.lock();
            c.bytes(Direction::Upstream, head.len());
            c.message(Direction::Upstream, &conn.busy, Instant::now())
        };
        let draw = unit(conn.config.seed ^ conn.id.rotate_left(17), index);
        let active = phase == Phase::During && fault.kind.is_http() && draw < fault.toxicity;
        let mut replace = None;
        if active {
            conn.mark_faulted();
            match fault.kind {
                FaultKind::Throttle { code, retry_after } => {
                    // The dependency never sees it: its body is read and dropped here.
                    let mut drained = 0;
                    if copy_body(cr, None::<&mut OwnedWriteHalf>, request.body, &mut drained)
                        .await
                        .is_err()
                    {
                        return End::Reset;
                    }
                    conn.shared
                        .lock()
                        .bytes(Direction::Upstream, drained as usize);
                    let reply = made_reply(code, Some(retry_after), request.close);
                    if cw.write_all(&reply).await.is_err() {
                        return End::Reset;
                    }
                    let mut c = conn.shared.lock();
                    c.message(Direction::Downstream, &conn.busy, Instant::now());
                    c.http_reply(code, true);
                    drop(c);
                    if request.close {
                        return End::Eof;
                    }
                    continue;
                }
                FaultKind::HttpDelay { delay } => {
                    conn.shared.lock().http_delayed();
                    tokio::time::sleep(delay).await;
                }
                FaultKind::HttpStatus { code } => replace = Some(code),
                _ => {}
            }
        }
        if uw.write_all(&head).await.is_err() {
            return End::Reset;
        }
        let mut sent = 0;
        let send = copy_body(cr, Some(&mut *uw), request.body, &mut sent);
        let answer = relay_reply(conn, ur, &mut *cw, &request, replace);
        let (sent_result, answer) = tokio::join!(send, answer);
        conn.shared.lock().bytes(Direction::Upstream, sent as usize);
        let reply_close = match (sent_result, answer) {
            (Ok(()), Ok(Answer::Final { close })) => close,
            (_, Ok(Answer::Upgraded)) => {
                // A protocol switch: from here on the bytes are not HTTP.
                let up = tokio::io::copy(cr, uw);
                let down = tokio::io::copy(ur, cw);
                let _ = tokio::join!(up, down);
                return End::Eof;
            }
            _ => return End::Reset,
        };
        if request.close || reply_close {
            let _ = cw.shutdown().await;
            return End::Eof;
        }
    }
}

/// How a reply ended.
enum Answer {
    /// A final reply was passed on (or replaced); `close`: the connection ends after it.
    Final { close: bool },
    /// `101 Switching Protocols` was passed on.
    Upgraded,
}

/// Read the dependency's reply to `request` and pass it to the client (interim 1xx replies
/// too), or — with `replace` — read it whole and send an empty one with that status instead.
async fn relay_reply<R, W>(
    conn: &Conn,
    ur: &mut R,
    cw: &mut W,
    request: &Request,
    replace: Option<u16>,
) -> io::Result<Answer>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let mut head = Vec::with_capacity(512);
        if !read_head(ur, &mut head).await? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the dependency closed before it answered",
            ));
        }
        let reply = parse_reply(&head, request)?;
        conn.shared.lock().bytes(Direction::Downstream, head.len());
        if (100..200).contains(&reply.status) && reply.status != 101 {
            cw.write_all(&head).await?;
            continue;
        }
        if reply.status == 101 {
            cw.write_all(&head).await?;
            return Ok(Answer::Upgraded);
        }
        let mut received = 0;
        let status = match replace {
            Some(code) => {
                copy_body(ur, None::<&mut W>, reply.body, &mut received).await?;
                let close = request.close || reply.close;
                cw.write_all(&made_reply(code, None, close)).await?;
                code
            }
            None => {
                cw.write_all(&head).await?;
                copy_body(ur, Some(cw), reply.body, &mut received).await?;
                reply.status
            }
        };
        let mut c = conn.shared.lock();
        c.bytes(Direction::Downstream, received as usize);
        c.message(Direction::Downstream, &conn.busy, Instant::now());
        c.http_reply(status, replace.is_some());
        return Ok(Answer::Final { close: reply.close });
    }
}

/// An empty reply with `status` (and `Retry-After`), as the proxy sends it.
fn made_reply(status: u16, retry_after: Option<Duration>, close: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: 0\r\n",
        reason(status)
    );
    if let Some(d) = retry_after {
        out.push_str(&format!("Retry-After: {}\r\n", d.as_secs()));
    }
    if close {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ if status < 500 => "Client Error",
        _ => "Server Error",
    }
}

/// Read one message head (through the empty line) into `head`, skipping empty lines before
/// it. `false`: the stream ended before a head began.
async fn read_head<R: AsyncBufRead + Unpin>(r: &mut R, head: &mut Vec<u8>) -> io::Result<bool> {
    loop {
        let start = head.len();
        let n = r.read_until(b'\n', head).await?;
        if n == 0 {
            if head.is_empty() {
                return Ok(false);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the stream ended inside a message head",
            ));
        }
        let line = &head[start..];
        let blank = line == b"\r\n" || line == b"\n";
        if blank && start == 0 {
            // An empty line before the request line (RFC 9112 §2.2): ignored.
            head.clear();
            continue;
        }
        if blank {
            return Ok(true);
        }
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a message head longer than 64 KiB",
            ));
        }
    }
}

async fn read_request<R: AsyncBufRead + Unpin>(
    r: &mut R,
    head: &mut Vec<u8>,
) -> io::Result<Option<Request>> {
    if !read_head(r, head).await? {
        return Ok(None);
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not an HTTP/1.x request",
            ));
        }
    }
    let version = req.version.unwrap_or(1);
    let head_method = req.method.is_some_and(|m| m.eq_ignore_ascii_case("HEAD"));
    let body = match framing(req.headers)? {
        Some(body) => body,
        None => Body::None,
    };
    Ok(Some(Request {
        body,
        head_method,
        close: closes(req.headers, version),
    }))
}

fn parse_reply(head: &[u8], request: &Request) -> io::Result<Reply> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not an HTTP/1.x reply",
            ));
        }
    }
    let status = resp.code.unwrap_or(0);
    let version = resp.version.unwrap_or(1);
    let no_body =
        request.head_method || (100..200).contains(&status) || status == 204 || status == 304;
    let body = if no_body {
        Body::None
    } else {
        framing(resp.headers)?.unwrap_or(Body::UntilClose)
    };
    Ok(Reply {
        status,
        body,
        close: closes(resp.headers, version) || body == Body::UntilClose,
    })
}

/// The body framing the headers declare (`None`: neither length nor chunked).
fn framing(headers: &[httparse::Header<'_>]) -> io::Result<Option<Body>> {
    let value = |name: &'static str| {
        headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    if value("transfer-encoding")
        .next_back()
        .is_some_and(|v| v.rsplit(',').next().is_some_and(|c| c.trim() == "chunked"))
    {
        return Ok(Some(Body::Chunked));
    }
    match value("content-length").next() {
        Some(v) => v
            .parse::<u64>()
            .map(|n| Some(Body::Length(n)))
            .map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "an unreadable Content-Length")
            }),
        None => Ok(None),
    }
}

/// Whether the connection ends after this message: `Connection: close`, or HTTP/1.0 without
/// `Connection: keep-alive`.
fn closes(headers: &[httparse::Header<'_>], version: u8) -> bool {
    let tokens: Vec<String> = headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("connection"))
        .flat_map(|h| {
            String::from_utf8_lossy(h.value)
                .split(',')
                .map(|t| t.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    tokens.iter().any(|t| t == "close")
        || (version == 0 && !tokens.iter().any(|t| t == "keep-alive"))
}

/// Pass a body on from `r` to `w` (or drop it when `w` is `None`), as it is framed; `moved`
/// counts its bytes.
async fn copy_body<R, W>(
    r: &mut R,
    mut w: Option<&mut W>,
    body: Body,
    moved: &mut u64,
) -> io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match body {
        Body::None => Ok(()),
        Body::Length(n) => copy_exact(r, &mut w, n, moved).await,
        Body::UntilClose => {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let n = r.read(&mut buf).await?;
                if n == 0 {
                    return Ok(());
                }
                *moved += n as u64;
                if let Some(w) = w.as_mut() {
                    w.write_all(&buf[..n]).await?;
                }
            }
        }
        Body::Chunked => loop {
            let mut line = Vec::new();
            if r.read_until(b'\n', &mut line).await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the stream ended inside a chunked body",
                ));
            }
            *moved += line.len() as u64;
            if let Some(w) = w.as_mut() {
                w.write_all(&line).await?;
            }
            let text = String::from_utf8_lossy(&line);
            let size_text = text.split(';').next().unwrap_or("").trim();
            let size = u64::from_str_radix(size_text, 16).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "an unreadable chunk size")
            })?;
            if size == 0 {
                // Trailers, through the empty line.
                loop {
                    let mut t = Vec::new();
                    if r.read_until(b'\n', &mut t).await? == 0 {
                        return Ok(());
                    }
                    *moved += t.len() as u64;
                    if let Some(w) = w.as_mut() {
                        w.write_all(&t).await?;
                    }
                    if t == b"\r\n" || t == b"\n" {
                        return Ok(());
                    }
                }
            }
            copy_exact(r, &mut w, size, moved).await?;
            // The chunk's CRLF.
            let mut end = Vec::new();
            r.read_until(b'\n', &mut end).await?;
            *moved += end.len() as u64;
            if let Some(w) = w.as_mut() {
                w.write_all(&end).await?;
            }
        },
    }
}

async fn copy_exact<R, W>(
    r: &mut R,
    w: &mut Option<&mut W>,
    mut n: u64,
    moved: &mut u64,
) -> io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    while n > 0 {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the stream ended inside a body",
            ));
        }
        let take = buf.len().min(usize::try_from(n).unwrap_or(usize::MAX));
        if let Some(w) = w.as_mut() {
            w.write_all(&buf[..take]).await?;
        }
        r.consume(take);
        n -= take as u64;
        *moved += take as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn bodies_are_passed_on_as_framed() {
        let chunked = b"5\r\nhello\r\n0;x=1\r\nTrailer: t\r\n\r\nNEXT".to_vec();
        let mut r = BufReader::new(&chunked[..]);
        let mut out = Vec::new();
        let mut moved = 0;
        copy_body(&mut r, Some(&mut out), Body::Chunked, &mut moved)
            .await
            .unwrap();
        assert_eq!(out, &chunked[..chunked.len() - 4]);
        assert_eq!(moved, out.len() as u64);
        let mut rest = String::new();
        r.read_to_string(&mut rest).await.unwrap();
        assert_eq!(rest, "NEXT", "the next message is left in the stream");

        let mut r = BufReader::new(&b"abcdefgh"[..]);
        let mut out = Vec::new();
        copy_body(&mut r, Some(&mut out), Body::Length(5), &mut moved)
            .await
            .unwrap();
        assert_eq!(out, b"abcde");
        let mut r = BufReader::new(&b"abc"[..]);
        let err = copy_body(&mut r, None::<&mut Vec<u8>>, Body::Length(5), &mut moved).await;
        assert!(err.is_err(), "a short body is an error");
    }

    #[test]
    fn framing_and_keep_alive_follow_the_headers() {
        let request = |text: &str| {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut headers);
            req.parse(text.as_bytes()).unwrap();
            (
                framing(req.headers).unwrap(),
                closes(req.headers, req.version.unwrap()),
            )
        };
        assert_eq!(
            request("POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n"),
            (Some(Body::Length(12)), false)
        );
        assert_eq!(
            request(
                "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n"
            ),
            (Some(Body::Chunked), false),
            "chunked wins over a length"
        );
        assert_eq!(
            request("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n"),
            (None, true)
        );
        assert_eq!(request("GET / HTTP/1.0\r\n\r\n"), (None, true));
        assert_eq!(
            request("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
            (None, false)
        );
        let get = Request {
            body: Body::None,
            head_method: false,
            close: false,
        };
        let head = Request {
            head_method: true,
            ..get
        };
        let reply = |text: &str, req: &Request| {
            let r = parse_reply(text.as_bytes(), req).unwrap();
            (r.status, r.body, r.close)
        };
        assert_eq!(
            reply("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", &get),
            (200, Body::Length(2), false)
        );
        assert_eq!(
            reply("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", &head),
            (200, Body::None, false),
            "no body after HEAD"
        );
        assert_eq!(
            reply("HTTP/1.1 204 No Content\r\n\r\n", &get),
            (204, Body::None, false)
        );
        assert_eq!(
            reply("HTTP/1.1 200 OK\r\n\r\n", &get),
            (200, Body::UntilClose, true),
            "no length: until close"
        );
        assert_eq!(
            made_reply(429, Some(Duration::from_secs(2)), true),
            b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\nRetry-After: 2\r\nConnection: close\r\n\r\n"
        );
    }
}
