//! Kernel settings a study meets: transparent huge pages, listen backlogs,
//! the open-files limit, io_uring and perf counters.

use super::Finding;
use crate::load::{io_uring_available, open_files_for, open_files_limit, CONNECTS_AT_ONCE};

/// A listen backlog something rackbench runs asks for. The kernel caps
/// every backlog at `net.core.somaxconn`, silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BacklogNeed {
    pub backlog: u32,
    /// Who asks, in words.
    pub who: &'static str,
}

/// The backlogs that matter, smallest first. A test keeps the plans'
/// `backlog` settings on this list.
pub(super) const BACKLOG_NEEDS: &[BacklogNeed] = &[
    BacklogNeed {
        backlog: CONNECTS_AT_ONCE as u32,
        who: "the load engine, which opens up to 256 connections at once",
    },
    BacklogNeed {
        backlog: 511,
        who: "nginx in front (`behind = [\"nginx\"]`, `--behind nginx`), which listens with 511",
    },
    BacklogNeed {
        backlog: 512,
        who: "plans/laas-2010.toml's unicorn (backlog 512)",
    },
];

/// Connections the doctor holds a machine to: the load engine's ten
/// thousand (bench/ runs them beside wrk).
const CONNECTIONS: usize = 10_000;

/// THP, somaxconn, tcp_max_syn_backlog, open files, io_uring.
pub(super) fn findings() -> Vec<Finding> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    vec![
        transparent_hugepages(
            read("/sys/kernel/mm/transparent_hugepage/enabled").as_deref(),
            read("/sys/kernel/mm/transparent_hugepage/defrag").as_deref(),
        ),
        somaxconn(
            read("/proc/sys/net/core/somaxconn").as_deref(),
            BACKLOG_NEEDS,
        ),
        syn_backlog(read("/proc/sys/net/ipv4/tcp_max_syn_backlog").as_deref()),
        open_files(open_files_limit().ok(), open_files_for(CONNECTIONS, cores)),
        io_uring(
            io_uring_available(),
            read("/proc/sys/kernel/io_uring_disabled").as_deref(),
        ),
    ]
}

/// The bracketed choice of a sysfs setting: "madvise" in
/// "always [madvise] never".
fn chosen(text: &str) -> Option<&str> {
    let open = text.find('[')?;
    let close = open + text[open..].find(']')?;
    Some(&text[open + 1..close])
}

pub(super) fn transparent_hugepages(enabled: Option<&str>, defrag: Option<&str>) -> Finding {
    let Some(enabled) = enabled.and_then(chosen) else {
        return Finding::ok("transparent-hugepages", "not visible");
    };
    let defrag = defrag.and_then(chosen).unwrap_or("unknown");
    let found = format!("enabled = {enabled}, defrag = {defrag}");
    if enabled == "always" {
        return Finding::note(
            "transparent-hugepages",
            format!(
                "{found}: every large enough heap is backed by 2 MiB pages, so Ruby servers' \
                 RSS (and copy-on-write sharing between forked workers) differs from a machine \
                 with madvise"
            ),
            "compare only runs made with the same setting, or for the study: \
             echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (as root)",
        );
    }
    Finding::ok(
        "transparent-hugepages",
        format!("{found} (huge pages only where a program asks)"),
    )
}

/// `net.core.somaxconn` against the backlogs rackbench's runs ask for.
pub(super) fn somaxconn(text: Option<&str>, needs: &[BacklogNeed]) -> Finding {
    let Some(value) = text.and_then(|t| t.trim().parse::<u32>().ok()) else {
        return Finding::ok("somaxconn", "not readable (/proc/sys/net/core/somaxconn)");
    };
    let short: Vec<String> = needs
        .iter()
        .filter(|n| n.backlog > value)
        .map(|n| format!("{} needs {}", n.who, n.backlog))
        .collect();
    if short.is_empty() {
        let most = needs.iter().map(|n| n.backlog).max().unwrap_or(0);
        return Finding::ok(
            "somaxconn",
            format!("net.core.somaxconn = {value} (the plans' backlogs need {most} at most)"),
        );
    }
    Finding::problem(
        "somaxconn",
        format!(
            "net.core.somaxconn = {value} caps every listen backlog, and {}: connects \
             beyond it are dropped and retried a second later, counted as the server's latency",
            short.join("; ")
        ),
        "sysctl -w net.core.somaxconn=4096 (and net.core.somaxconn = 4096 in \
         /etc/sysctl.d/99-rackbench.conf to keep it)",
    )
}

