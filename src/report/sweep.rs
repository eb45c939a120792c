//! How a sweep (sweep-v1) is shown: a terminal table with verdict lines,
//! Markdown, and an HTML section with three charts against the swept
//! value: throughput with the USL curve drawn over the points, p99, and
//! the server's CPU utilization. An unordered sweep (an app, an env value)
//! gets neither knee line nor curve, its values placed side by side in
//! the plan's order; telemetry adds GC and app-time columns, and records
//! with memory per worker add its columns (workers, and PSS, USS and RSS
//! per worker) and a chart of PSS per worker, so `--vary yjit=false,true`
//! puts each value's memory cost side by side.
//!
//! `load` rebuilds the analysis from a results directory's study alone:
//! its plan says what was swept (`[sweep]`), its trials hold the figures. The statistics live in `stats::sweep`.

use super::svg::{esc, Axis, Plot};
use super::table::{Align, Table};
use crate::plan::sweep::value_of_planned;
use crate::plan::Plan;
use crate::stats::compare::pct;
use crate::stats::sweep::{analyse, Spec, Sweep, ValueRow};
use std::fmt::Write;

/// The bootstrap seed of a sweep's intervals, so a directory gives the
/// same analysis on every call.
pub const SEED: u64 = 0x5eed_0002;

/// The sweep of a results directory's study; `Ok(None)` when its plan
/// has no `[sweep]`.
pub fn load(study: &crate::store::study::Study) -> Result<Option<Sweep>, String> {
    let dir = study.root();
    let plan_file = study.dir().plan();
    let text = study.plan_text().map_err(|e| {
        format!(
            "cannot read {}: {e}; give a directory `rackbench sweep` or `rackbench run` wrote",
            plan_file.display()
        )
    })?;
    let plan = Plan::parse(text, &plan_file.display().to_string()).map_err(|e| e.to_string())?;
    let Some(section) = plan.sweep else {
        return Ok(None);
    };
    let var = section.validate()?;
    let samples =
        crate::store::samples::sweep(study, &section.values, &|p| value_of_planned(&var, p))?;
    let spec = Spec {
        variable: &section.vary,
        values: &section.values,
        ordered: var.ordered(),
        scales: var.scales(),
        primary: plan.primary_metric.as_deref(),
    };
    let mut sweep = analyse(dir, &spec, &samples, SEED)?;
    let starved: Vec<(String, Option<super::starved::Starved>)> = (section.values.iter())
        .map(|v| {
            let figs: Vec<crate::store::figures::TrialFigures> = (study.trials().ok().into_iter())
                .flat_map(|t| t.ok())
                .filter(|t| value_of_planned(&var, &t.planned).as_ref() == Some(v))
                .filter_map(|t| {
                    t.trial
                        .as_ref()
                        .map(crate::store::figures::TrialFigures::of)
                })
                .collect();
            (v.clone(), super::starved::Starved::of_runs(&figs))
        })
        .collect();
    sweep
        .verdicts
        .extend(starvation(&section.vary, var.ordered(), &starved));
    Ok(Some(sweep))
}

/// Where connections went unanswered (records with `load.fairness`;
/// report/starved.rs): in an ordered sweep the first value where it
/// begins, in another each value where it happened; None when none did.
fn starvation(
    variable: &str,
    ordered: bool,
    values: &[(String, Option<super::starved::Starved>)],
) -> Option<String> {
    let said =
        |v: &str, s: &super::starved::Starved| Some(format!("{variable}={v}: {}", s.words()?));
    let starved: Vec<String> = (values.iter())
        .filter_map(|(v, s)| said(v, s.as_ref()?))
        .collect();
    let first = starved.first()?;
    let before = (values.iter()).take_while(|(_, s)| s.as_ref().is_none_or(|s| s.count == 0));
    let below = before.clone().count() > 0 && before.clone().all(|(_, s)| s.is_some());
    Some(if ordered {
        format!(
            "Starvation begins at {first}{}.",
            if below {
                "; below it every connection got an answer"
            } else {
                ""
            }
        )
    } else {
        format!("Connections left unanswered at {}.", starved.join("; "))
    })
}

fn rps(s: Option<crate::stats::spread::Spread>) -> String {
    s.map_or("–".into(), |s| format!("{:.0}", s.median))
}
fn ms(s: Option<crate::stats::spread::Spread>) -> String {
    s.map_or("–".into(), |s| format!("{:.2}", s.median / 1000.0))
}
fn share(s: Option<crate::stats::spread::Spread>) -> String {
    s.map_or("–".into(), |s| format!("{:.0}%", s.median * 100.0))
}

