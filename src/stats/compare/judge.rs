//! The judgement of rows: Holm families (the primary metric's rows
//! alone, the others together), significance (adjusted p *and* an
//! interval that leaves out zero, outside the noise threshold), the
//! direction, whether the repeats could ever show a difference, and each
//! row's verdict in words.
//!
//! One row at a time: it never pairs groups (`compare` does) and never
//! sums a comparison up in lines (`summary` does).

use super::metrics::{higher_is_better, metric_words};
use super::row::{repeats_to_resolve, Row, ALPHA, POWER, RESOLVE_PCT};
use crate::stats::significance::{holm, smallest_p};

/// Changes whose whole 95% interval lies within this many percent of zero
/// are not called significant, however consistent (criterion.rs's noise
/// threshold, the same 1%): on a shared machine the two sides of an A/A
/// run drift apart by a few tenths of a percent, and HDR buckets quantize
/// a percentile to 0.1%, so such a change is real but means nothing.
pub const NOISE_PCT: f64 = 1.0;

/// Holm-adjust, decide significance and write each row's verdict.
/// Significant means: adjusted p under ALPHA *and* an interval that leaves
/// out zero, so the two methods must agree before a change is claimed.
/// The primary rows are one Holm family, the others another (all rows
/// one family when there is no primary metric).
pub fn judge(rows: &mut [Row]) {
    for primary in [true, false] {
        let family: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].primary == primary)
            .collect();
        let adjusted = holm(&family.iter().map(|&i| rows[i].p_value).collect::<Vec<_>>());
        for (&i, p) in family.iter().zip(adjusted) {
            judge_row(&mut rows[i], p, family.len());
        }
    }
}

/// Rows in `row`'s Holm family among `rows`.
pub(super) fn family_size(rows: &[Row], row: &Row) -> usize {
    rows.iter().filter(|r| r.primary == row.primary).count()
}

/// One row's judgement, given its adjusted p and the size of its family.
fn judge_row(row: &mut Row, p_adjusted: f64, m: usize) {
    row.p_adjusted = p_adjusted;
    let excludes_zero = match (row.ci_low_pct, row.ci_high_pct) {
        (Some(lo), Some(hi)) => lo > 0.0 || hi < 0.0,
        // Without an interval (a zero baseline), the rank test decides.
        _ => row.n_a >= 2 && row.n_b >= 2,
    };
    row.significant = p_adjusted < ALPHA && excludes_zero && !within_noise(row);
    let higher_better = higher_is_better(&row.metric);
    if row.significant {
        let up = row.b > row.a;
        row.direction = if up == higher_better {
            "better"
        } else {
            "worse"
        }
        .into();
    }
    row.judged = row.significant || resolvable(row, m);
    // Holm's strictest step is α/m: the level the smallest p must reach.
    row.repeats_for_5pct = match (row.significant, row.cv_a_pct, row.cv_b_pct) {
        (false, Some(ca), Some(cb)) => Some(
            repeats_to_resolve(ca, cb, ALPHA / m as f64, POWER, RESOLVE_PCT).max(repeats_needed(m)),
        ),
        _ => None,
    };
    row.verdict = row_verdict(row, m);
}

/// The row's whole interval lies inside ±NOISE_PCT.
fn within_noise(row: &Row) -> bool {
    matches!((row.ci_low_pct, row.ci_high_pct),
        (Some(lo), Some(hi)) if lo >= -NOISE_PCT && hi <= NOISE_PCT)
}

pub(super) fn words(metric: &str) -> String {
    metric_words(metric)
}

fn interval(row: &Row) -> String {
    match (row.ci_low_pct, row.ci_high_pct) {
        (Some(lo), Some(hi)) => format!("95% CI {} to {}", pct(lo), pct(hi)),
        _ => "no interval".to_string(),
    }
}

/// A percentage with a sign and sensible precision.
pub fn pct(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:+.0}%")
    } else {
        format!("{x:+.1}%")
    }
}

/// Whether a row *could* come out significant among `m` Holm-adjusted
/// rows: even the most extreme ranks give p ≥ 2/C(n_a+n_b, n_a), and Holm
/// multiplies the smallest p by m.
fn resolvable(row: &Row, m: usize) -> bool {
    row.n_a >= 2 && row.n_b >= 2 && smallest_p(row.n_a, row.n_b) * (m as f64) < ALPHA
}

/// The fewest repeats per side that can show a difference among `m` rows.
pub fn repeats_needed(m: usize) -> usize {
    (2..200)
        .find(|&k| smallest_p(k, k) * (m as f64) < ALPHA)
        .unwrap_or(200)
}

/// "; with this spread (±6.0%), ~23 repeats a side would resolve a 5%
/// change", or that these repeats already would have; empty without
/// `repeats_for_5pct`.
fn resolve_note(row: &Row) -> String {
    let (Some(n), Some(ca), Some(cb)) = (row.repeats_for_5pct, row.cv_a_pct, row.cv_b_pct) else {
        return String::new();
    };
    let spread = ((ca * ca + cb * cb) / 2.0).sqrt();
    if n <= row.n_a.min(row.n_b) {
        format!(
            "; with this spread (±{spread:.1}%), these repeats would have resolved a {RESOLVE_PCT:.0}% change (~{n} a side suffice)"
        )
    } else {
        format!(
            "; with this spread (±{spread:.1}%), ~{n} repeats a side would resolve a {RESOLVE_PCT:.0}% change"
        )
    }
}

