//! An A/B until the answer is known (`rackbench ab`, issue 38): two
//! configurations, from `--vary NAME=A,B` (sweep's plan from flags or a
//! plan file, with exactly two values) or from a plan and two selections
//! of its groups (`--a label=control --b label=malloc-64m`), run in paired
//! rounds (`plan::runner::ab::run_ab`) until the always-valid interval
//! decides: B differs, the two are equivalent within the margin, or the
//! budget of counted load is spent. Every window is a trial record of a
//! run's results directory, so `report` and `compare` read it; the
//! verdict is kept beside them as ab.json (rackbench/ab-v1).

use super::run::{self as run_case, PlanSource, RunRequest};
use super::sink::Sink;
use super::sweep::{self, SweepPlan};
use super::usage::usage;
use crate::ab::{self, document::AbDocument, End, Event};
use crate::plan::runner::ab::{run_ab, select, Pair, Servers};
use crate::plan::sweep::{value_of_planned, SweepSection};
use crate::plan::{Overrides, PlannedTrial};
use crate::stats::compare::NOISE_PCT;
use crate::stats::sequential::Design;
use anyhow::Result;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The environment variable an A/A (`--aa`) sets to "A" on one side and
/// "B" on the other: the only difference between the two, so they are two
/// groups of one configuration.
pub const AA_SIDE_ENV: &str = "RACKBENCH_AB_SIDE";

/// Where the two sides come from.
pub enum Sides {
    /// `--vary NAME=A,B` over sweep's plan (flags or a file).
    Vary(Box<SweepPlan>),
    /// A plan file and a selection of one of its groups for each side.
    Select { file: PathBuf, a: String, b: String },
}

/// What `rackbench ab` is asked.
pub struct AbRequest {
    pub sides: Sides,
    /// The same configuration on both sides on purpose.
    pub aa: bool,
    pub judge: Judge,
    /// Each side's counted window when the plan does not say one.
    pub window: Duration,
    /// Each side's server started once and kept running between its
    /// windows (`--keep-running`).
    pub keep_running: bool,
    pub run: RunRequest,
}

/// How an A/B judges and when it stops: `ab`'s flags, which `sweep
/// --until-verdict` and `tune gc` judge with too.
#[derive(Debug, Clone)]
pub struct Judge {
    /// A metric of compare's (`throughput`, `p99`, ...).
    pub metric: String,
    pub margin_pct: f64,
    pub alpha: f64,
    /// Counted load over both sides at most.
    pub max_load: Duration,
    /// Reruns of one disturbed round at most.
    pub rerun_disturbed: u32,
}

/// What the A/B decided, and where its records are.
pub struct AbOutcome {
    pub doc: AbDocument,
    pub out: PathBuf,
}

/// Metrics the rounds cannot judge: a log-ratio needs figures above 0,
/// and these are often 0 on both sides.
const NOT_RATIOS: &[&str] = &["error_rate", "connections_starved"];

