//! `rackbench run [PLAN]`: a whole study from one command.

use super::load::stop_on_signals;
use super::usage;
use crate::lab::trial::TrialRecord;
use crate::load::caveats::Caveats;
use crate::plan::runner::{estimate, run_plan, Progress, RunOptions};
use crate::plan::{Plan, DEFAULT_PLAN};
use crate::report::render_summary;
use crate::store::records::Outcome;
use crate::store::ResultsDir;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Plan file (TOML); without one, the built-in default plan.
    pub plan: Option<PathBuf>,
    /// Results directory [default: results/PLAN-DATE-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue an interrupted run in --out without redoing finished trials.
    #[arg(long, requires = "out")]
    pub resume: bool,
    /// Resume even though the plan or a servers file changed since the run began.
    #[arg(long, requires = "resume")]
    pub force_resume: bool,
    /// Seed of the shuffle within each round of repeats: replays a run's
    /// order [default: a fresh seed, printed and kept in manifest.json].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also read these server definitions.
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    /// Do not pin the servers and the generator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Print the trials the plan expands to and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// A/A run: the plan's control twice, as two labelled variants, then
    /// compared; shows the smallest difference this machine can resolve.
    #[arg(long)]
    pub aa: bool,
    /// With --aa: the variant to use as control [default: the plan's first].
    #[arg(long, requires = "aa", value_name = "VARIANT")]
    pub control: Option<String>,
    /// Telemetry in every trial, as the plan's `telemetry = true`: app
    /// time, queue time behind nginx, GC (docs/TELEMETRY.md).
    #[arg(long)]
    pub telemetry: bool,
    /// --runtime, --yjit, --allocator, --malloc-arena-max: each in place
    /// of the plan's list of that key.
    #[command(flatten)]
    pub on: super::trial::RuntimeFlags,
    /// --memory, --cpus: in place of the plan's `[budget]`.
    #[command(flatten)]
    pub budget: super::trial::BudgetFlags,
    /// --database: in place of the plan's `database`.
    #[command(flatten)]
    pub database: super::trial::DatabaseFlags,
    /// --slow-clients, --slow-mode, --slow-bytes, --slow-every: in place
    /// of the plan's `[load]` slow keys.
    #[command(flatten)]
    pub slow: super::load::SlowFlags,
    /// A request mix (docs/MIX_FORMAT.md) for every trial, in place of the
    /// plan's `[load] mix`.
    #[arg(long, value_name = "FILE")]
    pub mix: Option<PathBuf>,
    /// --restart, --restart-at: in place of the plan's `[restart]`.
    #[command(flatten)]
    pub restart: super::trial::RestartFlags,
    /// --soak: every trial a soak this long, in place of the plan's `soak`.
    #[command(flatten)]
    pub soak: super::trial::SoakFlags,
}

