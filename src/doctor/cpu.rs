//! The CPUs: what they are, how loaded, whether their frequency moves
//! (governor, boost), and who else uses them while the doctor watches
//! (steal, busy processes).

use super::Finding;
use crate::lab::environment::Environment;
use crate::sampler::{clock_ticks, parse_comm, parse_stat, CpuTimes, MachineCpu};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A process that used more than this share of one CPU over the window is
/// named: enough to move a server's figures, more than a quiet daemon.
const BUSY_SHARE: f64 = 0.05;

/// Steal above this share of the CPU time is a problem: the hypervisor ran
/// other guests on these CPUs, and figures vary with the neighbours.
const STEAL_SHARE: f64 = 0.05;

/// Less memory available than this is a note: several servers with a few
/// workers each hold hundreds of MiB.
const LOW_MEMORY_BYTES: u64 = 1 << 30;

/// The flags that keep a study off CPUs others use.
const PIN_FIX: &str = "stop them, or pin the study away from them: `rackbench trial \
     --server-cpus LIST --load-cpus LIST` (also on `breakpoint`); `rackbench run` and \
     `sweep` pin the server to all but the last CPU and the generator to the last";

/// The machine line, the load average and the memory available.
pub(super) fn machine_findings(env: &Environment) -> Vec<Finding> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    vec![
        machine(env),
        load_average(&read("/proc/loadavg"), env.cores),
        memory(&read("/proc/meminfo")),
    ]
}

fn machine(env: &Environment) -> Finding {
    Finding::ok(
        "machine",
        format!(
            "{}, {} CPU{} this process may use, Linux {}",
            env.cpu_model,
            env.cores,
            if env.cores == 1 { "" } else { "s" },
            env.kernel
        ),
    )
}

/// `/proc/loadavg` against the number of CPUs: a 1-minute load of half the
/// CPUs or more means something ran lately.
pub(super) fn load_average(text: &str, cores: usize) -> Finding {
    let loads: Vec<f64> = text
        .split_ascii_whitespace()
        .take(3)
        .filter_map(|f| f.parse().ok())
        .collect();
    let [one, five, fifteen] = loads[..] else {
        return Finding::ok("load-average", "not readable (/proc/loadavg)");
    };
    let found = format!("{one:.2} {five:.2} {fifteen:.2} (1, 5, 15 minutes) on {cores} CPUs");
    if one >= 0.5 * cores.max(1) as f64 {
        Finding::note(
            "load-average",
            found,
            "something ran on this machine in the last minute: see busy-processes, \
             and start the study when the machine is quiet",
        )
    } else {
        Finding::ok("load-average", found)
    }
}

/// `MemAvailable` from `/proc/meminfo`.
pub(super) fn memory(text: &str) -> Finding {
    let kib = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_ascii_whitespace().next()?.parse::<u64>().ok())
            .map(|k| k * 1024)
    };
    let (Some(avail), Some(total)) = (kib("MemAvailable:"), kib("MemTotal:")) else {
        return Finding::ok("memory", "not readable (/proc/meminfo)");
    };
    let found = format!(
        "{} available of {}",
        crate::units::fmt_bytes(avail),
        crate::units::fmt_bytes(total)
    );
    if avail < LOW_MEMORY_BYTES {
        Finding::note(
            "memory",
            found,
            "under 1 GiB available: stop what holds memory, or use fewer workers; a server \
             that swaps or is killed for memory measures nothing",
        )
    } else {
        Finding::ok("memory", found)
    }
}

/// Governor and boost, from sysfs.
pub(super) fn frequency_findings() -> Vec<Finding> {
    let mut governors = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(Ok(n)) = name.strip_prefix("cpu").map(str::parse::<usize>) else {
                continue;
            };
            if let Ok(g) = std::fs::read_to_string(e.path().join("cpufreq/scaling_governor")) {
                governors.push((n, g.trim().to_string()));
            }
        }
    }
    governors.sort();
    let read = |p: &str| std::fs::read_to_string(p).ok();
    vec![
        governor(&governors),
        boost(
            read("/sys/devices/system/cpu/intel_pstate/no_turbo").as_deref(),
            read("/sys/devices/system/cpu/cpufreq/boost").as_deref(),
        ),
    ]
}

