//! `rackbench sweep`: one variable at a time. From flags (`--server puma
//! --vary workers=1,2,4,8 --app fib`) or a plan file (its `[sweep]`, or
//! `--vary` in its place) it writes a plan with a `[sweep]` section, runs
//! it like `rackbench run` (interleaved, shuffled rounds), then prints the
//! sweep's analysis (stats::sweep). `--analyse DIR` rebuilds the analysis
//! of a finished run from disk alone.

use super::usage;
use crate::app;
use crate::app::run::RunRequest;
use crate::app::sink::Terminal;
use crate::plan::sweep::SweepSection;
use crate::report::sweep as show;
use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toml::{Table, Value};

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A plan file; its [sweep] says what to vary unless --vary is given.
    pub plan: Option<PathBuf>,
    /// What to vary and its values, the first being the control:
    /// workers=1,2,4,8, threads=..., connections=..., nginx_workers=...,
    /// app=hello,fib, runtime=system,debian-13, yjit=false,true,
    /// allocator=glibc,jemalloc, malloc_arena_max=1,2,4, slow_clients=0,4,16,
    /// env.NAME=..., or
    /// a server setting (NAME=...).
    #[arg(long, value_name = "NAME=V1,V2,...")]
    pub vary: Option<String>,
    /// Rebuild and print the analysis of a finished sweep's results directory.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["plan", "server", "command"])]
    pub analyse: Option<PathBuf>,
    /// The server (see `rackbench servers`), without a plan file.
    #[arg(long)]
    pub server: Option<String>,
    /// Your own server's command template (as in servers.toml), e.g.
    /// "myserver --port {{port}} --workers {{workers}}".
    #[arg(long, conflicts_with = "server")]
    pub command: Option<String>,
    /// The app, without a plan file.
    #[arg(long, default_value = "hello")]
    pub app: String,
    /// Fixed workers (when not swept).
    #[arg(long)]
    pub workers: Option<u32>,
    /// Fixed threads (when not swept).
    #[arg(long)]
    pub threads: Option<u32>,
    /// A fixed server setting KEY=VALUE (repeatable).
    #[arg(long = "set", value_parser = super::parse::key_value)]
    pub settings: Vec<(String, String)>,
    /// A fixed environment variable KEY=VALUE for the server (repeatable).
    #[arg(long = "env", value_parser = super::parse::key_value)]
    pub env: Vec<(String, String)>,
    /// Put nginx in front (implied by --vary nginx_workers=...).
    #[arg(long, value_parser = ["nginx"])]
    pub behind: Option<String>,
    /// Closed-loop connections (when not swept).
    #[arg(long, default_value_t = 10)]
    pub connections: usize,
    /// Counted load per trial.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// Warm-up per trial.
    #[arg(long, default_value = "2s")]
    pub warmup: String,
    /// Repeats of each value (five or more let a rank test tell values apart).
    #[arg(long, default_value_t = 5)]
    pub repeats: u32,
    /// Results directory [default: results/sweep-VARY-DATE-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of the shuffle within each round.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also read these server definitions.
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    /// Do not pin the servers and the generator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Telemetry in every trial (app time, queue time behind nginx, GC), as
    /// a plan's `telemetry = true`.
    #[arg(long)]
    pub telemetry: bool,
    /// Print the trials the sweep expands to and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// --runtime, --yjit, --allocator, --malloc-arena-max: fixed for every
    /// value of the sweep (in place of a plan file's lists).
    #[command(flatten)]
    pub on: super::flags::RuntimeFlags,
    /// --memory, --cpus: one budget for every value of the sweep (in place
    /// of a plan file's `[budget]`).
    #[command(flatten)]
    pub budget: super::flags::BudgetFlags,
    /// --database: the blog app's database for every value (in place of
    /// a plan file's `database`).
    #[command(flatten)]
    pub database: super::flags::DatabaseFlags,
    /// --slow-clients, --slow-mode, --slow-bytes, --slow-every: the same
    /// slow clients beside every value (with `--vary slow_clients=0,4,16`
    /// the pace of each count).
    #[command(flatten)]
    pub slow: super::flags::SlowFlags,
    /// A request mix (docs/MIX_FORMAT.md) for every value of the sweep.
    #[arg(long, value_name = "FILE")]
    pub mix: Option<PathBuf>,
    /// Print the analysis as JSON (rackbench/sweep-v1) on stdout; the
    /// run's own lines go to stderr.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the analysis as Markdown.
    #[arg(long)]
    pub markdown: bool,
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
fn plan_from_flags(args: &SweepArgs, sweep: &SweepSection) -> Result<Table> {
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
    if args.behind.is_some() || sweep.vary == "nginx_workers" {
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
    if sweep.vary != "connections" {
        load.insert(
            "connections".into(),
            Value::Array(vec![Value::Integer(args.connections as i64)]),
        );
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

fn has_runtime_flags(on: &super::flags::RuntimeFlags) -> bool {
    on.runtime.is_some() || !on.switches().is_empty()
}

/// A runtime flag on the swept key is refused (the flags themselves
/// are put in place of the plan's lists by `Plan::apply`).
fn refuse_fixing_the_swept(on: &super::flags::RuntimeFlags, vary: &str) -> Result<()> {
    let sw = on.switches();
    let given = [
        ("runtime", on.runtime.is_some()),
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
fn plan_text(args: &SweepArgs) -> Result<(String, String)> {
    let flag = args
        .vary
        .as_deref()
        .map(SweepSection::from_flag)
        .transpose()
        .map_err(usage)?;
    let mut table = match &args.plan {
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
                if has_runtime_flags(&args.on) {
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
    refuse_fixing_the_swept(&args.on, &s.vary)?;
    let mut section = Table::new();
    section.insert("vary".into(), Value::String(s.vary.clone()));
    section.insert("values".into(), strings(&s.values));
    table.insert("sweep".into(), Value::Table(section));
    let mut text = String::from("# written by rackbench sweep\n");
    text.push_str(&toml::to_string(&table).context("cannot write the sweep's plan")?);
    Ok((text, "sweep plan (from flags)".into()))
}

fn print(dir: &Path, args: &SweepArgs) -> Result<()> {
    crate::store::ResultsDir::open(dir).map_err(|e| usage(e.to_string()))?;
    let s = show::load(dir).map_err(usage)?.ok_or_else(|| {
        usage(format!(
            "{}/plan.toml has no [sweep] section: this is not a sweep's results directory",
            dir.display()
        ))
    })?;
    let json = serde_json::to_string_pretty(&s)?;
    std::fs::write(dir.join("sweep.json"), format!("{json}\n"))
        .with_context(|| format!("cannot write {}/sweep.json", dir.display()))?;
    if args.json {
        println!("{json}");
    } else if args.markdown {
        print!("{}", show::markdown(&s));
    } else {
        print!("\n{}", show::terminal(&s));
    }
    Ok(())
}

/// The sweep's plan (from flags, or a file), run by `app::run` with the
/// flags in place of its keys, then its analysis. With --json the run's
/// result lines go to stderr (the terminal sink's choice), so stdout
/// holds the document alone.
pub fn run(args: SweepArgs) -> Result<ExitCode> {
    if let Some(dir) = &args.analyse {
        print(dir, &args)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (text, origin) = plan_text(&args)?;
    let plan = crate::plan::Plan::parse(&text, &origin).map_err(|e| usage(e.to_string()))?;
    let registry = super::servers::registry(&args.servers_file)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| app::run::default_out(&plan.name, &crate::host::utc_now()));
    // A plan's own mix, written relative to the plan file, is handed over
    // as --mix: the sweep's plan is not read from beside it.
    let mix = args.mix.clone().or_else(|| {
        let dir = args.plan.as_ref()?.parent()?;
        plan.load.mix.as_ref().map(|m| dir.join(m))
    });
    let mut overrides =
        super::flags::plan_overrides(&args.on, &args.budget, &args.database, &args.slow)?;
    overrides.mix = mix;
    let request = RunRequest {
        // The plan kept in the results directory, as the replay command's.
        plan_path: (!args.dry_run).then(|| out.join("sweep-plan.toml")),
        out: Some(out.clone()),
        resume: false,
        seed: args.seed,
        registry,
        servers_files: args.servers_file.clone(),
        pin: !args.no_pin,
        dry_run: args.dry_run,
        aa: None,
        telemetry: args.telemetry,
        overrides,
    };
    let source = app::run::PlanSource {
        plan,
        text,
        file: origin,
    };
    let prepared = app::run::prepare(source, request)?;
    if !args.dry_run {
        app::run::keep_plan(&prepared.out, "sweep-plan.toml", &prepared.source.text)?;
    }
    let sink = Terminal {
        result_on_stderr: args.json,
    };
    let code = app::run::execute(prepared, Arc::new(sink))?;
    if args.dry_run || !crate::store::ResultsDir::new(&out).holds_run() {
        return Ok(code);
    }
    print(&out, &args)?;
    Ok(code)
}
