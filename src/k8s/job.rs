//! The Indexed Job that runs `rackbench load` as N segments, one pod each,
//! built from the Kubernetes API types (`k8s-openapi`) so that what is
//! written is a valid `batch/v1` Job by construction.
//!
//! It only builds the object from plain data ([`LoadJob`]); it never talks
//! to a cluster (that is `cluster.rs`) and never parses load flags beyond
//! refusing the ones it adds itself.

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodAffinityTerm,
    PodAntiAffinity, PodSpec, PodTemplateSpec, ResourceRequirements, SecurityContext,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use std::collections::BTreeMap;

/// The pod annotation the Job controller sets to each pod's index.
pub const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The variable the index reaches the container as. Declared in the
/// container's `env` because Kubernetes expands `$(VAR)` in `args` only for
/// variables declared there.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The label tying the Job's pods to it (the anti-affinity selects on it).
pub const JOB_LABEL: &str = "rackbench.dev/job";
/// The shared start, as unix seconds (a label value cannot hold ':').
pub const START_LABEL: &str = "rackbench.dev/start-at-unix";
/// The shared start, RFC 3339 UTC, as given to every segment's --start-at.
pub const START_ANNOTATION: &str = "rackbench.dev/start-at";
/// How many segments the load is cut into.
pub const SEGMENTS_ANNOTATION: &str = "rackbench.dev/segments";
/// The node label segments spread over.
pub const HOSTNAME_KEY: &str = "kubernetes.io/hostname";
/// The flags the Job adds to every segment; the user may not give them.
pub const ADDED_FLAGS: [&str; 3] = ["--segment", "--start-at", "--json"];

/// How strongly segments are kept off each other's nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// The scheduler tries one segment per node but runs them anyway when
    /// there are fewer nodes than segments.
    Preferred,
    /// One segment per node or the pod stays Pending: load generators that
    /// share a node share its CPU and measure each other.
    Required,
}

/// Everything the Job is made of, as plain data.
#[derive(Debug, Clone)]
pub struct LoadJob {
    pub name: String,
    pub namespace: Option<String>,
    pub image: String,
    pub segments: u32,
    /// The instant every segment starts its warm-up, unix seconds.
    pub start_at_unix: u64,
    /// CPU request and limit, e.g. "1" or "500m".
    pub cpu: String,
    /// Memory request and limit, e.g. "256Mi".
    pub memory: String,
    pub spread: Spread,
    /// The pods are ended this long after they are created, whatever
    /// they are doing (the Job's activeDeadlineSeconds).
    pub deadline_secs: u64,
    /// The pods use their node's network (`hostNetwork: true`): for a
    /// cluster without a pod network (no CNI plugin), or a server under
    /// test reached at a node's own address.
    pub host_network: bool,
    /// `load URL [flags]`, as given after `--`.
    pub load_args: Vec<String>,
}

/// Why a `LoadJob` cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JobError {
    #[error("--segments must be at least 1 (one pod per segment)")]
    NoSegments,
    #[error("give the load after '--', e.g. `rackbench k8s job --segments 4 --image IMAGE -- load http://svc:8080/ -d 30s`")]
    NoLoad,
    #[error("the command after '--' must be `load URL [flags]`, not '{0}'")]
    NotLoad(String),
    #[error("remove {0} after '--': the Job gives every segment its own --segment, the shared --start-at and --json")]
    AddedFlag(String),
    #[error("'{0}' is not a Kubernetes name: use lower-case letters, digits and '-', starting and ending with a letter or digit, at most {1} characters")]
    BadName(String, usize),
}

impl LoadJob {
    /// Checks what the user gave; every error names the fix.
    pub fn validate(&self) -> Result<(), JobError> {
        if self.segments == 0 {
            return Err(JobError::NoSegments);
        }
        // Pod names are the Job's name plus "-<index>-<5 random>", and
        // the Job's name becomes a label value (at most 63).
        check_name(&self.name, 52)?;
        if let Some(ns) = &self.namespace {
            check_name(ns, 63)?;
        }
        check_load_args(&self.load_args)
    }

