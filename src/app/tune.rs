//! `rackbench tune gc` (issue 41): a control trial with telemetry, the
//! GC settings its figures call for (`tune::advise`), each A/B'd against
//! the control by `app::ab` one at a time, then the kept ones together;
//! only what is significantly better and no worse in GC runs or GC time
//! beyond the margin is recommended. Everything lands in one results
//! directory: control/ (a run), ab-RULE/ and ab-combined/ (A/Bs, each
//! with its ab.json), tune.json (rackbench/tune-v1), tune.md and
//! tune.html.
//!
//! Each A/B runs a plan written beside it, made from sweep's plan from
//! flags with two `[[server]]` entries, `label = "control"` and `label =
//! "proposal"`, the second with the proposal's environment.

use super::ab::{self as ab_case, AbRequest, Judge, Sides};
use super::run::{self as run_case, PlanSource, RunRequest};
use super::sink::Sink;
use super::sweep::{self, SweepPlan};
use super::usage::usage;
use crate::plan::Overrides;
use crate::server::spec::Registry;
use crate::stats::sequential::{Call, MIN_ROUNDS};
use crate::telemetry::Telemetry;
use crate::tune::document::{self as doc, Control, ProposalDoc, Recommendation, TuneDocument};
use crate::tune::{advise, Proposal};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use toml::{Table, Value};

/// The shortest control: under it the GC has not shown its pace.
pub const MIN_CONTROL: Duration = Duration::from_secs(5);

/// What `rackbench tune gc` is asked.
pub struct TuneRequest {
    /// The server, app, workers, threads, env, load: sweep's plan from
    /// flags (or a file with one `[[server]]`), without `vary`.
    pub plan: SweepPlan,
    /// The control trial's length.
    pub control: Duration,
    /// How each A/B judges (its budget is each A/B's).
    pub judge: Judge,
    /// Each A/B side's window.
    pub window: Duration,
    pub out: Option<PathBuf>,
    pub seed: Option<u64>,
    pub registry: Registry,
    pub servers_files: Vec<PathBuf>,
    pub pin: bool,
    pub overrides: Overrides,
}

/// The document and the results directory.
pub struct TuneOutcome {
    pub doc: TuneDocument,
    pub out: PathBuf,
}

impl TuneRequest {
    fn run_request(&self, out: PathBuf, plan_path: Option<PathBuf>) -> RunRequest {
        RunRequest {
            plan_path,
            out: Some(out),
            resume: false,
            seed: self.seed,
            registry: self.registry.clone(),
            servers_files: self.servers_files.clone(),
            pin: self.pin,
            dry_run: false,
            aa: None,
            telemetry: true,
            overrides: self.overrides.clone(),
        }
    }
}

/// Checks before any server starts: the runtime, the control's length,
/// the A/B budget.
fn check(req: &TuneRequest) -> Result<()> {
    if req.overrides.runtime.as_deref() == Some(crate::runtime::JRUBY) {
        return Err(usage(
            "--runtime jruby: JRuby's GC is the JVM's; RUBY_GC_* variables do not apply (size \
             the JVM's heap with JAVA_OPTS instead)"
                .into(),
        ));
    }
    if req.control < MIN_CONTROL {
        return Err(usage(format!(
            "--control {} s is too short for the control to warm up and show the GC's pace: \
             give {} s or more",
            req.control.as_secs_f64(),
            MIN_CONTROL.as_secs()
        )));
    }
    let per_round = 2.0 * req.window.as_secs_f64();
    let rounds = if per_round > 0.0 {
        (req.judge.max_load.as_secs_f64() / per_round).floor()
    } else {
        0.0
    };
    if rounds < MIN_ROUNDS as f64 {
        return Err(usage(format!(
            "--max-load {} s holds {rounds} round(s) of two {} s windows; each A/B needs at least \
             {MIN_ROUNDS}: raise --max-load or shorten -d",
            req.judge.max_load.as_secs_f64(),
            req.window.as_secs_f64()
        )));
    }
    Ok(())
}

/// The plan as a table with its one `[[server]]` entry taken out.
fn base(req: &TuneRequest) -> Result<(Table, Table)> {
    let mut s = req.plan.clone();
    s.vary = Some("env.RACKBENCH_TUNE=control,proposal".into());
    s.repeats = 1;
    let source = sweep::plan(&s, &req.overrides)?;
    let mut t: Table = source.text.parse().context("the tune plan")?;
    t.remove("sweep");
    let servers = match t.remove("server") {
        Some(Value::Array(v)) if v.len() == 1 => v,
        _ => {
            return Err(usage(
                "tune gc tunes one server: give a plan with one [[server]] entry".into(),
            ))
        }
    };
    let server = servers[0].as_table().cloned().unwrap_or_default();
    t.insert("repeats".into(), Value::Integer(1));
    t.insert("name".into(), Value::String("tune-gc".into()));
    Ok((t, server))
}

