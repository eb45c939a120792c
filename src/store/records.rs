//! The records a results directory holds, as they are written: the run's
//! manifest, each planned trial with its outcome and trial record, each
//! break-point search. Their JSON field names are a contract (schema/).
//!
//! The plan's own vocabulary for one trial (`PlannedTrial`, `Shape`) lives
//! here too, because every stored record embeds it: `plan` builds them and
//! `report` reads them, and neither has to reach into the other.

use crate::lab::environment::Environment;
use crate::lab::front::{HttpVersion, DEFAULT_KEEPALIVE};
use crate::lab::trial::{Topology, TrialRecord};
use crate::search::{Breakpoint, SearchConfig};
use crate::server::spec::ServerSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const RUN_SCHEMA: &str = "rackbench/run-v1";
pub const STORED_SCHEMA: &str = "rackbench/run-trial-v1";
pub const SUMMARY_SCHEMA: &str = "rackbench/summary-v1";

/// How a planned trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    Failed,
    Interrupted,
}

/// One file in `trials/`: the plan's view of the trial plus its record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredTrial {
    pub schema: String,
    pub id: String,
    pub group: String,
    pub repeat: u32,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub planned: PlannedTrial,
    /// The rackbench/trial-v1 record (absent when the trial failed to start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<TrialRecord>,
    /// The plan's checks against this trial's load (absent without any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::checks::CheckResult>,
}

impl StoredTrial {
    /// Checks this trial did not meet.
    pub fn checks_missed(&self) -> usize {
        self.checks.iter().filter(|c| !c.met).count()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: String,
    pub layout: String,
    pub plan: String,
    pub follows: Option<String>,
    pub started_at: String,
    pub repeats: u32,
    pub trials: Vec<PlannedTrial>,
    pub skipped: Vec<String>,
    pub breakpoints: Vec<String>,
    pub environment: Environment,
    /// The command that reproduces this run.
    pub command: String,
    /// Seed of the shuffle within each round of repeats (`--seed` replays
    /// the order); absent in runs made before the shuffle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredBreakpoint {
    pub schema: String,
    pub group: String,
    pub server: String,
    pub variant: String,
    pub app: String,
    pub behind: String,
    /// "connections" or "rate".
    pub mode: String,
    /// The break point: the highest clean level (connections or rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    pub throughput_rps: f64,
    pub load_seconds: f64,
    pub search: SearchConfig,
    pub result: Breakpoint,
    /// The trial the search ran over (server variant, front and its
    /// knobs), for labels; absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<PlannedTrial>,
}

/// One load shape: closed loop at N connections or open loop at a rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    pub connections: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

/// One trial to run, fully resolved.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedTrial {
    /// Stable name of the trial, the repeat included; the file name of its record.
    pub id: String,
    /// The same name without the repeat: trials that are repeats of each other share it.
    pub group: String,
    pub server: String,
    /// Server label: the name plus its variant.
    pub variant: String,
    pub workers: Option<u32>,
    pub threads: Option<u32>,
    pub settings: BTreeMap<String, String>,
    pub env: BTreeMap<String, String>,
    pub app: String,
    /// "none" or "nginx".
    pub behind: String,
    pub nginx_workers: u32,
    /// Behind nginx: the upstream keep-alive pool (0 is off).
    #[serde(default = "default_keepalive")]
    pub nginx_keepalive: u32,
    /// Behind nginx: the HTTP version to the server.
    #[serde(default)]
    pub nginx_http: HttpVersion,
    /// Copies of the server behind nginx (None: one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<u32>,
    pub shape: Shape,
    pub repeat: u32,
    /// The runtime the server runs from, as the plan names it (absent:
    /// the host, as before runtimes; the record's own `runtime` says what
    /// ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// What the trial asks of the runtime's Ruby (YJIT, allocator,
    /// MALLOC_ARENA_MAX); absent when nothing is asked.
    #[serde(default, skip_serializing_if = "crate::runtime::Switches::is_empty")]
    pub switches: crate::runtime::Switches,
    /// The plan's `[budget]` for this trial; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
    /// The plan's `[load] slow_clients` for this trial; absent for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_clients: Option<usize>,
    /// The plan's `[restart]` for this trial; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<PlannedRestart>,
    #[serde(skip)]
    pub spec: Option<ServerSpec>,
}

/// A planned trial's restart under load: the kind, and when, seconds from
/// the counted window's start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRestart {
    pub kind: String,
    pub at_s: f64,
}

impl PlannedRestart {
    /// What the lab is asked.
    pub fn spec(&self) -> crate::lab::restart::RestartSpec {
        crate::lab::restart::RestartSpec {
            kind: self.kind.clone(),
            at: std::time::Duration::from_secs_f64(self.at_s),
        }
    }
}

impl PlannedTrial {
    /// The lab's topology for this trial: the one place the plan's
    /// `behind` and nginx knobs become a `Topology` (the runner starts it,
    /// every report labels it).
    pub fn topology(&self) -> Topology {
        if self.behind == "nginx" {
            Topology::Nginx {
                workers: self.nginx_workers.max(1),
                unix_socket: true,
                keepalive: self.nginx_keepalive,
                http_version: self.nginx_http,
                instances: self.instances.unwrap_or(1),
            }
        } else {
            Topology::Direct
        }
    }

    /// "direct", or the nginx front's label ("nginx×1 http/1.0 keepalive
    /// off"): `Topology::label`, the one label function.
    pub fn front(&self) -> String {
        self.topology().label()
    }
}

/// The front of a record that keeps only its `behind` (a summary's group,
/// a break-point record older than its planned trial): "nginx", without
/// the knobs the record does not keep, or `Topology::label`'s "direct".
pub fn front_of(behind: &str) -> String {
    if behind == "nginx" {
        behind.to_string()
    } else {
        Topology::Direct.label()
    }
}

fn default_keepalive() -> u32 {
    DEFAULT_KEEPALIVE
}
