//! A plan's `[sweep]` section: one variable at a time. `vary` names what
//! changes (`workers`, `threads`, `connections`, `nginx_workers`, `app`,
//! `runtime`, `yjit`, `allocator`, `malloc_arena_max`, `env.NAME`, or a
//! server setting such as `preload`) and `values` its
//! values, the first being the control. Everything else stays as the plan
//! sets it, and the plan must pin it to one value: a sweep whose plan
//! expands to more combinations than values is refused.
//!
//! This module rewrites the plan so the existing expansion and runner do
//! the work (interleaved, shuffled rounds), and reads a stored trial's
//! value back (`value_of`) so the analysis can be rebuilt from disk. It
//! runs nothing and computes no statistics.

use super::error::at_line;
pub use super::schema::SweepSection;
use super::{Plan, PlanError, PlannedTrial, ServerEntry};

/// The kinds of variable a sweep can vary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Variable {
    Workers,
    Threads,
    Connections,
    NginxWorkers,
    App,
    /// Where the server runs from (`runtimes`).
    Runtime,
    Yjit,
    Allocator,
    MallocArenaMax,
    /// Slow clients beside the load (`[load] slow_clients`).
    SlowClients,
    Env(String),
    Setting(String),
}

impl Variable {
    pub fn parse(vary: &str) -> Result<Variable, String> {
        Ok(match vary {
            "workers" => Variable::Workers,
            "threads" => Variable::Threads,
            "connections" => Variable::Connections,
            "nginx_workers" => Variable::NginxWorkers,
            "app" => Variable::App,
            "runtime" => Variable::Runtime,
            "yjit" => Variable::Yjit,
            "allocator" => Variable::Allocator,
            "malloc_arena_max" => Variable::MallocArenaMax,
            "slow_clients" => Variable::SlowClients,
            "" => return Err("vary is empty: name what to sweep, e.g. vary = \"workers\"".into()),
            v => match v.strip_prefix("env.") {
                Some("") => {
                    return Err("vary = \"env.\": name the variable, e.g. \"env.RUBY_GC_MALLOC_LIMIT\"".into())
                }
                Some(name) => Variable::Env(name.to_string()),
                None if v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                    Variable::Setting(v.to_string())
                }
                None => {
                    return Err(format!(
                        "vary = \"{v}\": use workers, threads, connections, nginx_workers, app, runtime, yjit, allocator, malloc_arena_max, slow_clients, env.NAME or a server setting name"
                    ))
                }
            },
        })
    }

    /// Whether the variable is an ordered resource, more of which is
    /// "more" (workers, threads, connections, nginx workers, instances):
    /// only then do a knee and "more only adds latency" mean something.
    /// Everything else (an app, an env value, another setting) is a set
    /// of alternatives, even when its values are numbers: a GC limit of
    /// 30M is not "between" 8M and 80M in what it does to a server.
    pub fn ordered(&self) -> bool {
        match self {
            Variable::Workers
            | Variable::Threads
            | Variable::Connections
            | Variable::NginxWorkers
            | Variable::MallocArenaMax
            | Variable::SlowClients => true,
            Variable::Setting(name) => name == "instances",
            Variable::App
            | Variable::Runtime
            | Variable::Yjit
            | Variable::Allocator
            | Variable::Env(_) => false,
        }
    }

    /// Whether throughput against this variable is a scalability curve
    /// (the USL is fitted only then); such a variable is also ordered.
    pub fn scales(&self) -> bool {
        matches!(
            self,
            Variable::Workers | Variable::Threads | Variable::Connections
        )
    }
}

impl SweepSection {
    /// Parse `--vary NAME=V1,V2,...`.
    pub fn from_flag(arg: &str) -> Result<SweepSection, String> {
        let (vary, values) = arg.split_once('=').ok_or_else(|| {
            format!("--vary {arg}: give NAME=V1,V2,..., e.g. --vary workers=1,2,4,8")
        })?;
        Ok(SweepSection {
            vary: vary.trim().to_string(),
            values: values
                .split(',')
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .collect(),
        })
    }