/// A plan of `sides` (label, extra env) on the base, its load `window`
/// long, written to `file`.
fn write_plan(
    base: &(Table, Table),
    sides: &[(&str, &BTreeMap<String, String>)],
    window: Duration,
    file: &Path,
) -> Result<PlanSource> {
    let (mut t, server) = (base.0.clone(), &base.1);
    let entries = sides
        .iter()
        .map(|(label, env)| {
            let mut s = server.clone();
            s.insert("label".into(), Value::String(label.to_string()));
            let mut e = s
                .get("env")
                .and_then(Value::as_table)
                .cloned()
                .unwrap_or_default();
            for (k, v) in env.iter() {
                e.insert(k.clone(), Value::String(v.clone()));
            }
            if !e.is_empty() {
                s.insert("env".into(), Value::Table(e));
            }
            Value::Table(s)
        })
        .collect();
    t.insert("server".into(), Value::Array(entries));
    if let Some(Value::Table(load)) = t.get_mut("load") {
        load.insert(
            "duration".into(),
            Value::String(format!("{}ms", window.as_millis())),
        );
    }
    let text = format!(
        "# written by rackbench tune gc\n{}",
        toml::to_string(&t).context("cannot write the tune plan")?
    );
    run_case::keep_plan(
        file.parent().expect("a plan file in a directory"),
        &file.file_name().unwrap().to_string_lossy(),
        &text,
    )?;
    let plan = crate::plan::Plan::parse(&text, &file.display().to_string())
        .map_err(|e| usage(e.to_string()))?;
    Ok(PlanSource {
        plan,
        text,
        file: file.display().to_string(),
    })
}

/// Runs the control and reads its telemetry and record's path.
fn control(
    req: &TuneRequest,
    base: &(Table, Table),
    out: &Path,
    sink: &Arc<dyn Sink>,
) -> Result<(Telemetry, Option<String>)> {
    let dir = out.join("control");
    let source = write_plan(
        base,
        &[("control", &BTreeMap::new())],
        req.control,
        &out.join("control-plan.toml"),
    )?;
    sink.note(&format!(
        "tune gc: the control, {} s with telemetry",
        req.control.as_secs_f64()
    ));
    let prepared = run_case::prepare(source, req.run_request(dir.clone(), None))?;
    run_case::execute(prepared, Arc::clone(sink))?;
    let study = crate::store::study::Study::open(&dir).map_err(|e| usage(e.to_string()))?;
    let trials = study.trials().map_err(|e| usage(e.to_string()))?;
    let stored = trials
        .stored
        .iter()
        .find(|s| s.trial.is_some())
        .ok_or_else(|| usage(format!("the control trial failed: see {}", dir.display())))?;
    let record = stored.trial.as_ref().expect("found with a record");
    let t = record.server_metrics.telemetry.clone().ok_or_else(|| {
        usage(
            "the control has no telemetry: does this server load a config.ru? (docs/TELEMETRY.md)"
                .into(),
        )
    })?;
    Ok((t, Some(format!("control/trials/{}.json", stored.id))))
}

/// Mean GC runs per 1,000 requests and GC time share of each side's
/// counted windows of an A/B.
type SideGc = (Option<f64>, Option<f64>);

fn side_gc(dir: &Path, variants: (&str, &str)) -> (SideGc, SideGc) {
    let Ok(study) = crate::store::study::Study::open(dir) else {
        return ((None, None), (None, None));
    };
    let Ok(trials) = study.trials() else {
        return ((None, None), (None, None));
    };
    let side = |label: &str| -> SideGc {
        let ts: Vec<&Telemetry> = trials
            .stored
            .iter()
            .filter(|s| s.planned.variant == label)
            .filter_map(|s| s.trial.as_ref()?.server_metrics.telemetry.as_ref())
            .collect();
        let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        (
            mean(ts.iter().map(|t| t.gc_runs_per_1k_requests).collect()),
            mean(ts.iter().filter_map(|t| t.gc_time_share).collect()),
        )
    };
    (side(variants.0), side(variants.1))
}

