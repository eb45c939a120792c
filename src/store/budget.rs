//! A trial's budget as reports show it (issue 28), read from a record's
//! `budget` (what the control group saw: `budget::BudgetRecord`):
//! [`TrialBudget`] is one trial's, [`GroupBudget`] a group's over its
//! runs, and [`kill_note`] the words every report puts beside a row where
//! the kernel killed a worker for memory — such a row is never a clean
//! result.
//!
//! It never reads a file (`read` does) and never makes a group
//! (`budget::cgroup`). A record without a budget has none here: no
//! column, no line, the reports as they were.

use crate::budget::BudgetRecord;
use serde::Serialize;

/// One trial's budget and what its group saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialBudget {
    pub memory_limit_bytes: Option<u64>,
    pub cpus: Option<f64>,
    /// The group's own memory peak; None where the kernel keeps none.
    pub memory_peak_bytes: Option<u64>,
    /// Processes killed for memory inside the group.
    pub oom_kills: u64,
    /// Time held back by the CPU quota, seconds.
    pub cpu_throttled_s: f64,
    pub cpu_throttled_periods: u64,
    /// Each kill's time, seconds from the counted window's start.
    pub oom_events: Vec<f64>,
}

impl TrialBudget {
    pub fn of(b: &BudgetRecord) -> TrialBudget {
        TrialBudget {
            memory_limit_bytes: b.memory_limit_bytes,
            cpus: b.cpus,
            memory_peak_bytes: b.memory_peak_bytes,
            oom_kills: b.oom_kills,
            cpu_throttled_s: b.cpu_throttled_s,
            cpu_throttled_periods: b.cpu_throttled_periods,
            oom_events: b.oom_events.clone(),
        }
    }

    /// "512 MiB, 1 CPU": the budget, as rows and headers name it.
    pub fn label(&self) -> String {
        label(self.memory_limit_bytes, self.cpus)
    }

    /// "killed for memory: 1 worker (limit 512 MiB)"; None without a kill.
    pub fn kill_note(&self) -> Option<String> {
        kill_note(self.oom_kills, self.memory_limit_bytes)
    }
}

/// "512 MiB, 1 CPU", "1.5 GiB", "0.5 CPUs"; "no limit" for neither.
pub fn label(memory_limit_bytes: Option<u64>, cpus: Option<f64>) -> String {
    let mut parts = Vec::new();
    if let Some(m) = memory_limit_bytes {
        parts.push(size(m));
    }
    if let Some(c) = cpus {
        let n = crate::units::num(c);
        parts.push(format!("{n} CPU{}", if c == 1.0 { "" } else { "s" }));
    }
    if parts.is_empty() {
        "no limit".into()
    } else {
        parts.join(", ")
    }
}

/// Bytes in MiB ("431 MiB", "12.5 MiB"), or GiB from 1 GiB ("1.5 GiB").
pub fn size(bytes: u64) -> String {
    let mib = bytes as f64 / (1u64 << 20) as f64;
    let (v, unit) = if mib >= 1024.0 {
        (mib / 1024.0, "GiB")
    } else {
        (mib, "MiB")
    };
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{r:.0} {unit}")
    } else {
        format!("{r:.1} {unit}")
    }
}

/// "killed for memory: 2 workers (limit 512 MiB)"; None for no kill.
pub fn kill_note(oom_kills: u64, memory_limit_bytes: Option<u64>) -> Option<String> {
    (oom_kills > 0).then(|| {
        format!(
            "killed for memory: {oom_kills} worker{}{}",
            if oom_kills == 1 { "" } else { "s" },
            memory_limit_bytes.map_or(String::new(), |m| format!(" (limit {})", size(m)))
        )
    })
}

/// A group's budget over its runs that have one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupBudget {
    /// [`label`]; several joined by " / " when its runs disagree.
    pub label: String,
    pub memory_limit_bytes: Option<u64>,
    pub cpus: Option<f64>,
    /// The highest memory peak over its runs; None when none kept one.
    pub memory_peak_bytes: Option<u64>,
    /// That peak as a share of the limit (0.84: 84%).
    pub memory_peak_share: Option<f64>,
    /// Seconds held back by the CPU quota per second of counted window,
    /// over all its runs; None with no CPU limit or no window.
    pub cpu_throttled_s_per_s: Option<f64>,
    pub cpu_throttled_periods: u64,
    /// Kills for memory over all its runs, and the runs with one.
    pub oom_kills: u64,
    pub runs_killed: usize,
    /// Its runs whose record has a budget.
    pub runs: usize,
}

