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
}

fn first_line(cmd: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(cmd).args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
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
        }
    }
}
