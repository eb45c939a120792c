//! `rackbench sweep --until-verdict` (issue 38): each value of the sweep
//! after the first judged against the first by an A/B (`app::ab::run`,
//! paired rounds until the always-valid interval decides or the budget is
//! spent), one after another, each into its own results directory under
//! the sweep's. The A/B's budget (`--max-load`), margin, metric and alpha
//! apply to each value.

use super::ab::{self, AbRequest, Judge, Sides};
use super::run::{self as run_case, RunRequest};
use super::sink::Sink;
use super::sweep::{self, SweepPlan};
use super::usage::usage;
use crate::ab::document::AbDocument;
use crate::plan::Overrides;
use anyhow::Result;
use std::path::PathBuf;
use std::sync::Arc;

/// One value's verdict against the first, and where its A/B's records are.
pub struct ValueVerdict {
    /// "workers=4".
    pub value: String,
    pub out: PathBuf,
    pub doc: AbDocument,
}

/// What `sweep --until-verdict` found: the variable, the control and a
/// verdict per other value (fewer when interrupted).
pub struct Verdicts {
    pub vary: String,
    pub control: String,
    pub values: Vec<ValueVerdict>,
    /// The directory holding one A/B directory per value.
    pub out: PathBuf,
}

/// Runs an A/B of every value after the first against the first, in the
/// values' order; stops after an A/B interrupted by Ctrl-C. `request`
/// makes the run's request of one A/B, given its results directory.
pub fn run(
    args: &SweepPlan,
    overrides: &Overrides,
    judge: &Judge,
    out: Option<PathBuf>,
    request: impl Fn(PathBuf) -> Result<RunRequest>,
    sink: Arc<dyn Sink>,
) -> Result<Verdicts> {
    // The sweep's own plan, read once: its [sweep] (from --vary or the
    // file) names the values, and its mistakes are refused here.
    let source = sweep::plan(args, overrides)?;
    let section = source.plan.sweep.clone().ok_or_else(|| {
        usage("--until-verdict needs a sweep: --vary NAME=V1,V2,... or a plan with [sweep]".into())
    })?;
    if section.values.len() < 2 {
        return Err(usage(format!(
            "--until-verdict judges each value against the first: give {} two values or more",
            section.vary
        )));
    }
    let window = crate::units::duration(&source.plan.load.duration)
        .map_err(|e| usage(format!("the sweep's duration: {e}")))?;
    let control = &section.values[0];
    let root = out.unwrap_or_else(|| {
        let name = format!("sweep-until-{}", crate::plan::slug(&section.vary));
        run_case::default_out(&name, &crate::host::utc_now())
    });
    let mut values = Vec::new();
    for value in &section.values[1..] {
        let mut plan = args.clone();
        plan.vary = Some(format!("{}={control},{value}", section.vary));
        let dir = root.join(crate::plan::slug(value));
        sink.note(&format!(
            "sweep until a verdict: {}={value} against {}={control} into {}",
            section.vary,
            section.vary,
            dir.display()
        ));
        let done = ab::run(
            AbRequest {
                sides: Sides::Vary(Box::new(plan)),
                aa: false,
                judge: judge.clone(),
                window,
                // A fresh server per window, as ab's default.
                keep_running: false,
                run: request(dir)?,
            },
            Arc::clone(&sink),
        )?;
        let interrupted = done.doc.end == "interrupted";
        values.push(ValueVerdict {
            value: format!("{}={value}", section.vary),
            out: done.out,
            doc: done.doc,
        });
        if interrupted {
            break;
        }
    }
    Ok(Verdicts {
        vary: section.vary.clone(),
        control: format!("{}={control}", section.vary),
        values,
        out: root,
    })
}
