//! Property tests of the parsers of outside input: plans, mixes, records,
//! nginx logs, durations, sizes and the other flag values. Given any text,
//! each answers with a value or with an error that says where (the file
//! and line, or the text it was given), never a panic; and what a writer
//! writes (a record line, a log line, a mix, a size) reads back as it was
//! written. The response framing's properties are beside it, in
//! src/load/response/properties.rs.
//!
//! Each property runs [`CASES`] cases, a fixed number, so that CI does the
//! same work every run; the whole target takes about 14 s in a debug
//! build on the 2-core test machine. A case that fails becomes a named
//! regression test here, never a file of seeds.

use base64::Engine;
use proptest::prelude::*;
use rackbench::load::mix::{Draw, Mix};
use rackbench::load::schedule::{self, Entry};
use rackbench::load::Url;
use rackbench::plan::Plan;
use std::time::Duration;

/// Cases per property in CI.
const CASES: u32 = 500;

/// The same cases on every run unless `PROPTEST_RNG_SEED` asks for others
/// (a number, or anything else for a random seed): a property that fails
/// by the draw would block a landing by chance. Whatever a draw finds is
/// fixed and kept as a named regression test below, the way
/// `a_start_at_beyond_the_clock_is_refused_not_a_panic` was.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = proptest::test_runner::RngSeed::Fixed(36);
    }
    config
}

/// Text made of `words` (pieces of the format, so that the parser gets
/// past its first check) and of any characters between them.
fn soup(words: &'static [&'static str]) -> impl Strategy<Value = String> {
    let word = prop_oneof![
        3 => proptest::sample::select(words).prop_map(str::to_string),
        1 => ".{0,4}",
        1 => "[0-9]{1,25}",
    ];
    proptest::collection::vec(word, 0..30).prop_map(|w| w.concat())
}

// ---- durations and sizes ----

/// A duration as people write it, and what it is.
fn written_duration() -> impl Strategy<Value = (String, Duration)> {
    let unit = proptest::sample::select(
        &[
            ("", 1_000_000_000u64),
            ("s", 1_000_000_000),
            ("ms", 1_000_000),
            ("us", 1_000),
            ("µs", 1_000),
            ("m", 60_000_000_000),
            ("min", 60_000_000_000),
            ("h", 3_600_000_000_000),
        ][..],
    );
    (0..100_000u64, unit, " {0,2}").prop_map(|(n, (unit, ns), pad)| {
        (format!("{pad}{n}{unit}{pad}"), Duration::from_nanos(n * ns))
    })
}

/// A size as people write it, and how many bytes it is.
fn written_size() -> impl Strategy<Value = (String, u64)> {
    let unit = proptest::sample::select(
        &[
            ("", 0u32),
            ("B", 0),
            ("K", 10),
            ("kb", 10),
            ("KiB", 10),
            ("M", 20),
            ("MiB", 20),
            ("g", 30),
            ("GB", 30),
            ("T", 40),
        ][..],
    );
    (1..1_000_000u64, unit).prop_map(|(n, (unit, shift))| (format!("{n}{unit}"), n << shift))
}

const UNIT_WORDS: &[&str] = &[
    "1", "10", ".", "1.5", "e9", "s", "ms", "us", "µs", "m", "min", "h", "K", "M", "G", "T", "iB",
    "B", " ", "-", "+", "inf", "NaN", "1e400",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_duration_of_any_text_is_read_or_refused_naming_it(text in soup(UNIT_WORDS)) {
        match rackbench::units::duration(&text) {
            Ok(d) => prop_assert!(d <= Duration::from_secs(1_000_000_000)),
            Err(why) => prop_assert!(why.contains(text.trim()), "{why}"),
        }
    }

    #[test]
    fn a_duration_as_written_reads_back((text, want) in written_duration()) {
        let got = rackbench::units::duration(&text).unwrap();
        let off = got.abs_diff(want);
        prop_assert!(off <= Duration::from_micros(1), "{text}: {got:?} for {want:?}");
    }

    #[test]
    fn a_size_of_any_text_is_read_or_refused_naming_it(text in soup(UNIT_WORDS)) {
        match rackbench::budget::parse_size(&text) {
            Ok(bytes) => prop_assert!(bytes >= 1),
            Err(why) => prop_assert!(why.contains(&text), "{why}"),
        }
    }

    #[test]
    fn a_size_as_written_reads_back((text, want) in written_size()) {
        prop_assert_eq!(rackbench::budget::parse_size(&text), Ok(want), "{}", text);
    }

    /// `format_size` rounds to two decimals of its unit: what it writes
    /// reads back within that rounding.
    #[test]
    fn a_formatted_size_reads_back_within_its_rounding(bytes in 1..u64::MAX) {
        let text = rackbench::budget::format_size(bytes);
        let back = rackbench::budget::parse_size(&text).unwrap();
        let off = back.abs_diff(bytes) as f64;
        prop_assert!(off <= bytes as f64 * 0.005 + 1.0, "{bytes} -> {text} -> {back}");
    }
}

