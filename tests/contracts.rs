//! The JSON contracts: every committed schema (`schema/`) holds real output
//! and refuses documents that break it.
//!
//! `tests/contracts/*.json` are real documents, written by `rackbench run
//! tests/contracts/plan.toml` (puma, one trial and a break-point search;
//! run-trial-v1-runtime.json from `plan-runtime.toml`, a planned trial
//! with its runtime and switches; run-trial-v1-budget.json from
//! `plan-budget.toml`, a planned trial under `[budget] memory = "256M"`;
//! run-trial-v1-slow.json and report-v1-slow.json from `plan-slow.toml`,
//! puma with 2 `headers` slow clients and without, its report.json;
//! trial-v1-restart.json from `rackbench trial --server puma --workers 2
//! --threads 2 -c 4 -d 6s --warmup 1s --restart hot --restart-at 2s
//! --json`; trial-v1-soak.json from `rackbench trial --server puma --app leak
//! --workers 2 --threads 1 --env LEAK_BYTES_PER_REQUEST=16K --rate 200
//! --soak 40s --warmup 3s --json`; trial-v1-blog.json from `rackbench trial
//! --server puma --app blog --database postgres --no-pin -c 4 -d 2s
//! --warmup 1s --telemetry -H "X-Rackbench-Endpoint: index" --json`, with
//! its `database`, its endpoint and the
//! telemetry's SQL and pool-wait times; trial-v1-fault.json from
//! `rackbench trial --server puma --workers 2 --threads 2 -c 4 -d 6s
//! --warmup 1s --json` with one worker killed (`kill -9` by pid) about 2 s
//! into the window, as root: its `faults.worker_deaths`; report-v1-blog.json:
//! `rackbench report` of plans/blog-threads.toml's
//! committed run (bench/runs/2026-11-26-blog-threads) with only the
//! threads=10 group's two trials kept, the others missing: a mix's
//! endpoints with telemetry inside, the database, SQL and pool wait)
//! and `rackbench breakpoint URL --json` against `rackbench serve-test`
//! (sweep-v1.json: `rackbench sweep --command "rackbench serve-test
//! --workers {{workers}} --delay 20ms" --vary workers=1,2,4,8
//! --connections 4`, its `--analyse DIR --json`;
//! mirror-v1.json: `rackbench mirror --diff-bodies --primary-b --record
//! --json` in front of three serve-tests, curl as the client;
//! doctor-v1.json: `rackbench doctor --seconds 1 --json` on the 2-CPU VM
//! where five builds ran;
//! fits-v1.json: `rackbench fit plans/budget-512.toml --repeats 1
//! --max-workers 2 --max-threads 2 --duration 1s --out DIR`'s fits.json,
//! puma holding no configuration, unicorn and passenger each one);
//! load-v1.json: `rackbench load URL -c 2 -d 1s --warmup 200ms --json`
//! against `rackbench serve-test` (made afresh for its `fairness`);
//! load-v1-slow.json: `rackbench load URL -c 2 -d 2s --slow-clients 2
//! --slow-mode headers --json` against `rackbench serve-test`;
//! ab-v1.json: `rackbench ab PLAN --a server=base --b server=slow
//! --max-load 30s --no-pin --seed 38 --json`, the plan of tests/ab.rs
//! (serve-test at 20 ms and at 21 ms: called slower after 5 rounds);
//! history-v1.json: `rackbench history runs --metric p99 --json` over ten
//! runs written as tests/history.rs writes them (the run-trial-v1 sample,
//! six repeats each, p99 20% higher from the sixth run on);
//! tune-v1.json: `rackbench tune gc --server unicorn --workers 1 --app
//! ruby/apps/allocate.ru -c 1 --control 6s -d 2s --warmup 1s --max-load 8s
//! --no-pin --json`, written by tests/tune.rs under UPDATE_SNAPSHOTS=1 on
//! the busy 2-CPU VM (its A/B undecided);
//! live-v1.json: `/live.json` in the counted window of `rackbench trial
//! --server unicorn --workers 1 --app sleep --app-path /?ms=20 -c 8 -d 3s
//! --warmup 1s --telemetry --metrics-listen ADDR` (the accept queue at
//! 7); live-v1-mirror.json: `/live.json` at the end of `rackbench mirror
//! -d 3s --metrics-listen ADDR` in front of two serve-tests, 500 requests
//! through it;
//! load-v1-mix.json: `rackbench load URL -c 4 -d 2s --mix
//! tests/contracts/mix.toml --json` against `rackbench serve-test
//! --path-delay /slow=5ms`;
//! the tests that make such documents afresh (tests/servers.rs,
//! tests/cli.rs, tests/load_engine.rs, tests/report.rs, tests/mirror.rs) check them
//! against the same schemas.
//! Here each is broken one way at a time: a value outside an `enum`, under
//! a `minimum`, a `required` field removed. A checker that ignored any of
//! those keywords would let the broken document through.

