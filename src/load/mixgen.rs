//! A request mix (docs/MIX_FORMAT.md) written from recorded traffic:
//! `rackbench mix --from-record FILE` and `--from-nginx-log FILE`. This
//! module reads the sources into [`Traffic`] and writes the mix file's
//! text; `recorded` groups the traffic into the endpoints written.
//!
//! The files are read by replay's readers (`schedule::read_record`,
//! `schedule::each_nginx_request`), so a line replay refuses is refused
//! here with the same words. A log is streamed: each line is tallied
//! into its endpoint and dropped, so memory does not grow with the
//! log's length (a 10 GB log is a normal day for a busy site). This module parses what it is handed (a
//! reader) and returns text; it never opens a file and never sends a
//! request.

use super::recorded::{RecordedEndpoint, Traffic};
use super::schedule::{each_nginx_request, read_record, ScheduleError, RECORD_FORMAT};
use std::io::{BufRead, Read};

/// Reads a `rackbench/record-v1` file; a file that is not one (an nginx
/// log given by mistake, an empty file) is refused in one line.
pub fn from_record(mut input: impl BufRead, name: &str) -> Result<Traffic, ScheduleError> {
    let mut first = String::new();
    input
        .read_line(&mut first)
        .map_err(|err| ScheduleError::Io {
            what: name.to_string(),
            err,
        })?;
    if first.trim().is_empty() {
        return Err(ScheduleError::Bad(format!(
            "{name} is empty: give a file written by `rackbench record --record FILE`"
        )));
    }
    if !first.contains(RECORD_FORMAT) {
        return Err(ScheduleError::Bad(format!(
            "{name}:1: not a rackbench record (no \"format\":\"{RECORD_FORMAT}\" line): give a \
             file written by `rackbench record`, or an nginx access log with --from-nginx-log"
        )));
    }
    let entries = read_record(std::io::Cursor::new(first).chain(input), name)?;
    if entries.is_empty() {
        return Err(ScheduleError::Bad(format!(
            "{name} holds no requests: record some traffic first"
        )));
    }
    let mut traffic = Traffic::new(format!("the record {name}"));
    for e in &entries {
        traffic.add(e);
    }
    Ok(traffic)
}

/// Reads an nginx access log in the combined format with replay's
/// reader ([`each_nginx_request`]), every method, with each line's
/// status, tallying each line as it is read. Bodies are not in a log.
pub fn from_nginx_log(input: impl BufRead, name: &str) -> Result<Traffic, ScheduleError> {
    let mut traffic = Traffic::new(format!("the nginx log {name}"));
    each_nginx_request(input, name, |_| true, |e, _| traffic.add(&e)).map_err(|e| match e {
        ScheduleError::Bad(m) => {
            ScheduleError::Bad(format!("{m}; a rackbench record goes with --from-record"))
        }
        e => e,
    })?;
    if traffic.requests == 0 {
        return Err(ScheduleError::Bad(format!(
            "{name} holds no requests: give an access log with traffic in it"
        )));
    }
    Ok(traffic)
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML key: bare when it can be.
fn key(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        s.to_string()
    } else {
        quote(s)
    }
}

/// Folded shapes the header comment names; the rest are counted (the
/// whole list goes to a side file when asked, [`folded_list`]).
pub const FOLDED_SHOWN: usize = 5;

/// The longest path the header comment shows (a path drawing from a
/// thousand UUIDs is 37 KB; its `[[endpoint]]` holds it whole).
const COMMENT_PATH: usize = 100;

