//! The adapter protocol's loop, with the reference behind it (`session-conformance serve`):
//! one request a line in, one response a line out (`PROTOCOL.md` "Modes").

use std::io::{self, BufRead, Read, Write};

use session_reference::model::Profile;

use crate::protocol::{Request, Response};

/// The longest request line `serve` reads, its newline aside (128 MiB: a case's `$repeat` templates expand
/// to at most 64 MiB, `corpus::MAX_EXPANSION_BYTES`, and JSON escapes can double that).
pub const MAX_REQUEST_BYTES: usize = 128 << 20;

/// Answers every line of `input` on `output` until `bye`, the end of input, or (with
/// `one_shot`) the first answer. A line that is not a request gets an `exception` answer.
/// A line longer than [`MAX_REQUEST_BYTES`] gets one too, and ends the loop: its end is
/// not read, so memory stays bounded whatever the input. A line of more values than
/// [`crate::guard::MAX_MESSAGE_VALUES`] is answered with an error without being parsed.
///
/// # Errors
/// Reading `input` or writing `output` failed (a closed output is `BrokenPipe`), or a
/// request line was too long (`InvalidData`).
pub fn serve(
    profile: Profile,
    one_shot: bool,
    input: impl Read,
    output: impl Write,
) -> io::Result<()> {
    serve_limited(profile, one_shot, input, output, MAX_REQUEST_BYTES)
}

/// [`serve`] with request lines of at most `limit` bytes.
fn serve_limited(
    profile: Profile,
    one_shot: bool,
    input: impl Read,
    mut output: impl Write,
    limit: usize,
) -> io::Result<()> {
    // Reads of 64 KiB (what a pipe holds) go past stdin's own 8 KiB buffer.
    let mut input = io::BufReader::with_capacity(64 * 1024, input);
    // One buffer for every request and one for every reply: a request may carry
    // 500,000-character strings, and growing a fresh buffer to that size each time
    // costs more than reading it.
    let mut line = Vec::new();
    let mut reply = Vec::new();
    loop {
        line.clear();
        // Bytes, not a `String`: the JSON parser checks the text is UTF-8 as it reads it.
        let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        if (&mut input).take(cap).read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if line.len() > limit && !line.ends_with(b"\n") {
            let message = format!("a request line longer than {limit} bytes; serve stops");
            let mut reply = serde_json::to_vec(&Response::error("", "exception", &message))?;
            reply.push(b'\n');
            output.write_all(&reply)?;
            output.flush()?;
            return Err(io::Error::new(io::ErrorKind::InvalidData, message));
        }
        if is_blank(&line) {
            continue;
        }
        reply.clear();
        match read_line(&line) {
            Incoming::Request(request) => {
                // Ack mode (`session-conformance crash`): each acknowledgement is written
                // and flushed as its step returns, before the next step runs.
                let mut failed = None;
                let acked = super::execute_acked(&request, &mut |ack| {
                    if failed.is_none() {
                        let mut line = serde_json::to_vec(ack).unwrap_or_default();
                        line.push(b'\n');
                        failed = output.write_all(&line).and_then(|()| output.flush()).err();
                    }
                });
                if let Some(e) = failed {
                    return Err(e);
                }
                let response = acked.unwrap_or_else(|| super::execute(request));
                serde_json::to_writer(&mut reply, &response)
            }
            Incoming::Hello => serde_json::to_writer(&mut reply, &super::hello(profile)),
            Incoming::Bye => return Ok(()),
            Incoming::Bad(error) => serde_json::to_writer(&mut reply, &error),
        }?;
        reply.push(b'\n');
        output.write_all(&reply)?;
        output.flush()?;
        if one_shot {
            return Ok(());
        }
    }
}

/// What a line of `serve`'s input asks for.
enum Incoming {
    /// A case to run.
    Request(Request),
    /// The runner's greeting: answered with the reference's hello.
    Hello,
    /// The end of the run.
    Bye,
    /// Not JSON, or not a request: the error to answer with.
    Bad(Response),
}

