//! `rackbench compare A B`: whether B differs from A, by how much, and how
//! sure (see stats::compare and docs/STATISTICS.md). Exit 1 when a
//! `--fail-if` line is crossed by a *significant* change. `--metric NAME`
//! (or the `primary_metric` of the plan the results came from) names the
//! metric judged alone.

use super::usage;
use crate::app;
use crate::app::compare::CompareRequest;
use crate::report::compare as show;
use crate::report::profile_diff;
use crate::stats::compare::{Comparison, FailIf};
use crate::store::profiles::DifferenceFigures;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// The bootstrap seed unless one is given, so the same directories give
/// the same intervals on every call.
pub const DEFAULT_SEED: u64 = 0x5eed_0002;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The control: a results directory, or DIR:server=NAME, DIR:variant=NAME, DIR:label=NAME,
    /// DIR:runtime=NAME, DIR:yjit=true|false, DIR:allocator=glibc|jemalloc, several joined by
    /// commas (DIR:runtime=debian-13,yjit=true).
    pub a: String,
    /// The candidate, in the same form.
    pub b: String,
    /// Print the comparison as JSON (rackbench/compare-v1).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print Markdown instead of the terminal table.
    #[arg(long)]
    pub markdown: bool,
    /// Also write a self-contained HTML page with the forest plot.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Exit 1 when a significant change crosses this line, e.g. 'p99>+5%'
    /// or 'throughput<-3%' (repeatable).
    #[arg(long = "fail-if", value_name = "RULE")]
    pub fail_if: Vec<String>,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// The primary metric, named before the run (throughput, p50, p99,
    /// rss_peak, cpu_per_request, ...): judged alone, not Holm-adjusted
    /// with the others [default: the plan's primary_metric, if any].
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
}

/// compare-v1 with, when both sides were profiled, where the CPU moved.
#[derive(serde::Serialize)]
struct CompareJson<'a> {
    #[serde(flatten)]
    comparison: &'a Comparison,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    profile_differences: Vec<DifferenceFigures>,
}

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let rules = args
        .fail_if
        .iter()
        .map(|r| FailIf::parse(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let compared = app::compare::compare(&CompareRequest {
        a: args.a.clone(),
        b: args.b.clone(),
        seed: args.seed,
        metric: args.metric.clone(),
    })?;
    for w in &compared.warnings {
        eprintln!("warning: {w}");
    }
    let (c, diffs) = (&compared.comparison, &compared.differences);
    if args.json {
        let doc = CompareJson {
            comparison: c,
            profile_differences: diffs.iter().map(|d| d.figures()).collect(),
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if args.markdown {
        print!("{}{}", show::markdown(c), profile_diff::markdown(diffs));
    } else {
        print!("{}{}", show::terminal(c), profile_diff::terminal(diffs));
    }
    if let Some(path) = &args.html {
        app::compare::write_page(&compared, path)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(gate(c, &rules))
}

/// Exit 1 (and say which) when any rule is crossed by a significant change.
pub fn gate(c: &Comparison, rules: &[FailIf]) -> ExitCode {
    let mut failed = false;
    for rule in rules {
        for row in rule.breaches(&c.rows) {
            failed = true;
            eprintln!(
                "fail-if {}{}{}%: {} {} ({})",
                rule.metric,
                if rule.above { ">" } else { "<" },
                rule.threshold_pct,
                row.group,
                row.metric,
                row.verdict
            );
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