// ---- records (rackbench/record-v1) ----

fn entry() -> impl Strategy<Value = Entry> {
    let method = proptest::sample::select(&["GET", "POST", "HEAD", "PUT", "DELETE"][..]);
    let headers = proptest::collection::vec(("[a-z-]{1,12}", "\\PC{0,20}"), 0..4);
    (
        0..(1u64 << 53),
        method,
        "/[a-z0-9/?=&%.-]{0,30}",
        headers,
        proptest::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(t_us, method, target, headers, body)| Entry {
            t_us,
            method: method.to_string(),
            target,
            status: None,
            headers,
            body,
        })
}

/// A record file as `rackbench record` writes it.
fn write_record(entries: &[Entry]) -> String {
    let mut out = String::from(
        "{\"format\":\"rackbench/record-v1\",\"rackbench_version\":\"0.1.0\",\"started_unix_ms\":1795456581610,\"dropped_headers\":[]}\n",
    );
    for (i, e) in entries.iter().enumerate() {
        let line = serde_json::json!({
            "seq": i + 1,
            "t_us": e.t_us,
            "method": e.method,
            "target": e.target,
            "version": "HTTP/1.1",
            "headers": e.headers,
            "body_b64": base64::engine::general_purpose::STANDARD.encode(&e.body),
            "body_bytes": e.body.len(),
        });
        out += &format!("{line}\n");
    }
    out
}

const RECORD_WORDS: &[&str] = &[
    "{\"format\":\"rackbench/record-v1\"}",
    "\n",
    "{",
    "}",
    "\"t_us\":",
    "\"method\":\"GET\"",
    "\"target\":\"/\"",
    "\"headers\":[[\"a\",\"b\"]]",
    "\"body_b64\":\"",
    "\"",
    ",",
    "18446744073709551616",
    "-1",
    "null",
    "[",
    "]",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_record_of_any_lines_is_read_or_refused_at_its_line(text in soup(RECORD_WORDS)) {
        if let Err(e) = schedule::read_record(text.as_bytes(), "rec.jsonl") {
            prop_assert!(e.to_string().contains("rec.jsonl"), "{e}");
        }
    }

    #[test]
    fn a_record_as_written_reads_back(entries in proptest::collection::vec(entry(), 1..8)) {
        let text = write_record(&entries);
        let got = schedule::read_record(text.as_bytes(), "rec.jsonl").unwrap();
        prop_assert_eq!(got, entries);
    }
}

// ---- nginx access logs (combined) ----

/// One request as nginx logs it, and what a reader must take from it.
#[derive(Debug, Clone)]
struct LogLine {
    method: &'static str,
    target: String,
    status: u16,
    referer: String,
    user_agent: String,
    /// Seconds into 10 Oct 2026 (UTC), and the zone it is written in,
    /// in minutes east.
    second_of_day: u64,
    zone_min: i64,
    /// `$msec` and `$request_time` in milliseconds, when logged.
    msec_ms: Option<(u64, u64)>,
}

/// 10 Oct 2026 00:00:00 UTC.
const DAY_UNIX: u64 = 1_791_590_400;

impl LogLine {
    fn text(&self) -> String {
        let local = self.second_of_day as i64 + self.zone_min * 60;
        let (day, local) = (10 + local.div_euclid(86_400), local.rem_euclid(86_400));
        let zone = format!(
            "{}{:02}{:02}",
            if self.zone_min < 0 { '-' } else { '+' },
            self.zone_min.abs() / 60,
            self.zone_min.abs() % 60
        );
        let mut line = format!(
            "127.0.0.1 - - [{day:02}/Oct/2026:{:02}:{:02}:{:02} {zone}] \"{} {} HTTP/1.1\" {} 512 \"{}\" \"{}\"",
            local / 3600,
            local / 60 % 60,
            local % 60,
            self.method,
            self.target,
            self.status,
            self.referer,
            self.user_agent,
        );
        if let Some((msec, took)) = self.msec_ms {
            line += &format!(
                " {}.{:03} {}.{:03}",
                msec / 1000,
                msec % 1000,
                took / 1000,
                took % 1000
            );
        }
        line
    }