/// Reads one line of `serve`'s input.
fn read_line(line: &[u8]) -> Incoming {
    // Each value becomes a hundred bytes or more however few it is written in (`0,`):
    // counted before anything is parsed, memory follows the bytes.
    if let Err(e) = crate::guard::check_values(line, crate::guard::MAX_MESSAGE_VALUES) {
        let message = format!("a request that {e} (guard::MAX_MESSAGE_VALUES)");
        return Incoming::Bad(Response::error("", "exception", message));
    }
    // Most lines are requests: read as one directly, their arguments are built once.
    if let Ok(request) = serde_json::from_slice::<Request>(line) {
        if request.kind != "hello" && request.kind != "bye" {
            return Incoming::Request(request);
        }
    }
    // Any other line is read as a value first: a greeting, a farewell, or what is wrong.
    let value = match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(value) => value,
        Err(e) => return Incoming::Bad(Response::error("", "exception", format!("not JSON: {e}"))),
    };
    match value["type"].as_str() {
        Some("hello") => Incoming::Hello,
        Some("bye") => Incoming::Bye,
        _ => {
            let case = value["case"].as_str().unwrap_or_default().to_owned();
            // Moved, not cloned: a request may carry 500,000-character strings.
            match serde_json::from_value::<Request>(value) {
                Ok(request) => Incoming::Request(request),
                Err(e) => Incoming::Bad(Response::error(
                    &case,
                    "exception",
                    format!("bad request: {e}"),
                )),
            }
        }
    }
}

/// Whether a request line is only whitespace (Unicode's, as `str::trim` has it). Only
/// a line whose first other byte is not ASCII is checked as text: a request starts
/// with `{`, and may carry half a million characters.
fn is_blank(line: &[u8]) -> bool {
    match line
        .iter()
        .find(|&&b| !(b.is_ascii() && char::from(b).is_whitespace()))
    {
        None => true,
        Some(&b) if !b.is_ascii() => std::str::from_utf8(line).is_ok_and(|t| t.trim().is_empty()),
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_hello_requests_and_garbage_then_stops_at_bye() {
        let input = concat!(
            "{\"type\":\"hello\"}\n",
            "   \n",
            "not json\n",
            "{\"type\":\"bye\"}\n",
            "{\"type\":\"hello\"}\n",
        );
        let mut out = Vec::new();
        serve(Profile::Pi, false, input.as_bytes(), &mut out).expect("serve");
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .expect("utf8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(lines.len(), 2, "hello, the error; nothing after bye");
        assert_eq!(lines[1]["error"]["kind"], "exception");
    }

    /// Values are counted, not only objects and arrays: a request of a million numbers
    /// is a few megabytes and would take a hundred times that once parsed.
    #[test]
    fn a_request_of_too_many_values_is_refused_before_it_is_parsed() {
        let limit = crate::guard::MAX_MESSAGE_VALUES;
        for (what, args) in [
            ("objects", format!("[{}{{}}]", "{},".repeat(limit))),
            ("numbers", format!("[{}0]", "0,".repeat(limit))),
        ] {
            let line = format!("{{\"type\":\"request\",\"case\":\"c\",\"op\":\"load\",\"profile\":\"pi\",\"dir\":\"/x\",\"args\":{args}}}\n");
            let mut out = Vec::new();
            serve(Profile::Pi, false, line.as_bytes(), &mut out).expect("serve");
            let reply: serde_json::Value = serde_json::from_slice(&out).expect("one JSON line");
            let message = reply["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(&format!("more than the limit of {limit} values")),
                "{what}: {reply}"
            );
        }
    }

    #[test]
    fn a_request_line_past_the_limit_is_answered_and_ends_the_loop() {
        // An endless line (as from /dev/zero) is read only up to the limit.
        let endless = io::repeat(b'x');
        let mut out = Vec::new();
        let error =
            serve_limited(Profile::Pi, false, endless, &mut out, 1000).expect_err("too long");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        let reply: serde_json::Value = serde_json::from_slice(&out).expect("one JSON line");
        assert_eq!(reply["error"]["kind"], "exception");
        assert!(reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than 1000 bytes"));
        // A line of exactly the limit is read as usual.
        let mut exact = b"{\"type\":\"hello\"}".to_vec();
        exact.resize(1000, b' ');
        exact.push(b'\n');
        let mut out = Vec::new();
        serve_limited(Profile::Pi, false, exact.as_slice(), &mut out, 1000).expect("served");
        assert!(String::from_utf8(out).unwrap().contains("\"hello\""));
    }
}
