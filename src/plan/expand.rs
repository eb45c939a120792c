//! A plan's expansion: the matrix of servers × variants × apps × fronts
//! × load shapes, the combinations a server cannot run listed as skips,
//! then the repeats, interleaved. It runs on a checked plan
//! (plan::check) and never reads a file or starts anything.

use super::check::Knobs;
use super::{Plan, PlanError, PlannedTrial, ServerEntry, Shape};
use crate::lab::front::{self, HttpVersion, Keepalive, DEFAULT_KEEPALIVE};
use crate::server::spec::{Missing, Registry, ServerSpec};
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
    /// The trials of a checked plan: resolve the servers and their
    /// variants, build the load shapes, expand the matrix with its skips,
    /// then number the repeats.
    pub(super) fn expand_checked(
        &self,
        knobs: Knobs,
        registry: &Registry,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<Expanded, PlanError> {
        let (registry, entries) = self.server_entries(registry, at)?;
        let shapes = self.shapes(knobs.replay.is_some());
        let mut skipped = Vec::new();
        let combos = self.expand_matrix(&registry, &entries, &shapes, &mut skipped, at)?;
        // A reason found once per app or front is listed once.
        let mut seen = std::collections::HashSet::new();
        skipped.retain(|s| seen.insert(s.clone()));
        self.check_sweep_fixed(&combos)
            .map_err(|m| at("[sweep]", m))?;
        Ok(Expanded {
            trials: self.repeated(&combos),
            skipped,
            duration: knobs.duration,
            warmup: knobs.warmup,
            timeout: knobs.timeout,
            slack: knobs.slack,
            replay: knobs.replay,
        })
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
    use super::super::tests::{all_installed, expand};
    use super::super::{runner, Plan};
    use crate::server::spec::Registry;

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
}
