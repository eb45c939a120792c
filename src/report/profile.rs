//! "Why: profiles" (issue 40): where a profiled trial's CPU went, from
//! the record's `profile` and its merged on-CPU collapsed stacks. The
//! trial's terminal lines live here too, so the top frames read the same
//! wherever they are shown.

use crate::profile::Profile;
use std::fmt::Write;

/// How many frames the terminal and the trial's lines list.
pub const TOP_SHOWN: usize = 5;

/// A trial's profile on the terminal: where its files are, the sample
/// count and rate, and the top frames by on-CPU self share.
pub fn trial_lines(p: &Profile, results_dir: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  profile:     {} on-CPU samples at {} Hz from {} processes ({}), {} wall-clock",
        p.samples,
        p.rate_hz,
        p.processes.len(),
        p.profiler,
        p.wall_clock.samples
    );
    let dir = (p.files.first())
        .and_then(|f| std::path::Path::new(&f.path).parent())
        .map(|d| format!("{}/{}", results_dir.trim_end_matches('/'), d.display()))
        .unwrap_or_else(|| results_dir.to_string());
    let _ = writeln!(s, "               files in {dir}");
    let _ = writeln!(s, "               self   total  frame (on-CPU)");
    for t in p.top.iter().take(TOP_SHOWN) {
        let _ = writeln!(
            s,
            "               {:>5.1}% {:>5.1}%  {}",
            t.self_share * 100.0,
            t.total_share * 100.0,
            t.frame
        );
    }
    s
}
