//! The live page (issue 42) in headless Chromium: a real `rackbench load`
//! against the test server with `--metrics-listen`, its page at `/` opened
//! through chromedriver (WebDriver's HTTP and JSON, spoken here over a
//! TcpStream) while the run goes. The snapshot on screen (`data-seq` on
//! <body>) advances and its figures change; they are the endpoint's own
//! for that snapshot; when the run ends the page says so and its totals
//! are the run's `--json` counts exactly.

mod common;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// One HTTP/1.1 exchange on a fresh loopback connection: the status and
/// the body (by its length, chunked, or to the end).
fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(90)))?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        let n = s.read(&mut buf)?;
        raw.extend_from_slice(&buf[..n]);
        let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            if n == 0 {
                return Err(std::io::Error::other("closed before the end of the head"));
            }
            continue;
        };
        let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
        let rest = &raw[split + 4..];
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok());
        let chunked = head.contains("transfer-encoding: chunked");
        let whole = match length {
            Some(len) => rest.len() >= len,
            None if chunked => rest.ends_with(b"0\r\n\r\n"),
            None => false,
        };
        if whole || n == 0 {
            let status = head
                .split_whitespace()
                .nth(1)
                .and_then(|c| c.parse().ok())
                .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))?;
            let body = match length {
                Some(len) => rest[..len.min(rest.len())].to_vec(),
                None if chunked => dechunk(rest),
                None => rest.to_vec(),
            };
            return Ok((status, body));
        }
    }
}

/// A chunked body's bytes.
fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&b[..eol])
            .ok()
            .and_then(|l| usize::from_str_radix(l.split(';').next()?.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || b.len() < eol + 2 + size {
            break;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[(eol + 4 + size).min(b.len())..];
    }
    out
}

/// `/live.json` from rackbench's endpoint, or None while it does not
/// answer.
fn live_json(port: u16) -> Option<Value> {
    let (status, body) = http(port, "GET", "/live.json", None).ok()?;
    (status == 200).then(|| serde_json::from_slice(&body).ok())?
}

/// Every process under `pid` (its children, theirs, ...), from /proc.
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent = BTreeMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so after the ')'.
        if let Some(pp) = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1))
            .and_then(|s| s.parse::<u32>().ok())
        {
            parent.insert(p, pp);
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parent.iter().filter(|(_, pp)| **pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out.remove(0);
    out
}

/// The processes whose command line names `path`.
fn naming(path: &Path) -> Vec<u32> {
    let needle = path.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .collect()
}

/// chromedriver (in its own process group) and one session of headless
/// Chromium. Dropped: the session ended, then the driver, its group,
/// every process under it and any left naming its profile (Chromium's
/// crash handler leaves the tree) killed.
struct Browser {
    driver: Child,
    port: u16,
    session: String,
    profile: PathBuf,
}

impl Browser {
    fn start(work: &Path) -> Browser {
        let port = rackbench::host::free_port().unwrap();
        let log = std::fs::File::create(work.join("chromedriver.log")).unwrap();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start chromedriver");
        let mut b = Browser {
            driver,
            port,
            session: String::new(),
            profile: work.join("chromium-profile"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !http(port, "GET", "/status", None).is_ok_and(|(s, _)| s == 200) {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer in 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // The headless switches of common::headless_chromium, for the
        // driver to pass on.
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": common::CHROMIUM,
                "args": ["--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", "--window-size=1200,800",
                    format!("--user-data-dir={}", b.profile.display())],
            }
        }}});
        let v = b.call("POST", "/session", Some(&caps));
        b.session = v["sessionId"].as_str().expect("a session id").to_string();
        b
    }

    /// A WebDriver command's `value`; fails the test on an error.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let (status, raw) = http(self.port, method, path, body)
            .unwrap_or_else(|e| panic!("chromedriver {method} {path}: {e}"));
        let v: Value = serde_json::from_slice(&raw).unwrap_or_else(|e| {
            panic!(
                "chromedriver {method} {path}: not JSON ({e}): {}",
                String::from_utf8_lossy(&raw)
            )
        });
        assert_eq!(status, 200, "chromedriver {method} {path}: {v}");
        v["value"].clone()
    }

    fn open(&self, url: &str) {
        self.call(
            "POST",
            &format!("/session/{}/url", self.session),
            Some(&json!({ "url": url })),
        );
    }

    /// `script`'s return value, run in the page.
    fn run(&self, script: &str) -> Value {
        self.call(
            "POST",
            &format!("/session/{}/execute/sync", self.session),
            Some(&json!({"script": script, "args": []})),
        )
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = http(
                self.port,
                "DELETE",
                &format!("/session/{}", self.session),
                None,
            );
        }
        let pid = self.driver.id();
        let mut under = descendants(pid);
        under.extend(naming(&self.profile));
        unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
        for p in under {
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
        let _ = self.driver.wait();
    }
}