/// The two sides' variant names: the labels with what the runtime flags
/// add to them (`control@debian-13+yjit`), as the A/B's plan expands.
fn variants(req: &TuneRequest, mut source: PlanSource) -> Result<(String, String)> {
    let file = source.file.clone();
    source.plan.apply(&req.overrides, &file).map_err(usage)?;
    let e = source
        .plan
        .expand(&source.text, &file, &req.registry)
        .map_err(|e| usage(e.to_string()))?;
    let find = |label: &str| {
        e.trials
            .iter()
            .map(|t| &t.variant)
            .find(|v| {
                v.as_str() == label
                    || v.strip_prefix(label)
                        .is_some_and(|rest| rest.starts_with(['@', '+']))
            })
            .cloned()
            .ok_or_else(|| {
                usage(format!(
                    "the tune plan has no {label} trial: is the server installed? (see `rackbench servers`)"
                ))
            })
    };
    Ok((find("control")?, find("proposal")?))
}

/// One A/B of `env` against the control, in `out/NAME`.
fn ab(
    req: &TuneRequest,
    base: &(Table, Table),
    out: &Path,
    name: &str,
    env: &BTreeMap<String, String>,
    sink: &Arc<dyn Sink>,
) -> Result<(crate::ab::document::AbDocument, SideGc, SideGc)> {
    let file = out.join(format!("{name}-plan.toml"));
    let source = write_plan(
        base,
        &[("control", &BTreeMap::new()), ("proposal", env)],
        req.window,
        &file,
    )?;
    let (a, b) = variants(req, source)?;
    let dir = out.join(name);
    let ab_req = AbRequest {
        sides: Sides::Select {
            file: file.clone(),
            a: format!("variant={a}"),
            b: format!("variant={b}"),
        },
        aa: false,
        judge: req.judge.clone(),
        window: req.window,
        // A fresh server per window, as ab's default.
        keep_running: false,
        run: req.run_request(dir.clone(), Some(file)),
    };
    let done = ab_case::run(ab_req, Arc::clone(sink))?;
    let (before, after) = side_gc(&done.out, (&a, &b));
    Ok((done.doc, before, after))
}

/// Kept: significantly better, and neither GC figure worse beyond the
/// margin. The reason in words either way.
fn judge(verdict: Call, before: SideGc, after: SideGc, margin_pct: f64) -> (bool, String) {
    let worse = |b: Option<f64>, a: Option<f64>| match (b, a) {
        (Some(b), Some(a)) => a > b * (1.0 + margin_pct / 100.0) + 1e-3,
        _ => false,
    };
    match verdict {
        Call::Faster if worse(before.0, after.0) => {
            (false, "better, but more GC runs per 1,000 requests".into())
        }
        Call::Faster if worse(before.1, after.1) => {
            (false, "better, but a larger GC time share".into())
        }
        Call::Faster => (true, "significantly better".into()),
        Call::Slower => (false, "worse".into()),
        Call::Equivalent => (false, format!("no better (within ±{margin_pct}%)")),
        Call::Undecided => (false, "undecided within --max-load".into()),
    }
}

/// The control, the proposals, their A/Bs, the recommendation.
pub fn run(req: TuneRequest, sink: Arc<dyn Sink>) -> Result<TuneOutcome> {
    check(&req)?;
    crate::stats::compare::check_metric("--metric", &req.judge.metric).map_err(usage)?;
    let base = base(&req)?;
    let out = req
        .out
        .clone()
        .unwrap_or_else(|| run_case::default_out("tune-gc", &crate::host::utc_now()));
    if out.join("tune.json").exists() {
        return Err(usage(format!(
            "{} already holds a tune: choose another --out",
            out.display()
        )));
    }
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let (t, record) = control(&req, &base, &out, &sink)?;
    let advice = advise(&t).map_err(|e| usage(format!("tune gc: {e}")))?;
    let gc = t.gc.clone().unwrap_or_default();
    let control = Control {
        requests: t.requests,
        gc_runs: t.gc_runs,
        gc_minor_runs: t.gc_minor_runs,
        gc_major_runs: t.gc_major_runs,
        gc_runs_per_1k: t.gc_runs_per_1k_requests,
        gc_time_share: t.gc_time_share,
        allocated_objects_per_request: t.allocated_objects_per_request,
        gc: gc.clone(),
        record,
    };
    let mut proposals = Vec::new();
    for p in &advice.proposals {
        sink.note(&format!(
            "tune gc: {} ({}): {}",
            p.rule,
            env_words(&p.env),
            p.evidence
        ));
        proposals.push(verify(&req, &base, &out, p, &sink)?);
    }
    let together = |env: &BTreeMap<String, String>| {
        let (d, before, after) = ab(&req, &base, &out, "ab-combined", env, &sink)?;
        Ok(Together {
            verdict: d.verdict,
            change_pct: d.change_pct,
            ci_low_pct: d.ci_low_pct,
            ci_high_pct: d.ci_high_pct,
            decided: d.end == "verdict",
            before,
            after,
        })
    };
    let recommendation = recommend(&proposals, req.judge.margin_pct, together, &sink)?;
    let nothing = advice.nothing_to_gain.clone().or_else(|| {
        recommendation.env.is_empty().then(|| {
            if proposals.is_empty() {
                "no rule fired for this Ruby".to_string()
            } else if proposals.len() == 1 {
                format!("the one proposal was not kept ({})", proposals[0].why)
            } else {
                format!("none of the {} proposals proved better", proposals.len())
            }
        })
    });
    let line = doc::paste_line(
        &recommendation,
        &req.judge.metric,
        req.judge.alpha,
        nothing.as_deref(),
    );
    let document = TuneDocument {
        schema: doc::SCHEMA.into(),
        ruby_version: gc.ruby_version,
        metric: req.judge.metric.clone(),
        margin_pct: req.judge.margin_pct,
        control,
        proposals,
        not_for_this_ruby: advice.not_for_this_ruby,
        recommendation,
        nothing_to_gain: nothing,
        line,
    };
    let json = serde_json::to_string_pretty(&document)?;
    std::fs::write(out.join("tune.json"), format!("{json}\n"))
        .with_context(|| format!("cannot write {}/tune.json", out.display()))?;
    std::fs::write(out.join("tune.md"), doc::render_markdown(&document))
        .with_context(|| format!("cannot write {}/tune.md", out.display()))?;
    std::fs::write(out.join("tune.html"), doc::render_html(&document))
        .with_context(|| format!("cannot write {}/tune.html", out.display()))?;
    Ok(TuneOutcome { doc: document, out })
}