fn change(r: &ValueRow, metric: &str) -> String {
    r.vs_control
        .iter()
        .find(|x| x.metric == metric)
        .map_or("control".into(), |x| {
            let c = x.change_pct.map(pct).unwrap_or_else(|| "–".into());
            let mark = match x.direction.as_str() {
                "better" => " better",
                "worse" => " WORSE",
                _ if !x.judged => " ?",
                _ => " ~",
            };
            format!("{c}{mark}")
        })
}

const HEAD: [&str; 8] = [
    "value",
    "n",
    "req/s",
    "range",
    "vs control",
    "p99 ms",
    "p99 vs control",
    "server CPU",
];

/// Columns added when some trial carried telemetry.
const TELEMETRY_HEAD: [&str; 4] = ["GC/1k req", "GC time", "queue ms", "app ms"];

/// Columns added when the trials recorded memory per worker.
const MEMORY_HEAD: [&str; 4] = [
    "workers",
    "PSS/worker MiB",
    "USS/worker MiB",
    "RSS/worker MiB",
];

/// Columns added when the app's SQL was timed (ActiveRecord).
const DATABASE_HEAD: [&str; 2] = ["SQL ms", "pool wait ms"];

/// Whether some value has SQL time (an app with ActiveRecord, telemetry
/// on); other sweeps' tables stay as they were.
fn database(s: &Sweep) -> bool {
    s.values.iter().any(|r| r.db_us_mean.is_some())
}

/// Whether some value has memory per worker (records made before the
/// sampler kept it have none, and their tables stay as they were).
fn per_worker(s: &Sweep) -> bool {
    s.values.iter().any(|r| r.worker_rss_mean_bytes.is_some())
}

fn head(s: &Sweep) -> Vec<&'static str> {
    let mut h = HEAD.to_vec();
    if s.telemetry {
        h.extend(TELEMETRY_HEAD);
    }
    if database(s) {
        h.extend(DATABASE_HEAD);
    }
    if per_worker(s) {
        h.extend(MEMORY_HEAD);
    }
    h
}

fn mib(s: Option<crate::stats::spread::Spread>) -> String {
    s.map_or("–".into(), |s| format!("{:.1}", s.median / 1048576.0))
}

fn cells(s: &Sweep, r: &ValueRow) -> Vec<String> {
    let mut value = format!("{}={}", s.variable, r.value);
    if s.ordered && s.knee.as_deref() == Some(&r.value) {
        value.push_str(" (knee)");
    }
    if !s.ordered && s.best_significant.as_deref() == Some(&r.value) {
        value.push_str(" (best)");
    }
    let mut out = vec![
        value,
        r.n.to_string(),
        rps(r.throughput_rps),
        r.throughput_rps
            .map_or("–".into(), |t| format!("{:.0}–{:.0}", t.min, t.max)),
        change(r, "throughput"),
        ms(r.p99_us),
        change(r, "p99"),
        share(r.cpu_utilization),
    ];
    if s.telemetry {
        out.extend([
            r.gc_runs_per_1k_requests
                .map_or("–".into(), |g| format!("{:.1}", g.median)),
            r.gc_time_share
                .map_or("–".into(), |g| format!("{:.1}%", g.median * 100.0)),
            ms(r.queue_us_mean),
            ms(r.app_us_mean),
        ]);
    }
    if database(s) {
        out.extend([ms(r.db_us_mean), ms(r.pool_wait_us_mean)]);
    }
    if per_worker(s) {
        out.extend([
            r.workers.map_or("–".into(), |w| format!("{}", w.median)),
            mib(r.worker_pss_mean_bytes),
            mib(r.worker_uss_mean_bytes),
            mib(r.worker_rss_mean_bytes),
        ]);
    }
    out
}

/// A row per value: the value left, its figures right.
fn table(s: &Sweep) -> Table {
    let heads: Vec<(&str, Align)> = (head(s).into_iter().enumerate())
        .map(|(i, h)| (h, if i == 0 { Align::Left } else { Align::Right }))
        .collect();
    Table::of_text(&heads, s.values.iter().map(|r| cells(s, r)).collect())
}

/// The terminal table, then the verdict lines.
pub fn terminal(s: &Sweep) -> String {
    let mut out = format!(
        "sweep of {} in {} (control {}={}; server CPU is the share of {} core{})\n\n",
        s.variable,
        s.dir.display(),
        s.variable,
        s.control,
        s.server_cores,
        if s.server_cores == 1.0 { "" } else { "s" }
    );
    out.push_str(&table(s).terminal_lines());
    out.push('\n');
    for v in &s.verdicts {
        let _ = writeln!(out, "{v}");
    }
    out
}