/// A child process killed (by its pid) when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// What the page shows, read in one script (so of one snapshot): its seq,
/// state and the whole run's totals, each from the raw `data-value` and
/// checked against the text on screen.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shown {
    seq: u64,
    done: bool,
    running: bool,
    requests: u64,
    ok: u64,
    errors: u64,
    /// The points of the throughput chart's line (of `seconds`, for the
    /// endpoint).
    points: u64,
}

const READ: &str = r##"
var out = {seq: document.body.getAttribute("data-seq"), state: document.body.getAttribute("data-state")};
["totals.requests", "totals.ok", "totals.errors"].forEach(function (f) {
  var e = document.querySelector('[data-field="' + f + '"]');
  out[f] = e ? [e.getAttribute("data-value"), e.textContent] : null;
});
var line = document.querySelector("#chart-rps path");
out.points = line ? (line.getAttribute("d").match(/[ML]/g) || []).length : 0;
return out;
"##;

fn shown(b: &Browser) -> Option<Shown> {
    let v = b.run(READ);
    let seq = v["seq"].as_str()?.parse().ok()?;
    let figure = |f: &str| -> u64 {
        let raw = v[f][0]
            .as_str()
            .unwrap_or_else(|| panic!("{f} not on the page: {v}"));
        let text = v[f][1].as_str().unwrap().replace(',', "");
        assert_eq!(raw, text, "{f}: the page shows {text}, its value is {raw}");
        raw.parse()
            .unwrap_or_else(|_| panic!("{f}: {raw:?} is not a count"))
    };
    let state = v["state"].as_str().unwrap_or("");
    Some(Shown {
        seq,
        done: state == "done",
        running: state == "running",
        requests: figure("totals.requests"),
        ok: figure("totals.ok"),
        errors: figure("totals.errors"),
        points: v["points"].as_u64().unwrap(),
    })
}