/// The mix file: a header comment saying where it came from and each
/// endpoint's share, then one `[[endpoint]]` table each. `command` is
/// how it was asked for (`rackbench mix --from-record r.jsonl`).
pub fn render(traffic: &Traffic, endpoints: &[RecordedEndpoint], command: &str) -> String {
    let total: u64 = endpoints.iter().map(|e| e.weight).sum();
    let mut s = format!(
        "# A request mix written by `{command}` (rackbench {}) from {}: \
         {total} requests in {} endpoint(s).\n\
         # Weights are the counts seen; ids in paths became {{random:MIN..MAX}} over the \
         range seen (numbers, also before a format: 12.json), or {{one_of:..}} over the \
         values seen (UUIDs, hex ids, slugs, dates; up to {}).\n",
        env!("CARGO_PKG_VERSION"),
        traffic.source,
        endpoints.len(),
        super::recorded::MAX_VALUES,
    );
    let width = endpoints.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for e in endpoints {
        let path = if e.path.chars().count() > COMMENT_PATH {
            format!("{}…", e.path.chars().take(COMMENT_PATH).collect::<String>())
        } else {
            e.path.clone()
        };
        s += &format!(
            "#   {:<width$}  {:>5.1}%  {} {}\n",
            e.name,
            e.weight as f64 * 100.0 / total.max(1) as f64,
            e.method,
            path
        );
    }
    s += &folded_comment(endpoints);
    if endpoints.iter().any(|e| e.values_cut) {
        s += &format!(
            "# Some ids had more than {} values: the smallest are drawn from.\n",
            super::recorded::MAX_VALUES
        );
    }
    if endpoints
        .iter()
        .any(|e| e.body.is_none() && matches!(e.method.as_str(), "POST" | "PUT" | "PATCH"))
    {
        s += "# Some writes have no body (an nginx log has none, or it was not text): give them one.\n";
    }
    for e in endpoints {
        s += &format!(
            "\n[[endpoint]]\nname = {}\nmethod = {}\npath = {}\nweight = {}\n",
            quote(&e.name),
            quote(&e.method),
            quote(&e.path),
            e.weight
        );
        if let Some(st) = e.expect_status {
            s += &format!("expect = {{ status = {st} }}\n");
        }
        if !e.headers.is_empty() {
            let hs: Vec<String> = e
                .headers
                .iter()
                .map(|(k, v)| format!("{} = {}", key(k), quote(v)))
                .collect();
            s += &format!("headers = {{ {} }}\n", hs.join(", "));
        }
        if let Some(b) = &e.body {
            s += &format!("body = {}\n", quote(b));
        }
        if e.body_left_out {
            s += "# its recorded body is not UTF-8 text, so it is left out\n";
        }
    }
    s
}

/// Every folded shape as (shape, requests, the endpoint it went into),
/// the most requested first, then by shape.
fn folded_shapes(endpoints: &[RecordedEndpoint]) -> Vec<(&str, u64, &str)> {
    let mut folded: Vec<(&str, u64, &str)> = endpoints
        .iter()
        .flat_map(|e| {
            e.folded
                .iter()
                .map(move |(shape, n)| (shape.as_str(), *n, e.name.as_str()))
        })
        .collect();
    folded.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    folded
}

/// The folded shapes as the header says them: how many, the first few
/// (the most requested), and where the rest are.
fn folded_comment(endpoints: &[RecordedEndpoint]) -> String {
    let folded = folded_shapes(endpoints);
    if folded.is_empty() {
        return String::new();
    }
    let requests: u64 = folded.iter().map(|f| f.1).sum();
    let shown: Vec<String> = folded
        .iter()
        .take(FOLDED_SHOWN)
        .map(|(shape, n, into)| format!("{shape} ({n}) into {into}"))
        .collect();
    let rest = folded.len().saturating_sub(FOLDED_SHOWN);
    let more = if rest > 0 {
        format!("; and {rest} more (--folded-out FILE lists them all)")
    } else {
        String::new()
    };
    format!(
        "# {} rarer shape(s) past --max-endpoints ({requests} requests) folded into the nearest endpoint: {}{more}.\n",
        folded.len(),
        shown.join("; ")
    )
}

