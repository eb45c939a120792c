//! `rackbench run [PLAN]`: a whole study from one command.

use super::load::stop_on_signals;
use super::UsageError;
use crate::plan::runner::{estimate, render_summary, run_plan, RunOptions};
use crate::plan::{Plan, DEFAULT_PLAN};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

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
    /// Also read these server definitions.
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    /// Do not pin the servers and the generator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Print the trials the plan expands to and stop.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let usage = |m: String| anyhow::Error::new(UsageError(m));
    let (plan, text, file) = match &args.plan {
        Some(p) => {
            let (plan, text) = Plan::load(p).map_err(|e| usage(e.to_string()))?;
            (plan, text, p.display().to_string())
        }
        None => (
            Plan::parse(DEFAULT_PLAN, "default plan").expect("the default plan parses"),
            DEFAULT_PLAN.to_string(),
            "default plan".to_string(),
        ),
    };
    let registry = super::servers::registry(&args.servers_file)?;
    let expanded = plan
        .expand(&text, &file, &registry)
        .map_err(|e| usage(e.to_string()))?;
    let out = args.out.clone().unwrap_or_else(|| {
        let stamp = crate::lab::trial::utc_now()
            .replace([':', '-'], "")
            .replace('T', "-")
            .trim_end_matches('Z')
            .to_string();
        PathBuf::from("results").join(format!("{}-{stamp}", plan.name))
    });
    if !args.resume && out.join("manifest.json").exists() {
        return Err(usage(format!(
            "{} already holds a run: add --resume to continue it, or choose another --out",
            out.display()
        )));
    }
    let eta = estimate(&expanded, &plan);
    let fixed = plan.breakpoint.as_ref().is_none_or(|b| b.and_fixed_loads);
    let searches = if plan.breakpoint.is_some() {
        crate::plan::runner::breakpoint_groups(&expanded).len()
    } else {
        0
    };
    eprintln!(
        "plan {}{}: {} trials{}, about {} min",
        plan.name,
        plan.follows
            .as_deref()
            .map_or(String::new(), |f| format!(" ({f})")),
        if fixed { expanded.trials.len() } else { 0 },
        if searches > 0 {
            format!(" and {searches} break-point searches")
        } else {
            String::new()
        },
        eta.as_secs().div_ceil(60)
    );
    for s in &expanded.skipped {
        eprintln!("  skipped: {s}");
    }
    if args.dry_run {
        for t in &expanded.trials {
            println!("{}", t.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if expanded.trials.is_empty() {
        return Err(usage("the plan has no trial to run here: none of its servers is installed (see `rackbench servers`)".into()));
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    stop_on_signals(&interrupt, false);
    super::raise_fd_limit();
    let (server_cpus, load_cpus) = if args.no_pin {
        (Vec::new(), Vec::new())
    } else {
        super::trial::default_pinning()
    };
    let mut command = format!(
        "rackbench run {} --out {}",
        args.plan
            .as_ref()
            .map_or(String::new(), |p| p.display().to_string()),
        out.display()
    );
    if args.no_pin {
        command.push_str(" --no-pin");
    }
    let opts = RunOptions {
        out: out.clone(),
        resume: args.resume,
        interrupt,
        server_cpus,
        load_cpus,
        progress: true,
        command: command.clone(),
    };
    let result = run_plan(&plan, &text, &expanded, &opts)?;
    if !result.summary.is_empty() {
        println!("{}", render_summary(&result.summary));
    }
    println!("results: {}", out.display());
    // The report is rebuilt from disk; a failure here loses no result.
    match crate::report::write_all(&out, None) {
        Ok(w) => println!("report:  {}", w.html.display()),
        Err(e) => eprintln!(
            "warning: could not write the report ({e}); try `rackbench report {}`",
            out.display()
        ),
    }
    if result.interrupted {
        eprintln!(
            "interrupted: {} trials are saved; resume with:\n  {} --resume",
            result.done,
            command.replace("  ", " ")
        );
        return Ok(ExitCode::from(130));
    }
    if result.failed > 0 {
        eprintln!(
            "{} trial(s) failed; their records in {}/trials say why",
            result.failed,
            out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
