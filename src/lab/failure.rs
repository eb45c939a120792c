//! Why a trial's first failed request failed, in words a reader can act
//! on: "502 from nginx, upstream closed a kept-alive connection",
//! "503, request queue full".
//!
//! The knowledge is data — a table of nginx error-log patterns and one of
//! (server, status) pairs — so a new server or pattern is one row, not a
//! branch in the trial code. This module reads a log and matches text; it
//! never runs anything.

use crate::load::FirstFailure;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Patterns of nginx's error log (a substring of the message) and what
/// they mean. The first row that matches wins.
pub const NGINX_LOG_HINTS: &[(&str, &str)] = &[
    // A kept-alive upstream connection the server had already closed:
    // nginx's write of the next request fails, or the read finds EOF.
    (
        "(32: Broken pipe) while sending request to upstream",
        "upstream closed a kept-alive connection",
    ),
    (
        "upstream prematurely closed connection",
        "upstream closed a kept-alive connection",
    ),
    (
        "(104: Connection reset by peer) while reading response header from upstream",
        "upstream reset the connection",
    ),
    (
        "(11: Resource temporarily unavailable) while connecting to upstream",
        "the upstream's listen backlog was full",
    ),
    (
        "(111: Connection refused) while connecting to upstream",
        "the upstream refused the connection",
    ),
    ("upstream timed out", "the upstream did not answer in time"),
    (
        "worker_connections are not enough",
        "nginx ran out of worker_connections",
    ),
    (
        "(24: Too many open files)",
        "nginx ran out of file descriptors",
    ),
];

/// Statuses a server answers by itself and what they mean there.
pub const SERVER_STATUS_HINTS: &[(&str, u16, &str)] = &[
    // Passenger answers 503 when its request queue
    // (--max-request-queue-size, 100 by default) is full.
    ("passenger", 503, "request queue full"),
];

/// The longest log line kept in a record.
const MAX_LINE: usize = 400;

/// Where a log file ends now: later, `first_error_line` reads only what
/// was written after.
pub fn log_offset(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The first line at level error or worse written to an nginx error log
/// after `offset`.
pub fn first_error_line(path: &Path, offset: u64) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    f.seek(SeekFrom::Start(offset)).ok()?;
    let mut text = String::new();
    // Enough for the first failures; a flood of lines needs no reading.
    f.take(1 << 20).read_to_string(&mut text).ok()?;
    let line = text.lines().find(|l| {
        ["[error]", "[crit]", "[alert]", "[emerg]"]
            .iter()
            .any(|lvl| l.contains(lvl))
    })?;
    Some(line.chars().take(MAX_LINE).collect())
}

/// Fills in `f.log_line` and `f.reason`. `front` is the front end's name
/// when there is one ("nginx"), with the first error line of its log.
pub fn explain(f: &mut FirstFailure, server: &str, front: Option<(&str, Option<String>)>) {
    let status = f.status;
    if let Some((front_name, Some(line))) = front {
        // An error line during the load: the front end made the answer.
        let hint = NGINX_LOG_HINTS
            .iter()
            .find(|(pattern, _)| line.contains(pattern))
            .map(|(_, hint)| *hint);
        let what = status.map_or(f.kind.clone(), |s| format!("{s} from {front_name}"));
        f.reason = Some(match hint {
            Some(h) => format!("{what}, {h}"),
            None => format!("{what}: {}", log_message(&line)),
        });
        f.log_line = Some(line);
        return;
    }
    let Some(status) = status else {
        return;
    };
    if let Some((_, _, hint)) = SERVER_STATUS_HINTS
        .iter()
        .find(|(name, code, _)| *name == server && *code == status)
    {
        f.reason = Some(match front {
            Some(_) => format!("{status} from {server}, {hint}"),
            None => format!("{status}, {hint}"),
        });
    }
}

/// The message of an nginx log line, without its date, level and pid:
/// "2026/11/23 17:00:00 [error] 12#12: *5 upstream …" → "upstream …".
fn log_message(line: &str) -> &str {
    let after_pid = line.split_once("#").map_or(line, |(_, r)| r);
    let after_pid = after_pid.split_once(": ").map_or(after_pid, |(_, r)| r);
    // "*5 " is the connection number.
    match after_pid.strip_prefix('*') {
        Some(r) => r.split_once(' ').map_or(r, |(_, m)| m),
        None => after_pid,
    }
    .split(", client:")
    .next()
    .unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(status: Option<u16>) -> FirstFailure {
        FirstFailure {
            kind: "status".into(),
            status,
            status_line: status.map(|s| format!("HTTP/1.1 {s} X")),
            detail: "the status was not one of those expected".into(),
            at_s: 0.1,
            log_line: None,
            reason: None,
        }
    }

    /// server, status, front end with its log line, the reason wanted.
    type Row = (
        &'static str,
        Option<u16>,
        Option<(&'static str, Option<String>)>,
        Option<&'static str>,
    );

    #[test]
    fn known_log_lines_and_statuses_become_reasons() {
        let broken = "2026/11/23 17:00:00 [error] 12#12: *5 writev() failed (32: Broken pipe) while sending request to upstream, client: 127.0.0.1, server: , request: \"GET / HTTP/1.1\"";
        let early = "2026/11/23 17:00:00 [error] 12#12: *9 upstream prematurely closed connection while reading response header from upstream, client: 127.0.0.1";
        let odd = "2026/11/23 17:00:00 [error] 12#12: *9 something new happened, client: 127.0.0.1";
        let rows: &[Row] = &[
            (
                "thin",
                Some(502),
                Some(("nginx", Some(broken.into()))),
                Some("502 from nginx, upstream closed a kept-alive connection"),
            ),
            (
                "thin",
                Some(502),
                Some(("nginx", Some(early.into()))),
                Some("502 from nginx, upstream closed a kept-alive connection"),
            ),
            (
                "puma",
                Some(502),
                Some(("nginx", Some(odd.into()))),
                Some("502 from nginx: something new happened"),
            ),
            (
                "passenger",
                Some(503),
                None,
                Some("503, request queue full"),
            ),
            (
                "passenger",
                Some(503),
                Some(("nginx", None)),
                Some("503 from passenger, request queue full"),
            ),
            // Nothing known: no reason made up.
            ("puma", Some(503), None, None),
            ("passenger", Some(500), None, None),
            ("passenger", None, None, None),
        ];
        for (server, status, front, want) in rows {
            let mut f = failure(*status);
            explain(&mut f, server, front.clone());
            assert_eq!(f.reason.as_deref(), *want, "{server} {status:?} {front:?}");
        }
    }

    #[test]
    fn only_error_lines_written_after_the_offset_count() {
        let dir = std::env::temp_dir().join(format!("rb-failure-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("nginx-error.log");
        std::fs::write(&log, "2026/11/23 [error] 1#1: *1 old failure\n").unwrap();
        let offset = log_offset(&log);
        assert!(first_error_line(&log, offset).is_none());
        let mut text = std::fs::read_to_string(&log).unwrap();
        text.push_str("2026/11/23 [notice] 1#1: signal process started\n");
        text.push_str("2026/11/23 [error] 1#1: *7 upstream timed out (110)\n");
        std::fs::write(&log, text).unwrap();
        let line = first_error_line(&log, offset).unwrap();
        assert!(line.contains("upstream timed out"), "{line}");
        assert!(first_error_line(&dir.join("none.log"), 0).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
