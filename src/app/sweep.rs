//! A sweep (`rackbench sweep`): one variable at a time. From flags
//! (`--server puma --vary workers=1,2,4,8 --app fib`) or a plan file (its
//! `[sweep]`, or `--vary` in its place) it makes a plan with a `[sweep]`
//! section, runs it with `app::run` (interleaved, shuffled rounds), and
//! keeps the analysis (sweep.json) beside the results.

use super::run::{self as run_case, PlanSource, RunRequest};
use super::sink::Sink;
use super::usage::usage;
use crate::plan::sweep::SweepSection;
use crate::plan::Overrides;
use crate::report::sweep as show;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toml::{Table, Value};

/// What a sweep's plan is made of: a plan file, or the flags alone.
#[derive(Clone)]
pub struct SweepPlan {
    pub file: Option<PathBuf>,
    /// `NAME=V1,V2,...`, in place of a file's `[sweep]`.
    pub vary: Option<String>,
    pub server: Option<String>,
    pub command: Option<String>,
    pub app: String,
    /// Text a config.ru app must answer with (`app_expect_body`).
    pub app_expect_body: Option<String>,
    /// Open loop at this rate (`[load] rates`) over `connections`.
    pub rate: Option<f64>,
    pub workers: Option<u32>,
    pub threads: Option<u32>,
    pub settings: Vec<(String, String)>,
    pub env: Vec<(String, String)>,
    pub behind_nginx: bool,
    pub connections: usize,
    pub duration: String,
    pub warmup: String,
    pub repeats: u32,
}

/// The sweep's plan, read and checked; `o` is refused where it fixes
/// what the sweep varies.
pub fn plan(args: &SweepPlan, o: &Overrides) -> Result<PlanSource> {
    let (text, file) = plan_text(args, o)?;
    let plan = crate::plan::Plan::parse(&text, &file).map_err(|e| usage(e.to_string()))?;
    Ok(PlanSource { plan, text, file })
}

/// Run the sweep's plan into `req.out` (or results/sweep-VARY-DATE-TIME)
/// and keep its analysis; returns the exit code and, when a run finished
/// there, its directory.
pub fn run(
    source: PlanSource,
    args: &SweepPlan,
    mut req: RunRequest,
    sink: Arc<dyn Sink>,
) -> Result<(ExitCode, Option<PathBuf>)> {
    let out = req
        .out
        .clone()
        .unwrap_or_else(|| run_case::default_out(&source.plan.name, &crate::host::utc_now()));
    // A plan's own mix, written relative to the plan file, is handed over
    // as --mix: the sweep's plan is not read from beside it.
    if req.overrides.mix.is_none() {
        req.overrides.mix = args.file.as_ref().and_then(|p| {
            let dir = p.parent()?;
            source.plan.load.mix.as_ref().map(|m| dir.join(m))
        });
    }
    let dry_run = req.dry_run;
    // The plan kept in the results directory, as the replay command's.
    req.plan_path = (!dry_run).then(|| out.join("sweep-plan.toml"));
    req.out = Some(out.clone());
    let prepared = run_case::prepare(source, req)?;
    if !dry_run {
        run_case::keep_plan(&prepared.out, "sweep-plan.toml", &prepared.source.text)?;
    }
    let code = run_case::execute(prepared, sink)?;
    if dry_run || !crate::store::ResultsDir::new(&out).holds_run() {
        return Ok((code, None));
    }
    Ok((code, Some(out)))
}

/// A finished sweep's analysis, rebuilt from its results directory and
/// kept there as sweep.json; with the document's text.
pub fn analysis(dir: &Path) -> Result<(crate::stats::sweep::Sweep, String)> {
    let study = crate::store::study::Study::open(dir).map_err(|e| usage(e.to_string()))?;
    let s = show::load(&study).map_err(usage)?.ok_or_else(|| {
        usage(format!(
            "{}/plan.toml has no [sweep] section: this is not a sweep's results directory",
            dir.display()
        ))
    })?;
    let json = serde_json::to_string_pretty(&s)?;
    std::fs::write(study.dir().sweep_json(), format!("{json}\n"))
        .with_context(|| format!("cannot write {}/sweep.json", dir.display()))?;
    Ok((s, json))
}

fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().cloned().map(Value::String).collect())
}

fn map(kv: &[(String, String)]) -> Value {
    Value::Table(
        kv.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// The plan a flag-only sweep runs.
fn plan_from_flags(args: &SweepPlan, sweep: &SweepSection) -> Result<Table> {
    let name = match (&args.server, &args.command) {
        (Some(s), None) => s.clone(),
        (None, Some(_)) => "custom".to_string(),
        _ => {
            return Err(usage(
                "name the server: --server puma (see `rackbench servers`), --command TEMPLATE, or give a plan file".into(),
            ))
        }
    };
    let mut plan = Table::new();
    plan.insert(
        "name".into(),
        Value::String(format!("sweep-{}", crate::plan::slug(&sweep.vary))),
    );
    plan.insert("repeats".into(), Value::Integer(args.repeats.into()));
    plan.insert("apps".into(), strings(std::slice::from_ref(&args.app)));
    if let Some(body) = &args.app_expect_body {
        plan.insert("app_expect_body".into(), Value::String(body.clone()));
    }
    if args.behind_nginx || sweep.vary == "nginx_workers" {
        plan.insert("behind".into(), strings(&["nginx".to_string()]));
    }
    let mut server = Table::new();
    server.insert("name".into(), Value::String(name.clone()));
    if let Some(w) = args.workers {
        server.insert(
            "workers".into(),
            Value::Array(vec![Value::Integer(w.into())]),
        );
    }
    if let Some(t) = args.threads {
        server.insert(
            "threads".into(),
            Value::Array(vec![Value::Integer(t.into())]),
        );
    }
    if !args.settings.is_empty() {
        server.insert("settings".into(), map(&args.settings));
    }
    if !args.env.is_empty() {
        server.insert("env".into(), map(&args.env));
    }
    plan.insert("server".into(), Value::Array(vec![Value::Table(server)]));
    let mut load = Table::new();
    match args.rate {
        Some(_) if sweep.vary == "connections" => {
            return Err(usage(
                "--rate is an open loop at one rate, and --vary connections=... varies the \
                 closed loop's connections: drop one of the two"
                    .into(),
            ))
        }
        Some(r) if !(r > 0.0 && r.is_finite()) => {
            return Err(usage(format!(
                "--rate {r}: give requests per second above 0, e.g. --rate 200"
            )))
        }
        Some(r) => {
            load.insert("rates".into(), Value::Array(vec![Value::Float(r)]));
            load.insert(
                "rate_connections".into(),
                Value::Integer(args.connections as i64),
            );
        }
        None if sweep.vary != "connections" => {
            load.insert(
                "connections".into(),
                Value::Array(vec![Value::Integer(args.connections as i64)]),
            );
        }
        None => {}
    }
    load.insert("duration".into(), Value::String(args.duration.clone()));
    load.insert("warmup".into(), Value::String(args.warmup.clone()));
    plan.insert("load".into(), Value::Table(load));
    if let Some(cmd) = &args.command {
        let mut def = Table::new();
        def.insert("command".into(), Value::String(cmd.clone()));
        def.insert("processes".into(), Value::Boolean(true));
        def.insert("threads".into(), Value::Boolean(true));
        let mut settings: Vec<(String, String)> = args.settings.clone();
        if !sweep.vary.starts_with("env.") && !PLAN_VARIABLES.contains(&sweep.vary.as_str()) {
            settings.push((sweep.vary.clone(), sweep.values[0].clone()));
        }
        if !settings.is_empty() {
            def.insert("settings".into(), map(&settings));
        }
        let mut defs = Table::new();
        defs.insert(name, Value::Table(def));
        plan.insert("server_defs".into(), Value::Table(defs));
    }
    Ok(plan)
}

/// The variables a plan says in its own keys, not as a server setting.
const PLAN_VARIABLES: &[&str] = &[
    "workers",
    "threads",
    "connections",
    "nginx_workers",
    "app",
    "runtime",
    "yjit",
    "allocator",
    "malloc_arena_max",
];

fn has_runtime_flags(o: &Overrides) -> bool {
    o.runtime.is_some() || !o.switches.is_empty()
}

/// A runtime flag on the swept key is refused (the flags themselves
/// are put in place of the plan's lists by `Plan::apply`).
fn refuse_fixing_the_swept(o: &Overrides, vary: &str) -> Result<()> {
    let sw = o.switches;
    let given = [
        ("runtime", o.runtime.is_some()),
        ("yjit", sw.yjit.is_some()),
        ("allocator", sw.allocator.is_some()),
        ("malloc_arena_max", sw.malloc_arena_max.is_some()),
    ];
    match given.iter().find(|(name, given)| *given && *name == vary) {
        Some((name, _)) => Err(usage(format!(
            "--{} fixes what --vary {vary} varies: drop one of the two",
            name.replace('_', "-")
        ))),
        None => Ok(()),
    }
}

/// `--vary` over a plan file replaces the plan's own value of that field
/// (its [sweep] included), so one plan serves several sweeps.
fn drop_swept_field(t: &mut Table, vary: &str) {
    match vary {
        "runtime" | "yjit" | "allocator" | "malloc_arena_max" => {
            let key = if vary == "runtime" { "runtimes" } else { vary };
            t.remove(key);
            if let Some(Value::Array(servers)) = t.get_mut("server") {
                for s in servers.iter_mut().filter_map(Value::as_table_mut) {
                    s.remove(key);
                }
            }
        }
        "nginx_workers" => {
            t.remove("nginx_workers");
        }
        "app" => {
            t.remove("apps");
        }
        "connections" => {
            if let Some(Value::Table(load)) = t.get_mut("load") {
                load.remove("connections");
                load.remove("rates");
            }
        }
        _ => {
            let (key, inner) = match vary.strip_prefix("env.") {
                Some(name) => ("env", Some(name)),
                None if vary == "workers" || vary == "threads" => (vary, None),
                None => ("settings", Some(vary)),
            };
            if let Some(Value::Array(servers)) = t.get_mut("server") {
                for s in servers.iter_mut().filter_map(Value::as_table_mut) {
                    match inner {
                        None => {
                            s.remove(key);
                        }
                        Some(name) => {
                            if let Some(Value::Table(m)) = s.get_mut(key) {
                                m.remove(name);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The plan text to run and where it came from.
fn plan_text(args: &SweepPlan, o: &Overrides) -> Result<(String, String)> {
    let flag = args
        .vary
        .as_deref()
        .map(SweepSection::from_flag)
        .transpose()
        .map_err(usage)?;
    let mut table = match &args.file {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| usage(format!("cannot read plan {}: {e}", p.display())))?;
            let mut t: Table = text
                .parse()
                .map_err(|e| usage(format!("{}: {e}", p.display())))?;
            if flag.is_none() {
                if !t.contains_key("sweep") {
                    return Err(usage(format!(
                        "{} has no [sweep] section: add one (vary = \"workers\", values = [1, 2, 4]) or give --vary workers=1,2,4",
                        p.display()
                    )));
                }
                if has_runtime_flags(o) {
                    return Err(usage(format!(
                        "--runtime, --yjit, --allocator and --malloc-arena-max apply to a sweep from flags or with --vary; for {}'s own [sweep] set `runtimes`, `yjit`, `allocator` in the plan",
                        p.display()
                    )));
                }
                // The file as written, so its comments and lines stay.
                return Ok((text, p.display().to_string()));
            }
            t.remove("sweep");
            drop_swept_field(&mut t, &flag.as_ref().expect("checked").vary);
            t
        }
        None => {
            let Some(s) = &flag else {
                return Err(usage(
                    "say what to vary: --vary workers=1,2,4,8 (or give a plan file with a [sweep] section)".into(),
                ));
            };
            plan_from_flags(args, s)?
        }
    };
    let s = flag.expect("checked above");
    refuse_fixing_the_swept(o, &s.vary)?;
    let mut section = Table::new();
    section.insert("vary".into(), Value::String(s.vary.clone()));
    section.insert("values".into(), strings(&s.values));
    table.insert("sweep".into(), Value::Table(section));
    let mut text = String::from("# written by rackbench sweep\n");
    text.push_str(&toml::to_string(&table).context("cannot write the sweep's plan")?);
    Ok((text, "sweep plan (from flags)".into()))
}