    fn header(name: &str, value: &str) -> Option<(String, String)> {
        (value != "-" && !value.is_empty()).then(|| (name.to_string(), value.to_string()))
    }

    /// The entry a reader must make of it (before the spreading of whole
    /// seconds).
    fn entry(&self) -> Entry {
        let t_us = match self.msec_ms {
            Some((msec, took)) => msec.saturating_sub(took) * 1000,
            None => (DAY_UNIX + self.second_of_day) * 1_000_000,
        };
        Entry {
            t_us,
            method: self.method.to_string(),
            target: self.target.clone(),
            status: Some(self.status),
            headers: [
                Self::header("referer", &self.referer),
                Self::header("user-agent", &self.user_agent),
            ]
            .into_iter()
            .flatten()
            .collect(),
            body: Vec::new(),
        }
    }
}

fn log_line() -> impl Strategy<Value = LogLine> {
    let method = proptest::sample::select(&["GET", "HEAD", "POST", "PUT"][..]);
    let msec = proptest::option::of((1_000_000_000_000..4_000_000_000_000u64, 0..90_000u64));
    (
        method,
        "/[a-z0-9/?=&%.-]{0,30}",
        100..600u16,
        "-|[a-z:/.]{0,20}",
        "-|[A-Za-z0-9/ .;()]{0,30}",
        0..86_400u64,
        -720..840i64,
        msec,
    )
        .prop_map(
            |(method, target, status, referer, user_agent, second_of_day, zone_min, msec_ms)| {
                LogLine {
                    method,
                    target,
                    status,
                    referer,
                    user_agent,
                    second_of_day,
                    zone_min,
                    msec_ms,
                }
            },
        )
}

/// What a reader must make of `lines`: their entries, with the requests
/// of one whole second (no `$msec`) spread evenly over it, in order.
fn log_entries(lines: &[LogLine]) -> Vec<Entry> {
    let mut entries: Vec<Entry> = lines.iter().map(LogLine::entry).collect();
    let whole: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].msec_ms.is_none())
        .collect();
    let second: Vec<u64> = entries.iter().map(|e| e.t_us).collect();
    for run in whole.chunk_by(|&a, &b| second[a] == second[b]) {
        let k = run.len() as u64;
        for (m, &i) in run.iter().enumerate() {
            entries[i].t_us += m as u64 * 1_000_000 / k;
        }
    }
    entries
}

const NGINX_WORDS: &[&str] = &[
    "127.0.0.1 - - ",
    "[10/Oct/2026:13:55:36 +0000]",
    "[",
    "]",
    "/Oct/",
    ":",
    " +0000",
    " -0130",
    " +a€",
    "\"GET / HTTP/1.1\"",
    "\"GET /x\"",
    "\"",
    "\\\"",
    " 200 512 ",
    "\"-\" \"curl/8\"",
    " 1795456581.610",
    " 99999999999999999.999",
    " 0.005",
    " 99999.999",
    "\n",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_nginx_log_of_any_lines_is_read_or_refused_at_its_line(text in soup(NGINX_WORDS)) {
        match schedule::read_nginx_requests(text.as_bytes(), "access.log", |_| true) {
            Ok(log) => prop_assert!(log.entries.iter().all(|e| e.target.starts_with('/'))),
            Err(e) => prop_assert!(e.to_string().contains("access.log:"), "{e}"),
        }
    }

    #[test]
    fn an_nginx_log_as_written_reads_back(lines in proptest::collection::vec(log_line(), 1..8)) {
        let text: String = lines.iter().map(|l| l.text() + "\n").collect();
        let got = schedule::read_nginx_requests(text.as_bytes(), "access.log", |_| true).unwrap();
        prop_assert_eq!(got.entries, log_entries(&lines), "{}", text);
    }
}

// ---- mixes ----

