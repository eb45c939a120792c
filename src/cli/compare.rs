//! `rackbench compare A B`: whether B differs from A, by how much, and how
//! sure (see stats::compare and docs/STATISTICS.md). Exit 1 when a
//! `--fail-if` line is crossed by a *significant* change. `--metric NAME`
//! (or the `primary_metric` of the plan the results came from) names the
//! metric judged alone.

use super::usage;
use crate::report::compare as show;
use crate::report::profile_diff;
use crate::stats::compare::{check_metric, Comparison, FailIf, Side};
use crate::store::profiles::DifferenceFigures;
use crate::store::samples::{compare_in, parse_side, profile_differences};
use crate::store::study::Study;
use anyhow::{Context, Result};
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

/// `--metric`, else A's plan's `primary_metric`, else B's (each read on
/// its own, `Study::primary_metric`, so an older plan still compares).
fn primary(
    args: &CompareArgs,
    a: (&Side, Option<&Study>),
    b: Option<&Study>,
) -> Result<Option<String>, String> {
    if let Some(m) = &args.metric {
        check_metric("--metric", m)?;
        return Ok(Some(m.clone()));
    }
    let plan = |s: Option<&Study>| s.and_then(Study::primary_metric);
    let Some(m) = plan(a.1).or_else(|| plan(b)) else {
        return Ok(None);
    };
    let a = a.0;
    check_metric("primary_metric", &m)
        .map_err(|e| format!("{e} (in the plan.toml of {}); or give --metric", a.label()))?;
    Ok(Some(m))
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
    let a = parse_side(&args.a).map_err(usage)?;
    let b = parse_side(&args.b).map_err(usage)?;
    // Each directory read once (A and B may be one directory, two
    // selections); what is not a results directory is said in its turn.
    let open = |s: &Side| Study::open(&s.dir).map_err(|e| e.to_string());
    let sa = open(&a);
    let sb = (b.dir != a.dir).then(|| open(&b));
    let sb = sb.as_ref().unwrap_or(&sa);
    let metric = primary(&args, (&a, sa.as_ref().ok()), sb.as_ref().ok()).map_err(usage)?;
    let (c, warnings) = compare_in(
        (&a, sa.as_ref().map_err(String::clone)),
        (&b, sb.as_ref().map_err(String::clone)),
        args.seed,
        metric.as_deref(),
    )
    .map_err(usage)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    // Where the CPU moved, for the groups both sides profiled.
    let diffs = match (&sa, sb) {
        (Ok(sa), Ok(sb)) => profile_differences((&a, sa), (&b, sb)).map_err(usage)?,
        _ => Vec::new(),
    };
    if args.json {
        let doc = CompareJson {
            comparison: &c,
            profile_differences: diffs.iter().map(|d| d.figures()).collect(),
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if args.markdown {
        print!("{}{}", show::markdown(&c), profile_diff::markdown(&diffs));
    } else {
        print!("{}{}", show::terminal(&c), profile_diff::terminal(&diffs));
    }
    if let Some(path) = &args.html {
        std::fs::write(path, show::page_with(&c, &profile_diff::html(&diffs)))
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
