//! What each trial of a plan is told (trial_spec: the plan's load, the
//! server, its front, database, telemetry, pinning) and about how long a
//! plan takes (estimate: each trial's load and its server's start and
//! stop, the searches' steps, the run's reports).
//!
//! It runs nothing and writes nothing: mod.rs beside it runs the trials.

use super::{breakpoint_groups, RunOptions};
use crate::lab::apps::AppSpec;
use crate::lab::spec::ProfileAsk;
use crate::lab::trial::TrialSpec;
use crate::load::{LoadConfig, Pacing};
use crate::plan::{Expanded, Plan, PlannedTrial};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What starting and stopping a trial's server costs beside its load,
/// seconds, as measured on the 2-core VM: 72 puma trials of 2 s of load
/// took 197 s (0.75 s each beyond it); a plan of 1 s trials without
/// warm-up took about 1 s more than its load for unicorn and thin, 2.5 s
/// for passenger and 13 s for jruby-jetty (the JVM's start). A server not
/// listed (a user's own) is taken for [`START_AND_STOP_OTHER_S`].
const START_AND_STOP_S: &[(&str, f64)] = &[
    ("puma", 0.75),
    ("unicorn", 1.0),
    ("thin", 1.0),
    ("webrick", 1.0),
    ("uwsgi", 1.0),
    ("passenger", 2.5),
    ("jruby-jetty", 13.0),
];
const START_AND_STOP_OTHER_S: f64 = 1.5;

/// The run's own cost beyond its trials (the reports written at its end):
/// a plan of one 1 s puma trial with 2 s of warm-up took 4.5 s.
const RUN_S: f64 = 1.0;

fn start_and_stop(server: &str) -> Duration {
    let s = START_AND_STOP_S
        .iter()
        .find(|(name, _)| *name == server)
        .map_or(START_AND_STOP_OTHER_S, |(_, s)| *s);
    Duration::from_secs_f64(s)
}

/// About how long the plan will take: each trial's load (a soak's window
/// in a soak) with the start and stop of its server, each break-point
/// search's steps, and the run's reports. It was "about 1 min" for a 1 s
/// trial that took 3.6 s: a flat 3 s per start, rounded up to minutes.
pub fn estimate(e: &Expanded, plan: &Plan) -> Duration {
    let load = e.warmup + e.soak.unwrap_or(e.duration);
    let fixed = plan.breakpoint.as_ref().is_none_or(|b| b.and_fixed_loads);
    let mut total = Duration::from_secs_f64(RUN_S);
    if fixed {
        total += e
            .trials
            .iter()
            .map(|t| load + start_and_stop(&t.server))
            .sum::<Duration>();
    }
    if let Some(bp) = &plan.breakpoint {
        let step = crate::units::duration(&bp.step_duration).unwrap_or(Duration::from_secs(5))
            + Duration::from_secs(3);
        total += step * 8 * breakpoint_groups(e).len() as u32;
    }
    total
}

