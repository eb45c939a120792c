//! The plan file's schema: the serde types a TOML plan is read into,
//! with their defaults. It only describes; it never checks a value
//! against another (plan::check) nor expands anything (plan::expand).

use crate::lab::front::{HttpVersion, Keepalive, DEFAULT_KEEPALIVE};
use crate::server::spec::ServerSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// Text a rackup file app (a `.ru` path in `apps`) must answer with,
    /// as trial's `--app-expect-body`; built-in apps check their own.
    #[serde(default)]
    pub app_expect_body: Option<String>,
    /// A soak: every trial's counted window this long (`"2h"`), open loop
    /// at the shape's rate (100 req/s without `rates`), each worker's
    /// memory fitted per hour (`lab::soak`).
    #[serde(default)]
    pub soak: Option<String>,
    /// The database of the apps that have one (the blog app): "sqlite"
    /// (the default) or "postgres" (`crate::database`).
    #[serde(default)]
    pub database: Option<String>,
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
    pub sweep: Option<SweepSection>,
    /// Put the telemetry middleware around the app in every trial (app
    /// time, queue time behind nginx, GC): `telemetry = true`.
    #[serde(default)]
    pub telemetry: bool,
    /// Profile every trial with rbspy over its counted window, into
    /// `profiles/TRIAL-ID/` (docs/PROFILES.md): `profile = true`.
    #[serde(default)]
    pub profile: bool,
    /// The one metric the experiment is judged by, named before it runs
    /// (`primary_metric = "throughput"`, a compare-v1 metric): `compare`
    /// on its results and `sweep` judge it alone (docs/STATISTICS.md).
    #[serde(default)]
    pub primary_metric: Option<String>,
    /// A repeat the machine disturbed (its record's `disturbance`) runs
    /// again at the end of its round, at most this many times; the
    /// disturbed record is kept under `set-aside/`, out of the figures
    /// (`rerun_disturbed = 2`; 0, the default: kept and marked).
    #[serde(default)]
    pub rerun_disturbed: u32,
    /// Where the servers run from, each a dimension of the matrix:
    /// `runtimes = ["system", "debian-13"]` (empty: the host, as always).
    #[serde(default)]
    pub runtimes: Vec<String>,
    /// YJIT off and/or on: `yjit = [false, true]` (empty: unset).
    #[serde(default)]
    pub yjit: Vec<bool>,
    /// The server's malloc: `allocator = ["glibc", "jemalloc"]`.
    #[serde(default)]
    pub allocator: Vec<crate::runtime::Allocator>,
    /// glibc's arena count: `malloc_arena_max = [2]`.
    #[serde(default)]
    pub malloc_arena_max: Vec<u32>,
    /// Users' own Rubies for this plan: `[runtime_defs.NAME]` with
    /// `ruby = "PATH"` and optionally `gemfile = "PATH"`.
    #[serde(default)]
    pub runtime_defs: BTreeMap<String, crate::runtime::UserRuby>,
    /// A memory and CPU budget for every trial's server, each a value or a
    /// list that multiplies the matrix: `[budget]` with `memory = "512M"`
    /// and `cpus = 1.5` (absent: no budget, ids as before).
    #[serde(default, skip_serializing_if = "BudgetSection::is_empty")]
    pub budget: BudgetSection,
    /// A restart under load in every trial: `[restart]` with `kind =
    /// "phased"` (or a list, which multiplies the matrix; a server
    /// without a kind skips it) and `at = "3s"` from the counted window's
    /// start (absent: none, ids as before).
    #[serde(default, skip_serializing_if = "RestartSection::is_empty")]
    pub restart: RestartSection,
    /// This plan is a fit (`rackbench fit PLAN`, plan::fit): the search's
    /// objective and bounds. `rackbench run` refuses such a plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitSection>,
}

