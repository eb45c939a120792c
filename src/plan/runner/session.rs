//! A run whose trials the caller chooses one at a time (`rackbench ab`:
//! the next window depends on the verdict so far). Each trial is run and
//! its record written the moment it ends, as `run_plan` does; the
//! manifest lists the trials run so far and is written again after each
//! one, so the directory is a run's that `report` and `compare` read,
//! whenever it stops. A trial set aside (a disturbed A/B round) is
//! written apart, under `set-aside/`, out of every figure.

// A trial that failed carries its error once, into its record: its size
// does not matter.
#![allow(clippy::result_large_err)]

use super::{manifest, Counts, Progress, Run, RunOptions, RunResult};
use crate::lab::trial::{keep_server, KeptServer};
use crate::plan::{Expanded, Plan, PlannedTrial};
use crate::store::records::StoredTrial;
use crate::store::study::Study;
use crate::store::ResultsDir;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// An open run of trials chosen one at a time.
pub struct Session<'a> {
    run: Run<'a>,
    ran: Vec<PlannedTrial>,
    /// The manifest's start, kept as each rewrite lists more trials.
    started_at: String,
}

impl<'a> Session<'a> {
    /// Makes `opts.out` a run's directory (plan and an empty manifest).
    /// A resume is refused by the caller: the trials are not known ahead.
    pub fn open(
        plan: &'a Plan,
        plan_text: &str,
        e: &'a Expanded,
        opts: &'a RunOptions,
    ) -> std::io::Result<Session<'a>> {
        let mut study = Study::read(ResultsDir::new(&opts.out));
        study.write_plan(plan_text)?;
        let mut session = Session {
            run: Run {
                plan,
                e,
                opts,
                study,
                total: 0,
                started: Instant::now(),
                counts: Counts::default(),
            },
            ran: Vec::new(),
            started_at: crate::host::utc_now(),
        };
        session.write_manifest()?;
        Ok(session)
    }

    /// Runs `t` and writes its record under `trials/` (or `set-aside/`
    /// when the caller sets it aside afterwards: see [`Session::set_aside`]).
    pub fn trial(&mut self, t: PlannedTrial) -> std::io::Result<StoredTrial> {
        let stored = self.run.run_trial(&t);
        self.keep(t, stored)
    }

    /// Like [`Session::trial`], as a window on `kept`'s servers, started
    /// with this trial's spec when `kept` is still empty (`ab
    /// --keep-running`); a server that would not start is this trial's
    /// failure, and `kept` stays empty.
    pub fn kept_trial(
        &mut self,
        t: PlannedTrial,
        kept: &mut Option<KeptServer>,
    ) -> std::io::Result<StoredTrial> {
        let stored = self.run.run_trial_by(&t, |spec| {
            let server = match kept {
                Some(server) => server,
                None => kept.insert(keep_server(&spec)?),
            };
            server.window(spec)
        });
        self.keep(t, stored)
    }

    /// Shows and writes a trial just run.
    fn keep(&mut self, t: PlannedTrial, stored: StoredTrial) -> std::io::Result<StoredTrial> {
        self.run.show(&Progress::TrialDone(&stored));
        self.run.study.write_trial(&stored)?;
        self.ran.push(t);
        self.write_manifest()?;
        Ok(stored)
    }

    /// Moves a trial already run out of `trials/` into `set-aside/` (a
    /// disturbed round the A/B runs again): kept, marked by where it is,
    /// and out of the manifest, the summary and every report's figures.
    pub fn set_aside(&mut self, id: &str) -> std::io::Result<()> {
        self.run.study.set_aside(id)?;
        self.ran.retain(|t| t.id != id);
        self.write_manifest()
    }

    /// Whether Ctrl-C was pressed.
    pub fn interrupted(&self) -> bool {
        self.run.opts.interrupt.load(Ordering::Relaxed)
    }

    /// The results directory.
    pub fn dir(&self) -> &ResultsDir {
        self.run.study.dir()
    }

    /// Writes the summary of the trials kept; the run's counts.
    pub fn finish(mut self) -> std::io::Result<RunResult> {
        self.write_manifest()?;
        let summary = self.run.study.summary()?;
        self.run.study.write_summary(&summary)?;
        Ok(RunResult {
            done: self.ran.len(),
            failed: 0,
            checks_missed: 0,
            skipped_existing: 0,
            interrupted: self.interrupted(),
            summary,
            study: self.run.study,
        })
    }

    fn write_manifest(&mut self) -> std::io::Result<()> {
        let trials: Vec<&PlannedTrial> = self.ran.iter().collect();
        let mut m = manifest(self.run.plan, self.run.e, self.run.opts, &trials, &[]);
        m.started_at = self.started_at.clone();
        self.run.study.write_manifest(&m)
    }
}
