//! Which Ruby, which switches, as the store reads them from a record's
//! `runtime` (what the server process itself reported: `runtime::inside`).
//! [`RanOn`] is the key reports label rows by and compare selects by:
//! the runtime's name, its Ruby version, YJIT and the allocator.
//! [`StudyRuntime`] is one runtime of a study with everything the
//! environment section shows, gathered over the records that ran on it.
//!
//! It never reads a file (`read` does) and never decides how a runtime
//! is started (`runtime`). A record made before runtimes has none: it is
//! unknown, never guessed from the host's `ruby -v`.

use crate::lab::trial::TrialRecord;
use crate::units::natural_cmp;
use serde::Serialize;

/// What a trial ran on, as reports label it and compare selects it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RanOn {
    /// The runtime's name: system, debian-13, jruby, a user's name.
    pub name: String,
    pub ruby_version: Option<String>,
    /// YJIT enabled in the server process; None when it did not report.
    pub yjit: Option<bool>,
    /// `glibc` or `jemalloc`, as the server process mapped it.
    pub allocator: Option<String>,
}

/// The keys a selection may name (`DIR:runtime=NAME`, `DIR:yjit=true`,
/// `DIR:allocator=jemalloc`).
pub const SELECTOR_KEYS: &[&str] = &["runtime", "yjit", "allocator"];

impl RanOn {
    /// The record's runtime; None in records made before runtimes.
    pub fn of(r: &TrialRecord) -> Option<RanOn> {
        let rt = r.runtime.as_ref()?;
        Some(RanOn {
            name: rt.name.clone(),
            ruby_version: rt.ruby_version.clone(),
            yjit: rt.yjit,
            allocator: rt.allocator.clone(),
        })
    }

    /// "debian-13 ruby 3.3.8 +yjit +jemalloc": the name, the Ruby's
    /// version, and the switches that are not the default (YJIT off and
    /// glibc's malloc go unsaid).
    pub fn label(&self) -> String {
        let mut s = self.name.clone();
        if let Some(v) = &self.ruby_version {
            s.push_str(&format!(" ruby {v}"));
        }
        if self.yjit == Some(true) {
            s.push_str(" +yjit");
        }
        if self.allocator.as_deref() == Some("jemalloc") {
            s.push_str(" +jemalloc");
        }
        s
    }

    /// Whether this runtime is what `key=value` selects (a key of
    /// [`SELECTOR_KEYS`]; any other key selects nothing).
    pub fn matches(&self, key: &str, value: &str) -> bool {
        match key {
            "runtime" => self.name == value,
            "yjit" => self.yjit.map(|y| y.to_string()).as_deref() == Some(value),
            "allocator" => self.allocator.as_deref() == Some(value),
            _ => false,
        }
    }
}

/// One runtime of a study, as the environment section lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyRuntime {
    /// [`RanOn::label`]: how the study's rows name it.
    pub label: String,
    pub name: String,
    /// system, debian, ruby or jruby.
    pub kind: String,
    pub ruby_description: Option<String>,
    pub ruby_version: Option<String>,
    pub engine: Option<String>,
    pub yjit: Option<bool>,
    pub allocator: Option<String>,
    /// Every server version the trials on it reported ("puma 6.6.0").
    pub server_versions: Vec<String>,
    /// A Debian root's directory; None for the others.
    pub root: Option<String>,
    /// The trial records that ran on it.
    pub trials: usize,
    /// Every disagreement between what the trials asked and what the
    /// server ran with, once each.
    pub mismatches: Vec<String>,
}