/// `[fit]`: what `rackbench fit` takes as flags, each optional (absent:
/// the flag's default), e.g. `slo = "p99=200ms"`, `headroom = "10%"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitSection {
    /// The latency objective, "p99=200ms".
    #[serde(default)]
    pub slo: Option<String>,
    /// Memory to keep free under the peak: "10%" or "0.1".
    #[serde(default)]
    pub headroom: Option<String>,
    /// Trials per configuration.
    #[serde(default)]
    pub repeats: Option<usize>,
    /// The most worker processes tried.
    #[serde(default)]
    pub max_workers: Option<u32>,
    /// The most threads per worker tried.
    #[serde(default)]
    pub max_threads: Option<u32>,
}

/// `[restart]`: restart kinds (one or a list) and when.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestartSection {
    #[serde(default, deserialize_with = "one_or_many")]
    pub kind: Vec<String>,
    /// From the counted window's start: "3s".
    #[serde(default)]
    pub at: Option<String>,
}

impl RestartSection {
    pub fn is_empty(&self) -> bool {
        self.kind.is_empty() && self.at.is_none()
    }
}

/// `[budget]`: memory sizes and CPU counts, each one value or a list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    /// "512M", "1G": read once, in bytes.
    #[serde(
        default,
        deserialize_with = "memory_sizes",
        serialize_with = "sizes_written"
    )]
    pub memory: Vec<u64>,
    #[serde(default, deserialize_with = "cpu_counts")]
    pub cpus: Vec<f64>,
}

impl BudgetSection {
    pub fn is_empty(&self) -> bool {
        self.memory.is_empty() && self.cpus.is_empty()
    }

    /// Every memory × cpus pair as a budget; `[None]` without a section.
    pub fn budgets(&self) -> Vec<Option<crate::budget::Budget>> {
        fn each<T>(v: Vec<Option<T>>) -> Vec<Option<T>> {
            if v.is_empty() {
                vec![None]
            } else {
                v
            }
        }
        let mems = each(self.memory.iter().map(|&m| Some(m)).collect());
        let cpus = each(self.cpus.iter().map(|&c| Some(c)).collect());
        let mut out = Vec::new();
        for &m in &mems {
            for &c in &cpus {
                out.push(
                    (m.is_some() || c.is_some()).then_some(crate::budget::Budget {
                        memory_limit_bytes: m,
                        cpus: c,
                    }),
                );
            }
        }
        out
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

fn one_or_many<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(x) => vec![x],
        OneOrMany::Many(v) => v,
    })
}

fn memory_sizes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    let v: Vec<String> = one_or_many(d)?;
    v.iter()
        .map(|m| crate::budget::parse_size(m).map_err(serde::de::Error::custom))
        .collect()
}

/// Sizes as a plan writes them ("512M").
fn sizes_written<S: serde::Serializer>(v: &[u64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|&m| crate::budget::format_size(m)))
}

fn cpu_counts<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let v: Vec<f64> = one_or_many(d)?;
    for &c in &v {
        crate::budget::check_cpus(c).map_err(serde::de::Error::custom)?;
    }
    Ok(v)
}