/// Waits until `until` holds for what the page shows, reading it every
/// 200 ms for at most `secs`.
fn wait_page(b: &Browser, secs: u64, what: &str, until: impl Fn(&Shown) -> bool) -> Shown {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut last = None;
    loop {
        if let Some(s) = shown(b) {
            if until(&s) {
                return s;
            }
            last = Some(s);
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {secs} s; the page last showed {last:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every snapshot of `/live.json` seen, by seq, read every 100 ms by a
/// thread until `stop`.
type Seen = Arc<Mutex<BTreeMap<u64, Shown>>>;

fn watch(port: u16, stop: Arc<AtomicBool>) -> (Seen, std::thread::JoinHandle<()>) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let h = std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if let Some(v) = live_json(port) {
                let n = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap();
                let done = v["done"].as_bool().unwrap();
                s.lock().unwrap().insert(
                    n("/seq"),
                    Shown {
                        seq: n("/seq"),
                        done,
                        running: !done,
                        requests: n("/totals/requests"),
                        ok: n("/totals/ok"),
                        errors: n("/totals/errors"),
                        points: v["seconds"].as_array().unwrap().len() as u64,
                    },
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    (seen, h)
}

/// The page's snapshot against the endpoint's: equal when the endpoint
/// was seen at the same seq; otherwise between the ones seen before and
/// after it (the counts only grow). Whether it was an exact match.
fn matches_endpoint(page: &Shown, seen: &BTreeMap<u64, Shown>) -> bool {
    if let Some(e) = seen.get(&page.seq) {
        assert_eq!(
            (page.requests, page.ok, page.errors),
            (e.requests, e.ok, e.errors),
            "the page at seq {} shows other totals than /live.json at that seq",
            page.seq
        );
        return true;
    }
    if let Some((_, before)) = seen.range(..page.seq).next_back() {
        assert!(
            before.ok <= page.ok && before.requests <= page.requests,
            "{before:?} then the page's {page:?}"
        );
    }
    if let Some((_, after)) = seen.range(page.seq + 1..).next() {
        assert!(
            page.ok <= after.ok && page.requests <= after.requests,
            "the page's {page:?} then {after:?}"
        );
    }
    false
}

fn chromedriver_there() -> bool {
    common::have_chromium()
        && rackbench::require::require(
            "chromedriver",
            Path::new(CHROMEDRIVER).exists(),
            "apt-get install chromium-driver",
        )
}

#[test]
fn the_live_page_follows_a_run_and_ends_with_its_counts() {
    if !chromedriver_there() {
        return;
    }
    let work: PathBuf = common::work_dir("live-page");
    // Chromium first: its start is the slow part on a busy machine.
    let browser = Browser::start(&work);
    let server = common::plain_test_server();
    let port = rackbench::host::free_port().unwrap();
    let listen = format!("127.0.0.1:{port}");
    let url = format!("http://{}/", server.addr());
    let mut load = Running(
        common::rackbench_cmd()
            .args([
                "load", &url, "-d", "12s", "-c", "2", "--rate", "200", "--json",
            ])
            .args(["--metrics-listen", &listen, "--metrics-linger", "5m"])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(work.join("load.stderr")).unwrap())
            .spawn()
            .expect("start rackbench load"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while live_json(port).is_none() {
        assert!(
            Instant::now() < deadline,
            "/live.json did not answer in 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (seen, watcher) = watch(port, stop.clone());

    browser.open(&format!("http://{listen}/"));
    let first = wait_page(&browser, 60, "the page shows a snapshot of the run", |s| {
        s.running
    });
    let later = wait_page(&browser, 30, "the page moves on while the run goes", |s| {
        s.seq >= first.seq + 2 || s.done
    });
    assert!(
        later.running,
        "the run ended before the page moved on twice: {first:?}, {later:?}"
    );
    assert!(
        later.ok > first.ok,
        "the page's totals.ok did not grow: {first:?}, {later:?}"
    );

    let mut pages = vec![first, later];
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(700));
        pages.extend(shown(&browser));
    }
    // The document comes before the linger: read it, not to the end.
    let stdout = load.0.stdout.take().unwrap();
    let run: Value = serde_json::Deserializer::from_reader(stdout)
        .into_iter()
        .next()
        .expect("load --json printed its document")
        .expect("load --json printed JSON");
    wait_page(&browser, 30, "the page says the run finished", |s| s.done);
    // The chart has a point for every second the endpoint keeps.
    let last = live_json(port).expect("/live.json during the linger");
    let seconds = last["seconds"].as_array().unwrap().len() as u64;
    let end = wait_page(&browser, 10, "the page shows the last snapshot", |s| {
        s.done && Some(s.seq) == last["seq"].as_u64()
    });
    assert!(
        end.points >= 10,
        "a 12 s run charted in {} points",
        end.points
    );
    assert_eq!(
        end.points, seconds,
        "the chart's points against /live.json's seconds"
    );
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    // Ctrl-C ends the linger.
    unsafe { libc::kill(load.0.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(30);
    while load.0.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "rackbench load lingered on after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let seen = seen.lock().unwrap();
    let exact = pages.iter().filter(|p| matches_endpoint(p, &seen)).count();
    eprintln!(
        "{exact} of {} page reads at a seq the endpoint was seen at",
        pages.len()
    );
    matches_endpoint(&end, &seen);
    let errors: u64 = common::error_count(&run["errors"]);
    assert_eq!(
        (end.requests, end.ok, end.errors),
        (
            run["requests"]["total"].as_u64().unwrap(),
            run["requests"]["ok"].as_u64().unwrap(),
            errors
        ),
        "the finished page's totals against the run's --json"
    );
    drop(browser);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn live_serves_the_page_on_a_free_loopback_port_and_says_where() {
    use std::io::BufRead;
    let server = common::plain_test_server();
    let url = format!("http://{}/", server.addr());
    let mut load = Running(
        common::rackbench_cmd()
            .args([
                "load", &url, "-d", "2s", "-c", "1", "--rate", "50", "--json",
            ])
            .args(["--live", "--metrics-linger", "5m"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rackbench load"),
    );
    // Its stderr read to the end by a thread (a closed pipe would fail
    // rackbench's later lines), each line passed on.
    let stderr = std::io::BufReader::new(load.0.stderr.take().unwrap());
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        stderr
            .lines()
            .map_while(Result::ok)
            .for_each(|l| drop(tx.send(l)))
    });
    let mut said = Vec::new();
    let page = loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("--live named no page: {said:?}"));
        if let Some((_, page)) = line.split_once("the page at ") {
            break page.trim().to_string();
        }
        said.push(line);
    };
    let port: u16 = page
        .strip_prefix("http://127.0.0.1:")
        .and_then(|p| p.strip_suffix('/'))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("--live's page is not on loopback: {page}"));
    assert_ne!(port, 0);
    let (status, body) = http(port, "GET", "/", None).expect("GET /");
    assert_eq!(status, 200);
    assert_eq!(
        String::from_utf8(body).unwrap(),
        rackbench::live::page::html()
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = live_json(port).expect("/live.json");
        assert_eq!(v["command"], "load");
        if v["done"] == true {
            assert!(v["totals"]["ok"].as_u64().unwrap() > 0, "{v}");
            break;
        }
        assert!(Instant::now() < deadline, "the 2 s load did not end: {v}");
        std::thread::sleep(Duration::from_millis(200));
    }
    unsafe { libc::kill(load.0.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(30);
    while load.0.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "rackbench load lingered on after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_page_says_so_when_rackbench_stops_answering_mid_run() {
    if !chromedriver_there() {
        return;
    }
    let work: PathBuf = common::work_dir("live-page-lost");
    let browser = Browser::start(&work);
    let server = common::plain_test_server();
    let port = rackbench::host::free_port().unwrap();
    let url = format!("http://{}/", server.addr());
    let mut load = Running(
        common::rackbench_cmd()
            .args(["load", &url, "-d", "60s", "-c", "1", "--rate", "50"])
            .args(["--metrics-listen", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rackbench load"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while live_json(port).is_none() {
        assert!(
            Instant::now() < deadline,
            "/live.json did not answer in 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    browser.open(&format!("http://127.0.0.1:{port}/"));
    let running = wait_page(&browser, 60, "the page shows the run", |s| {
        s.running && s.ok > 0
    });
    unsafe { libc::kill(load.0.id() as i32, libc::SIGKILL) };
    let _ = load.0.wait();
    let lost = wait_page(&browser, 30, "the page says the connection is lost", |s| {
        !s.running && !s.done
    });
    assert!(
        lost.seq >= running.seq && lost.ok >= running.ok,
        "{running:?} then {lost:?}"
    );
    let text = browser.run("return document.getElementById('state').textContent");
    assert!(
        text.as_str()
            .is_some_and(|t| t.starts_with("Connection lost")),
        "the page says {text}"
    );
    drop(browser);
    let _ = std::fs::remove_dir_all(&work);
}