pub(in crate::plan) fn trial_spec(
    t: &PlannedTrial,
    e: &Expanded,
    plan: &Plan,
    opts: &RunOptions,
    dir: PathBuf,
    shape_override: Option<(usize, Option<f64>)>,
) -> TrialSpec {
    let mut load = LoadConfig::get("http://127.0.0.1:1/").expect("static URL");
    let (connections, rate) = shape_override.unwrap_or((t.shape.connections, t.shape.rate));
    load.connections = connections;
    load.pacing = rate.map_or(Pacing::Closed, Pacing::Rate);
    load.duration = Some(e.duration);
    load.warmup = e.warmup;
    load.warmup_until_steady = plan.load.warmup_until_steady;
    load.timeout = e.timeout;
    load.keep_alive = plan.load.keep_alive;
    load.threads = plan.load.threads;
    load.cpus = opts.load_cpus.clone();
    if let Some(schedule) = &e.replay {
        // Every trial replays the same record (once, or looped for the
        // trial's duration).
        Arc::clone(schedule).drive(&mut load);
    }
    // Rendered for each trial's front by the lab; the run's seed draws
    // unless the mix file has its own.
    load.mix = e
        .mix
        .as_ref()
        .map(|m| Arc::new(m.as_ref().clone().with_run_seed(opts.seed)));
    // Only an open loop uses it (a closed loop has no schedule to be late
    // against); set whatever the shape, as a rate search's steps open the
    // loop later, in `at_step`.
    load.slack = e.slack;
    load.slow = t.slow_clients.map(|n| plan.load.slow_of(n));
    let soak = e.soak.map(|d| crate::lab::soak::Soak::new(d, rate));
    if let Some(s) = &soak {
        s.apply(&mut load);
    }
    let server = t.spec.clone().expect("expanded trials carry their spec");
    let mut app = AppSpec::resolve(&t.app).expect("checked at expansion");
    if let Some(body) = plan.app_expect_body.as_ref().filter(|_| app.file.is_some()) {
        app.expect_body = body.clone();
    }
    // A plan of several apps may set one app's setting (the blog's pool)
    // and name its database: each goes only to the trials of that app.
    let settings = t
        .settings
        .iter()
        .filter(|(k, _)| {
            server.settings.contains_key(*k) || app.settings().iter().any(|a| a.name == k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let database = plan
        .database
        .as_deref()
        .and_then(|d| d.parse().ok())
        .filter(|_| app.needs_database());
    TrialSpec {
        server,
        app,
        workers: t.workers,
        threads: t.threads,
        settings,
        env: t.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        topology: t.topology(),
        load,
        server_cpus: opts.server_cpus.clone(),
        start_timeout: None,
        grace: Duration::from_secs(10),
        dir,
        interrupt: Arc::clone(&opts.interrupt),
        sample_interval: Duration::from_millis(200),
        stop_on_errors: false,
        telemetry: plan.telemetry || opts.telemetry,
        runtime: super::super::runtimes::runtime_of(t).and_then(|n| opts.runtimes.get(n).cloned()),
        switches: t.switches,
        budget: t.budget,
        restart: t.restart.as_ref().map(|r| r.spec()),
        soak,
        database,
        profile: plan.profile.then(|| ProfileAsk {
            rate_hz: crate::profile::DEFAULT_RATE_HZ,
            results_dir: opts.out.clone(),
            subdir: crate::store::profile_subdir(&t.id),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::breakpoint_base;
    use super::super::tests::options;
    use super::*;
    use crate::lab::trial::Topology;
    use crate::search::{StepKind, StepLoad};

    /// A plan of the blog and another app: the database and the pool go
    /// to the blog's trials only (the other app would refuse both).
    #[test]
    fn a_plans_database_and_pool_reach_only_the_app_that_has_them() {
        let reg = crate::plan::tests::all_installed();
        let text = "name = \"t\"\napps = [\"hello\", \"blog\"]\ndatabase = \"postgres\"\n[[server]]\nname = \"puma\"\nsettings = { pool = \"2\" }\n[load]\nconnections = [4]\n";
        let plan = Plan::parse(text, "t.toml").unwrap();
        let e = plan.expand(text, "t.toml", &reg).unwrap();
        let specs: Vec<TrialSpec> = e
            .trials
            .iter()
            .map(|t| trial_spec(t, &e, &plan, &options(), PathBuf::from("/x"), None))
            .collect();
        let of = |app: &str| specs.iter().find(|s| s.app.name == app).unwrap();
        assert_eq!(of("blog").database, Some(crate::database::Kind::Postgres));
        assert_eq!(
            of("blog").settings.get("pool").map(String::as_str),
            Some("2")
        );
        assert_eq!(of("hello").database, None);
        assert!(!of("hello").settings.contains_key("pool"));
    }

    /// `app_expect_body` is the check of a rackup file app; a built-in
    /// app beside it keeps its own.
    #[test]
    fn a_plans_expected_body_reaches_its_rackup_file_app_only() {
        let reg = crate::plan::tests::all_installed();
        let ru = concat!(env!("CARGO_MANIFEST_DIR"), "/ruby/apps/two_methods.ru");
        let text = format!(
            "name = \"t\"\napps = [\"hello\", \"{ru}\"]\napp_expect_body = \"spent\"\nservers = [\"puma\"]\n[load]\nconnections = [4]\n"
        );
        let plan = Plan::parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
        let e = plan.expand(&text, "t.toml", &reg).unwrap();
        let specs: Vec<TrialSpec> = e
            .trials
            .iter()
            .map(|t| trial_spec(t, &e, &plan, &options(), PathBuf::from("/x"), None))
            .collect();
        let of = |app: &str| specs.iter().find(|s| s.app.name == app).unwrap();
        assert_eq!(of("two_methods").app.expect_body, "spent");
        let hello = crate::lab::apps::AppSpec::resolve("hello").unwrap();
        assert_eq!(of("hello").app.expect_body, hello.expect_body);
    }

    /// A plan's soak makes each trial's load the soak's window at the
    /// shape's rate (100 req/s for a closed-loop shape), and the run's
    /// estimate counts it.
    #[test]
    fn a_plans_soak_is_every_trials_window_and_its_estimate() {
        let reg = crate::plan::tests::all_installed();
        for (shape, rate) in [("rates = [250]", 250.0), ("connections = [4]", 100.0)] {
            let text = format!(
                "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\nsoak = \"2h\"\n[load]\n{shape}\nwarmup = \"5s\"\n"
            );
            let plan = Plan::parse(&text, "t.toml").unwrap();
            let e = plan.expand(&text, "t.toml", &reg).unwrap();
            let spec = trial_spec(
                &e.trials[0],
                &e,
                &plan,
                &options(),
                PathBuf::from("/x"),
                None,
            );
            let soak = spec.soak.expect("a soak");
            assert_eq!(soak.duration, Duration::from_secs(7200), "{shape}");
            assert_eq!(soak.rate_rps, rate, "{shape}");
            assert_eq!(spec.load.duration, Some(Duration::from_secs(7200)));
            assert_eq!(spec.load.requests, None);
            assert_eq!(spec.load.pacing, Pacing::Rate(rate), "{shape}");
            assert_eq!(
                estimate(&e, &plan),
                Duration::from_secs_f64(RUN_S)
                    + Duration::from_secs_f64(7205.0 + 0.75) * e.trials.len() as u32
            );
        }
    }

    /// Regression: a plan of one 1 s puma trial (2 s of warm-up) that took
    /// 3.6 s was announced as "about 1 min". Its estimate is its load, the
    /// server's start and stop and the run's reports; a server that starts
    /// a JVM costs more than its load.
    #[test]
    fn the_estimate_counts_each_servers_start_and_stop() {
        let reg = crate::plan::tests::all_installed();
        // (servers, the estimate in seconds)
        let rows: &[(&str, f64)] = &[
            ("\"puma\"", 1.0 + 3.0 + 0.75),
            ("\"puma\", \"jruby-jetty\"", 1.0 + 2.0 * 3.0 + 0.75 + 13.0),
        ];
        for (servers, want) in rows {
            let text = format!(
                "name = \"t\"\napps = [\"hello\"]\nservers = [{servers}]\n[load]\nconnections = [2]\nduration = \"1s\"\n"
            );
            let plan = Plan::parse(&text, "t.toml").unwrap();
            let e = plan.expand(&text, "t.toml", &reg).unwrap();
            let got = estimate(&e, &plan).as_secs_f64();
            assert!(
                (got - want).abs() < 1e-6,
                "{servers}: {got} s, not {want} s"
            );
        }
    }

    #[test]
    fn a_planned_trial_starts_behind_the_nginx_it_names() {
        let text = "name = \"t\"\napps = [\"ip\"]\nbehind = [\"nginx\"]\nnginx_workers = [2]\nnginx_keepalive = [\"off\"]\nnginx_http = [\"1.0\"]\n[[server]]\nname = \"thin\"\ninstances = [4]\n[load]\nconnections = [10]\n";
        let reg = crate::plan::tests::all_installed();
        let plan = Plan::parse(text, "t.toml").unwrap();
        let e = plan.expand(text, "t.toml", &reg).unwrap();
        let opts = options();
        let spec = trial_spec(&e.trials[0], &e, &plan, &opts, PathBuf::from("/x"), None);
        assert_eq!(
            spec.topology,
            Topology::Nginx {
                workers: 2,
                unix_socket: true,
                keepalive: 0,
                http_version: crate::lab::front::HttpVersion::V1_0,
                instances: 4,
            }
        );
    }

    /// `profile = true` (or `--profile` through Overrides) asks every
    /// fixed-load trial to profile into the run's profiles/ID/; a search's
    /// base trial is never profiled.
    #[test]
    fn profile_true_profiles_each_trial_into_its_folder_and_no_search_step() {
        let reg = crate::plan::tests::all_installed();
        let text =
            "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [4]\n";
        let mut plan = Plan::parse(text, "t.toml").unwrap();
        let e = plan.expand(text, "t.toml", &reg).unwrap();
        let mut opts = options();
        opts.out = PathBuf::from("/results");
        let spec = trial_spec(&e.trials[0], &e, &plan, &opts, PathBuf::from("/x"), None);
        assert!(spec.profile.is_none(), "not asked");
        let o = crate::plan::Overrides {
            profile: true,
            ..Default::default()
        };
        plan.apply(&o, "t.toml").unwrap();
        let spec = trial_spec(&e.trials[0], &e, &plan, &opts, PathBuf::from("/x"), None);
        let ask = spec.profile.expect("profiled");
        assert_eq!(ask.results_dir, PathBuf::from("/results"));
        assert_eq!(ask.subdir, PathBuf::from("profiles").join(&e.trials[0].id));
        assert_eq!(ask.rate_hz, crate::profile::DEFAULT_RATE_HZ);
        assert!(breakpoint_base(&e.trials[0], &e, &plan, &opts)
            .profile
            .is_none());
        let keyed = Plan::parse(&format!("profile = true\n{text}"), "t.toml").unwrap();
        assert!(keyed.profile);
    }

    #[test]
    fn the_plans_slack_reaches_its_rate_trials_and_rate_search_steps() {
        let reg = crate::plan::tests::all_installed();
        let text = "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nrates = [100]\nslack = \"2ms\"\n[breakpoint]\nmode = \"rate\"\nstart = 50\n";
        let plan = Plan::parse(text, "t.toml").unwrap();
        let e = plan.expand(text, "t.toml", &reg).unwrap();
        let opts = options();
        let two = Duration::from_millis(2);
        let spec = trial_spec(&e.trials[0], &e, &plan, &opts, PathBuf::from("/x"), None);
        assert_eq!(spec.load.pacing, Pacing::Rate(100.0));
        assert_eq!(spec.load.slack, two);
        let step = StepLoad {
            rate_mode: true,
            step: Duration::from_secs(5),
            probe: Duration::from_millis(500),
            rate_connections: Some(plan.load.rate_connections),
        };
        let base = breakpoint_base(&e.trials[0], &e, &plan, &opts);
        let full = base.at_step(&step, 400.0, StepKind::Full, "d".into());
        assert_eq!(full.load.pacing, Pacing::Rate(400.0));
        assert_eq!(full.load.slack, two);
    }

    /// `telemetry = true` in a plan, or `run --telemetry`, turns it on in
    /// every trial; neither leaves it off.
    #[test]
    fn telemetry_comes_from_the_plan_or_the_command_line() {
        let reg = crate::plan::tests::all_installed();
        let base =
            "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [2]\n";
        for (text, flag, want) in [
            (format!("telemetry = true\n{base}"), false, true),
            (base.to_string(), true, true),
            (base.to_string(), false, false),
        ] {
            let plan = Plan::parse(&text, "t.toml").unwrap();
            let e = plan.expand(&text, "t.toml", &reg).unwrap();
            let opts = RunOptions {
                telemetry: flag,
                ..options()
            };
            let spec = trial_spec(&e.trials[0], &e, &plan, &opts, PathBuf::from("/x"), None);
            assert_eq!(spec.telemetry, want, "{text} --telemetry {flag}");
        }
    }
}