/// Markdown: the same table and verdicts.
pub fn markdown(s: &Sweep) -> String {
    let mut out = format!(
        "## Sweep of {}\n\nControl: {}={}. Server CPU is the share of the {} core(s) the server was given.\n\n{}",
        s.variable,
        s.variable,
        s.control,
        s.server_cores,
        table(s).markdown()
    );
    out.push('\n');
    for v in &s.verdicts {
        let _ = writeln!(out, "- {v}");
    }
    out
}

/// The x position of each value: the number itself, or its index for
/// values that are not numbers or not ordered (an env value's numbers are
/// names, not positions).
fn xs(s: &Sweep) -> (Vec<f64>, bool) {
    let nums: Option<Vec<f64>> = s
        .values
        .iter()
        .map(|r| r.value.parse().ok())
        .collect::<Option<Vec<f64>>>()
        .filter(|_| s.ordered);
    match nums {
        Some(n) => (n, true),
        None => ((0..s.values.len()).map(|i| i as f64).collect(), false),
    }
}

fn chart(
    s: &Sweep,
    title: &str,
    y_label: &str,
    pick: &dyn Fn(&ValueRow) -> Option<crate::stats::spread::Spread>,
    scale: f64,
    with_usl: bool,
) -> String {
    let (x, numeric) = xs(s);
    let label = |v: f64| -> String {
        if numeric {
            format!("{v}")
        } else {
            s.values
                .get(v.round() as usize)
                .map_or(String::new(), |r| r.value.clone())
        }
    };
    let top = s
        .values
        .iter()
        .filter_map(|r| pick(r).map(|p| p.max * scale))
        .fold(0.0, f64::max);
    let mut top = top;
    if let (true, Some(u)) = (with_usl, &s.usl) {
        top = top.max(u.peak_throughput_rps.unwrap_or(0.0).min(top * 1.5));
    }
    let mut plot = Plot::new(
        640.0,
        280.0,
        Axis::at(&x, false, &s.variable, &label),
        Axis::linear(0.0, top * 1.05, y_label, &|v| format!("{v}")),
    );
    for (r, &xv) in s.values.iter().zip(&x) {
        if let Some(p) = pick(r) {
            plot.vwhisker_shift(xv, 0.0, p.min * scale, p.max * scale, "#1f77b4");
            plot.point(
                xv,
                p.median * scale,
                4.0,
                "#1f77b4",
                &format!(
                    "{}={}: median {:.2} (n={})",
                    s.variable,
                    r.value,
                    p.median * scale,
                    p.n
                ),
            );
        }
    }
    plot.legend("median, range of repeats", "#1f77b4", false);
    if let (true, Some(u), true, true) = (with_usl, &s.usl, numeric, s.ordered) {
        let fit = crate::stats::usl::UslFit {
            lambda: u.lambda,
            sigma: u.sigma,
            kappa: u.kappa,
            r_squared: u.r2,
        };
        let (lo, hi) = (plot.x.min.max(0.5), plot.x.max);
        let pts: Vec<(f64, f64)> = (0..=80)
            .map(|i| lo + (hi - lo) * i as f64 / 80.0)
            .map(|n| (n, fit.throughput(n).min(plot.y.max)))
            .collect();
        plot.line(
            &pts,
            "#ff7f0e",
            2.0,
            true,
            &format!("USL σ={:.4} κ={:.5} R²={:.3}", u.sigma, u.kappa, u.r2),
        );
        plot.legend("USL fit", "#ff7f0e", true);
    }
    if let Some(k) = s.knee.as_ref().filter(|_| s.ordered) {
        if let Some(i) = s.values.iter().position(|r| r.value == *k) {
            plot.vline(x[i], "#2ca02c", "knee");
        }
    }
    plot.finish(title, true)
}