/// `net.ipv4.tcp_max_syn_backlog`: half-open connections per listener.
/// Below the engine's connects at once, SYN cookies take over (the kernel
/// logs "possible SYN flooding"); a note.
pub(super) fn syn_backlog(text: Option<&str>) -> Finding {
    let Some(value) = text.and_then(|t| t.trim().parse::<u32>().ok()) else {
        return Finding::ok("tcp-max-syn-backlog", "not readable");
    };
    let found = format!("net.ipv4.tcp_max_syn_backlog = {value}");
    if (value as usize) < CONNECTS_AT_ONCE {
        return Finding::note(
            "tcp-max-syn-backlog",
            format!(
                "{found}, under the {CONNECTS_AT_ONCE} connections the load engine opens at once"
            ),
            "sysctl -w net.ipv4.tcp_max_syn_backlog=4096",
        );
    }
    Finding::ok("tcp-max-syn-backlog", found)
}

/// RLIMIT_NOFILE (soft, hard) against `needed` descriptors. The load
/// engine raises the soft limit to the hard one by itself, so only the
/// hard limit matters.
pub(super) fn open_files(limits: Option<(u64, u64)>, needed: u64) -> Finding {
    let Some((soft, hard)) = limits else {
        return Finding::ok("open-files", "not readable (getrlimit)");
    };
    let found = format!("RLIMIT_NOFILE soft {soft}, hard {hard}");
    if hard < needed {
        return Finding::note(
            "open-files",
            format!(
                "{found}: {CONNECTIONS} connections need about {needed} (rackbench raises \
                 the soft limit to the hard one, no further); up to {} connections work",
                hard.saturating_sub(needed - CONNECTIONS as u64)
            ),
            format!(
                "`ulimit -Hn {needed}` as root before the study, or `* hard nofile {needed}` \
                 in /etc/security/limits.conf (LimitNOFILE={needed} in a systemd unit)"
            ),
        );
    }
    Finding::ok(
        "open-files",
        format!("{found} (rackbench raises the soft limit; {CONNECTIONS} connections fit)"),
    )
}

/// Whether the load engine's io_uring loop can run here.
pub(super) fn io_uring(probe: Result<(), String>, disabled: Option<&str>) -> Finding {
    let disabled = disabled.map(str::trim).filter(|d| *d != "0");
    match probe {
        Ok(()) => Finding::ok("io-uring", "available: the load engine waits on io_uring"),
        Err(why) => Finding::note(
            "io-uring",
            format!(
                "not available ({why}{}): the load engine uses epoll, which works, at more \
                 system calls per request",
                disabled.map_or(String::new(), |d| format!(
                    "; kernel.io_uring_disabled = {d}"
                ))
            ),
            if disabled.is_some() {
                "sysctl -w kernel.io_uring_disabled=0"
            } else {
                "a kernel of 6.1 or later (and, in a container, a seccomp profile that \
                 allows io_uring_setup)"
            },
        ),
    }
}

/// perf counters: `kernel.perf_event_paranoid` and whether this process
/// can count its own instructions.
pub(super) fn perf_finding() -> Finding {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok();
    perf(
        paranoid.as_deref(),
        count_instructions(),
        crate::server::spec::which("perf").is_some(),
    )
}

