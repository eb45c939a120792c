//! The profiles of a study's groups (issue 40): per group with a profiled
//! run, the first such repeat's `profile` and its merged on-CPU collapsed
//! stacks read from the file its record names, and how many good runs
//! were profiled (a group that pools profiled and unprofiled runs is
//! told, never pooled silently); and the difference between two sides'
//! profiles of a group (`compare`, the A/B): their stacks, their CPU per
//! request, the frames whose work moved most (`profile::flame::changes`).

use super::figures::TrialFigures;
use super::read::pair_key;
use super::records::{Outcome, StoredTrial};
use super::study::Study;
use crate::profile::flame::{changes, FrameChange};
use crate::profile::{Profile, View};
use std::collections::BTreeMap;

/// How many frames a difference lists.
pub const CHANGES_SHOWN: usize = 10;

/// A group's profiles.
#[derive(Debug, Clone)]
pub struct GroupProfile {
    pub group: String,
    /// The repeat shown (the first profiled one).
    pub trial: String,
    pub profile: Profile,
    /// Its merged on-CPU collapsed stacks; Err: why they could not be read.
    pub on_cpu: Result<String, String>,
    /// Its merged wall-clock collapsed stacks (every sample, waiting
    /// included); Err: why they could not be read.
    pub wall_clock: Result<String, String>,
    /// Good runs with a profile, and without one.
    pub profiled: usize,
    pub unprofiled: usize,
    /// Why a run asked to profile made none, once each.
    pub errors: Vec<String>,
}

impl GroupProfile {
    /// When the group's figures pool profiled and unprofiled runs.
    pub fn mixed_note(&self) -> Option<String> {
        (self.unprofiled > 0).then(|| {
            format!(
                "{} of {} runs profiled: this group's figures pool profiled and unprofiled runs",
                self.profiled,
                self.profiled + self.unprofiled
            )
        })
    }
}

/// The profiles of each group with a profiled good run, by group name;
/// nothing when the trials cannot be read (the report says so itself).
pub fn group_profiles(study: &Study) -> Vec<GroupProfile> {
    let Ok(trials) = study.trials() else {
        return Vec::new();
    };
    let mut groups: BTreeMap<&str, Vec<_>> = BTreeMap::new();
    for t in &trials.stored {
        if let (Outcome::Ok, Some(rec)) = (t.outcome, &t.trial) {
            groups.entry(t.group.as_str()).or_default().push((t, rec));
        }
    }
    let mut out = Vec::new();
    for (group, mut runs) in groups {
        runs.sort_by_key(|(t, _)| t.repeat);
        let Some((first, rec)) = runs.iter().find(|(_, r)| r.profile.is_some()) else {
            continue;
        };
        let profile = rec.profile.clone().expect("found with a profile");
        let on_cpu = merged_stacks(study, &profile, View::OnCpu);
        let wall_clock = merged_stacks(study, &profile, View::WallClock);
        let profiled = runs.iter().filter(|(_, r)| r.profile.is_some()).count();
        let mut errors: Vec<String> = (runs.iter())
            .filter_map(|(_, r)| r.profile_error.clone())
            .collect();
        errors.sort();
        errors.dedup();
        out.push(GroupProfile {
            group: group.to_string(),
            trial: first.id.clone(),
            profile,
            on_cpu,
            wall_clock,
            profiled,
            unprofiled: runs.len() - profiled,
            errors,
        });
    }
    out
}

/// A run's merged collapsed stacks of one view, or why they cannot be
/// read.
fn merged_stacks(study: &Study, p: &Profile, view: View) -> Result<String, String> {
    let merged =
        (p.files.iter()).find(|f| f.view == view && f.pid.is_none() && f.format == "collapsed");
    match merged {
        Some(f) => (study.profile_file(&f.path)).map_err(|e| format!("{}: {e}", f.path)),
        None => Err(format!("the record names no merged {} file", view.slug())),
    }
}

/// One side's profiled good runs of a group, their stacks merged.
#[derive(Debug, Clone, Default)]
pub struct SideStacks {
    /// Every run's merged on-CPU collapsed stacks one after another (a
    /// stack's counts add up).
    pub collapsed: String,
    pub runs: usize,
    /// The runs' mean server CPU per request (ms), from their records.
    pub cpu_ms_per_request: Option<f64>,
    /// Why a run's stacks could not be read, once each.
    pub unreadable: Vec<String>,
}

/// The profiled good runs `keep` picks, their stacks merged per group
/// (by pair key, as `compare` pairs groups).
pub fn side_stacks(
    study: &Study,
    keep: impl Fn(&StoredTrial) -> bool,
) -> Result<BTreeMap<String, SideStacks>, String> {
    let trials =
        (study.trials()).map_err(|e| format!("cannot read {}: {e}", study.root().display()))?;
    let mut out: BTreeMap<String, SideStacks> = BTreeMap::new();
    let mut cpu: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in trials.ok().filter(|t| keep(t)) {
        let Some((rec, p)) = t
            .trial
            .as_ref()
            .and_then(|r| Some((r, r.profile.as_ref()?)))
        else {
            continue;
        };
        let key = pair_key(&t.planned);
        let side = out.entry(key.clone()).or_default();
        match merged_stacks(study, p, View::OnCpu) {
            Ok(text) => {
                side.collapsed.push_str(&text);
                side.runs += 1;
                if let Some(c) = TrialFigures::of(rec).cpu_ms_per_request {
                    cpu.entry(key).or_default().push(c);
                }
            }
            Err(why) if !side.unreadable.contains(&why) => side.unreadable.push(why),
            Err(_) => {}
        }
    }
    for (key, v) in cpu {
        if let Some(side) = out.get_mut(&key) {
            side.cpu_ms_per_request = Some(v.iter().sum::<f64>() / v.len() as f64);
        }
    }
    out.retain(|_, s| s.runs > 0 || !s.unreadable.is_empty());
    Ok(out)
}