fn env_words(env: &BTreeMap<String, String>) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One proposal's A/B against the control.
fn verify(
    req: &TuneRequest,
    base: &(Table, Table),
    out: &Path,
    p: &Proposal,
    sink: &Arc<dyn Sink>,
) -> Result<ProposalDoc> {
    let name = format!("ab-{}", p.rule.replace('_', "-"));
    let (d, before, after) = ab(req, base, out, &name, &p.env, sink)?;
    let (kept, why) = if d.end == "verdict" {
        judge(d.verdict, before, after, req.judge.margin_pct)
    } else {
        (false, format!("the A/B ended {}", d.end))
    };
    Ok(ProposalDoc {
        rule: p.rule.clone(),
        env: p.env.clone(),
        evidence: p.evidence.clone(),
        rubies: p.rubies.clone(),
        verdict: d.verdict,
        change_pct: d.change_pct,
        ci_low_pct: d.ci_low_pct,
        ci_high_pct: d.ci_high_pct,
        gc_runs_per_1k_before: before.0,
        gc_runs_per_1k_after: after.0,
        gc_time_share_before: before.1,
        gc_time_share_after: after.1,
        kept,
        why,
        ab: format!("{name}/ab.json"),
    })
}

/// The A/B of several kept proposals together, as [`recommend`] reads it.
#[derive(Debug, Clone)]
struct Together {
    verdict: Call,
    change_pct: f64,
    ci_low_pct: Option<f64>,
    ci_high_pct: Option<f64>,
    /// The A/B ended in a verdict (not stopped or failed).
    decided: bool,
    before: SideGc,
    after: SideGc,
}

