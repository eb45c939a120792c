//! `rackbench history DIR...`: the same groups over many runs in date
//! order, each run against a baseline (`--baseline last|median-of-N|DIR`)
//! by compare's statistics, as a terminal table, Markdown, CSV, history-v1
//! JSON or an HTML page of charts. Exit 1 when a `--fail-if` line is
//! crossed by a *significant* change of the newest run against its
//! baseline (docs/HISTORY.md).

use crate::app::history::{run as history, HistoryRequest};
use crate::app::sink::Terminal;
use crate::history::Baseline;
use crate::report::history as show;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

use super::usage;

/// The bootstrap seed unless one is given (compare's), so the same runs
/// give the same intervals on every call.
pub const DEFAULT_SEED: u64 = super::compare::DEFAULT_SEED;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Results directories, or directories holding them (each
    /// sub-directory that is one).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Only runs started on or after this date (2026-11-28) or UTC time
    /// (2026-11-28T09:00:00Z).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// The primary metric (throughput, p50, p99, rss_peak, ...): judged
    /// alone and the only one shown [default: the newest run's plan's
    /// primary_metric, else every metric].
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// What each run is compared with: last (the run before it),
    /// median-of-N (the N runs before it, their repeats pooled) or a
    /// results directory.
    #[arg(long, default_value = "last", value_name = "last|median-of-N|DIR")]
    pub baseline: String,
    /// Exit 1 when the newest run's significant change against its
    /// baseline crosses this line, e.g. 'p99>+5%' or 'throughput<-3%'
    /// (repeatable).
    #[arg(long = "fail-if", value_name = "RULE")]
    pub fail_if: Vec<String>,
    /// Print history-v1 JSON.
    #[arg(long, conflicts_with_all = ["markdown", "csv"])]
    pub json: bool,
    /// Print Markdown instead of the terminal tables.
    #[arg(long, conflicts_with = "csv")]
    pub markdown: bool,
    /// Print CSV, one line per point.
    #[arg(long)]
    pub csv: bool,
    /// Also write a self-contained HTML page with a chart per metric.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
}

pub fn run(args: HistoryArgs) -> Result<ExitCode> {
    let req = HistoryRequest {
        dirs: args.dirs.clone(),
        since: args.since.clone(),
        metric: args.metric.clone(),
        baseline: Baseline::parse(&args.baseline).map_err(usage)?,
        fail_if: args.fail_if.clone(),
        seed: args.seed,
    };
    let out = history(&req, &Terminal::new())?;
    let h = &out.history;
    if args.json {
        println!("{}", serde_json::to_string_pretty(h)?);
    } else if args.markdown {
        print!("{}", show::markdown(h));
    } else if args.csv {
        print!("{}", show::csv(h));
    } else {
        print!("{}", show::terminal(h));
    }
    if let Some(path) = &args.html {
        crate::app::history::write_page(h, path)?;
        eprintln!("wrote {}", path.display());
    }
    for (rule, group, metric, verdict) in &out.breaches {
        eprintln!("fail-if {rule}: {group} {metric} ({verdict})");
    }
    Ok(if out.breaches.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
