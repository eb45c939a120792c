//! A judged comparison in lines: one per group pair (the primary
//! metric's verdict first, then significant changes, then what did not
//! move) and the overall line, one Holm family at a time.
//!
//! It reads judged rows only: it never judges a row (`judge` does) and
//! never computes a figure.

use super::judge::{family_size, repeats_needed, words};
use super::metrics::METRICS;
use super::row::Row;

/// One line per group pair: the primary metric's verdict first (when one
/// was named), then significant changes, then what did not move.
pub(super) fn pair_verdicts(rows: &[Row]) -> Vec<String> {
    let mut groups: Vec<&str> = Vec::new();
    for r in rows {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let rs: Vec<&Row> = rows.iter().filter(|r| r.group == g).collect();
            let mut parts: Vec<String> = rs
                .iter()
                .filter(|r| r.primary)
                .map(|r| format!("primary {}: {}", r.metric, r.verdict))
                .collect();
            let secondary: Vec<&Row> = rs.iter().copied().filter(|r| !r.primary).collect();
            let mut rest = secondary_parts(rows, &secondary);
            if !parts.is_empty() && !rest.is_empty() {
                rest[0] = format!("secondary: {}", rest[0]);
            }
            parts.append(&mut rest);
            format!("{g}: {}", parts.join("; "))
        })
        .collect()
}

/// The non-primary rows of one group in words: significant changes, then
/// the unchanged, then those the repeats cannot judge.
fn secondary_parts(rows: &[Row], rs: &[&Row]) -> Vec<String> {
    let mut parts: Vec<String> = rs
        .iter()
        .filter(|r| r.significant)
        .map(|r| r.verdict.clone())
        .collect();
    let same: Vec<String> = rs
        .iter()
        .filter(|r| !r.significant && r.judged)
        .map(|r| words(&r.metric))
        .collect();
    if !same.is_empty() {
        parts.push(format!(
            "{} unchanged (no significant difference)",
            same.join(", ")
        ));
    }
    let unknown: Vec<String> = rs
        .iter()
        .filter(|r| !r.judged)
        .map(|r| words(&r.metric))
        .collect();
    if !unknown.is_empty() {
        let (na, nb, m) = (rs[0].n_a, rs[0].n_b, family_size(rows, rs[0]));
        parts.push(format!(
            "{} cannot be judged from n={na}+{nb} repeats ({m} comparisons need {} a side)",
            unknown.join(", "),
            repeats_needed(m)
        ));
    }
    parts
}

/// The overall line: with a primary metric, its result first, then the
/// secondary rows' summary.
pub(super) fn overall(rows: &[Row]) -> String {
    let (primary, secondary): (Vec<Row>, Vec<Row>) = rows.iter().cloned().partition(|r| r.primary);
    if primary.is_empty() {
        return family_summary(rows);
    }
    let head = match primary.as_slice() {
        [one] => one.verdict.clone(),
        many => family_summary(many),
    };
    if secondary.is_empty() {
        return format!("primary {}: {head}", primary[0].metric);
    }
    format!(
        "primary {}: {head}; secondary metrics: {}",
        primary[0].metric,
        family_summary(&secondary)
    )
}

