//! The whole machine's CPU time per CPU, from `/proc/stat`: what the
//! process-tree sampler cannot see (steal, and time spent on a CPU by
//! processes that are not the server's).
//!
//! A `cpuN` line counts, in clock ticks since boot, the time CPU N spent in
//! each state. `steal` is time the hypervisor ran someone else while this
//! guest wanted the CPU; `guest` and `guest_nice` are already inside `user`
//! and `nice`, so they are not added again. Two readings subtract
//! ([`CpuTimes::since`]) into the time spent between them.
//!
//! It only reads `/proc/stat`; a CPU missing from one of two readings
//! (taken offline between them) counts nothing.

use std::collections::BTreeMap;

/// One CPU's time by state, in clock ticks (see `clock_ticks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Ticks a task ran on the CPU: user, nice and system. Interrupt and
    /// softirq time are the kernel's, billed to no task here.
    pub fn task(self) -> u64 {
        self.user + self.nice + self.system
    }

    /// Every state: the elapsed ticks the CPU accounted for.
    pub fn total(self) -> u64 {
        self.task() + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }

    /// The time between `base` and `self` (saturating: counters never go
    /// back, except across a CPU being taken offline and on again).
    pub fn since(self, base: CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(base.user),
            nice: self.nice.saturating_sub(base.nice),
            system: self.system.saturating_sub(base.system),
            idle: self.idle.saturating_sub(base.idle),
            iowait: self.iowait.saturating_sub(base.iowait),
            irq: self.irq.saturating_sub(base.irq),
            softirq: self.softirq.saturating_sub(base.softirq),
            steal: self.steal.saturating_sub(base.steal),
        }
    }

    fn add(self, o: CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user + o.user,
            nice: self.nice + o.nice,
            system: self.system + o.system,
            idle: self.idle + o.idle,
            iowait: self.iowait + o.iowait,
            irq: self.irq + o.irq,
            softirq: self.softirq + o.softirq,
            steal: self.steal + o.steal,
        }
    }
}

/// Per-CPU times at one instant, keyed by CPU number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineCpu {
    pub cpus: BTreeMap<usize, CpuTimes>,
}

impl MachineCpu {
    /// Reads `/proc/stat` now; `None` where it cannot be read.
    pub fn read() -> Option<MachineCpu> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        Some(parse_proc_stat(&text))
    }

    /// The time each CPU spent since `base`.
    pub fn since(&self, base: &MachineCpu) -> MachineCpu {
        let cpus = self
            .cpus
            .iter()
            .filter_map(|(n, t)| base.cpus.get(n).map(|b| (*n, t.since(*b))))
            .collect();
        MachineCpu { cpus }
    }

    /// The sum over `which` CPUs (every CPU when `which` is empty); CPUs
    /// not in the reading count nothing.
    pub fn sum(&self, which: &[usize]) -> CpuTimes {
        self.cpus
            .iter()
            .filter(|(n, _)| which.is_empty() || which.contains(n))
            .fold(CpuTimes::default(), |acc, (_, t)| acc.add(*t))
    }
}

/// Parses the `cpuN` lines of `/proc/stat` (the aggregate `cpu` line and
/// every other line are ignored; a line with fewer than eight numbers, as
/// kernels before 2.6.11 wrote, is skipped).
pub fn parse_proc_stat(text: &str) -> MachineCpu {
    let mut cpus = BTreeMap::new();
    for line in text.lines() {
        // "cpu  ..." (two spaces) is the aggregate; "cpuN ..." a CPU.
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let mut it = rest.split_ascii_whitespace();
        let Some(Ok(n)) = it.next().map(str::parse::<usize>) else {
            continue;
        };
        let v: Vec<u64> = it.map_while(|f| f.parse().ok()).collect();
        if v.len() < 8 {
            continue;
        }
        cpus.insert(
            n,
            CpuTimes {
                user: v[0],
                nice: v[1],
                system: v[2],
                idle: v[3],
                iowait: v[4],
                irq: v[5],
                softirq: v[6],
                steal: v[7],
            },
        );
    }
    MachineCpu { cpus }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  300 0 150 9000 10 0 5 40 0 0\n\
cpu0 100 0 50 4500 5 0 3 20 7 0\n\
cpu1 200 0 100 4500 5 0 2 20 0 0\n\
cpu7 1 2 3\n\
intr 12345 0 0\n\
ctxt 999\n";

    #[test]
    fn reads_each_cpu_line_and_skips_the_aggregate_and_short_lines() {
        let m = parse_proc_stat(STAT);
        assert_eq!(m.cpus.len(), 2, "{m:?}");
        let c0 = m.cpus[&0];
        assert_eq!(
            (c0.user, c0.system, c0.idle, c0.softirq, c0.steal),
            (100, 50, 4500, 3, 20)
        );
        // guest (7) is inside user already: not a field of its own.
        assert_eq!(c0.task(), 150);
        assert_eq!(c0.total(), 100 + 50 + 4500 + 5 + 3 + 20);
    }

    #[test]
    fn since_subtracts_per_cpu_and_drops_cpus_missing_from_the_base() {
        let base = parse_proc_stat(STAT);
        let later = parse_proc_stat(
            "cpu0 110 0 55 4600 5 0 3 30 0 0\ncpu1 260 0 100 4540 5 0 2 20 0 0\ncpu2 5 0 0 5 0 0 0 0 0 0\n",
        );
        let d = later.since(&base);
        assert_eq!(d.cpus.len(), 2, "cpu2 has no base: {d:?}");
        assert_eq!(d.cpus[&0].steal, 10);
        assert_eq!(d.cpus[&1].task(), 60);
        assert_eq!(d.sum(&[1]).idle, 40);
        assert_eq!(d.sum(&[]).task(), 15 + 60);
        assert_eq!(
            d.sum(&[5]),
            CpuTimes::default(),
            "a CPU not read counts nothing"
        );
    }

    #[test]
    fn counters_that_went_back_count_zero_not_a_wrap() {
        let a = CpuTimes {
            user: 10,
            ..Default::default()
        };
        let b = CpuTimes {
            user: 4,
            ..Default::default()
        };
        assert_eq!(b.since(a).user, 0);
    }

    #[test]
    fn this_machine_has_a_reading() {
        let m = MachineCpu::read().expect("/proc/stat");
        assert!(!m.cpus.is_empty());
        assert!(m.sum(&[]).total() > 0);
    }
}