mod common;

use common::schema::{assert_invalid, assert_valid};
use serde_json::{json, Value};
use std::path::Path;

fn sample(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/contracts")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Each schema and the samples that hold to it.
const SAMPLES: &[(&str, &[&str])] = &[
    (
        "load-v1",
        &["load-v1.json", "load-v1-slow.json", "load-v1-mix.json"],
    ),
    (
        "trial-v1",
        &[
            "trial-v1.json",
            "trial-v1-budget.json",
            "trial-v1-restart.json",
            "trial-v1-soak.json",
            "trial-v1-blog.json",
            "trial-v1-fault.json",
        ],
    ),
    (
        "run-trial-v1",
        &[
            "run-trial-v1.json",
            "run-trial-v1-runtime.json",
            "run-trial-v1-budget.json",
            "run-trial-v1-slow.json",
        ],
    ),
    ("run-v1", &["run-v1.json"]),
    ("summary-v1", &["summary-v1.json"]),
    (
        "breakpoint-v1",
        &["breakpoint-v1-cli.json", "breakpoint-v1-plan.json"],
    ),
    (
        "report-v1",
        &[
            "report-v1.json",
            "report-v1-slow.json",
            "report-v1-blog.json",
        ],
    ),
    ("telemetry-v1", &["telemetry-v1.json"]),
    ("compare-v1", &["compare-v1.json"]),
    ("sweep-v1", &["sweep-v1.json"]),
    ("mirror-v1", &["mirror-v1.json"]),
    ("doctor-v1", &["doctor-v1.json"]),
    ("fit-v1", &["fit-v1.json"]),
    ("fits-v1", &["fits-v1.json"]),
    ("ab-v1", &["ab-v1.json"]),
    ("history-v1", &["history-v1.json"]),
    ("tune-v1", &["tune-v1.json"]),
    ("live-v1", &["live-v1.json", "live-v1-mirror.json"]),
];

#[test]
fn every_schema_holds_its_real_samples() {
    for (schema, files) in SAMPLES {
        for file in *files {
            assert_valid(schema, &sample(file), file);
        }
    }
    // A schema nobody checks is a promise nobody keeps.
    for entry in std::fs::read_dir(common::schema::dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        let name = name.trim_end_matches(".schema.json");
        assert!(
            SAMPLES.iter().any(|(s, _)| *s == name),
            "schema/{name}.schema.json has no sample in tests/contracts"
        );
    }
}

/// How a test breaks a sample.
enum Break {
    Set(Value),
    Remove,
}

/// `doc` with the value at JSON pointer `at` set or removed.
fn broken(mut doc: Value, at: &str, how: &Break) -> Value {
    let (parent, key) = at.rsplit_once('/').unwrap();
    let parent = doc
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent} in the sample"));
    let slot = match parent {
        Value::Object(m) => {
            assert!(m.contains_key(key), "no {at} in the sample");
            match how {
                Break::Set(v) => {
                    m.insert(key.into(), v.clone());
                }
                Break::Remove => {
                    m.remove(key);
                }
            }
            return doc;
        }
        Value::Array(a) => &mut a[key.parse::<usize>().unwrap()],
        _ => panic!("{parent} is neither an object nor an array"),
    };
    match how {
        Break::Set(v) => *slot = v.clone(),
        Break::Remove => panic!("removing from an array is not a break"),
    }
    doc
}