pub(super) fn perf(
    paranoid: Option<&str>,
    counted: Result<u64, std::io::Error>,
    perf_installed: bool,
) -> Finding {
    let level = paranoid.and_then(|p| p.trim().parse::<i32>().ok());
    let tool = if perf_installed {
        "perf installed"
    } else {
        "perf not installed"
    };
    let level_text = level.map_or("unknown".to_string(), |l| l.to_string());
    match counted {
        Ok(n) => Finding::ok(
            "perf-counters",
            format!(
                "hardware counters work (counted {n} instructions of a small loop); \
                 perf_event_paranoid = {level_text}; {tool}"
            ),
        ),
        Err(e) => {
            let fix = if level.is_some_and(|l| l > 2) {
                "sysctl -w kernel.perf_event_paranoid=1 (Debian's 3 forbids counting to users)"
                    .to_string()
            } else if matches!(
                e.raw_os_error(),
                Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV)
            ) {
                "no hardware counters here (a VM that does not pass the PMU through): \
                 counts need bare metal or a host that exposes them"
                    .to_string()
            } else if level.is_some_and(|l| l > 1) {
                "sysctl -w kernel.perf_event_paranoid=1, or run as root".to_string()
            } else {
                "run as root, or allow perf_event_open to the container (seccomp, \
                 CAP_PERFMON)"
                    .to_string()
            };
            Finding::note(
                "perf-counters",
                format!(
                    "cannot count instructions ({e}); perf_event_paranoid = {level_text}; \
                     {tool}; nothing uses counters today"
                ),
                fix,
            )
        }
    }
}