/// The scaling governor of each CPU (CPU number, governor).
pub(super) fn governor(governors: &[(usize, String)]) -> Finding {
    if governors.is_empty() {
        return Finding::ok("cpu-governor", "not visible (virtual machine?)");
    }
    let mut by: Vec<(&str, Vec<usize>)> = Vec::new();
    for (cpu, g) in governors {
        match by.iter_mut().find(|(name, _)| name == g) {
            Some((_, cpus)) => cpus.push(*cpu),
            None => by.push((g, vec![*cpu])),
        }
    }
    let found = by
        .iter()
        .map(|(g, cpus)| format!("{g} on {}", cpu_list(cpus)))
        .collect::<Vec<_>>()
        .join(", ");
    if by.iter().all(|(g, _)| *g == "performance") {
        return Finding::ok("cpu-governor", found);
    }
    Finding::note(
        "cpu-governor",
        found,
        "the clock follows the load, so a short trial runs at another speed than a long \
         one: `cpupower frequency-set -g performance` (or write performance to \
         /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
    )
}

/// Turbo/boost: intel_pstate's `no_turbo`, or cpufreq's `boost`.
pub(super) fn boost(no_turbo: Option<&str>, boost: Option<&str>) -> Finding {
    let boosting = "the clock rises above its base while few cores are busy and it is cool, \
                    so figures depend on what else runs and on the room";
    match (no_turbo.map(str::trim), boost.map(str::trim)) {
        (Some("0"), _) => Finding::note(
            "cpu-boost",
            format!("turbo on (intel_pstate/no_turbo = 0): {boosting}"),
            "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (as root), for the study",
        ),
        (Some("1"), _) => Finding::ok("cpu-boost", "turbo off (intel_pstate/no_turbo = 1)"),
        (_, Some("1")) => Finding::note(
            "cpu-boost",
            format!("boost on (cpufreq/boost = 1): {boosting}"),
            "echo 0 > /sys/devices/system/cpu/cpufreq/boost (as root), for the study",
        ),
        (_, Some("0")) => Finding::ok("cpu-boost", "boost off (cpufreq/boost = 0)"),
        _ => Finding::ok("cpu-boost", "not visible (virtual machine?)"),
    }
}

/// "0-3,6" for [0, 1, 2, 3, 6].
fn cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            format!("CPU {}", cpus[i])
        } else {
            format!("CPUs {}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// One process in a [`ProcSnapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcEntry {
    pub name: String,
    /// Start time since boot, in clock ticks: with the pid, identifies the
    /// process across a pid being reused.
    pub start_ticks: u64,
    /// User + system time of all its threads, in clock ticks.
    pub cpu_ticks: u64,
}

/// Every process's CPU time at one moment, by pid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcSnapshot {
    pub procs: HashMap<u32, ProcEntry>,
}

impl ProcSnapshot {
    /// One pass over /proc/*/stat; processes that vanish meanwhile are
    /// left out.
    pub fn scan() -> ProcSnapshot {
        let mut procs = HashMap::new();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return ProcSnapshot::default();
        };
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(raw) = std::fs::read(e.path().join("stat")) else {
                continue;
            };
            if let (Some(st), Some(name)) = (parse_stat(&raw), parse_comm(&raw)) {
                let entry = ProcEntry {
                    name,
                    start_ticks: st.starttime,
                    cpu_ticks: st.utime + st.stime,
                };
                procs.insert(pid, entry);
            }
        }
        ProcSnapshot { procs }
    }
}

/// A process that used a CPU while the doctor watched.
#[derive(Debug, Clone, PartialEq)]
pub struct BusyProcess {
    pub pid: u32,
    pub name: String,
    /// Its CPU time over the window's length: 1.0 is one whole CPU.
    pub cpu_share: f64,
}

/// The processes of `after` that used more than `min_share` of one CPU
/// since `before`, over `window_ticks` clock ticks, busiest first; `exclude`
/// (the doctor itself) is left out. A process that started in between (a
/// new pid, or a reused one with another start time) counts all its time.
pub fn busy_processes(
    before: &ProcSnapshot,
    after: &ProcSnapshot,
    window_ticks: f64,
    min_share: f64,
    exclude: &[u32],
) -> Vec<BusyProcess> {
    if window_ticks <= 0.0 {
        return Vec::new();
    }
    let mut busy: Vec<BusyProcess> = after
        .procs
        .iter()
        .filter(|(pid, _)| !exclude.contains(pid))
        .filter_map(|(&pid, now)| {
            let base = before
                .procs
                .get(&pid)
                .filter(|b| b.start_ticks == now.start_ticks)
                .map_or(0, |b| b.cpu_ticks);
            let share = now.cpu_ticks.saturating_sub(base) as f64 / window_ticks;
            (share > min_share).then(|| BusyProcess {
                pid,
                name: now.name.clone(),
                cpu_share: share,
            })
        })
        .collect();
    busy.sort_by(|a, b| b.cpu_share.total_cmp(&a.cpu_share).then(a.pid.cmp(&b.pid)));
    busy
}

