//! One exchange of a TCP line protocol over a pooled connection: write the rendered `send`,
//! read one reply line, succeed when it starts with `expect`. A connection whose reply left
//! extra bytes buffered (a multi-line reply) is not reused, so replies never go out of step.

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::{Shared, classify_io};
use crate::plan::CompiledRequest;
use crate::record::Ending;
use crate::report::ErrorClass;

pub(crate) struct Conn {
    stream: BufReader<TcpStream>,
}

async fn connect(sh: &Shared) -> Result<Conn, Ending> {
    let stream = TcpStream::connect(sh.target)
        .await
        .map_err(|e| classify_io(&e, "connect"))?;
    let _ = stream.set_nodelay(true);
    sh.rec.borrow_mut().connections += 1;
    Ok(Conn {
        stream: BufReader::with_capacity(4096, stream),
    })
}

/// Send request `seq`; the caller bounds it with the timeout.
pub(crate) async fn exchange(sh: &Shared, seq: u64) -> Ending {
    let CompiledRequest::Tcp { send, expect } = sh.compiled.request(seq) else {
        return Ending::failed(
            ErrorClass::Other,
            "a TCP exchange for an HTTP template".into(),
        );
    };
    let idle = sh.tcp_pool.borrow_mut().pop();
    let mut conn = match idle {
        Some(conn) => conn,
        None => match connect(sh).await {
            Ok(conn) => conn,
            Err(ending) => return ending,
        },
    };
    let mut line = Vec::with_capacity(64);
    send.render_into(seq, &mut line);
    if let Err(e) = conn.stream.get_mut().write_all(&line).await {
        return classify_io(&e, "write");
    }
    line.clear();
    match conn.stream.read_until(b'\n', &mut line).await {
        Err(e) => return classify_io(&e, "read"),
        Ok(0) => {
            return Ending::failed(
                ErrorClass::Reset,
                "the connection closed before a reply".into(),
            );
        }
        Ok(_) if line.last() != Some(&b'\n') => {
            return Ending::failed(
                ErrorClass::Reset,
                "the connection closed in the middle of a reply".into(),
            );
        }
        Ok(_) => {}
    }
    if conn.stream.buffer().is_empty() {
        sh.tcp_pool.borrow_mut().push(conn);
    }
    if line.starts_with(expect) {
        Ending::success()
    } else {
        let text = String::from_utf8_lossy(&line);
        Ending::answer_error(
            ErrorClass::UnexpectedReply,
            false,
            text.trim_end().to_string(),
        )
    }
}