/// The kept proposals together: one kept is its own A/B's; several are
/// A/B'd together (`together` runs that A/B on their joint environment)
/// and recommended only if that too is better, else the best single one.
fn recommend(
    proposals: &[ProposalDoc],
    margin_pct: f64,
    together: impl FnOnce(&BTreeMap<String, String>) -> Result<Together>,
    sink: &Arc<dyn Sink>,
) -> Result<Recommendation> {
    let kept: Vec<&ProposalDoc> = proposals.iter().filter(|p| p.kept).collect();
    let single = |p: &ProposalDoc| Recommendation {
        env: p.env.clone(),
        verdict: Some(p.verdict),
        change_pct: Some(p.change_pct),
        ci_low_pct: p.ci_low_pct,
        ci_high_pct: p.ci_high_pct,
        gc_runs_per_1k_before: p.gc_runs_per_1k_before,
        gc_runs_per_1k_after: p.gc_runs_per_1k_after,
        ab: Some(p.ab.clone()),
    };
    let best = kept
        .iter()
        .max_by(|a, b| a.change_pct.total_cmp(&b.change_pct))
        .map(|p| single(p));
    if kept.len() < 2 {
        return Ok(best.unwrap_or(Recommendation {
            env: BTreeMap::new(),
            verdict: None,
            change_pct: None,
            ci_low_pct: None,
            ci_high_pct: None,
            gc_runs_per_1k_before: None,
            gc_runs_per_1k_after: None,
            ab: None,
        }));
    }
    let env: BTreeMap<String, String> = kept.iter().flat_map(|p| p.env.clone()).collect();
    sink.note(&format!(
        "tune gc: the {} kept together ({})",
        kept.len(),
        env_words(&env)
    ));
    let t = together(&env)?;
    let (better, _) = judge(t.verdict, t.before, t.after, margin_pct);
    if !better || !t.decided {
        sink.note("tune gc: together they proved no better than the control: the best one alone is recommended");
        return Ok(best.expect("two or more kept"));
    }
    Ok(Recommendation {
        env,
        verdict: Some(t.verdict),
        change_pct: Some(t.change_pct),
        ci_low_pct: t.ci_low_pct,
        ci_high_pct: t.ci_high_pct,
        gc_runs_per_1k_before: t.before.0,
        gc_runs_per_1k_after: t.after.0,
        ab: Some("ab-combined/ab.json".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::sink::Collect;

    fn proposal(rule: &str, var: &str, change_pct: f64, kept: bool) -> ProposalDoc {
        ProposalDoc {
            rule: rule.into(),
            env: BTreeMap::from([(var.to_string(), "1".to_string())]),
            evidence: String::new(),
            rubies: String::new(),
            verdict: if kept { Call::Faster } else { Call::Undecided },
            change_pct,
            ci_low_pct: Some(change_pct - 3.0),
            ci_high_pct: Some(change_pct + 3.0),
            gc_runs_per_1k_before: Some(100.0),
            gc_runs_per_1k_after: Some(40.0),
            gc_time_share_before: Some(0.2),
            gc_time_share_after: Some(0.1),
            kept,
            why: String::new(),
            ab: format!("ab-{rule}/ab.json"),
        }
    }

    fn together(verdict: Call, decided: bool, gc_after: f64) -> Together {
        Together {
            verdict,
            change_pct: 12.0,
            ci_low_pct: Some(8.0),
            ci_high_pct: Some(16.0),
            decided,
            before: (Some(100.0), Some(0.2)),
            after: (Some(gc_after), Some(0.05)),
        }
    }

    fn sink() -> Arc<dyn Sink> {
        Arc::new(Collect::default())
    }

    #[test]
    fn one_kept_is_recommended_alone_without_a_combined_ab() {
        let ps = [
            proposal("heap", "H", 9.0, true),
            proposal("malloc", "M", 2.0, false),
        ];
        let r = recommend(&ps, 2.0, |_| panic!("no combined A/B for one"), &sink()).unwrap();
        assert_eq!(r.env, ps[0].env);
        assert_eq!(r.ab.as_deref(), Some("ab-heap/ab.json"));
        let none = recommend(&ps[1..], 2.0, |_| panic!("nothing kept"), &sink()).unwrap();
        assert!(none.env.is_empty() && none.verdict.is_none());
    }

    #[test]
    fn several_kept_are_ab_tested_together_and_recommended_only_if_better() {
        let ps = [
            proposal("heap", "H", 9.0, true),
            proposal("malloc", "M", 4.0, true),
            proposal("growth", "G", 1.0, false),
        ];
        let mut asked = None;
        let r = recommend(
            &ps,
            2.0,
            |env| {
                asked = Some(env.clone());
                Ok(together(Call::Faster, true, 30.0))
            },
            &sink(),
        )
        .unwrap();
        // Only the kept ones' variables, together.
        let want: BTreeMap<String, String> = [("H", "1"), ("M", "1")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        assert_eq!(asked.as_ref(), Some(&want));
        assert_eq!(r.env, want);
        assert_eq!((r.verdict, r.change_pct), (Some(Call::Faster), Some(12.0)));
        assert_eq!(r.ab.as_deref(), Some("ab-combined/ab.json"));
        assert_eq!(
            (r.gc_runs_per_1k_before, r.gc_runs_per_1k_after),
            (Some(100.0), Some(30.0))
        );
        // Together undecided, stopped, or better but with more GC runs:
        // the best one alone (heap, +9%).
        for t in [
            together(Call::Undecided, true, 30.0),
            together(Call::Faster, false, 30.0),
            together(Call::Faster, true, 150.0),
            together(Call::Slower, true, 30.0),
        ] {
            let r = recommend(&ps, 2.0, |_| Ok(t.clone()), &sink()).unwrap();
            assert_eq!(r.env, ps[0].env, "{t:?}");
            assert_eq!(r.ab.as_deref(), Some("ab-heap/ab.json"), "{t:?}");
        }
    }
}
