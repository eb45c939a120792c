//! Whether the rackbench process that made something is gone: the one
//! judgement every removal rests on.
//!
//! A thing's name (or its claim) carries its maker's PID. The maker is
//! gone when no process has that PID, or when the process that has it now
//! is not rackbench (its executable's name, or `comm`) and started after
//! the thing was made: a PID is held by one live process at a time, and
//! the maker was alive when it made the thing, so a holder that started
//! later is another process that got the PID again. Both must hold, so
//! each guards the other: a holder that started before is the maker
//! whatever its name (a test binary runs the same library code under
//! another name), and a rackbench holder is kept whatever the clocks say
//! (a wrong clock never removes a living run's things; a reused PID's
//! leftovers wait for the next sweep). Start times are read to the clock
//! tick and the made time is a file's time, so a holder that started
//! within [`SLACK`] after it counts as the maker. Reads /proc; changes
//! nothing.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// How much later than the thing a PID's holder must have started to be
/// another process: file times and process start times come from
/// different clocks (the wall clock, ticks since boot).
pub const SLACK: Duration = Duration::from_secs(1);

/// Why a thing's maker counts as gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gone {
    /// No process has the PID.
    Exited,
    /// The PID's holder started after the thing was made: `by` is its
    /// executable's name.
    Reused { by: String },
}

impl Gone {
    /// "exited", or "its pid is now sleep's".
    pub fn words(&self) -> String {
        match self {
            Gone::Exited => "exited".into(),
            Gone::Reused { by } => format!("its pid is now {by}'s"),
        }
    }
}

/// The process that holds a PID now, as /proc shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub started: SystemTime,
    /// Its executable's file name (or `comm` when that cannot be read).
    pub name: String,
}

impl Holder {
    /// Whether it runs rackbench: the binary, or the library's own unit
    /// tests (`rackbench-HASH`).
    pub fn is_rackbench(&self) -> bool {
        self.name == "rackbench" || self.name.starts_with("rackbench-")
    }
}

/// Whether the maker of a thing made at `made` is gone, given the PID's
/// holder now (None: no process has it).
pub fn judge(made: SystemTime, holder: Option<&Holder>) -> Option<Gone> {
    match holder {
        None => Some(Gone::Exited),
        Some(h) if h.started > made + SLACK && !h.is_rackbench() => {
            Some(Gone::Reused { by: h.name.clone() })
        }
        Some(_) => None,
    }
}

/// Whether process `pid`, which made a thing at `made`, is gone; never
/// for this process.
pub fn gone(pid: u32, made: SystemTime) -> Option<Gone> {
    if pid == std::process::id() {
        return None;
    }
    judge(made, holder(pid).as_ref())
}

/// Whether /proc can be read here: without it every PID would look gone.
pub fn proc_readable() -> bool {
    holder(std::process::id()).is_some()
}

/// The process with `pid` now, or None when there is none.
pub fn holder(pid: u32) -> Option<Holder> {
    let dir = Path::new("/proc").join(pid.to_string());
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let ticks = start_ticks(&stat)?;
    // SAFETY: sysconf has no preconditions.
    let per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let started_since_boot = Duration::from_secs_f64(ticks as f64 / per_s);
    let since_boot = boot_clock()?;
    let started = SystemTime::now().checked_sub(
        since_boot
            .checked_sub(started_since_boot)
            .unwrap_or_default(),
    )?;
    let name = std::fs::read_link(dir.join("exe"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        // A binary rebuilt while it runs (cargo) reads "rackbench (deleted)".
        .map(|n| n.trim_end_matches(" (deleted)").to_string())
        .or_else(|| {
            std::fs::read_to_string(dir.join("comm"))
                .ok()
                .map(|c| c.trim().to_string())
        })
        .unwrap_or_else(|| format!("pid {pid}"));
    Some(Holder { started, name })
}

/// Field 22 of `/proc/PID/stat`: when the process started, in clock
/// ticks since boot. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted after its last `)`.
pub fn start_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // rest starts at field 3 (state); field 22 is 19 further.
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// The time since boot, on the clock /proc's start times count on.
fn boot_clock() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    if unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } != 0 {
        return None;
    }
    Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maker_is_gone_when_its_pid_is_free_or_held_by_a_later_process() {
        let made = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let holder = |offset_ms: i64, name: &str| Holder {
            started: if offset_ms >= 0 {
                made + Duration::from_millis(offset_ms as u64)
            } else {
                made - Duration::from_millis((-offset_ms) as u64)
            },
            name: name.into(),
        };
        // (the PID's holder now, want)
        let rows: &[(Option<Holder>, Option<Gone>)] = &[
            (None, Some(Gone::Exited)),
            // The maker itself: started before it made the thing, under
            // any name (a test binary runs rackbench's code too).
            (Some(holder(-5_000, "rackbench")), None),
            (Some(holder(-5_000, "budget-3f2a")), None),
            // Within the slack: kept, never removed on a clock's doubt.
            (Some(holder(0, "sleep")), None),
            (Some(holder(900, "sleep")), None),
            // Started after it was made: another process got the PID.
            (
                Some(holder(1_500, "sleep")),
                Some(Gone::Reused { by: "sleep".into() }),
            ),
            (
                Some(holder(3_600_000, "budget-3f2a")),
                Some(Gone::Reused {
                    by: "budget-3f2a".into(),
                }),
            ),
            // A rackbench holder is kept whatever the clocks say: a reused
            // PID's leftovers wait for the next sweep.
            (Some(holder(3_600_000, "rackbench")), None),
            (Some(holder(3_600_000, "rackbench-0c7c6947dc317446")), None),
        ];
        for (h, want) in rows {
            assert_eq!(judge(made, h.as_ref()), *want, "{h:?}");
        }
        assert_eq!(
            Gone::Reused { by: "sleep".into() }.words(),
            "its pid is now sleep's"
        );
    }

    #[test]
    fn the_start_time_is_counted_after_a_command_name_with_spaces_and_parentheses() {
        let tail = "S 1 2 3 0 -1 4194304 100 0 0 0 5 6 0 0 20 0 1 0 424242 1000 10";
        for comm in ["puma", "puma: cluster worker 0: 12 [app]", "a) b (c"] {
            let stat = format!("77 ({comm}) {tail}");
            assert_eq!(start_ticks(&stat), Some(424_242), "{stat}");
        }
        assert_eq!(start_ticks("77 (x) S 1 2"), None);
        assert_eq!(start_ticks("garbage"), None);
    }

    #[test]
    fn a_process_start_is_read_on_the_wall_clock_within_the_slack() {
        // Were the clocks' conversion off, a living maker would look like
        // a later process; this is what the judgement stands on.
        let before = SystemTime::now();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let after = SystemTime::now();
        let h = holder(child.id()).expect("a child that runs");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            h.started + SLACK / 2 >= before && h.started <= after + SLACK / 2,
            "started {:?} not within {:?}..{:?}",
            h.started,
            before,
            after
        );
        assert_eq!(h.name, "sleep");
        assert!(!h.is_rackbench());
    }

    #[test]
    fn this_process_is_never_gone_and_a_child_that_exited_is() {
        assert!(proc_readable());
        let me = holder(std::process::id()).expect("this process");
        assert!(me.started <= SystemTime::now());
        assert_eq!(gone(std::process::id(), SystemTime::UNIX_EPOCH), None);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let made = SystemTime::now();
        child.wait().unwrap();
        assert_eq!(gone(pid, made), Some(Gone::Exited));
    }
}
