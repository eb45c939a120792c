//! Units as people write them and read them: durations like 10s, 250ms,
//! 1.5m parsed from flags and plans; latencies, sizes and counts formatted
//! for every output (terminal, Markdown, CSV, HTML), in this one place so
//! that they read the same everywhere.

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
