//! A plan's two variants as an A/B (`rackbench ab`): `ab::run`'s paired
//! rounds, each window one lab trial of its side written into a run's
//! results directory as it ends (`Session`), so `report` and `compare`
//! read an A/B like any run. A round set aside because the machine
//! disturbed it moves to `set-aside/`; its record is kept and never
//! counted.
//!
//! Each window is the side's planned trial under a round's id (`A-r03`,
//! `A-r03-2` for a round's second attempt) and the round as its repeat,
//! so the summary and the report see each side as a group of repeats.

use super::{RunOptions, Session};
use crate::ab::{self, Event, Outcome, Side, Window, WindowError};
use crate::lab::trial::KeptServer;
use crate::plan::{Expanded, Plan, PlannedTrial};
use crate::stats::sequential::SequentialError;
use crate::store::figures::TrialFigures;
use crate::store::records::{Outcome as TrialOutcome, StoredTrial};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// What an A/B ran: the rounds (each window's record id), and the run's
/// summary once written.
pub struct AbRun {
    pub outcome: Outcome<String>,
    pub result: super::RunResult,
}

/// The two sides' planned trials and where their windows run.
pub struct Pair<'p> {
    pub a: &'p PlannedTrial,
    pub b: &'p PlannedTrial,
    pub servers: Servers,
}

/// Where each side's windows run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Servers {
    /// A fresh server per window, started and stopped as a trial's.
    Fresh,
    /// Each side's server started once and kept running between its
    /// windows (`--keep-running`; `lab::trial::KeptServer` says what that
    /// costs in truth).
    Kept,
}

/// Why an A/B could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum AbError {
    #[error("{0}")]
    Design(#[from] SequentialError),
    #[error("cannot write the A/B's results: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs `a` against `b` (planned trials of `e`) in paired rounds until the
/// sequence stops; `on_event` sees each round and each set-aside attempt.
pub fn run_ab(
    plan: &Plan,
    plan_text: &str,
    e: &Expanded,
    opts: &RunOptions,
    sides: Pair<'_>,
    ab_opts: &ab::Options,
    mut on_event: impl FnMut(Event<'_, String>),
) -> Result<AbRun, AbError> {
    let session = RefCell::new(Session::open(plan, plan_text, e, opts)?);
    // Each side's kept servers (`Servers::Kept`), started by its first
    // window and stopped when the rounds end.
    let kept: RefCell<[Option<KeptServer>; 2]> = RefCell::new([None, None]);
    let attempts: RefCell<BTreeMap<(usize, Side), u32>> = RefCell::new(BTreeMap::new());
    let cores = std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64);
    let window = |side: Side, round: usize| -> Result<Window<String>, WindowError> {
        let base = match side {
            Side::A => sides.a,
            Side::B => sides.b,
        };
        let attempt = {
            let mut a = attempts.borrow_mut();
            let n = a.entry((round, side)).or_insert(0);
            *n += 1;
            *n
        };
        let mut t = base.clone();
        t.id = window_id(side, round, attempt);
        t.repeat = round as u32;
        let stored = match sides.servers {
            Servers::Fresh => session.borrow_mut().trial(t),
            Servers::Kept => {
                let slot = &mut kept.borrow_mut()[side as usize];
                session.borrow_mut().kept_trial(t, slot)
            }
        };
        let stored = stored
            .map_err(|e| WindowError::Failed(format!("cannot write the A/B's record: {e}")))?;
        window_of(side, &stored, &ab_opts.metric, cores)
    };
    let progress = |ev: Event<'_, String>| {
        if let Event::SetAside { set_aside, .. } = &ev {
            let mut s = session.borrow_mut();
            for id in [&set_aside.a.record, &set_aside.b.record] {
                // A record that cannot move stays counted in the summary;
                // the A/B's own figures never count it either way.
                let _ = s.set_aside(id);
            }
        }
        on_event(ev);
    };
    let interrupted = || session.borrow().interrupted();
    let outcome = ab::run(ab_opts, window, progress, interrupted);
    drop(kept);
    let outcome = outcome?;
    let result = session.into_inner().finish()?;
    Ok(AbRun { outcome, result })
}