/// The sweep section of an HTML report.
pub fn section(s: &Sweep) -> String {
    let mut out = format!(
        "<section class=\"chart\" id=\"sweep\"><h2>Sweep of {}</h2><p class=\"note\">Control {}={}. Each point is the median of a value's repeats, the whisker their range. Each value is compared with the control (95% bootstrap interval, Mann–Whitney U Holm-adjusted over the sweep's values per metric). {} Server CPU is the share of the {} core(s) it was given.</p>",
        esc(&s.variable),
        esc(&s.variable),
        esc(&s.control),
        if s.ordered {
            "The knee is the smallest value whose throughput is not significantly below the best's."
        } else {
            "The values are alternatives, not amounts: no knee, no curve; the best is the value significantly better than every other, if one is."
        },
        s.server_cores
    );
    out.push_str(&chart(
        s,
        "throughput against the swept value",
        "req/s",
        &|r| r.throughput_rps,
        1.0,
        true,
    ));
    out.push_str(&chart(
        s,
        "p99 latency against the swept value",
        "p99 (ms)",
        &|r| r.p99_us,
        0.001,
        false,
    ));
    out.push_str(&chart(
        s,
        "server CPU utilization against the swept value",
        "CPU (% of given cores)",
        &|r| r.cpu_utilization,
        100.0,
        false,
    ));
    if per_worker(s) {
        out.push_str(&chart(
            s,
            "PSS per worker against the swept value",
            "PSS per worker (MiB)",
            &|r| r.worker_pss_mean_bytes,
            1.0 / 1048576.0,
            false,
        ));
    }
    out.push_str(&table(s).html());
    out.push_str("<ul>");
    for v in &s.verdicts {
        let _ = write!(out, "<li>{}</li>", esc(v));
    }
    out.push_str("</ul></section>");
    out
}

