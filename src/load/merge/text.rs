//! A merged document's segments as terminal lines (`rackbench merge`'s
//! summary). It never merges anything.

use crate::load::report::LoadReport;

/// The segments of a merged document as terminal lines.
pub fn render_segments(r: &LoadReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let Some(segs) = &r.segments else {
        return s;
    };
    let _ = writeln!(
        s,
        "  segments:    {} merged (latency from their histograms, never averaged)",
        segs.len()
    );
    for g in segs {
        let _ = writeln!(
            s,
            "    {:>3}  {:>9} ok  {:>6} errors  {:>9.1} req/s  p99 {:>8}  late {:.0} ms{}",
            g.index,
            g.ok,
            g.errors,
            g.throughput_rps,
            crate::units::fmt_us(g.p99_us as f64),
            g.late_ms,
            g.source
                .as_deref()
                .map_or(String::new(), |n| format!("  {n}"))
        );
    }
    s
}
