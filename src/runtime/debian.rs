//! Debian release roots: built with mmdebstrap from Debian's packages,
//! kept under the runtimes directory, reused, listed and removed.
//!
//! A root is built aside (`NAME.building-PID`) and renamed into place only
//! once complete, with a marker file written last, so an interrupted build
//! never counts as built: the next use removes the leftover and builds
//! again. mmdebstrap runs in its `unshare` mode even as root, so a build
//! killed half-way leaves no mount behind in the leftover directory.

use super::home::{runtimes_dir, RuntimeError};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A Debian release rackbench can build a root of.
#[derive(Debug, PartialEq, Eq)]
pub struct Release {
    /// The runtime's name: debian-13.
    pub name: &'static str,
    /// The suite mmdebstrap is given: trixie.
    pub suite: &'static str,
    /// Packages installed besides the essential set.
    pub packages: &'static [&'static str],
}

/// The servers every root gets (Debian 12: rackup is in ruby-rack).
const BOOKWORM: &[&str] = &[
    "ruby",
    "puma",
    "unicorn",
    "thin",
    "ruby-rack",
    "ruby-webrick",
    "libjemalloc2",
];

/// Debian 13 on: rackup has a package of its own (Rack 3).
const TRIXIE_ON: &[&str] = &[
    "ruby",
    "puma",
    "unicorn",
    "thin",
    "ruby-rack",
    "ruby-rackup",
    "ruby-webrick",
    "libjemalloc2",
];

pub const RELEASES: &[Release] = &[
    Release {
        name: "debian-12",
        suite: "bookworm",
        packages: BOOKWORM,
    },
    Release {
        name: "debian-13",
        suite: "trixie",
        packages: TRIXIE_ON,
    },
    Release {
        name: "debian-unstable",
        suite: "sid",
        packages: TRIXIE_ON,
    },
];

/// The mirror roots are built from: `RACKBENCH_DEBIAN_MIRROR`, or Debian's.
pub fn mirror() -> String {
    std::env::var("RACKBENCH_DEBIAN_MIRROR")
        .unwrap_or_else(|_| "http://deb.debian.org/debian".into())
}

pub fn release(name: &str) -> Option<&'static Release> {
    RELEASES.iter().find(|r| r.name == name)
}

/// The Debian package that gives a server executable.
pub fn package_of(exe: &str) -> &str {
    match exe {
        "rackup" => "ruby-rackup (Debian 13 on) or ruby-rack",
        "passenger" | "passenger-config" => "passenger",
        "puma" | "pumactl" => "puma",
        "unicorn" => "unicorn",
        "thin" => "thin",
        "bundle" => "ruby-bundler",
        "ruby" => "ruby",
        other => other,
    }
}

/// The gem that gives a server executable.
pub fn gem_of(exe: &str) -> &str {
    match exe {
        "passenger-config" => "passenger",
        "pumactl" => "puma",
        "bundle" => "bundler",
        other => other,
    }
}

/// The file whose presence makes a root built; written last.
const MARKER: &str = ".rackbench-runtime";

/// The root of `release`, if it has been built completely.
pub fn built(release: &Release) -> Option<PathBuf> {
    let dir = runtimes_dir().join(release.name);
    dir.join(MARKER).is_file().then_some(dir)
}

/// What the marker file says of a built root.
pub fn marker(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(MARKER)).ok()
}

/// Builds the root of `release` with `extra` packages (e.g. passenger),
/// unless it is built already; returns its directory.
pub fn build(release: &Release, extra: &[String]) -> Result<PathBuf, RuntimeError> {
    let fail = |why: String| RuntimeError::Build {
        name: release.name.into(),
        why,
    };
    if crate::server::spec::which("mmdebstrap").is_none() {
        return Err(fail(
            "mmdebstrap is not installed: apt-get install mmdebstrap".into(),
        ));
    }
    let base = runtimes_dir();
    std::fs::create_dir_all(&base).map_err(|e| fail(format!("{}: {e}", base.display())))?;
    // One build of a release at a time: a second caller waits, then finds
    // the root built.
    let _lock = Lock::take(&base.join(format!(".{}.lock", release.name)))
        .map_err(|e| fail(format!("locking {}: {e}", base.display())))?;
    if let Some(dir) = built(release) {
        return Ok(dir);
    }
    remove_leftovers(&base, release.name).map_err(fail)?;
    let final_dir = base.join(release.name);
    let tmp = base.join(format!("{}.building-{}", release.name, std::process::id()));
    let result = build_into(release, extra, &tmp);
    if let Err(why) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(fail(why));
    }
    if final_dir.exists() {
        // An unmarked directory (older layout, or a copy): replaced.
        std::fs::remove_dir_all(&final_dir)
            .map_err(|e| fail(format!("removing {}: {e}", final_dir.display())))?;
    }
    std::fs::rename(&tmp, &final_dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&tmp);
        fail(format!("renaming into {}: {e}", final_dir.display()))
    })?;
    Ok(final_dir)
}

