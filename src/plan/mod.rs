//! Plans: a TOML file naming servers (with variants), apps, load shapes,
//! topologies, environment and repeats; expanded into the list of trials
//! to run, in the order to run them.
//!
//! A plan with a mistake is refused before anything starts, naming the
//! file, the line and the fix. Combinations a server cannot do (threads on
//! unicorn) are skipped and listed, not failed.

pub mod runner;
pub mod sweep;

pub use crate::store::records::{PlannedTrial, Shape};

use crate::lab::apps::AppSpec;
use crate::lab::front::{self, HttpVersion, Keepalive, DEFAULT_KEEPALIVE};
use crate::server::spec::{Missing, Registry, ServerSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use thiserror::Error;

/// The built-in default plan (`rackbench run` with no plan file).
pub const DEFAULT_PLAN: &str = include_str!("../../plans/default.toml");

#[derive(Debug, Error)]
pub enum PlanError {
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    #[error("{file}, line {line}: {message}")]
    At {
        file: String,
        line: usize,
        message: String,
    },
    #[error("cannot read plan {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The seed document this plan reproduces, if any.
    #[serde(default)]
    pub follows: Option<String>,
    #[serde(default = "one")]
    pub repeats: u32,
    /// Server names, or "installed" for every installed adapter.
    #[serde(default)]
    pub servers: Vec<String>,
    /// Servers with variants, as [[server]] tables.
    #[serde(default)]
    pub server: Vec<ServerEntry>,
    pub apps: Vec<String>,
    #[serde(default)]
    pub load: LoadSection,
    /// "none" (direct) and/or "nginx".
    #[serde(default = "direct")]
    pub behind: Vec<String>,
    #[serde(default = "one_list")]
    pub nginx_workers: Vec<u32>,
    /// nginx's upstream keep-alive: "off" or a pool size per worker.
    #[serde(default = "default_keepalive_list")]
    pub nginx_keepalive: Vec<Keepalive>,
    /// The HTTP version nginx speaks to the server: "1.0" or "1.1".
    #[serde(default = "default_http_list")]
    pub nginx_http: Vec<HttpVersion>,
    /// Environment for every server.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Your own servers, same shape as ruby/servers/servers.toml.
    #[serde(default)]
    pub server_defs: BTreeMap<String, ServerSpec>,
    /// Find each server's break point instead of (or besides) fixed loads.
    #[serde(default)]
    pub breakpoint: Option<BreakpointSection>,
    /// Thresholds every fixed-load trial must meet, as `--check` takes
    /// them: `checks = ["p99<200ms", "errors<1%"]`, or a `[checks]` table
    /// (`p99 = "<200ms"`). A trial that misses one makes `run` exit 1.
    #[serde(default, deserialize_with = "checks_list_or_table")]
    pub checks: Vec<crate::checks::Check>,
    /// One variable at a time (see plan::sweep); already applied to the
    /// fields above once parsed.
    #[serde(default)]
    pub sweep: Option<sweep::SweepSection>,
    /// Put the telemetry middleware around the app in every trial (app
    /// time, queue time behind nginx, GC): `telemetry = true`.
    #[serde(default)]
    pub telemetry: bool,
    /// The one metric the experiment is judged by, named before it runs
    /// (`primary_metric = "throughput"`, a compare-v1 metric): `compare`
    /// on its results and `sweep` judge it alone (docs/STATISTICS.md).
    #[serde(default)]
    pub primary_metric: Option<String>,
}

/// `checks = ["p99<200ms"]` or `[checks]` with `p99 = "<200ms"`.
fn checks_list_or_table<'de, D>(d: D) -> Result<Vec<crate::checks::Check>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        List(Vec<String>),
        Table(BTreeMap<String, String>),
    }
    let texts = match Form::deserialize(d)? {
        Form::List(l) => l,
        Form::Table(t) => t.into_iter().map(|(k, v)| format!("{k}{v}")).collect(),
    };
    texts
        .iter()
        .map(|t| crate::checks::Check::parse(t).map_err(serde::de::Error::custom))
        .collect()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerEntry {
    pub name: String,
    /// Shown in results instead of the generated variant name.
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub workers: Vec<u32>,
    #[serde(default)]
    pub threads: Vec<u32>,
    /// Copies of the server behind nginx, balanced as one upstream.
    #[serde(default)]
    pub instances: Vec<u32>,
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSection {
    /// Closed-loop connection counts.
    #[serde(default)]
    pub connections: Vec<usize>,
    /// Per app, closed-loop connection counts that replace `connections`
    /// for that app (seed 001 ran Rails at 10 clients only):
    /// `app_connections = { hello = [10, 100] }`.
    #[serde(default)]
    pub app_connections: BTreeMap<String, Vec<usize>>,
    /// Open-loop rates (requests per second), each with `rate_connections`.
    #[serde(default)]
    pub rates: Vec<f64>,
    #[serde(default = "default_rate_connections")]
    pub rate_connections: usize,
    #[serde(default = "default_duration")]
    pub duration: String,
    #[serde(default = "default_warmup")]
    pub warmup: String,
    /// End the warm-up once throughput is steady (3 s within 5%);
    /// `warmup` is then its ceiling.
    #[serde(default)]
    pub warmup_until_steady: bool,
    #[serde(default = "default_timeout")]
    pub timeout: String,
    #[serde(default = "yes")]
    pub keep_alive: bool,
    #[serde(default = "one_usize")]
    pub threads: usize,
    /// A record file (rackbench/record-v1, relative to the plan) whose
    /// requests are every trial's load, sent open loop at their recorded
    /// offsets over `rate_connections` connections. It is the load shape:
    /// no `connections` or `rates` beside it.
    #[serde(default)]
    pub replay: Option<String>,
    /// Divide the recorded offsets by this (2 = twice as fast).
    #[serde(default = "one_f64")]
    pub replay_speed: f64,
    /// Repeat the record until the trial's `duration` ends; without it a
    /// trial sends the record once.
    #[serde(default)]
    pub replay_loop: bool,
    /// How late an open loop (rates, a replay, a rate search) may send a
    /// request so that those due together go out on one wake-up, e.g.
    /// "2ms" (`rackbench load --slack`). Latency still counts from each
    /// due time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<String>,
}

impl Default for LoadSection {
    fn default() -> Self {
        LoadSection {
            connections: Vec::new(),
            app_connections: BTreeMap::new(),
            rates: Vec::new(),
            rate_connections: default_rate_connections(),
            duration: default_duration(),
            warmup: default_warmup(),
            warmup_until_steady: false,
            timeout: default_timeout(),
            keep_alive: true,
            threads: 1,
            replay: None,
            replay_speed: 1.0,
            replay_loop: false,
            slack: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakpointSection {
    /// "connections" (closed loop) or "rate" (open loop).
    #[serde(default = "default_mode")]
    pub mode: String,
    #[serde(default = "default_start")]
    pub start: f64,
    #[serde(default = "default_max")]
    pub max: f64,
    #[serde(default = "default_growth")]
    pub growth: f64,
    /// e.g. 0.05 for 5%.
    #[serde(default = "default_resolution")]
    pub resolution: f64,
    #[serde(default = "default_step")]
    pub step_duration: String,
    /// While searching, try each level this long and confirm only the
    /// level found with a full step; "0s" runs every step in full.
    #[serde(default = "default_probe")]
    pub probe: String,
    /// A latency ceiling such as "p99=200ms".
    #[serde(default)]
    pub slo: Option<String>,
    /// Also run the plan's fixed load shapes.
    #[serde(default)]
    pub and_fixed_loads: bool,
}

fn one() -> u32 {
    1
}
fn one_f64() -> f64 {
    1.0
}
fn one_usize() -> usize {
    1
}
fn one_list() -> Vec<u32> {
    vec![1]
}
fn yes() -> bool {
    true
}
fn default_keepalive_list() -> Vec<Keepalive> {
    vec![Keepalive(DEFAULT_KEEPALIVE)]
}
fn default_http_list() -> Vec<HttpVersion> {
    vec![HttpVersion::default()]
}
fn direct() -> Vec<String> {
    vec!["none".into()]
}
fn default_rate_connections() -> usize {
    100
}
fn default_duration() -> String {
    "10s".into()
}
fn default_warmup() -> String {
    "2s".into()
}
fn default_timeout() -> String {
    "10s".into()
}
fn default_mode() -> String {
    "connections".into()
}
fn default_start() -> f64 {
    100.0
}
fn default_max() -> f64 {
    5000.0
}
fn default_growth() -> f64 {
    3.0
}
fn default_resolution() -> f64 {
    0.05
}
fn default_step() -> String {
    "5s".into()
}
fn default_probe() -> String {
    "500ms".into()
}

/// The expanded plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Expanded {
    pub trials: Vec<PlannedTrial>,
    /// Combinations left out, with the reason.
    pub skipped: Vec<String>,
    pub duration: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    /// `[load] slack` (zero without it); applies to open-loop trials only.
    #[serde(default)]
    pub slack: Duration,
    /// `[load] replay`, read and rendered once for every trial.
    #[serde(skip)]
    pub replay: Option<std::sync::Arc<crate::load::schedule::Schedule>>,
}

/// A duration knob, or an error at its line naming the field.
fn duration_at(
    field: &str,
    v: &str,
    at: &impl Fn(&str, String) -> PlanError,
) -> Result<Duration, PlanError> {
    crate::units::duration(v).map_err(|e| at(&format!("{field} ="), format!("{field}: {e}")))
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(1, |i| i + 1)
}

pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl Plan {
    pub fn parse(text: &str, file: &str) -> Result<Plan, PlanError> {
        let mut plan: Plan = toml::from_str(text).map_err(|e| PlanError::Invalid {
            file: file.to_string(),
            message: e.to_string(),
        })?;
        for (name, spec) in plan.server_defs.iter_mut() {
            spec.name = name.clone();
            spec.check_listens().map_err(|message| PlanError::At {
                file: file.to_string(),
                line: line_of(text, &format!("server_defs.{name}")),
                message,
            })?;
        }
        if let Some(m) = &plan.primary_metric {
            crate::stats::compare::check_metric("primary_metric", m).map_err(|message| {
                PlanError::At {
                    file: file.to_string(),
                    line: line_of(text, "primary_metric"),
                    message,
                }
            })?;
        }
        plan.apply_sweep(text, file)?;
        Ok(plan)
    }

    pub fn load(path: &std::path::Path) -> Result<(Plan, String), PlanError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| PlanError::Read {
            file: file.clone(),
            source: e,
        })?;
        Ok((Plan::parse(&text, &file)?, text))
    }

    /// Checks everything that can be checked without starting anything and
    /// expands the matrix. Repeats are interleaved (A B C A B C) so drift
    /// over the run hits every variant alike.
    ///
    /// The steps, in order: check the plan's knobs (times, apps, load
    /// shape, fronts, break point), resolve the servers and their
    /// variants, build the load shapes, expand the matrix of trials with
    /// its skips, then number the repeats.
    pub fn expand(
        &self,
        text: &str,
        file: &str,
        registry: &Registry,
    ) -> Result<Expanded, PlanError> {
        let at = |needle: &str, message: String| PlanError::At {
            file: file.to_string(),
            line: line_of(text, needle),
            message,
        };
        let duration = duration_at("duration", &self.load.duration, &at)?;
        let warmup = duration_at("warmup", &self.load.warmup, &at)?;
        let timeout = duration_at("timeout", &self.load.timeout, &at)?;
        if duration.is_zero() {
            return Err(at(
                "duration",
                "duration must be longer than zero, e.g. \"10s\"".into(),
            ));
        }
        if self.repeats == 0 {
            return Err(at("repeats", "repeats must be at least 1".into()));
        }
        self.check_apps(&at)?;
        let replay = self.check_load(file, &at)?;
        let slack = self.slack(&at)?;
        self.check_fronts(&at)?;
        self.check_breakpoint(&at)?;

        let (registry, entries) = self.server_entries(registry, &at)?;
        let shapes = self.shapes(replay.is_some());
        let mut skipped = Vec::new();
        let combos = self.expand_matrix(&registry, &entries, &shapes, &mut skipped, &at)?;
        // A reason found once per app or front is listed once.
        let mut seen = std::collections::HashSet::new();
        skipped.retain(|s| seen.insert(s.clone()));
        self.check_sweep_fixed(&combos)
            .map_err(|m| at("[sweep]", m))?;
        Ok(Expanded {
            trials: self.repeated(&combos),
            skipped,
            duration,
            warmup,
            timeout,
            slack,
            replay,
        })
    }

    /// `[load] slack`: a duration, and only where some trial runs an open
    /// loop (a closed loop sends each request when the last is answered).
    fn slack(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<Duration, PlanError> {
        let Some(text) = &self.load.slack else {
            return Ok(Duration::ZERO);
        };
        let slack = duration_at("slack", text, at)?;
        let rate_search = self.breakpoint.as_ref().is_some_and(|b| b.mode == "rate");
        let open = !self.load.rates.is_empty() || self.load.replay.is_some() || rate_search;
        if !slack.is_zero() && !open {
            return Err(at(
                "slack",
                "slack applies to an open loop: add rates = [...] under [load], a replay, \
                 or [breakpoint] mode = \"rate\""
                    .into(),
            ));
        }
        Ok(slack)
    }

    /// Apps: at least one, each known, and `app_connections` only for
    /// apps of the plan, with counts of at least 1.
    fn check_apps(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        if self.apps.is_empty() {
            return Err(at(
                "apps",
                "apps is empty: name at least one, e.g. apps = [\"hello\"]".into(),
            ));
        }
        for app in &self.apps {
            AppSpec::resolve(app).map_err(|e| at(&format!("\"{app}\""), e.to_string()))?;
        }
        for (app, conns) in &self.load.app_connections {
            if !self.apps.contains(app) {
                return Err(at(
                    "app_connections",
                    format!("app_connections names \"{app}\", which is not in apps: add it to apps or drop it"),
                ));
            }
            if conns.is_empty() || conns.contains(&0) {
                return Err(at(
                    "app_connections",
                    format!(
                        "app_connections for \"{app}\": give one or more counts, each at least 1"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The load: some shape to run (connections, rates, a replay, a
    /// break-point search or every app's own connections), each count
    /// and rate positive. Returns the replay's schedule, if any.
    fn check_load(
        &self,
        file: &str,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<Option<std::sync::Arc<crate::load::schedule::Schedule>>, PlanError> {
        let every_app_has_its_own = self
            .apps
            .iter()
            .all(|a| self.load.app_connections.contains_key(a));
        let replay = self.replay_schedule(file, at)?;
        if self.load.connections.is_empty()
            && self.load.rates.is_empty()
            && replay.is_none()
            && self.breakpoint.is_none()
            && !every_app_has_its_own
        {
            return Err(at(
                "[load]",
                "no load shape: set connections = [10, 50] or rates = [500] under [load]".into(),
            ));
        }
        if let Some(c) = self.load.connections.iter().find(|&&c| c == 0) {
            return Err(at(
                "connections",
                format!("connections {c}: each must be at least 1"),
            ));
        }
        if let Some(r) = self
            .load
            .rates
            .iter()
            .find(|r| !(r.is_finite() && **r > 0.0))
        {
            return Err(at(
                "rates",
                format!("rate {r}: each must be a positive number of requests per second"),
            ));
        }
        Ok(replay)
    }

    /// Fronts: `behind` is "none" or "nginx", each nginx knob list has a
    /// value, and no server asks for zero instances.
    fn check_fronts(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        for b in &self.behind {
            if b != "none" && b != "nginx" {
                return Err(at(
                    &format!("\"{b}\""),
                    format!("behind = \"{b}\": use \"none\" (direct) or \"nginx\""),
                ));
            }
        }
        if self.nginx_keepalive.is_empty() || self.nginx_http.is_empty() {
            return Err(at(
                "nginx_",
                "nginx_keepalive and nginx_http need at least one value each, e.g. nginx_keepalive = [\"off\"] and nginx_http = [\"1.0\"]".into(),
            ));
        }
        if let Some(e) = self.server.iter().find(|e| e.instances.contains(&0)) {
            return Err(at(
                "instances",
                format!("server {}: instances 0: each must be at least 1", e.name),
            ));
        }
        Ok(())
    }

    /// `[breakpoint]`, if any: a known mode, sane search knobs, valid
    /// step and probe durations and SLO.
    fn check_breakpoint(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        let Some(bp) = &self.breakpoint else {
            return Ok(());
        };
        if bp.mode != "connections" && bp.mode != "rate" {
            return Err(at(
                "mode",
                format!(
                    "breakpoint mode \"{}\": use \"connections\" or \"rate\"",
                    bp.mode
                ),
            ));
        }
        if !crate::search::knobs_are_sane(bp.start, bp.max, bp.growth, bp.resolution) {
            return Err(at(
                "[breakpoint]",
                "breakpoint needs start > 0, max >= start, growth > 1 and resolution > 0".into(),
            ));
        }
        duration_at("step_duration", &bp.step_duration, at)?;
        duration_at("probe", &bp.probe, at)?;
        if let Some(slo) = &bp.slo {
            crate::search::parse_slo(slo).map_err(|e| at("slo", e))?;
        }
        Ok(())
    }

    /// The registry with the plan's own `[server_defs]` in it, and which
    /// servers to run, with which variants ("installed" names every
    /// server of the registry).
    fn server_entries(
        &self,
        registry: &Registry,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<(Registry, Vec<ServerEntry>), PlanError> {
        let mut registry = registry.clone();
        for spec in self.server_defs.values() {
            registry.servers.retain(|s| s.name != spec.name);
            registry.servers.push(spec.clone());
        }
        let mut entries: Vec<ServerEntry> = Vec::new();
        for name in &self.servers {
            if name == "installed" {
                for s in &registry.servers {
                    entries.push(ServerEntry::plain(&s.name));
                }
            } else {
                entries.push(ServerEntry::plain(name));
            }
        }
        entries.extend(self.server.iter().cloned());
        if entries.is_empty() {
            return Err(at("servers", "no servers: set servers = [\"installed\"] or name some, e.g. servers = [\"puma\", \"unicorn\"]".into()));
        }
        Ok((registry, entries))
    }

    /// The load shapes: each connection count, each rate (at
    /// `rate_connections`), the replay; a break-point-only plan gets one
    /// placeholder so its searches have their server/app/topology groups
    /// (the runner does not run it as a fixed trial).
    fn shapes(&self, has_replay: bool) -> Vec<Shape> {
        let mut shapes: Vec<Shape> = self
            .load
            .connections
            .iter()
            .map(|&c| Shape {
                connections: c,
                rate: None,
            })
            .collect();
        shapes.extend(self.load.rates.iter().map(|&r| Shape {
            connections: self.load.rate_connections,
            rate: Some(r),
        }));
        if has_replay {
            shapes.push(Shape {
                connections: self.load.rate_connections,
                rate: None,
            });
        }
        if shapes.is_empty() {
            let start = self.breakpoint.as_ref().map_or(1.0, |b| b.start);
            shapes.push(Shape {
                connections: start.max(1.0) as usize,
                rate: None,
            });
        }
        shapes
    }

    /// The matrix, once (before repeats): each server entry that is
    /// installed, in each of its variants, across apps, fronts and
    /// shapes. A server that is not installed is skipped (silently when
    /// it came only from "installed"); an unknown server or setting is
    /// an error.
    fn expand_matrix(
        &self,
        registry: &Registry,
        entries: &[ServerEntry],
        shapes: &[Shape],
        skipped: &mut Vec<String>,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<Vec<PlannedTrial>, PlanError> {
        let mut combos: Vec<PlannedTrial> = Vec::new();
        let only_installed = self.servers.iter().any(|s| s == "installed");
        for e in entries {
            let spec = registry
                .get(&e.name)
                .map_err(|err| at(&format!("\"{}\"", e.name), err.to_string()))?;
            if !spec.installed() {
                if only_installed && !self.servers.contains(&e.name) {
                    continue;
                }
                skipped.push(format!(
                    "{}: not installed (needs {})",
                    e.name,
                    spec.requires.join(", ")
                ));
                continue;
            }
            if let Some(Missing::Setting(key)) = spec.missing(None, None, e.settings.keys()) {
                return Err(at(
                    &key,
                    format!(
                        "server {} has no setting '{key}'; its settings: {}",
                        e.name,
                        spec.setting_names()
                    ),
                ));
            }
            self.expand_variants(e, spec, shapes, &mut combos, skipped);
        }
        Ok(combos)
    }

    /// One server entry's variants (workers × threads × instances), each
    /// across apps, fronts and shapes; a variant the server cannot run
    /// (workers for a one-process server, threads without a pool) is
    /// skipped.
    fn expand_variants(
        &self,
        e: &ServerEntry,
        spec: &ServerSpec,
        shapes: &[Shape],
        combos: &mut Vec<PlannedTrial>,
        skipped: &mut Vec<String>,
    ) {
        let each = |v: &[u32]| -> Vec<Option<u32>> {
            if v.is_empty() {
                vec![None]
            } else {
                v.iter().map(|&x| Some(x)).collect()
            }
        };
        let (workers, threads, instances) =
            (each(&e.workers), each(&e.threads), each(&e.instances));
        for &w in &workers {
            for &t in &threads {
                match spec.missing(w, t, []) {
                    Some(Missing::Processes(w)) => {
                        skipped.push(format!("{} with {w} workers: it runs one process", e.name));
                        continue;
                    }
                    Some(Missing::Threads(t)) => {
                        skipped.push(format!(
                            "{} with {t} threads: it has no thread pool",
                            e.name
                        ));
                        continue;
                    }
                    _ => {}
                }
                for &n in &instances {
                    let mut env = self.env.clone();
                    env.extend(e.env.clone());
                    let base = PlannedTrial {
                        id: String::new(),
                        group: String::new(),
                        server: e.name.clone(),
                        variant: e.variant(w, t, n),
                        workers: w,
                        threads: t,
                        settings: e.settings.clone(),
                        env,
                        app: String::new(),
                        behind: String::new(),
                        nginx_workers: 0,
                        nginx_keepalive: DEFAULT_KEEPALIVE,
                        nginx_http: HttpVersion::default(),
                        instances: n,
                        shape: shapes[0],
                        repeat: 0,
                        spec: Some(spec.clone()),
                    };
                    self.expand_fronts(&base, shapes, combos, skipped);
                }
            }
        }
    }

    /// Every combination `repeats` times, interleaved (A B C A B C), with
    /// its id: the group and the repeat.
    fn repeated(&self, combos: &[PlannedTrial]) -> Vec<PlannedTrial> {
        let mut trials = Vec::new();
        for r in 1..=self.repeats {
            for c in combos {
                let mut t = c.clone();
                t.repeat = r;
                t.id = format!("{}__rep{r}", t.group);
                trials.push(t);
            }
        }
        trials
    }

    /// Reads `[load] replay` (relative to the plan file) into a schedule;
    /// a missing file or a bad line is an error at the plan's line.
    fn replay_schedule(
        &self,
        file: &str,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<Option<std::sync::Arc<crate::load::schedule::Schedule>>, PlanError> {
        use crate::load::schedule::{read_record, Schedule};
        let Some(name) = &self.load.replay else {
            return Ok(None);
        };
        if !self.load.connections.is_empty() || !self.load.rates.is_empty() {
            return Err(at(
                "replay =",
                "replay is the load shape: drop connections and rates from [load] \
                 (rate_connections sets the replay's connections)"
                    .into(),
            ));
        }
        if self.load.rate_connections == 0 {
            return Err(at(
                "rate_connections",
                "rate_connections must be at least 1".into(),
            ));
        }
        if self.breakpoint.is_some() {
            return Err(at(
                "replay =",
                "replay and [breakpoint] do not mix (a search sets its own rates or \
                 connections): run them as two plans"
                    .into(),
            ));
        }
        let path = std::path::Path::new(file)
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(name);
        let f = std::fs::File::open(&path).map_err(|e| {
            at(
                "replay =",
                format!(
                    "replay = \"{name}\": cannot open {} ({e}): give a record file's path, \
                     relative to the plan",
                    path.display()
                ),
            )
        })?;
        let entries = read_record(
            std::io::BufReader::with_capacity(1 << 20, f),
            &path.display().to_string(),
        )
        .map_err(|e| at("replay =", format!("replay = \"{name}\": {e}")))?;
        // The Host a lab server sees; the port is the trial's.
        let url = crate::load::Url::parse("http://localhost/").expect("static URL");
        let schedule = Schedule::build(
            entries,
            &url,
            self.load.replay_speed,
            self.load.replay_loop,
            self.load.keep_alive,
        )
        .map_err(|e| at("replay =", format!("replay = \"{name}\": {e}")))?;
        Ok(Some(std::sync::Arc::new(schedule)))
    }
}

impl Plan {
    /// One server variant across apps, fronts (direct, or nginx with each
    /// of its knobs) and load shapes. Combinations that cannot work are
    /// listed in `skipped`: several instances with nobody to balance them,
    /// keep-alive over HTTP/1.0.
    fn expand_fronts(
        &self,
        base: &PlannedTrial,
        shapes: &[Shape],
        combos: &mut Vec<PlannedTrial>,
        skipped: &mut Vec<String>,
    ) {
        for app in &self.apps {
            let shapes = self.shapes_of(app, shapes);
            for behind in &self.behind {
                let nginx = behind == "nginx";
                if !nginx && base.instances.is_some_and(|n| n > 1) {
                    skipped.push(format!(
                        "{} direct: several instances need nginx in front",
                        base.variant
                    ));
                    continue;
                }
                // (workers, keep-alive, HTTP version) of each front.
                let mut fronts = Vec::new();
                if nginx {
                    for &nw in &self.nginx_workers {
                        for &Keepalive(ka) in &self.nginx_keepalive {
                            for &http in &self.nginx_http {
                                match front::conflict(ka, http) {
                                    Some(why) => skipped.push(format!(
                                        "{} behind {}: {why}",
                                        base.variant,
                                        front::label(nw, ka, http)
                                    )),
                                    None => fronts.push((nw, ka, http)),
                                }
                            }
                        }
                    }
                } else {
                    fronts.push((0, DEFAULT_KEEPALIVE, HttpVersion::default()));
                }
                for &(nw, ka, http) in &fronts {
                    for shape in &shapes {
                        let topo = if nginx {
                            format!("nginx{nw}{}", front::slug(ka, http))
                        } else {
                            "direct".into()
                        };
                        let load = match shape.rate {
                            Some(r) => format!("r{r}"),
                            None => format!("c{}", shape.connections),
                        };
                        let mut t = base.clone();
                        t.group = slug(&format!("{}__{app}__{topo}__{load}", base.variant));
                        t.app = app.clone();
                        t.behind = behind.clone();
                        t.nginx_workers = nw;
                        t.nginx_keepalive = ka;
                        t.nginx_http = http;
                        t.shape = *shape;
                        combos.push(t);
                    }
                }
            }
        }
    }

    /// The load shapes of one app: its own connection counts, if the plan
    /// gives it some, in place of the plan's; rates as for every app.
    fn shapes_of(&self, app: &str, shapes: &[Shape]) -> Vec<Shape> {
        let Some(conns) = self.load.app_connections.get(app) else {
            return shapes.to_vec();
        };
        let mut own: Vec<Shape> = conns
            .iter()
            .map(|&c| Shape {
                connections: c,
                rate: None,
            })
            .collect();
        own.extend(shapes.iter().filter(|s| s.rate.is_some()));
        own
    }
}

impl ServerEntry {
    fn plain(name: &str) -> ServerEntry {
        ServerEntry {
            name: name.to_string(),
            label: None,
            workers: Vec::new(),
            threads: Vec::new(),
            instances: Vec::new(),
            settings: BTreeMap::new(),
            env: BTreeMap::new(),
        }
    }

    /// The variant's name: the entry's label, or the server's name with
    /// its workers, threads, instances and settings.
    fn variant(&self, w: Option<u32>, t: Option<u32>, n: Option<u32>) -> String {
        let mut variant = self.label.clone().unwrap_or_else(|| self.name.clone());
        if self.label.is_none() {
            if let Some(w) = w {
                variant.push_str(&format!("-w{w}"));
            }
            if let Some(t) = t {
                variant.push_str(&format!("-t{t}"));
            }
            if let Some(n) = n {
                variant.push_str(&format!("-x{n}"));
            }
            for (k, v) in &self.settings {
                variant.push_str(&format!("-{k}={v}"));
            }
        }
        variant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(text: &str) -> Result<Expanded, PlanError> {
        Plan::parse(text, "t.toml")?.expand(text, "t.toml", &Registry::builtin())
    }

    #[test]
    fn repeats_are_interleaved_and_impossible_combinations_skipped() {
        let text = r#"
name = "t"
repeats = 2
apps = ["hello"]
[[server]]
name = "unicorn"
workers = [1, 2]
threads = [1, 4]
[load]
connections = [10]
"#;
        let e = expand(text).unwrap();
        let how = "apt-get install unicorn, or scripts/deps.sh test";
        if !crate::require::require("unicorn", !e.trials.is_empty(), how) {
            return;
        }
        let groups: Vec<&str> = e.trials.iter().map(|t| t.group.as_str()).collect();
        assert_eq!(groups.len(), 4, "{groups:?}");
        assert_eq!(groups[0], groups[2], "A B A B, not A A B B");
        assert_ne!(groups[0], groups[1]);
        assert!(
            e.skipped.iter().any(|s| s.contains("4 threads")),
            "{:?}",
            e.skipped
        );
        assert!(e
            .trials
            .iter()
            .all(|t| t.id.ends_with(&format!("rep{}", t.repeat))));
    }

    #[test]
    fn checks_come_as_a_list_or_a_table_and_bad_ones_name_the_line() {
        let list = "name = \"t\"\napps = [\"hello\"]\nchecks = [\"p99<200ms\", \"errors<1%\"]\n";
        let table =
            "name = \"t\"\napps = [\"hello\"]\n[checks]\np99 = \"<200ms\"\nerrors = \"<1%\"\n";
        for text in [list, table] {
            let plan = Plan::parse(text, "t.toml").unwrap();
            let got: Vec<String> = plan.checks.iter().map(|c| c.to_string()).collect();
            assert!(
                got.contains(&"p99<200ms".to_string()) && got.contains(&"errors<1%".to_string()),
                "{got:?}"
            );
        }
        let bad = "name = \"t\"\napps = [\"hello\"]\nchecks = [\"p99<200\"]\n";
        let err = Plan::parse(bad, "t.toml").unwrap_err().to_string();
        assert!(
            err.starts_with("t.toml") && err.contains("line 3") && err.contains("unit"),
            "{err}"
        );
    }

    #[test]
    fn mistakes_name_the_file_line_and_fix() {
        let cases: &[(&str, &str)] = &[
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"pumma\"]\n[load]\nconnections = [1]\n", "t.toml, line 3: unknown server 'pumma'"),
            ("name = \"t\"\napps = [\"helo\"]\nservers = [\"puma\"]\n[load]\nconnections = [1]\n", "t.toml, line 2"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconections = [1]\n", "unknown field `conections`"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\nprimary_metric = \"speed\"\n[load]\nconnections = [1]\n", "t.toml, line 4: primary_metric \"speed\" is not a metric: use one of throughput, p50"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [1]\nduration = \"5x\"\n", "line 6: duration"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n", "no load shape"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"mine\"]\n[load]\nconnections = [1]\n[server_defs.mine]\ncommand = \"mine {{app}}\"\n", "line 6: server 'mine': its command 'mine {{app}}' never says where to listen"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\nbehind = [\"apache\"]\n[load]\nconnections = [1]\n", "use \"none\" (direct) or \"nginx\""),
        ];
        for (text, want) in cases {
            let err = expand(text).unwrap_err().to_string();
            assert!(err.contains(want), "want '{want}' in: {err}");
            assert!(err.starts_with("t.toml"), "{err}");
        }
    }

    #[test]
    fn a_slack_needs_an_open_loop_and_reaches_only_its_trials() {
        let base =
            "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [4]\n";
        let err = expand(&format!("{base}slack = \"2ms\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.toml, line 6: slack applies to an open loop: add rates"),
            "{err}"
        );
        let err = expand(&format!("{base}rates = [100]\nslack = \"2 ms\"\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 7: slack"), "{err}");
        let e = expand(&format!("{base}rates = [100]\nslack = \"2ms\"\n")).unwrap();
        assert_eq!(e.slack, Duration::from_millis(2));
        let search = "name = \"b\"\nservers = [\"puma\"]\napps = [\"hello\"]\n[load]\nslack = \"1ms\"\n[breakpoint]\nmode = \"rate\"\n";
        assert_eq!(expand(search).unwrap().slack, Duration::from_millis(1));
        assert_eq!(expand(base).unwrap().slack, Duration::ZERO);
    }

    #[test]
    fn a_replay_is_the_only_load_shape_and_no_search() {
        let base = "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nreplay = \"day.jsonl\"\n";
        let err = expand(&format!("{base}rates = [5]\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.toml, line 5: replay is the load shape"),
            "{err}"
        );
        let err = expand(&format!("{base}[breakpoint]\nmode = \"rate\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.toml, line 5: replay and [breakpoint] do not mix"),
            "{err}"
        );
        let err = expand(base).unwrap_err().to_string();
        assert!(
            err.contains("line 5: replay = \"day.jsonl\": cannot open"),
            "{err}"
        );
    }

    #[test]
    fn a_break_point_only_plan_has_one_search_per_server_and_app() {
        let text = "name = \"b\"\nservers = [\"puma\", \"thin\"]\napps = [\"hello\", \"ip\"]\n[breakpoint]\nstart = 50\n";
        let e = expand(text).unwrap();
        let installed = ["puma", "thin"]
            .iter()
            .filter(|n| {
                let there = Registry::builtin().get(n).unwrap().installed();
                crate::require::require(n, there, "apt-get install it, or scripts/deps.sh test")
            })
            .count();
        assert_eq!(runner::breakpoint_groups(&e).len(), installed * 2);
        assert!(e.trials.iter().all(|t| t.shape.connections == 50));
    }

    /// Every built-in server counts as installed, so the seeds' matrices
    /// are checked on any machine (the runner's and sweep's tests too).
    pub(super) fn all_installed() -> Registry {
        let mut reg = Registry::builtin();
        for s in &mut reg.servers {
            s.requires.clear();
        }
        reg
    }

    fn shipped(name: &str) -> Expanded {
        let file = format!("{}/plans/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&file).unwrap();
        Plan::parse(&text, &file)
            .unwrap()
            .expand(&text, &file, &all_installed())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn laas_2010_runs_seed_000s_topology() {
        let e = shipped("laas-2010.toml");
        let groups = runner::breakpoint_groups(&e);
        let by = |server: &str| {
            groups
                .iter()
                .find(|t| t.server == server)
                .unwrap_or_else(|| panic!("no {server} in {groups:#?}"))
        };
        assert_eq!(groups.len(), 3, "{groups:#?}");
        for t in &groups {
            assert_eq!(t.app, "ip");
            assert_eq!(t.behind, "nginx");
            assert_eq!(t.nginx_keepalive, 0, "{}: no upstream keep-alive", t.id);
            assert_eq!(t.nginx_http, HttpVersion::V1_0, "{}", t.id);
            assert_eq!(t.front(), "nginx×1 http/1.0 keepalive off");
        }
        let thin = by("thin");
        assert_eq!(thin.instances, Some(4), "four thin on four sockets");
        let unicorn = by("unicorn");
        assert_eq!(unicorn.workers, Some(4));
        assert_eq!(unicorn.settings["backlog"], "512");
        let passenger = by("passenger");
        assert_eq!(passenger.settings["min_instances"], "4");
        assert_eq!(passenger.workers, Some(6), "passenger's default pool");
    }

    #[test]
    fn speedmetal_2011_runs_seed_001s_whole_study() {
        let e = shipped("speedmetal-2011.toml");
        let servers: std::collections::BTreeSet<&str> =
            e.trials.iter().map(|t| t.server.as_str()).collect();
        assert!(servers.len() >= 5, "{servers:?}");
        for server in servers {
            let mut got: Vec<(&str, usize)> = e
                .trials
                .iter()
                .filter(|t| t.server == server)
                .map(|t| (t.app.as_str(), t.shape.connections))
                .collect();
            got.sort();
            assert_eq!(
                got,
                [
                    ("hello", 10),
                    ("hello", 100),
                    ("rails", 10),
                    ("rails-fib", 10),
                    ("sleep", 100),
                    ("sleep", 250),
                    ("sleep", 500),
                ],
                "{server}"
            );
        }
    }

    #[test]
    fn nginx_knobs_expand_and_impossible_fronts_are_skipped() {
        let text = r#"
name = "k"
apps = ["hello", "ip"]
behind = ["none", "nginx"]
nginx_keepalive = ["off", 16]
nginx_http = ["1.0", "1.1"]
[[server]]
name = "thin"
instances = [1, 3]
[load]
connections = [10]
"#;
        let e = Plan::parse(text, "k.toml")
            .unwrap()
            .expand(text, "k.toml", &all_installed())
            .unwrap();
        let fronts: Vec<(String, String)> = e
            .trials
            .iter()
            .filter(|t| t.app == "hello")
            .map(|t| (t.variant.clone(), t.front()))
            .collect();
        let want = [
            ("thin-x1", "direct"),
            ("thin-x1", "nginx×1 http/1.0 keepalive off"),
            ("thin-x1", "nginx×1 keepalive off"),
            ("thin-x1", "nginx×1 keepalive 16"),
            ("thin-x3", "nginx×1 http/1.0 keepalive off"),
            ("thin-x3", "nginx×1 keepalive off"),
            ("thin-x3", "nginx×1 keepalive 16"),
        ];
        assert_eq!(
            fronts,
            want.map(|(a, b)| (a.to_string(), b.to_string())),
            "{fronts:#?}"
        );
        let mut groups: Vec<&str> = e.trials.iter().map(|t| t.group.as_str()).collect();
        groups.dedup();
        assert_eq!(groups.len(), e.trials.len(), "group names must differ");
        let skipped = e.skipped.join("\n");
        assert!(
            skipped.contains("thin-x3 direct: several instances need nginx"),
            "{skipped}"
        );
        // Once each, though both apps meet them.
        assert_eq!(skipped.matches("several instances").count(), 1, "{skipped}");
        assert_eq!(skipped.matches("needs HTTP/1.1").count(), 2, "{skipped}");
        // Without the knobs, group names stay as they were.
        let plain = expand(
            "name = \"p\"\napps = [\"hello\"]\nservers = [\"puma\"]\nbehind = [\"nginx\"]\n[load]\nconnections = [5]\n",
        )
        .unwrap();
        if let Some(t) = plain.trials.first() {
            assert_eq!(t.group, "puma__hello__nginx1__c5");
            assert_eq!(t.front(), "nginx×1");
        }
    }

    #[test]
    fn nginx_knob_and_per_app_load_mistakes_name_the_line_and_fix() {
        let head = "name = \"t\"\napps = [\"hello\"]\nbehind = [\"nginx\"]\n";
        let cases: &[(&str, &str)] = &[
            ("nginx_keepalive = [\"on\"]\nservers = [\"thin\"]\n[load]\nconnections = [1]\n", "use off or a pool size"),
            ("nginx_http = [\"2\"]\nservers = [\"thin\"]\n[load]\nconnections = [1]\n", "use 1.0 or 1.1"),
            ("[[server]]\nname = \"thin\"\ninstances = [0]\n[load]\nconnections = [1]\n", "line 6: server thin: instances 0"),
            ("servers = [\"thin\"]\n[load]\nconnections = [1]\napp_connections = { sleep = [5] }\n", "line 7: app_connections names \"sleep\", which is not in apps"),
            ("servers = [\"thin\"]\n[load]\napp_connections = { hello = [] }\n", "give one or more counts"),
        ];
        for (tail, want) in cases {
            let text = format!("{head}{tail}");
            let err = Plan::parse(&text, "t.toml")
                .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "want '{want}' in: {err}");
            assert!(err.starts_with("t.toml"), "{err}");
        }
    }

    #[test]
    fn the_default_plan_and_the_shipped_plans_are_valid() {
        let reg = Registry::builtin();
        let mut plans = vec![("default".to_string(), DEFAULT_PLAN.to_string())];
        for e in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/plans"))
            .unwrap()
            .flatten()
        {
            plans.push((
                e.path().display().to_string(),
                std::fs::read_to_string(e.path()).unwrap(),
            ));
        }
        for (file, text) in plans {
            let plan = Plan::parse(&text, &file).unwrap_or_else(|e| panic!("{e}"));
            plan.expand(&text, &file, &reg)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// The default plan is the first study a user sees (`make run`): every
    /// row must be a result, not a lower bound or a small-sample mark, and
    /// the whole run must leave `make run` within five minutes of a fresh
    /// clone (issue 25). This checks the plan's shape against a model of
    /// each app's cost, not by running it: each app's wait and CPU per
    /// request (upper bounds measured on every Debian server here,
    /// bench/runs/2026-11-26-make-run), each server's concurrency from its
    /// adapter, one CPU for the server (the default pinning on two cores).
    /// Putting seed 001's 100 ms sleep back, or shortening the window,
    /// fails here.
    #[test]
    fn the_default_plan_gives_every_row_enough_answers_within_make_runs_budget() {
        use crate::load::caveats::{BEYOND, THIN_THROUGHPUT};
        // (wait, CPU) per request in seconds; the CPU is the slowest
        // server's (webrick), the wait the app's own.
        let cost = |app: &str| -> (f64, f64) {
            match app {
                "hello" => (0.0, 0.000_25),
                "primes" => (0.0, 0.000_35),
                // thin, one request at a time: 1.13 ms a request.
                "sleep-1ms" => (0.001, 0.000_2),
                other => panic!("the default plan's app {other} has no cost in this model: add it"),
            }
        };
        // A p99 needs BEYOND responses past it; the margin covers most of
        // this machine's run-to-run spread.
        let needed = (BEYOND * 100.0).max(THIN_THROUGHPUT as f64) * 1.2;
        let plan = Plan::parse(DEFAULT_PLAN, "default").unwrap();
        let ex = plan
            .expand(DEFAULT_PLAN, "default", &all_installed())
            .unwrap();
        let window = ex.duration.as_secs_f64();
        for t in &ex.trials {
            let spec = t.spec.as_ref().expect("resolved");
            let conns = t.shape.connections as f64;
            // WEBrick runs a thread per connection (its adapter has no
            // threads knob, which is what `threads = false` says).
            let concurrency = if t.server == "webrick" {
                conns
            } else {
                let w = t.workers.unwrap_or(spec.default_workers).max(1);
                let th = if spec.threads {
                    t.threads.unwrap_or(spec.default_threads)
                } else {
                    1
                };
                f64::from(w * th.max(1)).min(conns)
            };
            let (wait, cpu) = cost(&t.app);
            let rate = (concurrency / (wait + cpu)).min(1.0 / cpu);
            assert!(
                rate * window >= needed,
                "{}: about {:.0} answers in {window} s, a p99 needs {needed:.0}: lengthen the window or lighten the app",
                t.id,
                rate * window
            );
            // No request may wait long enough to end as an unanswered age.
            let worst_latency = conns / rate;
            assert!(
                worst_latency < window / 10.0,
                "{}: latency {worst_latency:.3} s",
                t.id
            );
        }
        // Each trial costs its load plus about 0.75 s of start and stop
        // (72 trials took 197 s with 2 s of load each).
        let per_trial = ex.warmup.as_secs_f64() + window + 0.75;
        let study = ex.trials.len() as f64 * per_trial;
        assert!(
            study <= 170.0,
            "the default study would take about {study:.0} s ({} trials of {per_trial:.2} s): with the build, `make run` passes five minutes; drop trials or shorten windows",
            ex.trials.len()
        );
    }
}