/// The plan, the two sides, the design: checked before any server starts.
pub fn run(mut req: AbRequest, sink: Arc<dyn Sink>) -> Result<AbOutcome> {
    crate::stats::compare::check_metric("--metric", &req.judge.metric).map_err(usage)?;
    if NOT_RATIOS.contains(&req.judge.metric.as_str()) {
        return Err(usage(format!(
            "--metric {}: an A/B judges the ratio B / A, and this figure is often 0 on both sides; \
             judge it with `rackbench compare` on the A/B's results directory",
            req.judge.metric
        )));
    }
    let (source, labels) = plan_of(&req, &req.run.overrides)?;
    if let Some(note) = rate_note(&source.plan.load.rates, &req.judge.metric) {
        sink.note(&note);
    }
    // The window is the plan's (the flags' -d when the plan is made of them).
    let window = crate::units::duration(&source.plan.load.duration).unwrap_or(req.window);
    let rounds = max_rounds(req.judge.max_load, window)?;
    let design = Design {
        alpha: req.judge.alpha,
        margin_pct: req.judge.margin_pct,
        noise_pct: NOISE_PCT,
        max_rounds: rounds,
    };
    if req.run.out.is_none() {
        let name = format!("ab-{}", source.plan.name.trim_start_matches("sweep-"));
        req.run.out = Some(run_case::default_out(&name, &crate::host::utc_now()));
    }
    let seed = req.run.seed.unwrap_or_else(crate::plan::runner::fresh_seed);
    req.run.seed = Some(seed);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut prepared = run_case::prepare(source, req.run)?;
    let (a, b) = sides_of(&req.sides, &prepared, &labels)?;
    let opts = run_case::options(&mut prepared, &sink, &command)?;
    let ab_opts = ab::Options {
        metric: req.judge.metric.clone(),
        design,
        rerun_disturbed: req.judge.rerun_disturbed,
        seed,
        max_load_s: Some(req.judge.max_load.as_secs_f64()),
    };
    sink.note(&format!(
        "A/B: A = {}, B = {}; {} a window, at most {} rounds ({} of counted load), {}; seed {seed}",
        labels.0,
        labels.1,
        secs(window),
        rounds,
        secs(req.judge.max_load),
        if req.keep_running {
            "each side's server kept running"
        } else {
            "a fresh server per window"
        },
    ));
    let p = &prepared;
    let ran = run_ab(
        &p.source.plan,
        &p.source.text,
        &p.expanded,
        &opts,
        Pair {
            a: &a,
            b: &b,
            servers: if req.keep_running {
                Servers::Kept
            } else {
                Servers::Fresh
            },
        },
        &ab_opts,
        |e| sink.note(&event_line(&e)),
    )
    .map_err(|e| usage(e.to_string()))?;
    let mut doc = ab::document::document(&ran.outcome, (&labels.0, &labels.1), &ab_opts, |id| {
        Some(format!("trials/{id}.json"))
    });
    doc.servers = if req.keep_running { "kept" } else { "fresh" }.into();
    // A set-aside window's record was moved out of trials/.
    for s in doc.pairs.iter_mut().flat_map(|p| p.set_aside.iter_mut()) {
        for w in [&mut s.a, &mut s.b] {
            w.record = w
                .record
                .take()
                .map(|r| r.replacen("trials/", "set-aside/", 1));
        }
    }
    ran.result
        .study
        .write_ab(&doc)
        .map_err(|e| anyhow::anyhow!("cannot write ab.json: {e}"))?;
    if let Err(e) = crate::report::write_study(&ran.result.study, None) {
        sink.note(&format!(
            "warning: could not write the report ({e}); try `rackbench report {}`",
            p.out.display()
        ));
    }
    let sides = (
        (a.group.as_str(), labels.0.as_str()),
        (b.group.as_str(), labels.1.as_str()),
    );
    match crate::report::profile_diff::write_ab(&ran.result.study, sides.0, sides.1) {
        Ok(Some(lines)) => sink.note(lines.trim_end()),
        Ok(None) => {}
        Err(e) => sink.note(&format!("warning: no profile difference: {e}")),
    }
    if let End::Failed(why) = &ran.outcome.end {
        sink.note(&format!("the A/B stopped: {why}"));
    }
    for w in &doc.warnings {
        sink.note(&format!("warning: {w}"));
    }
    Ok(AbOutcome {
        doc,
        out: prepared.out.clone(),
    })
}

/// The warning for judging throughput at a fixed offered rate: both
/// sides serve about the rate while they keep up, so the figure moves
/// only past saturation.
fn rate_note(rates: &[f64], metric: &str) -> Option<String> {
    (!rates.is_empty() && metric == "throughput").then(|| {
        concat!(
            "note: at a fixed --rate both sides serve about the rate while they keep up, ",
            "so throughput differs only past saturation; --metric p99 or cpu_per_request ",
            "judges what each request costs"
        )
        .to_string()
    })
}

/// "3 s", "2.5 s", "120 s".
fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// Rounds the budget holds: two windows a round.
fn max_rounds(max_load: Duration, window: Duration) -> Result<usize> {
    let per_round = 2.0 * window.as_secs_f64();
    let rounds = if per_round > 0.0 {
        (max_load.as_secs_f64() / per_round).floor() as usize
    } else {
        0
    };
    if rounds < crate::stats::sequential::MIN_ROUNDS {
        return Err(usage(format!(
            "--max-load {} holds {rounds} round(s) of two {} windows; an A/B needs at least {}: \
             raise --max-load or shorten -d",
            secs(max_load),
            secs(window),
            crate::stats::sequential::MIN_ROUNDS
        )));
    }
    Ok(rounds)
}

