//! The per-second timeline section of the HTML page: per trial group a
//! collapsible block, per run its throughput second by second (warm-up and
//! seconds with errors shaded, kills for memory and the restart's instant
//! marked), its p50 and p99 per second, and what the server's accept queue
//! and GC did on the same clock. It draws what the records hold and never
//! aggregates across runs.

use super::html_marks::status_cell;
use super::svg::{esc, Axis, Plot, RED};
use super::{load_label, short, Report, Status, TrialRow};
use crate::units::{fmt_count, fmt_us, fmt_us_short, num};
use std::fmt::Write;

/// The timeline section: a collapsible block per trial group (open when
/// there are 12 trials or fewer, or when the group had trouble).
pub(super) fn section(s: &mut String, report: &Report) {
    s.push_str("<section class=\"chart\" id=\"timeline\"><h2>Per-second timeline</h2><p class=\"note\">Each run second by second: OK responses per second (top) and the p50 and p99 latency of that second's OK responses (bottom, log scale). Grey shading is warm-up (not counted); red shading marks seconds with errors, labelled with the count.</p>");
    let open_all = report.trials.len() <= 12;
    s.push_str("<button type=\"button\" onclick=\"setAll('details.tl', true)\">Expand all</button><button type=\"button\" onclick=\"setAll('details.tl', false)\">Collapse all</button>");
    let mut drawn = 0;
    for g in &report.groups {
        let rows: Vec<&TrialRow> = report
            .trials
            .iter()
            .filter(|t| t.planned.group == g.group)
            .collect();
        let has_trouble = rows
            .iter()
            .any(|t| t.status != Status::Ok || t.errors() > 0);
        let _ = write!(
            s,
            "<details class=\"tl\"{}><summary>{} · {} · {} · {}{}</summary><div class=\"pair\">",
            if open_all || has_trouble { " open" } else { "" },
            esc(&g.planned.variant),
            esc(&g.planned.app),
            esc(&g.planned.front()),
            esc(&load_label(&g.planned)),
            if g.notes().is_empty() {
                String::new()
            } else {
                format!(
                    " <span class=\"{}\">({})</span>",
                    if g.is_result() { "note" } else { "bad-text" },
                    esc(&g.notes())
                )
            }
        );
        for t in rows {
            if trial_timeline(s, t) {
                drawn += 1;
            }
        }
        s.push_str("</div></details>");
    }
    if drawn == 0 {
        s.push_str(
            "<p class=\"bad-text\">No run has a timeline.</p><svg width=\"0\" height=\"0\"></svg>",
        );
    }
    s.push_str("</section>\n");
}

