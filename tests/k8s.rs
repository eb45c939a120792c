//! `rackbench k8s`: the Indexed Job it writes, read back into the
//! Kubernetes API types, carries what a segmented load needs (index env
//! from the downward API reaching the args, one start for all, guaranteed
//! resources, anti-affinity); bad input is one line with exit 2; a cluster
//! that cannot be reached is one clear line within seconds, never a hang.

mod common;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn rackbench(args: &[&str], kubeconfig: Option<&Path>) -> Output {
    let mut cmd = common::rackbench_cmd();
    cmd.args(args).env_remove("KUBERNETES_SERVICE_HOST");
    match kubeconfig {
        Some(path) => cmd.env("KUBECONFIG", path),
        None => cmd.env_remove("KUBECONFIG"),
    };
    cmd.output().expect("run rackbench")
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn job_from(args: &[&str]) -> Job {
    let out = rackbench(args, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    serde_norway::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a batch/v1 Job: {e}\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn pod_spec(job: &Job) -> &PodSpec {
    job.spec.as_ref().unwrap().template.spec.as_ref().unwrap()
}

fn container(job: &Job) -> &Container {
    let pod = pod_spec(job);
    assert_eq!(pod.containers.len(), 1);
    &pod.containers[0]
}

/// The value after `flag` in `args`.
fn after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).map(String::as_str)
}

#[test]
fn job_manifest_reads_back_as_an_indexed_job_with_what_segments_need() {
    let before = now_unix();
    let job = job_from(&[
        "k8s",
        "job",
        "--segments",
        "4",
        "--image",
        "registry.example/rackbench:1",
        "--name",
        "rb-test",
        "--namespace",
        "bench",
        "--cpu",
        "2",
        "--memory",
        "512Mi",
        "--start-in",
        "90s",
        "--",
        "load",
        "http://web:8080/",
        "-c",
        "40",
        "-d",
        "20s",
    ]);
    let after_run = now_unix();
    let meta = &job.metadata;
    assert_eq!(meta.name.as_deref(), Some("rb-test"));
    assert_eq!(meta.namespace.as_deref(), Some("bench"));

    let spec = job.spec.as_ref().unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(spec.completions, Some(4));
    assert_eq!(spec.parallelism, Some(4));
    assert_eq!(spec.backoff_limit, Some(0));
    let pod = pod_spec(&job);
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));

    let c = container(&job);
    assert_eq!(c.image.as_deref(), Some("registry.example/rackbench:1"));
    assert_eq!(c.command.as_deref(), Some(&["rackbench".to_string()][..]));

    // The index reaches the args: declared in env from the downward API,
    // referenced as $(JOB_COMPLETION_INDEX) in --segment.
    let env = c.env.as_ref().expect("env");
    let index = env
        .iter()
        .find(|e| e.name == "JOB_COMPLETION_INDEX")
        .expect("JOB_COMPLETION_INDEX declared in env");
    let field = index
        .value_from
        .as_ref()
        .and_then(|v| v.field_ref.as_ref())
        .expect("from a fieldRef");
    assert_eq!(
        field.field_path,
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    let args = c.args.as_ref().expect("args");
    assert_eq!(
        &args[..6],
        ["load", "http://web:8080/", "-c", "40", "-d", "20s"]
    );
    assert_eq!(after(args, "--segment"), Some("$(JOB_COMPLETION_INDEX)/4"));
    assert!(args.contains(&"--json".to_string()), "{args:?}");
    for arg in args {
        for (at, _) in arg.match_indices("$(") {
            if at > 0 && arg.as_bytes()[at - 1] == b'$' {
                continue; // $$( is an escaped literal
            }
            let name = arg[at + 2..].split(')').next().unwrap();
            assert!(
                env.iter().any(|e| e.name == name),
                "$({name}) in {arg} is not declared in env, so Kubernetes would pass it literally"
            );
        }
    }

    // One start for every segment (one pod template), now + 90 s, and the
    // same instant in the label and annotations.
    let start = after(args, "--start-at").expect("--start-at");
    let labels = meta.labels.as_ref().unwrap();
    let unix: u64 = labels["rackbench.dev/start-at-unix"].parse().unwrap();
    assert!(
        (before + 90..=after_run + 90).contains(&unix),
        "start {unix} is not now + 90 s ({before}..{after_run})"
    );
    assert_eq!(start, rackbench::host::rfc3339(unix));
    let template = spec.template.metadata.as_ref().unwrap();
    for annotations in [meta.annotations.as_ref(), template.annotations.as_ref()] {
        assert_eq!(annotations.unwrap()["rackbench.dev/start-at"], start);
    }

    // Requests equal limits: the Guaranteed class.
    let res = c.resources.as_ref().unwrap();
    let (req, lim) = (res.requests.as_ref().unwrap(), res.limits.as_ref().unwrap());
    assert_eq!(req, lim);
    assert_eq!(req["cpu"].0, "2");
    assert_eq!(req["memory"].0, "512Mi");

    // Preferred anti-affinity on the hostname, selecting this Job's pods.
    let anti = pod
        .affinity
        .as_ref()
        .unwrap()
        .pod_anti_affinity
        .as_ref()
        .unwrap();
    assert!(anti
        .required_during_scheduling_ignored_during_execution
        .is_none());
    let terms = anti
        .preferred_during_scheduling_ignored_during_execution
        .as_ref()
        .expect("preferred anti-affinity by default");
    let term = &terms[0].pod_affinity_term;
    assert_eq!(term.topology_key, "kubernetes.io/hostname");
    let pod_labels = template.labels.as_ref().unwrap();
    let selector = term
        .label_selector
        .as_ref()
        .unwrap()
        .match_labels
        .as_ref()
        .unwrap();
    assert!(!selector.is_empty());
    for (k, v) in selector {
        assert_eq!(
            pod_labels.get(k),
            Some(v),
            "selector {k}={v} misses the Job's pods"
        );
    }
    assert_eq!(pod_labels["rackbench.dev/job"], "rb-test");
}