/// Every folded shape, one a line: count, shape, the endpoint it went
/// into, tab-separated, the most requested first (`--folded-out`).
pub fn folded_list(endpoints: &[RecordedEndpoint]) -> String {
    let folded = folded_shapes(endpoints);
    let mut s = String::from("# count\tshape\tfolded into\n");
    for (shape, n, into) in folded {
        s += &format!("{n}\t{shape}\t{into}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::recorded::endpoints;
    use crate::load::recorded::tests::{get, traffic};
    use crate::load::schedule::Entry;

    #[test]
    fn expect_is_the_most_common_status_and_bodies_keep_their_content_type() {
        let post = |body: &[u8]| Entry {
            t_us: 0,
            method: "POST".into(),
            target: "/posts/1/comments".into(),
            status: Some(302),
            headers: vec![(
                "content-type".into(),
                "application/x-www-form-urlencoded".into(),
            )],
            body: body.to_vec(),
        };
        let reqs = vec![
            get("/a", Some(200)),
            get("/a", Some(500)),
            get("/a", Some(200)),
            post(b"comment[body]=\"hi\""),
            post(b"other"),
            Entry {
                target: "/bin".into(),
                ..post(&[0xff, 0xfe])
            },
        ];
        let t = traffic(reqs);
        let e = endpoints(&t, 20);
        assert_eq!(e[0].expect_status, Some(200));
        let p = e
            .iter()
            .find(|e| e.method == "POST" && e.weight == 2)
            .unwrap();
        assert_eq!(p.body.as_deref(), Some("comment[body]=\"hi\""));
        assert_eq!(
            p.headers,
            vec![(
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into()
            )]
        );
        let bin = e.iter().find(|e| e.path == "/bin").unwrap();
        assert!(bin.body.is_none() && bin.body_left_out && bin.headers.is_empty());
        let text = render(&t, &e, "rackbench mix");
        let doc: toml::Value = toml::from_str(&text).unwrap();
        let tables = doc["endpoint"].as_array().unwrap();
        let p = tables
            .iter()
            .find(|t| t["weight"].as_integer() == Some(2))
            .unwrap();
        assert_eq!(p["body"].as_str(), Some("comment[body]=\"hi\""));
        assert_eq!(p["expect"]["status"].as_integer(), Some(302));
        assert_eq!(
            p["headers"]["Content-Type"].as_str(),
            Some("application/x-www-form-urlencoded")
        );
    }

    /// Names and order come from the counts and shapes, never from the
    /// order requests arrived in: the same traffic gives the same file.
    #[test]
    fn the_same_traffic_in_another_order_gives_the_same_file() {
        let mut reqs: Vec<Entry> = (1..=40)
            .map(|i| match i % 4 {
                0 => get(&format!("/posts/{i}"), Some(200)),
                1 => get(&format!("/authors/{i}/posts?page={}", i % 3 + 1), Some(200)),
                2 => get("/search?q=ruby", Some(200)),
                _ => get(&format!("/posts/{i}/comments"), Some(404)),
            })
            .collect();
        let t = traffic(reqs.clone());
        let one = render(&t, &endpoints(&t, 20), "rackbench mix");
        reqs.reverse();
        let t = traffic(reqs);
        assert_eq!(render(&t, &endpoints(&t, 20), "rackbench mix"), one);
    }

    #[test]
    fn the_written_file_reproduces_the_proportions_and_names_its_source() {
        let mut reqs = Vec::new();
        for i in 0..600 {
            reqs.push(get(&format!("/posts/{}", i % 97 + 1), Some(200)));
        }
        for i in 0..300 {
            reqs.push(get(&format!("/posts?page={}", i % 10 + 1), Some(200)));
        }
        reqs.extend((0..100).map(|_| get("/search?q=slow", Some(200))));
        let t = traffic(reqs);
        let text = render(&t, &endpoints(&t, 20), "rackbench mix --from-nginx-log x");
        assert!(text.starts_with("# A request mix written by `rackbench mix --from-nginx-log x`"));
        assert!(
            text.contains("from the test: 1000 requests in 3 endpoint(s)"),
            "{text}"
        );
        assert!(text.contains("60.0%  GET /posts/{random:1..97}"), "{text}");
        let doc: toml::Value = toml::from_str(&text).unwrap();
        let tables = doc["endpoint"].as_array().unwrap();
        let total: i64 = tables
            .iter()
            .map(|t| t["weight"].as_integer().unwrap())
            .sum();
        let share = |name: &str| {
            let t = tables
                .iter()
                .find(|t| t["name"].as_str() == Some(name))
                .unwrap();
            t["weight"].as_integer().unwrap() as f64 / total as f64
        };
        assert_eq!(
            (share("posts_id"), share("posts"), share("search")),
            (0.6, 0.3, 0.1)
        );
        assert_eq!(
            tables[1]["path"].as_str(),
            Some("/posts?page={random:1..10}")
        );
        // The engine reads what this writes, in the same proportions.
        let mix = crate::load::mix::Mix::parse(&text, "written.toml").unwrap();
        let weights: Vec<(&str, f64)> = mix
            .endpoints
            .iter()
            .map(|e| (e.name.as_str(), e.weight))
            .collect();
        assert_eq!(
            weights,
            [("posts_id", 600.0), ("posts", 300.0), ("search", 100.0)]
        );
    }

    /// A mix from an nginx log, its statuses and its write included, is
    /// one the engine accepts as written.
    #[test]
    fn a_mix_from_a_log_is_read_by_the_engine_as_written() {
        let t = from_nginx_log(LOG.as_bytes(), "access.log").unwrap();
        let text = render(
            &t,
            &endpoints(&t, 20),
            "rackbench mix --from-nginx-log access.log",
        );
        let mix = crate::load::mix::Mix::parse(&text, "written.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(mix.endpoints.len(), endpoints(&t, 20).len());
    }

    const LOG: &str = r#"127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /posts/1 HTTP/1.1" 200 12 "-" "curl/8.0"
127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "POST /posts/1/comments HTTP/1.1" 302 0 "-" "-"
127.0.0.1 - - [23/Nov/2026:10:00:01 +0000] "GET /posts/8 HTTP/1.1" 404 12 "-" "curl/8.0"
127.0.0.1 - - [23/Nov/2026:10:00:01 +0000] "GET /posts/2 HTTP/1.1" 200 12 "-" "curl/8.0"
"#;

    #[test]
    fn an_nginx_log_gives_every_method_with_its_status() {
        let t = from_nginx_log(LOG.as_bytes(), "access.log").unwrap();
        assert_eq!(t.requests, 4);
        let e = endpoints(&t, 20);
        let post = e.iter().find(|e| e.method == "POST").unwrap();
        assert_eq!(post.expect_status, Some(302));
        assert_eq!(e[0].path, "/posts/{random:1..8}");
        assert_eq!(e[0].expect_status, Some(200));
        let text = render(&t, &e, "rackbench mix");
        assert!(text.contains("writes have no body"), "{text}");
    }

    /// A log line for `GET target` with status 200.
    fn line(target: &str) -> String {
        format!("127.0.0.1 - - [28/Nov/2026:10:00:00 +0000] \"GET {target} HTTP/1.1\" 200 12 \"-\" \"-\"\n")
    }

    /// Issue 43: Rails routes carry formats (`/posts/1.json`), and ids are
    /// UUIDs, slugs, dates and hex digests. `123.json` was not an id, so
    /// 5,000 posts became one endpoint requesting one post. Each route is
    /// an endpoint named with its format, the mix reproduces the log's
    /// proportions, and its draws spread over the ids the log had.
    #[test]
    fn rails_format_routes_uuids_slugs_and_dates_keep_their_proportions_and_spread() {
        let uuid = |k: u32| format!("{k:08x}-4e1c-4b6a-9d3e-{:012x}", k * 7919);
        let mut log = String::new();
        for i in 0..10_300u32 {
            let target = match i % 103 {
                0..=49 => format!("/api/posts/{}.json", i % 5000 + 1),
                50..=69 => format!("/posts/{}/comments.xml", i % 500 + 1),
                70..=79 => format!("/reports/2026-11-{:02}.csv", i % 28 + 1),
                80..=94 => format!("/users/{}", uuid(i % 300)),
                95..=99 => format!("/posts/{}-hello-world", i % 400 + 1),
                _ => format!("/assets/{:040x}.js", (i % 50) as u128 * 0x9e37_79b9_7f4a),
            };
            log += &line(&target);
        }
        let t = from_nginx_log(log.as_bytes(), "access.log").unwrap();
        let e = endpoints(&t, 20);
        let want = [
            (
                "api_posts_id_json",
                "/api/posts/{random:1..5000}.json",
                5000,
            ),
            (
                "posts_id_comments_xml",
                "/posts/{random:1..500}/comments.xml",
                2000,
            ),
            ("users_id", "/users/{one_of:", 1500),
            (
                "reports_date_csv",
                "/reports/{one_of:2026-11-01|2026-11-02|",
                1000,
            ),
            (
                "posts_id",
                "/posts/{one_of:1-hello-world|10-hello-world|",
                500,
            ),
            ("assets_id_js", "/assets/{one_of:", 300),
        ];
        assert_eq!(e.len(), want.len(), "{e:#?}");
        for (got, (name, path, weight)) in e.iter().zip(want) {
            assert_eq!((got.name.as_str(), got.weight), (name, weight), "{got:?}");
            assert!(got.path.starts_with(path), "{name}: {}", got.path);
        }
        assert!(e[3].path.ends_with("|2026-11-28}.csv"), "{}", e[3].path);
        assert!(e[5].path.ends_with("}.js"), "{}", e[5].path);

        // The engine draws them in the log's proportions and over its ids.
        let text = render(&t, &e, "rackbench mix --from-nginx-log access.log");
        let mix = crate::load::mix::Mix::parse(&text, "written.toml")
            .unwrap()
            .render(
                &crate::load::Url::parse("http://127.0.0.1:8080/").unwrap(),
                true,
            )
            .unwrap();
        let (mut picks, mut values) = (
            crate::load::mix::Draw::new(1, 0, 0),
            crate::load::mix::Draw::new(1, 0, 1),
        );
        let mut counts = [0u32; 6];
        let (mut posts, mut users) = (
            std::collections::BTreeSet::new(),
            std::collections::BTreeSet::new(),
        );
        let draws = 103_000;
        for _ in 0..draws {
            let ep = mix.pick(&mut picks);
            counts[ep as usize] += 1;
            let mut out = Vec::new();
            mix.write(ep, &mut values, &mut out);
            let req = String::from_utf8(out).unwrap();
            let target = req.split(' ').nth(1).unwrap().to_string();
            if let Some(id) = target
                .strip_prefix("/api/posts/")
                .and_then(|t| t.strip_suffix(".json"))
            {
                posts.insert(id.parse::<u32>().unwrap());
            }
            if let Some(id) = target.strip_prefix("/users/") {
                users.insert(id.to_string());
            }
        }
        for (i, (name, _, weight)) in want.iter().enumerate() {
            // Expected draws * weight / 10,300; within 5 sd (sd < 160).
            let expect = (draws as f64) * (*weight as f64) / 10_300.0;
            assert!(
                (counts[i] as f64 - expect).abs() < 800.0,
                "{name}: {} of {expect}",
                counts[i]
            );
        }
        assert!(posts.iter().all(|id| (1..=5000).contains(id)));
        assert!(
            posts.len() > 4000,
            "50,000 draws over 5,000 posts: {} seen",
            posts.len()
        );
        let seen: std::collections::BTreeSet<String> = (0..300).map(uuid).collect();
        assert!(
            users.is_subset(&seen) && users.len() == 300,
            "{} users",
            users.len()
        );
    }

    /// Issue 43: 4,986 folded shapes were listed on one comment line of
    /// 278 KB. The header says how many and names the first few; the
    /// side file holds them all.
    #[test]
    fn folded_shapes_are_counted_and_the_first_few_named() {
        let mut log = String::new();
        for i in 0..300 {
            log += &line("/posts/1");
            log += &line(&format!("/page{i}"));
        }
        let t = from_nginx_log(log.as_bytes(), "access.log").unwrap();
        let e = endpoints(&t, 2);
        let text = render(&t, &e, "rackbench mix");
        let comment = text.lines().find(|l| l.contains("rarer shape")).unwrap();
        assert!(
            comment.starts_with("# 299 rarer shape(s) past --max-endpoints (299 requests)"),
            "{comment}"
        );
        assert!(
            comment.ends_with("and 294 more (--folded-out FILE lists them all)."),
            "{comment}"
        );
        assert!(comment.len() < 400, "{comment}");
        let list = folded_list(&e);
        assert_eq!(list.lines().count(), 300, "a header and one line per shape");
        assert!(list.contains("1\tGET /page99\t"), "{list}");
    }

    /// (case, input, the start of the one-line error)
    #[test]
    fn bad_input_is_refused_in_one_line() {
        let record = "{\"format\":\"rackbench/record-v1\"}\n";
        let rows: [(&str, bool, &str, &str); 5] = [
            (
                "an nginx log given as a record",
                true,
                LOG,
                "r:1: not a rackbench record",
            ),
            ("an empty record", true, "", "r is empty"),
            (
                "a record with no request",
                true,
                record,
                "r holds no requests",
            ),
            ("an empty log", false, "\n\n", "r holds no requests"),
            (
                "a record given as a log",
                false,
                record,
                "r:1: no [$time_local]",
            ),
        ];
        for (case, is_record, input, want) in rows {
            let err = if is_record {
                from_record(input.as_bytes(), "r").unwrap_err()
            } else {
                from_nginx_log(input.as_bytes(), "r").unwrap_err()
            };
            let msg = err.to_string();
            assert!(msg.starts_with(want), "{case}: {msg}");
            assert!(!msg.contains('\n'), "{case}: one line: {msg}");
        }
    }

    #[test]
    fn a_record_gives_its_requests_with_their_bodies() {
        let text = "{\"format\":\"rackbench/record-v1\"}\n\
            {\"seq\":1,\"t_us\":5,\"method\":\"POST\",\"target\":\"/c\",\"headers\":[[\"content-type\",\"text/plain\"]],\"body_b64\":\"aGk=\"}\n";
        let t = from_record(text.as_bytes(), "r.jsonl").unwrap();
        assert_eq!(t.source, "the record r.jsonl");
        let e = endpoints(&t, 20);
        assert_eq!(e[0].body.as_deref(), Some("hi"));
        assert_eq!(e[0].expect_status, None, "a record has no statuses");
    }
}