/// In steps: read and expand the plan (an A/A run narrows it to the
/// control twice), settle the results directory and the seed, say what
/// will run (or list it and stop, with --dry-run), run it, then print the
/// summary and report and choose the exit code.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let (mut plan, text, file) = read_plan(args.plan.as_ref())?;
    if plan.fit.is_some() {
        return Err(usage(format!(
            "{file}: this plan is a fit: run `rackbench fit {file}`"
        )));
    }
    let registry = super::servers::registry(&args.servers_file)?;
    override_plan(&args, &mut plan, &file)?;
    let mut expanded = plan
        .expand(&text, &file, &registry)
        .map_err(|e| usage(e.to_string()))?;
    let runtimes = plan
        .runtime_registry(&text, &file)
        .map_err(|e| usage(e.to_string()))?;
    if let Some(name) = args.on.runtime.as_deref().filter(|n| !runtimes.knows(n)) {
        return Err(usage(format!(
            "--runtime {name}: {}",
            crate::runtime::RuntimeError::Unknown {
                name: name.into(),
                known: runtimes.known()
            }
        )));
    }
    plan.check_runtime_names(&text, &file, &expanded, &runtimes)
        .map_err(|e| usage(e.to_string()))?;
    let aa = if args.aa {
        Some(aa_variants(&mut plan, &mut expanded, args.control.as_deref()).map_err(usage)?)
    } else {
        None
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&plan.name, &crate::host::utc_now()));
    if args.resume {
        resumable(&out).map_err(usage)?;
    }
    if !args.resume && ResultsDir::new(&out).holds_run() {
        return Err(usage(format!(
            "{} already holds a run: add --resume to continue it, or choose another --out",
            out.display()
        )));
    }
    let results = ResultsDir::new(&out);
    let seed = if args.resume {
        check_resume(&results, &text, &args.servers_file, args.force_resume)?;
        resumed_seed(&results, args.seed)?
    } else {
        args.seed
    };
    let seed = seed.unwrap_or_else(crate::plan::runner::fresh_seed);
    announce(&plan, &expanded);
    if args.dry_run {
        // The order the run would take with this seed.
        let mut order: Vec<&crate::plan::PlannedTrial> = expanded.trials.iter().collect();
        crate::plan::runner::shuffle_rounds(&mut order, |t| t.repeat, seed);
        eprintln!("seed {seed}");
        for t in order {
            println!("{}", t.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if expanded.trials.is_empty() {
        return Err(usage("the plan has no trial to run here: none of its servers is installed (see `rackbench servers`)".into()));
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let resolved = resolve_runtimes(&plan, &text, &file, &mut expanded, &runtimes)?;
    let (server_cpus, load_cpus) = if args.no_pin {
        (Vec::new(), Vec::new())
    } else {
        super::trial::default_pinning()
    };
    let command = replay_command(&args, &out, seed);
    eprintln!("seed {seed} (the order of trials within each round; --seed {seed} replays it)");
    copy_servers_files(&results, &args.servers_file)?;
    let opts = RunOptions {
        out: out.clone(),
        resume: args.resume,
        interrupt,
        server_cpus,
        load_cpus,
        progress: Some(print_progress),
        command: command.clone(),
        seed,
        telemetry: args.telemetry,
        runtimes: resolved,
    };
    let result = run_plan(&plan, &text, &expanded, &opts)?;
    if !result.summary.is_empty() {
        print_summary(&out, &result.summary);
    }
    println!("results: {}", out.display());
    if let Some((first, second)) = &aa {
        aa_compare(&out, first, second, plan.primary_metric.as_deref());
    }
    // The report is rebuilt from disk; a failure here loses no result.
    match crate::report::write_all(&out, None) {
        Ok(w) => println!("report:  {}", w.html.display()),
        Err(e) => eprintln!(
            "warning: could not write the report ({e}); try `rackbench report {}`",
            out.display()
        ),
    }
    Ok(exit_code(&result, &out, &command))
}

/// `--mix FILE` in place of a plan's `[load] mix`: checked here, and
/// made absolute, since the plan reads a relative mix beside the plan
/// file while the flag is relative to the working directory. (`run`'s
/// and `fit`'s.)
pub(super) fn mix_over_plan(m: &std::path::Path) -> Result<String> {
    let m = std::path::absolute(m).map_err(|e| usage(format!("--mix {}: {e}", m.display())))?;
    // Its mistakes at the mix file's own line, not at a plan line that
    // does not hold it.
    crate::load::mix::Mix::load(&m).map_err(|e| usage(e.to_string()))?;
    Ok(m.display().to_string())
}

/// The flags that stand in for the plan's keys: --runtime, --yjit,
/// --allocator, --malloc-arena-max, --memory, --cpus and --soak (refused
/// beside a [breakpoint]: a soak is one fixed rate).
fn override_plan(args: &RunArgs, plan: &mut Plan, file: &str) -> Result<()> {
    crate::plan::runtimes::override_lists(
        plan,
        args.on.runtime.as_deref(),
        args.on.yjit.then_some(true),
        args.on.allocator,
        args.on.malloc_arena_max,
    );
    args.budget.override_plan(&mut plan.budget);
    args.database.override_plan(&mut plan.database);
    args.slow.override_plan(&mut plan.load)?;
    if let Some(m) = &args.mix {
        plan.load.mix = Some(mix_over_plan(m)?);
    }
    args.restart.override_plan(&mut plan.restart);
    if args.soak.soak.is_some() && plan.breakpoint.is_some() {
        return Err(usage(format!(
            "--soak runs every trial at one fixed rate, and {file} has a [breakpoint]: drop --soak, or use a plan without one"
        )));
    }
    args.soak.override_plan(&mut plan.soak)
}

/// The plan file (its text and name for messages), or the built-in plan.
fn read_plan(path: Option<&PathBuf>) -> Result<(Plan, String, String)> {
    Ok(match path {
        Some(p) => {
            let (plan, text) = Plan::load(p).map_err(|e| usage(e.to_string()))?;
            (plan, text, p.display().to_string())
        }
        None => (
            Plan::parse(DEFAULT_PLAN, "default plan").expect("the default plan parses"),
            DEFAULT_PLAN.to_string(),
            "default plan".to_string(),
        ),
    })
}

/// `results/PLAN-YYYYMMDD-HHMMSS` from the plan's name and a UTC stamp
/// such as `2026-11-23T18:16:03Z`.
fn default_out(plan_name: &str, utc_stamp: &str) -> PathBuf {
    let stamp = utc_stamp
        .replace([':', '-'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    PathBuf::from("results").join(format!("{plan_name}-{stamp}"))
}

/// The seed a resumed run keeps: the run's own (so the remaining trials
/// keep its order); a different `--seed` is a usage error.
fn resumed_seed(results: &ResultsDir, given: Option<u64>) -> Result<Option<u64>> {
    let stored = results.read_seed();
    if let (Some(given), Some(stored)) = (given, stored) {
        if given != stored {
            return Err(usage(format!(
                "--seed {given} differs from the run's seed {stored} in {}: drop --seed to resume it",
                results.manifest().display()
            )));
        }
    }
    Ok(given.or(stored))
}

/// Every runtime the plan names, once, before the first trial (a Debian
/// root is built on first use); what one cannot do is refused at the
/// plan's line, and a server one lacks is skipped and listed.
fn resolve_runtimes(
    plan: &crate::plan::Plan,
    text: &str,
    file: &str,
    expanded: &mut crate::plan::Expanded,
    runtimes: &crate::runtime::Registry,
) -> Result<crate::plan::runtimes::Resolved> {
    let skipped_before = expanded.skipped.len();
    let resolved = plan
        .check_runtimes(text, file, expanded, &mut |name| {
            runtimes.resolve(name, &mut |m| eprintln!("{m}"))
        })
        .map_err(|e| usage(e.to_string()))?;
    for s in &expanded.skipped[skipped_before..] {
        eprintln!("  skipped: {s}");
    }
    Ok(resolved)
}

/// The plan's line on stderr: its name, how many trials and searches,
/// about how long; then each combination skipped and why.
fn announce(plan: &Plan, expanded: &crate::plan::Expanded) {
    let eta = estimate(expanded, plan);
    let fixed = plan.breakpoint.as_ref().is_none_or(|b| b.and_fixed_loads);
    let searches = if plan.breakpoint.is_some() {
        crate::plan::runner::breakpoint_groups(expanded).len()
    } else {
        0
    };
    eprintln!(
        "plan {}{}: {} trials{}, about {}",
        plan.name,
        plan.follows
            .as_deref()
            .map_or(String::new(), |f| format!(" ({f})")),
        if fixed { expanded.trials.len() } else { 0 },
        if searches > 0 {
            format!(" and {searches} break-point searches")
        } else {
            String::new()
        },
        about(eta)
    );
    for s in &expanded.skipped {
        eprintln!("  skipped: {s}");
    }
}

/// A plan's length as its announcement says it: "4 s" under a minute
/// (a 1 s trial once read "about 1 min"), "3 min" under an hour, "2 h 5
/// min" beyond.
fn about(d: std::time::Duration) -> String {
    let secs = d.as_secs_f64().ceil().max(1.0) as u64;
    if secs < 60 {
        return format!("{secs} s");
    }
    let min = (secs + 30) / 60;
    if min < 60 {
        return format!("{min} min");
    }
    format!("{} h {} min", min / 60, min % 60)
}

/// The command that replays this run (kept in the manifest, and printed
/// with `--resume` added when the run is interrupted).
fn replay_command(args: &RunArgs, out: &std::path::Path, seed: u64) -> String {
    let mut command = format!(
        "rackbench run {} --out {}",
        args.plan
            .as_ref()
            .map_or(String::new(), |p| p.display().to_string()),
        out.display()
    );
    for f in &args.servers_file {
        let abs = std::path::absolute(f).unwrap_or_else(|_| f.clone());
        command.push_str(&format!(" --servers-file {}", abs.display()));
    }
    if let Some(m) = &args.mix {
        let abs = std::path::absolute(m).unwrap_or_else(|_| m.clone());
        command.push_str(&format!(" --mix {}", abs.display()));
    }
    if args.no_pin {
        command.push_str(" --no-pin");
    }
    if args.telemetry {
        command.push_str(" --telemetry");
    }
    if let Some(r) = &args.on.runtime {
        command.push_str(&format!(" --runtime {r}"));
    }
    if args.on.yjit {
        command.push_str(" --yjit");
    }
    if let Some(a) = args.on.allocator {
        command.push_str(&format!(" --allocator {a}"));
    }
    if let Some(n) = args.on.malloc_arena_max {
        command.push_str(&format!(" --malloc-arena-max {n}"));
    }
    command.push_str(&format!(" --seed {seed}"));
    command
}

/// 130 when interrupted (with the command that resumes), 1 when a trial
/// failed or missed a check (saying where the records are), else 0.
fn exit_code(
    result: &crate::plan::runner::RunResult,
    out: &std::path::Path,
    command: &str,
) -> ExitCode {
    if result.interrupted {
        eprintln!(
            "interrupted: {} trials are saved; resume with:\n  {} --resume",
            result.done,
            command.replace("  ", " ")
        );
        return ExitCode::from(130);
    }
    if result.failed > 0 {
        eprintln!(
            "{} trial(s) failed; their records in {}/trials say why",
            result.failed,
            out.display()
        );
    }
    if result.checks_missed > 0 {
        eprintln!(
            "{} trial(s) missed a check of the plan; their records in {}/trials list each check",
            result.checks_missed,
            out.display()
        );
    }
    if result.failed > 0 || result.checks_missed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Refuses `--resume` into a directory that holds no run (issue 36: one
/// that did not exist silently began a new run), naming it and the fix:
/// drop `--resume`, or the run directory nearby it probably meant.
fn resumable(out: &Path) -> std::result::Result<(), String> {
    if ResultsDir::new(out).holds_run() {
        return Ok(());
    }
    let what = if out.exists() {
        format!("{} holds no run (no manifest.json)", out.display())
    } else {
        format!("{} does not exist", out.display())
    };
    let fix = match nearby_run(out) {
        Some(near) => format!(
            "did you mean --out {}? Or drop --resume to start a new run in {}",
            near.display(),
            out.display()
        ),
        None => format!("drop --resume to start a new run in {}", out.display()),
    };
    Err(format!("cannot resume: {what}; {fix}"))
}

/// The run directory whose name is nearest `out`'s, among its siblings
/// and under `results/` (where runs go by default), if one is near
/// enough to be a slip of the keyboard or a path given without its
/// folder.
fn nearby_run(out: &Path) -> Option<PathBuf> {
    let name = out.file_name()?.to_string_lossy().to_string();
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let mut folders = vec![parent.map_or(PathBuf::from("."), PathBuf::from)];
    if !out.starts_with("results") && out.is_relative() {
        folders.push(parent.map_or(PathBuf::from("results"), |p| Path::new("results").join(p)));
    }
    let near_enough = (name.chars().count() / 3).max(2);
    folders
        .iter()
        .filter_map(|f| std::fs::read_dir(f).ok())
        .flat_map(|d| d.flatten())
        .map(|e| e.path())
        .filter(|p| p != out && ResultsDir::new(p).holds_run())
        .filter_map(|p| {
            let d = edit_distance(&name, &p.file_name()?.to_string_lossy());
            (d <= near_enough).then_some((d, p))
        })
        .min()
        .map(|(_, p)| p.strip_prefix("./").map(PathBuf::from).unwrap_or(p))
}

/// Levenshtein's distance between two names, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Refuses to resume a run whose plan or servers files changed since it
/// began (its records would mix two experiments), naming the first
/// difference; `--force-resume` goes through anyway.
fn check_resume(
    results: &ResultsDir,
    plan_text: &str,
    servers_files: &[PathBuf],
    force: bool,
) -> Result<()> {
    let mut differences = Vec::new();
    if let Ok(old) = results.read_plan_text() {
        if let Some(d) = first_difference(&old, plan_text) {
            differences.push(format!(
                "the plan differs from {}: {d}",
                results.plan().display()
            ));
        }
    }
    let mut n = 1;
    loop {
        let copy = results.servers_file(n);
        let old = std::fs::read_to_string(&copy).ok();
        let new = servers_files.get(n - 1);
        match (old, new) {
            (None, None) => break,
            (Some(_), None) => differences.push(format!(
                "the run used a servers file (copied to {}), this resume gives none: add --servers-file",
                copy.display()
            )),
            (None, Some(f)) => differences.push(format!(
                "--servers-file {} is new: the run began without it",
                f.display()
            )),
            (Some(old), Some(f)) => {
                let new = std::fs::read_to_string(f).map_err(|e| {
                    usage(format!("cannot read --servers-file {}: {e}", f.display()))
                })?;
                if let Some(d) = first_difference(&old, &new) {
                    differences.push(format!(
                        "--servers-file {} differs from the run's copy {}: {d}",
                        f.display(),
                        copy.display()
                    ));
                }
            }
        }
        n += 1;
    }
    match differences.first() {
        None => Ok(()),
        Some(d) if force => {
            eprintln!("warning: resuming anyway (--force-resume): {d}");
            Ok(())
        }
        Some(d) => Err(usage(format!(
            "cannot resume {}: {d}; resume with what the run began with, or add --force-resume",
            results.root.display()
        ))),
    }
}

/// "line 7 was `a`, now `b`", or None when the texts agree line by line.
fn first_difference(old: &str, new: &str) -> Option<String> {
    let (mut a, mut b) = (old.lines(), new.lines());
    for line in 1.. {
        match (a.next(), b.next()) {
            (None, None) => return None,
            (x, y) if x.map(str::trim_end) == y.map(str::trim_end) => continue,
            (x, y) => {
                let show =
                    |l: Option<&str>| l.map_or("(nothing)".into(), |l| format!("`{}`", l.trim()));
                return Some(format!("line {line} was {}, now {}", show(x), show(y)));
            }
        }
    }
    None
}

/// Keeps a copy of each servers file beside the results (what the run
/// used, and what a resume is compared with). A file is rewritten only
/// when it differs, so naming the copy itself is harmless.
fn copy_servers_files(results: &ResultsDir, files: &[PathBuf]) -> Result<()> {
    std::fs::create_dir_all(&results.root)?;
    for (i, f) in files.iter().enumerate() {
        let text = std::fs::read_to_string(f)
            .map_err(|e| usage(format!("cannot read --servers-file {}: {e}", f.display())))?;
        let copy = results.servers_file(i + 1);
        if std::fs::read_to_string(&copy).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&copy, text)?;
        }
    }
    Ok(())
}

/// Turn the plan into an A/A run: only the control's trials, each twice,
/// as variants `CONTROL-aa1` and `CONTROL-aa2` (interleaved by the usual
/// shuffle within each round of repeats). Break-point searches are left
/// out: A/A is about the fixed-load trials. Returns the two labels.
fn aa_variants(
    plan: &mut Plan,
    expanded: &mut crate::plan::Expanded,
    control: Option<&str>,
) -> Result<(String, String), String> {
    let variants: Vec<String> = expanded.trials.iter().fold(Vec::new(), |mut v, t| {
        if !v.contains(&t.variant) {
            v.push(t.variant.clone());
        }
        v
    });
    let control = match control {
        Some(c) if variants.iter().any(|v| v == c) => c.to_string(),
        Some(c) => {
            return Err(format!(
                "--control {c}: the plan has no such variant here; it has: {}",
                variants.join(", ")
            ))
        }
        None => variants.first().cloned().ok_or_else(|| {
            "--aa: the plan has no trial to run here (see `rackbench servers`)".to_string()
        })?,
    };
    if plan.breakpoint.as_ref().is_some_and(|b| !b.and_fixed_loads) {
        return Err("--aa compares fixed-load trials, and this plan only searches break points: set and_fixed_loads = true in its [breakpoint] section".into());
    }
    plan.breakpoint = None;
    let labels = (format!("{control}-aa1"), format!("{control}-aa2"));
    let prefix_len = crate::plan::slug(&control).len();
    let mut trials = Vec::new();
    for t in expanded.trials.iter().filter(|t| t.variant == control) {
        for label in [&labels.0, &labels.1] {
            let mut copy = t.clone();
            copy.group = format!("{}{}", crate::plan::slug(label), &t.group[prefix_len..]);
            copy.id = format!("{}{}", crate::plan::slug(label), &t.id[prefix_len..]);
            copy.variant = label.clone();
            trials.push(copy);
        }
    }
    expanded.trials = trials;
    Ok(labels)
}

/// Compare the two A/A variants, print the result and keep it as
/// compare.json (the HTML report shows it). A failure here loses no result.
fn aa_compare(out: &std::path::Path, first: &str, second: &str, primary: Option<&str>) {
    let side = |v: &str| crate::stats::compare::Side {
        dir: out.to_path_buf(),
        selector: Some(format!("variant={v}")),
    };
    match crate::store::samples::compare(&side(first), &side(second), super::compare::DEFAULT_SEED, primary) {
        Ok((c, warnings)) => {
            for w in warnings {
                eprintln!("warning: {w}");
            }
            println!("\nA/A comparison (noise floor of this machine):\n{}", crate::report::compare::terminal(&c));
            let path = out.join("compare.json");
            match serde_json::to_string_pretty(&c) {
                Ok(text) => {
                    if let Err(e) = std::fs::write(&path, text + "\n") {
                        eprintln!("warning: cannot write {}: {e}", path.display());
                    }
                }
                Err(e) => eprintln!("warning: cannot encode the comparison: {e}"),
            }
        }
        Err(e) => eprintln!(
            "warning: no A/A comparison ({e}); try `rackbench compare {0}:variant={first} {0}:variant={second}`",
            out.display()
        ),
    }
}

/// The run's progress on stderr, as the runner reports it.
fn print_progress(p: &Progress) {
    match p {
        Progress::Trial {
            n,
            total,
            trial: t,
            eta,
        } => eprintln!(
            "[{n}/{total}] {} · {} · {} · {} (repeat {}){}",
            t.variant,
            t.app,
            t.front(),
            t.shape
                .rate
                .map_or(format!("{} connections", t.shape.connections), |r| format!(
                    "{r} req/s"
                )),
            t.repeat,
            if eta.is_zero() {
                String::new()
            } else {
                format!(" · about {}s left", eta.as_secs())
            },
        ),
        Progress::TrialDone(stored) => {
            match &stored.trial {
                Some(rec) => {
                    eprintln!("        {}", progress_line(rec));
                    if let Some(x) = &rec.restart {
                        eprintln!(
                            "        {} restart at {:.1}s: {}",
                            x.kind, x.at_s, x.verdict
                        );
                    }
                    if let Some(n) = rec.disturbance.as_ref().and_then(|d| d.note()) {
                        eprintln!("        {n}");
                    }
                    for f in rec.faults.sentences() {
                        eprintln!("        FAULT: {f}");
                    }
                    if let Some(soak) = &rec.soak {
                        for w in &soak.workers {
                            eprintln!("        soak: {}", w.verdict);
                        }
                        eprintln!("        soak: {}", soak.rackbench.verdict);
                    }
                }
                None => eprintln!(
                    "        {}: {}",
                    if stored.outcome == Outcome::Interrupted {
                        "interrupted"
                    } else {
                        "failed"
                    },
                    stored.error.as_deref().unwrap_or("")
                ),
            }
            for c in stored.checks.iter().filter(|c| !c.met) {
                eprintln!("        {c}");
            }
        }
        Progress::Breakpoint { n, total, trial: t } => eprintln!(
            "[{n}/{total}] break point of {} · {} · {}",
            t.variant,
            t.app,
            t.front()
        ),
        Progress::BreakpointDone(record) => {
            eprintln!(
                "        {} {} at {:.0} req/s ({:.0} load-seconds, {} steps)",
                record.mode,
                record
                    .result
                    .level
                    .map_or("none".into(), |l| format!("{l:.0}")),
                record.throughput_rps,
                record.load_seconds,
                record.result.steps.len()
            );
            if let (Some(at), Some(why)) = (record.result.failed_at, record.result.why_failed()) {
                eprintln!("        first failing level {at:.0}: {why}");
            }
        }
    }
}

/// The summary after a run: what the data shows, the table, and the
/// lines of the conditions it ran under (budget, slow clients, database,
/// endpoints, restarts, soaks; nothing without them). What the data shows
/// and those lines are rebuilt from disk like every report, so a failure
/// to read it costs only them.
fn print_summary(out: &std::path::Path, summary: &[crate::store::summary::GroupSummary]) {
    use crate::store::summary::GroupSummary;
    let report = crate::report::Report::load(out).ok();
    if let Some(report) = &report {
        print!("{}", report.terminal_shows(crate::report::table_width()));
    }
    // The planned groups an interruption kept from running have no record:
    // a row each, "not run", so the table shows the whole plan.
    let mut rows = summary.to_vec();
    for g in report.iter().flat_map(|r| &r.groups) {
        if !rows.iter().any(|s| s.group == g.group) {
            rows.push(GroupSummary::not_run(&g.planned));
        }
    }
    rows.sort_by(|a, b| crate::units::natural_cmp(&a.group, &b.group));
    println!("{}", render_summary(&rows));
    if let Some(report) = &report {
        print!("{}", report.terminal_conditions());
    }
}

/// One trial's figures for the progress output, with the same marks and
/// notes as every report (seed 001 printed "19 req/s, p99 18.46ms,
/// errors 347494" for a server answering 503 at once). A trial Ctrl-C
/// cut short mid-load says so first (issue 36: its figures read as a
/// whole trial's).
fn progress_line(rec: &TrialRecord) -> String {
    use crate::units::{fmt_bytes, fmt_us};
    let c = Caveats::of(&rec.load);
    // In the load summary's words, once, rather than as ≥, † and "no OK
    // response" notes.
    let notes = if rec.load.answered_nothing() {
        vec![format!("{}: not a result", crate::load::report::NO_ANSWER)]
    } else {
        c.notes()
    };
    format!(
        "{}{} req/s, p99 {}, errors {}, RSS peak {}{}",
        if rec.interrupted || rec.load.interrupted {
            format!(
                "interrupted after {:.1}s of load: ",
                rec.load.load_seconds()
            )
        } else {
            String::new()
        },
        c.mark_throughput(format!("{:.0}", rec.load.throughput_rps)),
        if rec.load.latency_us.has_figures() {
            c.mark_latency(0.99, fmt_us(rec.load.latency_us.p99 as f64))
        } else {
            "none".into()
        },
        rec.load.errors.total(),
        fmt_bytes(rec.server_metrics.rss_peak_bytes),
        if notes.is_empty() {
            String::new()
        } else {
            format!("  ({})", notes.join("; "))
        }
    )
}

#[cfg(test)]
mod tests {
    use super::{about, first_difference, progress_line, resumable};
    use crate::lab::record::TrialRecord;
    use std::time::Duration;

    /// Issue 36: a trial Ctrl-C interrupted mid-load printed its figures
    /// on its progress line like any finished trial's.
    #[test]
    fn an_interrupted_trial_says_so_on_its_progress_line() {
        let sample = include_str!("../../tests/contracts/trial-v1.json");
        let mut rec: TrialRecord = serde_json::from_str(sample).unwrap();
        rec.interrupted = false;
        rec.load.interrupted = false;
        assert!(!progress_line(&rec).contains("interrupted"));
        rec.interrupted = true;
        rec.load.interrupted = true;
        rec.load.elapsed_s = 2.34;
        let line = progress_line(&rec);
        assert!(
            line.starts_with("interrupted after 2.3s of load: "),
            "{line}"
        );
    }

    /// Issue 36: a trial with no answer in its window says it in the load
    /// summary's words, once, not as three notes.
    #[test]
    fn no_answer_in_the_window_is_one_note_on_the_progress_line() {
        let sample = include_str!("../../tests/contracts/trial-v1.json");
        let mut rec: TrialRecord = serde_json::from_str(sample).unwrap();
        let l = &mut rec.load;
        (l.requests.ok, l.requests.unfinished, l.throughput_rps) = (0, 4, 0.0);
        l.errors = Default::default();
        l.latency_lower_bound = true;
        let line = progress_line(&rec);
        assert!(
            line.ends_with("  (no answer in the window: not a result)"),
            "{line}"
        );
    }

    #[test]
    fn a_plans_length_is_said_in_the_unit_that_fits() {
        let rows = [
            (0.0, "1 s"),
            (3.6, "4 s"),
            (4.75, "5 s"),
            (59.0, "59 s"),
            (59.2, "1 min"),
            (60.0, "1 min"),
            (89.0, "1 min"),
            (90.0, "2 min"),
            (3569.0, "59 min"),
            (3570.0, "1 h 0 min"),
            (7500.0, "2 h 5 min"),
        ];
        for (secs, want) in rows {
            assert_eq!(about(Duration::from_secs_f64(secs)), want, "{secs}");
        }
    }

    #[test]
    fn issue_36_resume_into_a_directory_that_holds_no_run_is_refused_with_the_fix() {
        let root = std::env::temp_dir().join(format!("rb-resume-{}", std::process::id()));
        let run = root.join("hello-20261128-101500");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("manifest.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join("empty")).unwrap();
        let at = |name: &str| root.join(name);
        let cases: &[(&str, Option<&str>)] = &[
            ("hello-20261128-101500", None),
            (
                "hello-20261128-101550",
                Some("does not exist; did you mean --out ROOT/hello-20261128-101500? Or drop --resume to start a new run in ROOT/hello-20261128-101550"),
            ),
            (
                "elsewhere",
                Some("cannot resume: ROOT/elsewhere does not exist; drop --resume to start a new run in ROOT/elsewhere"),
            ),
            (
                "empty",
                Some("cannot resume: ROOT/empty holds no run (no manifest.json); drop --resume"),
            ),
        ];
        for &(name, want) in cases {
            let got = resumable(&at(name)).err();
            let want = want.map(|w| w.replace("ROOT", &root.display().to_string()));
            match (got, want) {
                (None, None) => {}
                (Some(got), Some(want)) => {
                    assert!(got.contains(&want), "{name}: want {want:?} in {got:?}")
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_first_differing_line_is_named() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("a\nb\n", "a\nb\n", None),
            ("a\nb  \n", "a\nb", None),
            ("a\nb\n", "a\nc\n", Some("line 2 was `b`, now `c`")),
            ("a\n", "a\nb\n", Some("line 2 was (nothing), now `b`")),
            ("a\nb\n", "a\n", Some("line 2 was `b`, now (nothing)")),
        ];
        for (old, new, want) in cases {
            assert_eq!(
                first_difference(old, new).as_deref(),
                *want,
                "{old:?} {new:?}"
            );
        }
    }
}