#[test]
fn spread_required_keeps_segments_on_different_nodes() {
    let job = job_from(&[
        "k8s",
        "job",
        "--segments",
        "2",
        "--image",
        "rb",
        "--spread",
        "required",
        "--",
        "load",
        "http://web/",
    ]);
    let anti = pod_spec(&job)
        .affinity
        .as_ref()
        .unwrap()
        .pod_anti_affinity
        .clone()
        .unwrap();
    let terms = anti
        .required_during_scheduling_ignored_during_execution
        .expect("required anti-affinity");
    assert_eq!(terms[0].topology_key, "kubernetes.io/hostname");
    assert!(anti
        .preferred_during_scheduling_ignored_during_execution
        .is_none());
}

#[test]
fn job_out_writes_the_same_manifest_to_a_file() {
    let dir = common::work_dir("k8s-out");
    let path = dir.join("job.yaml");
    let out = rackbench(
        &[
            "k8s",
            "job",
            "--segments",
            "3",
            "--image",
            "rb",
            "--out",
            path.to_str().unwrap(),
            "--",
            "load",
            "http://web/",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let job: Job = serde_norway::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(job.spec.unwrap().completions, Some(3));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_job_input_is_one_line_naming_the_fix() {
    let base = ["k8s", "job", "--image", "rb"];
    let cases: &[(&[&str], &str)] = &[
        (&["--segments", "2"], "give the load after '--'"),
        (
            &["--segments", "2", "--", "trial", "puma"],
            "must be `load URL [flags]`",
        ),
        (
            &["--segments", "2", "--", "load"],
            "give the load after '--'",
        ),
        (
            &["--segments", "0", "--", "load", "http://web/"],
            "--segments must be at least 1",
        ),
        // Issue 36: the load's own negative values, with their reason.
        (
            &["--segments", "2", "--", "load", "http://web/", "-d", "-1s"],
            "the load after '--': -d -1s is negative: -d takes DURATION",
        ),
        (
            &[
                "--segments",
                "2",
                "--",
                "load",
                "http://web/",
                "--segment",
                "0/2",
            ],
            "remove --segment",
        ),
        (
            &[
                "--segments",
                "2",
                "--",
                "load",
                "http://web/",
                "--start-at=2026-11-23T21:00:00Z",
            ],
            "remove --start-at",
        ),
        (
            &["--segments", "2", "--", "load", "http://web/", "--json"],
            "remove --json",
        ),
        (
            &[
                "--segments",
                "2",
                "--",
                "load",
                "http://web/",
                "--no-such-flag",
            ],
            "'--no-such-flag'",
        ),
        (
            &[
                "--segments",
                "2",
                "--name",
                "Bad_Name",
                "--",
                "load",
                "http://web/",
            ],
            "not a Kubernetes name",
        ),
        (
            &[
                "--segments",
                "2",
                "--cpu",
                "lots",
                "--",
                "load",
                "http://web/",
            ],
            "--cpu 'lots' is not a Kubernetes quantity",
        ),
        (
            &[
                "--segments",
                "2",
                "--memory",
                "1GB",
                "--",
                "load",
                "http://web/",
            ],
            "--memory '1GB' is not a Kubernetes quantity",
        ),
    ];
    for (args, want) in cases {
        let all: Vec<&str> = base.iter().chain(args.iter()).copied().collect();
        let out = rackbench(&all, None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: want {want:?} in {stderr}");
        assert!(out.stdout.is_empty(), "{args:?} printed a manifest");
    }
}

/// A kubeconfig whose server is a port on 127.0.0.1 that nothing listens on.
fn unreachable_kubeconfig(dir: &Path) -> std::path::PathBuf {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }; // dropped: closed
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n\
             contexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n\
             users:\n- name: u\n  user: {{token: t}}\n"
        ),
    )
    .unwrap();
    path
}

/// kubectl on PATH, or a SKIP line (a failure under RACKBENCH_REQUIRE).
fn kubectl_ready() -> bool {
    let installed = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    rackbench::require::require(
        "kubectl",
        installed,
        "install kubectl (`scripts/deps.sh test` installs Debian's kubernetes-client; tested with 1.32 and Debian 12's 1.20)",
    )
}

#[test]
fn an_unreachable_cluster_is_one_clear_line_quickly() {
    if !kubectl_ready() {
        return;
    }
    let dir = common::work_dir("k8s-down");
    let kubeconfig = unreachable_kubeconfig(&dir);
    let out_dir = dir.join("out");
    let runs: [&[&str]; 2] = [
        &["k8s", "collect", "rb", "--out", out_dir.to_str().unwrap()],
        &[
            "k8s",
            "run",
            "--segments",
            "2",
            "--image",
            "rb",
            "--out",
            out_dir.to_str().unwrap(),
            "--",
            "load",
            "http://web/",
        ],
    ];
    for args in runs {
        let start = Instant::now();
        let out = rackbench(args, Some(&kubeconfig));
        let took = start.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot reach the cluster") && stderr.contains("KUBECONFIG"),
            "{args:?}: {stderr}"
        );
        // A refused port answers at once; the margin is for a busy machine.
        assert!(took < Duration::from_secs(30), "{args:?} took {took:?}");
    }
    assert!(!out_dir.join("segment-0.json").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_kubeconfig_names_the_fix_without_calling_a_cluster() {
    let home = common::work_dir("k8s-home");
    let cases: [(Option<&Path>, &str); 2] = [
        (Some(Path::new("/nonexistent/kubeconfig")), "names no file"),
        (None, "~/.kube/config does not exist"),
    ];
    for (kubeconfig, want) in cases {
        let mut cmd = common::rackbench_cmd();
        cmd.args(["k8s", "collect", "rb"])
            .env("HOME", &home)
            .env_remove("KUBERNETES_SERVICE_HOST");
        match kubeconfig {
            Some(p) => cmd.env("KUBECONFIG", p),
            None => cmd.env_remove("KUBECONFIG"),
        };
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("no kubeconfig") && stderr.contains(want),
            "{stderr}"
        );
        assert!(stderr.contains("KUBECONFIG"), "{stderr}");
    }
    std::fs::remove_dir_all(&home).unwrap();
}

/// A fake API server on 127.0.0.1: just enough of Kubernetes' discovery,
/// one Indexed Job, its pods and their logs for kubectl's `get` and `logs`.
/// Answers `routes` by path (query ignored), 404 otherwise; like every API
/// server it also serves its OpenAPI v2 document at /openapi/v2 (see
/// [`openapi_v2`]). Its thread lives as long as the test process.
struct FakeApiServer {
    port: u16,
    /// "METHOD target" of each request.
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// The bodies of POSTs.
    posted: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl FakeApiServer {
    fn start(mut routes: Vec<(String, String)>) -> FakeApiServer {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let posted = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let bodies = posted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    continue;
                }
                // The headers, then the body (kubectl create's POST).
                let mut line = String::new();
                let mut length = 0;
                let mut accept = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    } else if let Some(v) = lower.strip_prefix("accept:") {
                        accept = v.trim().to_string();
                    }
                    line.clear();
                }
                let mut body = vec![0; length];
                let _ = std::io::Read::read_exact(&mut reader, &mut body);
                let mut words = request.split_whitespace();
                let method = words.next().unwrap_or("").to_string();
                let target = words.next().unwrap_or("").to_string();
                let path = target.split('?').next().unwrap().to_string();
                log.lock().unwrap().push(format!("{method} {target}"));
                if method == "POST" {
                    bodies
                        .lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&body).into_owned());
                }
                let matching = routes.iter().filter(|(p, _)| *p == path).count();
                let at = routes.iter().position(|(p, _)| *p == path);
                let json = "application/json";
                let (status, content_type, body) = match at {
                    // A path given more than once answers each in turn,
                    // the last one from then on.
                    Some(at) if matching > 1 => ("200 OK", json, routes.remove(at).1.into_bytes()),
                    Some(at) => ("200 OK", json, routes[at].1.clone().into_bytes()),
                    None if path == "/openapi/v2" => {
                        let (content_type, body) = openapi_v2(&accept);
                        ("200 OK", content_type, body)
                    }
                    None => ("404 Not Found", json, br#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#.to_vec()),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(&body);
            }
        });
        FakeApiServer { port, seen, posted }
    }
}

