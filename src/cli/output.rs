//! What the load-driving subcommands (`load`, `replay`, `trial`) print
//! around a run: the wait for `--start-at`, a late segment and its
//! `--hist-out`, the checks, and the exit status.

use super::load_options::SegmentOptions;
use crate::checks::{self, Check, CheckResult};
use crate::load::{segment, LoadConfig};
use anyhow::Result;
use std::process::ExitCode;

/// Before a run with `--start-at` ahead: says on stderr how long it waits.
pub(crate) fn announce_start(config: &LoadConfig) {
    if let Some(at) = config.start_at {
        if let Ok(ahead) = at.duration_since(std::time::SystemTime::now()) {
            eprintln!(
                "waiting {:.1}s for --start-at {}",
                ahead.as_secs_f64(),
                segment::rfc3339_ms(at)
            );
        }
    }
}

/// After a run: says on stderr how late a segment began, and writes its
/// `--hist-out` (app::load).
pub(crate) fn after_segment(report: &crate::load::LoadReport, opts: &SegmentOptions) -> Result<()> {
    crate::app::load::after_segment(
        report,
        opts.hist_out.as_deref(),
        &crate::app::sink::Terminal::new(),
    )
}

/// The exit status of a load run, after printing its checks: 130 when
/// interrupted, 1 when no request succeeded or a check was missed.
/// `rackbench load` and `rackbench replay` share it.
pub(crate) fn exit_code(
    report: &crate::load::LoadReport,
    checks: &[Check],
    json: bool,
) -> ExitCode {
    let checks_met = print_checks(&checks::evaluate_all(checks, report), json);
    if report.interrupted {
        ExitCode::from(130)
    } else if report.requests.ok == 0 {
        eprintln!("{}", nothing_succeeded(report));
        ExitCode::from(1)
    } else if !checks_met {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The error line of a run where no request succeeded: "no answer in the
/// window" where the summary said so (issue 36: it said "see the errors
/// above" when the summary counted none), else a pointer to the errors.
pub(crate) fn nothing_succeeded(report: &crate::load::LoadReport) -> String {
    if report.answered_nothing() {
        format!(
            "error: {} ({} requests counted)",
            crate::load::report::NO_ANSWER,
            report.requests.total
        )
    } else {
        format!(
            "error: no request succeeded ({} counted); see the errors above",
            report.requests.total
        )
    }
}

/// Prints one line per check (on stderr beside a JSON document, so stdout
/// stays one document) and says whether all were met.
pub(crate) fn print_checks(results: &[CheckResult], json: bool) -> bool {
    for r in results {
        if json {
            eprintln!("{r}");
        } else {
            println!("{r}");
        }
    }
    let failed = results.iter().filter(|r| !r.met).count();
    if failed > 0 {
        eprintln!("{failed} of {} check(s) not met", results.len());
    }
    failed == 0
}