/// The runtimes `records` ran on, each once, in natural order of their
/// labels; records without a runtime are left out (unknown).
pub fn study_runtimes<'a>(records: impl IntoIterator<Item = &'a TrialRecord>) -> Vec<StudyRuntime> {
    let mut out: Vec<StudyRuntime> = Vec::new();
    for r in records {
        let (Some(rt), Some(on)) = (&r.runtime, RanOn::of(r)) else {
            continue;
        };
        let label = on.label();
        let i = match out.iter().position(|s| s.label == label) {
            Some(i) => i,
            None => {
                out.push(StudyRuntime {
                    label,
                    name: rt.name.clone(),
                    kind: rt.kind.clone(),
                    ruby_description: rt.ruby_description.clone(),
                    ruby_version: rt.ruby_version.clone(),
                    engine: rt.engine.clone(),
                    yjit: rt.yjit,
                    allocator: rt.allocator.clone(),
                    server_versions: Vec::new(),
                    root: rt.root.clone(),
                    trials: 0,
                    mismatches: Vec::new(),
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        s.trials += 1;
        push_new(&mut s.server_versions, rt.server_version.iter());
        push_new(&mut s.mismatches, rt.mismatches.iter());
    }
    out.sort_by(|a, b| natural_cmp(&a.label, &b.label));
    out
}

/// The distinct runtimes of `records` (those without one left out), in
/// natural order of their labels.
pub fn ran_on<'a>(records: impl IntoIterator<Item = &'a TrialRecord>) -> Vec<RanOn> {
    let mut out: Vec<RanOn> = Vec::new();
    for on in records.into_iter().filter_map(RanOn::of) {
        if !out.contains(&on) {
            out.push(on);
        }
    }
    out.sort_by(|a, b| natural_cmp(&a.label(), &b.label()));
    out
}

/// Every mismatch of `records`' runtimes (asked against ran), once each.
pub fn mismatches<'a>(records: impl IntoIterator<Item = &'a TrialRecord>) -> Vec<String> {
    let mut out = Vec::new();
    for r in records {
        if let Some(rt) = &r.runtime {
            push_new(&mut out, rt.mismatches.iter());
        }
    }
    out
}

/// The labels of `on` joined by " / "; None when empty.
pub fn labels(on: &[RanOn]) -> Option<String> {
    let v: Vec<String> = on.iter().map(RanOn::label).collect();
    (!v.is_empty()).then(|| v.join(" / "))
}

/// `records`' mismatches as the notes beside their row ("runtime: yjit
/// asked true, the server ran with false"), once each.
pub fn notes<'a>(records: impl IntoIterator<Item = &'a TrialRecord>) -> Vec<String> {
    mismatches(records).iter().map(|m| note(m)).collect()
}

/// One mismatch as a row's note.
pub fn note(mismatch: &str) -> String {
    format!("runtime: {mismatch}")
}

fn push_new<'a>(into: &mut Vec<String>, items: impl Iterator<Item = &'a String>) {
    for v in items {
        if !into.contains(v) {
            into.push(v.clone());
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::figures::tests::stored;
    use crate::store::records::StoredTrial;
    use serde_json::json;

    /// The sample record run on `name` with Ruby `version`, YJIT `yjit`
    /// and `mismatches`.
    pub(crate) fn on(name: &str, version: &str, yjit: bool, mismatches: &[&str]) -> TrialRecord {
        let v = stored(|v| {
            v["trial"]["runtime"] = json!({
                "name": name, "kind": if name == "system" { "system" } else { "debian" },
                "ruby_description": format!("ruby {version} (fixture) [x86_64-linux-gnu]"),
                "ruby_version": version, "engine": "ruby", "yjit": yjit, "allocator": "glibc",
                "server_version": "puma 6.6.0", "server_version_from": "process",
                "processes_reporting": 1, "mismatches": mismatches,
            });
        });
        let t: StoredTrial = serde_json::from_value(v).unwrap();
        t.trial.unwrap()
    }

    #[test]
    fn a_label_names_the_runtime_its_ruby_and_only_the_switches_that_are_on() {
        let rows: Vec<(TrialRecord, &str)> = vec![
            (on("system", "3.1.2", false, &[]), "system ruby 3.1.2"),
            (
                on("debian-13", "3.3.8", true, &[]),
                "debian-13 ruby 3.3.8 +yjit",
            ),
        ];
        for (r, want) in rows {
            assert_eq!(RanOn::of(&r).unwrap().label(), want);
        }
        let mut jem = RanOn::of(&on("system", "3.1.2", false, &[])).unwrap();
        jem.allocator = Some("jemalloc".into());
        jem.ruby_version = None;
        assert_eq!(jem.label(), "system +jemalloc");
    }

    #[test]
    fn selection_keys_match_name_yjit_and_allocator_and_nothing_else() {
        let on = RanOn::of(&on("debian-13", "3.3.8", true, &[])).unwrap();
        let rows = [
            ("runtime", "debian-13", true),
            ("runtime", "system", false),
            ("yjit", "true", true),
            ("yjit", "false", false),
            ("allocator", "glibc", true),
            ("allocator", "jemalloc", false),
            ("server", "debian-13", false),
        ];
        for (k, v, want) in rows {
            assert_eq!(on.matches(k, v), want, "{k}={v}");
        }
    }

    #[test]
    fn a_study_lists_each_runtime_once_with_its_mismatches_and_older_records_are_unknown() {
        let mut old = on("system", "3.1.2", false, &[]);
        old.runtime = None;
        let asked = "yjit asked true, the server ran with false";
        let records = [
            on("system", "3.1.2", false, &[]),
            on("debian-13", "3.3.8", true, &[]),
            on("system", "3.1.2", false, &[asked]),
            old,
        ];
        let s = study_runtimes(&records);
        let labels: Vec<&str> = s.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["debian-13 ruby 3.3.8 +yjit", "system ruby 3.1.2"]);
        assert_eq!(
            (s[1].trials, s[1].mismatches.as_slice()),
            (2, &[asked.to_string()][..])
        );
        assert_eq!(s[0].server_versions, ["puma 6.6.0"]);
        assert_eq!(ran_on(&records).len(), 2);
        assert_eq!(mismatches(&records), [asked]);
        assert!(study_runtimes(&records[3..]).is_empty());
    }
}