/// Watches the machine for `window`: steal and the busy processes.
pub(super) fn watch(window: Duration) -> Vec<Finding> {
    let (cpu0, procs0, t0) = (MachineCpu::read(), ProcSnapshot::scan(), Instant::now());
    std::thread::sleep(window);
    let (cpu1, procs1) = (MachineCpu::read(), ProcSnapshot::scan());
    let elapsed = t0.elapsed();
    let delta = match (cpu1, cpu0) {
        (Some(after), Some(before)) => Some(after.since(&before)),
        _ => None,
    };
    let cpus = delta.as_ref().map_or(0, |d| d.cpus.len());
    let busy = busy_processes(
        &procs0,
        &procs1,
        elapsed.as_secs_f64() * clock_ticks(),
        BUSY_SHARE,
        &[std::process::id()],
    );
    vec![
        steal(delta.map(|d| d.sum(&[])), cpus, elapsed),
        busy_finding(&busy, elapsed),
    ]
}

/// Steal and busy share of the machine's CPU time over the window.
pub(super) fn steal(delta: Option<CpuTimes>, cpus: usize, window: Duration) -> Finding {
    let Some(d) = delta.filter(|d| d.total() > 0) else {
        return Finding::ok("steal", "not readable (/proc/stat)");
    };
    let total = d.total() as f64;
    let (steal, busy) = (d.steal as f64 / total, d.task() as f64 / total);
    let found = format!(
        "steal {:.1}% of the CPU time over {:.1} s; the {cpus} CPUs were {:.0}% busy",
        steal * 100.0,
        window.as_secs_f64(),
        busy * 100.0
    );
    if steal > STEAL_SHARE {
        Finding::problem(
            "steal",
            found,
            "the hypervisor gives these CPUs to other guests: run the study on dedicated \
             CPUs (a bare-metal or dedicated-core instance), or measure the noise with \
             `rackbench run PLAN --aa` and repeat more",
        )
    } else {
        Finding::ok("steal", found)
    }
}