    /// Check the section and the values against the variable.
    pub fn validate(&self) -> Result<Variable, String> {
        let var = Variable::parse(&self.vary)?;
        if self.values.len() < 2 {
            return Err(format!(
                "sweep of {} needs two or more values (the first is the control), e.g. values = [1, 2, 4]",
                self.vary
            ));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(d) = self.values.iter().find(|v| !seen.insert(v.as_str())) {
            return Err(format!(
                "sweep value {d} is given twice: list each value once"
            ));
        }
        let bad =
            |v: &String, want: &str| format!("sweep of {}: value {v} is not {want}", self.vary);
        match var {
            Variable::Yjit => {
                if let Some(v) = self.values.iter().find(|v| v.parse::<bool>().is_err()) {
                    return Err(bad(v, "true or false, e.g. values = [false, true]"));
                }
            }
            Variable::Allocator => {
                if let Some(v) = self
                    .values
                    .iter()
                    .find(|v| v.parse::<crate::runtime::Allocator>().is_err())
                {
                    return Err(bad(v, "glibc or jemalloc"));
                }
            }
            Variable::SlowClients => {
                let bound = crate::load::slow::MAX_SLOW_CLIENTS;
                if let Some(v) = self
                    .values
                    .iter()
                    .find(|v| v.parse::<usize>().map_or(true, |n| n > bound))
                {
                    return Err(bad(
                        v,
                        &format!("a whole number from 0 to {bound}, e.g. values = [0, 4, 16]"),
                    ));
                }
            }
            _ => {}
        }
        if matches!(
            var,
            Variable::Workers
                | Variable::Threads
                | Variable::Connections
                | Variable::NginxWorkers
                | Variable::MallocArenaMax
        ) {
            if let Some(bad) = self
                .values
                .iter()
                .find(|v| v.parse::<u32>().map_or(true, |n| n == 0))
            {
                return Err(format!(
                    "sweep of {}: value {bad} is not a whole number of at least 1",
                    self.vary
                ));
            }
        }
        Ok(var)
    }
}

/// A stored trial's value of the swept variable (as `planned` in a trial
/// file); `None` when the trial does not carry it.
pub fn value_of(var: &Variable, planned: &serde_json::Value) -> Option<String> {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    match var {
        Variable::Workers => text(&planned["workers"]),
        Variable::Threads => text(&planned["threads"]),
        Variable::Connections => text(&planned["shape"]["connections"]),
        Variable::NginxWorkers => text(&planned["nginx_workers"]),
        Variable::App => text(&planned["app"]),
        Variable::Runtime => text(&planned["runtime"]),
        Variable::Yjit => text(&planned["switches"]["yjit"]),
        Variable::Allocator => text(&planned["switches"]["allocator"]),
        Variable::MallocArenaMax => text(&planned["switches"]["malloc_arena_max"]),
        // Absent is none: a trial without slow clients is the value 0.
        Variable::SlowClients => text(&planned["slow_clients"]).or(Some("0".into())),
        Variable::Env(k) => text(&planned["env"][k]),
        Variable::Setting(k) => text(&planned["settings"][k]),
    }
}

/// The same, from a planned trial in memory.
pub fn value_of_planned(var: &Variable, t: &PlannedTrial) -> Option<String> {
    value_of(var, &serde_json::to_value(t).ok()?)
}

impl Plan {
    /// Rewrite the plan so its expansion is the sweep: the swept field set
    /// to the sweep's values, everything else as written. Refuses a plan
    /// that sets the swept field itself, or whose servers are not one.
    pub(super) fn apply_sweep(&mut self, text: &str, file: &str) -> Result<(), PlanError> {
        let Some(sweep) = self.sweep.clone() else {
            return Ok(());
        };
        let at = at_line(text, file);
        let var = sweep.validate().map_err(|m| at("[sweep]", m))?;
        let nums = || -> Vec<u32> { sweep.values.iter().filter_map(|v| v.parse().ok()).collect() };
        if matches!(
            var,
            Variable::Workers | Variable::Threads | Variable::Env(_) | Variable::Setting(_)
        ) {
            // One server entry, the plain `servers = [..]` form folded in.
            let mut entries: Vec<ServerEntry> =
                self.servers.iter().map(|n| ServerEntry::plain(n)).collect();
            entries.append(&mut self.server);
            if entries.len() != 1 || entries[0].name == "installed" {
                return Err(at(
                    "[sweep]",
                    format!(
                        "a sweep of {} varies one server: name exactly one (servers = [\"puma\"] or one [[server]])",
                        sweep.vary
                    ),
                ));
            }
            self.servers.clear();
            let mut e = entries.remove(0);
            let clash = |what: &str| {
                at(
                    what,
                    format!(
                        "the plan sets {what} and sweeps {}: give its values only in [sweep]",
                        sweep.vary
                    ),
                )
            };
            match &var {
                Variable::Workers if !e.workers.is_empty() => return Err(clash("workers")),
                Variable::Workers => e.workers = nums(),
                Variable::Threads if !e.threads.is_empty() => return Err(clash("threads")),
                Variable::Threads => e.threads = nums(),
                Variable::Env(k) | Variable::Setting(k) => {
                    let is_env = matches!(var, Variable::Env(_));
                    let map = if is_env { &e.env } else { &e.settings };
                    if map.contains_key(k) {
                        return Err(clash(k));
                    }
                    let base_label = e.label.clone().unwrap_or_else(|| e.name.clone());
                    for v in &sweep.values {
                        let mut one = e.clone();
                        let map = if is_env {
                            &mut one.env
                        } else {
                            &mut one.settings
                        };
                        map.insert(k.clone(), v.clone());
                        one.label = Some(format!("{base_label}-{k}={v}"));
                        self.server.push(one);
                    }
                    return Ok(());
                }
                _ => unreachable!("server variables only"),
            }
            self.server.push(e);
            return Ok(());
        }
        match var {
            Variable::Connections => {
                if !self.load.connections.is_empty() || !self.load.rates.is_empty() {
                    return Err(at(
                        "connections",
                        "the plan sets a load shape and sweeps connections: drop connections and rates from [load]".into(),
                    ));
                }
                self.load.connections = nums().into_iter().map(|n| n as usize).collect();
            }
            Variable::NginxWorkers => {
                if self.behind != ["nginx"] {
                    return Err(at(
                        "behind",
                        "a sweep of nginx_workers needs behind = [\"nginx\"] only".into(),
                    ));
                }
                if self.nginx_workers != [1] {
                    return Err(at(
                        "nginx_workers",
                        "the plan sets nginx_workers and sweeps it: give its values only in [sweep]"
                            .into(),
                    ));
                }
                self.nginx_workers = nums();
            }
            Variable::Runtime | Variable::Yjit | Variable::Allocator | Variable::MallocArenaMax => {
                self.sweep_switch(&var, &sweep.values).map_err(|key| {
                    at(
                        key,
                        format!(
                            "the plan sets {key} and sweeps {}: give its values only in [sweep]",
                            sweep.vary
                        ),
                    )
                })?;
            }
            Variable::SlowClients => self
                .sweep_slow(&sweep.values)
                .map_err(|m| at("slow_clients", m))?,
            Variable::App => {
                if !self.apps.is_empty() {
                    return Err(at(
                        "apps",
                        "the plan sets apps and sweeps app: drop apps, the sweep's values are the apps".into(),
                    ));
                }
                self.apps = sweep.values.clone();
            }
            _ => unreachable!("handled above"),
        }
        Ok(())
    }
}

impl Plan {
    /// A sweep of slow clients: `[load] slow_clients` becomes the values
    /// (already checked to be counts), refused where the plan sets it.
    fn sweep_slow(&mut self, values: &[String]) -> Result<(), String> {
        if !self.load.slow_clients.is_empty() {
            return Err(
                "the plan sets slow_clients and sweeps it: give its values only in [sweep]".into(),
            );
        }
        self.load.slow_clients = values.iter().filter_map(|v| v.parse().ok()).collect();
        Ok(())
    }

