//! The guard in front of a stdio MCP connection.
//!
//! rmcp silently drops a line that is not JSON or is too long; a client that sent one would
//! wait forever for its answer. This front reads stdin itself, answers every such line with a
//! JSON-RPC parse error (id null), and hands the good lines to rmcp through an in-memory pipe.
//! Both rmcp's answers and the front's errors reach stdout whole-line by whole-line, so the
//! two never interleave inside a frame.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The longest line accepted from a client; longer ones are refused, not buffered whole.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Starts the front on the given streams and returns the ends rmcp should serve on.
pub fn front<R, W>(input: R, output: W) -> (DuplexStream, DuplexStream)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_in, mut to_rmcp) = tokio::io::duplex(64 * 1024);
    let (from_rmcp, rmcp_out) = tokio::io::duplex(64 * 1024);
    let (lines, mut outgoing) = mpsc::channel::<Vec<u8>>(64);

    let errors = lines.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(input);
        loop {
            match read_bounded_line(&mut reader).await {
                Ok(None) => break,
                Ok(Some(Incoming::TooLong(length))) => {
                    let message = format!(
                        "the message was {length} bytes or more; the limit is {MAX_LINE_BYTES} bytes per line"
                    );
                    if errors.send(parse_error(&message)).await.is_err() {
                        break;
                    }
                }
                Ok(Some(Incoming::Line(line))) => {
                    let trimmed = line.trim_ascii();
                    if trimmed.is_empty() {
                        continue;
                    }
                    if let Err(problem) = check_frame(trimmed) {
                        if errors.send(parse_error(&problem)).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    if to_rmcp.write_all(trimmed).await.is_err()
                        || to_rmcp.write_all(b"\n").await.is_err()
                    {
                        break;
                    }
                }
                Err(error) => {
                    tracing::debug!(%error, "stdin closed");
                    break;
                }
            }
        }
        let _ = to_rmcp.shutdown().await;
    });

    tokio::spawn(async move {
        let mut reader = BufReader::new(from_rmcp);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if lines.send(line.clone()).await.is_err() {
                        break;
                    }
                }
            }
        }
    });

    tokio::spawn(async move {
        let mut output = output;
        while let Some(mut line) = outgoing.recv().await {
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });

    (rmcp_in, rmcp_out)
}

enum Incoming {
    Line(Vec<u8>),
    TooLong(usize),
}

/// Reads one line without ever holding more than the limit; the rest of an oversized line is
/// skipped as it streams past.
async fn read_bounded_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> std::io::Result<Option<Incoming>> {
    let mut line = Vec::new();
    let mut skipped = 0usize;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (line.is_empty(), skipped) {
                (true, 0) => None,
                (_, 0) => Some(Incoming::Line(line)),
                (_, n) => Some(Incoming::TooLong(n)),
            });
        }
        let (chunk, found_end) = match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => (&buffer[..end], true),
            None => (buffer, false),
        };
        let consumed = chunk.len() + usize::from(found_end);
        if skipped > 0 || line.len() + chunk.len() > MAX_LINE_BYTES {
            skipped += line.len() + chunk.len();
            line = Vec::new();
        } else {
            line.extend_from_slice(chunk);
        }
        reader.consume(consumed);
        if found_end {
            return Ok(Some(if skipped > 0 {
                Incoming::TooLong(skipped)
            } else {
                Incoming::Line(line)
            }));
        }
    }
}

/// A frame must be UTF-8 JSON; what it means is rmcp's to judge.
fn check_frame(line: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(line).map_err(|_| {
        "the message is not UTF-8; send one JSON-RPC message per line, as UTF-8 JSON".to_string()
    })?;
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map(|_| ())
        .map_err(|error| {
            format!("the message is not JSON ({error}); send one JSON-RPC message per line")
        })
}

fn parse_error(message: &str) -> Vec<u8> {
    let frame = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {message}")},
    });
    let mut bytes = serde_json::to_vec(&frame).expect("frames serialise");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn bad_lines_get_parse_errors_and_good_lines_pass() {
        let (mut client_in, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, mut client_out) = tokio::io::duplex(1 << 20);
        let (mut rmcp_in, mut rmcp_out) = front(server_in, server_out);
        client_in
            .write_all(b"not json\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\xff\xfe\n")
            .await
            .unwrap();
        drop(client_in);
        let mut passed = String::new();
        rmcp_in.read_to_string(&mut passed).await.unwrap();
        assert_eq!(passed, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n");
        rmcp_out.shutdown().await.unwrap();
        drop(rmcp_out);
        let mut answered = String::new();
        client_out.read_to_string(&mut answered).await.unwrap();
        let errors: Vec<serde_json::Value> = answered
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(errors.len(), 2);
        assert!(
            errors
                .iter()
                .all(|e| e["error"]["code"] == -32700 && e["id"].is_null())
        );
        assert!(
            errors[1]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("UTF-8")
        );
    }

    #[tokio::test]
    async fn an_oversized_line_is_refused_without_being_buffered() {
        let (mut client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, mut client_out) = tokio::io::duplex(1 << 16);
        let (_rmcp_in, rmcp_out) = front(server_in, server_out);
        tokio::spawn(async move {
            let big = vec![b'x'; MAX_LINE_BYTES + 10];
            client_in.write_all(&big).await.unwrap();
            client_in.write_all(b"\n").await.unwrap();
        });
        let mut reader = BufReader::new(&mut client_out);
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        assert!(line.contains("-32700") && line.contains("limit"), "{line}");
        drop(rmcp_out);
    }
}
