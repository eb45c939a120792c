//! Telemetry from inside real servers (issue 15), with known answers: the
//! middleware wrapped around an app through `rackbench::telemetry`'s
//! wrapper, each server started directly (not through the lab) on a free
//! port, driven with plain HTTP, stopped the way its adapter stops it, and
//! the merged figures checked. Also the kernel's accept queue under a
//! single-worker server.

mod common;

use common::have;
use rackbench::telemetry::{self, ReadOptions, Telemetry};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// This file's fresh work directory for `tag`.
fn work_dir(tag: &str) -> PathBuf {
    common::work_dir(&format!("tel-{tag}"))
}

fn free_port() -> u16 {
    rackbench::host::free_port().unwrap()
}

fn app_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("ruby/apps")
        .join(name)
}

/// A server started from a shell command in its own process group.
struct Server {
    child: Child,
    dir: PathBuf,
    stop_signal: i32,
    port: u16,
}

impl Server {
    fn start(dir: &Path, port: u16, command: &str, env: &[(String, String)], sig: i32) -> Self {
        let log = std::fs::File::create(dir.join("server.log")).unwrap();
        let child = Command::new("sh")
            .args(["-c", &format!("exec {command}")])
            .current_dir(dir)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        let mut s = Server {
            child,
            dir: dir.to_path_buf(),
            stop_signal: sig,
            port,
        };
        s.wait_ready(Duration::from_secs(60));
        s
    }

    fn wait_ready(&mut self, limit: Duration) {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("server exited ({st}) before serving:\n{}", self.log());
            }
            if get(self.port, "/", &[]).is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("server not ready in {limit:?}:\n{}", self.log());
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// The adapter's graceful stop, then waits for the process to leave.
    fn stop(mut self) -> String {
        unsafe { libc::kill(self.child.id() as i32, self.stop_signal) };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = self.log();
        self.kill_all();
        log
    }

    fn kill_all(&mut self) {
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
        // Daemonized children (passenger's agents) leave the group; they
        // run in dir or name it on their command line.
        let needle = self.dir.display().to_string();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let named = cmdline
                .split(' ')
                .any(|a| a == needle || a.starts_with(&format!("{needle}/")));
            if cwd.starts_with(&self.dir) || named {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill_all();
        }
    }
}

/// One HTTP/1.1 request on its own connection; the response body, or None
/// when the server did not answer 200.
fn get(port: u16, path: &str, headers: &[(&str, String)]) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let text = String::from_utf8_lossy(&out).to_string();
    let ok = text.starts_with("HTTP/1.1 200") || text.starts_with("HTTP/1.0 200");
    ok.then(|| text.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}

/// `n` requests on `clients` threads; panics on any failure.
fn drive(port: u16, path: &str, n: usize, clients: usize) {
    std::thread::scope(|s| {
        for c in 0..clients {
            s.spawn(move || {
                for _ in (c..n).step_by(clients) {
                    get(port, path, &[]).unwrap_or_else(|| panic!("GET {path} failed"));
                }
            });
        }
    });
}