    /// A sweep of a runtime or a switch: the plan's list of it becomes the
    /// sweep's values (already checked to parse). Refuses, naming the key,
    /// a plan or server entry that sets the list itself.
    fn sweep_switch(&mut self, var: &Variable, values: &[String]) -> Result<(), &'static str> {
        let (key, set_here) = match var {
            Variable::Runtime => (
                "runtimes",
                !self.runtimes.is_empty() || self.server.iter().any(|e| !e.runtimes.is_empty()),
            ),
            Variable::Yjit => (
                "yjit",
                !self.yjit.is_empty() || self.server.iter().any(|e| !e.yjit.is_empty()),
            ),
            Variable::Allocator => (
                "allocator",
                !self.allocator.is_empty() || self.server.iter().any(|e| !e.allocator.is_empty()),
            ),
            _ => (
                "malloc_arena_max",
                !self.malloc_arena_max.is_empty()
                    || self.server.iter().any(|e| !e.malloc_arena_max.is_empty()),
            ),
        };
        if set_here {
            return Err(key);
        }
        fn parsed<T: std::str::FromStr>(values: &[String]) -> Vec<T> {
            // Checked by SweepSection::validate.
            values.iter().filter_map(|v| v.parse().ok()).collect()
        }
        match var {
            Variable::Runtime => self.runtimes = values.to_vec(),
            Variable::Yjit => self.yjit = parsed(values),
            Variable::Allocator => self.allocator = parsed(values),
            _ => self.malloc_arena_max = parsed(values),
        }
        Ok(())
    }

