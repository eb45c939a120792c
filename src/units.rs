//! Units as people write them and read them: durations like 10s, 250ms,
//! 1.5m parsed from flags and plans; latencies, sizes and counts formatted
//! for every output (terminal, Markdown, CSV, HTML), and names sorted in
//! natural order, in this one place so that they read the same everywhere.

use std::time::Duration;

/// "10s", "250ms", "1.5m", "2h", "500us", or a bare number of seconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration: write it like 10s, 250ms, 1.5m or 2h"))?;
    let secs = match unit {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "'{s}' has an unknown unit '{unit}': use us, ms, s, m or h"
            ))
        }
    };
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("'{s}' is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats microseconds the way people read latencies.
pub fn fmt_us(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{:.2}s", us / 1_000_000.0)
    } else if us >= 1_000.0 {
        format!("{:.2}ms", us / 1_000.0)
    } else {
        format!("{us:.0}us")
    }
}

pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}

/// Microseconds as "250µs", "1ms", "1.5s".
pub fn fmt_us_short(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{}s", trim(us / 1_000_000.0))
    } else if us >= 1000.0 {
        format!("{}ms", trim(us / 1000.0))
    } else {
        format!("{}µs", trim(us))
    }
}

/// A count as "12k", "1.5M", "800".
pub fn fmt_count(v: f64) -> String {
    if v.abs() >= 1_000_000.0 {
        format!("{}M", trim(v / 1_000_000.0))
    } else if v.abs() >= 1000.0 {
        format!("{}k", trim(v / 1000.0))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A number without a needless ".0".
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.2}")
    }
}

/// Bytes in MiB, for charts.
pub fn mib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

/// Bytes as MiB with one decimal, no unit ("12.5"), for tables and CSV.
pub fn fmt_mib(bytes: f64) -> String {
    format!("{:.1}", mib(bytes))
}

/// Microseconds as milliseconds with two decimals, no unit ("1.25").
pub fn fmt_ms(us: f64) -> String {
    format!("{:.2}", us / 1000.0)
}

/// Strings in the order people read them: runs of digits compare as
/// numbers ("c2" before "c16", "puma-w2" before "puma-w16"), the rest
/// character by character. Strings equal but for leading zeros fall back
/// to plain order, so only equal strings compare equal. Every sorted
/// list of names or load levels in the reports uses this one comparison.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut x, mut y) = (a, b);
    loop {
        match (x.chars().next(), y.chars().next()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let (nx, rx) = split_digits(x);
                let (ny, ry) = split_digits(y);
                let (vx, vy) = (nx.trim_start_matches('0'), ny.trim_start_matches('0'));
                let by_value = vx.len().cmp(&vy.len()).then_with(|| vx.cmp(vy));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                (x, y) = (rx, ry);
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(&d);
                }
                (x, y) = (&x[c.len_utf8()..], &y[d.len_utf8()..]);
            }
        }
    }
}

/// The leading run of ASCII digits, and the rest.
fn split_digits(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s.split_at(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn natural_order_compares_digit_runs_as_numbers() {
        let cases = [
            ("c2", "c16", Less),
            ("c16", "c2", Greater),
            ("puma-w2", "puma-w16", Less),
            ("puma-w2t5", "puma-w2t16", Less),
            ("a", "b", Less),
            ("abc", "abc", Equal),
            ("abc", "abcd", Less),
            ("", "a", Less),
            ("1", "2", Less),
            ("8", "16", Less),
            ("16", "16", Equal),
            ("c007", "c7", Less), // equal values: plain order decides
            ("c007", "c8", Less),
            ("c0", "c00", Less),
            ("x10y2", "x10y10", Less),
            (
                "puma__hello__direct__c16",
                "puma__hello__direct__c2",
                Greater,
            ),
            ("thin", "puma", Greater),
            ("a1", "ab", Less), // a digit sorts before a letter, as in ASCII
            ("99999999999999999999999", "100000000000000000000000", Less),
            ("µs2", "µs10", Less),
        ];
        for (a, b, want) in cases {
            assert_eq!(natural_cmp(a, b), want, "{a:?} vs {b:?}");
            assert_eq!(natural_cmp(b, a), want.reverse(), "{b:?} vs {a:?}");
        }
        let mut v = vec!["16", "2", "1", "8", "4"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["1", "2", "4", "8", "16"]);
    }
}
