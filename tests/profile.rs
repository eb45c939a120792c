//! The profiler's truth (issue 40): ruby/apps/two_methods.ru spends each
//! request's CPU in `TwoMethods.spend_a` and `spend_b` in a known ratio
//! (3:1 by default), and rbspy's on-CPU samples of a puma cluster and of
//! unicorn, 2 workers each, under the load engine's load, split between
//! the two in that ratio within sampling error; every worker's pid is
//! among those sampled, a worker forked during the window too; the files
//! are written. A tree without Ruby is refused, naming what it runs.
//! Then the commands: trial, run, breakpoint, compare's and ab's
//! difference (the method whose loop grew on top), every MRI server kind,
//! and the refusals (JRuby, no rbspy, Debian 13's Ruby that rbspy 0.55
//! cannot read).
//!
//! The interval: the share of `spend_a` among the two methods' samples
//! is read as a binomial proportion of n samples; it must lie within 4
//! standard errors of 3/4 (4 * sqrt(3/16 / n); n is about a thousand
//! here, so about ±0.055), and n must be at least 200 (an interval
//! no wider than ±0.12), so a profile that saw little cannot pass.
//!
//! rbspy is required through rackbench::require: under
//! RACKBENCH_REQUIRE (CI) its absence fails these tests.

mod common;

use rackbench::load::{self, Endpoint, LoadConfig};
use rackbench::profile::{self, Profile, ProfileError, ProfileSpec};
use rackbench::server::supervisor::{self, Launch, Probe, Running};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// One server test of this file at a time: side by side on a busy
/// 2-core machine, puma replaced workers mid-trial and rbspy lost its
/// samples (each test passed alone). A test that starts any process takes
/// it too: the tests share one process, and a lab trial counts (and
/// profiles) every child rackbench adopted as its server's.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn have_rbspy() -> bool {
    rackbench::require::require(
        "rbspy",
        profile::rbspy::find().is_some(),
        &profile::rbspy::install_command(),
    )
}

fn installed(server: &str) -> bool {
    common::have(server, &format!("apt-get install {server}"))
}

fn app() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ruby/apps/two_methods.ru")
}

