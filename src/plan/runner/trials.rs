//! The fixed-load trials in order, each record written the moment its
//! trial ends, and `rerun_disturbed = N`: a repeat whose record says the machine
//! disturbed it (steal or foreign CPU beyond the thresholds, the record's
//! `disturbance`) runs again at the end of its round, at most N times.
//! Each disturbed attempt is kept under `set-aside/ID.ATTEMPT.json`, out of
//! the trials every figure is read from; the last attempt stays, marked,
//! when every rerun was disturbed too.

use super::{Progress, Run};
use crate::plan::PlannedTrial;
use crate::store::records::{Outcome, StoredTrial};
use std::time::Duration;

/// The disturbed repeats of the round so far, each with the attempt it
/// was (1 for the first run) and why.
#[derive(Default)]
struct Reruns {
    queue: Vec<(PlannedTrial, u32, String)>,
}

impl Reruns {
    /// Queues `t` when its record says it was disturbed and the plan
    /// allows reruns.
    fn note(&mut self, t: &PlannedTrial, stored: &StoredTrial, allowed: u32) {
        self.note_attempt(t, stored, allowed, 1);
    }

    fn note_attempt(&mut self, t: &PlannedTrial, stored: &StoredTrial, allowed: u32, attempt: u32) {
        if attempt > allowed {
            return;
        }
        if let Some(why) = disturbed(stored) {
            self.queue.push((t.clone(), attempt, why));
        }
    }
}

/// Why a finished trial was disturbed, in words; None when it was not
/// (or did not finish: a failure is not run again for the machine's sake).
fn disturbed(stored: &StoredTrial) -> Option<String> {
    if stored.outcome != Outcome::Ok {
        return None;
    }
    stored.trial.as_ref()?.disturbance.as_ref()?.why()
}

impl Run<'_> {
    /// The fixed-load trials in order; each record is written the moment
    /// its trial ends. A resume keeps every record that did not end
    /// interrupted.
    pub(super) fn trials(&mut self, trials: &[&PlannedTrial]) -> std::io::Result<()> {
        let mut reruns = Reruns::default();
        for (n, t) in trials.iter().enumerate() {
            if self.interrupted() {
                break;
            }
            // A round's disturbed repeats run again once the round is over.
            if n > 0 && trials[n - 1].repeat != t.repeat {
                self.rerun(&mut reruns)?;
            }
            let kept = self.opts.resume.then(|| self.study.trial(&t.id)).flatten();
            if let Some(old) = kept.filter(|old| old.outcome != Outcome::Interrupted) {
                self.counts.existing += 1;
                self.counts.failed += usize::from(old.outcome == Outcome::Failed);
                self.counts.checks_missed += usize::from(old.checks_missed() > 0);
                continue;
            }
            let done = self.counts.done;
            let eta = if done > 0 {
                self.started.elapsed() / done as u32 * (self.total - n) as u32
            } else {
                Duration::ZERO
            };
            self.show(&Progress::Trial {
                n: n + 1,
                total: self.total,
                trial: t,
                eta,
            });
            let stored = self.run_trial(t);
            self.show(&Progress::TrialDone(&stored));
            self.counts.checks_missed += usize::from(stored.checks_missed() > 0);
            // Written now, whole or not at all: a later crash cannot lose it.
            self.study.write_trial(&stored)?;
            reruns.note(t, &stored, self.plan.rerun_disturbed);
            match stored.outcome {
                Outcome::Ok => self.counts.done += 1,
                Outcome::Failed => {
                    self.counts.done += 1;
                    self.counts.failed += 1
                }
                Outcome::Interrupted => {}
            }
        }
        self.rerun(&mut reruns)
    }

    /// Runs the queued repeats again, in order, each disturbed record set
    /// aside first; a rerun disturbed again queues once more within the
    /// plan's limit.
    fn rerun(&mut self, reruns: &mut Reruns) -> std::io::Result<()> {
        let allowed = self.plan.rerun_disturbed;
        while !reruns.queue.is_empty() {
            if self.interrupted() {
                break;
            }
            let (t, attempt, why) = reruns.queue.remove(0);
            self.study
                .set_aside_as(&t.id, &format!("{}.{attempt}", t.id))?;
            self.show(&Progress::Rerun {
                trial: &t,
                attempt: attempt + 1,
                of: allowed + 1,
                why: &why,
            });
            let stored = self.run_trial(&t);
            self.show(&Progress::TrialDone(&stored));
            self.study.write_trial(&stored)?;
            if stored.outcome == Outcome::Failed {
                self.counts.failed += 1;
            }
            reruns.note_attempt(&t, &stored, allowed, attempt + 1);
        }
        Ok(())
    }
}
