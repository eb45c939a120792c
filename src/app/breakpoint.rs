//! A break-point search's steps (`rackbench breakpoint`): on a running
//! server's URL (settle, then one load run per level) or in the lab (a
//! fresh server per step); the breakpoint-v1 document and its line. What
//! a step says goes to a sink.

use super::sink::Sink;
use crate::lab::trial::{run_trial, TrialSpec};
use crate::load;
use crate::search::settle::{self, SettleConfig};
use crate::search::{self, Breakpoint, SearchConfig, StepKind, StepLoad, StepResult};
use anyhow::Result;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A search on a running server: its URL, each step's load, how long to
/// wait for it to drain, and the latency ceiling.
pub struct OnUrl<'a> {
    pub url: &'a str,
    pub base: load::LoadConfig,
    pub settle_max: Duration,
    pub slo: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct Output<'a> {
    pub schema: &'static str,
    pub target: String,
    pub mode: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    pub throughput_rps: f64,
    pub load_seconds: f64,
    /// Seconds spent waiting for the server to drain between steps.
    pub settle_seconds: f64,
    pub failed_at: Option<f64>,
    pub capped: bool,
    pub confirmed: bool,
    pub method: String,
    pub search: &'a SearchConfig,
    pub steps: &'a [StepResult],
    /// `--profile`: the trial at the break point, profiled (absent
    /// without --profile or when none could be made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::Profile>,
    /// Why `--profile` made no profile, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_error: Option<String>,
}

/// One line per step, as the search goes.
fn step_line(r: &StepResult, kind: StepKind) -> String {
    format!(
        "  {:>8.0}{}: {:>9.0} req/s, p99 {:>9}, errors {}{}{}",
        r.level,
        if kind == StepKind::Probe {
            " probe"
        } else {
            "  full"
        },
        r.throughput_rps,
        crate::units::fmt_us(r.p99_us as f64),
        r.errors,
        r.cause().map_or(String::new(), |c| format!(" ({c})")),
        if r.settle_s >= 0.05 {
            format!(", after {:.1}s settling", r.settle_s)
        } else {
            String::new()
        }
    )
}

/// One step of a search: the level and kind in, its result out.
pub type Steps = Box<dyn FnMut(f64, StepKind) -> StepResult>;

/// A search step on a running server's URL: settle (wait for the server to
/// drain the last step), then one load run at the level.
pub fn url_steps(
    on: OnUrl,
    step_load: StepLoad,
    interrupt: &Arc<AtomicBool>,
    quiet: bool,
    sink: &Arc<dyn Sink>,
) -> Result<Steps> {
    let OnUrl {
        url,
        base,
        settle_max,
        slo,
    } = on;
    let sink = Arc::clone(sink);
    let interrupt = Arc::clone(interrupt);
    let parsed = load::Url::parse(url)?;
    let server = settle::Target::new(
        base.endpoint.clone(),
        parsed.host.clone(),
        parsed.path.clone(),
        base.expect_status.clone(),
    );
    let settle_cfg = SettleConfig {
        ceiling: settle_max,
        ..SettleConfig::default()
    };
    // A run just before this one may have left requests the server is
    // still working off (their clients gone): the first step, and the idle
    // request below, wait for them as any later step waits for the last.
    let mut first_wait = 0.0;
    if !settle_cfg.ceiling.is_zero() && server.look(None, &settle_cfg).is_err() {
        first_wait = settle_wait(&server, &settle_cfg, None, &interrupt, quiet, &*sink);
    }
    // What "as fast as a clean step" means before any step was clean:
    // one request to the idle server.
    // If even that fails, a failing probe says nothing about draining:
    // only the connections are waited for.
    let idle = server.probe(base.timeout);
    let probe_tells = idle.is_ok();
    let mut reference = idle.unwrap_or(Duration::ZERO);
    let mut first = true;
    Ok(Box::new(move |level, kind| {
        let mut settle_s = std::mem::take(&mut first_wait);
        if !first && !settle_cfg.ceiling.is_zero() {
            let reference = probe_tells.then_some(reference);
            settle_s = settle_wait(&server, &settle_cfg, reference, &interrupt, quiet, &*sink);
        }
        first = false;
        let mut c = base.clone();
        step_load.apply(level, kind, &mut c);
        let flag = Arc::new(AtomicBool::new(false));
        c.interrupt = Arc::clone(&flag);
        let user = Arc::clone(&interrupt);
        let report = load::run(c, |_| {
            if user.load(Ordering::Relaxed) {
                flag.store(true, Ordering::Relaxed);
            }
        });
        let mut r = match report {
            Ok(report) => {
                let r = StepResult::from_load(level, &report);
                let within_slo = slo.is_none_or(|ceiling| r.p99_us <= ceiling);
                if r.errors == 0 && within_slo && report.latency_us.count > 0 {
                    reference = Duration::from_micros(report.latency_us.p50);
                }
                r
            }
            Err(e) => StepResult::failed(level, e.to_string()),
        };
        r.settle_s = settle_s;
        if !quiet {
            sink.note(&step_line(&r, kind));
        }
        r
    }))
}