    /// The RFC 3339 form of the shared start.
    pub fn start_at(&self) -> String {
        crate::host::rfc3339(self.start_at_unix)
    }

    /// The container's arguments: the user's load, then this segment's
    /// share, the shared start and JSON on stdout.
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = self.load_args.iter().map(|a| escape_refs(a)).collect();
        args.extend([
            "--segment".into(),
            format!("$({INDEX_ENV})/{}", self.segments),
            "--start-at".into(),
            self.start_at(),
            "--json".into(),
        ]);
        args
    }

    fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app.kubernetes.io/name".into(), "rackbench".into()),
            ("app.kubernetes.io/component".into(), "load".into()),
            (JOB_LABEL.into(), self.name.clone()),
            (START_LABEL.into(), self.start_at_unix.to_string()),
        ])
    }

    fn annotations(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (START_ANNOTATION.into(), self.start_at()),
            (SEGMENTS_ANNOTATION.into(), self.segments.to_string()),
        ])
    }

    /// The Job object. Call [`LoadJob::validate`] first.
    pub fn to_job(&self) -> Job {
        let n = i32::try_from(self.segments).unwrap_or(i32::MAX);
        Job {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: self.namespace.clone(),
                labels: Some(self.labels()),
                annotations: Some(self.annotations()),
                ..Default::default()
            },
            spec: Some(JobSpec {
                completion_mode: Some("Indexed".into()),
                completions: Some(n),
                parallelism: Some(n),
                // A failed segment is not retried: a late re-run would
                // miss the shared start and measure a different window.
                backoff_limit: Some(0),
                active_deadline_seconds: Some(
                    i64::try_from(self.deadline_secs).unwrap_or(i64::MAX),
                ),
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(self.labels()),
                        annotations: Some(self.annotations()),
                        ..Default::default()
                    }),
                    spec: Some(self.pod_spec()),
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod_spec(&self) -> PodSpec {
        PodSpec {
            restart_policy: Some("Never".into()),
            affinity: Some(self.affinity()),
            host_network: self.host_network.then_some(true),
            containers: vec![Container {
                name: "load".into(),
                image: Some(self.image.clone()),
                command: Some(vec!["rackbench".into()]),
                args: Some(self.args()),
                env: Some(vec![EnvVar {
                    name: INDEX_ENV.into(),
                    value_from: Some(EnvVarSource {
                        field_ref: Some(ObjectFieldSelector {
                            field_path: format!("metadata.annotations['{INDEX_ANNOTATION}']"),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                resources: Some(self.resources()),
                security_context: Some(SecurityContext {
                    run_as_non_root: Some(true),
                    allow_privilege_escalation: Some(false),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// Requests equal to limits: the pod is in the Guaranteed QoS class,
    /// so (with the static CPU manager and a whole-number CPU) its CPUs
    /// are its own, and a segment is not slowed by a neighbour.
    fn resources(&self) -> ResourceRequirements {
        let amounts = BTreeMap::from([
            ("cpu".to_string(), Quantity(self.cpu.clone())),
            ("memory".to_string(), Quantity(self.memory.clone())),
        ]);
        ResourceRequirements {
            requests: Some(amounts.clone()),
            limits: Some(amounts),
            ..Default::default()
        }
    }

    fn affinity(&self) -> Affinity {
        let term = PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(JOB_LABEL.into(), self.name.clone())])),
                ..Default::default()
            }),
            topology_key: HOSTNAME_KEY.into(),
            ..Default::default()
        };
        let anti = match self.spread {
            Spread::Required => PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![term]),
                ..Default::default()
            },
            Spread::Preferred => PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    WeightedPodAffinityTerm {
                        weight: 100,
                        pod_affinity_term: term,
                    },
                ]),
                ..Default::default()
            },
        };
        Affinity {
            pod_anti_affinity: Some(anti),
            ..Default::default()
        }
    }
}

/// The Job as YAML.
pub fn to_yaml(job: &Job) -> String {
    // A Job of k8s-openapi types always serializes.
    serde_norway::to_string(job).expect("a Job serializes to YAML")
}

/// `load URL [flags]`, without the flags the Job adds.
fn check_load_args(args: &[String]) -> Result<(), JobError> {
    let Some(first) = args.first() else {
        return Err(JobError::NoLoad);
    };
    if first != "load" {
        return Err(JobError::NotLoad(first.clone()));
    }
    if args.len() < 2 {
        return Err(JobError::NoLoad);
    }
    for arg in &args[1..] {
        let flag = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
        if let Some(added) = ADDED_FLAGS.iter().find(|f| **f == flag) {
            return Err(JobError::AddedFlag((*added).into()));
        }
    }
    Ok(())
}

/// A DNS-1123 label of at most `max` characters.
fn check_name(name: &str, max: usize) -> Result<(), JobError> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    let ok = !name.is_empty()
        && name.len() <= max
        && name.chars().all(ok_char)
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(JobError::BadName(name.into(), max))
    }
}

