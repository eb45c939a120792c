//! `rackbench compare`'s use case: each side's results directory opened
//! once (A and B may be one directory, two selections), the primary
//! metric settled, the comparison made, and, for the groups both sides
//! profiled, where the CPU moved; the HTML page written when asked.

use super::usage::usage;
use crate::report::compare as show;
use crate::report::profile_diff;
use crate::stats::compare::{check_metric, Comparison, Side};
use crate::store::profiles::ProfileDifference;
use crate::store::samples::{compare_in, parse_side, profile_differences};
use crate::store::study::Study;
use anyhow::{Context, Result};
use std::path::Path;

/// What `compare` is asked.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    /// Each side: a results directory, or DIR:SELECTOR.
    pub a: String,
    pub b: String,
    /// The bootstrap's seed.
    pub seed: u64,
    /// `--metric`: the primary metric, judged alone.
    pub metric: Option<String>,
}

/// The comparison, where the CPU moved, and what to warn of.
pub struct Compared {
    pub comparison: Comparison,
    /// Per group both sides profiled.
    pub differences: Vec<ProfileDifference>,
    pub warnings: Vec<String>,
}

/// `--metric`, else A's plan's `primary_metric`, else B's (each read on
/// its own, `Study::primary_metric`, so an older plan still compares).
fn primary(
    asked: Option<&str>,
    a: (&Side, Option<&Study>),
    b: Option<&Study>,
) -> Result<Option<String>, String> {
    if let Some(m) = asked {
        check_metric("--metric", m)?;
        return Ok(Some(m.to_string()));
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

/// Compares B with A. Errors are for the user (exit 2): a side that is
/// not a results directory, a selector matching nothing, a metric unknown.
pub fn compare(req: &CompareRequest) -> Result<Compared> {
    let a = parse_side(&req.a).map_err(usage)?;
    let b = parse_side(&req.b).map_err(usage)?;
    // What is not a results directory is said in its turn.
    let open = |s: &Side| Study::open(&s.dir).map_err(|e| e.to_string());
    let sa = open(&a);
    let sb = (b.dir != a.dir).then(|| open(&b));
    let sb = sb.as_ref().unwrap_or(&sa);
    let metric = primary(
        req.metric.as_deref(),
        (&a, sa.as_ref().ok()),
        sb.as_ref().ok(),
    )
    .map_err(usage)?;
    let (comparison, warnings) = compare_in(
        (&a, sa.as_ref().map_err(String::clone)),
        (&b, sb.as_ref().map_err(String::clone)),
        req.seed,
        metric.as_deref(),
    )
    .map_err(usage)?;
    let differences = match (&sa, sb) {
        (Ok(sa), Ok(sb)) => profile_differences((&a, sa), (&b, sb)).map_err(usage)?,
        _ => Vec::new(),
    };
    Ok(Compared {
        comparison,
        differences,
        warnings,
    })
}

/// The self-contained page: the forest plot, then where the CPU moved.
pub fn write_page(c: &Compared, path: &Path) -> Result<()> {
    let page = show::page_with(&c.comparison, &profile_diff::html(&c.differences));
    std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))
}