/// The plan the A/B runs, and the two sides' labels.
fn plan_of(req: &AbRequest, o: &Overrides) -> Result<(PlanSource, (String, String))> {
    match &req.sides {
        Sides::Select { file, a, b } => {
            if a == b && !req.aa {
                return Err(usage(format!(
                    "--a and --b both select {a}: the same configuration twice; add --aa to run \
                     it as an A/A on purpose"
                )));
            }
            Ok((run_case::read_plan(Some(file))?, (a.clone(), b.clone())))
        }
        Sides::Vary(s) => {
            let mut s = (**s).clone();
            let Some(vary) = s.vary.clone() else {
                if !req.aa {
                    return Err(usage(
                        "say what differs: --vary NAME=A,B (or --a and --b with a plan), or \
                         --aa for the configuration against itself"
                            .into(),
                    ));
                }
                s.vary = Some(format!("env.{AA_SIDE_ENV}=A,B"));
                s.repeats = 1;
                let labels = ("A (the same)".to_string(), "B (the same)".to_string());
                return Ok((sweep::plan(&s, o)?, labels));
            };
            let section = SweepSection::from_flag(&vary).map_err(usage)?;
            if section.values.len() != 2 {
                return Err(usage(format!(
                    "--vary {vary}: an A/B takes exactly two values, A then B (e.g. --vary \
                     workers=2,3); for more, use `rackbench sweep`"
                )));
            }
            let (va, vb) = (&section.values[0], &section.values[1]);
            let labels = (
                format!("{}={va}", section.vary),
                format!("{}={vb}", section.vary),
            );
            if va == vb {
                if !req.aa {
                    return Err(usage(format!(
                        "--vary {vary}: A and B are the same configuration; add --aa to run it \
                         as an A/A on purpose"
                    )));
                }
                // An A/A: the value fixed on both sides, which then differ
                // only in a variable the server never reads (two groups).
                fix(&mut s, &section.vary, va)?;
                s.vary = Some(format!("env.{AA_SIDE_ENV}=A,B"));
            }
            s.repeats = 1;
            Ok((sweep::plan(&s, o)?, labels))
        }
    }
}

/// An A/A's `--vary NAME=V,V`: NAME set to V for both sides.
fn fix(s: &mut SweepPlan, name: &str, value: &str) -> Result<()> {
    let number = || {
        value.parse::<u32>().map_err(|_| {
            usage(format!(
                "--vary {name}={value},{value}: {value} is not a count"
            ))
        })
    };
    match name {
        "workers" => s.workers = Some(number()?),
        "threads" => s.threads = Some(number()?),
        "connections" => s.connections = number()? as usize,
        n if n.starts_with("env.") => s.env.push((n["env.".len()..].into(), value.into())),
        n if crate::plan::sweep::Variable::parse(n)
            .is_ok_and(|v| matches!(v, crate::plan::sweep::Variable::Setting(_))) =>
        {
            s.settings.push((n.into(), value.into()))
        }
        n => {
            return Err(usage(format!(
                "--aa --vary {n}={value},{value}: give that value as its own flag (--{n} \
                 {value}) and --aa alone"
            )))
        }
    }
    Ok(())
}

/// The planned trial of each side: the selections' groups, or the sweep's
/// two values in order.
fn sides_of(
    sides: &Sides,
    p: &run_case::Prepared,
    labels: &(String, String),
) -> Result<(PlannedTrial, PlannedTrial)> {
    let e = &p.expanded;
    match sides {
        Sides::Select { a, b, .. } => {
            let a = select(e, "--a", a).map_err(usage)?.clone();
            let b = select(e, "--b", b).map_err(usage)?.clone();
            Ok((a, b))
        }
        Sides::Vary(_) => {
            let section = p
                .source
                .plan
                .sweep
                .clone()
                .expect("the A/B's plan has a [sweep]");
            let var = section.validate().map_err(usage)?;
            let side = |i: usize| -> Result<PlannedTrial> {
                e.trials
                    .iter()
                    .find(|t| {
                        t.repeat == 1
                            && value_of_planned(&var, t).as_deref() == Some(&section.values[i])
                    })
                    .cloned()
                    .ok_or_else(|| {
                        usage(format!(
                            "no trial of the plan has {}: is its server installed? (see \
                             `rackbench servers`)",
                            if i == 0 { &labels.0 } else { &labels.1 }
                        ))
                    })
            };
            Ok((side(0)?, side(1)?))
        }
    }
}

/// One line per round (and per round set aside).
fn event_line(e: &Event<'_, String>) -> String {
    match e {
        Event::Round { round, load_s } => {
            let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
            format!(
                "round {}: A {}, B {} ({} first); {}, {:.0} s of load",
                round.index,
                f(round.a.figure),
                f(round.b.figure),
                round.first.letter(),
                round.verdict.reason,
                load_s
            )
        }
        Event::SetAside {
            round,
            attempt,
            set_aside,
        } => format!(
            "round {round}: disturbed ({}), set aside and run again (attempt {} of the round)",
            set_aside.why,
            attempt + 1
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_at_a_fixed_rate_is_warned_of_and_other_metrics_are_not() {
        let note = rate_note(&[100.0], "throughput").unwrap();
        assert!(note.contains("--metric p99"), "{note}");
        assert!(rate_note(&[100.0], "p99").is_none());
        assert!(rate_note(&[], "throughput").is_none());
    }

    #[test]
    fn the_budget_is_turned_into_rounds_and_too_short_a_one_refused() {
        let s = Duration::from_secs;
        assert_eq!(max_rounds(s(120), s(3)).unwrap(), 20);
        assert_eq!(max_rounds(s(12), s(3)).unwrap(), 2);
        let e = max_rounds(s(10), s(3)).unwrap_err().to_string();
        assert!(
            e.contains("holds 1 round") && e.contains("--max-load"),
            "{e}"
        );
    }
}
