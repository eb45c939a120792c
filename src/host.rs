//! What rackbench takes from the machine it runs on: where its own files
//! are, a free TCP port, and the wall clock as RFC 3339. Below `server`,
//! `lab` and `plan`, which all need them; it uses none of them.

use std::net::TcpListener;
use std::path::PathBuf;

/// Where rackbench's own files are (scripts/, ruby/): `RACKBENCH_HOME`, or
/// the source tree the binary was built from. Templates see it as
/// `{{rackbench_home}}`.
pub fn rackbench_home() -> PathBuf {
    std::env::var_os("RACKBENCH_HOME")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// Binds port 0 to learn a free port. The tiny race until the server binds
/// it is caught by the start-up check, which names the port.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// UTC time as RFC 3339, without a date crate.
pub fn utc_now() -> String {
    rfc3339(unix_now())
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Unix seconds as RFC 3339 UTC, e.g. 2026-11-23T21:00:00Z.
pub fn rfc3339(secs: u64) -> String {
    format!("{}Z", civil(secs as i64))
}

/// Unix milliseconds as RFC 3339 UTC with milliseconds, e.g.
/// 2026-11-23T21:00:00.250Z.
pub fn rfc3339_millis(ms: i64) -> String {
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    format!("{}.{milli:03}Z", civil(secs))
}

/// Unix seconds as the UTC date and time, `YYYY-MM-DDTHH:MM:SS`.
fn civil(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn utc_now_is_rfc3339() {
        let t = utc_now();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
        assert!(t.as_str() > "2024-01-01", "{t}");
    }

    #[test]
    fn rfc3339_of_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_467_600), "2026-11-23T21:00:00Z");
        assert_eq!(
            rfc3339_millis(1_795_467_600_250),
            "2026-11-23T21:00:00.250Z"
        );
        // Before the epoch, the milliseconds still count forward.
        assert_eq!(rfc3339_millis(-1), "1969-12-31T23:59:59.999Z");
    }
}