/// One Holm family's rows in one line.
fn family_summary(rows: &[Row]) -> String {
    let groups = {
        let mut g: Vec<&str> = rows.iter().map(|r| r.group.as_str()).collect();
        g.sort();
        g.dedup();
        g.len()
    };
    // "throughput (2 of 3 groups)", or just "throughput" with one group.
    // The headline metrics in table order, then those per endpoint as met.
    let mut metrics: Vec<&str> = METRICS.iter().map(|m| m.0).collect();
    for r in rows {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
    }
    let list = |direction: &str| -> Vec<String> {
        metrics
            .iter()
            .filter_map(|&metric| {
                let n = rows
                    .iter()
                    .filter(|r| r.metric == metric && r.direction == direction)
                    .count();
                (n > 0).then(|| {
                    let words = words(metric);
                    if groups > 1 {
                        format!("{words} ({n} of {groups} groups)")
                    } else {
                        words
                    }
                })
            })
            .collect()
    };
    let (better, worse) = (list("better"), list("worse"));
    let unjudged = rows.iter().filter(|r| !r.judged).count();
    let rest = rows.len() - rows.iter().filter(|r| r.significant).count();
    let tail = if unjudged > 0 {
        format!(
            "; {unjudged} of {} comparisons cannot be judged with these repeats ({} a side needed)",
            rows.len(),
            repeats_needed(rows.len())
        )
    } else {
        String::new()
    };
    if better.is_empty() && worse.is_empty() {
        return format!(
            "no significant difference in any of {} comparisons (Holm-adjusted, 5% level){tail}",
            rows.len()
        );
    }
    let mut parts = Vec::new();
    if !worse.is_empty() {
        parts.push(format!("B is worse in {}", worse.join(", ")));
    }
    if !better.is_empty() {
        let who = if worse.is_empty() {
            "B is better in"
        } else {
            "better in"
        };
        parts.push(format!("{who} {}", better.join(", ")));
    }
    format!(
        "{}; no significant difference in the other {rest} of {} comparisons{tail}",
        parts.join(", "),
        rows.len()
    )
}

#[cfg(test)]
mod tests {
    use super::super::judge::judge;
    use super::super::metrics::check_metric;
    use super::super::row::tests::row;
    use super::*;

    #[test]
    fn verdicts_read_like_seed_002() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2];
        let b: Vec<f64> = a.iter().map(|x| x * 1.12).collect();
        let p99a = [900.0, 950.0, 920.0, 980.0, 910.0, 940.0];
        let p99b = [930.0, 905.0, 960.0, 915.0, 945.0, 925.0];
        let mut rows = vec![row("throughput", &a, &b), row("p99", &p99a, &p99b)];
        judge(&mut rows);
        assert!(
            rows[0].significant && rows[0].direction == "better",
            "{rows:?}"
        );
        assert!(
            rows[0]
                .verdict
                .starts_with("B is 12% faster in throughput (95% CI"),
            "{}",
            rows[0].verdict
        );
        assert!(!rows[1].significant && rows[1].judged);
        assert!(
            rows[1]
                .verdict
                .starts_with("p99 latency unchanged (no significant difference"),
            "{}",
            rows[1].verdict
        );
        let pair = pair_verdicts(&rows);
        assert!(pair[0].contains("p99 latency unchanged"), "{pair:?}");
        assert_eq!(
            overall(&rows),
            "B is better in throughput; no significant difference in the other 1 of 2 comparisons"
        );
    }

    /// Five a side cannot show a difference among eight Holm-adjusted
    /// rows (8 · 2/252 > 5%), but a primary metric is its own family.
    #[test]
    fn a_primary_metric_is_judged_alone_and_the_rest_stay_adjusted_together() {
        let five_a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let five_b = [120.0, 121.0, 119.0, 120.5, 119.5];
        let mut rows: Vec<Row> = METRICS[..8]
            .iter()
            .map(|m| row(m.0, &five_a, &five_b))
            .collect();
        rows[0].primary = true;
        judge(&mut rows);
        assert!(rows[0].significant, "{:?}", rows[0]);
        assert!((rows[0].p_adjusted - rows[0].p_value).abs() < 1e-12);
        for r in &rows[1..] {
            assert!(!r.significant && !r.judged, "{r:?}");
            assert!(
                r.verdict.contains("7 comparisons need 6 repeats"),
                "{}",
                r.verdict
            );
        }
        let line = overall(&rows);
        assert!(
            line.starts_with("primary throughput: B is 20% faster in throughput"),
            "{line}"
        );
        assert!(
            line.contains("secondary metrics: no significant difference in any of 7"),
            "{line}"
        );
        let pair = pair_verdicts(&rows);
        assert!(
            pair[0].contains(": primary throughput: B is 20% faster"),
            "{pair:?}"
        );
        assert!(pair[0].contains("; secondary: "), "{pair:?}");
        assert!(check_metric("--metric", "p99").is_ok());
        let err = check_metric("--metric", "speed").unwrap_err();
        assert!(
            err.starts_with(
                "--metric \"speed\" is not a metric: use one of throughput, p50, p90, p99"
            ),
            "{err}"
        );
    }
}