/// One `[[endpoint]]` of a mix file, with its name, method and the path
/// before its placeholder.
fn mix_endpoint() -> impl Strategy<Value = (String, &'static str, String, String)> {
    let method = proptest::sample::select(&["GET", "HEAD", "POST", "DELETE"][..]);
    let placeholder = proptest::option::of((any::<u64>(), any::<u64>()));
    (
        "[a-z0-9_-]{1,10}",
        method,
        "/[a-z0-9/.-]{0,12}",
        placeholder,
        0..100u32,
    )
        .prop_map(|(name, method, path, placeholder, weight)| {
            let full = match placeholder {
                Some((a, b)) => format!("{path}{{random:{}..{}}}", a.min(b), a.max(b)),
                None => path.clone(),
            };
            let toml = format!(
                "[[endpoint]]\nname = \"{name}\"\nmethod = \"{method}\"\npath = \"{full}\"\nweight = {}\n",
                weight + 1
            );
            (name, method, path, toml)
        })
}

const MIX_WORDS: &[&str] = &[
    "[[endpoint]]\n",
    "name = \"a\"\n",
    "name = \"a\"\nname = \"b\"\n",
    "path = \"/",
    "{random:",
    "..",
    "}",
    "\"\n",
    "weight = ",
    "-1",
    "0",
    "1e308",
    "method = \"HEAD\"\n",
    "expect = { status = [",
    "] }\n",
    "headers = { A = \"b\" }\n",
    "body = \"x\"\n",
    "seed = 18446744073709551615\n",
    "\n",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_mix_of_any_text_is_read_or_refused_at_its_line(text in soup(MIX_WORDS)) {
        match Mix::parse(&text, "mix.toml") {
            Ok(mix) => {
                // What was read renders and writes a request per endpoint.
                let url = Url::parse("http://127.0.0.1:8080/").unwrap();
                if let Ok(mix) = mix.render(&url, true) {
                    let mut draw = Draw::new(1, 0, 0);
                    for ep in 0..mix.endpoints.len() {
                        let mut out = Vec::new();
                        mix.write(ep as u32, &mut draw, &mut out);
                        prop_assert!(out.ends_with(b"\r\n\r\n") || !mix.endpoints[ep].body.is_empty());
                    }
                }
            }
            Err(e) => prop_assert!(e.to_string().starts_with("mix.toml, line "), "{e}"),
        }
    }

    #[test]
    fn a_mix_as_written_reads_back(
        endpoints in proptest::collection::vec(mix_endpoint(), 1..6),
    ) {
        let mut names: Vec<&str> = endpoints.iter().map(|e| e.0.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        prop_assume!(names.len() == endpoints.len());
        let text: String = endpoints.iter().map(|e| e.3.clone() + "\n").collect();
        let mix = Mix::parse(&text, "mix.toml").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let url = Url::parse("http://127.0.0.1:8080/").unwrap();
        let mix = mix.render(&url, true).unwrap();
        let mut draw = Draw::new(7, 0, 0);
        for (i, (name, method, path, _)) in endpoints.iter().enumerate() {
            prop_assert_eq!(&mix.endpoints[i].name, name);
            let mut out = Vec::new();
            mix.write(i as u32, &mut draw, &mut out);
            let line = format!("{method} {path}");
            prop_assert!(out.starts_with(line.as_bytes()), "{}", String::from_utf8_lossy(&out));
        }
    }
}

// ---- plans ----

const PLAN_WORDS: &[&str] = &[
    "name = \"p\"\n",
    "servers = [\"puma\"]\n",
    "apps = [\"hello\"]\n",
    "repeats = ",
    "[load]\n",
    "connections = ",
    "duration = ",
    "warmup = ",
    "[[server]]\n",
    "[sweep]\n",
    "vary = \"env.X=1,2\"\n",
    "[breakpoint]\n",
    "\"two\"",
    "-1",
    "[2]",
    "[]",
    "\"1s\"",
    "\"-1s\"",
    "99999999999999999999",
    "\n",
];

/// Values a person might put where a plan wants another kind.
const PLAN_VALUES: &[&str] = &[
    "\"two\"",
    "-1",
    "0",
    "2",
    "[2]",
    "[]",
    "[0]",
    "1.5",
    "true",
    "{}",
    "\"1s\"",
    "\"\"",
    "[\"x\"]",
    "\"-1s\"",
    "4294967296",
    "\"1e400s\"",
];

/// The default plan with the value on its `line`-th `key = value` line
/// replaced by `value`.
fn default_plan_with(line: usize, value: &str) -> String {
    let text = rackbench::plan::DEFAULT_PLAN;
    let settings: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && l.contains(" = "))
        .map(|(i, _)| i)
        .collect();
    let target = settings[line % settings.len()];
    text.lines()
        .enumerate()
        .map(|(i, l)| match l.split_once(" = ") {
            Some((key, _)) if i == target => format!("{key} = {value}\n"),
            _ => format!("{l}\n"),
        })
        .collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_plan_of_any_text_is_read_or_refused_naming_its_file(text in soup(PLAN_WORDS)) {
        let registry = rackbench::server::spec::Registry::builtin();
        let checked = Plan::parse(&text, "plan.toml")
            .and_then(|plan| plan.expand(&text, "plan.toml", &registry).map(drop));
        if let Err(e) = checked {
            prop_assert!(e.to_string().starts_with("plan.toml"), "{e}");
        }
    }

    #[test]
    fn a_plan_with_any_value_in_the_wrong_place_is_read_or_refused(
        line in any::<usize>(),
        value in proptest::sample::select(PLAN_VALUES),
    ) {
        let text = default_plan_with(line, value);
        let registry = rackbench::server::spec::Registry::builtin();
        let checked = Plan::parse(&text, "plan.toml")
            .and_then(|plan| plan.expand(&text, "plan.toml", &registry).map(drop));
        if let Err(e) = checked {
            prop_assert!(e.to_string().starts_with("plan.toml"), "{e}");
        }
    }
}