/// Kubernetes expands `$(VAR)` in args; a user's literal `$(` is written
/// `$$(` so it reaches the load as typed.
fn escape_refs(arg: &str) -> String {
    arg.replace("$(", "$$(")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(args: &[&str]) -> LoadJob {
        LoadJob {
            name: "rb".into(),
            namespace: None,
            image: "rackbench:test".into(),
            segments: 3,
            start_at_unix: 1_795_460_400,
            cpu: "1".into(),
            memory: "256Mi".into(),
            spread: Spread::Preferred,
            deadline_secs: 3600,
            host_network: false,
            load_args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn load_args_are_checked() {
        let rows: &[(&[&str], Result<(), JobError>)] = &[
            (&["load", "http://svc/"], Ok(())),
            (
                &["load", "http://svc/", "-d", "30s", "--rate", "100"],
                Ok(()),
            ),
            (&[], Err(JobError::NoLoad)),
            (&["load"], Err(JobError::NoLoad)),
            (&["trial", "puma"], Err(JobError::NotLoad("trial".into()))),
            (
                &["load", "http://svc/", "--segment", "0/2"],
                Err(JobError::AddedFlag("--segment".into())),
            ),
            (
                &["load", "http://svc/", "--start-at=2026-01-01T00:00:00Z"],
                Err(JobError::AddedFlag("--start-at".into())),
            ),
            (
                &["load", "http://svc/", "--json"],
                Err(JobError::AddedFlag("--json".into())),
            ),
        ];
        for (args, want) in rows {
            assert_eq!(&job(args).validate(), want, "{args:?}");
        }
    }

    #[test]
    fn names_are_dns_labels() {
        for (name, ok) in [
            ("rb", true),
            ("rackbench-load-1", true),
            ("", false),
            ("Upper", false),
            ("-lead", false),
            ("trail-", false),
            ("under_score", false),
            (&"x".repeat(53), false),
        ] {
            let mut j = job(&["load", "http://svc/"]);
            j.name = name.into();
            assert_eq!(j.validate().is_ok(), ok, "{name}");
        }
    }

    #[test]
    fn host_network_only_when_asked() {
        let mut j = job(&["load", "http://svc/"]);
        let host = |j: &LoadJob| j.to_job().spec.unwrap().template.spec.unwrap().host_network;
        assert_eq!(host(&j), None);
        j.host_network = true;
        assert_eq!(host(&j), Some(true));
        assert!(to_yaml(&j.to_job()).contains("hostNetwork: true"));
    }

    #[test]
    fn user_dollar_refs_are_escaped_but_the_index_is_not() {
        let args = job(&["load", "http://svc/", "-H", "X-A: $(HOME)"]).args();
        assert!(args.contains(&"X-A: $$(HOME)".to_string()), "{args:?}");
        assert!(
            args.contains(&"$(JOB_COMPLETION_INDEX)/3".to_string()),
            "{args:?}"
        );
    }
}