/// The sweep section for the report page when the directory's plan has
/// a `[sweep]` (None without one); a sweep that cannot be analysed says
/// why in its place.
pub fn section_in(loaded: &Result<Option<Sweep>, String>) -> Option<String> {
    match loaded {
        Ok(None) => None,
        Ok(Some(s)) => Some(section(s)),
        Err(e) => Some(format!(
            "<section id=\"sweep\"><h2>Sweep</h2><p class=\"note\">No sweep analysis: {}</p></section>",
            esc(e)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::spread::Spread;
    use crate::stats::sweep::UslSummary;

    fn sweep(ordered: bool, telemetry: bool) -> Sweep {
        let value = |v: &str, x: f64| ValueRow {
            value: v.into(),
            n: 5,
            throughput_rps: Spread::of(&[x, x * 1.01, x * 0.99]),
            p50_us: Spread::of(&[1000.0]),
            p99_us: Spread::of(&[4000.0]),
            cpu_utilization: Spread::of(&[0.5]),
            gc_runs_per_1k_requests: telemetry.then(|| Spread::of(&[2.5])).flatten(),
            gc_time_share: telemetry.then(|| Spread::of(&[0.031])).flatten(),
            queue_us_mean: None,
            app_us_mean: telemetry.then(|| Spread::of(&[1200.0])).flatten(),
            db_us_mean: None,
            pool_wait_us_mean: None,
            workers: None,
            worker_rss_mean_bytes: None,
            worker_pss_mean_bytes: None,
            worker_uss_mean_bytes: None,
            vs_control: Vec::new(),
        };
        Sweep {
            schema: crate::stats::sweep::SCHEMA.into(),
            dir: "results/s".into(),
            variable: "v".into(),
            control: "1".into(),
            server_cores: 1.0,
            alpha: 0.05,
            values: vec![value("1", 100.0), value("2", 180.0), value("4", 200.0)],
            ordered,
            primary_metric: None,
            telemetry,
            knee: Some("2".into()),
            best: Some("4".into()),
            best_significant: None,
            disturbance: Vec::new(),
            usl: Some(UslSummary {
                sigma: 0.05,
                kappa: 0.01,
                lambda: 100.0,
                peak_value: Some(9.7),
                peak_throughput_rps: Some(300.0),
                r2: 0.98,
            }),
            verdicts: Vec::new(),
        }
    }

    /// The renderer itself refuses a knee line and a USL curve for an
    /// unordered sweep, whatever the document holds.
    #[test]
    fn an_unordered_sweep_draws_no_knee_and_no_curve() {
        let ordered = section(&sweep(true, false));
        assert!(ordered.contains("USL fit") && ordered.contains(">knee<"));
        let unordered = section(&sweep(false, false));
        assert!(!unordered.contains("USL fit"), "{unordered}");
        assert!(!unordered.contains(">knee<") && !unordered.contains("(knee)"));
        assert!(unordered.contains("no knee, no curve"));
        assert!(!markdown(&sweep(false, false)).contains("(knee)"));
    }

    #[test]
    fn telemetry_columns_appear_only_with_telemetry() {
        let with = terminal(&sweep(true, true));
        assert!(
            with.contains("GC/1k req") && with.contains("app ms"),
            "{with}"
        );
        assert!(
            with.contains("2.5") && with.contains("3.1%") && with.contains("1.20"),
            "{with}"
        );
        let md = markdown(&sweep(true, true));
        assert!(
            md.contains("| GC/1k req | GC time | queue ms | app ms |"),
            "{md}"
        );
        assert!(!terminal(&sweep(true, false)).contains("GC/1k req"));
        assert!(section(&sweep(true, true)).contains("<th>GC time</th>"));
    }

    /// `--vary yjit=false,true`: each value's memory per worker side by
    /// side, and nothing of it for records that lack it.
    #[test]
    fn memory_per_worker_columns_appear_only_with_records_that_have_it() {
        let mut s = sweep(false, false);
        assert!(!terminal(&s).contains("PSS/worker"));
        assert!(!section(&s).contains("PSS per worker"));
        for (r, pss) in s.values.iter_mut().zip([40.0, 52.5, 60.0]) {
            r.workers = Spread::of(&[2.0]);
            r.worker_pss_mean_bytes = Spread::of(&[pss * 1048576.0]);
            r.worker_uss_mean_bytes = Spread::of(&[(pss - 10.0) * 1048576.0]);
            r.worker_rss_mean_bytes = Spread::of(&[80.0 * 1048576.0]);
        }
        let t = terminal(&s);
        assert!(
            t.contains("PSS/worker MiB") && t.contains("USS/worker MiB"),
            "{t}"
        );
        assert!(
            t.contains("52.5") && t.contains("42.5") && t.contains("80.0"),
            "{t}"
        );
        assert!(
            markdown(&s).contains("| workers | PSS/worker MiB | USS/worker MiB | RSS/worker MiB |")
        );
        assert!(section(&s).contains("PSS per worker against the swept value"));
    }

    #[test]
    fn the_sweep_says_where_starvation_begins() {
        use crate::report::starved::{Per, Starved};
        let s = |count| {
            Some(Starved {
                count,
                of: 80,
                per: Per::Client,
                runs: 1,
                jain_index: None,
            })
        };
        let values = vec![
            ("20".to_string(), s(0)),
            ("40".to_string(), s(0)),
            ("80".to_string(), s(44)),
        ];
        assert_eq!(
            starvation("connections", true, &values).as_deref(),
            Some("Starvation begins at connections=80: 44 of 80 connections never answered; below it every connection got an answer.")
        );
        let older = vec![("20".to_string(), None), ("80".to_string(), s(44))];
        assert_eq!(
            starvation("connections", true, &older).as_deref(),
            Some("Starvation begins at connections=80: 44 of 80 connections never answered."),
            "no fairness below: nothing said of it"
        );
        assert_eq!(
            starvation("app", false, &values).as_deref(),
            Some("Connections left unanswered at app=80: 44 of 80 connections never answered.")
        );
        assert_eq!(starvation("connections", true, &values[..2]), None);
    }

    /// The committed workers sweep with `load.fairness` added to every
    /// record: 2 of 8 connections starved from 3 workers on (a made-up
    /// count; the sweep's figures are the committed ones).
    #[test]
    fn a_sweep_from_disk_says_where_starvation_begins() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("bench/runs/2026-11-23-sweep-puma-workers/run3-quiet/results");
        let dir =
            std::env::temp_dir().join(format!("rackbench-sweep-starved-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("trials")).unwrap();
        for f in ["manifest.json", "plan.toml"] {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
        for e in std::fs::read_dir(src.join("trials")).unwrap() {
            let p = e.unwrap().path();
            let mut v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            let starved = ["w3-", "w4-", "w6-"].iter().any(|w| name.contains(w));
            let n = if starved { 2 } else { 0 };
            if let Some(load) = v.get_mut("trial").map(|t| &mut t["load"]) {
                load["connections"]["never_answered"] = n.into();
                load["fairness"] = serde_json::json!({
                    "connections_answered": 8 - n, "connections_starved": n,
                    "top10_share": 0.2, "jain_index": 0.9
                });
            }
            std::fs::write(dir.join("trials").join(name), v.to_string()).unwrap();
        }
        let study = crate::store::study::Study::open(&dir).unwrap();
        let sweep = load(&study).unwrap().unwrap();
        let text = sweep.verdicts.join("\n");
        assert!(
            text.contains("Starvation begins at workers=3: 2 of 8 connections never answered in the worst of 5 runs; below it every connection got an answer."),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