/// Waits until `server` has drained (`settle::Target::look` with
/// `reference`), or the ceiling or Ctrl-C ends the wait, which is then
/// said; returns the wait in seconds.
fn settle_wait(
    server: &settle::Target,
    cfg: &SettleConfig,
    reference: Option<Duration>,
    interrupt: &AtomicBool,
    quiet: bool,
    sink: &dyn Sink,
) -> f64 {
    let settled = settle::wait_until(
        cfg,
        || server.look(reference, cfg),
        || interrupt.load(Ordering::Relaxed),
    );
    let waited = settled.waited.as_secs_f64();
    if let (false, Some(why), false) = (settled.drained, &settled.last_busy, quiet) {
        sink.note(&format!(
            "  (the server had not drained after {waited:.1}s: {why}; stepping on)"
        ));
    }
    waited
}

/// A search step in the lab: a fresh server per step (`TrialSpec::at_step`).
pub fn lab_steps(
    spec: TrialSpec,
    step_load: StepLoad,
    quiet: bool,
    sink: &Arc<dyn Sink>,
) -> (String, Steps) {
    let sink = Arc::clone(sink);
    let target = format!("{} with {}", spec.server.name, spec.app.name);
    let mut n = 0;
    (
        target,
        Box::new(move |level, kind| {
            n += 1;
            let s = spec.at_step(&step_load, level, kind, spec.dir.join(format!("step{n}")));
            let r = match run_trial(s) {
                Ok(rec) => rec.as_step(level),
                Err(e) => StepResult::failed(level, e.to_string()),
            };
            if !quiet {
                sink.note(&step_line(&r, kind));
            }
            r
        }),
    )
}

/// `--profile`: one more full step at `level`, the last clean one (where
/// the server is at its limit), with rbspy on the server over its counted
/// window; files in the work dir's `profile/`. The profile, or why none.
pub fn profile_level(
    spec: &TrialSpec,
    step_load: &StepLoad,
    level: f64,
    ask: crate::lab::spec::ProfileAsk,
) -> Result<crate::profile::Profile, String> {
    let mut s = spec.at_step(step_load, level, StepKind::Full, spec.dir.join("profiled"));
    s.profile = Some(ask);
    let rec = run_trial(s).map_err(|e| e.to_string())?;
    match (rec.profile, rec.profile_error) {
        (Some(p), _) => Ok(p),
        (None, why) => Err(why.unwrap_or_else(|| "the trial made no profile".into())),
    }
}

/// Where a search's steps run. Made once per command and moved into the
/// search, so the size of its variants does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Target<'a> {
    /// A running server's URL.
    Url(OnUrl<'a>),
    /// A fresh lab server per step; with `--profile`, the level found is
    /// run once more, profiled.
    Lab {
        spec: TrialSpec,
        profile: Option<crate::lab::spec::ProfileAsk>,
    },
}

