//! A plan's `[fit]` (`rackbench fit PLAN`): reads and checks a plan that
//! asks for fits, and makes one base trial per server from it — the
//! plan's servers (with their settings and env), its first app, its one
//! `[budget]`, its `[load]` and `env` — with the search's settings from
//! `[fit]`. It never runs a trial (app::fit runs each search) and never
//! judges one (search::fit).
//!
//! The workers and threads are what a fit searches, so a plan that fixes
//! them, asks for more than one budget or load shape, or is also a sweep
//! or a break-point search is refused with the fix.

use super::error::at_line;
use super::runner::{breakpoint_groups, trial_spec, RunOptions};
use super::{Plan, PlanError};
use crate::lab::trial::TrialSpec;
use crate::server::spec::Registry;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The search's settings: `[fit]` in a plan, flags on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct FitSettings {
    /// p99 ceiling, µs.
    pub slo_p99_us: Option<u64>,
    /// Share of the memory limit kept free under the peak (0.1 = 10%).
    pub headroom: f64,
    /// Trials per configuration.
    pub repeats: usize,
    pub max_workers: u32,
    pub max_threads: u32,
}

impl Default for FitSettings {
    /// The flags' defaults.
    fn default() -> Self {
        FitSettings {
            slo_p99_us: None,
            headroom: 0.1,
            repeats: 3,
            max_workers: 8,
            max_threads: 16,
        }
    }
}

/// One server to fit: its name in the plan (the variant, as results
/// name it) and the trial every candidate starts from (no workers or
/// threads; the search sets them).
#[derive(Debug, Clone)]
pub struct FitTarget {
    pub name: String,
    pub spec: TrialSpec,
}

/// A plan read as fits, in the plan's order of servers.
#[derive(Debug, Clone)]
pub struct FitPlan {
    pub settings: FitSettings,
    pub targets: Vec<FitTarget>,
    /// The app every server is fitted with (the plan's first).
    pub app: String,
    /// The plan's other apps, not fitted.
    pub other_apps: Vec<String>,
    /// Servers skipped and why (not installed here).
    pub skipped: Vec<String>,
}

/// Where the trials run: the machine's side, not the plan's.
pub struct FitRig {
    pub interrupt: Arc<AtomicBool>,
    pub server_cpus: Vec<usize>,
    pub load_cpus: Vec<usize>,
}

/// "10%" or "0.1": a share in 0..1.
pub fn parse_share(s: &str) -> Result<f64, String> {
    let v = match s.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => s.trim().parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a headroom: give a share under 100%, e.g. 10% or 0.1"
        )),
    }
}

impl Plan {
    /// The plan as fits: checked, its `[fit]` read, one target per
    /// server (variant) with the first app. Nothing starts.
    pub fn fit_plan(
        &self,
        text: &str,
        file: &str,
        registry: &Registry,
        rig: &FitRig,
    ) -> Result<FitPlan, PlanError> {
        let at = at_line(text, file);
        self.check_fit_shape(&at)?;
        let settings = self.fit_settings(&at)?;
        // Expanded without the budget so that each target is named as the
        // plan names its server; the one budget goes on every spec after.
        let budget = self.budget.budgets()[0];
        let mut narrowed = self.clone();
        narrowed.apps.truncate(1);
        narrowed.budget = Default::default();
        // fit's steps are searches: never profiled (`profile = true`
        // profiles a run's fixed-load trials only).
        narrowed.profile = false;
        let e = narrowed.expand(text, file, registry)?;
        let opts = RunOptions {
            out: PathBuf::new(),
            resume: false,
            interrupt: Arc::clone(&rig.interrupt),
            server_cpus: rig.server_cpus.clone(),
            load_cpus: rig.load_cpus.clone(),
            progress: None,
            command: String::new(),
            seed: 0,
            telemetry: false,
            runtimes: Default::default(),
        };
        let targets = breakpoint_groups(&e)
            .iter()
            .map(|t| {
                let mut spec = trial_spec(t, &e, &narrowed, &opts, PathBuf::new(), None);
                (spec.workers, spec.threads, spec.budget) = (None, None, budget);
                FitTarget {
                    name: t.variant.clone(),
                    spec,
                }
            })
            .collect();
        Ok(FitPlan {
            settings,
            targets,
            app: self.apps[0].clone(),
            other_apps: self.apps[1..].to_vec(),
            skipped: e.skipped,
        })
    }