/// mmdebstrap into `tmp`, then the files the server needs from the host
/// (/etc/hosts), then the marker.
fn build_into(release: &Release, extra: &[String], tmp: &Path) -> Result<(), String> {
    let mut packages: Vec<String> = release.packages.iter().map(|p| p.to_string()).collect();
    packages.extend(extra.iter().cloned());
    // Passenger's spawner runs `ps`, which the essential set lacks.
    if packages.iter().any(|p| p == "passenger") && !packages.iter().any(|p| p == "procps") {
        packages.push("procps".into());
    }
    // Beside the roots, not in the one being built: kept when it fails.
    let log = tmp.with_file_name(format!("{}.build.log", release.name));
    let log_file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let status = Command::new("mmdebstrap")
        .args(["--mode=unshare", "--variant=essential"])
        // Unstable's Release file expires within days (Valid-Until), and a
        // mirror that is a snapshot serves it expired: the signature is
        // still checked, only the date is not.
        .arg("--aptopt=Acquire::Check-Valid-Until \"false\"")
        .arg(format!("--include={}", packages.join(",")))
        .arg(release.suite)
        .arg(tmp)
        .arg(mirror())
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().map_err(|e| e.to_string())?)
        .stderr(log_file)
        .status()
        .map_err(|e| format!("cannot run mmdebstrap: {e}"))?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "{} (log: {})",
            why_failed(&text, &mirror()),
            log.display()
        ));
    }
    let _ = std::fs::remove_file(&log);
    // The root's /etc replaces the host's for the server: it must still
    // resolve localhost the host's way.
    if let Ok(hosts) = std::fs::read("/etc/hosts") {
        std::fs::write(tmp.join("etc/hosts"), hosts).map_err(|e| e.to_string())?;
    }
    let marker = format!(
        "release = \"{}\"\nsuite = \"{}\"\nmirror = \"{}\"\npackages = [{}]\nbuilt_at = \"{}\"\n",
        release.name,
        release.suite,
        mirror(),
        packages
            .iter()
            .map(|p| format!("\"{p}\""))
            .collect::<Vec<_>>()
            .join(", "),
        crate::host::utc_now()
    );
    std::fs::write(tmp.join(MARKER), marker).map_err(|e| e.to_string())
}

/// mmdebstrap's log in one line: its first error, and the likely fix.
fn why_failed(log: &str, mirror: &str) -> String {
    let err = log
        .lines()
        .find(|l| l.starts_with("E:"))
        .or_else(|| log.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("no output")
        .trim();
    let unreachable = [
        "Could not resolve",
        "Could not connect",
        "Failed to fetch",
        "Unable to connect",
        "Temporary failure",
    ]
    .iter()
    .any(|p| log.contains(p));
    if unreachable {
        format!("the package mirror {mirror} is not reachable ({err}); check the network or set RACKBENCH_DEBIAN_MIRROR to a mirror that is")
    } else {
        format!("mmdebstrap failed: {err}")
    }
}

/// Removes `NAME.building-PID` directories whose builder is gone.
fn remove_leftovers(base: &Path, name: &str) -> Result<(), String> {
    let prefix = format!("{name}.building-");
    for e in std::fs::read_dir(base)
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let file = e.file_name().to_string_lossy().to_string();
        let Some(pid) = file.strip_prefix(&prefix) else {
            continue;
        };
        let alive = pid
            .trim_end_matches(".log")
            .parse::<u32>()
            .is_ok_and(crate::server::supervisor::is_alive);
        if !alive {
            let p = e.path();
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
        }
    }
    Ok(())
}

/// Removes a built root (and any leftover of an interrupted build).
pub fn remove(release: &Release) -> Result<bool, RuntimeError> {
    let base = runtimes_dir();
    let dir = base.join(release.name);
    let existed = dir.exists();
    if existed {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| RuntimeError::Io(format!("removing {}: {e}", dir.display())))?;
    }
    if base.is_dir() {
        remove_leftovers(&base, release.name).map_err(RuntimeError::Io)?;
    }
    Ok(existed)
}

/// An exclusive lock on a file, released when dropped (the descriptor's
/// close releases it).
struct Lock {
    _file: std::fs::File,
}

impl Lock {
    fn take(path: &Path) -> std::io::Result<Lock> {
        use std::os::fd::AsRawFd;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Lock { _file: f })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_mirror_is_said_in_one_line_with_the_fix() {
        let log = "I: running apt-get update...\nW: Failed to fetch http://deb.debian.org/debian/dists/trixie/InRelease  Could not resolve 'deb.debian.org'\nE: apt-get update -oAPT::Status-Fd=<$fd> -oDpkg::Use-Pty=false failed\n";
        let why = why_failed(log, "http://deb.debian.org/debian");
        assert!(!why.contains('\n'), "{why}");
        assert!(why.contains("not reachable"), "{why}");
        assert!(why.contains("RACKBENCH_DEBIAN_MIRROR"), "{why}");
    }

    #[test]
    fn a_package_that_does_not_exist_is_mmdebstraps_own_error() {
        let log = "E: Unable to locate package ruby-nonesuch\n";
        assert_eq!(
            why_failed(log, "m"),
            "mmdebstrap failed: E: Unable to locate package ruby-nonesuch"
        );
    }

    #[test]
    fn every_release_installs_ruby_and_the_servers_rackbench_runs() {
        for r in RELEASES {
            for p in ["ruby", "puma", "unicorn", "thin", "libjemalloc2"] {
                assert!(r.packages.contains(&p), "{} lacks {p}", r.name);
            }
        }
    }
}