/// Reads the telemetry until `requests` have arrived (lines are flushed
/// about once a second and at exit) or `limit` passes.
fn telemetry_for(dir: &Path, requests: u64, limit: Duration) -> Telemetry {
    let t0 = Instant::now();
    loop {
        let t = telemetry::read(dir, ReadOptions::default()).unwrap();
        if t.requests >= requests || t0.elapsed() > limit {
            return t;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wrap(dir: &Path, app: &Path) -> telemetry::Wrapper {
    telemetry::write_wrapper(app, &dir.join("wrapper"), &dir.join("telemetry")).unwrap()
}

fn puma(dir: &Path, port: u16, ru: &Path, workers: u32, threads: u32) -> String {
    format!(
        "puma --bind tcp://127.0.0.1:{port} --workers {workers} --threads {threads}:{threads} --environment production --pidfile {}/puma.pid {}",
        dir.display(),
        ru.display()
    )
}

fn unicorn(dir: &Path, listen: &str, ru: &Path, workers: u32) -> String {
    let cfg = dir.join("unicorn.rb");
    std::fs::write(
        &cfg,
        format!(
            "listen \"{listen}\", backlog: 1024\nworker_processes {workers}\npreload_app false\ntimeout 60\npid \"{}/unicorn.pid\"\n",
            dir.display()
        ),
    )
    .unwrap();
    format!(
        "unicorn --config-file {} --env production {}",
        cfg.display(),
        ru.display()
    )
}

fn env_with(w: &telemetry::Wrapper, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = w.env.clone();
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

#[test]
fn an_app_that_sleeps_20_ms_shows_app_p50_near_20_ms_and_a_stamp_shows_queue_time() {
    if !have("puma", "apt-get install puma") {
        return;
    }
    let dir = work_dir("sleep");
    let w = wrap(&dir, &app_file("sleep.ru"));
    let port = free_port();
    let srv = Server::start(
        &dir,
        port,
        &puma(&dir, port, &w.rackup, 0, 4),
        &w.env,
        libc::SIGTERM,
    );
    // Every form X-Request-Start comes in, each stamped 300 ms ago.
    for i in 0..30 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let then_us = now.as_micros() as u64 - 300_000;
        let stamp = match i % 3 {
            0 => format!("t={}.{:03}", then_us / 1_000_000, then_us / 1000 % 1000),
            1 => format!("t={then_us}"),
            _ => format!("{}", then_us / 1000),
        };
        get(port, "/?ms=20", &[("X-Request-Start", stamp)]).expect("sleep answers");
    }
    let log = srv.stop();
    let t = telemetry_for(&w.data_dir, 31, Duration::from_secs(5));
    // 30 stamped requests plus the readiness probe.
    assert!((31..=35).contains(&t.requests), "{t:?}\n{log}");
    assert!(
        (18_000.0..40_000.0).contains(&t.app_us.p50),
        "app p50 {} µs, expected about 20 ms",
        t.app_us.p50
    );
    let q = t.queue_us.expect("stamped requests give queue_us");
    assert_eq!(t.queue_requests, 30);
    assert!(
        (295_000.0..450_000.0).contains(&q.p50),
        "queue p50 {} µs, expected about 300 ms",
        q.p50
    );
    assert_eq!(t.per_worker.len(), 1);
    assert!(t.per_worker[0].rss_bytes.unwrap() > 1_000_000);
    let doc = serde_json::to_value(&t).unwrap();
    common::schema::assert_valid("telemetry-v1", &doc, "telemetry of sleep.ru on puma");
    // tests/contracts/telemetry-v1.json, the sample tests/contracts.rs
    // breaks, is this document.
    if std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/contracts/telemetry-v1.json");
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
    }
    let mut broken = doc.clone();
    broken["app_us"].as_object_mut().unwrap().remove("p50");
    common::schema::assert_invalid("telemetry-v1", &broken, "/app_us", "p50");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nothing_is_lost_when_forked_workers_stop_gracefully() {
    if !have("puma", "apt-get install puma") || !have("unicorn", "apt-get install unicorn") {
        return;
    }
    // A flush period longer than the test: only the exit flush can write.
    for server in ["puma", "unicorn"] {
        let dir = work_dir(&format!("graceful-{server}"));
        let w = wrap(&dir, &app_file("hello.ru"));
        let port = free_port();
        let (cmd, sig) = match server {
            "puma" => (puma(&dir, port, &w.rackup, 2, 2), libc::SIGTERM),
            _ => (
                unicorn(&dir, &format!("127.0.0.1:{port}"), &w.rackup, 2),
                libc::SIGQUIT,
            ),
        };
        let env = env_with(&w, &[("RACKBENCH_TELEMETRY_FLUSH_S", "60")]);
        let srv = Server::start(&dir, port, &cmd, &env, sig);
        let master = srv.child.id();
        drive(port, "/", 200, 4);
        let log = srv.stop();
        let t = telemetry_for(&w.data_dir, 201, Duration::from_secs(5));
        assert!(
            t.requests >= 201,
            "{server}: {} of 201 requests reached the telemetry after a graceful stop\n{log}",
            t.requests
        );
        assert!(
            t.per_worker
                .iter()
                .all(|p| p.pid != master && p.exited_cleanly),
            "{server}: every worker (not the master {master}) writes at exit: {:?}",
            t.per_worker
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

const ALLOCATING_RU: &str = r#"# Allocates about 50,000 short strings per request.
run ->(_env) { 50_000.times.map { |i| "s#{i}" }; [200, { "content-type" => "text/plain" }, ["ok"]] }
"#;

const QUIET_RU: &str = r#"# Allocates nothing of its own.
body = "ok".freeze
headers = { "content-type" => "text/plain", "content-length" => "2" }.freeze
run ->(_env) { [200, headers, [body]] }
"#;

/// Telemetry of `n` requests to `ru` on single-mode puma, one thread.
fn puma_run(tag: &str, ru: &Path, n: usize, path: &str, extra: &[(&str, &str)]) -> Telemetry {
    let dir = work_dir(tag);
    let w = wrap(&dir, ru);
    let port = free_port();
    let srv = Server::start(
        &dir,
        port,
        &puma(&dir, port, &w.rackup, 0, 1),
        &env_with(&w, extra),
        libc::SIGTERM,
    );
    drive(port, path, n, 1);
    let log = srv.stop();
    let t = telemetry_for(&w.data_dir, n as u64 + 1, Duration::from_secs(5));
    assert!(t.requests > n as u64, "{tag}: {t:?}\n{log}");
    let _ = std::fs::remove_dir_all(&dir);
    t
}

#[test]
fn an_allocating_app_runs_gc_and_a_quiet_one_about_never() {
    if !have("puma", "apt-get install puma") {
        return;
    }
    let dir = work_dir("apps");
    std::fs::write(dir.join("allocating.ru"), ALLOCATING_RU).unwrap();
    std::fs::write(dir.join("quiet.ru"), QUIET_RU).unwrap();
    let busy = puma_run("alloc", &dir.join("allocating.ru"), 200, "/", &[]);
    let quiet = puma_run("quiet", &dir.join("quiet.ru"), 500, "/", &[]);
    assert!(
        busy.gc_runs_per_1k_requests > 100.0,
        "allocating: {} GC runs per 1k requests",
        busy.gc_runs_per_1k_requests
    );
    assert!(busy.allocated_objects_per_request > 50_000.0);
    assert!(busy.gc_time_ms.unwrap() > 0.0 && busy.gc_time_share.unwrap() > 0.0);
    // The quiet app still allocates what puma itself does per request
    // (about 60 objects), so a GC every few hundred requests remains: 2 to
    // 4 per 1,000, against about 2,000 for the allocating app.
    assert!(
        quiet.gc_runs_per_1k_requests < 20.0
            && quiet.gc_runs_per_1k_requests * 50.0 < busy.gc_runs_per_1k_requests,
        "quiet: {} GC runs per 1k requests (allocating: {})",
        quiet.gc_runs_per_1k_requests,
        busy.gc_runs_per_1k_requests
    );
    assert!(quiet.allocated_objects_per_request < 1_000.0);
    // The GC's detail (issue 41): the short-lived objects fill the heap's
    // free slots, so minors triggered by new objects are most of them.
    let gc = busy.gc.as_ref().expect("the GC's detail");
    let (minors, by_malloc) = gc.minors();
    assert!(minors > 10 && by_malloc * 2 < minors, "{gc:?}");
    assert!(gc.heap_live_slots.unwrap() > 0 && gc.malloc_increase_bytes_limit.unwrap() > 0);
    assert!(
        !gc.ruby_version.is_empty() && gc.ruby_engine == "ruby",
        "{gc:?}"
    );
    assert_eq!(
        busy.per_worker[0].gc.as_ref().unwrap().triggers,
        gc.triggers
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gc_tuning_variables_change_gc_runs_per_1k_requests_on_primes() {
    if !have("puma", "apt-get install puma") {
        return;
    }
    // 20,000 primes grow an array of about 160 kB per request: malloc'd
    // memory, so the malloc limit decides how often GC runs.
    let primes = app_file("primes.ru");
    let path = "/?count=20000";
    let default = puma_run("primes-default", &primes, 200, path, &[]);
    let tight = puma_run(
        "primes-tight",
        &primes,
        200,
        path,
        &[
            ("RUBY_GC_MALLOC_LIMIT", "100000"),
            ("RUBY_GC_MALLOC_LIMIT_MAX", "100000"),
        ],
    );
    assert!(
        default.gc_runs_per_1k_requests > 10.0,
        "default: {} GC runs per 1k requests",
        default.gc_runs_per_1k_requests
    );
    assert!(
        tight.gc_runs_per_1k_requests > 3.0 * default.gc_runs_per_1k_requests,
        "RUBY_GC_MALLOC_LIMIT=100000: {} GC runs per 1k requests, default {}",
        tight.gc_runs_per_1k_requests,
        default.gc_runs_per_1k_requests
    );
    // The telemetry sees the limit it was given and what it triggered.
    let gc = tight.gc.as_ref().expect("the GC's detail");
    assert!(gc.malloc_increase_bytes_limit.unwrap() <= 100_000, "{gc:?}");
    let (minors, by_malloc) = gc.minors();
    assert!(
        by_malloc * 2 > minors,
        "minors {minors}, by malloc {by_malloc}: {gc:?}"
    );
}

#[test]
fn one_unicorn_worker_under_8_connections_holds_about_7_in_the_accept_queue() {
    if !have("unicorn", "apt-get install unicorn") {
        return;
    }
    for unix in [false, true] {
        let dir = work_dir(if unix { "aq-unix" } else { "aq-tcp" });
        let w = wrap(&dir, &app_file("sleep.ru"));
        let port = free_port();
        let sock = dir.join("u.sock");
        let listen = if unix {
            sock.display().to_string()
        } else {
            format!("127.0.0.1:{port}")
        };
        let target = telemetry::listen_endpoint(&listen).expect("a socket path or ip:port");
        // Readiness over TCP needs a port: on a socket, wait for the file.
        let cmd = unicorn(&dir, &listen, &w.rackup, 1);
        let srv = if unix {
            start_on_socket(&dir, &sock, &cmd, &w.env)
        } else {
            Server::start(&dir, port, &cmd, &w.env, libc::SIGQUIT)
        };
        let sampler = telemetry::AcceptQueueSampler::start(target, Duration::from_millis(10));
        let until = Instant::now() + Duration::from_secs(2);
        let sock_ref = &sock;
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(move || {
                    while Instant::now() < until {
                        let ok = if unix {
                            unix_get(sock_ref, "/?ms=20")
                        } else {
                            get(port, "/?ms=20", &[]).is_some()
                        };
                        assert!(ok, "request failed");
                    }
                });
            }
        });
        let aq = sampler.finish().unwrap();
        let log = srv.stop();
        assert!(
            (6..=8).contains(&aq.max),
            "{listen}: accept queue max {} (8 connections, 1 worker)\n{log}",
            aq.max
        );
        assert!(
            aq.mean > 4.5 && aq.mean <= 8.0,
            "{listen}: accept queue mean {} over {} samples",
            aq.mean,
            aq.samples
        );
        assert!(!aq.timeline.is_empty());
        accept_queue_holds_its_schema(&serde_json::to_value(&aq).unwrap());
        let t = telemetry_for(&w.data_dir, 2, Duration::from_secs(5));
        assert!(
            (18_000.0..40_000.0).contains(&t.app_us.p50),
            "app p50 stays near 20 ms while the queue grows: {}",
            t.app_us.p50
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `server_metrics.accept_queue` against its definition in
/// schema/telemetry-v1.schema.json.
fn accept_queue_holds_its_schema(doc: &serde_json::Value) {
    let path = common::schema::dir().join("telemetry-v1.schema.json");
    let loc = format!("{}#/$defs/accept_queue", path.display());
    let mut schemas = boon::Schemas::new();
    let index = boon::Compiler::new()
        .compile(&loc, &mut schemas)
        .unwrap_or_else(|e| panic!("{loc}: {e:#}"));
    if let Err(e) = schemas.validate(doc, index) {
        panic!("accept queue breaks {loc}:\n{e}\n{doc}");
    }
    let mut broken = doc.clone();
    broken.as_object_mut().unwrap().remove("max");
    assert!(
        schemas.validate(&broken, index).is_err(),
        "{loc} accepts no max"
    );
}

fn unix_get(sock: &Path, path: &str) -> bool {
    use std::os::unix::net::UnixStream;
    let Ok(mut s) = UnixStream::connect(sock) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut out = Vec::new();
    s.read_to_end(&mut out).is_ok() && out.starts_with(b"HTTP/1.1 200")
}

fn start_on_socket(dir: &Path, sock: &Path, cmd: &str, env: &[(String, String)]) -> Server {
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let child = Command::new("sh")
        .args(["-c", &format!("exec {cmd}")])
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap();
    let srv = Server {
        child,
        dir: dir.to_path_buf(),
        stop_signal: libc::SIGQUIT,
        port: 0,
    };
    let t0 = Instant::now();
    while !unix_get(sock, "/") {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "unicorn on {} not ready:\n{}",
            sock.display(),
            srv.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    srv
}

#[test]
fn every_server_reports_telemetry_and_uwsgi_collects_garbage_per_request() {
    let servers: [(&str, &str, i32); 6] = [
        ("puma", "apt-get install puma", libc::SIGTERM),
        ("unicorn", "apt-get install unicorn", libc::SIGQUIT),
        ("thin", "apt-get install thin", libc::SIGTERM),
        ("passenger", "apt-get install passenger", libc::SIGTERM),
        (
            "rackup",
            "apt-get install ruby-rackup ruby-webrick",
            libc::SIGINT,
        ),
        (
            "uwsgi",
            "apt-get install uwsgi uwsgi-plugin-rack-ruby3.1",
            libc::SIGINT,
        ),
    ];
    let n = 40;
    for (name, how, sig) in servers {
        if !have(name, how) {
            continue;
        }
        let dir = work_dir(&format!("each-{name}"));
        let w = wrap(&dir, &app_file("hello.ru"));
        let port = free_port();
        let d = dir.display();
        let ru = w.rackup.display();
        let cmd = match name {
            "puma" => puma(&dir, port, &w.rackup, 2, 2),
            "unicorn" => unicorn(&dir, &format!("127.0.0.1:{port}"), &w.rackup, 2),
            "thin" => format!("thin start --rackup {ru} --address 127.0.0.1 --port {port} --environment production --pid {d}/thin.pid --log {d}/thin.log"),
            "passenger" => format!("env TMPDIR={d} passenger start --engine builtin --address 127.0.0.1 --port {port} --environment production --max-pool-size 2 --min-instances 2 --log-file {d}/passenger.log --pid-file {d}/passenger.pid --disable-security-update-check --disable-anonymous-telemetry --rackup {ru}"),
            "rackup" => format!("rackup --server webrick --host 127.0.0.1 --port {port} --env production {ru}"),
            _ => format!("uwsgi --plugin rack_ruby31 --http-socket 127.0.0.1:{port} --add-header 'Connection: close' --rack {ru} --master --processes 2 --rb-gc-freq 1 --need-app --disable-logging --die-on-term --pidfile {d}/uwsgi.pid"),
        };
        let srv = Server::start(&dir, port, &cmd, &w.env, sig);
        drive(port, "/", n, 2);
        // Lines are flushed every second: read before the stop, so the
        // figures do not depend on how each server exits.
        let t = telemetry_for(&w.data_dir, n as u64 + 1, Duration::from_secs(5));
        let log = srv.stop();
        assert!(
            t.requests > n as u64,
            "{name}: {} requests in the telemetry, {} sent\n{log}",
            t.requests,
            n + 1
        );
        // App time is counted in whole microseconds, and this app answers
        // in less than one on a quiet machine (puma's p50 was 0 µs once):
        // the mean shows that it was measured, the p50 that it is an app's.
        assert!(
            t.app_us.mean > 0.0 && t.app_us.p50 < 50_000.0,
            "{name}: {t:?}"
        );
        assert!(t.per_worker.iter().all(|p| p.rss_bytes.is_some()));
        if name == "uwsgi" {
            assert!(
                t.gc_runs as f64 >= 0.9 * t.requests as f64,
                "uwsgi with --rb-gc-freq 1: {} GC runs for {} requests",
                t.gc_runs,
                t.requests
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_forked_child_reports_its_own_requests_and_not_its_parents() {
    if !have("ruby", "apt-get install ruby") {
        return;
    }
    let dir = work_dir("fork");
    let w = wrap(&dir, &app_file("hello.ru"));
    // The middleware alone, around a lambda: 3 requests in the parent, a
    // fork, 2 in the child (which must not inherit the parent's 3), 1 more
    // in the parent after the child has gone.
    let script = format!(
        r#"
        require "rack"
        require_relative {mw:?}
        app = RackbenchTelemetry::Middleware.new(->(_e) {{ [200, {{}}, ["ok"]] }})
        3.times {{ app.call({{}}) }}
        pid = fork {{ 2.times {{ app.call({{}}) }} }}
        Process.wait(pid)
        app.call({{}})
        puts pid
        "#,
        mw = w
            .rackup
            .with_file_name("rackbench_telemetry")
            .display()
            .to_string()
    );
    let out = Command::new("ruby")
        .args(["-e", &script])
        .envs(w.env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    common::assert_ran(&out, "the forking script");
    let child: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let t = telemetry::read(&w.data_dir, ReadOptions::default()).unwrap();
    let by_pid: Vec<(u32, u64, bool)> = t
        .per_worker
        .iter()
        .map(|p| (p.pid, p.requests, p.exited_cleanly))
        .collect();
    assert_eq!(t.requests, 6, "{by_pid:?}");
    let c = t
        .per_worker
        .iter()
        .find(|p| p.pid == child)
        .expect("the child's own file");
    assert_eq!(c.requests, 2, "{by_pid:?}");
    assert!(t.per_worker.iter().all(|p| p.exited_cleanly), "{by_pid:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn behind_nginx_one_unicorn_worker_under_8_connections_queues_about_7_times_the_app_time() {
    if !have("unicorn", "apt-get install unicorn") || !have("nginx", "apt-get install nginx-light")
    {
        return;
    }
    let dir = work_dir("nginx");
    let w = wrap(&dir, &app_file("sleep.ru"));
    let app_port = free_port();
    let app = Server::start(
        &dir,
        app_port,
        &unicorn(&dir, &format!("127.0.0.1:{app_port}"), &w.rackup, 1),
        &w.env,
        libc::SIGQUIT,
    );
    let ngx_dir = dir.join("nginx");
    std::fs::create_dir_all(&ngx_dir).unwrap();
    let port = free_port();
    let d = ngx_dir.display();
    // The stamp the lab's front must add when telemetry is on.
    let conf = format!(
        "worker_processes 1; daemon off; master_process on; pid {d}/nginx.pid;
error_log {d}/error.log warn; events {{ worker_connections 1024; }}
http {{ access_log off; client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  server {{ listen 127.0.0.1:{port}; location / {{
    proxy_pass http://127.0.0.1:{app_port};
    proxy_set_header X-Request-Start \"t=${{msec}}\"; }} }} }}\n"
    );
    std::fs::write(ngx_dir.join("nginx.conf"), conf).unwrap();
    let ngx = Server::start(
        &ngx_dir,
        port,
        &format!("nginx -p {d} -e {d}/error.log -c {d}/nginx.conf"),
        &[],
        libc::SIGQUIT,
    );
    let started = Instant::now();
    let until = started + Duration::from_secs(3);
    let done = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                while Instant::now() < until {
                    assert!(get(port, "/?ms=20", &[]).is_some(), "request failed");
                    done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    let elapsed_us = started.elapsed().as_micros() as f64;
    let done = done.into_inner();
    let t = telemetry_for(&w.data_dir, done + 1, Duration::from_secs(5));
    ngx.stop();
    let log = app.stop();
    let q = t.queue_us.expect("nginx's stamp gives queue_us");
    assert!(
        (18_000.0..40_000.0).contains(&t.app_us.p50),
        "app p50 {} µs, expected about 20 ms\n{log}",
        t.app_us.p50
    );
    // Each request waits for the 7 ahead of it. On an idle machine a turn
    // is the app's 20 ms; on a busy one unicorn's own work adds to it, so
    // the turn is measured: the one worker's time per request served.
    let turn_us = elapsed_us / done as f64;
    assert!(
        (0.6 * 7.0 * turn_us..1.4 * 7.0 * turn_us).contains(&q.p50),
        "queue p50 {} µs, expected about 7 turns of {turn_us:.0} µs ({} stamped of {})",
        q.p50,
        t.queue_requests,
        t.requests
    );
    assert!(
        q.p50 > 5.0 * t.app_us.p50,
        "queue p50 {} µs should be several app times ({} µs)",
        q.p50,
        t.app_us.p50
    );
    let _ = std::fs::remove_dir_all(&dir);
}
