//! `rackbench run [PLAN]`: a whole study from one command.

use super::usage;
use crate::app;
use crate::app::run::RunRequest;
use crate::app::sink::Terminal;
use crate::store::ResultsDir;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

mod resume;

use resume::{check_resume, resumable};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Plan file (TOML); without one, the built-in default plan.
    pub plan: Option<PathBuf>,
    /// Results directory [default: results/PLAN-DATE-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue an interrupted run in --out without redoing finished trials.
    #[arg(long, requires = "out")]
    pub resume: bool,
    /// Resume even though the plan or a servers file changed since the run began.
    #[arg(long, requires = "resume")]
    pub force_resume: bool,
    /// Seed of the shuffle within each round of repeats: replays a run's
    /// order [default: a fresh seed, printed and kept in manifest.json].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also read these server definitions.
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    /// Do not pin the servers and the generator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Print the trials the plan expands to and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// A/A run: the plan's control twice, as two labelled variants, then
    /// compared; shows the smallest difference this machine can resolve.
    #[arg(long)]
    pub aa: bool,
    /// With --aa: the variant to use as control [default: the plan's first].
    #[arg(long, requires = "aa", value_name = "VARIANT")]
    pub control: Option<String>,
    /// Telemetry in every trial, as the plan's `telemetry = true`: app
    /// time, queue time behind nginx, GC (docs/TELEMETRY.md).
    #[arg(long)]
    pub telemetry: bool,
    /// Profile every trial with rbspy, as the plan's `profile = true`
    /// (docs/PROFILES.md).
    #[arg(long)]
    pub profile: bool,
    /// --runtime, --yjit, --allocator, --malloc-arena-max: each in place
    /// of the plan's list of that key.
    #[command(flatten)]
    pub on: super::flags::RuntimeFlags,
    /// --memory, --cpus: in place of the plan's `[budget]`.
    #[command(flatten)]
    pub budget: super::flags::BudgetFlags,
    /// --database: in place of the plan's `database`.
    #[command(flatten)]
    pub database: super::flags::DatabaseFlags,
    /// --slow-clients, --slow-mode, --slow-bytes, --slow-every: in place
    /// of the plan's `[load]` slow keys.
    #[command(flatten)]
    pub slow: super::flags::SlowFlags,
    /// A request mix (docs/MIX_FORMAT.md) for every trial, in place of the
    /// plan's `[load] mix`.
    #[arg(long, value_name = "FILE")]
    pub mix: Option<PathBuf>,
    /// --restart, --restart-at: in place of the plan's `[restart]`.
    #[command(flatten)]
    pub restart: super::flags::RestartFlags,
    /// --soak: every trial a soak this long, in place of the plan's `soak`.
    #[command(flatten)]
    pub soak: super::flags::SoakFlags,
    /// A repeat the machine disturbed runs again at the end of its round,
    /// at most N times, in place of the plan's `rerun_disturbed` (0: kept
    /// and marked).
    #[arg(long, value_name = "N")]
    pub rerun_disturbed: Option<u32>,
    #[command(flatten)]
    pub metrics: super::flags::MetricsFlags,
}

/// The flags in place of the plan's keys (`Plan::apply` puts them there).
fn overrides(args: &RunArgs) -> Result<crate::plan::Overrides> {
    let mut o = super::flags::plan_overrides(&args.on, &args.budget, &args.database, &args.slow)?;
    o.mix = args.mix.clone();
    o.restart = args.restart.restart().map(|r| (r.kind, r.at));
    o.soak = args.soak.soak;
    o.profile = args.profile;
    o.rerun_disturbed = args.rerun_disturbed;
    Ok(o)
}

/// Read the plan, turn the flags into a request (the overrides of the
/// plan's keys among it), prepare it (`app::run`), check a resumed
/// directory, then run it on the terminal.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    // A dry run starts nothing, the endpoint included.
    let live = match args.dry_run {
        true => None,
        false => args.metrics.start("run")?,
    };
    let source = app::run::read_plan(args.plan.as_deref())?;
    let registry = crate::app::servers::registry(&args.servers_file)?;
    let overrides = overrides(&args)?;
    let request = RunRequest {
        plan_path: args.plan.clone(),
        out: args.out.clone(),
        resume: args.resume,
        seed: args.seed,
        registry,
        servers_files: args.servers_file.clone(),
        pin: !args.no_pin,
        dry_run: args.dry_run,
        aa: args
            .aa
            .then(|| (args.control.clone(), super::compare::DEFAULT_SEED)),
        telemetry: args.telemetry,
        overrides,
    };
    let prepared = app::run::prepare(source, request)?;
    if args.resume {
        resumable(&prepared.out).map_err(usage)?;
        let study = crate::store::study::Study::read(ResultsDir::new(&prepared.out));
        check_resume(
            &study,
            &prepared.source.text,
            &args.servers_file,
            args.force_resume,
        )?;
    }
    let code = app::run::execute(prepared, Arc::new(Terminal::new()))?;
    super::flags::finish_live(live);
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use clap::Parser;

    fn overrides_of(words: &[&str]) -> crate::plan::Overrides {
        let cli = Cli::try_parse_from(words).unwrap_or_else(|e| panic!("{e}"));
        match cli.command {
            Command::Run(a) => super::overrides(&a).unwrap(),
            _ => panic!("not run"),
        }
    }

    /// `run --rerun-disturbed N` reaches the plan's `rerun_disturbed`
    /// through the overrides; without it the plan's key stays.
    #[test]
    fn rerun_disturbed_reaches_the_plan() {
        let o = overrides_of(&["rackbench", "run", "p.toml", "--rerun-disturbed", "2"]);
        assert_eq!(o.rerun_disturbed, Some(2));
        let mut plan = crate::plan::Plan::parse(
            "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n",
            "t",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        plan.apply(&o, "t").unwrap();
        assert_eq!(plan.rerun_disturbed, 2);
        let none = overrides_of(&["rackbench", "run", "p.toml"]);
        assert_eq!(none.rerun_disturbed, None);
    }
}
