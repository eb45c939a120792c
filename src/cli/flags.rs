//! The flags several subcommands share (the runtime, the budget, the
//! database, slow clients, a restart, a soak), each turning into its part
//! of `plan::Overrides` (or of one trial's spec). Their own file, so that
//! no subcommand file imports another for them.

use super::{parse, usage};
use crate::load::slow::{SlowClients, SlowMode};
use crate::plan::overrides::SlowOverride;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The app's database: the same flag on `trial`, `breakpoint`, `mirror
/// --shadow-server`, `run` and `sweep` (where it replaces the plan's
/// `database`).
#[derive(Debug, Clone, Args, Default)]
pub struct DatabaseFlags {
    /// The database of an app that has one (the blog app): sqlite (a
    /// file in the trial's directory) [default] or postgres (Debian's
    /// PostgreSQL, started and stopped by the trial).
    #[arg(long, value_name = "sqlite|postgres")]
    pub database: Option<crate::database::Kind>,
}

/// A memory and CPU budget for the server's whole process tree: the same
/// flags on `trial`, `breakpoint`, `mirror --shadow-server`, `run` and
/// `sweep` (where they replace the plan's `[budget]`).
#[derive(Debug, Clone, Args, Default)]
pub struct BudgetFlags {
    /// Memory limit for the server's process tree (its own control
    /// group): 512M, 1G, 1.5G or bytes. nginx and the load stay outside.
    #[arg(long, value_name = "SIZE", value_parser = crate::budget::parse_size)]
    pub memory: Option<u64>,
    /// CPU limit for the server's process tree: 1.5 is one and a half
    /// CPUs' worth of time per second.
    #[arg(long, value_name = "N", value_parser = parse_cpus)]
    pub cpus: Option<f64>,
}

impl BudgetFlags {
    /// The budget the flags ask (None without either).
    pub fn budget(&self) -> Option<crate::budget::Budget> {
        (self.memory.is_some() || self.cpus.is_some()).then_some(crate::budget::Budget {
            memory_limit_bytes: self.memory,
            cpus: self.cpus,
        })
    }
}

fn parse_cpus(s: &str) -> Result<f64, String> {
    let c: f64 = s
        .parse()
        .map_err(|_| format!("--cpus '{s}': give a number of CPUs, like 1 or 1.5"))?;
    crate::budget::check_cpus(c).map(|()| c)
}

/// Where the server runs from and what is asked of its Ruby: the same
/// flags on `trial`, `breakpoint`, `mirror --shadow-server` and `run`
/// (where each replaces the plan's list of that key).
#[derive(Debug, Clone, Args, Default)]
pub struct RuntimeFlags {
    /// Where the server runs from: system (the host) [default], debian-12,
    /// debian-13, debian-unstable (built on first use), jruby, or a Ruby
    /// saved with `rackbench runtime add NAME --ruby PATH`.
    #[arg(long, value_name = "NAME")]
    pub runtime: Option<String>,
    /// Run the server's Ruby with YJIT (refused for a Ruby built without it).
    #[arg(long)]
    pub yjit: bool,
    /// The server's malloc: glibc, or jemalloc (preloaded from the
    /// runtime's own libjemalloc).
    #[arg(long, value_name = "glibc|jemalloc")]
    pub allocator: Option<crate::runtime::Allocator>,
    /// MALLOC_ARENA_MAX for glibc's malloc in the server.
    #[arg(long, value_name = "N")]
    pub malloc_arena_max: Option<u32>,
}

impl RuntimeFlags {
    /// What the flags ask of the runtime's Ruby.
    pub fn switches(&self) -> crate::runtime::Switches {
        crate::runtime::Switches {
            yjit: self.yjit.then_some(true),
            allocator: self.allocator,
            malloc_arena_max: self.malloc_arena_max,
        }
    }
}

/// A soak: `--soak 2h` on `trial` and `run` (where it replaces a plan's
/// `soak`).
#[derive(Debug, Clone, Args, Default)]
pub struct SoakFlags {
    /// Soak for this long (2h, 30m): an open-loop window after the
    /// warm-up at --rate (on run: the plan's rates; 100 req/s by default),
    /// every worker's RSS, PSS, USS and shared memory sampled over time
    /// and its growth per hour fitted.
    #[arg(long, value_name = "DURATION", value_parser = parse::duration)]
    pub soak: Option<Duration>,
}

