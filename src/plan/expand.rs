//! A plan's expansion: the matrix of servers × variants × apps × fronts
//! × load shapes, the combinations a server cannot run listed as skips,
//! then the repeats, interleaved. It runs on a checked plan
//! (plan::check) and never reads a file or starts anything.

use super::check::Knobs;
use super::{Plan, PlanError, PlannedTrial, ServerEntry, Shape};
use crate::lab::front::{self, HttpVersion, Keepalive, DEFAULT_KEEPALIVE};
use crate::runtime::{Allocator, Switches, SYSTEM};
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
    /// `[load] mix`, read once for every trial.
    #[serde(skip)]
    pub mix: Option<std::sync::Arc<crate::load::mix::Mix>>,
    /// `soak = "2h"`: every trial is a soak this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<Duration>,
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
        self.check_restart_kinds(&registry, &entries, &combos)
            .map_err(|m| at("kind =", m))?;
        Ok(Expanded {
            trials: self.repeated(&combos),
            skipped,
            duration: knobs.duration,
            warmup: knobs.warmup,
            timeout: knobs.timeout,
            slack: knobs.slack,
            replay: knobs.replay,
            mix: knobs.mix,
            soak: knobs.soak,
        })
    }

    /// Each `[restart]` kind is one some server of the plan has: a kind no
    /// trial runs is a typo, not a skip.
    fn check_restart_kinds(
        &self,
        registry: &Registry,
        entries: &[ServerEntry],
        combos: &[PlannedTrial],
    ) -> Result<(), String> {
        for kind in &self.restart.kind {
            if combos
                .iter()
                .any(|c| c.restart.as_ref().is_some_and(|r| &r.kind == kind))
            {
                continue;
            }
            let kinds: Vec<String> = entries
                .iter()
                .filter_map(|e| registry.get(&e.name).ok())
                .map(|s| {
                    let k: Vec<String> = s.restart_kinds().into_keys().collect();
                    format!(
                        "{} has {}",
                        s.name,
                        if k.is_empty() {
                            "none".into()
                        } else {
                            k.join(", ")
                        }
                    )
                })
                .collect();
            return Err(format!(
                "[restart] kind \"{kind}\" runs in no trial of the plan ({}); a kind that needs workers needs workers = [2]",
                kinds.join("; ")
            ));
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
            // A server run only from other runtimes need not be on the
            // host: `check_runtimes` asks each runtime for it.
            if !spec.installed() && self.on_host(e) {
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
            // The apps' own settings (the blog's pool) are no server's.
            let app_settings: Vec<&str> = self
                .apps
                .iter()
                .filter_map(|a| crate::lab::apps::AppSpec::resolve(a).ok())
                .flat_map(|a| a.settings().iter().map(|s| s.name))
                .collect();
            let server_keys = e
                .settings
                .keys()
                .filter(|k| !app_settings.contains(&k.as_str()));
            if let Some(Missing::Setting(key)) = spec.missing(None, None, server_keys) {
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
                for (&n, f) in instances
                    .iter()
                    .flat_map(|n| self.flavours(e).into_iter().map(move |f| (n, f)))
                {
                    if !spec.installed() && f.runtime.as_deref().is_none_or(|r| r == SYSTEM) {
                        skipped.push(format!(
                            "{} on the host: not installed (needs {})",
                            e.name,
                            spec.requires.join(", ")
                        ));
                        continue;
                    }
                    let mut env = self.env.clone();
                    env.extend(e.env.clone());
                    let base = PlannedTrial {
                        id: String::new(),
                        group: String::new(),
                        server: e.name.clone(),
                        variant: format!("{}{}", e.variant(w, t, n), f.suffix),
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
                        runtime: f.runtime,
                        switches: f.switches,
                        budget: f.budget,
                        slow_clients: f.slow_clients,
                        restart: None,
                        spec: Some(spec.clone()),
                    };
                    for r in self.restarts() {
                        let mut b = base.clone();
                        if let Some(r) = r {
                            if let Err(why) = spec.restart_kind(&r.kind, w) {
                                skipped.push(why);
                                continue;
                            }
                            b.variant.push_str(&format!("+restart={}", r.kind));
                            b.restart = Some(r);
                        }
                        self.expand_fronts(&b, shapes, combos, skipped);
                    }
                }
            }
        }
    }

    /// The plan's restarts, one per kind (checked), or `[None]` without
    /// a `[restart]`.
    fn restarts(&self) -> Vec<Option<crate::store::records::PlannedRestart>> {
        let at_s = self
            .restart
            .at
            .as_deref()
            .and_then(|t| crate::units::duration(t).ok())
            .map_or(0.0, |d| d.as_secs_f64());
        if self.restart.kind.is_empty() {
            return vec![None];
        }
        self.restart
            .kind
            .iter()
            .map(|k| {
                Some(crate::store::records::PlannedRestart {
                    kind: k.clone(),
                    at_s,
                })
            })
            .collect()
    }

    /// Whether entry `e` runs only on the host (no runtimes named, or
    /// `system` alone); an entry with other runtimes too skips only its
    /// host trials when the host lacks the server.
    fn on_host(&self, e: &ServerEntry) -> bool {
        let runtimes = if e.runtimes.is_empty() {
            &self.runtimes
        } else {
            &e.runtimes
        };
        runtimes.iter().all(|r| r == SYSTEM)
    }

    /// Entry `e`'s runtimes × YJIT × allocators × arena counts (each list
    /// the entry's own, else the plan's), each with its part of the
    /// variant's name. A plan without them gets one flavour, unnamed: the
    /// host, nothing asked, so its trial ids stay as they were.
    pub(super) fn flavours(&self, e: &ServerEntry) -> Vec<Flavour> {
        fn pick<'a, T>(own: &'a [T], plan: &'a [T]) -> &'a [T] {
            if own.is_empty() {
                plan
            } else {
                own
            }
        }
        fn each<T: Clone>(v: &[T]) -> Vec<Option<T>> {
            if v.is_empty() {
                vec![None]
            } else {
                v.iter().cloned().map(Some).collect()
            }
        }
        let runtimes = pick(&e.runtimes, &self.runtimes);
        let yjits = pick(&e.yjit, &self.yjit);
        let allocators = pick(&e.allocator, &self.allocator);
        let arenas = pick(&e.malloc_arena_max, &self.malloc_arena_max);
        let budgets = self.budget.budgets();
        let slows: Vec<Option<usize>> = if self.load.slow_clients.is_empty() {
            vec![None]
        } else {
            self.load
                .slow_clients
                .iter()
                .map(|&n| (n > 0).then_some(n))
                .collect()
        };
        let mut out = Vec::new();
        for r in each(runtimes) {
            for y in each(yjits) {
                for a in each(allocators) {
                    for ((m, b), slow) in each(arenas)
                        .into_iter()
                        .flat_map(|m| budgets.iter().map(move |b| (m, *b)))
                        .flat_map(|mb| slows.iter().map(move |s| (mb, *s)))
                    {
                        let switches = Switches {
                            yjit: y,
                            allocator: a,
                            malloc_arena_max: m,
                        };
                        let suffix = flavour_name(
                            r.as_deref(),
                            &switches,
                            [runtimes.len(), yjits.len(), allocators.len()].map(|n| n > 1),
                        ) + &budget_name(b.as_ref())
                            + &slow.map_or(String::new(), |n| format!("+slow={n}"));
                        out.push(Flavour {
                            runtime: r.clone(),
                            switches,
                            budget: b,
                            slow_clients: slow,
                            suffix,
                        });
                    }
                }
            }
        }
        out
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

/// One runtime and its switches, as a trial of the plan asks them.
pub(super) struct Flavour {
    pub runtime: Option<String>,
    pub switches: Switches,
    /// The plan's `[budget]` for this trial (None without one).
    pub budget: Option<crate::budget::Budget>,
    /// The plan's `[load] slow_clients` for this trial (None: none).
    pub slow_clients: Option<usize>,
    /// Its part of the variant's name: "@debian-13+yjit", or "".
    pub suffix: String,
}

/// A budget's part of a variant's name: "+mem=512M+cpus=1.5", or "".
fn budget_name(b: Option<&crate::budget::Budget>) -> String {
    let mut name = String::new();
    if let Some(m) = b.and_then(|b| b.memory_limit_bytes) {
        name.push_str(&format!("+mem={}", crate::budget::format_size(m)));
    }
    if let Some(c) = b.and_then(|b| b.cpus) {
        name.push_str(&format!("+cpus={c}"));
    }
    name
}

/// A flavour's part of a variant's name. The runtime is shown as
/// `@NAME` and each switch as `+VALUE` only when the plan varies it or
/// asks something other than the default: `@system` only beside another
/// runtime, `+no-yjit` and `+glibc` only beside `+yjit` and `+jemalloc`;
/// `+arenas=N` whenever set (unset is glibc's default). `varies` is
/// (runtime, yjit, allocator).
fn flavour_name(runtime: Option<&str>, s: &Switches, varies: [bool; 3]) -> String {
    let [runtime_varies, yjit_varies, allocator_varies] = varies;
    let mut name = String::new();
    if let Some(r) = runtime.filter(|r| runtime_varies || *r != SYSTEM) {
        name.push_str(&format!("@{r}"));
    }
    match s.yjit {
        Some(true) => name.push_str("+yjit"),
        Some(false) if yjit_varies => name.push_str("+no-yjit"),
        _ => {}
    }
    match s.allocator {
        Some(Allocator::Jemalloc) => name.push_str("+jemalloc"),
        Some(Allocator::Glibc) if allocator_varies => name.push_str("+glibc"),
        _ => {}
    }
    if let Some(n) = s.malloc_arena_max {
        name.push_str(&format!("+arenas={n}"));
    }
    name
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

#[cfg(test)]
mod flavour_tests {
    use super::super::tests::all_installed;
    use super::super::Plan;

    fn expand(head: &str, servers: &str) -> super::Expanded {
        let text = format!(
            "name = \"t\"\napps = [\"hello\"]\n{head}\n{servers}\n[load]\nconnections = [10]\n"
        );
        Plan::parse(&text, "t.toml")
            .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn the_blogs_pool_is_no_servers_setting_and_its_database_is_checked() {
        let text = "name = \"t\"\napps = [\"blog\"]\ndatabase = \"postgres\"\n[[server]]\nname = \"puma\"\nsettings = { pool = \"2\" }\n[load]\nconnections = [10]\n";
        let e = Plan::parse(text, "t.toml")
            .and_then(|p| p.expand(text, "t.toml", &all_installed()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.trials[0].settings["pool"], "2");
        // The same key beside an app without it is an unknown setting.
        let text = text
            .replace("blog", "hello")
            .replace("database = \"postgres\"\n", "");
        let err = Plan::parse(&text, "t.toml")
            .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("has no setting 'pool'"), "{err}");
    }

    #[test]
    fn a_budget_section_multiplies_the_matrix_and_names_its_values() {
        let rows: &[(&str, &[&str])] = &[
            ("", &["puma"]),
            ("[budget]\nmemory = \"512M\"", &["puma+mem=512M"]),
            ("[budget]\ncpus = 1.5", &["puma+cpus=1.5"]),
            (
                "[budget]\nmemory = [\"512M\", \"1G\"]\ncpus = 1",
                &["puma+mem=512M+cpus=1", "puma+mem=1G+cpus=1"],
            ),
        ];
        for (extra, want) in rows {
            let e = expand("servers = [\"puma\"]", extra);
            let names: Vec<&str> = e.trials.iter().map(|t| t.variant.as_str()).collect();
            assert_eq!(names, *want, "{extra}");
        }
        let e = expand("servers = [\"puma\"]", "[budget]\nmemory = \"1G\"");
        assert_eq!(
            e.trials[0].budget.unwrap().memory_limit_bytes,
            Some(1 << 30)
        );
        assert!(
            e.trials[0].id.contains("puma-mem-1G__"),
            "{}",
            e.trials[0].id
        );
        let bad = Plan::parse(
            "name = \"b\"\nservers = [\"puma\"]\napps = [\"hello\"]\n[budget]\nmemory = \"12X\"\n",
            "t.toml",
        );
        assert!(bad.unwrap_err().to_string().contains("512M"));
    }

    /// Issue 29: `slow_clients = [0, 4]` is the same trial without and
    /// with slow clients, side by side; 0 adds nothing to an id, so the
    /// trial without them is named as it always was.
    #[test]
    fn slow_clients_multiply_the_matrix_and_zero_names_nothing() {
        let plan = |slow: &str| {
            format!(
                "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [10]\n{slow}"
            )
        };
        // (the [load] keys, each trial's variant and slow clients)
        type Row<'a> = (&'a str, &'a [(&'a str, Option<usize>)]);
        let rows: &[Row] = &[
            ("", &[("puma", None)]),
            ("slow_clients = 0\n", &[("puma", None)]),
            ("slow_clients = 4\n", &[("puma+slow=4", Some(4))]),
            (
                "slow_clients = [0, 4]\n",
                &[("puma", None), ("puma+slow=4", Some(4))],
            ),
            (
                "slow_clients = [0, 4, 16]\nslow_mode = \"read\"\n",
                &[
                    ("puma", None),
                    ("puma+slow=4", Some(4)),
                    ("puma+slow=16", Some(16)),
                ],
            ),
        ];
        for (slow, want) in rows {
            let text = plan(slow);
            let e = Plan::parse(&text, "t.toml")
                .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            let got: Vec<(&str, Option<usize>)> = e
                .trials
                .iter()
                .map(|t| (t.variant.as_str(), t.slow_clients))
                .collect();
            assert_eq!(got, *want, "{slow}");
        }
        let text = plan("slow_clients = [0, 4]\n");
        let e = Plan::parse(&text, "t.toml")
            .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
            .unwrap();
        let ids: Vec<&str> = e.trials.iter().map(|t| t.id.as_str()).collect();
        assert!(
            ids.iter().any(|id| id.starts_with("puma__"))
                && ids.iter().any(|id| id.starts_with("puma-slow-4__")),
            "{ids:?}"
        );
        assert_eq!(
            ids.iter().filter(|id| id.contains("slow")).count(),
            ids.len() / 2,
            "{ids:?}"
        );
    }

    #[test]
    fn a_restart_section_multiplies_the_matrix_and_servers_without_a_kind_skip_it() {
        let both = "[[server]]\nname = \"puma\"\nworkers = [2]\n[[server]]\nname = \"unicorn\"";
        let rows: &[(&str, &[&str])] = &[
            (
                "[restart]\nkind = \"reexec\"\nat = \"3s\"",
                &["unicorn+restart=reexec"],
            ),
            (
                "[restart]\nkind = [\"phased\", \"kill-worker\"]\nat = \"3s\"",
                &[
                    "puma-w2+restart=phased",
                    "puma-w2+restart=kill-worker",
                    "unicorn+restart=kill-worker",
                ],
            ),
        ];
        for (restart, want) in rows {
            let e = expand("", &format!("{both}\n{restart}"));
            let mut names: Vec<&str> = e.trials.iter().map(|t| t.variant.as_str()).collect();
            names.sort_by_key(|n| want.iter().position(|w| w == n));
            assert_eq!(names, *want, "{restart}");
            let r = e.trials[0].restart.as_ref().unwrap();
            assert_eq!(r.at_s, 3.0);
        }
        let e = expand(
            "",
            &format!("{both}\n[restart]\nkind = \"reexec\"\nat = \"3s\""),
        );
        assert!(
            e.skipped
                .iter()
                .any(|s| s.contains("puma has no restart kind 'reexec'")),
            "{:?}",
            e.skipped
        );
        // (the section, what the error says, its line)
        let bad: &[(&str, &str, usize)] = &[
            (
                "[restart]\nkind = \"hot\"\nat = \"30s\"",
                "outside the counted window",
                9,
            ),
            ("[restart]\nkind = \"hot\"", "add at = \"3s\"", 7),
            ("[restart]\nat = \"3s\"", "names no kind", 7),
            (
                "[restart]\nkind = \"bounce\"\nat = \"3s\"",
                "puma has hot, kill-worker, phased",
                8,
            ),
        ];
        for (restart, part, line) in bad {
            let text = format!(
                "name = \"t\"\napps = [\"hello\"]\n[[server]]\nname = \"puma\"\nworkers = [2]\n\n{restart}\n[load]\nduration = \"8s\"\nconnections = [10]\n"
            );
            let err = Plan::parse(&text, "t.toml")
                .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(part) && err.contains(&format!("t.toml, line {line}:")),
                "{restart}: {err}"
            );
        }
    }

    #[test]
    fn runtimes_and_switches_multiply_the_matrix_and_name_only_what_varies() {
        let puma = "servers = [\"puma\"]";
        // (plan's lists, servers, the variants in order)
        let rows: &[(&str, &str, &[&str])] = &[
            ("", puma, &["puma"]),
            ("runtimes = [\"system\"]", puma, &["puma"]),
            (
                "runtimes = [\"system\", \"debian-13\"]",
                puma,
                &["puma@system", "puma@debian-13"],
            ),
            ("yjit = [false, true]", puma, &["puma+no-yjit", "puma+yjit"]),
            ("yjit = [true]", puma, &["puma+yjit"]),
            (
                "allocator = [\"glibc\", \"jemalloc\"]",
                puma,
                &["puma+glibc", "puma+jemalloc"],
            ),
            ("malloc_arena_max = [2]", puma, &["puma+arenas=2"]),
            (
                "runtimes = [\"debian-13\"]\nallocator = [\"jemalloc\"]",
                puma,
                &["puma@debian-13+jemalloc"],
            ),
            (
                "runtimes = [\"system\", \"debian-13\"]\nyjit = [false, true]",
                puma,
                &[
                    "puma@system+no-yjit",
                    "puma@system+yjit",
                    "puma@debian-13+no-yjit",
                    "puma@debian-13+yjit",
                ],
            ),
            // An entry's own lists win over the plan's: YJIT off and on
            // where it exists, beside debian-13 without it.
            (
                "runtimes = [\"debian-13\"]",
                "[[server]]\nname = \"puma\"\nruntimes = [\"system\"]\nyjit = [false, true]\n[[server]]\nname = \"puma\"\nworkers = [2]",
                &["puma+no-yjit", "puma+yjit", "puma-w2@debian-13"],
            ),
            (
                "yjit = [true]",
                "[[server]]\nname = \"puma\"\nlabel = \"mine\"",
                &["mine+yjit"],
            ),
        ];
        for (head, servers, want) in rows {
            let e = expand(head, servers);
            let got: Vec<&str> = e.trials.iter().map(|t| t.variant.as_str()).collect();
            assert_eq!(got, *want, "{head} / {servers}");
            let groups: std::collections::BTreeSet<&str> =
                e.trials.iter().map(|t| t.group.as_str()).collect();
            assert_eq!(groups.len(), e.trials.len(), "{head}: group names differ");
        }
    }

    #[test]
    fn each_trial_carries_its_runtime_and_switches_and_defaults_name_nothing() {
        let e = expand(
            "runtimes = [\"debian-13\"]\nallocator = [\"jemalloc\"]\nmalloc_arena_max = [2]",
            "servers = [\"puma\"]",
        );
        let t = &e.trials[0];
        assert_eq!(t.runtime.as_deref(), Some("debian-13"));
        assert_eq!(
            t.switches.allocator,
            Some(crate::runtime::Allocator::Jemalloc)
        );
        assert_eq!(t.switches.malloc_arena_max, Some(2));
        assert_eq!(t.switches.yjit, None);
        assert_eq!(
            t.group,
            "puma-debian-13-jemalloc-arenas-2__hello__direct__c10"
        );
        // Without the keys: the ids, groups and record of before runtimes.
        let plain = expand("", "servers = [\"puma\"]");
        let t = &plain.trials[0];
        assert_eq!(t.id, "puma__hello__direct__c10__rep1");
        assert_eq!((t.runtime.as_deref(), t.switches.is_empty()), (None, true));
        let json = serde_json::to_value(t).unwrap();
        assert!(
            json.get("runtime").is_none() && json.get("switches").is_none(),
            "{json}"
        );
    }

    #[test]
    fn a_server_missing_on_the_host_still_runs_from_its_other_runtimes() {
        let mut reg = all_installed();
        for s in &mut reg.servers {
            if s.name == "puma" {
                s.requires = vec!["no-such-puma-here".into()];
            }
        }
        let text = "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\nruntimes = [\"system\", \"debian-13\"]\n[load]\nconnections = [10]\n";
        let e = Plan::parse(text, "t.toml")
            .unwrap()
            .expand(text, "t.toml", &reg)
            .unwrap();
        let got: Vec<&str> = e.trials.iter().map(|t| t.variant.as_str()).collect();
        assert_eq!(got, ["puma@debian-13"]);
        assert!(
            e.skipped
                .iter()
                .any(|s| s.contains("puma on the host: not installed")),
            "{:?}",
            e.skipped
        );
    }
}
