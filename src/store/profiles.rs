//! The profiles of a study's groups (issue 40): per group with a profiled
//! run, the first such repeat's `profile` and its merged on-CPU collapsed
//! stacks read from the file its record names, and how many good runs
//! were profiled (a group that pools profiled and unprofiled runs is
//! told, never pooled silently).

use super::records::Outcome;
use super::study::Study;
use crate::profile::{Profile, View};
use std::collections::BTreeMap;

/// A group's profiles.
#[derive(Debug, Clone)]
pub struct GroupProfile {
    pub group: String,
    /// The repeat shown (the first profiled one).
    pub trial: String,
    pub profile: Profile,
    /// Its merged on-CPU collapsed stacks; Err: why they could not be read.
    pub on_cpu: Result<String, String>,
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
        let merged = (profile.files.iter())
            .find(|f| f.view == View::OnCpu && f.pid.is_none() && f.format == "collapsed");
        let on_cpu = match merged {
            Some(f) => (study.profile_file(&f.path)).map_err(|e| format!("{}: {e}", f.path)),
            None => Err("the record names no merged on-CPU file".into()),
        };
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
            profiled,
            unprofiled: runs.len() - profiled,
            errors,
        });
    }
    out
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
}