/// A restart under load: the same flags on `trial` and `run` (where they
/// replace the plan's `[restart]`).
#[derive(Debug, Clone, Args, Default)]
pub struct RestartFlags {
    /// Restart the server during the counted window, as its operators do:
    /// a kind from its adapter (puma: phased, hot; unicorn: reexec;
    /// passenger: restart) or kill-worker (SIGKILL to one worker).
    #[arg(long, value_name = "KIND", requires = "restart_at")]
    pub restart: Option<String>,
    /// When to restart, from the start of the counted window (e.g. 5s).
    #[arg(long, value_name = "TIME", requires = "restart", value_parser = parse::duration)]
    pub restart_at: Option<Duration>,
}

impl RestartFlags {
    /// The restart the flags ask (None without them).
    pub fn restart(&self) -> Option<crate::lab::restart::RestartSpec> {
        Some(crate::lab::restart::RestartSpec {
            kind: self.restart.clone()?,
            at: self.restart_at?,
        })
    }
}

/// Slow clients beside the load (`load::slow`): the same flags on `load`,
/// `trial`, `run` and `sweep` (where they replace the plan's `[load]`
/// slow keys).
#[derive(Debug, Clone, Args, Default)]
pub struct SlowFlags {
    /// Also keep N slow connections open beside the load, on the same
    /// server (at most 10000); their account is the report's `slow_clients`.
    #[arg(long, value_name = "N")]
    pub slow_clients: Option<usize>,
    /// What the slow clients do: headers (a head trickled, never ended),
    /// body (a declared body trickled) or read (the answer read slowly)
    /// [default: headers].
    #[arg(long, value_name = "headers|body|read", value_parser = SlowMode::parse)]
    pub slow_mode: Option<SlowMode>,
    /// Bytes a slow client writes (or reads) at each step [default: 4].
    #[arg(long, value_name = "BYTES")]
    pub slow_bytes: Option<usize>,
    /// Time between a slow client's steps, e.g. 1s, 500ms [default: 1s].
    #[arg(long, value_name = "DURATION", value_parser = parse::duration)]
    pub slow_every: Option<Duration>,
}

impl SlowFlags {
    fn given(&self) -> SlowOverride {
        SlowOverride {
            clients: self.slow_clients,
            mode: self.slow_mode,
            bytes: self.slow_bytes,
            every: self.slow_every,
        }
    }

    /// The slow clients asked (None without --slow-clients, or with 0);
    /// a pace without a count is a usage error naming the fix.
    pub fn slow(&self) -> Result<Option<SlowClients>> {
        let Some(count) = self.slow_clients.filter(|&n| n > 0) else {
            if let Some(flag) = self.given().orphan() {
                return Err(usage(format!(
                    "{flag} needs --slow-clients N: add it (e.g. --slow-clients 4), or drop {flag}"
                )));
            }
            return Ok(None);
        };
        let mut slow = SlowClients::new(count, self.slow_mode.unwrap_or(SlowMode::Headers));
        if let Some(b) = self.slow_bytes {
            slow.bytes_per_step = b;
        }
        if let Some(e) = self.slow_every {
            slow.every = e;
        }
        slow.check().map_err(usage)?;
        Ok(Some(slow))
    }

    /// The flags in place of a plan's slow keys: a count given is checked
    /// here; a pace without one is `Plan::apply`'s to judge (the plan may
    /// have a count).
    pub fn overrides(&self) -> Result<SlowOverride> {
        if self.slow_clients.is_some() {
            self.slow()?;
        }
        Ok(self.given())
    }
}

/// The flags `run` and `sweep` share, in place of a plan's keys: the
/// runtime, the budget, the database and slow clients.
pub fn plan_overrides(
    on: &RuntimeFlags,
    budget: &BudgetFlags,
    database: &DatabaseFlags,
    slow: &SlowFlags,
) -> Result<crate::plan::Overrides> {
    Ok(crate::plan::Overrides {
        runtime: on.runtime.clone(),
        switches: on.switches(),
        memory: budget.memory,
        cpus: budget.cpus,
        database: database.database,
        slow: slow.overrides()?,
        ..Default::default()
    })
}

