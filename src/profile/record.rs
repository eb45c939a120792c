//! The record's `profile`: plain serde data, its field names a contract
//! (add, never rename). Computes nothing.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The two views of the same tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// Sampled only while the process runs: where the CPU goes.
    OnCpu,
    /// Sampled on every tick: where the time goes.
    WallClock,
}

impl View {
    /// The view in file names ("on-cpu").
    pub fn slug(self) -> &'static str {
        match self {
            View::OnCpu => "on-cpu",
            View::WallClock => "wall-clock",
        }
    }
}

/// One frame's shares of the samples, each from 0 to 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopFrame {
    /// `method - path` (rbspy's name and file, without the line).
    pub frame: String,
    /// Of the samples whose innermost frame it is.
    pub self_share: f64,
    /// Of the samples it is anywhere in.
    pub total_share: f64,
}

/// A file the profile wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileFile {
    /// Relative to the results directory.
    pub path: String,
    /// "collapsed" (`outer;inner COUNT` lines, flamegraph.pl's and
    /// inferno's input) or "speedscope" (speedscope.app's JSON, a
    /// profile of every process then one per pid).
    pub format: String,
    pub view: View,
    /// The process it holds; None for every process merged.
    pub pid: Option<u32>,
}

/// What the profiler itself cost, from its own CPU time over the window:
/// rbspy reads the server's memory from outside and never pauses it
/// (`--nonblocking`), so its cost is the CPU it takes from the machine the
/// server and the load share. The throughput cost needs an unprofiled run
/// beside the profiled one: `bench/profile-overhead.sh` (docs/PROFILES.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// CPU seconds (user + system) every rbspy process used, both views.
    pub profiler_cpu_s: f64,
    /// `profiler_cpu_s` over the server tree's CPU seconds in the same
    /// window; None when the server's CPU is not known.
    pub per_server_cpu: Option<f64>,
    /// `profiler_cpu_s` over the window's wall time times the machine's
    /// online CPUs: the share of the machine the profiler took.
    pub machine_share: f64,
}

/// The wall-clock view's figures (the record's `top` is on-CPU).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewFigures {
    pub samples: u64,
    pub gc_share: Option<f64>,
    pub top: Vec<TopFrame>,
}

/// The record's `profile`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// On-CPU samples, every process.
    pub samples: u64,
    /// Samples a second asked of rbspy, per process.
    pub rate_hz: u32,
    /// Every pid sampled in either view, in order.
    pub processes: Vec<u32>,
    /// The on-CPU samples' share in garbage collection; None where the
    /// stacks do not mark it (rbspy 0.55 does not).
    pub gc_share: Option<f64>,
    /// On-CPU, by self share.
    pub top: Vec<TopFrame>,
    pub files: Vec<ProfileFile>,
    pub overhead: Option<Overhead>,
    pub wall_clock: ViewFigures,
    /// On-CPU samples per pid.
    pub samples_by_pid: BTreeMap<u32, u64>,
    /// How long rbspy recorded.
    pub window_ms: u64,
    /// "rbspy 0.55.0".
    pub profiler: String,
}