#[test]
fn each_schema_refuses_an_unknown_enum_value_a_value_under_its_minimum_and_a_missing_field() {
    use Break::{Remove, Set};
    // (schema, sample, where, how, the message at that place)
    let cases: Vec<(&str, &str, &str, Break, &str)> = vec![
        (
            "trial-v1",
            "trial-v1-restart.json",
            "/restart/outcome",
            Set(json!("partly")),
            "must be one of",
        ),
        (
            "trial-v1",
            "trial-v1-restart.json",
            "/restart/errors_during/5xx",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "trial-v1",
            "trial-v1-restart.json",
            "/restart/verdict",
            Remove,
            "missing properties 'verdict'",
        ),
        (
            "trial-v1",
            "trial-v1-fault.json",
            "/faults/worker_deaths/0/connections_reset",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "trial-v1",
            "trial-v1-fault.json",
            "/faults/worker_deaths/0/replaced_by",
            Remove,
            "missing properties 'replaced_by'",
        ),
        (
            "trial-v1",
            "trial-v1-blog.json",
            "/database/kind",
            Set(json!("mysql")),
            "must be one of",
        ),
        (
            "trial-v1",
            "trial-v1-blog.json",
            "/database/rows_written",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "trial-v1",
            "trial-v1-blog.json",
            "/database/rows_seeded",
            Remove,
            "missing properties 'rows_seeded'",
        ),
        (
            "trial-v1",
            "trial-v1-blog.json",
            "/database/seed_runtime",
            Remove,
            "missing properties 'seed_runtime'",
        ),
        (
            "trial-v1",
            "trial-v1-blog.json",
            "/server_metrics/telemetry/endpoints/index/requests",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "doctor-v1",
            "doctor-v1.json",
            "/findings/0/status",
            Set(json!("warning")),
            "must be one of",
        ),
        (
            "doctor-v1",
            "doctor-v1.json",
            "/findings/0/fix",
            Remove,
            "missing properties 'fix'",
        ),
        (
            "doctor-v1",
            "doctor-v1.json",
            "/findings/6/fix",
            Set(json!(null)),
            "want string, but got null",
        ),
        (
            "doctor-v1",
            "doctor-v1.json",
            "/window_s",
            Set(json!(0)),
            "must be > 0",
        ),
        (
            "mirror-v1",
            "mirror-v1.json",
            "/shadows/0/dropped",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "mirror-v1",
            "mirror-v1.json",
            "/shadows/0/paired",
            Remove,
            "missing properties 'paired'",
        ),
        (
            "mirror-v1",
            "mirror-v1.json",
            "/primary_b/url",
            Set(json!("https://x")),
            "does not match pattern",
        ),
        (
            "mirror-v1",
            "mirror-v1.json",
            "/schema",
            Set(json!("rackbench/mirror-v2")),
            "must be 'rackbench/mirror-v1'",
        ),
        (
            "load-v1",
            "load-v1.json",
            "/generator/io",
            Set(json!("kqueue")),
            "must be one of",
        ),
        (
            "load-v1",
            "load-v1.json",
            "/errors/reset",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "load-v1",
            "load-v1.json",
            "/latency_us/p99",
            Set(json!(-3)),
            "must be >=0",
        ),
        (
            // Null is "no figure", allowed only where there is none.
            "load-v1",
            "load-v1.json",
            "/latency_us/p99",
            Set(json!(null)),
            "want integer, but got null",
        ),
        (
            "load-v1",
            "load-v1.json",
            "/config/connections",
            Set(json!(0)),
            "must be >=1",
        ),
        (
            "load-v1",
            "load-v1-mix.json",
            "/endpoints/0/path",
            Set(json!("slow")),
            "does not match pattern",
        ),
        (
            "load-v1",
            "load-v1-mix.json",
            "/endpoints/1/errors/status",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "load-v1",
            "load-v1.json",
            "/warnings",
            Remove,
            "missing properties 'warnings'",
        ),
        (
            "load-v1",
            "load-v1.json",
            "/requests/unfinished",
            Remove,
            "missing properties 'unfinished'",
        ),
        (
            "load-v1",
            "load-v1.json",
            "/schema",
            Set(json!("rackbench/load-v2")),
            "must be 'rackbench/load-v1'",
        ),
        (
            // A share of all answers is at most all of them.
            "load-v1",
            "load-v1.json",
            "/fairness/top10_share",
            Set(json!(1.5)),
            "must be <=1",
        ),
        (
            "load-v1",
            "load-v1.json",
            "/fairness/connections_starved",
            Remove,
            "missing properties 'connections_starved'",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/topology/kind",
            Set(json!("haproxy")),
            "must be one of",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/server_metrics/samples/per_process/0/role",
            Set(json!("boss")),
            "must be one of",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/server_metrics/samples/per_worker/workers",
            Set(json!(0)),
            "must be >=1",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/server_metrics/samples/per_worker/uss_mean_bytes",
            Remove,
            "missing properties 'uss_mean_bytes'",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/verify/status",
            Set(json!(42)),
            "must be >=100",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/killed_after_grace",
            Remove,
            "missing properties 'killed_after_grace'",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/server_metrics/rss_peak_bytes",
            Set(json!(-1)),
            "must be >=0",
        ),
        // The load inside a trial is held to load-v1 through a $ref.
        (
            "trial-v1",
            "trial-v1.json",
            "/load/requests/ok",
            Set(json!(-5)),
            "must be >=0",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/started_at",
            Set(json!("yesterday")),
            "does not match pattern",
        ),
        // The record always says whether telemetry was on, and the
        // figures are held to telemetry-v1 through a $ref.
        (
            "trial-v1",
            "trial-v1.json",
            "/telemetry",
            Remove,
            "missing properties 'telemetry'",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/server_metrics/telemetry/gc_runs",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/server_metrics/accept_queue/max",
            Set(json!(-1)),
            "must be >=0",
        ),
        // New records always say whether the machine was disturbed, and
        // the shares are shares.
        (
            "trial-v1",
            "trial-v1.json",
            "/disturbance",
            Remove,
            "missing properties 'disturbance'",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/disturbance/foreign_cpu_share",
            Set(json!(1.5)),
            "must be <=1",
        ),
        (
            "trial-v1",
            "trial-v1.json",
            "/disturbance/disturbed",
            Remove,
            "missing properties 'disturbed'",
        ),
        (
            "run-trial-v1",
            "run-trial-v1.json",
            "/outcome",
            Set(json!("done")),
            "must be one of",
        ),
        (
            "run-trial-v1",
            "run-trial-v1.json",
            "/repeat",
            Set(json!(0)),
            "must be >=1",
        ),
        // An ok trial carries its record.
        (
            "run-trial-v1",
            "run-trial-v1.json",
            "/trial",
            Remove,
            "missing properties 'trial'",
        ),
        (
            "run-trial-v1",
            "run-trial-v1.json",
            "/planned/behind",
            Set(json!("apache")),
            "must be one of",
        ),
        (
            "run-trial-v1",
            "run-trial-v1-runtime.json",
            "/planned/switches/malloc_arena_max",
            Set(json!(0)),
            "must be >=1",
        ),
        (
            "run-trial-v1",
            "run-trial-v1-runtime.json",
            "/planned/switches/yjit",
            Set(json!("on")),
            "boolean",
        ),
        (
            "run-trial-v1",
            "run-trial-v1.json",
            "/trial/load/generator/io",
            Set(json!("select")),
            "must be one of",
        ),
        (
            "run-v1",
            "run-v1.json",
            "/command",
            Remove,
            "missing properties 'command'",
        ),
        (
            "run-v1",
            "run-v1.json",
            "/repeats",
            Set(json!(0)),
            "must be >=1",
        ),
        (
            "run-v1",
            "run-v1.json",
            "/environment/cores",
            Set(json!(0)),
            "must be >=1",
        ),
        (
            "summary-v1",
            "summary-v1.json",
            "/groups/0/throughput_rps/n",
            Set(json!(0)),
            "must be >=1",
        ),
        (
            "summary-v1",
            "summary-v1.json",
            "/groups/0/errors",
            Remove,
            "missing properties 'errors'",
        ),
        (
            "summary-v1",
            "summary-v1.json",
            "/groups/0/behind",
            Set(json!("apache")),
            "must be one of",
        ),
        (
            "breakpoint-v1",
            "breakpoint-v1-cli.json",
            "/mode",
            Set(json!("latency")),
            "must be one of",
        ),
        (
            "breakpoint-v1",
            "breakpoint-v1-cli.json",
            "/steps/0/errors",
            Set(json!(-2)),
            "must be >=0",
        ),
        (
            "breakpoint-v1",
            "breakpoint-v1-cli.json",
            "/search",
            Remove,
            "missing properties 'search'",
        ),
        (
            "breakpoint-v1",
            "breakpoint-v1-plan.json",
            "/search/growth",
            Set(json!(1)),
            "must be > 1",
        ),
        (
            "breakpoint-v1",
            "breakpoint-v1-plan.json",
            "/result/steps/0/clean",
            Set(json!("yes")),
            "want boolean",
        ),
        (
            "report-v1",
            "report-v1.json",
            "/trials/0/status",
            Set(json!("skipped")),
            "must be one of",
        ),
        (
            "report-v1",
            "report-v1.json",
            "/groups/0/missing",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "report-v1",
            "report-v1.json",
            "/missing_breakpoints",
            Remove,
            "missing properties 'missing_breakpoints'",
        ),
        // A group's summary is held to summary-v1's group through a $ref.
        (
            "report-v1",
            "report-v1.json",
            "/groups/0/summary/runs",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "telemetry-v1",
            "telemetry-v1.json",
            "/gc_runs_per_1k_requests",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "telemetry-v1",
            "telemetry-v1.json",
            "/per_worker/0/pid",
            Remove,
            "missing properties 'pid'",
        ),
        (
            "sweep-v1",
            "sweep-v1.json",
            "/knee",
            Remove,
            "missing properties 'knee'",
        ),
        (
            "sweep-v1",
            "sweep-v1.json",
            "/usl/kappa",
            Set(json!(-0.1)),
            "must be >=0",
        ),
        (
            "sweep-v1",
            "sweep-v1.json",
            "/ordered",
            Remove,
            "missing properties 'ordered'",
        ),
        (
            "compare-v1",
            "compare-v1.json",
            "/rows/4/repeats_for_5pct",
            Set(json!(0)),
            "must be >=1",
        ),
        (
            "compare-v1",
            "compare-v1.json",
            "/rows/0/primary",
            Remove,
            "missing properties 'primary'",
        ),
        // Each value's rows are compare-v1 rows through a $ref.
        (
            "sweep-v1",
            "sweep-v1.json",
            "/values/1/vs_control/0/metric",
            Set(json!("speed")),
            "must be one of",
        ),
        // Each fit is a fit-v1 document through a $ref.
        (
            "fits-v1",
            "fits-v1.json",
            "/fits/1/candidates/0/verdict",
            Set(json!("fine")),
            "must be one of",
        ),
        (
            "fits-v1",
            "fits-v1.json",
            "/plan",
            Remove,
            "missing properties 'plan'",
        ),
        (
            "ab-v1",
            "ab-v1.json",
            "/verdict",
            Set(json!("better")),
            "must be one of",
        ),
        (
            "live-v1",
            "live-v1.json",
            "/phase",
            Set(json!("paused")),
            "must be one of",
        ),
        (
            "live-v1",
            "live-v1.json",
            "/seconds/0/ok",
            Set(json!(-1)),
            "must be >=0",
        ),
        (
            "live-v1",
            "live-v1-mirror.json",
            "/shadows/0/requests",
            Remove,
            "missing properties 'requests'",
        ),
        (
            "history-v1",
            "history-v1.json",
            "/groups/0/points/5/verdict_vs_baseline",
            Set(json!("worse")),
            "must be one of",
        ),
        (
            "history-v1",
            "history-v1.json",
            "/groups/0/points/0/disturbed",
            Remove,
            "missing properties 'disturbed'",
        ),
        (
            "ab-v1",
            "ab-v1.json",
            "/pairs/0/first",
            Set(json!("C")),
            "must be one of",
        ),
        (
            "tune-v1",
            "tune-v1.json",
            "/proposals/0/verdict",
            Set(json!("better")),
            "must be one of",
        ),
        (
            "tune-v1",
            "tune-v1.json",
            "/recommendation/env",
            Remove,
            "missing properties 'env'",
        ),
        // The control's GC detail is telemetry-v1's through a $ref.
        (
            "tune-v1",
            "tune-v1.json",
            "/control/gc/triggers",
            Remove,
            "missing properties 'triggers'",
        ),
    ];
    for (schema, file, at, how, says) in cases {
        let doc = broken(sample(file), at, &how);
        let place = match how {
            // A missing field is reported at the object that lacks it.
            Remove => at.rsplit_once('/').unwrap().0,
            Set(_) => at,
        };
        assert_invalid(schema, &doc, place, says);
    }
}

