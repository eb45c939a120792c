use super::*;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// A `sh -c` child in a process group of its own; dropping it kills the
/// whole group (and reaps the shell) even when an assertion failed.
struct Group(Child);

impl Group {
    fn spawn(script: &str) -> Group {
        Group(
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .process_group(0)
                .spawn()
                .expect("spawn sh"),
        )
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: signals the process group of our own child (its pgid is
        // its pid, from process_group(0)).
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// Polls `cond` every 10 ms for up to `secs`; whether it came true.
fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Everything the kernel has charged to `pid` and the children it reaped.
fn charged_ticks(pid: u32) -> u64 {
    let p = read_process(pid).expect("process is running");
    p.utime_ticks + p.stime_ticks + p.cutime_ticks + p.cstime_ticks
}

fn report_ticks(r: &SamplerReport) -> i64 {
    ((r.cpu_user_s + r.cpu_sys_s) * clock_ticks()).round() as i64
}

/// A shell loop of `n` iterations (dash: about 0.7 µs of CPU each).
fn burn(n: u32) -> String {
    format!("i=0; while [ $i -lt {n} ]; do i=$((i+1)); done")
}

#[test]
fn parses_stat_with_awkward_comm() {
    type Want = Option<(u32, u64, u64, u64, u64, u64)>;
    let tail = "0 -1 4194560 100 0 0 0 250 30 7 9 20 0 1 0 5000 1000 50";
    let full = Some((1, 250, 30, 7, 9, 5000));
    let cases: Vec<(Vec<u8>, Want)> = vec![
        (format!("12 (ruby) S 1 12 12 {tail}").into(), full),
        (format!("13 (a b) c) R 1 13 13 {tail}").into(), full),
        (format!("14 ()) ) (1 2 3) Z 1 14 14 {tail}").into(), full),
        (
            b"15 (\xff\xfe) S 9 15 15 0 -1 0 0 0 0 0 1 2 -1 -3 20 0 1 0 77 1 1".to_vec(),
            Some((9, 1, 2, 0, 0, 77)),
        ),
        (b"16 (cut) S 1 16 16 0 -1 0 0 0 0 0 5 6".to_vec(), None),
        (format!("17 (bad) SS 1 17 17 {tail}").into(), None),
        (format!("18 (bad) S x 18 18 {tail}").into(), None),
        (b"garbage".to_vec(), None),
        (Vec::new(), None),
    ];
    for (text, want) in cases {
        let got =
            parse_stat(&text).map(|s| (s.ppid, s.utime, s.stime, s.cutime, s.cstime, s.starttime));
        assert_eq!(got, want, "{}", String::from_utf8_lossy(&text));
    }
    let zombie = format!("19 (x) Z 1 19 19 {tail}");
    assert_eq!(parse_stat(zombie).map(|s| s.state), Some('Z'));
}

#[test]
fn comm_is_what_lies_between_the_first_open_and_the_last_close_parenthesis() {
    let cases: &[(&[u8], Option<&str>)] = &[
        (b"12 (ruby) S 1 12", Some("ruby")),
        (b"13 (a b) c) R 1 13", Some("a b) c")),
        (b"14 (puma 6.4 (app)) S 1", Some("puma 6.4 (app)")),
        (b"15 (\xff) S 9", Some("\u{fffd}")),
        (b"garbage", None),
        (b"16 )x( S", None),
    ];
    for (raw, want) in cases {
        assert_eq!(
            parse_comm(raw).as_deref(),
            *want,
            "{}",
            String::from_utf8_lossy(raw)
        );
    }
}

#[test]
fn parses_smaps_rollup() {
    let text = "00400000-7ffd ---p 00000000 00:00 0 [rollup]\nRss: 100 kB\nPss: 60 kB\n\
                Pss_Dirty: 50 kB\nPrivate_Clean: 10 kB\nPrivate_Dirty: 20 kB\n";
    assert_eq!(parse_smaps_rollup(text), Some((60 * 1024, 30 * 1024)));
    assert_eq!(parse_smaps_rollup("Rss: 1 kB\n"), None);
}

#[test]
fn reads_this_process() {
    let me = read_process(std::process::id()).expect("self");
    assert!(me.rss_bytes > 0);
    let (pss, uss) = (
        me.pss_bytes.expect("own smaps_rollup"),
        me.uss_bytes.unwrap(),
    );
    assert!(uss <= pss && pss <= me.rss_bytes, "{me:?}");
    assert!(read_process(u32::MAX - 1).is_none());
}

#[test]
fn finds_the_whole_tree_and_its_memory() {
    let g = Group::spawn("sleep 5 & sleep 5 & wait");
    let root = g.pid();
    assert!(
        wait_for(5, || tree_pids(root).len() == 3),
        "sh and its two sleeps: {:?}",
        tree_pids(root)
    );
    assert_eq!(tree_pids(root)[0], root, "root first");
    let s = Sampler::start(root, DEFAULT_INTERVAL);
    s.mark();
    std::thread::sleep(Duration::from_millis(450));
    let r = s.stop();
    assert!(r.samples >= 3, "{r:?}");
    assert_eq!((r.processes_peak, r.processes_mean), (3, 3.0));
    assert!(r.rss_peak_bytes > 0 && r.rss_mean_bytes > 0);
    let pss = r.pss_peak_bytes.expect("our own children's smaps_rollup");
    let uss = r.uss_peak_bytes.unwrap();
    assert!(
        0 < uss && uss <= pss && pss <= r.rss_peak_bytes,
        "USS {uss} <= PSS {pss} <= RSS {}",
        r.rss_peak_bytes
    );
    assert!(r.pss_mean_bytes.unwrap() <= r.rss_mean_bytes);
    assert_eq!(r.interval_ms, 200);
    assert!(!r.timeline.is_empty() && r.timeline.len() <= 2, "{r:?}");
    let back: SamplerReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back.timeline, r.timeline);
}

#[test]
fn a_zombie_counts_as_a_process_without_memory() {
    // The background sleep exits at once, but its parent has exec'd a
    // sleep that never waits for it: it stays a zombie.
    let g = Group::spawn("sleep 0.05 & exec sleep 5");
    let root = g.pid();
    let zombie = || {
        tree_pids(root)
            .iter()
            .any(|&p| read_process(p).is_some_and(|p| p.state == 'Z'))
    };
    assert!(wait_for(5, zombie), "no zombie in {:?}", tree_pids(root));
    let s = Sampler::start(root, MIN_INTERVAL);
    s.mark();
    let r = s.stop();
    assert_eq!(r.processes_peak, 2);
    assert!(r.pss_peak_bytes.is_some(), "a zombie hid PSS: {r:?}");
}

#[test]
fn counts_cpu_of_a_busy_child() {
    let g = Group::spawn("yes > /dev/null");
    let root = g.pid();
    let s = Sampler::start(root, DEFAULT_INTERVAL);
    s.mark();
    // One second of CPU burnt, however long a loaded machine takes.
    let burnt = || {
        tree_pids(root)
            .into_iter()
            .filter_map(read_process)
            .map(|p| p.cpu_s())
            .sum::<f64>()
    };
    assert!(wait_for(20, || burnt() >= 1.0), "burnt only {}", burnt());
    let r = s.stop();
    let cpu = r.cpu_user_s + r.cpu_sys_s;
    assert!(cpu > 0.5, "{cpu} s for 1 s of burn");
    assert!(cpu < burnt() + 0.05, "{cpu} s counted, {} s burnt", burnt());
    assert!(r.cpu_ms_per_request(100).unwrap() > 5.0);
    assert_eq!(r.cpu_ms_per_request(0), None);
}

/// Runs `work` in a tree that then idles, samples it, and compares the
/// sampler's CPU with what the kernel charged the root for itself and its
/// reaped children: every worker is gone by then, so that is all of it.
fn compare_with_kernel(work: &str) -> (i64, i64) {
    // The root waits before working, so the mark lands before any CPU.
    let g = Group::spawn(&format!("sleep 0.3; {work}; exec sleep 10"));
    let root = g.pid();
    let before = charged_ticks(root);
    let s = Sampler::start(root, MIN_INTERVAL);
    s.mark();
    assert!(
        wait_for(60, || comm(root) == "sleep"),
        "the work did not finish"
    );
    std::thread::sleep(Duration::from_millis(150));
    let r = s.stop();
    let kernel = (charged_ticks(root) - before) as i64;
    (report_ticks(&r), kernel)
}

#[test]
fn a_worker_that_exits_counts_once() {
    // A worker burns long enough to be sampled a few times, then exits and
    // is reaped by the root: its CPU must count, and only once.
    let (sampled, kernel) = compare_with_kernel(&format!("({}) ", burn(800_000)));
    assert!(kernel > 10, "the worker burnt only {kernel} ticks");
    assert!(
        (sampled - kernel).abs() <= 2 + kernel / 50,
        "sampler {sampled} ticks, kernel {kernel}"
    );
}

#[test]
fn workers_too_short_to_be_seen_still_count() {
    // Forty workers of a few ms each: most live and die between samples.
    let work = format!(
        "n=0; while [ $n -lt 40 ]; do ({}); n=$((n+1)); done",
        burn(8_000)
    );
    let (sampled, kernel) = compare_with_kernel(&work);
    assert!(kernel > 5, "the workers burnt only {kernel} ticks");
    assert!(
        (sampled - kernel).abs() <= 2 + kernel / 50,
        "sampler {sampled} ticks, kernel {kernel}"
    );
}

#[test]
fn cpu_before_the_mark_is_left_out() {
    let g = Group::spawn(&format!("{}; exec sleep 10", burn(150_000)));
    let root = g.pid();
    let s = Sampler::start(root, MIN_INTERVAL);
    assert!(wait_for(60, || comm(root) == "sleep"), "still burning");
    std::thread::sleep(Duration::from_millis(250));
    let before_mark = lock(&s.state).all.memory.samples;
    s.mark();
    std::thread::sleep(Duration::from_millis(250));
    let r = s.stop();
    assert!(r.cpu_user_s + r.cpu_sys_s < 0.03, "{r:?}");
    let warm = r.timeline.last().unwrap().cpu_s;
    assert!(warm > 0.02, "the warm-up CPU is in the timeline: {warm}");
    assert!(before_mark >= 2 && (2..=5).contains(&r.samples), "{r:?}");
}

#[test]
fn a_vanished_root_is_no_error() {
    assert!(tree_pids(u32::MAX - 1).is_empty());
    let s = Sampler::start(u32::MAX - 1, MIN_INTERVAL);
    std::thread::sleep(Duration::from_millis(150));
    s.mark();
    let r = s.stop();
    assert_eq!((r.samples, r.cpu_user_s, r.rss_peak_bytes), (0, 0.0, 0));
    assert_eq!(r.pss_peak_bytes, None);
    assert!(r.timeline.is_empty());
}

#[test]
fn a_dropped_sampler_stops_its_thread() {
    let s = Sampler::start(std::process::id(), Duration::from_secs(3600));
    let t = Instant::now();
    drop(s);
    assert!(t.elapsed() < Duration::from_secs(2));
}

fn have_ruby() -> bool {
    Command::new("ruby")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A tree like a preforking server's: a shell master and two Ruby
/// workers, the first holding 24 MiB of private memory more than the
/// other (a string of that size, written, so every page is its own).
#[test]
fn per_process_memory_tells_the_master_from_its_workers_and_shows_their_private_memory() {
    if !crate::require::require("ruby", have_ruby(), "apt-get install ruby") {
        return;
    }
    const EXTRA_MIB: u64 = 24;
    let g = Group::spawn(&format!(
        "ruby -e 's = \"x\" * ({EXTRA_MIB} << 20); STDOUT.flush; sleep 30' & \
         ruby -e 'sleep 30' & wait"
    ));
    let root = g.pid();
    // Both workers are up once each has paged its interpreter in.
    let up = || {
        let pids = tree_pids(root);
        pids.len() == 3 && pids[1..].iter().all(|&p| comm(p) == "ruby")
    };
    assert!(wait_for(10, up), "{:?}", tree_pids(root));
    std::thread::sleep(Duration::from_millis(700));
    let s = Sampler::start(root, MIN_INTERVAL);
    s.mark();
    std::thread::sleep(Duration::from_millis(450));
    let r = s.stop();
    let roles: Vec<(u32, Role)> = r.per_process.iter().map(|p| (p.pid, p.role)).collect();
    assert_eq!(roles[0], (root, Role::Master), "{roles:?}");
    assert_eq!(roles.len(), 3, "{roles:?}");
    assert!(roles[1..].iter().all(|r| r.1 == Role::Worker), "{roles:?}");
    assert_eq!(r.per_process_dropped, 0);
    let uss = |i: usize| {
        r.per_process[i]
            .uss_mean_bytes
            .expect("our own children's USS")
    };
    let (big, small) = (uss(1).max(uss(2)), uss(1).min(uss(2)));
    let extra = (big - small) as f64 / (1 << 20) as f64;
    assert!(
        (extra - EXTRA_MIB as f64).abs() < 4.0,
        "the worker with {EXTRA_MIB} MiB more holds {extra:.1} MiB more USS"
    );
    let w = r.per_worker.expect("a per-worker figure");
    assert_eq!((w.workers, w.role), (2, Role::Worker));
    assert_eq!(
        w.memory.uss_max_bytes,
        Some(
            r.per_process
                .iter()
                .skip(1)
                .map(|p| p.uss_peak_bytes.unwrap())
                .max()
                .unwrap()
        )
    );
    assert_eq!(w.memory.uss_mean_bytes, Some((uss(1) + uss(2)) / 2));
    assert!(w.memory.pss_mean_bytes.unwrap() <= w.memory.rss_mean_bytes);
    assert_eq!(w.master.map(|m| m.masters), Some(1));
    assert!(r
        .per_process
        .iter()
        .all(|p| p.samples >= 3 && !p.comm.is_empty()));
    assert!(r.per_process[1..]
        .iter()
        .all(|p| p.cmdline.starts_with("ruby -e")));
    // The tree's totals are the sum of its processes.
    let sum: u64 = r
        .per_process
        .iter()
        .map(|p| p.uss_peak_bytes.unwrap())
        .sum();
    assert!(r.uss_peak_bytes.unwrap() <= sum, "tree peak > sum of peaks");
}

#[test]
fn a_lone_process_is_its_own_worker() {
    let g = Group::spawn("exec sleep 5");
    let root = g.pid();
    assert!(wait_for(5, || comm(root) == "sleep"));
    let s = Sampler::start(root, MIN_INTERVAL);
    s.mark();
    let r = s.stop();
    assert_eq!(r.per_process.len(), 1, "{r:?}");
    assert_eq!(r.per_process[0].role, Role::Single);
    let w = r
        .per_worker
        .expect("a lone process has a per-worker figure");
    assert_eq!((w.workers, w.role), (1, Role::Single));
    assert!(w.master.is_none());
    assert_eq!(w.memory.rss_mean_bytes, r.per_process[0].rss_mean_bytes);
}

#[test]
fn processes_gone_before_the_mark_are_not_in_the_window() {
    // A child that lives only during the warm-up.
    let g = Group::spawn("sleep 0.3; exec sleep 10");
    let root = g.pid();
    let s = Sampler::start(root, MIN_INTERVAL);
    assert!(wait_for(5, || tree_pids(root).len() == 2));
    assert!(wait_for(5, || comm(root) == "sleep" && tree_pids(root).len() == 1));
    s.mark();
    let r = s.stop();
    assert_eq!(r.per_process.len(), 1, "{:?}", r.per_process);
    assert_eq!(r.per_process[0].role, Role::Single);
}

/// A day of samples every 200 ms: the timeline stays within its cap, its
/// rows cover longer and longer, and the last row is the last sample's.
#[test]
fn the_timeline_of_a_day_long_soak_stays_within_its_cap() {
    let mut st = State::new(Scope::tree(std::process::id()), Some(1000));
    let tree = TreeSample {
        rss: 1,
        pss: Some(1),
        uss: Some(1),
        processes: 1,
    };
    let day_ms = 24 * 3_600_000u64;
    let mut t = 0;
    while t < day_ms {
        st.push_row(t, &tree, t as f64 / 1000.0);
        t += 200;
    }
    assert!(st.timeline.len() <= TIMELINE_CAP, "{}", st.timeline.len());
    assert!(
        st.timeline.len() >= TIMELINE_CAP / 2,
        "{}",
        st.timeline.len()
    );
    assert!(st.row_ms >= 16_000, "{}", st.row_ms);
    assert_eq!(st.timeline.last().unwrap().t_ms, day_ms - 200);
    assert!(st.timeline.windows(2).all(|w| w[0].t_ms < w[1].t_ms));
}

/// Issue 36: a worker counts as replaced only when a newcomer took its
/// place under the same parent, after it was last seen; each newcomer
/// replaces one; a worker of a server that stopped, or one that left
/// before the window, is not.
#[test]
fn a_worker_is_replaced_by_a_later_newcomer_under_its_parent() {
    let gone = |pid, last, top| Departure {
        pid,
        ppid: 10,
        top,
        was_top: false,
        cmdline: String::new(),
        last_seen_ms: last,
        missed_ms: last + 200,
        first_seen_ms: 0,
    };
    let came = |pid, ppid, at| Arrival {
        pid,
        ppid,
        cmdline: String::new(),
        first_seen_ms: at,
    };
    let seen = Lifecycle {
        departures: vec![
            gone(11, 2000, 10),
            gone(12, 2000, 10),
            gone(13, 400, 10),
            gone(14, 3000, 99),
        ],
        arrivals: vec![came(20, 99, 2400), came(21, 10, 1000), came(22, 10, 2400)],
        tops_alive: vec![10],
        ..Lifecycle::default()
    };
    assert_eq!(replaced_workers(&seen, 1000), vec![11]);
    assert_eq!(replaced_workers(&seen, 0), vec![11, 13]);
}

/// Issue 36, against real processes: a child stopped with SIGSTOP is seen
/// stopped until it is continued; one killed is a departure while its
/// parent lives on, with its command line; neither was an arrival.
#[test]
fn a_stopped_then_killed_child_is_a_stop_and_a_departure() {
    let g = Group::spawn("sleep 30 & sleep 31 & wait");
    let root = g.pid();
    assert!(
        wait_for(5, || tree_pids(root).len() == 3),
        "sh and two sleeps"
    );
    let kids = direct_children(root);
    let (stopped, killed) = (kids[0], kids[1]);
    let s = Sampler::start(root, MIN_INTERVAL);
    s.mark();
    std::thread::sleep(Duration::from_millis(250));
    let signal = |pid: u32, sig| {
        // SAFETY: a signal to a child of our own test group.
        unsafe { libc::kill(pid as i32, sig) };
    };
    signal(stopped, libc::SIGSTOP);
    // Eight sample intervals: a busy machine may delay one or two.
    std::thread::sleep(Duration::from_millis(800));
    signal(stopped, libc::SIGCONT);
    signal(killed, libc::SIGKILL);
    std::thread::sleep(Duration::from_millis(450));
    let seen = s.stop().lifecycle;
    let stops: Vec<(u32, bool)> = seen
        .stops
        .iter()
        .map(|s| (s.pid, s.until_ms.is_some()))
        .collect();
    assert_eq!(stops, vec![(stopped, true)], "{seen:?}");
    let gone: Vec<(u32, u32, bool)> = seen
        .departures
        .iter()
        .map(|d| (d.pid, d.ppid, d.was_top))
        .collect();
    assert_eq!(gone, vec![(killed, root, false)], "{seen:?}");
    assert!(
        seen.departures[0].cmdline.starts_with("sleep 3"),
        "{seen:?}"
    );
    assert!(seen.arrivals.is_empty(), "{seen:?}");
    assert_eq!(seen.tops_alive, vec![root]);
}