/// What `breakpoint` is asked, its flags read.
pub struct SearchRequest<'a> {
    pub target: Target<'a>,
    pub step_load: StepLoad,
    pub cfg: SearchConfig,
    /// Seed 000's linear search, in steps of this size (positive).
    pub linear: Option<f64>,
    /// No line per step (the JSON document is the output).
    pub quiet: bool,
    /// Ctrl-C: the search stops after the step it is in.
    pub interrupt: Arc<AtomicBool>,
}

/// What the search found.
pub struct Found {
    /// What it searched ("URL", or "SERVER with APP").
    pub target: String,
    pub result: Breakpoint,
    /// `--profile`'s run at the level found: the profile and the work dir
    /// its files are in, or why there is none.
    pub profile: Option<Result<(crate::profile::Profile, String), String>>,
    pub interrupted: bool,
}

/// Runs the search: steps on the URL or in the lab, growing then
/// bisecting (or linear), then `--profile`'s run at the level found.
/// `--profile`'s refusals (no rbspy, JRuby) come before the first step.
pub fn search(req: SearchRequest, sink: &Arc<dyn Sink>) -> Result<Found> {
    let SearchRequest {
        target,
        step_load,
        cfg,
        linear,
        quiet,
        interrupt,
    } = req;
    let mut profiled = None;
    let (target, mut step) = match target {
        Target::Url(on_url) => {
            let url = on_url.url.to_string();
            (url, url_steps(on_url, step_load, &interrupt, quiet, sink)?)
        }
        Target::Lab { spec, profile } => {
            if let Some(ask) = profile {
                let mut checked = spec.clone();
                checked.profile = Some(ask.clone());
                crate::lab::spec::validate(&checked)?;
                profiled = Some((spec.clone(), ask));
            }
            lab_steps(spec, step_load, quiet, sink)
        }
    };
    let stop = || interrupt.load(Ordering::Relaxed);
    let result = match linear {
        Some(s) => search::find_linear(&cfg, s, &mut step, stop),
        None => search::find_breakpoint(&cfg, &mut step, stop),
    };
    let interrupted = interrupt.load(Ordering::Relaxed);
    let profile = match (profiled, result.level) {
        (Some((spec, ask)), Some(level)) if !interrupted => {
            if !quiet {
                sink.note(&format!(
                    "profiling the break point: {level:.0} again, with rbspy"
                ));
            }
            let dir = spec.dir.display().to_string();
            Some(profile_level(&spec, &step_load, level, ask).map(|p| (p, dir)))
        }
        _ => None,
    };
    Ok(Found {
        target,
        result,
        profile,
        interrupted,
    })
}

/// The search's result as text: one line (two when the first failing
/// level says why).
pub fn result_text(out: &Output, result: &Breakpoint, interrupted: bool) -> String {
    let rate_mode = out.mode == "rate";
    match result.level {
        Some(l) => format!(
            "break point: {l:.0} {} at {:.0} req/s{}{}; {:.0} load-seconds over {} steps{}{}",
            if rate_mode {
                "req/s offered"
            } else {
                "connections"
            },
            result.throughput_rps,
            if result.capped {
                " (no failure up to --max)"
            } else {
                ""
            },
            if result.confirmed {
                ""
            } else {
                " (interrupted before its full step: a probe's figures)"
            },
            result.load_seconds,
            result.steps.len(),
            if result.settle_seconds() >= 0.05 {
                format!(" (and {:.1}s settling)", result.settle_seconds())
            } else {
                String::new()
            },
            match (result.failed_at, result.why_failed()) {
                (Some(at), Some(why)) => format!("\nfirst failing level {at:.0}: {why}"),
                _ => String::new(),
            }
        ),
        None if interrupted => "interrupted before any level held".to_string(),
        None => format!(
            "no break point: even {} failed{}",
            if rate_mode {
                format!("{} req/s", search::FLOOR)
            } else {
                format!("{} connection", search::FLOOR)
            },
            result
                .steps
                .last()
                .and_then(|s| s.why.as_ref())
                .map_or(String::new(), |w| format!(" ({w})"))
        ),
    }
}
