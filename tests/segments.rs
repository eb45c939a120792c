//! Segments and their exact merge, end to end: N `rackbench load --segment
//! I/N` processes against one `rackbench serve-test`, then `rackbench
//! merge`. The server is the judge: its own count of answered requests,
//! and the wall-clock arrival of every request (`--arrivals-out`).

mod common;

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use rackbench::load::recorder::new_histogram;
use rackbench::load::report::headline;
use rackbench::stats::histogram::decode;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::EXE;

/// `rackbench serve-test` in the background; SIGTERM ends it and it
/// prints its own counts on stderr.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let mut child = Command::new(EXE)
            .arg("serve-test")
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start serve-test");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        Server {
            child,
            url: line.trim().to_string(),
        }
    }

    /// Stops the server and returns its own figures (the JSON line it
    /// prints at the end).
    fn stop(mut self) -> Value {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let out = std::mem::replace(&mut self.child, Command::new("true").spawn().unwrap())
            .wait_with_output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().find(|l| l.starts_with('{')).unwrap_or_else(|| {
            panic!("serve-test printed no figures: {err}");
        });
        serde_json::from_str(line).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Unix seconds `ahead` from now, as `--start-at` takes them.
fn start_in(ahead: Duration) -> f64 {
    (SystemTime::now() + ahead)
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Runs segments 0..n of one load at once, each writing its JSON document
/// to `dir/seg-I.json`; returns the files.
fn run_segments(dir: &Path, n: u32, args: &[String]) -> Vec<PathBuf> {
    let children: Vec<(PathBuf, Child)> = (0..n)
        .map(|i| {
            let file = dir.join(format!("seg-{i}.json"));
            let child = Command::new(EXE)
                .arg("load")
                .args(args)
                .args(["--segment", &format!("{i}/{n}"), "--json"])
                .stdout(std::fs::File::create(&file).unwrap())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (file, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(file, child)| {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "segment failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            file
        })
        .collect()
}

fn merge(files: &[PathBuf], extra: &[&str]) -> Output {
    Command::new(EXE)
        .arg("merge")
        .args(files)
        .args(extra)
        .output()
        .unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn merged_segments_count_what_the_server_answered_and_read_percentiles_off_one_histogram() {
    let dir = common::work_dir("segments-count");
    let server = Server::start(&["--delay", "1ms"]);
    let start = start_in(Duration::from_millis(1500));
    let args: Vec<String> = [
        server.url.as_str(),
        "-c",
        "7",
        "-d",
        "2s",
        "--start-at",
        &format!("{start:.3}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let files = run_segments(&dir, 3, &args);
    let answered = u(&server.stop()["answered"]);

    let out = merge(
        &files,
        &["--json", "--out", dir.join("merged.json").to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged, read_json(&dir.join("merged.json")));
    common::schema::assert_valid("load-v1", &merged, "the merged document");
    let segs: Vec<Value> = files.iter().map(|f| read_json(f)).collect();
    for s in &segs {
        common::schema::assert_valid("load-v1", s, "a segment's document");
    }

    // Counts add; the shares of -c 7 are 3, 2, 2.
    let ok = u(&merged["requests"]["ok"]);
    let sum_ok: u64 = segs.iter().map(|s| u(&s["requests"]["ok"])).sum();
    assert_eq!(ok, sum_ok);
    let conns: Vec<u64> = segs
        .iter()
        .map(|s| u(&s["config"]["connections"]))
        .collect();
    assert_eq!(conns, [3, 2, 2]);
    assert_eq!(u(&merged["config"]["connections"]), 7);
    assert_eq!(merged["segments"].as_array().unwrap().len(), 3);
    assert!(ok > 300, "too few requests to judge: {ok}");
    // The server answered every counted OK request, and at most the
    // requests still in flight at the end (one per connection) besides.
    let unfinished = u(&merged["requests"]["unfinished"]);
    assert!(
        ok <= answered && answered <= ok + unfinished + 7,
        "merged ok {ok} (+{unfinished} unfinished) vs the server's {answered}"
    );
    // Throughput over the union window: the segments started together.
    let thr = merged["throughput_rps"].as_f64().unwrap();
    let sum_thr: f64 = segs
        .iter()
        .map(|s| s["throughput_rps"].as_f64().unwrap())
        .sum();
    assert!((thr - sum_thr).abs() / sum_thr < 0.05, "{thr} vs {sum_thr}");

    // Merged percentiles are those of one histogram of every sample: the
    // segments' embedded histograms decoded and added.
    // The headline is the OK latencies plus, as in any run, the ages of
    // the requests still unanswered at the end (see report::headline).
    let sum = |what: &str| {
        let mut all = new_histogram(3);
        for s in &segs {
            if let Some(text) = s["histograms"][what].as_str() {
                all.add(decode(text).unwrap()).unwrap();
            }
        }
        all
    };
    let ok_hist = sum("ok");
    assert_eq!(ok_hist.len(), ok);
    let failed_answers = ["status", "body"]
        .iter()
        .map(|k| u(&merged["errors"][k]))
        .sum();
    let (all, _) = headline(
        &ok_hist,
        &sum("censored"),
        &sum("unanswered"),
        failed_answers,
    );
    let lat = &merged["latency_us"];
    for (field, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)] {
        assert_eq!(u(&lat[field]), all.value_at_quantile(q), "{field}");
    }
    assert_eq!(u(&lat["max"]), all.max());
    // The timeline lines up by wall-clock second: one row per second, the
    // OK responses of every segment in it.
    let rows = merged["timeline"].as_array().unwrap();
    let row_ok: u64 = rows.iter().map(|r| u(&r["ok"])).sum();
    let seg_row_ok: u64 = segs
        .iter()
        .flat_map(|s| {
            s["timeline"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| u(&r["ok"]))
        })
        .sum();
    assert_eq!(row_ok, seg_row_ok);
    assert!(rows.len() <= 3, "{} rows for 2 s", rows.len());

    // Fairness is taken over every segment's connections side by side:
    // each segment keeps its answers per connection, and the merge's are
    // all of them (busiest first), its figures computed from those.
    let counts = |d: &Value| -> Vec<u64> {
        d["fairness"]["answers_per_connection"]
            .as_array()
            .unwrap_or_else(|| panic!("no per-connection counts: {}", d["fairness"]))
            .iter()
            .map(u)
            .collect()
    };
    let mut all: Vec<u64> = segs.iter().flat_map(counts).collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(counts(&merged), all);
    let f = &merged["fairness"];
    assert_eq!(u(&f["connections_answered"]), 7, "{f}");
    assert_eq!(u(&f["connections_starved"]), 0, "{f}");
    // (To the last bits JSON keeps of a float.)
    let near = |got: &Value, want: Option<f64>| {
        let (got, want) = (got.as_f64().unwrap(), want.unwrap());
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    };
    near(&f["jain_index"], rackbench::load::report::jain_index(&all));
    near(
        &f["top10_share"],
        rackbench::load::report::top10_share(&all),
    );
}

#[test]
fn merge_refuses_what_it_cannot_merge_exactly_and_warns_of_missing_segments() {
    let dir = common::work_dir("segments-refuse");
    let server = Server::start(&[]);
    let common = vec![
        server.url.clone(),
        "-c".into(),
        "4".into(),
        "-d".into(),
        "300ms".into(),
    ];
    let files = run_segments(&dir, 2, &common);
    let plain = dir.join("plain.json");
    let out = Command::new(EXE)
        .args(["load", &server.url, "-d", "200ms", "--json"])
        .output()
        .unwrap();
    std::fs::write(&plain, &out.stdout).unwrap();
    let other_n = dir.join("other-n.json");
    let out = Command::new(EXE)
        .args([
            "load",
            &server.url,
            "-d",
            "200ms",
            "--json",
            "--segment",
            "0/3",
        ])
        .output()
        .unwrap();
    std::fs::write(&other_n, &out.stdout).unwrap();
    server.stop();

    let refused = |files: &[PathBuf], says: &str| {
        let out = merge(files, &["--json"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "expected '{says}' in: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    };
    refused(
        &[files[0].clone(), plain.clone()],
        "run each segment with --segment I/N",
    );
    refused(
        &[files[0].clone(), files[0].clone()],
        "are both segment 0/2",
    );
    refused(
        &[files[0].clone(), other_n.clone()],
        "merge the segments of one split",
    );

    let out = merge(&files[..1], &["--json"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("segment(s) 1 of 2 missing"), "{err}");
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(merged["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("missing")));
}

#[test]
fn segments_at_a_share_of_the_rate_interleave_into_the_schedule_of_one_run() {
    // Four segments at 100/4 req/s each, started together: the server must
    // see the schedule of one generator at 100 req/s, a request every 10 ms
    // at (k·4 + I)/100, not four requests at once every 40 ms.
    let dir = common::work_dir("segments-rate");
    let arrivals = dir.join("arrivals.txt");
    let server = Server::start(&["--arrivals-out", arrivals.to_str().unwrap()]);
    let (n, rate, secs) = (4u32, 100.0f64, 3.0f64);
    let start = start_in(Duration::from_millis(1500));
    let args: Vec<String> = [
        server.url.as_str(),
        "-c",
        "8",
        "--rate",
        &rate.to_string(),
        "-d",
        &format!("{secs}s"),
        "--start-at",
        &format!("{start:.3}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let files = run_segments(&dir, n, &args);
    server.stop();

    // Each segment began on time, on the instant given.
    for f in &files {
        let seg = &read_json(f)["segment"];
        assert_eq!(seg["late_ms"].as_f64(), Some(0.0), "{seg}");
        let at = seg["window_start_unix_ms"].as_f64().unwrap();
        assert!((at - start * 1000.0).abs() < 2.0, "{at} vs {start}");
        assert_eq!(
            read_json(f)["config"]["rate_rps"].as_f64(),
            Some(rate / f64::from(n))
        );
    }
    let merged: Value = serde_json::from_slice(&merge(&files, &["--json"]).stdout).unwrap();
    assert_eq!(merged["config"]["rate_rps"].as_f64(), Some(rate));

    // Each arrival's slot k = round(offset · R) and how far from it it
    // came; sends are late by the loop's wake-up and loopback, never early.
    let period_us = 1e6 / rate;
    let start_us = start * 1e6;
    let text = std::fs::read_to_string(&arrivals).unwrap();
    let mut slots = std::collections::BTreeMap::<i64, u32>::new();
    let mut near = 0usize;
    let mut total = 0usize;
    for line in text.lines() {
        let t: f64 = line.parse().unwrap();
        let off = t - start_us;
        if off < -period_us / 2.0 || off >= secs * 1e6 {
            continue;
        }
        total += 1;
        let k = (off / period_us).round() as i64;
        if (off - k as f64 * period_us).abs() < 0.3 * period_us {
            near += 1;
            *slots.entry(k).or_default() += 1;
        }
    }
    let expected = (rate * secs) as usize;
    assert!(
        total >= expected * 9 / 10 && total <= expected + 4,
        "{total} arrivals in the window, {expected} due"
    );
    let single = slots.values().filter(|&&c| c == 1).count();
    // On an idle machine every slot holds one arrival; a busy one makes a
    // few sends late (the margins are wide for a machine running other
    // tests). Four segments in step would fill a quarter of the slots four
    // times over: no slot would hold exactly one.
    assert!(
        near * 10 >= total * 7 && single * 10 >= expected * 6,
        "{near} of {total} arrivals near a slot, {single} slots of {expected} with exactly one"
    );
}

#[test]
fn a_late_segment_says_by_how_much_and_the_interval_log_holds_every_second() {
    let dir = common::work_dir("segments-late");
    let server = Server::start(&[]);
    let hlog = dir.join("seg.hlog");
    let out = Command::new(EXE)
        .args([
            "load",
            &server.url,
            "-d",
            "1500ms",
            "-c",
            "2",
            "--json",
            "--segment",
            "1/2",
            "--start-at",
            &format!("{:.3}", start_in(Duration::ZERO) - 2.0),
            "--hist-out",
            hlog.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    server.stop();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("began") && err.contains("ms after --start-at"),
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let late = doc["segment"]["late_ms"].as_f64().unwrap();
    assert!((2000.0..10_000.0).contains(&late), "late_ms {late}");

    // The interval log: HdrHistogram's format, one interval per second,
    // holding every OK response of the timeline.
    let text = std::fs::read(&hlog).unwrap();
    let mut intervals = 0;
    let mut count = 0;
    for entry in IntervalLogIterator::new(&text) {
        if let LogEntry::Interval(h) = entry.expect("a valid interval log") {
            let bytes = base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                h.encoded_histogram(),
            )
            .unwrap();
            let hist: hdrhistogram::Histogram<u64> = Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .unwrap();
            count += hist.len();
            intervals += 1;
        }
    }
    let timeline_ok: u64 = doc["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(&r["ok"]))
        .sum();
    assert!(intervals >= 2, "{intervals} intervals");
    assert_eq!(count, timeline_ok);
}

#[test]
fn replay_segments_take_every_nth_request() {
    // Eleven recorded requests 50 ms apart (wide enough for a busy
    // machine's late sends), replayed as two segments: the
    // first sends requests 0, 2, ..., 10 (six), the second 1, 3, ..., 9
    // (five), and the server sees each of the eleven once.
    let dir = common::work_dir("segments-replay");
    let record = dir.join("record.jsonl");
    let mut text = String::from("{\"format\":\"rackbench/record-v1\"}\n");
    for i in 0..11 {
        text.push_str(&format!(
            "{{\"seq\":{i},\"t_us\":{},\"method\":\"GET\",\"target\":\"/r{i}\",\"headers\":[],\"body_b64\":\"\"}}\n",
            i * 50_000
        ));
    }
    std::fs::write(&record, text).unwrap();
    let arrivals = dir.join("arrivals.txt");
    let server = Server::start(&["--arrivals-out", arrivals.to_str().unwrap()]);
    let start = start_in(Duration::from_millis(1200));
    let children: Vec<(PathBuf, Child)> = (0..2)
        .map(|i| {
            let file = dir.join(format!("replay-{i}.json"));
            let child = Command::new(EXE)
                .args(["replay", record.to_str().unwrap(), &server.url, "-c", "2"])
                .args(["--segment", &format!("{i}/2"), "--json"])
                .args(["--start-at", &format!("{start:.3}")])
                .stdout(std::fs::File::create(&file).unwrap())
                .spawn()
                .unwrap();
            (file, child)
        })
        .collect();
    let files: Vec<PathBuf> = children
        .into_iter()
        .map(|(f, mut c)| {
            assert!(c.wait().unwrap().success());
            f
        })
        .collect();
    let answered = u(&server.stop()["answered"]);
    let oks: Vec<u64> = files
        .iter()
        .map(|f| u(&read_json(f)["requests"]["ok"]))
        .collect();
    assert_eq!(oks, [6, 5]);
    assert_eq!(answered, 11);
    // Each recorded slot (50 ms apart) was sent once, by one segment or
    // the other: no segment sent the first half of the file.
    let mut slots: Vec<i64> = std::fs::read_to_string(&arrivals)
        .unwrap()
        .lines()
        .map(|l| ((l.parse::<f64>().unwrap() - start * 1e6) / 50_000.0).round() as i64)
        .collect();
    slots.sort_unstable();
    assert_eq!(
        slots,
        (0..11).collect::<Vec<i64>>(),
        "slots of 50 ms from the start"
    );
    let merged: Value = serde_json::from_slice(&merge(&files, &["--json"]).stdout).unwrap();
    assert_eq!(u(&merged["requests"]["ok"]), 11);
}