    /// `[fit]` over the flags' defaults, each value checked.
    fn fit_settings(
        &self,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<FitSettings, PlanError> {
        let mut s = FitSettings::default();
        let Some(f) = &self.fit else {
            return Ok(s);
        };
        if let Some(slo) = &f.slo {
            s.slo_p99_us = Some(crate::search::parse_slo(slo).map_err(|m| at("slo", m))?);
        }
        if let Some(h) = &f.headroom {
            s.headroom = parse_share(h).map_err(|m| at("headroom", m))?;
        }
        for (key, v) in [
            ("repeats", f.repeats.map(|r| r as u64)),
            ("max_workers", f.max_workers.map(u64::from)),
            ("max_threads", f.max_threads.map(u64::from)),
        ] {
            if v == Some(0) {
                return Err(at(key, format!("[fit] {key} needs 1 or more")));
            }
        }
        s.repeats = f.repeats.unwrap_or(s.repeats);
        s.max_workers = f.max_workers.unwrap_or(s.max_workers);
        s.max_threads = f.max_threads.unwrap_or(s.max_threads);
        Ok(s)
    }

    /// What a fit cannot take: fixed workers or threads, several budgets
    /// or load shapes, a sweep, a break-point search, runtimes.
    fn check_fit_shape(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        let refuse = |needle: &str, m: &str| Err(at(needle, m.to_string()));
        if let Some(e) = self
            .server
            .iter()
            .find(|e| !e.workers.is_empty() || !e.threads.is_empty())
        {
            return Err(at(
                "workers",
                format!("[[server]] {}: a fit searches the workers and threads itself; bound them with [fit] max_workers and max_threads instead", e.name),
            ));
        }
        if self.budget.memory.len() > 1 || self.budget.cpus.len() > 1 {
            return refuse("[budget]", "a fit has one budget: give [budget] one memory and one cpus (fit each budget with its own plan, or --memory and --cpus)");
        }
        if !self.load.rates.is_empty() || self.load.replay.is_some() {
            return refuse("[load]", "a fit loads each candidate with closed-loop connections: drop rates and replay from [load]");
        }
        if self.load.connections.len() > 1 || !self.load.app_connections.is_empty() {
            return refuse(
                "connections",
                "a fit has one load: give [load] one connections value, e.g. connections = [16]",
            );
        }
        if self.sweep.is_some() || self.breakpoint.is_some() {
            return refuse("[fit]", "a plan is a fit, a sweep or a break-point search, not two: keep [fit] or the other in this plan");
        }
        if !self.runtimes.is_empty() || self.server.iter().any(|e| !e.runtimes.is_empty()) {
            return refuse("runtimes", "a fit runs on the host: drop runtimes from the plan (fit another runtime with `rackbench fit --runtime NAME`)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::all_installed;

    fn rig() -> FitRig {
        FitRig {
            interrupt: Arc::new(AtomicBool::new(false)),
            server_cpus: vec![0],
            load_cpus: vec![1],
        }
    }

    fn fit_plan(text: &str) -> Result<FitPlan, PlanError> {
        Plan::parse(text, "t.toml")?.fit_plan(text, "t.toml", &all_installed(), &rig())
    }

    const HEAD: &str = "name = \"t\"\nservers = [\"puma\", \"unicorn\"]\napps = [\"memory\", \"hello\"]\nenv = { MEMORY_PER_WORKER = \"48M\" }\n[budget]\nmemory = \"512M\"\ncpus = 1\n[load]\nconnections = [16]\nduration = \"2s\"\nwarmup = \"1s\"\n";

    #[test]
    fn a_fit_plan_gives_each_server_its_base_trial_in_the_budget() {
        let p = fit_plan(&format!(
            "{HEAD}[fit]\nslo = \"p99=200ms\"\nheadroom = \"20%\"\nmax_workers = 6\n"
        ))
        .unwrap();
        let names: Vec<&str> = p.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["puma", "unicorn"]);
        assert_eq!(p.app, "memory");
        assert_eq!(p.other_apps, ["hello"]);
        let want = FitSettings {
            slo_p99_us: Some(200_000),
            headroom: 0.2,
            max_workers: 6,
            ..FitSettings::default()
        };
        assert_eq!(p.settings, want);
        for t in &p.targets {
            let s = &t.spec;
            assert_eq!(s.app.name, "memory");
            assert_eq!((s.workers, s.threads), (None, None), "{}", t.name);
            assert_eq!(s.load.connections, 16);
            assert_eq!(s.load.duration, Some(std::time::Duration::from_secs(2)));
            assert_eq!(s.load.warmup, std::time::Duration::from_secs(1));
            assert!(
                s.env.contains(&("MEMORY_PER_WORKER".into(), "48M".into())),
                "{:?}",
                s.env
            );
            let b = s.budget.expect("the plan's budget");
            assert_eq!(b.memory_limit_bytes, Some(512 << 20));
            assert_eq!(b.cpus, Some(1.0));
        }
    }

    #[test]
    fn a_plan_without_fit_takes_the_flags_defaults() {
        assert_eq!(fit_plan(HEAD).unwrap().settings, FitSettings::default());
    }

    /// Each row breaks one rule; the message names the fix.
    #[test]
    fn what_a_fit_cannot_take_is_refused_with_the_fix() {
        let rows = [
            ("[fit]\nslo = \"p90=1s\"\n", "p99"),
            ("[fit]\nheadroom = \"150%\"\n", "under 100%"),
            ("[fit]\nrepeats = 0\n", "1 or more"),
            ("[fit]\nbogus = 1\n", "[fit] has no key `bogus`"),
            ("[breakpoint]\nslo = \"p99=1s\"\n", "not two"),
        ];
        for (tail, want) in rows {
            let err = fit_plan(&format!("{HEAD}{tail}")).unwrap_err().to_string();
            assert!(err.contains(want), "{tail}: {err}");
        }
        let fixed = format!("{HEAD}[[server]]\nname = \"thin\"\nworkers = [2]\n");
        let err = fit_plan(&fixed).unwrap_err().to_string();
        assert!(err.contains("max_workers"), "{err}");
        let two = HEAD.replace("memory = \"512M\"", "memory = [\"512M\", \"1G\"]");
        let err = fit_plan(&two).unwrap_err().to_string();
        assert!(err.contains("one budget"), "{err}");
        let shapes = HEAD.replace("connections = [16]", "connections = [8, 16]");
        let err = fit_plan(&shapes).unwrap_err().to_string();
        assert!(err.contains("one connections"), "{err}");
    }

    #[test]
    fn shares_parse_and_bad_ones_name_the_fix() {
        assert_eq!(parse_share("10%").unwrap(), 0.1);
        assert_eq!(parse_share("0.25").unwrap(), 0.25);
        assert!(parse_share("100%").is_err());
        assert!(parse_share("-1").is_err());
    }
}