/// The fake API server's OpenAPI v2 document: of all kinds only the Job,
/// its top-level fields, tagged with its group, version and kind the way a
/// real server tags it. Older kubectl (Debian 12's 1.20) validates what
/// `create -f` sends against this document itself, and fails when the
/// server has none; it asks for the protobuf form (gnostic's OpenAPIv2
/// `Document`), other clients for JSON, as from a real server.
fn openapi_v2(accept: &str) -> (&'static str, Vec<u8>) {
    const GVK: &str = "x-kubernetes-group-version-kind";
    const FIELDS: [(&str, &str); 5] = [
        ("apiVersion", "string"),
        ("kind", "string"),
        ("metadata", "object"),
        ("spec", "object"),
        ("status", "object"),
    ];
    if !accept.contains("protobuf") {
        let fields: Vec<String> = FIELDS
            .iter()
            .map(|(name, kind)| format!(r#""{name}":{{"type":"{kind}"}}"#))
            .collect();
        let doc = format!(
            r#"{{"swagger":"2.0","info":{{"title":"Kubernetes","version":"v1.33.0"}},"paths":{{}},"definitions":{{"io.k8s.api.batch.v1.Job":{{"type":"object","properties":{{{}}},"{GVK}":[{{"group":"batch","kind":"Job","version":"v1"}}]}}}}}}"#,
            fields.join(",")
        );
        return ("application/json", doc.into_bytes());
    }
    // Protocol buffers: each field is a varint of its number and wire type
    // 2 (bytes), the length as a varint, then the bytes.
    fn varint(out: &mut Vec<u8>, mut n: usize) {
        while n >= 0x80 {
            out.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    fn field(number: usize, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(&mut out, (number << 3) | 2);
        varint(&mut out, bytes.len());
        out.extend_from_slice(bytes);
        out
    }
    // Schema: type = 22 (TypeItem: value = 1), properties = 25 (Properties:
    // additional_properties = 1 of NamedSchema: name = 1, value = 2),
    // vendor_extension = 31 (NamedAny: name = 1, value = 2 of Any: yaml = 2).
    let typed = |kind: &str| field(22, &field(1, kind.as_bytes()));
    let mut properties = Vec::new();
    for (name, kind) in FIELDS {
        properties.extend(field(
            1,
            &[field(1, name.as_bytes()), field(2, &typed(kind))].concat(),
        ));
    }
    let gvk = field(
        2,
        &field(2, b"- group: batch\n  kind: Job\n  version: v1\n"),
    );
    let job = [
        typed("object"),
        field(25, &properties),
        field(31, &[field(1, GVK.as_bytes()), gvk].concat()),
    ]
    .concat();
    let definitions = field(
        1,
        &[field(1, b"io.k8s.api.batch.v1.Job"), field(2, &job)].concat(),
    );
    // Document: swagger = 1, info = 2 (title = 1, version = 2), paths = 8,
    // definitions = 9.
    let doc = [
        field(1, b"2.0"),
        field(2, &[field(1, b"Kubernetes"), field(2, b"v1.33.0")].concat()),
        field(8, &[]),
        field(9, &definitions),
    ]
    .concat();
    // As kube-openapi's handler answers: the media type kubectl asks for
    // has an '@' (deprecated; Go's mime parser rejects it in an answer), so
    // the answer names the same type with a '.'.
    (
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        doc,
    )
}

fn fake_cluster_routes(job: &str, docs: &[(&str, usize, &str, &str)]) -> Vec<(String, String)> {
    let ns = "default";
    let resources = |group_version: &str, list: &str| {
        format!(
            r#"{{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"{group_version}","resources":[{list}]}}"#
        )
    };
    let pod = |name: &str, index: usize, phase: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"{ns}","labels":{{"job-name":"{job}"}},"annotations":{{"batch.kubernetes.io/job-completion-index":"{index}"}}}},"spec":{{"containers":[{{"name":"load","image":"rb"}}]}},"status":{{"phase":"{phase}"}}}}"#
        )
    };
    let pods: Vec<String> = docs
        .iter()
        .map(|(name, index, phase, _)| pod(name, *index, phase))
        .collect();
    let mut routes = vec![
        ("/version".into(), r#"{"major":"1","minor":"33","gitVersion":"v1.33.0"}"#.into()),
        ("/api".into(), r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}"#.into()),
        ("/apis".into(), r#"{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"batch","versions":[{"groupVersion":"batch/v1","version":"v1"}],"preferredVersion":{"groupVersion":"batch/v1","version":"v1"}}]}"#.into()),
        ("/api/v1".into(), resources("v1", r#"{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list"],"shortNames":["po"]},{"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]}"#)),
        ("/apis/batch/v1".into(), resources("batch/v1", r#"{"name":"jobs","singularName":"job","namespaced":true,"kind":"Job","verbs":["get","list","create"]}"#)),
        (
            format!("/apis/batch/v1/namespaces/{ns}/jobs/{job}"),
            format!(r#"{{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"{job}","namespace":"{ns}"}},"spec":{{"completionMode":"Indexed","completions":{},"parallelism":{},"template":{{"spec":{{"containers":[{{"name":"load","image":"rb"}}]}}}}}},"status":{{"succeeded":{},"conditions":[{{"type":"Complete","status":"True"}}]}}}}"#, docs.len(), docs.len(), docs.len()),
        ),
        (
            format!("/api/v1/namespaces/{ns}/pods"),
            format!(r#"{{"apiVersion":"v1","kind":"PodList","metadata":{{}},"items":[{}]}}"#, pods.join(",")),
        ),
    ];
    for (name, index, phase, log) in docs {
        routes.push((
            format!("/api/v1/namespaces/{ns}/pods/{name}"),
            pod(name, *index, phase),
        ));
        routes.push((
            format!("/api/v1/namespaces/{ns}/pods/{name}/log"),
            (*log).to_string(),
        ));
    }
    routes
}

#[test]
fn collect_saves_each_index_from_its_pods_log_then_runs_merge() {
    if !kubectl_ready() {
        return;
    }
    let doc =
        |n: u64| format!("{{\n  \"schema\": \"rackbench/load-v1\",\n  \"requests\": {n}\n}}\n");
    let (doc0, doc1) = (doc(100), doc(111));
    let log1 = format!("warning: segment 1 started 0.1 s late\n{doc1}");
    // Index 1's pod is listed first: collect must go by the index
    // annotation, not the listing order.
    let pods = [
        ("rb-1-bbbbb", 1, "Succeeded", log1.as_str()),
        ("rb-0-aaaaa", 0, "Succeeded", doc0.as_str()),
    ];
    let server = FakeApiServer::start(fake_cluster_routes("rb", &pods));
    let dir = common::scratch("k8s-fake");
    let out_dir = dir.join("out");
    let out = collect_from(&server, &dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let seen = server.seen.lock().unwrap().clone();
    for (index, want) in [(0, 100), (1, 111)] {
        let path = out_dir.join(format!("segment-{index}.json"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}\n{stderr}\nrequests: {seen:?}", path.display()));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["requests"], want, "segment {index}: {text}");
    }
    assert!(stderr.contains("saved 2 segments"), "{stderr}");
    // Then `rackbench merge` ran on them: it either wrote merged.json or
    // failed (these two documents are too small to merge) and said so.
    let merged = out_dir.join("merged.json");
    assert!(
        merged.exists() || stderr.contains("`rackbench merge` of 2 segments failed"),
        "{stderr}"
    );
    assert!(
        seen.iter()
            .any(|t| t.starts_with("GET /api/v1/namespaces/default/pods/rb-0-aaaaa/log")),
        "{seen:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A kubeconfig in `dir` for `server` (plain HTTP, namespace default).
fn fake_kubeconfig(server: &FakeApiServer, dir: &Path) -> std::path::PathBuf {
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{}\n\
             contexts:\n- name: x\n  context: {{cluster: c, user: u, namespace: default}}\ncurrent-context: x\n\
             users:\n- name: u\n  user: {{token: t}}\n",
            server.port
        ),
    )
    .unwrap();
    kubeconfig
}

/// `rackbench k8s collect rb --out DIR/out` against `server`.
fn collect_from(server: &FakeApiServer, dir: &Path) -> Output {
    std::fs::create_dir_all(dir).unwrap();
    let kubeconfig = fake_kubeconfig(server, dir);
    common::rackbench_cmd()
        .args(["k8s", "collect", "rb", "--out"])
        .arg(dir.join("out"))
        .env("KUBECONFIG", &kubeconfig)
        .env("HOME", dir) // kubectl's discovery cache goes here
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap()
}

#[test]
fn collect_merges_nothing_when_a_segment_failed() {
    if !kubectl_ready() {
        return;
    }
    let doc = "{\"schema\": \"rackbench/load-v1\", \"requests\": 5}\n";
    let pods = [
        ("rb-0-aaaaa", 0, "Failed", "error: connection refused\n"),
        ("rb-1-bbbbb", 1, "Succeeded", doc),
        ("rb-2-ccccc", 2, "Succeeded", "no document here\n"),
    ];
    let server = FakeApiServer::start(fake_cluster_routes("rb", &pods));
    let dir = common::scratch("k8s-failed");
    let out = collect_from(&server, &dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("2 of 3 segments cannot be merged"),
        "{stderr}"
    );
    assert!(stderr.contains("0 (no succeeded pod)"), "{stderr}");
    assert!(
        stderr.contains("2 (pod rb-2-ccccc printed no load-v1 document)"),
        "{stderr}"
    );
    assert!(stderr.contains("kubectl logs -l job-name=rb"), "{stderr}");
    assert!(!dir.join("out/merged.json").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `rackbench k8s run` of one segment against a fake API server that shows
/// the Job running twice, then complete (or failed when `fails`).
fn run_against_fake_cluster(fails: bool) -> (Output, FakeApiServer, std::path::PathBuf) {
    let doc = "{\"schema\": \"rackbench/load-v1\", \"requests\": 5}\n";
    let pods = [("rb-0-aaaaa", 0, "Succeeded", doc)];
    let mut routes = fake_cluster_routes("rb", &pods);
    let job_path = "/apis/batch/v1/namespaces/default/jobs/rb";
    let done = routes
        .iter()
        .find(|(p, _)| p == job_path)
        .unwrap()
        .1
        .clone();
    let running = done.replace(
        r#""status":{"succeeded":1,"conditions":[{"type":"Complete","status":"True"}]}"#,
        r#""status":{"active":1}"#,
    );
    assert_ne!(running, done);
    let failed = done
        .replace(r#""succeeded":1"#, r#""failed":1"#)
        .replace("Complete", "Failed");
    // The Job is seen running twice, then complete (or failed).
    routes.retain(|(p, _)| p != job_path);
    let last = if fails { &failed } else { &done };
    for body in [&running, &running, last] {
        routes.push((job_path.into(), body.clone()));
    }
    routes.push((
        "/apis/batch/v1/namespaces/default/jobs".into(),
        done.clone(),
    ));
    // A recent kubectl create asks the OpenAPI v3 document whether the
    // server validates fields itself (it does: its PATCH of a Job takes
    // fieldValidation), and then leaves validation to the server; an older
    // one validates against /openapi/v2 itself (see `openapi_v2`).
    routes.push((
        "/openapi/v3".into(),
        r#"{"paths":{"apis/batch/v1":{"serverRelativeURL":"/openapi/v3/apis/batch/v1?hash=1"}}}"#
            .into(),
    ));
    routes.push((
        "/openapi/v3/apis/batch/v1".into(),
        r#"{"openapi":"3.0.0","info":{"title":"Kubernetes","version":"v1.33.0"},"paths":{"/apis/batch/v1/namespaces/{namespace}/jobs/{name}":{"patch":{"x-kubernetes-action":"patch","x-kubernetes-group-version-kind":{"group":"batch","version":"v1","kind":"Job"},"parameters":[{"name":"fieldValidation","in":"query","schema":{"type":"string"}}],"responses":{"200":{"description":"OK"}}}}},"components":{"schemas":{}}}"#.into(),
    ));
    let server = FakeApiServer::start(routes);
    let dir = common::work_dir(&format!("k8s-run-{fails}"));
    let kubeconfig = fake_kubeconfig(&server, &dir);
    let out_dir = dir.join("out");
    let out = common::rackbench_cmd()
        .args([
            "k8s",
            "run",
            "--segments",
            "1",
            "--image",
            "rb:1",
            "--name",
            "rb",
        ])
        .args(["--start-in", "1s", "--deadline", "10s", "--out"])
        .arg(&out_dir)
        .args(["--", "load", "http://web/", "-d", "1s"])
        .env("KUBECONFIG", &kubeconfig)
        .env("HOME", &dir)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    (out, server, dir)
}

#[test]
fn run_creates_the_job_waits_for_it_and_collects() {
    if !kubectl_ready() {
        return;
    }
    let (out, server, dir) = run_against_fake_cluster(false);
    let out_dir = dir.join("out");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let seen = server.seen.lock().unwrap().clone();
    let context = format!("{stderr}\nrequests: {seen:#?}");

    // Created from the manifest with its fields validated: by the server
    // (recent kubectl) or by kubectl against the OpenAPI v2 document
    // (older kubectl, e.g. Debian 12's 1.20).
    let post = seen
        .iter()
        .position(|t| t.starts_with("POST /apis/batch/v1/namespaces/default/jobs?"))
        .expect(&context);
    assert!(
        seen[post].contains("fieldValidation=Strict")
            || seen[..post]
                .iter()
                .any(|t| t.starts_with("GET /openapi/v2")),
        "{context}"
    );
    let posted = server.posted.lock().unwrap().clone();
    assert_eq!(posted.len(), 1, "{context}");
    let job: Job = serde_json::from_str(&posted[0]).expect("kubectl posted a Job");
    let args = container(&job).args.clone().unwrap();
    assert_eq!(after(&args, "--segment"), Some("$(JOB_COMPLETION_INDEX)/1"));
    let saved: Job =
        serde_norway::from_slice(&std::fs::read(out_dir.join("job.yaml")).unwrap()).unwrap();
    // (kubectl fills in the context's namespace before it posts.)
    assert_eq!(saved.spec, job.spec, "job.yaml is what was submitted");

    // Waited through the running state to completion, then collected.
    let running_at = stderr
        .find("job rb: 1 running, 0 succeeded")
        .expect(&context);
    let done_at = stderr
        .find("job rb: 0 running, 1 succeeded")
        .expect(&context);
    assert!(running_at < done_at, "{context}");
    assert_eq!(
        stderr.matches("1 running").count(),
        1,
        "a line per change: {context}"
    );
    let segment = std::fs::read_to_string(out_dir.join("segment-0.json")).expect(&context);
    let v: serde_json::Value = serde_json::from_str(&segment).unwrap();
    assert_eq!(v["requests"], 5);
    assert!(
        out_dir.join("merged.json").exists()
            || stderr.contains("`rackbench merge` of 1 segments failed"),
        "{context}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_stops_at_a_failed_job_and_names_how_to_see_why() {
    if !kubectl_ready() {
        return;
    }
    let (out, _server, dir) = run_against_fake_cluster(true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let last = stderr.trim_end().lines().last().unwrap_or("");
    assert!(
        last.starts_with("error: job rb failed (1 of 1 segments failed"),
        "{stderr}"
    );
    assert!(last.contains("kubectl describe job rb"), "{stderr}");
    assert!(!dir.join("out/segment-0.json").exists(), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