/// The one server and app a plan is made of when flags make it: the same
/// flags on `sweep` and `ab` (without a plan file).
#[derive(Debug, Clone, Args)]
pub struct PlanServerFlags {
    /// The server (see `rackbench servers`), without a plan file.
    #[arg(long)]
    pub server: Option<String>,
    /// Your own server's command template (as in servers.toml), e.g.
    /// "myserver --port {{port}} --workers {{workers}}".
    #[arg(long, conflicts_with = "server")]
    pub command: Option<String>,
    /// The app (a built-in name or a config.ru path), without a plan file.
    #[arg(long, default_value = "hello")]
    pub app: String,
    /// Text a config.ru app must answer with (the plan's `app_expect_body`).
    #[arg(long = "app-expect-body", value_name = "TEXT")]
    pub app_expect_body: Option<String>,
    /// Open loop: requests per second on a fixed schedule, over the
    /// connections (the plan's `[load] rates`).
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// Fixed workers (when not varied).
    #[arg(long)]
    pub workers: Option<u32>,
    /// Fixed threads (when not varied).
    #[arg(long)]
    pub threads: Option<u32>,
    /// A fixed server setting KEY=VALUE (repeatable).
    #[arg(long = "set", value_parser = parse::key_value)]
    pub settings: Vec<(String, String)>,
    /// A fixed environment variable KEY=VALUE for the server (repeatable).
    #[arg(long = "env", value_parser = parse::key_value)]
    pub env: Vec<(String, String)>,
    /// Put nginx in front (implied by --vary nginx_workers=...).
    #[arg(long, value_parser = ["nginx"])]
    pub behind: Option<String>,
}