fn busy_finding(busy: &[BusyProcess], window: Duration) -> Finding {
    let secs = window.as_secs_f64();
    if busy.is_empty() {
        return Finding::ok(
            "busy-processes",
            format!(
                "no other process used more than {:.0}% of a CPU over {secs:.1} s",
                BUSY_SHARE * 100.0
            ),
        );
    }
    let named: Vec<String> = busy
        .iter()
        .map(|b| format!("{} (pid {}) {:.0}%", b.name, b.pid, b.cpu_share * 100.0))
        .collect();
    Finding::problem(
        "busy-processes",
        format!(
            "{} of a CPU over {secs:.1} s: {}",
            if busy.len() == 1 {
                "1 process used more than 5%".to_string()
            } else {
                format!("{} processes used more than 5%", busy.len())
            },
            named.join(", ")
        ),
        PIN_FIX,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    fn snapshot(rows: &[(u32, &str, u64, u64)]) -> ProcSnapshot {
        ProcSnapshot {
            procs: rows
                .iter()
                .map(|&(pid, name, start, cpu)| {
                    (
                        pid,
                        ProcEntry {
                            name: name.into(),
                            start_ticks: start,
                            cpu_ticks: cpu,
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn busy_processes_are_those_over_the_share_busiest_first_without_the_doctor() {
        let before = snapshot(&[
            (10, "cargo", 5, 1000),
            (11, "sshd", 5, 50),
            (12, "rackbench", 5, 0),
            (13, "old", 5, 900),
        ]);
        let after = snapshot(&[
            (10, "cargo", 5, 1150), // 150 of 200 ticks: 75%
            (11, "sshd", 5, 55),    // 2.5%: quiet
            (12, "rackbench", 5, 200),
            (13, "new", 99, 30),    // pid reused: all 30 ticks are new, 15%
            (14, "ruby", 150, 190), // started during the window: 95%
        ]);
        let busy = busy_processes(&before, &after, 200.0, 0.05, &[12]);
        let got: Vec<(u32, &str, u32)> = busy
            .iter()
            .map(|b| (b.pid, b.name.as_str(), (b.cpu_share * 100.0).round() as u32))
            .collect();
        assert_eq!(
            got,
            vec![(14, "ruby", 95), (10, "cargo", 75), (13, "new", 15)]
        );
        assert!(busy_processes(&before, &after, 0.0, 0.05, &[]).is_empty());
    }

    #[test]
    fn busy_processes_are_a_problem_named_with_their_pids() {
        let none = busy_finding(&[], Duration::from_secs(2));
        assert_eq!(none.status, Status::Ok);
        let one = busy_finding(
            &[BusyProcess {
                pid: 42,
                name: "sh".into(),
                cpu_share: 0.9,
            }],
            Duration::from_secs(2),
        );
        assert_eq!(one.status, Status::Problem);
        assert!(one.found.contains("sh (pid 42) 90%"), "{}", one.found);
        assert!(one.fix.unwrap().contains("--server-cpus"));
    }

    #[test]
    fn governors_other_than_performance_are_a_note_and_none_is_a_vm() {
        let g = |rows: &[(usize, &str)]| {
            governor(
                &rows
                    .iter()
                    .map(|(c, s)| (*c, s.to_string()))
                    .collect::<Vec<_>>(),
            )
        };
        let cases: Vec<(Finding, Status, &str)> = vec![
            (g(&[]), Status::Ok, "not visible (virtual machine?)"),
            (
                g(&[(0, "performance"), (1, "performance")]),
                Status::Ok,
                "performance on CPUs 0-1",
            ),
            (
                g(&[
                    (0, "powersave"),
                    (1, "powersave"),
                    (2, "powersave"),
                    (5, "powersave"),
                ]),
                Status::Note,
                "powersave on CPUs 0-2, CPU 5",
            ),
            (
                g(&[(0, "performance"), (1, "schedutil")]),
                Status::Note,
                "performance on CPU 0, schedutil on CPU 1",
            ),
        ];
        for (f, status, found) in cases {
            assert_eq!((f.status, f.found.as_str()), (status, found));
        }
    }

    #[test]
    fn boost_on_is_a_note_off_is_ok_and_absent_is_a_vm() {
        let cases = [
            (Some("0\n"), None, Status::Note, "no_turbo"),
            (Some("1\n"), None, Status::Ok, "turbo off"),
            (None, Some("1\n"), Status::Note, "boost on"),
            (None, Some("0"), Status::Ok, "boost off"),
            (None, None, Status::Ok, "not visible (virtual machine?)"),
        ];
        for (no_turbo, b, status, says) in cases {
            let f = boost(no_turbo, b);
            assert_eq!(f.status, status, "{f:?}");
            assert!(f.found.contains(says), "{f:?}");
        }
    }

    #[test]
    fn steal_over_five_percent_is_a_problem() {
        let t = |steal, user| CpuTimes {
            user,
            idle: 1000 - steal - user,
            steal,
            ..Default::default()
        };
        let w = Duration::from_secs(2);
        let quiet = steal(Some(t(10, 300)), 2, w);
        assert_eq!(quiet.status, Status::Ok);
        assert!(quiet.found.contains("steal 1.0%"), "{}", quiet.found);
        assert!(quiet.found.contains("30% busy"), "{}", quiet.found);
        assert_eq!(steal(Some(t(80, 300)), 2, w).status, Status::Problem);
        assert_eq!(steal(None, 0, w).status, Status::Ok);
    }

    #[test]
    fn load_average_over_half_the_cpus_is_a_note() {
        let cases = [
            ("0.10 0.20 0.30 1/200 999\n", 2, Status::Ok),
            ("1.00 0.20 0.30 1/200 999\n", 2, Status::Note),
            ("1.00 0.20 0.30 1/200 999\n", 8, Status::Ok),
            ("", 2, Status::Ok),
        ];
        for (text, cores, status) in cases {
            assert_eq!(load_average(text, cores).status, status, "{text:?}");
        }
    }

    #[test]
    fn under_a_gib_available_is_a_note() {
        let m = |avail_kib: u64| {
            memory(&format!(
                "MemTotal:  8000000 kB\nMemFree: 1 kB\nMemAvailable: {avail_kib} kB\n"
            ))
        };
        assert_eq!(m(4_000_000).status, Status::Ok);
        assert_eq!(m(500_000).status, Status::Note);
        assert_eq!(memory("").status, Status::Ok);
    }

    #[test]
    fn this_machine_can_be_scanned_and_holds_this_process() {
        let s = ProcSnapshot::scan();
        assert!(s.procs.contains_key(&std::process::id()));
    }
}