/// Starts `command` in `dir`, waits for its answer on `port` and for
/// `workers` children of its master.
fn start(name: &str, command: &str, dir: &Path, port: u16, workers: usize) -> Running {
    let launch = Launch {
        name: name.into(),
        command: command.to_string(),
        env: Vec::new(),
        cwd: dir.to_path_buf(),
        log: dir.join(format!("{name}.log")),
        cpus: Vec::new(),
        stop_signal: libc::SIGTERM,
        grace: Duration::from_secs(10),
        root: None,
        cgroup: Vec::new(),
    };
    let mut server = supervisor::spawn(launch).unwrap();
    let probe = Probe {
        endpoint: Endpoint::Tcp(format!("127.0.0.1:{port}").parse().unwrap()),
        host: "127.0.0.1".into(),
        path: "/?a=10&b=10".into(),
        timeout: Duration::from_secs(5),
        max_body_bytes: rackbench::server::probe::DEFAULT_MAX_BODY_BYTES,
    };
    let never = AtomicBool::new(false);
    supervisor::wait_ready(&mut server, &probe, Duration::from_secs(60), &never)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while rackbench::sampler::direct_children(server.pid).len() < workers {
        assert!(
            Instant::now() < deadline,
            "{name}: {workers} workers never forked: {}",
            server.log_tail(20)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

/// The two methods' iterations per request: 3:1, about 90 ms of CPU on
/// this machine, so each request holds about nine samples at 100 Hz. With
/// the app's defaults (about 9 ms, one sample period) the samples locked
/// onto the requests' phase: spend_a's share came out 0.36 on a busy
/// machine, 0.74 on a quiet one. Nine samples a request cannot lock on.
const A: u64 = 3_000_000;
const B: u64 = 1_000_000;

/// Loads the app on `port` for 8 s (4 connections: both workers busy)
/// and profiles the tree from 1.5 s in for 5 s.
fn profile_under_load(name: &str, server: &Running, port: u16, dir: &Path) -> Profile {
    profile_while(name, server, port, dir, || {})
}

/// [`profile_under_load`], running `during` once the recording started
/// (it may take part of the 5 s; the recording lasts at least 2 s more).
fn profile_while(
    name: &str,
    server: &Running,
    port: u16,
    dir: &Path,
    during: impl FnOnce(),
) -> Profile {
    let url = format!("http://127.0.0.1:{port}/?a={A}&b={B}");
    let mut cfg = LoadConfig::get(&url).unwrap();
    cfg.connections = 4;
    cfg.duration = Some(Duration::from_secs(8));
    cfg.timeout = Duration::from_secs(10);
    let load = std::thread::spawn(move || load::run(cfg, |_| {}));
    std::thread::sleep(Duration::from_millis(1500));
    let spec = ProfileSpec {
        roots: vec![server.pid],
        rate_hz: profile::DEFAULT_RATE_HZ,
        results_dir: dir.to_path_buf(),
        subdir: PathBuf::from("profile"),
        grace: Duration::from_secs(10),
    };
    let started = Instant::now();
    let got = profile::Recording::start(spec).and_then(|recording| {
        during();
        let rest = Duration::from_secs(5).saturating_sub(started.elapsed());
        std::thread::sleep(rest.max(Duration::from_secs(2)));
        recording.finish()
    });
    let report = load.join().unwrap().unwrap();
    assert!(report.requests.ok > 0, "{name}: no request answered");
    got.unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The samples whose innermost frame is the method `name`.
fn self_samples(p: &Profile, name: &str) -> f64 {
    let share: f64 = p
        .top
        .iter()
        .filter(|t| t.frame.split(" - ").next().unwrap_or("").ends_with(name))
        .map(|t| t.self_share)
        .sum();
    share * p.samples as f64
}

fn assert_truthful(name: &str, server: &Running, p: &Profile, dir: &Path) {
    let (a, b) = (self_samples(p, "spend_a"), self_samples(p, "spend_b"));
    let n = a + b;
    let top: Vec<_> = p.top.iter().take(6).collect();
    assert!(
        n >= 200.0,
        "{name}: only {n} samples in the two methods: {top:?}"
    );
    let share = a / n;
    let bound = 4.0 * (0.75f64 * 0.25 / n).sqrt();
    eprintln!(
        "{name}: spend_a {share:.3} of {n} samples (0.75 ± {bound:.3}); on-CPU by pid {:?}",
        p.samples_by_pid
    );
    assert!(
        (share - 0.75).abs() <= bound,
        "{name}: spend_a's share {share:.3} of {n} samples is not 0.75 ± {bound:.3}: {top:?}"
    );
    for worker in rackbench::sampler::direct_children(server.pid) {
        assert!(
            p.processes.contains(&worker) && p.samples_by_pid.get(&worker) > Some(&0),
            "{name}: worker {worker} was not sampled on-CPU: {:?} {:?}",
            p.processes,
            p.samples_by_pid
        );
    }
    assert!(p.processes.contains(&server.pid), "{name}: the master");
    assert!(p.wall_clock.samples >= p.samples, "{name}");
    for f in &p.files {
        let text = std::fs::read_to_string(dir.join(&f.path)).unwrap();
        assert!(!text.is_empty(), "{name}: {} is empty", f.path);
    }
    let merged = p
        .files
        .iter()
        .find(|f| f.path == "profile/on-cpu.collapsed")
        .expect("the merged on-CPU stacks");
    let text = std::fs::read_to_string(dir.join(&merged.path)).unwrap();
    assert!(
        text.contains("spend_a") && text.contains("spend_b"),
        "{name}"
    );
    let speedscope = dir.join("profile/on-cpu.speedscope.json");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(speedscope).unwrap()).unwrap();
    // Every process merged, then one profile per pid.
    assert_eq!(
        doc["profiles"].as_array().unwrap().len(),
        1 + p.samples_by_pid.len(),
        "{name}"
    );
}

#[test]
fn puma_cluster_splits_its_cpu_between_the_two_methods_in_their_ratio() {
    if !have_rbspy() || !installed("puma") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-puma");
    let port = rackbench::host::free_port().unwrap();
    let command = format!(
        "puma --bind tcp://127.0.0.1:{port} --workers 2 --threads 1:1 --environment production {}",
        app().display()
    );
    let mut server = start("puma", &command, &dir, port, 2);
    let p = profile_under_load("puma", &server, port, &dir);
    assert_truthful("puma", &server, &p, &dir);
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A worker forked during the window is sampled too: one puma worker is
/// killed 1 s into the recording, puma forks its replacement, and the
/// replacement's pid has on-CPU samples (rbspy looks for new descendants
/// every second).
#[test]
fn a_puma_worker_forked_during_the_window_is_sampled() {
    if !have_rbspy() || !installed("puma") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-puma-fork");
    let port = rackbench::host::free_port().unwrap();
    let command = format!(
        "puma --bind tcp://127.0.0.1:{port} --workers 2 --threads 1:1 --environment production {}",
        app().display()
    );
    let mut server = start("puma", &command, &dir, port, 2);
    let before = rackbench::sampler::direct_children(server.pid);
    let master = server.pid;
    let p = profile_while("puma-fork", &server, port, &dir, || {
        std::thread::sleep(Duration::from_secs(1));
        // SAFETY: a signal to a worker of the server this test started.
        unsafe { libc::kill(before[0] as i32, libc::SIGKILL) };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = rackbench::sampler::direct_children(master);
            if now.len() >= 2 && now.iter().any(|p| !before.contains(p)) {
                break;
            }
            assert!(Instant::now() < deadline, "puma forked no new worker");
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let after = rackbench::sampler::direct_children(master);
    let new: Vec<u32> = after.into_iter().filter(|p| !before.contains(p)).collect();
    assert!(!new.is_empty(), "no new worker");
    for pid in &new {
        assert!(
            p.samples_by_pid.get(pid) > Some(&0),
            "the new worker {pid} was not sampled: {:?}",
            p.samples_by_pid
        );
    }
    assert!(
        p.processes.contains(&before[0]),
        "the killed worker, before"
    );
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unicorn_splits_its_cpu_between_the_two_methods_in_their_ratio() {
    if !have_rbspy() || !installed("unicorn") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-unicorn");
    let port = rackbench::host::free_port().unwrap();
    let config = dir.join("unicorn.rb");
    std::fs::write(
        &config,
        format!("worker_processes 2\nlisten \"127.0.0.1:{port}\"\ntimeout 60\n"),
    )
    .unwrap();
    let command = format!(
        "unicorn --config-file {} --env production {}",
        config.display(),
        app().display()
    );
    let mut server = start("unicorn", &command, &dir, port, 2);
    let p = profile_under_load("unicorn", &server, port, &dir);
    assert_truthful("unicorn", &server, &p, &dir);
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tree_without_ruby_is_refused_naming_what_it_runs() {
    if !have_rbspy() {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-no-ruby");
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let spec = ProfileSpec {
        roots: vec![child.id()],
        rate_hz: profile::DEFAULT_RATE_HZ,
        results_dir: dir.clone(),
        subdir: PathBuf::from("profile"),
        grace: Duration::from_secs(5),
    };
    let got = profile::Recording::start(spec);
    let _ = child.kill();
    let _ = child.wait();
    match got {
        Err(e @ ProfileError::NoRuby { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("sleep"), "{msg}");
        }
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("a tree without Ruby was profiled"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A lab trial's spec with `--profile`: the two-method app on `server`
/// with 2 workers of 1 thread, 4 connections, a 4 s warm-up and a 4 s window.
fn profiled_trial(server: &str, dir: &Path) -> rackbench::lab::spec::TrialSpec {
    use rackbench::lab::apps::AppSpec;
    use rackbench::lab::record::Topology;
    use rackbench::lab::spec::{ProfileAsk, TrialSpec};
    let mut app = AppSpec::resolve(app().to_str().unwrap()).unwrap();
    app.path = format!("/?a={A}&b={B}");
    app.expect_body = format!("spent {A}:{B}");
    let mut load = LoadConfig::get("http://127.0.0.1:1/").unwrap();
    load.connections = 4;
    load.warmup = Duration::from_secs(4);
    load.duration = Some(Duration::from_secs(4));
    load.timeout = Duration::from_secs(10);
    let reg = rackbench::server::spec::Registry::builtin();
    TrialSpec {
        server: reg.get(server).unwrap().clone(),
        app,
        workers: Some(2),
        // One thread a worker: a puma worker with five took all four
        // kept-alive connections at times, and the other was never on-CPU.
        threads: Some(1),
        settings: Default::default(),
        env: Vec::new(),
        topology: Topology::Direct,
        load,
        server_cpus: Vec::new(),
        start_timeout: Some(Duration::from_secs(60)),
        grace: Duration::from_secs(10),
        dir: dir.join("work"),
        interrupt: std::sync::Arc::new(AtomicBool::new(false)),
        sample_interval: Duration::from_millis(200),
        stop_on_errors: false,
        telemetry: false,
        runtime: None,
        switches: Default::default(),
        budget: None,
        restart: None,
        soak: None,
        database: None,
        profile: Some(ProfileAsk {
            rate_hz: profile::DEFAULT_RATE_HZ,
            results_dir: dir.to_path_buf(),
            subdir: PathBuf::from("profiles/t1"),
        }),
    }
}

/// `--profile` on a trial: the record's `profile` covers the counted
/// window only (4 s, not the 4 s warm-up before it), every worker the
/// record counted is among the pids sampled, the two methods split in
/// their ratio, and the files sit under the trial's folder.
#[test]
fn a_profiled_trial_records_its_counted_window_and_every_worker() {
    if !have_rbspy() || !installed("puma") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-trial");
    let rec = rackbench::lab::trial::run_trial(profiled_trial("puma", &dir)).unwrap();
    assert_eq!(rec.profile_error, None);
    let p = rec.profile.as_ref().expect("a profile");
    // Warm-up included, the recording would last 8 s or more.
    assert!(
        p.window_ms < 6_500,
        "the profile ran {} ms: the warm-up was profiled too",
        p.window_ms
    );
    let (a, b) = (self_samples(p, "spend_a"), self_samples(p, "spend_b"));
    let n = a + b;
    let bound = 4.0 * (0.75f64 * 0.25 / n).sqrt();
    assert!(n >= 150.0, "only {n} samples in the two methods");
    assert!(
        (a / n - 0.75).abs() <= bound,
        "spend_a's share {:.3} of {n} is not 0.75 ± {bound:.3}",
        a / n
    );
    let workers: Vec<u32> = (rec.server_metrics.samples.per_process.iter())
        .filter(|w| w.role == rackbench::sampler::Role::Worker)
        .map(|w| w.pid)
        .collect();
    assert_eq!(workers.len(), 2, "{workers:?}");
    // The master and its two workers: rbspy, a child of rackbench like
    // the helpers it adopts for a server, is not counted as the server's.
    let counted: Vec<_> = (rec.server_metrics.samples.per_process.iter())
        .map(|w| (w.pid, w.role))
        .collect();
    assert_eq!(counted.len(), 3, "{counted:?}");
    for w in workers {
        assert!(
            p.samples_by_pid.get(&w) > Some(&0),
            "worker {w} was not sampled: {:?}",
            p.samples_by_pid
        );
    }
    for f in &p.files {
        assert!(f.path.starts_with("profiles/t1/"), "{}", f.path);
        assert!(dir.join(&f.path).is_file(), "{}", f.path);
    }
    let doc = serde_json::to_value(&rec).unwrap();
    for field in [
        "samples",
        "rate_hz",
        "processes",
        "gc_share",
        "top",
        "files",
        "overhead",
    ] {
        assert!(doc["profile"].get(field).is_some(), "profile lacks {field}");
    }
    // rbspy's own CPU over the window: reading symbols at its start alone
    // takes more than one clock tick.
    let o = p
        .overhead
        .as_ref()
        .expect("the profiler's cost is recorded");
    assert!(o.profiler_cpu_s > 0.0, "{o:?}");
    assert!(o.per_server_cpu.is_some_and(|r| r > 0.0), "{o:?}");
    assert!(o.machine_share > 0.0 && o.machine_share < 1.0, "{o:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A JRuby server is refused before anything starts, with the reason and
/// the JVM profiler to use instead.
#[test]
fn a_profiled_trial_on_jruby_is_refused_naming_a_jvm_profiler() {
    if !have_rbspy() {
        return;
    }
    let dir = common::work_dir("profile-jruby");
    let err = rackbench::lab::trial::run_trial(profiled_trial("jruby-jetty", &dir)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("JRuby") && msg.contains("async-profiler"),
        "{msg}"
    );
    assert!(!dir.join("profiles").exists(), "nothing was started");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without rbspy, `rackbench trial --profile` refuses before it starts
/// anything: the install command, and never "starting puma ...".
#[test]
fn trial_profile_without_rbspy_refuses_before_starting_the_server() {
    if !installed("puma") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-no-rbspy");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // PATH without rbspy's directories, and a HOME without ~/.cargo/bin.
    let path: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .filter(|d| !d.join("rbspy").exists())
        .collect();
    let out = common::rackbench_cmd()
        .env("PATH", std::env::join_paths(path).unwrap())
        .env("HOME", &home)
        .args(["trial", "--server", "puma", "--app", "hello", "-d", "1s"])
        .arg("--work-dir")
        .arg(dir.join("work"))
        .arg("--profile")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("rbspy is not installed"), "{err}");
    assert!(
        !err.contains("starting"),
        "said starting before refusing: {err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rackbench trial --profile` end to end: the `--json` record carries
/// `profile` with samples, the two methods split in their ratio (the
/// interval above), and its files sit in the work dir's profile/.
#[test]
fn rackbench_trial_profile_records_the_two_methods_in_their_ratio() {
    if !have_rbspy() || !installed("puma") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-cli-trial");
    let app_path = format!("/?a={A}&b={B}");
    let app = app();
    let doc = common::trial_json(
        &dir,
        &[
            "--server",
            "puma",
            "--app",
            app.to_str().unwrap(),
            "--app-path",
            &app_path,
            "--app-expect-body",
            "spent",
            "--workers",
            "2",
            "-c",
            "4",
            "-d",
            "4s",
            "--warmup",
            "2s",
            "--profile",
        ],
        "puma --profile",
    );
    assert_eq!(doc.get("profile_error"), None, "{}", doc["profile_error"]);
    let p: Profile = serde_json::from_value(doc["profile"].clone()).expect("a profile");
    assert!(p.samples > 0);
    assert_eq!(p.rate_hz, profile::DEFAULT_RATE_HZ);
    let (a, b) = (self_samples(&p, "spend_a"), self_samples(&p, "spend_b"));
    let n = a + b;
    let bound = 4.0 * (0.75f64 * 0.25 / n).sqrt();
    assert!(n >= 150.0, "only {n} samples in the two methods");
    assert!(
        (a / n - 0.75).abs() <= bound,
        "spend_a's share {:.3} of {n} is not 0.75 ± {bound:.3}",
        a / n
    );
    assert!(!p.files.is_empty());
    for f in &p.files {
        assert!(f.path.starts_with("profile/"), "{}", f.path);
        assert!(dir.join(&f.path).is_file(), "{}", f.path);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A plan with `profile = true`: each trial's files under
/// profiles/TRIAL-ID/, and report.html draws the group's flame graph;
/// report.md lists its top frames.
#[test]
fn a_plan_with_profile_writes_each_trials_files_and_the_reports_flame_graph() {
    if !have_rbspy() || !installed("puma") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-plan");
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "name = \"profiled\"\nrepeats = 1\nservers = [\"puma\"]\napps = [\"fib\"]\nprofile = true\n\n\
         [load]\nconnections = [2]\nduration = \"2s\"\nwarmup = \"1s\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let ran = common::rackbench(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    common::assert_ran(&ran, "run profile = true");
    let trials: Vec<_> = std::fs::read_dir(out.join("trials"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(trials.len(), 1, "{trials:?}");
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&trials[0]).unwrap()).unwrap();
    let id = stored["id"].as_str().unwrap();
    let p: Profile = serde_json::from_value(stored["trial"]["profile"].clone()).expect("a profile");
    assert!(p.samples > 0);
    for f in &p.files {
        assert!(f.path.starts_with(&format!("profiles/{id}/")), "{}", f.path);
        assert!(out.join(&f.path).is_file(), "{}", f.path);
    }
    assert!(out
        .join("profiles")
        .join(id)
        .join("on-cpu.collapsed")
        .is_file());
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Why: profiles"), "no profiles section");
    assert!(html.contains("class=\"flame\""), "no flame graph");
    assert!(
        !html.contains(": no samples</text>"),
        "an empty flame graph"
    );
    // Both views: where the CPU went and where the time went.
    assert!(html.contains(": on-CPU") && html.contains(": wall clock"));
    assert_eq!(html.matches("class=\"flame\"").count(), 2, "two views");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Why: profiles") && md.contains("| Frame (on-CPU) |"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sweep --profile`: every value's trial is profiled, its files under
/// profiles/TRIAL-ID/, and the report draws each group's flame graphs.
#[test]
fn a_sweep_with_profile_profiles_every_value() {
    if !have_rbspy() || !installed("puma") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-sweep");
    let out = dir.join("out");
    let ran = common::rackbench(&[
        "sweep",
        "--server",
        "puma",
        "--app",
        "fib",
        "--vary",
        "workers=1,2",
        "-c",
        "2",
        "-d",
        "2s",
        "--warmup",
        "1s",
        "--repeats",
        "1",
        "--profile",
        "--out",
        out.to_str().unwrap(),
    ]);
    common::assert_ran(&ran, "sweep --profile");
    let mut workers = Vec::new();
    for entry in std::fs::read_dir(out.join("trials")).unwrap() {
        let stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        let p: Profile =
            serde_json::from_value(stored["trial"]["profile"].clone()).expect("a profile");
        assert!(p.samples > 0 && !p.processes.is_empty(), "{p:?}");
        let id = stored["id"].as_str().unwrap();
        assert!(out
            .join("profiles")
            .join(id)
            .join("on-cpu.collapsed")
            .is_file());
        workers.push(stored["trial"]["server"]["workers"].as_u64());
    }
    workers.sort();
    assert_eq!(workers, [Some(1), Some(2)]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    // Two groups, two views each.
    assert_eq!(html.matches("class=\"flame\"").count(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A profiled plan of two_methods.ru on one unicorn worker, one
/// labelled side per TWO_METHODS_B (spend_a's loop the same on both),
/// two repeats each of 3 s.
fn two_sides_plan(dir: &Path, b_loops: (u64, u64)) -> PathBuf {
    let plan = dir.join("plan.toml");
    let side = |label: &str, b: u64| {
        format!(
            "[[server]]\nname = \"unicorn\"\nlabel = \"{label}\"\nworkers = [1]\n\
             env = {{ TWO_METHODS_A = \"{A}\", TWO_METHODS_B = \"{b}\" }}\n\n"
        )
    };
    std::fs::write(
        &plan,
        format!(
            "name = \"grown\"\nrepeats = 2\napps = [\"{}\"]\nprofile = true\n\n{}{}\
             [load]\nconnections = [2]\nduration = \"3s\"\nwarmup = \"1s\"\n",
            app().display(),
            side("small", b_loops.0),
            side("grown", b_loops.1)
        ),
    )
    .unwrap();
    plan
}

/// `compare` of two profiled sides where B's spend_b loop is three times
/// A's: the difference puts TwoMethods.spend_b at the top (and not
/// spend_a, whose share fell as much but whose milliseconds stayed), grown in
/// share and in milliseconds per request, in the terminal, Markdown and
/// HTML (the differential flame graph). Then one run's profile is taken
/// out of its record, as if it had run without --profile: compare refuses
/// to pool it with the profiled one, naming why.
#[test]
fn compare_puts_the_method_that_grew_at_the_top_of_the_difference() {
    if !have_rbspy() || !installed("unicorn") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-compare");
    let plan = two_sides_plan(&dir, (B, 3 * B));
    let out = dir.join("out");
    let ran = common::rackbench(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    common::assert_ran(&ran, "run two profiled sides");
    let (a, b) = (
        format!("{}:label=small", out.display()),
        format!("{}:label=grown", out.display()),
    );
    let page = dir.join("compare.html");
    let shown = common::rackbench(&["compare", &a, &b, "--html", page.to_str().unwrap()]);
    common::assert_ran(&shown, "compare");
    let text = String::from_utf8_lossy(&shown.stdout);
    let at = text.find("why: where the CPU moved").expect(&text);
    // The line after the table's head: the frame that moved most.
    let first = (text[at..].lines())
        .skip_while(|l| !l.contains("frame (own on-CPU work)"))
        .nth(1)
        .expect(&text);
    // rbspy names a module's method without its module.
    assert!(first.trim_start().starts_with("spend_b - "), "{text}");
    // Its self share and its milliseconds per request grew: "+N.N" twice.
    assert_eq!(first.matches(" +").count(), 2, "{first}");
    let md = common::rackbench(&["compare", &a, &b, "--markdown"]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("## Why: where the CPU moved from A to B"),
        "{md}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("id=\"profile-difference\"") && html.contains("class=\"flame\""));
    let json = common::rackbench(&["compare", &a, &b, "--json"]);
    common::assert_ran(&json, "compare --json");
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let diff = &doc["profile_differences"][0];
    let top = diff["changes"][0]["frame"]
        .as_str()
        .expect("a frame that moved");
    assert!(top.starts_with("spend_b - "), "{diff}");
    assert!(diff["changes"][0]["self_change_points"].as_f64().unwrap() > 0.0);
    assert!(diff["runs_a"].as_u64() >= Some(1), "{diff}");

    let grown = (std::fs::read_dir(out.join("trials")).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| {
            let doc: serde_json::Value =
                serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
            doc["planned"]["variant"] == "grown"
        })
        .unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&grown).unwrap()).unwrap();
    doc["trial"].as_object_mut().unwrap().remove("profile");
    std::fs::write(&grown, serde_json::to_vec(&doc).unwrap()).unwrap();
    let refused = common::rackbench(&["compare", &a, &b]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{err}");
    assert!(
        err.contains("1 profiled and 1 unprofiled runs") && err.contains("not pooled"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `breakpoint --profile`: once the search ends (here one level, 2
/// connections, capped at --max), that level runs again with rbspy on the
/// server; the breakpoint-v1 document carries its `profile`, the two
/// methods among its top frames and its files in the work dir.
#[test]
fn breakpoint_profile_profiles_the_last_clean_level() {
    if !have_rbspy() || !installed("puma") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-breakpoint");
    let app = app();
    let app_path = format!("/?a={A}&b={B}");
    let out = common::rackbench(&[
        "breakpoint",
        "--server",
        "puma",
        "--workers",
        "2",
        "--app",
        app.to_str().unwrap(),
        "--app-path",
        &app_path,
        "--start",
        "2",
        "--max",
        "2",
        "--probe",
        "0",
        "-d",
        "3s",
        "--warmup",
        "1s",
        "--work-dir",
        dir.to_str().unwrap(),
        "--profile",
        "--json",
    ]);
    let doc = common::stdout_json(&out, "breakpoint --profile");
    assert_eq!(doc["connections"], 2.0, "{doc}");
    assert_eq!(doc.get("profile_error"), None, "{}", doc["profile_error"]);
    let p: Profile = serde_json::from_value(doc["profile"].clone()).expect("a profile");
    assert!(p.samples > 0);
    assert!(self_samples(&p, "spend_a") > 0.0 && self_samples(&p, "spend_b") > 0.0);
    for f in &p.files {
        assert!(f.path.starts_with("profile/"), "{}", f.path);
        assert!(dir.join(&f.path).is_file(), "{}", f.path);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rackbench trial --profile` of two_methods.ru on `server` (with
/// `extra` flags): a non-empty profile whose processes are the server's
/// (each a pid of the record's server tree) and whose frames are the
/// app's Ruby methods.
fn profiles_a_server_kind(server: &str, extra: &[&str]) {
    let dir = common::work_dir(&format!("profile-kind-{server}"));
    let app = app();
    let app_path = format!("/?a={A}&b={B}");
    let mut args = vec![
        "--server",
        server,
        "--app",
        app.to_str().unwrap(),
        "--app-path",
        &app_path,
        "--app-expect-body",
        "spent",
        "-c",
        "2",
        "-d",
        "3s",
        "--warmup",
        "1s",
        "--profile",
    ];
    args.extend_from_slice(extra);
    let doc = common::trial_json(&dir, &args, &format!("{server} --profile"));
    assert_eq!(doc.get("profile_error"), None, "{}", doc["profile_error"]);
    let p: Profile = serde_json::from_value(doc["profile"].clone()).expect("a profile");
    assert!(p.samples > 0 && !p.processes.is_empty(), "{p:?}");
    let tree: Vec<u64> = (doc["server_metrics"]["samples"]["per_process"].as_array())
        .expect("the server's processes")
        .iter()
        .filter_map(|w| w["pid"].as_u64())
        .collect();
    for pid in &p.processes {
        assert!(
            tree.contains(&u64::from(*pid)),
            "pid {pid} is not in {server}'s tree {tree:?}"
        );
    }
    assert!(
        self_samples(&p, "spend_a") > 0.0 && self_samples(&p, "spend_b") > 0.0,
        "{server}: the app's methods are not among the frames: {:?}",
        p.top
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn thin_is_profiled() {
    if !have_rbspy() || !installed("thin") {
        return;
    }
    let _serial = one_at_a_time();
    profiles_a_server_kind("thin", &[]);
}

#[test]
fn passenger_is_profiled() {
    if !have_rbspy() || !installed("passenger") {
        return;
    }
    let _serial = one_at_a_time();
    profiles_a_server_kind("passenger", &["--workers", "2"]);
}

#[test]
fn webrick_is_profiled() {
    if !have_rbspy() || !common::have("ruby", "apt-get install ruby-webrick") {
        return;
    }
    let _serial = one_at_a_time();
    profiles_a_server_kind("webrick", &[]);
}

/// uWSGI's Rack plugin: Ruby inside a C process (uwsgi links libruby).
#[test]
fn uwsgi_is_profiled() {
    if !have_rbspy() || !installed("uwsgi") {
        return;
    }
    let _serial = one_at_a_time();
    profiles_a_server_kind("uwsgi", &["--workers", "2"]);
}

/// A Debian 13 root (Ruby 3.3.8): rbspy 0.55 cannot read it (Debian 13's
/// libruby is stripped and, unlike 3.1's, does not export
/// ruby_current_vm_ptr, so rbspy finds no VM address), and the trial says
/// so naming the Ruby's version and rbspy's, with the load's figures
/// kept; never an empty profile.
#[test]
fn a_debian_13_root_is_refused_naming_its_ruby_and_rbspy() {
    if !have_rbspy() || !common::have_debian_runtime("debian-13") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-debian-13");
    let doc = common::trial_json(
        &dir,
        &[
            "--server",
            "puma",
            "--runtime",
            "debian-13",
            "--app",
            "hello",
            "-c",
            "2",
            "-d",
            "2s",
            "--warmup",
            "1s",
            "--profile",
        ],
        "puma on debian-13 --profile",
    );
    assert!(
        doc["load"]["requests"]["ok"].as_u64() > Some(0),
        "the load's figures are kept"
    );
    assert_eq!(doc.get("profile"), None, "{}", doc["profile"]);
    let why = doc["profile_error"].as_str().expect("profile_error");
    let rbspy = format!("rbspy {}", profile::rbspy::VERSION);
    assert!(
        why.contains(&format!("{rbspy} cannot read pid")) && why.contains("(3.3."),
        "{why}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Everything a server can run under at once: a Debian 12 root (rbspy
/// reads the root's libruby through /proc/PID/root), YJIT, jemalloc,
/// behind nginx, in a memory budget's control group. The app's two
/// methods are still found, every pid sampled is one of the server's,
/// and the record says the runtime ran as asked.
#[test]
fn a_debian_12_root_with_yjit_and_jemalloc_behind_nginx_in_a_budget_is_profiled() {
    if !have_rbspy()
        || !installed("puma")
        || !common::have_nginx()
        || !common::have_debian_runtime("debian-12")
    {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-debian-12");
    let app = app();
    let doc = common::trial_json(
        &dir,
        &[
            "--server",
            "puma",
            "--workers",
            "2",
            "--app",
            app.to_str().unwrap(),
            "--runtime",
            "debian-12",
            "--yjit",
            "--allocator",
            "jemalloc",
            "--behind",
            "nginx",
            "--memory",
            "768m",
            "-c",
            "2",
            "-d",
            "3s",
            "--warmup",
            "1s",
            "--profile",
        ],
        "puma on debian-12, yjit, jemalloc, behind nginx, --memory, --profile",
    );
    let runtime = &doc["runtime"];
    assert_eq!(runtime["name"], "debian-12", "{runtime}");
    assert_eq!(runtime["yjit"], true, "{runtime}");
    assert_eq!(runtime["allocator"], "jemalloc", "{runtime}");
    assert!(doc["budget"].is_object(), "no budget in the record");
    assert_eq!(doc["topology"]["kind"], "nginx");
    let p = &doc["profile"];
    assert!(p.is_object(), "{}", doc["profile_error"]);
    let frames: Vec<&str> = (p["top"].as_array().unwrap().iter())
        .filter_map(|t| t["frame"].as_str())
        .collect();
    for method in ["spend_a - ", "spend_b - "] {
        assert!(
            frames.iter().any(|f| f.starts_with(method)),
            "{method} not among {frames:?}"
        );
    }
    let server: Vec<u64> = (doc["server_metrics"]["samples"]["per_process"].as_array())
        .expect("the server's processes")
        .iter()
        .filter_map(|w| w["pid"].as_u64())
        .collect();
    for pid in p["processes"].as_array().unwrap() {
        assert!(
            server.contains(&pid.as_u64().unwrap()),
            "pid {pid} sampled is not the server's: {server:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ab --profile`: its two sides' difference is printed and written
/// beside its report, spend_b (tripled on B) on top.
#[test]
fn ab_profile_writes_the_difference_of_its_sides() {
    if !have_rbspy() || !installed("unicorn") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = common::work_dir("profile-ab");
    let out = dir.join("out");
    let (app, a) = (app(), format!("TWO_METHODS_A={A}"));
    let vary = format!("env.TWO_METHODS_B={B},{}", 3 * B);
    let ran = common::rackbench(&[
        "ab",
        "--server",
        "unicorn",
        "--workers",
        "1",
        "--app",
        app.to_str().unwrap(),
        "--env",
        &a,
        "--vary",
        &vary,
        "-c",
        "2",
        "-d",
        "2s",
        "--warmup",
        "1s",
        "--max-load",
        "8s",
        "--rerun-disturbed",
        "0",
        "--profile",
        "--out",
        out.to_str().unwrap(),
    ]);
    common::assert_ran(&ran, "ab --profile");
    let md = std::fs::read_to_string(out.join("profile-difference.md")).unwrap();
    let first = (md.lines())
        .skip_while(|l| !l.starts_with("|:--"))
        .nth(1)
        .expect(&md);
    assert!(first.starts_with("| spend_b - "), "{md}");
    let html = std::fs::read_to_string(out.join("profile-difference.html")).unwrap();
    assert!(html.contains("class=\"flame\""));
    let _ = std::fs::remove_dir_all(&dir);
}
