//! A plan's expansion: the matrix of servers × variants × flavours ×
//! restarts, each across apps, fronts and load shapes (fronts.rs), the
//! combinations a server cannot run listed as skips, then the repeats,
//! interleaved. The lists that are no server's knob live in flavour.rs,
//! every name a trial carries in naming.rs. It runs on a checked plan
//! (plan::check) and never reads a file or starts anything.

use super::check::Knobs;
use super::naming::trial_id;
use super::{Plan, PlanError, PlannedTrial, ServerEntry, Shape};
use crate::lab::front::{HttpVersion, DEFAULT_KEEPALIVE};
use crate::runtime::SYSTEM;
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

    /// Every combination `repeats` times, interleaved (A B C A B C), with
    /// its id: the group and the repeat.
    fn repeated(&self, combos: &[PlannedTrial]) -> Vec<PlannedTrial> {
        let mut trials = Vec::new();
        for r in 1..=self.repeats {
            for c in combos {
                let mut t = c.clone();
                t.repeat = r;
                t.id = trial_id(&t.group, r);
                trials.push(t);
            }
        }
        trials
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all_installed, expand, expand_hello};
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
            let e = expand_hello("", &format!("{both}\n{restart}"));
            let mut names: Vec<&str> = e.trials.iter().map(|t| t.variant.as_str()).collect();
            names.sort_by_key(|n| want.iter().position(|w| w == n));
            assert_eq!(names, *want, "{restart}");
            let r = e.trials[0].restart.as_ref().unwrap();
            assert_eq!(r.at_s, 3.0);
        }
        let e = expand_hello(
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