fn row_verdict(row: &Row, m: usize) -> String {
    let note = resolve_note(row);
    row_words(row, m) + &note
}

fn row_words(row: &Row, m: usize) -> String {
    let what = words(&row.metric);
    if !row.significant && !resolvable(row, m) {
        if let (Some(c), Some(lo), Some(hi)) = (
            row.merged_change_pct,
            row.merged_ci_low_pct,
            row.merged_ci_high_pct,
        ) {
            return format!(
                "{what}: {} in the merged histograms of {}+{} runs (within-run 95% CI {} to {}, which leaves out run-to-run noise); too few repeats to call it significant ({} comparisons need {} a side)",
                pct(c),
                row.n_a,
                row.n_b,
                pct(lo),
                pct(hi),
                m,
                repeats_needed(m)
            );
        }
        return format!(
            "{what}: too few repeats to show a difference (n={}+{}; {} comparisons need {} repeats a side)",
            row.n_a,
            row.n_b,
            m,
            repeats_needed(m)
        );
    }
    let change = row
        .change_pct
        .map(pct)
        .unwrap_or_else(|| "from zero".into());
    if !row.significant && within_noise(row) {
        return format!(
            "{what} unchanged (within the ±{NOISE_PCT}% noise threshold: {change}, {})",
            interval(row)
        );
    }
    if !row.significant {
        return format!(
            "{what} unchanged (no significant difference: {change}, {})",
            interval(row)
        );
    }
    let size = row
        .change_pct
        .map(|c| format!("{:.0}%", c.abs()))
        .unwrap_or_default();
    let moved = if row.b > row.a { "higher" } else { "lower" };
    if row.metric == "throughput" {
        let word = if row.b > row.a { "faster" } else { "slower" };
        format!("B is {size} {word} in throughput ({})", interval(row))
    } else {
        format!(
            "B's {what} is {size} {moved} ({}; {})",
            interval(row),
            row.direction
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::row::tests::row;
    use super::*;

    #[test]
    fn a_consistent_change_inside_the_noise_threshold_is_not_significant() {
        // An A/A run on a busy machine: every B run 0.2% slower, so the
        // rank test and the interval agree, yet 0.2% means nothing.
        let a = [50207.0, 50190.0, 50215.0, 50201.0, 50210.0, 50199.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.002).collect();
        let mut rows = vec![row("p50", &a, &b)];
        judge(&mut rows);
        assert!(rows[0].p_adjusted < ALPHA, "{:?}", rows[0]);
        assert!(!rows[0].significant, "{:?}", rows[0]);
        assert!(
            rows[0].verdict.contains("noise threshold"),
            "{}",
            rows[0].verdict
        );
        // 3% is outside it.
        let b: Vec<f64> = a.iter().map(|x| x * 1.03).collect();
        let mut rows = vec![row("p50", &a, &b)];
        judge(&mut rows);
        assert!(rows[0].significant, "{:?}", rows[0]);
    }

    #[test]
    fn few_repeats_are_never_significant_and_say_so() {
        let mut rows = vec![row(
            "throughput",
            &[100.0, 101.0, 99.0],
            &[200.0, 201.0, 199.0],
        )];
        judge(&mut rows);
        assert!(!rows[0].significant && !rows[0].judged);
        assert!(
            rows[0].verdict.contains("too few repeats"),
            "{}",
            rows[0].verdict
        );
        let mut one = vec![row("p50", &[100.0], &[200.0])];
        judge(&mut one);
        assert!(!one[0].significant && one[0].verdict.contains("too few repeats"));
        // Five a side can show a difference in one metric (2/252 < 5%),
        // not among eight Holm-adjusted ones (8 · 2/252 > 5%): say so.
        assert_eq!(repeats_needed(1), 4);
        assert_eq!(repeats_needed(8), 6);
        let five_a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let five_b = [200.0, 201.0, 199.0, 200.5, 199.5];
        let mut eight: Vec<Row> = (0..8).map(|_| row("p50", &five_a, &five_b)).collect();
        judge(&mut eight);
        assert!(
            eight
                .iter()
                .all(|r| !r.significant && r.verdict.contains("need 6 repeats")),
            "{:?}",
            eight[0].verdict
        );
    }

    #[test]
    fn a_row_without_a_difference_says_how_many_repeats_would_resolve_5_percent() {
        // About ±4% noise a side, 6 repeats, no real change.
        let a = [94.0, 100.0, 106.0, 97.0, 103.0, 100.0];
        let b = [95.0, 101.0, 105.0, 98.0, 104.0, 99.0];
        let mut rows = vec![row("throughput", &a, &b)];
        judge(&mut rows);
        let r = &rows[0];
        assert!(!r.significant && r.judged, "{r:?}");
        let n = r.repeats_for_5pct.expect("a spread");
        let want = repeats_to_resolve(
            r.cv_a_pct.unwrap(),
            r.cv_b_pct.unwrap(),
            ALPHA,
            POWER,
            RESOLVE_PCT,
        );
        assert_eq!(n, want);
        assert!(n > 6, "{n}");
        assert!(
            r.verdict.contains("no significant difference: +0.0%")
                && r.verdict
                    .ends_with(&format!("~{n} repeats a side would resolve a 5% change")),
            "{}",
            r.verdict
        );
        // A significant row has none.
        let c: Vec<f64> = a.iter().map(|x| x * 1.3).collect();
        let mut sig = vec![row("throughput", &a, &c)];
        judge(&mut sig);
        assert!(sig[0].significant && sig[0].repeats_for_5pct.is_none());
    }
}