/// Where a group's CPU moved from side A to side B.
#[derive(Debug, Clone)]
pub struct ProfileDifference {
    /// The group (its pair key; the A/B's side labels).
    pub group: String,
    pub a: SideStacks,
    pub b: SideStacks,
    /// The frames whose own CPU moved most, largest first.
    pub changes: Vec<FrameChange>,
}

/// A [`ProfileDifference`] as `compare --json` writes it: the figures and
/// the frames that moved, not the stacks.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DifferenceFigures {
    pub group: String,
    /// Profiled good runs read on each side.
    pub runs_a: usize,
    pub runs_b: usize,
    /// Each side's mean server CPU per request (ms).
    pub cpu_ms_per_request_a: Option<f64>,
    pub cpu_ms_per_request_b: Option<f64>,
    /// The frames whose own CPU moved most, largest first.
    pub changes: Vec<FrameChange>,
    /// Why a run's stacks could not be read, once each, both sides.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

impl ProfileDifference {
    pub fn figures(&self) -> DifferenceFigures {
        DifferenceFigures {
            group: self.group.clone(),
            runs_a: self.a.runs,
            runs_b: self.b.runs,
            cpu_ms_per_request_a: self.a.cpu_ms_per_request,
            cpu_ms_per_request_b: self.b.cpu_ms_per_request,
            // Named as the record's `top` names frames: `method - path`.
            changes: (self.changes.iter())
                .map(|c| FrameChange {
                    frame: c.readable(),
                    ..c.clone()
                })
                .collect(),
            unreadable: (self.a.unreadable.iter())
                .chain(&self.b.unreadable)
                .cloned()
                .collect(),
        }
    }
}

/// A difference per group both sides profiled, in the groups' order.
pub fn differences(
    a: &BTreeMap<String, SideStacks>,
    b: &BTreeMap<String, SideStacks>,
) -> Vec<ProfileDifference> {
    (a.iter())
        .filter_map(|(key, sa)| {
            let sb = b.get(key)?;
            Some(difference(key, sa.clone(), sb.clone()))
        })
        .collect()
}

/// The difference of two sides' stacks, named `group`.
pub fn difference(group: &str, a: SideStacks, b: SideStacks) -> ProfileDifference {
    let changes = changes(
        &a.collapsed,
        &b.collapsed,
        a.cpu_ms_per_request,
        b.cpu_ms_per_request,
        CHANGES_SHOWN,
    );
    ProfileDifference {
        group: group.to_string(),
        a,
        b,
        changes,
    }
}

/// A group of one side is all profiled or all not: rbspy takes CPU from
/// the server, so the two kinds of run are never pooled into one figure.
pub fn not_pooled(dir: &str, key: &str, runs: &[&StoredTrial]) -> Result<(), String> {
    let profiled = (runs.iter())
        .filter(|t| t.trial.as_ref().is_some_and(|r| r.profile.is_some()))
        .count();
    let unprofiled = runs.iter().filter(|t| t.trial.is_some()).count() - profiled;
    if profiled == 0 || unprofiled == 0 {
        return Ok(());
    }
    Err(format!(
        "{dir} holds group `{key}` with {profiled} profiled and {unprofiled} unprofiled runs: \
         rbspy takes CPU from the server (docs/PROFILES.md), so they are not pooled; compare \
         runs of one kind (rerun the group all with or all without --profile)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ViewFigures;

    fn group(profiled: usize, unprofiled: usize) -> GroupProfile {
        let profile = Profile {
            samples: 10,
            rate_hz: 100,
            processes: vec![1],
            gc_share: None,
            top: Vec::new(),
            files: Vec::new(),
            overhead: None,
            wall_clock: ViewFigures {
                samples: 10,
                gc_share: None,
                top: Vec::new(),
            },
            samples_by_pid: Default::default(),
            window_ms: 100,
            profiler: "rbspy 0.55.0".into(),
        };
        GroupProfile {
            group: "g".into(),
            trial: "g__rep1".into(),
            profile,
            on_cpu: Ok(String::new()),
            wall_clock: Ok(String::new()),
            profiled,
            unprofiled,
            errors: Vec::new(),
        }
    }

    #[test]
    fn a_group_that_pools_profiled_and_unprofiled_runs_says_so() {
        assert_eq!(group(2, 0).mixed_note(), None);
        assert_eq!(
            group(1, 2).mixed_note().as_deref(),
            Some("1 of 3 runs profiled: this group's figures pool profiled and unprofiled runs")
        );
    }

    #[test]
    fn a_group_of_profiled_and_unprofiled_runs_is_not_pooled() {
        let run = |profiled: bool| -> StoredTrial {
            let v = crate::store::figures::tests::stored(|v| {
                v["trial"]["profile"] = if profiled {
                    serde_json::to_value(group(1, 0).profile).unwrap()
                } else {
                    serde_json::Value::Null
                };
            });
            serde_json::from_value(v).unwrap()
        };
        let (on, off) = (run(true), run(false));
        assert!(not_pooled("r", "hello direct connections=2", &[&on, &on]).is_ok());
        assert!(not_pooled("r", "hello direct connections=2", &[&off, &off]).is_ok());
        let err = not_pooled("r", "hello direct connections=2", &[&on, &off, &off]).unwrap_err();
        assert!(
            err.contains(
                "group `hello direct connections=2` with 1 profiled and 2 unprofiled runs"
            ) && err.contains("not pooled"),
            "{err}"
        );
    }
}