/// `struct perf_event_attr` as of its first version (PERF_ATTR_SIZE_VER0,
/// 64 bytes): the kernel reads the fields a caller's size covers.
#[repr(C)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// Bit 0 disabled, 5 exclude_kernel, 6 exclude_hv.
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// Counts this thread's user-space instructions over a small loop with
/// perf_event_open; the error is the syscall's.
fn count_instructions() -> Result<u64, std::io::Error> {
    const PERF_TYPE_HARDWARE: u32 = 0;
    const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
    const ENABLE: libc::c_ulong = 0x2400; // _IO('$', 0)
    const DISABLE: libc::c_ulong = 0x2401; // _IO('$', 1)
    let attr = PerfEventAttr {
        kind: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_HW_INSTRUCTIONS,
        sample_period: 0,
        sample_type: 0,
        read_format: 0,
        flags: 1 | 1 << 5 | 1 << 6,
        wakeup_events: 0,
        bp_type: 0,
        config1: 0,
    };
    // SAFETY: attr is a valid perf_event_attr of the size it states; the
    // other arguments are plain integers (this thread, any CPU, no group).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            0 as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = fd as libc::c_int;
    let mut sum = 0u64;
    let mut count = 0u64;
    // SAFETY: fd is the event just opened; the read fills a local u64; the
    // descriptor is closed once, here.
    let n = unsafe {
        libc::ioctl(fd, ENABLE, 0);
        for i in 0..10_000u64 {
            sum = std::hint::black_box(sum.wrapping_add(i));
        }
        libc::ioctl(fd, DISABLE, 0);
        let n = libc::read(fd, (&mut count as *mut u64).cast(), 8);
        libc::close(fd);
        n
    };
    if n != 8 {
        return Err(std::io::Error::other("the counter read short"));
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    #[test]
    fn thp_always_is_a_note_madvise_and_never_are_ok() {
        let cases = [
            (
                Some("[always] madvise never\n"),
                Status::Note,
                "enabled = always",
            ),
            (
                Some("always [madvise] never\n"),
                Status::Ok,
                "enabled = madvise",
            ),
            (
                Some("always madvise [never]\n"),
                Status::Ok,
                "enabled = never",
            ),
            (None, Status::Ok, "not visible"),
        ];
        for (text, status, says) in cases {
            let f = transparent_hugepages(text, Some("always defer [madvise] never"));
            assert_eq!(f.status, status, "{f:?}");
            assert!(f.found.contains(says), "{f:?}");
        }
        let f = transparent_hugepages(Some("[always] madvise never"), None);
        assert!(f.found.contains("defrag = unknown"), "{f:?}");
        assert!(f.found.contains("RSS"), "says what differs: {f:?}");
    }

    #[test]
    fn somaxconn_below_a_plans_backlog_is_a_problem_naming_who_needs_it() {
        let small = somaxconn(Some("128\n"), BACKLOG_NEEDS);
        assert_eq!(small.status, Status::Problem);
        assert!(small.found.contains("load engine"), "{}", small.found);
        assert!(small.found.contains("laas-2010"), "{}", small.found);
        assert_eq!(
            small.fix.as_deref(),
            Some(
                "sysctl -w net.core.somaxconn=4096 (and net.core.somaxconn = 4096 in \
                 /etc/sysctl.d/99-rackbench.conf to keep it)"
            )
        );
        let between = somaxconn(Some("300"), BACKLOG_NEEDS);
        assert_eq!(between.status, Status::Problem);
        assert!(!between.found.contains("load engine"), "{}", between.found);
        assert_eq!(somaxconn(Some("4096\n"), BACKLOG_NEEDS).status, Status::Ok);
        assert_eq!(somaxconn(Some("512"), BACKLOG_NEEDS).status, Status::Ok);
        assert_eq!(somaxconn(None, BACKLOG_NEEDS).status, Status::Ok);
    }

    #[test]
    fn every_backlog_a_plan_sets_is_on_the_list_of_needs() {
        // The list is data; this keeps it true when a plan changes.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plans");
        let listed = BACKLOG_NEEDS.iter().map(|n| n.backlog).max().unwrap();
        let mut seen = 0;
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let plan: toml::Value = toml::from_str(&text).unwrap();
            for server in plan
                .get("server")
                .and_then(|s| s.as_array())
                .into_iter()
                .flatten()
            {
                let Some(b) = server.get("settings").and_then(|s| s.get("backlog")) else {
                    continue;
                };
                let b: u32 = b.as_str().unwrap().parse().unwrap();
                seen += 1;
                assert!(
                    BACKLOG_NEEDS
                        .iter()
                        .any(|n| n.backlog == b && n.who.contains(e.file_name().to_str().unwrap())),
                    "{} sets backlog {b}: add it to doctor::kernel::BACKLOG_NEEDS",
                    e.path().display()
                );
                assert!(b <= listed);
            }
        }
        assert!(seen >= 1, "plans/laas-2010.toml sets a backlog");
    }

    #[test]
    fn a_syn_backlog_under_the_engines_connects_is_a_note() {
        assert_eq!(syn_backlog(Some("128")).status, Status::Note);
        assert_eq!(syn_backlog(Some("4096")).status, Status::Ok);
    }

    #[test]
    fn a_hard_open_files_limit_under_ten_thousand_connections_is_a_note() {
        let needed = open_files_for(CONNECTIONS, 2);
        let low = open_files(Some((1024, 4096)), needed);
        assert_eq!(low.status, Status::Note);
        assert!(
            low.fix.as_deref().unwrap().contains("ulimit -Hn"),
            "{low:?}"
        );
        assert!(low.found.contains("up to 4024 connections"), "{low:?}");
        assert_eq!(open_files(Some((1024, 1 << 20)), needed).status, Status::Ok);
        assert_eq!(open_files(None, needed).status, Status::Ok);
    }

    #[test]
    fn io_uring_missing_is_a_note_naming_the_sysctl_when_it_is_disabled() {
        assert_eq!(io_uring(Ok(()), Some("0")).status, Status::Ok);
        let off = io_uring(Err("Operation not permitted".into()), Some("2\n"));
        assert_eq!(off.status, Status::Note);
        assert_eq!(
            off.fix.as_deref(),
            Some("sysctl -w kernel.io_uring_disabled=0")
        );
        let old = io_uring(Err("Function not implemented".into()), None);
        assert!(old.fix.unwrap().contains("6.1"));
    }

    #[test]
    fn perf_counters_that_fail_are_a_note_whose_fix_follows_the_cause() {
        let err = |code| Err(std::io::Error::from_raw_os_error(code));
        let cases = [
            (Some("3\n"), err(libc::EACCES), "perf_event_paranoid=1"),
            (Some("2"), err(libc::ENOENT), "no hardware counters"),
            (Some("2"), err(libc::EACCES), "perf_event_paranoid=1"),
            (Some("-1"), err(libc::EPERM), "seccomp"),
        ];
        for (paranoid, counted, says) in cases {
            let f = perf(paranoid, counted, false);
            assert_eq!(f.status, Status::Note);
            assert!(f.fix.as_deref().unwrap().contains(says), "{f:?}");
        }
        let ok = perf(Some("2"), Ok(10_400), true);
        assert_eq!(ok.status, Status::Ok);
        assert!(ok.found.contains("perf installed"), "{ok:?}");
    }

    #[test]
    fn counting_instructions_counts_some_or_says_why_not() {
        match count_instructions() {
            Ok(n) => assert!(n >= 10_000, "a 10,000-step loop ran {n} instructions"),
            Err(e) => assert!(e.raw_os_error().is_some(), "{e}"),
        }
    }
}