/// The one planned trial (of the first repeat) a selection names, as
/// `compare` spells selections: `server=NAME`, `variant=NAME` or
/// `label=NAME`, `app=NAME`, `runtime=NAME`, `yjit=true|false`,
/// `connections=N`, several
/// joined by commas. None, or more than one group, is refused naming the
/// groups there are.
pub fn select<'e>(e: &'e Expanded, flag: &str, sel: &str) -> Result<&'e PlannedTrial, String> {
    let mut parts = Vec::new();
    for part in sel.split(',') {
        match part.split_once('=').filter(|(_, v)| !v.is_empty()) {
            Some((
                k @ ("server" | "variant" | "label" | "app" | "runtime" | "yjit" | "connections"),
                v,
            )) => parts.push((k, v)),
            _ => {
                return Err(format!(
                    "{flag} {sel}: `{part}` is not a selection; use server=NAME, label=NAME, \
                     variant=NAME, app=NAME, runtime=NAME, yjit=true|false or connections=N, \
                     several joined by commas (runtime=system,yjit=false)"
                ))
            }
        }
    }
    let matches = |t: &PlannedTrial| {
        parts.iter().all(|&(k, v)| match k {
            "server" => t.server == v,
            // A variant's name carries its runtime, switches and budget
            // after its label ("control@debian-13+yjit", "control+mem=512M"):
            // the label alone selects it (runtime= and the rest tell two
            // such variants apart).
            "variant" | "label" => (t.variant.strip_prefix(v))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['@', '+'])),
            "app" => t.app == v,
            "runtime" => t.runtime.as_deref().unwrap_or("system") == v,
            "yjit" => t.switches.yjit.unwrap_or(false).to_string() == v,
            _ => t.shape.connections.to_string() == v,
        })
    };
    let firsts = || e.trials.iter().filter(|t| t.repeat == 1);
    let found: Vec<&PlannedTrial> = firsts().filter(|t| matches(t)).collect();
    let groups = || {
        firsts()
            .map(|t| t.group.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "{flag} {sel} selects none of the plan's trials; its groups: {}",
            groups()
        )),
        many => Err(format!(
            "{flag} {sel} selects {} groups ({}): add server=, label=, app= or connections= \
             until it names one",
            many.len(),
            many.iter()
                .map(|t| t.group.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// "A-r03", "A-r03-2" for a round's second attempt.
fn window_id(side: Side, round: usize, attempt: u32) -> String {
    match attempt {
        1 => format!("{}-r{round:02}", side.letter()),
        n => format!("{}-r{round:02}-{n}", side.letter()),
    }
}

/// One window as the rounds judge it: its figure of the metric, whether
/// the machine disturbed it, and its counted seconds; a trial that failed
/// or was interrupted ends the rounds.
fn window_of(
    side: Side,
    stored: &StoredTrial,
    metric: &str,
    cores: f64,
) -> Result<Window<String>, WindowError> {
    let rec = match (&stored.outcome, &stored.trial) {
        (TrialOutcome::Interrupted, _) => return Err(WindowError::Interrupted),
        (TrialOutcome::Ok, Some(rec)) => rec,
        (_, _) => {
            return Err(WindowError::Failed(format!(
                "side {} ({}) failed: {}",
                side.letter(),
                stored.group,
                stored.error.as_deref().unwrap_or("no record")
            )))
        }
    };
    Ok(Window {
        figure: TrialFigures::of(rec).metric(metric, cores),
        disturbed: rec.disturbance.as_ref().and_then(|d| d.why()),
        load_s: rec.load.duration_s,
        record: stored.id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two servers defined by the plan itself (installed everywhere),
    /// two labelled variants of the first.
    fn expanded() -> Expanded {
        let text = r#"name = "s"
apps = ["hello"]
[[server]]
name = "base"
label = "control"
[[server]]
name = "base"
label = "more"
env = { X = "1" }
[[server]]
name = "slow"
[server_defs.base]
command = "true {{listen}}"
[server_defs.slow]
command = "true {{listen}}"
[load]
connections = [4]
"#;
        expand(text)
    }

    fn expand(text: &str) -> Expanded {
        let plan = Plan::parse(text, "s.toml").unwrap();
        plan.expand(text, "s.toml", &crate::server::spec::Registry::builtin())
            .unwrap()
    }

    #[test]
    fn a_selection_names_one_group_or_is_refused_naming_the_groups() {
        let e = expanded();
        let got = |sel: &str| select(&e, "--a", sel).map(|t| t.group.clone());
        assert!(got("label=control").unwrap().contains("control"));
        assert!(got("label=more").unwrap().contains("more"));
        let none = got("label=nope").unwrap_err();
        assert!(
            none.contains("selects none") && none.contains("control"),
            "{none}"
        );
        let many = got("app=hello").unwrap_err();
        assert!(many.contains("groups") && many.contains("label="), "{many}");
        let bad = got("colour=red").unwrap_err();
        assert!(
            bad.contains("not a selection") && bad.contains("server=NAME"),
            "{bad}"
        );
    }

    #[test]
    fn a_label_selects_its_variant_whatever_runtime_or_budget_it_carries() {
        let text = r#"name = "s"
apps = ["hello"]
runtimes = ["debian-13"]
[[server]]
name = "base"
label = "control"
[[server]]
name = "base"
label = "control-2"
env = { X = "1" }
[server_defs.base]
command = "true {{listen}}"
[load]
connections = [4]
"#;
        let e = expand(text);
        let got = select(&e, "--a", "label=control").map(|t| t.variant.clone());
        assert_eq!(got.unwrap(), "control@debian-13");
    }

    #[test]
    fn window_ids_name_the_side_round_and_attempt() {
        assert_eq!(window_id(Side::A, 3, 1), "A-r03");
        assert_eq!(window_id(Side::B, 12, 2), "B-r12-2");
    }
}
