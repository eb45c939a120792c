//! What machine a trial ran on, recorded beside every result.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub ruby_version: Option<String>,
    pub rackbench_version: String,
    pub hostname: String,
    /// Every command line the trial ran, in order.
    pub commands: Vec<String>,
    /// The project's git commit (`git rev-parse HEAD` in the working
    /// directory) when rackbench ran inside a git checkout; absent
    /// otherwise and in records made before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
}

fn first_line(cmd: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(cmd).args(args).output().ok()?;
    first_line_of(&out.stdout)
}

/// `git rev-parse HEAD` in the working directory: a full hex commit, or
/// None outside a checkout (or without git).
fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let line = first_line_of(&out.stdout)?;
    (out.status.success() && line.len() >= 40 && line.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(line)
}

fn first_line_of(bytes: &[u8]) -> Option<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

impl Environment {
    pub fn capture(commands: Vec<String>) -> Environment {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or("unknown".into(), |(_, v)| v.trim().to_string());
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        Environment {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: read("/proc/sys/kernel/osrelease"),
            ruby_version: first_line("ruby", &["-v"]),
            rackbench_version: env!("CARGO_PKG_VERSION").to_string(),
            hostname: read("/proc/sys/kernel/hostname"),
            commands,
            git_commit: git_commit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test runs in the crate's directory: the commit when it is a
    /// git checkout (as in development and CI), nothing in a tarball.
    #[test]
    fn the_commit_is_the_checkouts_head_or_absent() {
        let head = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| first_line_of(&o.stdout));
        assert_eq!(git_commit(), head);
        if let Some(c) = git_commit() {
            assert!(
                c.len() >= 40 && c.bytes().all(|b| b.is_ascii_hexdigit()),
                "{c}"
            );
        }
    }
}
