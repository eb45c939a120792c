//! Budgets: a memory and CPU limit the server's whole process tree runs
//! under ([`Budget`]), the control group that enforces it
//! ([`cgroup::Group`]), and what the group saw ([`BudgetRecord`]).
//!
//! A budget is checked against the machine before anything starts (more
//! CPUs or memory than it has is refused). The group is made under
//! rackbench's own group in each hierarchy, the server joins it between
//! fork and exec, and it is removed when the trial ends. nginx in front and
//! the load generator never join it. Never changes a group it did not make.

pub mod cgroup;

use serde::{Deserialize, Serialize};

/// What a trial's server may use. Both None is no budget (the trial's
/// `budget` is None then, and no group is made).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Budget {
    /// The group's memory limit, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    /// CPU time per wall second the group may use (1.5: one and a half
    /// CPUs' worth, spread over any CPUs it runs on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
}

/// What the group saw over the trial: `trial-v1`'s `budget`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BudgetRecord {
    pub memory_limit_bytes: Option<u64>,
    pub cpus: Option<f64>,
    /// The group's own peak memory (v1 `memory.max_usage_in_bytes`, v2
    /// `memory.peak`; None where the kernel keeps none).
    pub memory_peak_bytes: Option<u64>,
    /// Processes the kernel killed for memory inside the group.
    pub oom_kills: u64,
    /// Time the group was held back by its CPU quota, in seconds.
    pub cpu_throttled_s: f64,
    /// Quota periods in which it was held back.
    pub cpu_throttled_periods: u64,
    /// "v1" or "v2".
    pub cgroup: String,
    /// When each kill for memory was seen, in seconds from the counted
    /// window's start (negative: during warm-up or start-up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oom_events: Vec<f64>,
}

impl Budget {
    /// The budget of `--memory` and `--cpus`: None when neither is given.
    pub fn from_flags(memory: Option<&str>, cpus: Option<f64>) -> Result<Option<Budget>, String> {
        let memory_limit_bytes = memory.map(parse_size).transpose()?;
        if let Some(c) = cpus {
            check_cpus(c)?;
        }
        Ok(
            (memory_limit_bytes.is_some() || cpus.is_some()).then_some(Budget {
                memory_limit_bytes,
                cpus,
            }),
        )
    }

    /// Refuses a budget larger than this machine: more CPUs than rackbench
    /// may run on, more memory than MemTotal.
    pub fn check_machine(&self) -> Result<(), String> {
        let have = crate::load::cpus::allowed().len().max(1);
        self.check_against(have, mem_total_bytes())
    }

    fn check_against(&self, cpus: usize, mem_total: Option<u64>) -> Result<(), String> {
        if let Some(c) = self.cpus.filter(|&c| c > cpus as f64) {
            return Err(format!(
                "--cpus {c} is more than the {cpus} CPUs this machine gives rackbench: give --cpus {cpus} or less"
            ));
        }
        if let (Some(m), Some(total)) = (self.memory_limit_bytes, mem_total) {
            if m > total {
                return Err(format!(
                    "--memory {} is more than this machine's {} of memory: give less",
                    format_size(m),
                    format_size(total)
                ));
            }
        }
        Ok(())
    }

    /// "512M", "1.5cpus", "512M 1.5cpus": for names and messages.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.memory_limit_bytes {
            parts.push(format_size(m));
        }
        if let Some(c) = self.cpus {
            parts.push(format!("{c}cpus"));
        }
        parts.join(" ")
    }
}

/// `--cpus`: a finite number above 0.
pub fn check_cpus(c: f64) -> Result<(), String> {
    if c.is_finite() && c >= 0.01 {
        Ok(())
    } else {
        Err(format!(
            "--cpus {c}: give a number of CPUs of 0.01 or more (1.5 is one and a half)"
        ))
    }
}

/// A memory size as people write it: bytes ("536870912"), or with K, M, G
/// (binary: 512M is 512 MiB), fractions allowed ("1.5G"); "MiB", "MB" and
/// lower case read the same.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("memory size '{text}': write bytes or a number with K, M or G, like 512M or 1.5G")
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| bad())?;
    let scale: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        _ => return Err(bad()),
    };
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes.round() as u64)
}

/// "512M", "1.5G", "4096": the shortest exact-enough form.
pub fn format_size(bytes: u64) -> String {
    for (unit, scale) in [("G", 1u64 << 30), ("M", 1 << 20), ("K", 1 << 10)] {
        if bytes >= scale {
            let v = bytes as f64 / scale as f64;
            let r = (v * 100.0).round() / 100.0;
            return format!("{r}{unit}");
        }
    }
    bytes.to_string()
}

/// MemTotal from /proc/meminfo.
fn mem_total_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them_and_nonsense_is_refused() {
        let rows: &[(&str, Option<u64>)] = &[
            ("512M", Some(512 << 20)),
            ("1G", Some(1 << 30)),
            ("1.5G", Some(3 << 29)),
            ("64MiB", Some(64 << 20)),
            ("256k", Some(256 << 10)),
            ("536870912", Some(536_870_912)),
            ("", None),
            ("M", None),
            ("12X", None),
            ("-1G", None),
            ("0", None),
        ];
        for (text, want) in rows {
            assert_eq!(parse_size(text).ok(), *want, "{text}");
        }
        assert!(parse_size("12X").unwrap_err().contains("512M"));
        assert_eq!(format_size(512 << 20), "512M");
        assert_eq!(format_size(3 << 29), "1.5G");
    }

    #[test]
    fn no_flag_is_no_budget_and_cpus_must_be_above_zero() {
        assert_eq!(Budget::from_flags(None, None), Ok(None));
        let b = Budget::from_flags(Some("64M"), Some(0.5)).unwrap().unwrap();
        assert_eq!(b.memory_limit_bytes, Some(64 << 20));
        assert_eq!(b.label(), "64M 0.5cpus");
        assert!(Budget::from_flags(None, Some(0.0)).is_err());
        assert!(Budget::from_flags(None, Some(f64::NAN)).is_err());
        assert!(Budget::from_flags(None, Some(-1.0)).is_err());
    }

    #[test]
    fn a_budget_larger_than_the_machine_is_refused() {
        let b = |m: Option<u64>, c: Option<f64>| Budget {
            memory_limit_bytes: m,
            cpus: c,
        };
        assert!(b(None, Some(2.0)).check_against(2, None).is_ok());
        let e = b(None, Some(64.0)).check_against(2, None).unwrap_err();
        assert!(e.contains("--cpus 2 or less"), "{e}");
        let e = b(Some(2 << 30), None)
            .check_against(2, Some(1 << 30))
            .unwrap_err();
        assert!(e.contains("more than this machine's 1G"), "{e}");
        assert!(b(Some(1 << 30), None)
            .check_against(2, Some(2 << 30))
            .is_ok());
    }
}
