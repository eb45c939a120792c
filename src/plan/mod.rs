//! Plans: a TOML file naming servers (with variants), apps, load shapes,
//! topologies, environment and repeats; expanded into the list of trials
//! to run, in the order to run them.
//!
//! A plan with a mistake is refused before anything starts, naming the
//! file, the line and the fix. Combinations a server cannot do (threads on
//! unicorn) are skipped and listed, not failed.

pub mod runner;

use crate::lab::apps::AppSpec;
use crate::server::spec::{Registry, ServerSpec};
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
}

impl Default for LoadSection {
    fn default() -> Self {
        LoadSection {
            connections: Vec::new(),
            rates: Vec::new(),
            rate_connections: default_rate_connections(),
            duration: default_duration(),
            warmup: default_warmup(),
            warmup_until_steady: false,
            timeout: default_timeout(),
            keep_alive: true,
            threads: 1,
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
fn one_usize() -> usize {
    1
}
fn one_list() -> Vec<u32> {
    vec![1]
}
fn yes() -> bool {
    true
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
    pub shape: Shape,
    pub repeat: u32,
    #[serde(skip)]
    pub spec: Option<ServerSpec>,
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
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(1, |i| i + 1)
}

fn slug(s: &str) -> String {
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
        let dur = |field: &str, v: &str| {
            crate::units::duration(v)
                .map_err(|e| at(&format!("{field} ="), format!("{field}: {e}")))
        };
        let duration = dur("duration", &self.load.duration)?;
        let warmup = dur("warmup", &self.load.warmup)?;
        let timeout = dur("timeout", &self.load.timeout)?;
        if duration.is_zero() {
            return Err(at(
                "duration",
                "duration must be longer than zero, e.g. \"10s\"".into(),
            ));
        }
        if self.repeats == 0 {
            return Err(at("repeats", "repeats must be at least 1".into()));
        }
        if self.apps.is_empty() {
            return Err(at(
                "apps",
                "apps is empty: name at least one, e.g. apps = [\"hello\"]".into(),
            ));
        }
        for app in &self.apps {
            AppSpec::resolve(app).map_err(|e| at(&format!("\"{app}\""), e.to_string()))?;
        }
        if self.load.connections.is_empty()
            && self.load.rates.is_empty()
            && self.breakpoint.is_none()
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
        for b in &self.behind {
            if b != "none" && b != "nginx" {
                return Err(at(
                    &format!("\"{b}\""),
                    format!("behind = \"{b}\": use \"none\" (direct) or \"nginx\""),
                ));
            }
        }
        if let Some(bp) = &self.breakpoint {
            if bp.mode != "connections" && bp.mode != "rate" {
                return Err(at(
                    "mode",
                    format!(
                        "breakpoint mode \"{}\": use \"connections\" or \"rate\"",
                        bp.mode
                    ),
                ));
            }
            let sane =
                bp.growth > 1.0 && bp.resolution > 0.0 && bp.start > 0.0 && bp.max >= bp.start;
            if !sane {
                return Err(at(
                    "[breakpoint]",
                    "breakpoint needs start > 0, max >= start, growth > 1 and resolution > 0"
                        .into(),
                ));
            }
            dur("step_duration", &bp.step_duration)?;
            dur("probe", &bp.probe)?;
            if let Some(slo) = &bp.slo {
                crate::search::parse_slo(slo).map_err(|e| at("slo", e))?;
            }
        }

        let mut registry = registry.clone();
        for spec in self.server_defs.values() {
            registry.servers.retain(|s| s.name != spec.name);
            registry.servers.push(spec.clone());
        }
        // Which servers, with which variants.
        let mut entries: Vec<ServerEntry> = Vec::new();
        let mut skipped = Vec::new();
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
        // A break-point-only plan: one placeholder shape per combination,
        // so the searches have their server/app/topology groups; the
        // runner does not run these as fixed trials.
        if shapes.is_empty() {
            let start = self.breakpoint.as_ref().map_or(1.0, |b| b.start);
            shapes.push(Shape {
                connections: start.max(1.0) as usize,
                rate: None,
            });
        }

        let mut combos: Vec<PlannedTrial> = Vec::new();
        let only_installed = self.servers.iter().any(|s| s == "installed");
        for e in &entries {
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
            for key in e.settings.keys() {
                if !spec.settings.contains_key(key) {
                    return Err(at(
                        key,
                        format!(
                            "server {} has no setting '{key}'; its settings: {}",
                            e.name,
                            spec.settings.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
            let workers: Vec<Option<u32>> = if e.workers.is_empty() {
                vec![None]
            } else {
                e.workers.iter().map(|&w| Some(w)).collect()
            };
            let threads: Vec<Option<u32>> = if e.threads.is_empty() {
                vec![None]
            } else {
                e.threads.iter().map(|&t| Some(t)).collect()
            };
            for &w in &workers {
                for &t in &threads {
                    if w.is_some_and(|w| w > 1) && !spec.processes {
                        skipped.push(format!(
                            "{} with {} workers: it runs one process",
                            e.name,
                            w.unwrap_or(0)
                        ));
                        continue;
                    }
                    if t.is_some_and(|t| t > 1) && !spec.threads {
                        skipped.push(format!(
                            "{} with {} threads: it has no thread pool",
                            e.name,
                            t.unwrap_or(0)
                        ));
                        continue;
                    }
                    let mut variant = e.label.clone().unwrap_or_else(|| e.name.clone());
                    if e.label.is_none() {
                        if let Some(w) = w {
                            variant.push_str(&format!("-w{w}"));
                        }
                        if let Some(t) = t {
                            variant.push_str(&format!("-t{t}"));
                        }
                        for (k, v) in &e.settings {
                            variant.push_str(&format!("-{k}={v}"));
                        }
                    }
                    for app in &self.apps {
                        for behind in &self.behind {
                            let nginx_levels: Vec<u32> = if behind == "nginx" {
                                self.nginx_workers.clone()
                            } else {
                                vec![0]
                            };
                            for &nw in &nginx_levels {
                                for shape in &shapes {
                                    let mut env = self.env.clone();
                                    env.extend(e.env.clone());
                                    let topo = if behind == "nginx" {
                                        format!("nginx{nw}")
                                    } else {
                                        "direct".into()
                                    };
                                    let load = match shape.rate {
                                        Some(r) => format!("r{r}"),
                                        None => format!("c{}", shape.connections),
                                    };
                                    let group = slug(&format!("{variant}__{app}__{topo}__{load}"));
                                    combos.push(PlannedTrial {
                                        id: String::new(),
                                        group,
                                        server: e.name.clone(),
                                        variant: variant.clone(),
                                        workers: w,
                                        threads: t,
                                        settings: e.settings.clone(),
                                        env,
                                        app: app.clone(),
                                        behind: behind.clone(),
                                        nginx_workers: nw,
                                        shape: *shape,
                                        repeat: 0,
                                        spec: Some(spec.clone()),
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        let mut trials = Vec::new();
        for r in 1..=self.repeats {
            for c in &combos {
                let mut t = c.clone();
                t.repeat = r;
                t.id = format!("{}__rep{r}", t.group);
                trials.push(t);
            }
        }
        Ok(Expanded {
            trials,
            skipped,
            duration,
            warmup,
            timeout,
        })
    }
}

impl ServerEntry {
    fn plain(name: &str) -> ServerEntry {
        ServerEntry {
            name: name.to_string(),
            label: None,
            workers: Vec::new(),
            threads: Vec::new(),
            settings: BTreeMap::new(),
            env: BTreeMap::new(),
        }
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
}