/// `checks = ["p99<200ms"]` or `[checks]` with `p99 = "<200ms"`. A
/// visitor rather than an untagged enum, so a wrong entry is refused at
/// its own span (plan::keys names its line), not the whole table's.
fn checks_list_or_table<'de, D>(d: D) -> Result<Vec<crate::checks::Check>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Form;
    impl<'de> serde::de::Visitor<'de> for Form {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of thresholds or a table of them")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut s: A,
        ) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::new();
            while let Some(t) = s.next_element::<String>()? {
                out.push(t);
            }
            Ok(out)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::new();
            while let Some((k, v)) = m.next_entry::<String, String>()? {
                out.push(format!("{k}{v}"));
            }
            Ok(out)
        }
    }
    let texts = d.deserialize_any(Form)?;
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
    /// This entry's runtimes, in place of the plan's `runtimes`.
    #[serde(default)]
    pub runtimes: Vec<String>,
    /// This entry's YJIT values, in place of the plan's `yjit`.
    #[serde(default)]
    pub yjit: Vec<bool>,
    /// This entry's allocators, in place of the plan's `allocator`.
    #[serde(default)]
    pub allocator: Vec<crate::runtime::Allocator>,
    /// This entry's arena counts, in place of the plan's `malloc_arena_max`.
    #[serde(default)]
    pub malloc_arena_max: Vec<u32>,
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
    /// Cut every gap between two recorded requests longer than this down
    /// to it, e.g. "10s" (`rackbench replay --max-gap`): a replay longer
    /// than a day is refused without it or a faster `replay_speed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_max_gap: Option<String>,
    /// A request mix file (docs/MIX_FORMAT.md, relative to the plan):
    /// every trial's requests are drawn from it, each judged by its
    /// endpoint, instead of the app's one request.
    #[serde(default)]
    pub mix: Option<String>,
    /// How late an open loop (rates, a replay, a rate search) may send a
    /// request so that those due together go out on one wake-up, e.g.
    /// "2ms" (`rackbench load --slack`). Latency still counts from each
    /// due time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<String>,
    /// Slow clients beside each trial's load (`rackbench load
    /// --slow-clients`): a count, or a list that multiplies the matrix
    /// (`[0, 4]`; 0 is none, and adds nothing to a trial's id).
    #[serde(
        default,
        deserialize_with = "one_or_many",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub slow_clients: Vec<usize>,
    /// What they do: "headers", "body" or "read" [default: headers]. A
    /// string, so a mode that is none is refused at its line with the
    /// choices (plan::check), not as a parse error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_mode: Option<String>,
    /// Bytes a slow client writes (or reads) at each step [default: 4].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_bytes: Option<usize>,
    /// Time between a slow client's steps, e.g. "1s" [default: 1s].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_every: Option<String>,
}

impl LoadSection {
    /// `count` slow clients at this section's pace (its keys checked:
    /// plan::check).
    pub fn slow_of(&self, count: usize) -> crate::load::slow::SlowClients {
        use crate::load::slow::{SlowClients, SlowMode};
        let mode = self
            .slow_mode
            .as_deref()
            .and_then(|m| SlowMode::parse(m).ok())
            .unwrap_or(SlowMode::Headers);
        let mut s = SlowClients::new(count, mode);
        if let Some(b) = self.slow_bytes {
            s.bytes_per_step = b;
        }
        if let Some(e) = self
            .slow_every
            .as_deref()
            .and_then(|e| crate::units::duration(e).ok())
        {
            s.every = e;
        }
        s
    }
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
            replay_max_gap: None,
            mix: None,
            slack: None,
            slow_clients: Vec::new(),
            slow_mode: None,
            slow_bytes: None,
            slow_every: None,
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

impl ServerEntry {
    /// An entry of `servers = [..]`: the server with no variants.
    pub(super) fn plain(name: &str) -> ServerEntry {
        ServerEntry {
            name: name.to_string(),
            label: None,
            workers: Vec::new(),
            threads: Vec::new(),
            instances: Vec::new(),
            settings: BTreeMap::new(),
            env: BTreeMap::new(),
            runtimes: Vec::new(),
            yjit: Vec::new(),
            allocator: Vec::new(),
            malloc_arena_max: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Plan;

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
}

/// `[sweep]`: `vary = "workers"`, `values = [1, 2, 4, 8]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SweepSection {
    pub vary: String,
    /// Numbers or strings; kept as the text the user wrote.
    #[serde(deserialize_with = "values_as_text")]
    pub values: Vec<String>,
}

fn values_as_text<'de, D>(d: D) -> Result<Vec<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let raw: Vec<toml::Value> = Vec::deserialize(d)?;
    raw.into_iter()
        .map(|v| match v {
            toml::Value::String(s) => Ok(s),
            toml::Value::Integer(i) => Ok(i.to_string()),
            toml::Value::Float(f) => Ok(f.to_string()),
            toml::Value::Boolean(b) => Ok(b.to_string()),
            other => Err(serde::de::Error::custom(format!(
                "sweep value {other}: give numbers or strings, e.g. values = [1, 2, 4]"
            ))),
        })
        .collect()
}