#[test]
fn a_break_point_document_is_one_shape_or_the_other() {
    // The command's shape without its `steps`, the plan's without its
    // `result`: each is neither shape.
    for (file, field) in [
        ("breakpoint-v1-cli.json", "/steps"),
        ("breakpoint-v1-plan.json", "/result"),
    ] {
        let doc = broken(sample(file), field, &Break::Remove);
        assert_invalid("breakpoint-v1", &doc, "", "oneOf");
    }
}

/// Issue 25: a headline with no latency (count 0) has null figures; a 0
/// there, which a script reads as 0 ms, is refused.
#[test]
fn a_headline_with_no_latency_must_say_null_not_zero() {
    let doc = broken(
        sample("load-v1.json"),
        "/latency_us/count",
        &Break::Set(json!(0)),
    );
    assert_invalid(
        "load-v1",
        &doc,
        "/latency_us/p99",
        "want null, but got number",
    );
    let mut doc = doc;
    for f in ["min", "mean", "stdev", "p50", "p90", "p99", "p999", "max"] {
        doc["latency_us"][f] = Value::Null;
    }
    assert_valid("load-v1", &doc, "a headline with no latency");
}

/// Issue 30: compare-v1 rows per endpoint of a mix are named
/// `endpoint:NAME:METRIC` for the three metrics compare judges per
/// endpoint; another metric after an endpoint's name is refused, and a
/// load-v1 document's `endpoints` keeps the contract's fields.
#[test]
fn endpoint_rows_and_endpoints_keep_their_names() {
    let mut doc = sample("compare-v1.json");
    doc["rows"][0]["metric"] = json!("endpoint:show-2:p99");
    assert_valid("compare-v1", &doc, "a per-endpoint row");
    doc["rows"][0]["metric"] = json!("endpoint:show:p90");
    assert_invalid("compare-v1", &doc, "/rows/0/metric", "");
    let mut load = sample("load-v1.json");
    let mut e = json!({"name": "show", "method": "GET", "path": "/posts/{random:1..9}",
        "weight": 1.0, "requests": 10, "ok": 10, "throughput_rps": 5.0,
        "latency_us": load["latency_us"].clone(), "errors": load["errors"].clone()});
    load["endpoints"] = json!([e.clone()]);
    assert_valid("load-v1", &load, "a load with a mix");
    e.as_object_mut().unwrap().remove("throughput_rps");
    load["endpoints"] = json!([e]);
    assert_invalid("load-v1", &load, "/endpoints/0", "throughput_rps");
}
