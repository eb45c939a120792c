//! Plans: a TOML file naming servers (with variants), apps, load shapes,
//! topologies, environment and repeats; expanded into the list of trials
//! to run, in the order to run them.
//!
//! A plan with a mistake is refused before anything starts, naming the
//! file, the line and the fix. Combinations a server cannot do (threads on
//! unicorn) are skipped and listed, not failed.
//!
//! The rooms: `schema` is what a plan file may say (`keys` says it in
//! words when a file gets it wrong), `check` refuses what
//! it must not, `expand` turns a checked plan into trials (its flavours in
//! `flavour`, its apps × fronts × shapes in `fronts`, every name a trial
//! carries in `naming`), `sweep` is the one-variable form folded into the
//! fields, `fit` reads a plan's `[fit]` as one base trial per server for
//! `rackbench fit`, `runtimes` resolves and checks the runtimes the trials
//! name, `overrides` puts the command line's flags in place of a plan's
//! keys, `runner` runs the trials.
//! This file only joins them: read, check, expand.

mod check;
mod error;
mod expand;
pub mod fit;
mod flavour;
mod fronts;
mod keys;
mod naming;
pub mod overrides;
pub mod runner;
pub mod runtimes;
mod schema;
pub mod sweep;

pub use crate::store::records::{PlannedTrial, Shape};
pub use error::PlanError;
pub use expand::Expanded;
pub use naming::slug;
pub use overrides::Overrides;
pub use schema::{
    BreakpointSection, BudgetSection, FitSection, LoadSection, Plan, RestartSection, ServerEntry,
};

use crate::server::spec::Registry;

/// The built-in default plan (`rackbench run` with no plan file).
pub const DEFAULT_PLAN: &str = include_str!("../../plans/default.toml");

impl Plan {
    pub fn parse(text: &str, file: &str) -> Result<Plan, PlanError> {
        let mut plan: Plan = toml::from_str(text).map_err(|e| keys::refusal(text, file, &e))?;
        plan.check_parsed(text, file)?;
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
        let at = error::at_line(text, file);
        let knobs = self.check_knobs(file, &at)?;
        self.expand_checked(knobs, registry, &at)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lab::front::HttpVersion;

    pub(crate) fn expand(text: &str) -> Result<Expanded, PlanError> {
        Plan::parse(text, "t.toml")?.expand(text, "t.toml", &Registry::builtin())
    }

    /// A plan of the hello app at 10 connections with `head` and
    /// `servers` in it, expanded with every server installed.
    pub(crate) fn expand_hello(head: &str, servers: &str) -> Expanded {
        let text = format!(
            "name = \"t\"\napps = [\"hello\"]\n{head}\n{servers}\n[load]\nconnections = [10]\n"
        );
        Plan::parse(&text, "t.toml")
            .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// Every built-in server counts as installed, so the seeds' matrices
    /// are checked on any machine (the runner's and sweep's tests too).
    pub(crate) fn all_installed() -> Registry {
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
