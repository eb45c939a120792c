//! `rackbench compare A B`: whether B differs from A, by how much, and how
//! sure (see stats::compare and docs/STATISTICS.md). Exit 1 when a
//! `--fail-if` line is crossed by a *significant* change.

use super::UsageError;
use crate::report::compare as show;
use crate::stats::compare::{compare, Comparison, FailIf, Side};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// The bootstrap seed unless one is given, so the same directories give
/// the same intervals on every call.
pub const DEFAULT_SEED: u64 = 0x5eed_0002;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The control: a results directory, or DIR:server=NAME, DIR:variant=NAME, DIR:label=NAME.
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
}

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let usage = |m: String| anyhow::Error::new(UsageError(m));
    let rules = args
        .fail_if
        .iter()
        .map(|r| FailIf::parse(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let a = Side::parse(&args.a).map_err(usage)?;
    let b = Side::parse(&args.b).map_err(usage)?;
    let c = compare(&a, &b, args.seed).map_err(usage)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else if args.markdown {
        print!("{}", show::markdown(&c));
    } else {
        print!("{}", show::terminal(&c));
    }
    if let Some(path) = &args.html {
        std::fs::write(path, show::page(&c))
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(gate(&c, &rules))
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