    /// A sweep holds everything else fixed: one combination per value,
    /// or the plan is refused (naming how many it made).
    pub(super) fn check_sweep_fixed(&self, combos: &[PlannedTrial]) -> Result<(), String> {
        let Some(sweep) = &self.sweep else {
            return Ok(());
        };
        if combos.len() != sweep.values.len() {
            return Err(format!(
                "a sweep holds everything else fixed: the plan expands to {} combinations for {} values of {}; give one server, one app, one front and one load shape (skipped: see `rackbench run --dry-run`)",
                combos.len(),
                sweep.values.len(),
                sweep.vary
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::spec::Registry;

    fn expand(text: &str) -> Result<crate::plan::Expanded, String> {
        let plan = Plan::parse(text, "p.toml").map_err(|e| e.to_string())?;
        plan.expand(text, "p.toml", &Registry::builtin())
            .map_err(|e| e.to_string())
    }

    const TEST_SERVER: &str = "[server_defs.ts]\ncommand = \"true {{listen}}\"\nprocesses = true\nthreads = true\n[server_defs.ts.settings]\nbacklog = \"8\"\n";

    #[test]
    fn each_kind_of_variable_expands_to_one_combination_per_value() {
        let rows: &[(&str, &str, &[&str])] = &[
            ("workers", "[1, 2, 4]", &["1", "2", "4"]),
            ("threads", "[1, 8]", &["1", "8"]),
            ("connections", "[1, 10]", &["1", "10"]),
            (
                "env.RUBY_GC_MALLOC_LIMIT",
                "[8000000, \"30000000\"]",
                &["8000000", "30000000"],
            ),
            ("backlog", "[16, 1024]", &["16", "1024"]),
            ("yjit", "[false, true]", &["false", "true"]),
            (
                "allocator",
                "[\"glibc\", \"jemalloc\"]",
                &["glibc", "jemalloc"],
            ),
            ("malloc_arena_max", "[1, 2, 4]", &["1", "2", "4"]),
            (
                "runtime",
                "[\"system\", \"debian-13\"]",
                &["system", "debian-13"],
            ),
        ];
        for (vary, values, want) in rows {
            let load = if *vary == "connections" {
                ""
            } else {
                "connections = [2]"
            };
            let text = format!(
                "name = \"s\"\nrepeats = 2\nservers = [\"ts\"]\napps = [\"hello\"]\n[load]\n{load}\n[sweep]\nvary = \"{vary}\"\nvalues = {values}\n{TEST_SERVER}"
            );
            let e = expand(&text).unwrap_or_else(|m| panic!("{vary}: {m}"));
            assert_eq!(e.trials.len(), want.len() * 2, "{vary}");
            let var = Variable::parse(vary).unwrap();
            let got: Vec<String> = e.trials[..want.len()]
                .iter()
                .map(|t| value_of_planned(&var, t).unwrap())
                .collect();
            assert_eq!(got, *want, "{vary}");
        }
    }

    #[test]
    fn bad_sweeps_are_refused_with_the_line_and_the_fix() {
        let base =
            "name = \"s\"\nservers = [\"ts\"]\napps = [\"hello\"]\n[load]\nconnections = [2]\n";
        let rows: &[(&str, &str)] = &[
            (
                "[sweep]\nvary = \"workers\"\nvalues = [1]\n",
                "two or more values",
            ),
            (
                "[sweep]\nvary = \"workers\"\nvalues = [1, 0]\n",
                "not a whole number",
            ),
            (
                "[sweep]\nvary = \"workers\"\nvalues = [2, 2]\n",
                "given twice",
            ),
            (
                "[sweep]\nvary = \"env.\"\nvalues = [1, 2]\n",
                "name the variable",
            ),
            (
                "[sweep]\nvary = \"a-b\"\nvalues = [1, 2]\n",
                "use workers, threads",
            ),
            (
                "[sweep]\nvary = \"workers\"\nvalues = [1, 2]\nstep = 1\n",
                "[sweep] has no key `step`: its keys are vary, values",
            ),
            (
                "[sweep]\nvary = \"connections\"\nvalues = [1, 2]\n",
                "drop connections",
            ),
            (
                "[sweep]\nvary = \"nginx_workers\"\nvalues = [1, 2]\n",
                "behind = [\"nginx\"]",
            ),
            (
                "[sweep]\nvary = \"nosuch\"\nvalues = [1, 2]\n",
                "no setting 'nosuch'",
            ),
            (
                "[sweep]\nvary = \"yjit\"\nvalues = [\"off\", \"on\"]\n",
                "value off is not true or false",
            ),
            (
                "[sweep]\nvary = \"allocator\"\nvalues = [\"glibc\", \"tcmalloc\"]\n",
                "value tcmalloc is not glibc or jemalloc",
            ),
            (
                "[sweep]\nvary = \"malloc_arena_max\"\nvalues = [0, 2]\n",
                "not a whole number",
            ),
        ];
        for (section, want) in rows {
            let text = format!("{base}{section}{TEST_SERVER}");
            let err = expand(&text).unwrap_err();
            assert!(err.contains(want), "{section}: {err}");
            assert!(err.starts_with("p.toml"), "{err}");
        }
        // The line of [sweep] is named.
        let text = format!("{base}[sweep]\nvary = \"workers\"\nvalues = [3]\n{TEST_SERVER}");
        assert!(expand(&text).unwrap_err().contains("line 6"));
        // Two servers cannot be one sweep.
        let text = format!(
            "name = \"s\"\nservers = [\"ts\", \"puma\"]\napps = [\"hello\"]\n[load]\nconnections = [2]\n[sweep]\nvary = \"workers\"\nvalues = [1, 2]\n{TEST_SERVER}"
        );
        assert!(expand(&text).unwrap_err().contains("exactly one"));
        // Two apps make more combinations than values.
        let text = format!(
            "name = \"s\"\nservers = [\"ts\"]\napps = [\"hello\", \"fib\"]\n[load]\nconnections = [2]\n[sweep]\nvary = \"workers\"\nvalues = [1, 2]\n{TEST_SERVER}"
        );
        assert!(expand(&text)
            .unwrap_err()
            .contains("holds everything else fixed"));
    }

    /// plans/sportsengine-2012-tuning.toml on any machine (every server counted
    /// as installed): seed 002's control (80M) first, one unicorn with 2
    /// workers behind nginx, GC profiling off, 5 interleaved repeats.
    #[test]
    fn the_seed_002_plan_sweeps_the_malloc_limit_from_its_control() {
        let file = format!(
            "{}/plans/sportsengine-2012-tuning.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&file).unwrap();
        let reg = super::super::tests::all_installed();
        let plan = Plan::parse(&text, &file).unwrap();
        let sweep = plan.sweep.clone().unwrap();
        assert_eq!(sweep.vary, "env.RUBY_GC_MALLOC_LIMIT");
        assert_eq!(sweep.values, ["80000000", "30000000", "8000000"]);
        let e = plan
            .expand(&text, &file, &reg)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.trials.len(), 15);
        let var = Variable::parse(&sweep.vary).unwrap();
        let first: Vec<String> = e.trials[..3]
            .iter()
            .map(|t| value_of_planned(&var, t).unwrap())
            .collect();
        assert_eq!(first, sweep.values);
        for t in &e.trials {
            assert_eq!((t.server.as_str(), t.workers), ("unicorn", Some(2)));
            assert_eq!(
                (t.app.as_str(), t.behind.as_str()),
                ("gc-profiler", "nginx")
            );
            assert_eq!(t.env["GC_PROFILER"], "off");
        }
    }

    #[test]
    fn a_plan_that_sets_a_switch_it_sweeps_is_refused_at_that_line() {
        let text = "name = \"s\"\nservers = [\"ts\"]\napps = [\"hello\"]\nyjit = [true]\n[load]\nconnections = [2]\n[sweep]\nvary = \"yjit\"\nvalues = [false, true]\n";
        let err = expand(&format!("{text}{TEST_SERVER}")).unwrap_err();
        assert!(
            err.contains("p.toml, line 4: the plan sets yjit and sweeps yjit: give its values only in [sweep]"),
            "{err}"
        );
    }

    #[test]
    fn only_resources_are_ordered_and_only_some_of_them_scale() {
        // (vary, ordered, scales)
        let rows = [
            ("workers", true, true),
            ("threads", true, true),
            ("connections", true, true),
            ("nginx_workers", true, false),
            ("instances", true, false),
            ("app", false, false),
            ("env.RUBY_GC_MALLOC_LIMIT", false, false),
            ("env.WEB_CONCURRENCY", false, false),
            ("backlog", false, false),
            ("preload", false, false),
            ("runtime", false, false),
            ("yjit", false, false),
            ("allocator", false, false),
            ("malloc_arena_max", true, false),
        ];
        for (vary, ordered, scales) in rows {
            let v = Variable::parse(vary).unwrap();
            assert_eq!(v.ordered(), ordered, "{vary}");
            assert_eq!(v.scales(), scales, "{vary}");
            assert!(
                !v.scales() || v.ordered(),
                "{vary} scales but is not ordered"
            );
        }
    }

    #[test]
    fn the_flag_form_reads_name_and_values() {
        let s = SweepSection::from_flag("env.RUBY_GC_MALLOC_LIMIT=8000000,30000000").unwrap();
        assert_eq!(s.vary, "env.RUBY_GC_MALLOC_LIMIT");
        assert_eq!(s.values, ["8000000", "30000000"]);
        assert!(SweepSection::from_flag("workers").is_err());
    }
}