/// One run's timeline charts; false when it has none to draw.
fn trial_timeline(s: &mut String, t: &TrialRow) -> bool {
    let head = format!("Repeat {} ({})", t.planned.repeat, t.planned.id);
    let _ = write!(
        s,
        "<div><h3>{} {}</h3>",
        esc(&head),
        if t.status == Status::Ok {
            String::new()
        } else {
            status_cell(t.status)
        }
    );
    let Some(r) = &t.record else {
        let _ = write!(
            s,
            "<p class=\"bad-text\">No timeline: {}</p><pre>{}</pre></div>",
            t.status.label(),
            esc(t.reason.as_deref().unwrap_or(""))
        );
        return false;
    };
    if let Some(reason) = &t.reason {
        let _ = write!(s, "<p class=\"bad-text\">{}</p>", esc(&short(reason, 200)));
    }
    if let Some(n) = r.disturbance.as_ref().and_then(|d| d.note()) {
        let _ = write!(s, "<p class=\"note\">⚠ {}</p>", esc(&n));
    }
    if let Some(n) = super::budget::trial_kill_note(t) {
        let _ = write!(s, "<p class=\"bad-text\">{}</p>", esc(&n));
    }
    for f in r.faults.sentences() {
        let _ = write!(s, "<p class=\"bad-text\">fault: {}</p>", esc(&f));
    }
    if let Some((n, zero)) = super::restart::note(r) {
        let class = if zero { "note" } else { "bad-text" };
        let _ = write!(s, "<p class=\"{class}\">{}</p>", esc(&n));
    }
    let tl = &r.load.timeline;
    if tl.is_empty() {
        s.push_str("<p class=\"bad-text\">The record holds no timeline rows.</p></div>");
        return false;
    }
    let tmax = tl.iter().map(|row| row.t_s + 1).max().unwrap_or(1) as f64;
    let rmax = tl.iter().map(|row| row.rps).fold(1f64, f64::max);
    let mut x = Axis::linear(0.0, tmax, "time since start (s)", &|v| num(v));
    x.ticks.retain(|(v, _)| v.fract() == 0.0);
    let y = Axis::linear(0.0, rmax * 1.1, "OK responses (req/s)", &fmt_count);
    let mut p = Plot::new(570.0, 220.0, x.clone(), y).with_left(60.0);
    for row in tl {
        let (a, b) = (row.t_s as f64, row.t_s as f64 + 1.0);
        if row.warmup {
            p.xband(a, b, "#999", 0.18, &format!("second {}: warm-up", row.t_s));
        }
        if row.errors > 0 {
            p.xband(
                a,
                b,
                RED,
                0.22,
                &format!("second {}: {} errors", row.t_s, row.errors),
            );
            p.text(
                a + 0.5,
                rmax * 1.02,
                &format!("{} err", row.errors),
                RED,
                "middle",
            );
        }
    }
    let pts: Vec<(f64, f64)> = tl
        .iter()
        .map(|row| (row.t_s as f64 + 0.5, row.rps))
        .collect();
    p.line(&pts, "#1f5f9f", 2.0, false, "OK responses per second");
    for row in tl {
        p.point(
            row.t_s as f64 + 0.5,
            row.rps,
            2.5,
            if row.errors > 0 { RED } else { "#1f5f9f" },
            &format!(
                "second {}: {:.0} req/s, {} ok, {} errors, p50 {}, p99 {}{}",
                row.t_s,
                row.rps,
                row.ok,
                row.errors,
                fmt_us(row.p50_us as f64),
                fmt_us(row.p99_us as f64),
                if row.warmup { " (warm-up)" } else { "" }
            ),
        );
    }
    // Each kill for memory at its time (`report::budget`).
    for at in super::budget::kill_seconds(r) {
        p.vline(at.min(tmax), RED, &format!("killed for memory at {at:.1}s"));
    }
    // The restart's instant (`report::restart`), the same kind of mark.
    if let Some((at, label)) = super::restart::instant(r) {
        p.vline(at.min(tmax), "#7a4fa0", &label);
    }
    p.legend("req/s", "#1f5f9f", false);
    if tl.iter().any(|row| row.warmup) {
        p.legend("warm-up", "#bbb", false);
    }
    if tl.iter().any(|row| row.errors > 0) {
        p.legend("errors", RED, false);
    }
    let title = format!("Throughput per second, {}", t.planned.id);
    s.push_str(&p.finish(&title, false));
    latency_timeline(s, tl, x.clone(), &t.planned.id);
    server_timeline(s, r, x, &t.planned.id);
    s.push_str("</div>");
    true
}