impl GroupBudget {
    /// Over `(budget, counted window in seconds)` of each run with one;
    /// None when no run had a budget.
    pub fn of(runs: &[(TrialBudget, f64)]) -> Option<GroupBudget> {
        let first = &runs.first()?.0;
        let mut labels: Vec<String> = Vec::new();
        for (b, _) in runs {
            if !labels.contains(&b.label()) {
                labels.push(b.label());
            }
        }
        let peak = runs.iter().filter_map(|(b, _)| b.memory_peak_bytes).max();
        let window_s: f64 = runs.iter().map(|r| r.1).sum();
        let throttled_s: f64 = runs.iter().map(|(b, _)| b.cpu_throttled_s).sum();
        Some(GroupBudget {
            label: labels.join(" / "),
            memory_limit_bytes: first.memory_limit_bytes,
            cpus: first.cpus,
            memory_peak_bytes: peak,
            memory_peak_share: peak
                .zip(first.memory_limit_bytes)
                .filter(|(_, l)| *l > 0)
                .map(|(p, l)| p as f64 / l as f64),
            cpu_throttled_s_per_s: (first.cpus.is_some() && window_s > 0.0)
                .then(|| throttled_s / window_s),
            cpu_throttled_periods: runs.iter().map(|(b, _)| b.cpu_throttled_periods).sum(),
            oom_kills: runs.iter().map(|(b, _)| b.oom_kills).sum(),
            runs_killed: runs.iter().filter(|(b, _)| b.oom_kills > 0).count(),
            runs: runs.len(),
        })
    }

    /// "killed for memory: 1 worker (limit 512 MiB)"; None without a kill.
    pub fn kill_note(&self) -> Option<String> {
        kill_note(self.oom_kills, self.memory_limit_bytes)
    }

    /// "peak 431 MiB of 512 MiB, 84%; CPU throttled 0.12 s/s": the peak
    /// against the limit and the throttling, what is known of them.
    pub fn figures(&self) -> String {
        let mut parts = Vec::new();
        match (self.memory_peak_bytes, self.memory_limit_bytes) {
            (Some(p), Some(l)) => parts.push(format!(
                "peak {} of {}, {:.0}%",
                size(p),
                size(l),
                self.memory_peak_share.unwrap_or(0.0) * 100.0
            )),
            (Some(p), None) => parts.push(format!("peak {}", size(p))),
            (None, Some(_)) => parts.push("peak unknown".into()),
            (None, None) => {}
        }
        if let Some(t) = self.cpu_throttled_s_per_s {
            parts.push(format!("CPU throttled {t:.2} s/s"));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(memory: Option<u64>, cpus: Option<f64>, peak: Option<u64>, kills: u64) -> TrialBudget {
        TrialBudget {
            memory_limit_bytes: memory,
            cpus,
            memory_peak_bytes: peak,
            oom_kills: kills,
            cpu_throttled_s: 1.2,
            cpu_throttled_periods: 30,
            oom_events: Vec::new(),
        }
    }

    #[test]
    fn budgets_are_named_in_mib_and_cpus() {
        let rows: &[(Option<u64>, Option<f64>, &str)] = &[
            (Some(512 << 20), Some(1.0), "512 MiB, 1 CPU"),
            (Some(3 << 29), None, "1.5 GiB"),
            (None, Some(0.5), "0.50 CPUs"),
            (Some(100_000_000), Some(2.0), "95.4 MiB, 2 CPUs"),
            (None, None, "no limit"),
        ];
        for (m, c, want) in rows {
            assert_eq!(label(*m, *c), *want);
        }
    }

    #[test]
    fn a_kill_is_a_note_and_no_kill_is_none() {
        assert_eq!(kill_note(0, Some(512 << 20)), None);
        assert_eq!(
            kill_note(1, Some(512 << 20)).unwrap(),
            "killed for memory: 1 worker (limit 512 MiB)"
        );
        assert_eq!(kill_note(3, None).unwrap(), "killed for memory: 3 workers");
    }

    #[test]
    fn a_group_shows_its_highest_peak_against_the_limit_and_throttling_per_second() {
        let runs = vec![
            (trial(Some(512 << 20), Some(1.0), Some(400 << 20), 0), 10.0),
            (trial(Some(512 << 20), Some(1.0), Some(431 << 20), 1), 10.0),
        ];
        let g = GroupBudget::of(&runs).unwrap();
        assert_eq!(g.label, "512 MiB, 1 CPU");
        assert_eq!((g.oom_kills, g.runs_killed, g.runs), (1, 1, 2));
        assert_eq!(
            g.figures(),
            "peak 431 MiB of 512 MiB, 84%; CPU throttled 0.12 s/s"
        );
        assert_eq!(g.cpu_throttled_periods, 60);
        assert!(GroupBudget::of(&[]).is_none());
        let no_cpu = GroupBudget::of(&[(trial(Some(64 << 20), None, None, 0), 5.0)]).unwrap();
        assert_eq!(
            no_cpu.figures(),
            "peak unknown",
            "no CPU limit: no throttling"
        );
        let mixed = GroupBudget::of(&[
            (trial(Some(64 << 20), None, None, 0), 5.0),
            (trial(Some(128 << 20), None, None, 0), 5.0),
        ])
        .unwrap();
        assert_eq!(mixed.label, "64 MiB / 128 MiB");
    }
}