impl PlanServerFlags {
    /// The sweep's plan these flags (and a plan file, the variable, the
    /// load) make: `app::sweep`'s request.
    pub fn sweep_plan(
        &self,
        file: Option<PathBuf>,
        vary: Option<String>,
        load: (usize, String, String),
        repeats: u32,
    ) -> crate::app::sweep::SweepPlan {
        let (connections, duration, warmup) = load;
        crate::app::sweep::SweepPlan {
            file,
            vary,
            server: self.server.clone(),
            command: self.command.clone(),
            app: self.app.clone(),
            app_expect_body: self.app_expect_body.clone(),
            rate: self.rate,
            workers: self.workers,
            threads: self.threads,
            settings: self.settings.clone(),
            env: self.env.clone(),
            behind_nginx: self.behind.is_some(),
            connections,
            duration,
            warmup,
            repeats,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use clap::Parser;

    fn ab(words: &[&str]) -> super::super::ab::AbArgs {
        let cli = Cli::try_parse_from(words).unwrap_or_else(|e| panic!("{e}"));
        match cli.command {
            Command::Ab(a) => *a,
            _ => panic!("not ab"),
        }
    }

    /// A trial's command line (trial's own spellings) plus --vary is an
    /// A/B, and each flag lands in the plan the two sides are run from:
    /// the plan made from flags, then `Plan::apply` (as `app::ab` does).
    #[test]
    fn a_trial_command_line_with_vary_is_an_ab_whose_plan_has_every_flag() {
        let ru = concat!(env!("CARGO_MANIFEST_DIR"), "/ruby/apps/two_methods.ru");
        let args = ab(&[
            "rackbench",
            "ab",
            "--server",
            "puma",
            "--app",
            ru,
            "--app-expect-body",
            "spent",
            "-c",
            "2",
            "--rate",
            "150",
            "--warmup",
            "2s",
            "--env",
            "TWO_METHODS_B=0",
            "--workers",
            "2",
            "--threads",
            "3",
            "--runtime",
            "system",
            "--memory",
            "512M",
            "--cpus",
            "1.5",
            "--behind",
            "nginx",
            "--telemetry",
            "--vary",
            "env.RUBY_GC_MALLOC_LIMIT=16000000,64000000",
        ]);
        assert!(args.telemetry);
        let made = args.made.sweep_plan(
            None,
            args.vary.clone(),
            (
                args.connections,
                format!("{}ms", args.duration.as_millis()),
                format!("{}ms", args.warmup.as_millis()),
            ),
            1,
        );
        let o = super::plan_overrides(&args.on, &args.budget, &args.database, &Default::default())
            .unwrap();
        let mut source = crate::app::sweep::plan(&made, &o).unwrap_or_else(|e| panic!("{e}"));
        source.plan.apply(&o, "t.toml").unwrap();
        let p = &source.plan;
        assert_eq!(p.load.rates, vec![150.0]);
        assert_eq!(p.load.rate_connections, 2);
        assert!(p.load.connections.is_empty(), "one shape: the open loop");
        assert_eq!(p.load.warmup, "2000ms");
        assert_eq!(p.apps, vec![ru.to_string()]);
        assert_eq!(p.app_expect_body.as_deref(), Some("spent"));
        let server = &p.server[0];
        assert_eq!(server.name, "puma");
        assert_eq!(server.workers, vec![2]);
        assert_eq!(server.threads, vec![3]);
        assert_eq!(
            server.env.get("TWO_METHODS_B").map(String::as_str),
            Some("0")
        );
        assert_eq!(p.runtimes, vec!["system".to_string()]);
        assert_eq!(p.budget.memory, vec![512 << 20]);
        assert_eq!(p.budget.cpus, vec![1.5]);
        assert_eq!(p.behind, vec!["nginx".to_string()]);
        let sweep = p.sweep.as_ref().expect("the two values");
        assert_eq!(sweep.values, vec!["16000000", "64000000"]);
        let both = ab(&[
            "rackbench",
            "ab",
            "--server",
            "puma",
            "--rate",
            "150",
            "--vary",
            "connections=2,4",
        ]);
        let made = both
            .made
            .sweep_plan(None, both.vary.clone(), (2, "1s".into(), "1s".into()), 1);
        let e = crate::app::sweep::plan(&made, &Default::default())
            .err()
            .unwrap();
        assert!(e.to_string().contains("drop one of the two"), "{e}");
    }
}

/// How an A/B judges and when it stops: `ab`'s and `tune gc`'s flags
/// (`sweep --until-verdict` spells the same flags, each requiring it).
#[derive(Args, Debug, Clone)]
pub struct JudgeFlags {
    /// The metric judged: throughput, p50, p90, p99, cpu_per_request,
    /// rss_peak, ... (compare's names).
    #[arg(long, default_value = "throughput")]
    pub metric: String,
    /// An interval inside ±margin percent is "equivalent".
    #[arg(long, default_value_t = crate::stats::sequential::DEFAULT_MARGIN_PCT)]
    pub margin: f64,
    /// The error rate of a verdict (0.05: 95% intervals).
    #[arg(long, default_value_t = crate::stats::sequential::ALPHA)]
    pub alpha: f64,
    /// Counted load over both sides of an A/B at most; then "undecided".
    #[arg(long, default_value = "2m", value_parser = parse::duration)]
    pub max_load: Duration,
    /// A round whose window the machine disturbed runs again, at most
    /// this many times.
    #[arg(long, default_value_t = 3)]
    pub rerun_disturbed: u32,
}

impl JudgeFlags {
    pub fn judge(&self) -> crate::app::ab::Judge {
        crate::app::ab::Judge {
            metric: self.metric.clone(),
            margin_pct: self.margin,
            alpha: self.alpha,
            max_load: self.max_load,
            rerun_disturbed: self.rerun_disturbed,
        }
    }
}

/// The live endpoint: the same flags on `load`, `trial`, `run`, `sweep`,
/// `ab`, `mirror` and `record` (docs/LIVE.md).
#[derive(Debug, Clone, Args, Default)]
pub struct MetricsFlags {
    /// Serve what is measured so far over HTTP while the command runs:
    /// /metrics (OpenMetrics or Prometheus text), /live.json and a page
    /// at /. PORT, :PORT or HOST:PORT; the host is 127.0.0.1 unless given.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: keep serving the final figures this long
    /// after the work ends (Ctrl-C ends it sooner), so a scraper gets the
    /// last counts: one scrape interval or more.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse::duration)]
    pub metrics_linger: Duration,
    /// Watch the run in a browser: the live page (with /metrics and
    /// /live.json) on a free loopback port, its address printed; as
    /// --metrics-listen 127.0.0.1:0.
    #[arg(long, conflicts_with = "metrics_listen")]
    pub live: bool,
}

impl MetricsFlags {
    /// Starts the endpoint for `command` when asked, before any work: a
    /// port in use is a usage error (exit 2) naming the fix.
    pub fn start(&self, command: &str) -> Result<Option<crate::live::Live>> {
        let any_port = self.live.then(|| "127.0.0.1:0".to_string());
        let Some(text) = self.metrics_listen.as_ref().or(any_port.as_ref()) else {
            if !self.metrics_linger.is_zero() {
                return Err(usage(
                    "--metrics-linger needs --metrics-listen ADDR or --live: add one, or drop --metrics-linger"
                        .into(),
                ));
            }
            return Ok(None);
        };
        let addr = crate::live::parse_addr(text).map_err(usage)?;
        crate::live::Live::start(command, addr, self.metrics_linger)
            .map(Some)
            .map_err(usage)
    }
}

/// Ends a command's endpoint (its linger), if it has one.
pub fn finish_live(live: Option<crate::live::Live>) {
    if let Some(l) = live {
        l.finish();
    }
}
