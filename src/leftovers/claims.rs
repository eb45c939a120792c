//! Claims: what a rackbench process makes at a path that does not carry
//! its PID (PostgreSQL's data directory, in the trial's directory), named
//! before it is made, so it can be found after a SIGKILL.
//!
//! A claim is a symbolic link `PID-N` in `$TMPDIR/rackbench-claims-UID`
//! (a directory of this user's, mode 700) pointing at the path: one
//! `symlink(2)` to make, one `unlink(2)` to drop, nothing half-written.
//! [`Claim`] removes its link when dropped, after its holder removed the
//! path; a link whose process is gone is a leftover (`mod.rs`). Only the
//! file names in [`CLAIMABLE`] are ever acted on, so a link pointing
//! elsewhere is never followed into a removal. A claim that cannot be
//! written costs nothing but the clean-up after a SIGKILL, so making one
//! never fails a trial.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// The file names a claim may point at, and what each is in words.
pub const CLAIMABLE: &[(&str, &str)] = &[("postgres-data", "PostgreSQL data")];

/// A path claimed by this process; dropping it drops the claim.
#[derive(Debug)]
pub struct Claim {
    link: Option<PathBuf>,
}

impl Claim {
    /// Claims `path` (made absolute) before it is made; a claim that
    /// cannot be written is an empty one.
    pub fn new(path: &Path) -> Claim {
        Claim {
            link: write(&ledger(), path),
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(link) = &self.link {
            let _ = std::fs::remove_file(link);
        }
    }
}

/// This user's claims directory.
pub fn ledger() -> PathBuf {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("rackbench-claims-{uid}"))
}

/// The link for `path` in `dir`, made (with `dir`) when `dir` is this
/// user's own; None when it cannot be.
pub(super) fn write(dir: &Path, path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let target = std::path::absolute(path).ok()?;
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    if !own_directory(dir) {
        return None;
    }
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let link = dir.join(format!("{}-{n}", std::process::id()));
        match std::os::unix::fs::symlink(&target, &link) {
            Ok(()) => return Some(link),
            // A link of an earlier process with this PID, not yet swept.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
}

/// Whether `dir` is a real directory (no link) of this user's that no one
/// else may write: only then are its claims trusted.
fn own_directory(dir: &Path) -> bool {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0)
}

/// One claim as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub pid: u32,
    /// The link itself.
    pub link: PathBuf,
    /// The claimed path.
    pub target: PathBuf,
    /// What the target is in words ([`CLAIMABLE`]); None for a name
    /// rackbench never claims, which is left alone.
    pub what: Option<&'static str>,
    /// When the claim was made (the link's own time).
    pub made: SystemTime,
}

/// Every claim in `dir` (this user's ledger when it is theirs).
pub fn read(dir: &Path) -> Vec<Found> {
    if !own_directory(dir) {
        return Vec::new();
    }
    let mut found: Vec<Found> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid = link_owner(name.to_str()?)?;
            let link = e.path();
            let meta = std::fs::symlink_metadata(&link).ok()?;
            let target = std::fs::read_link(&link).ok()?;
            let what = target
                .file_name()
                .and_then(|n| CLAIMABLE.iter().find(|(c, _)| n == *c))
                .map(|(_, w)| *w);
            Some(Found {
                pid,
                link,
                target,
                what,
                made: meta.modified().ok()?,
            })
        })
        .collect();
    found.sort_by(|a, b| a.link.cmp(&b.link));
    found
}

/// The PID in a link's name `PID-N`.
fn link_owner(name: &str) -> Option<u32> {
    let (pid, n) = name.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(n)).then_some(())?;
    n.parse::<u64>().ok()?;
    pid.parse().ok().filter(|&p| p > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_names_its_path_until_dropped_and_only_known_names_are_claimable() {
        let base = std::env::temp_dir().join(format!("rb-claims-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let dir = base.join("ledger");
        let data = base.join("trial/postgres-data");
        let link = write(&dir, &data).expect("written");
        let stray = write(&dir, &base.join("trial/logs")).expect("written");
        let found = read(&dir);
        assert_eq!(found.len(), 2, "{found:?}");
        let pg = found.iter().find(|f| f.link == link).unwrap();
        assert_eq!(pg.pid, std::process::id());
        assert_eq!(pg.target, data);
        assert_eq!(pg.what, Some("PostgreSQL data"));
        let other = found.iter().find(|f| f.link == stray).unwrap();
        assert_eq!(other.what, None, "never acted on");
        drop(Claim { link: Some(link) });
        drop(Claim { link: Some(stray) });
        assert!(read(&dir).is_empty());
        // A ledger others may write is not trusted, and not written to.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(write(&dir, &data), None);
        assert!(read(&dir).is_empty());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn only_links_named_pid_n_carry_an_owner() {
        for (name, want) in [
            ("4242-0", Some(4242)),
            ("4242-17", Some(4242)),
            ("0-1", None),
            ("4242", None),
            ("x-1", None),
            ("42-1-2", None),
            ("42-", None),
            (".tmp", None),
        ] {
            assert_eq!(link_owner(name), want, "{name}");
        }
    }
}
