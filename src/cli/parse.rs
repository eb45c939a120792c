//! Parsers for flag values that clap does not know: durations, CPU lists,
//! status lists. Each error names the form that would have worked.

use crate::load::ExpectStatus;
use std::time::Duration;

/// "10s", "250ms", "1.5m", "2h", "500us", or a bare number of seconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    crate::units::duration(s)
}

/// "0", "0,1", "0-3", "0-1,4".
pub fn cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("'{s}' is not a CPU list: write it like 0, 0,1 or 0-3");
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b || b >= 1024 {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    if out.iter().any(|&c| c >= 1024) {
        return Err(bad());
    }
    Ok(out)
}

/// "200", "200,204", "2xx", "2xx,3xx,404".
pub fn expect_status(s: &str) -> Result<ExpectStatus, String> {
    let bad =
        |p: &str| format!("'{p}' is not a status: write codes like 200,204 or classes like 2xx");
    let mut codes = Vec::new();
    for part in s.split(',').map(str::trim) {
        if let Some(class) = part.strip_suffix("xx") {
            let c: u16 = class.parse().map_err(|_| bad(part))?;
            if !(1..=5).contains(&c) {
                return Err(bad(part));
            }
            codes.extend(c * 100..c * 100 + 100);
        } else {
            let c: u16 = part.parse().map_err(|_| bad(part))?;
            if !(100..=599).contains(&c) {
                return Err(bad(part));
            }
            codes.push(c);
        }
    }
    Ok(ExpectStatus::Codes(codes))
}

/// "NAME=value".
pub fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("'{s}' is not NAME=value")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok: &[(&str, f64)] = &[
            ("10", 10.0),
            ("10s", 10.0),
            ("250ms", 0.25),
            ("1.5m", 90.0),
            ("2h", 7200.0),
            ("500us", 0.0005),
            ("0", 0.0),
        ];
        for &(s, secs) in ok {
            assert!(
                (duration(s).unwrap().as_secs_f64() - secs).abs() < 1e-9,
                "{s}"
            );
        }
        for s in ["", "s", "10x", "-1s", "1e999", "ten"] {
            assert!(duration(s).is_err(), "{s} should be refused");
        }
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("0").unwrap(), vec![0]);
        assert_eq!(cpu_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        for s in ["", "a", "3-1", "0-", "99999"] {
            assert!(cpu_list(s).is_err(), "{s} should be refused");
        }
    }

    #[test]
    fn status_lists() {
        let s = expect_status("2xx,404").unwrap();
        assert!(s.matches(200) && s.matches(299) && s.matches(404) && !s.matches(302));
        for bad in ["", "abc", "9xx", "600", "20"] {
            assert!(expect_status(bad).is_err(), "{bad} should be refused");
        }
    }
}