/// Latency per second of one run: p50 and p99 of that second's OK
/// responses, log scale.
fn latency_timeline(s: &mut String, tl: &[crate::load::report::TimelineRow], x: Axis, id: &str) {
    let lat: Vec<&crate::load::report::TimelineRow> = tl
        .iter()
        .filter(|row| row.ok > 0 || row.p99_us > 0)
        .collect();
    if !lat.is_empty() {
        let lo = lat
            .iter()
            .map(|row| row.p50_us.max(1) as f64)
            .fold(f64::MAX, f64::min);
        let hi = lat
            .iter()
            .map(|row| row.p99_us.max(1) as f64)
            .fold(1f64, f64::max);
        let y = Axis::log(lo, hi, "latency per second (log)", &fmt_us_short);
        let mut p = Plot::new(570.0, 180.0, x, y).with_left(60.0);
        for row in tl {
            if row.warmup {
                p.xband(
                    row.t_s as f64,
                    row.t_s as f64 + 1.0,
                    "#999",
                    0.18,
                    "warm-up",
                );
            }
            if row.errors > 0 {
                p.xband(
                    row.t_s as f64,
                    row.t_s as f64 + 1.0,
                    RED,
                    0.22,
                    &format!("{} errors", row.errors),
                );
            }
        }
        let p50: Vec<(f64, f64)> = lat
            .iter()
            .map(|row| (row.t_s as f64 + 0.5, row.p50_us.max(1) as f64))
            .collect();
        let p99: Vec<(f64, f64)> = lat
            .iter()
            .map(|row| (row.t_s as f64 + 0.5, row.p99_us.max(1) as f64))
            .collect();
        p.line(&p50, "#59a14f", 1.8, false, "p50 per second");
        p.line(&p99, "#b07aa1", 1.8, false, "p99 per second");
        p.legend("p50", "#59a14f", false);
        p.legend("p99", "#b07aa1", false);
        let title = format!("Latency per second, {id}");
        s.push_str(&p.finish(&title, false));
    }
}

/// Inside the server, second by second on the load's clock: the accept
/// queue (connections waiting for a worker) and, with telemetry, GC runs.
/// Both are timed from the counted window's start, which is the load
/// timeline's first counted second.
fn server_timeline(s: &mut String, r: &crate::lab::trial::TrialRecord, x: Axis, id: &str) {
    let m = &r.server_metrics;
    let queue = m.accept_queue.as_ref().filter(|q| !q.timeline.is_empty());
    let gc = m.telemetry.as_ref().filter(|t| !t.timeline.is_empty());
    if queue.is_none() && gc.is_none() {
        return;
    }
    let offset = r
        .load
        .timeline
        .iter()
        .find(|row| !row.warmup)
        .map_or(0.0, |row| row.t_s as f64);
    let q_pts: Vec<(f64, f64)> = queue.map_or(Vec::new(), |q| {
        q.timeline
            .iter()
            .map(|sec| (offset + sec.t_s as f64 + 0.5, sec.mean))
            .collect()
    });
    let gc_pts: Vec<(f64, f64)> = gc.map_or(Vec::new(), |t| {
        t.timeline
            .iter()
            .map(|sec| (offset + sec.t_s as f64 + 0.5, sec.gc_runs as f64))
            .collect()
    });
    // Seconds past the load's last (the sampler's final partial second)
    // fall off the shared time axis.
    let inside = |pts: Vec<(f64, f64)>| -> Vec<(f64, f64)> {
        pts.into_iter().filter(|p| p.0 <= x.max).collect()
    };
    let (q_pts, gc_pts) = (inside(q_pts), inside(gc_pts));
    let ymax = q_pts
        .iter()
        .chain(&gc_pts)
        .map(|p| p.1)
        .fold(1f64, f64::max);
    let y = Axis::linear(0.0, ymax * 1.1, "count per second", &fmt_count);
    let mut p = Plot::new(570.0, 160.0, x, y).with_left(60.0);
    if !q_pts.is_empty() {
        p.line(
            &q_pts,
            "#e15759",
            1.8,
            false,
            "accept queue, mean connections waiting",
        );
        for (x, v) in &q_pts {
            p.point(
                *x,
                *v,
                2.0,
                "#e15759",
                &format!("accept queue {v:.1} waiting"),
            );
        }
        p.legend("accept queue", "#e15759", false);
    }
    if !gc_pts.is_empty() {
        p.line(&gc_pts, "#f28e2b", 1.8, true, "GC runs per second");
        for (x, v) in &gc_pts {
            p.point(*x, *v, 2.0, "#f28e2b", &format!("{v:.0} GC runs"));
        }
        p.legend("GC runs/s", "#f28e2b", true);
    }
    s.push_str(&p.finish(&format!("Inside the server per second, {id}"), false));
}