// ---- the other flag values ----

proptest! {
    #![proptest_config(config())]

    /// Every other parser of a flag's (or a plan key's) text answers any
    /// text without a panic; those that refuse say something.
    #[test]
    fn every_flag_parser_answers_any_text(text in soup(UNIT_WORDS), extra in "\\PC{0,12}") {
        let text = format!("{text}{extra}");
        let now = std::time::SystemTime::now();
        let refusals: Vec<Option<String>> = vec![
            rackbench::checks::Check::parse(&text).err(),
            rackbench::stats::compare::FailIf::parse(&text).err(),
            rackbench::load::segment::Segment::parse(&text).err(),
            rackbench::load::segment::parse_start_at(&text, now).err(),
            Url::parse(&text).err().map(|e| e.to_string()),
            rackbench::load::target::parse_header(&text).err().map(|e| e.to_string()),
            rackbench::plan::sweep::Variable::parse(&text).err(),
            rackbench::plan::fit::parse_share(&text).err(),
            rackbench::search::parse_slo(&text).err(),
            rackbench::lab::front::parse_keepalive(&text).err(),
            rackbench::store::samples::parse_side(&text).err(),
            rackbench::mirror::config::Upstream::parse(&text).err(),
            rackbench::load::slow::SlowMode::parse(&text).err(),
            rackbench::server::spec::parse_servers(&text, "servers.toml").err().map(|e| e.to_string()),
        ];
        for why in refusals.into_iter().flatten() {
            prop_assert!(!why.trim().is_empty(), "an empty refusal of {text:?}");
        }
    }
}

// ---- what the properties found ----

/// Reads one log line, keeping every method.
fn read_log_line(line: &str) -> Result<Vec<Entry>, String> {
    schedule::read_nginx_requests(line.as_bytes(), "access.log", |_| true)
        .map(|log| log.entries)
        .map_err(|e| e.to_string())
}

/// Regression: a `$msec` of 17 digits parsed as seconds and overflowed
/// as microseconds (a panic in a debug build, a wrong time in release).
/// It is no `$msec`: the line's `$time_local` gives its time.
#[test]
fn an_nginx_msec_too_large_for_microseconds_is_not_a_time() {
    let got = read_log_line(
        "1.2.3.4 - - [10/Oct/2026:00:00:01 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"-\" 99999999999999999.999",
    )
    .unwrap();
    assert_eq!(got[0].t_us, (DAY_UNIX + 1) * 1_000_000);
}

/// Regression: `$time_local` fields beyond any date nginx writes
/// overflowed the day arithmetic, and a zone of four bytes that are not
/// four digits ("+a€") was sliced inside a character: each a panic, now
/// the line refused at its number.
#[test]
fn an_nginx_time_local_beyond_any_date_is_refused_at_its_line() {
    for time in [
        "10/Oct/2026:13:55:36 +a€",
        "10/Oct/99999999999999999:13:55:36 +0000",
        "99999999999999999/Oct/2026:13:55:36 +0000",
        "10/Oct/2026:99999999999999999:55:36 +0000",
        "10/Oct/2026:13:55:36 +99x9",
    ] {
        let line = format!("1.2.3.4 - - [{time}] \"GET / HTTP/1.1\" 200 5 \"-\" \"-\"");
        let err = read_log_line(&line).unwrap_err();
        assert!(err.contains("access.log:1: $time_local"), "{time}: {err}");
    }
}
