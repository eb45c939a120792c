//! Writable cgroups: which version is mounted, and whether rackbench could
//! put a server in a child group with memory and CPU control (for
//! `--memory` and `--cpus`; the parsing is `budget::cgroup`'s). It tries: creates a test group beside its own and
//! removes it, whatever happened in between.

use super::Finding;
use crate::budget::cgroup::{describe, parse_mounts, parse_own, place_for, WANTED};
use std::path::{Path, PathBuf};

/// Creates `parent/rackbench-doctor-PID`, checks that a v2 child has
/// `controller`, and removes it.
fn try_child(parent: &Path, v2: bool, controller: &str) -> Result<(), String> {
    let child = parent.join(format!("rackbench-doctor-{}", std::process::id()));
    std::fs::create_dir(&child)
        .map_err(|e| format!("cannot create a group in {}: {e}", parent.display()))?;
    let passed = if v2 {
        std::fs::read_to_string(child.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_ascii_whitespace().any(|x| x == controller))
    } else {
        true
    };
    // Always removed: an empty group goes with rmdir.
    let removed = std::fs::remove_dir(&child);
    if let Err(e) = removed {
        return Err(format!(
            "created {} but cannot remove it: {e}",
            child.display()
        ));
    }
    if !passed {
        return Err(format!(
            "{} does not pass {controller} to its children",
            parent.display()
        ));
    }
    Ok(())
}

/// The finding from the version and each wanted controller's attempt.
pub(super) fn judge(version: &str, attempts: &[(&str, Result<PathBuf, String>)]) -> Finding {
    let failed: Vec<String> = attempts
        .iter()
        .filter_map(|(c, r)| r.as_ref().err().map(|e| format!("{c}: {e}")))
        .collect();
    if failed.is_empty() {
        let places: Vec<String> = attempts
            .iter()
            .filter_map(|(c, r)| r.as_ref().ok().map(|p| format!("{c} in {}", p.display())))
            .collect();
        return Finding::ok(
            "cgroups",
            format!(
                "{version}; a child group could be made ({})",
                places.join(", ")
            ),
        );
    }
    Finding::note(
        "cgroups",
        format!(
            "{version}; no child group with memory and CPU control ({}); --memory and \
             --cpus need it",
            failed.join("; ")
        ),
        crate::budget::cgroup::FIX,
    )
}

pub(super) fn finding() -> Finding {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mounts = parse_mounts(&read("/proc/mounts"));
    let own = parse_own(&read("/proc/self/cgroup"));
    let v2_controllers = mounts
        .v2
        .as_ref()
        .map(|at| read(&at.join("cgroup.controllers").to_string_lossy()))
        .unwrap_or_default();
    let attempts: Vec<(&str, Result<PathBuf, String>)> = WANTED
        .iter()
        .map(|c| {
            let r = place_for(c, &mounts, &v2_controllers, &own)
                .and_then(|(p, v2)| try_child(&p, v2, c).map(|()| p));
            (*c, r)
        })
        .collect();
    judge(&describe(&mounts, &v2_controllers), &attempts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::cgroup::Mounts;
    use crate::doctor::Status;

    const HYBRID: &str = "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n\
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0\n\
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";

    const SELF_HYBRID: &str = "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n";

    #[test]
    fn a_hybrid_machine_uses_its_v1_hierarchies_when_v2_has_no_controllers() {
        let m = parse_mounts(HYBRID);
        assert_eq!(m.v2.as_deref(), Some(Path::new("/sys/fs/cgroup/unified")));
        assert_eq!(m.v1.len(), 3);
        let own = parse_own(SELF_HYBRID);
        assert_eq!(own.0.as_deref(), Some("/"));
        assert_eq!(
            place_for("memory", &m, "", &own),
            Ok((
                PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"),
                false
            ))
        );
        assert_eq!(
            place_for("cpu", &m, "", &own),
            Ok((PathBuf::from("/sys/fs/cgroup/cpu"), false))
        );
        assert_eq!(
            describe(&m, ""),
            "v1 (cpu memory) beside v2 at /sys/fs/cgroup/unified (no controllers)"
        );
    }

    #[test]
    fn a_v2_machine_puts_the_group_beside_its_own() {
        let m = parse_mounts("cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n");
        let own = parse_own("0::/user.slice/user-1000.slice/session-3.scope\n");
        let ctl = "cpuset cpu io memory pids\n";
        assert_eq!(
            place_for("cpu", &m, ctl, &own),
            Ok((
                PathBuf::from("/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"),
                true
            ))
        );
        assert_eq!(
            describe(&m, ctl),
            "v2 at /sys/fs/cgroup (cpuset cpu io memory pids)"
        );
        assert!(place_for("memory", &m, "cpu io", &own).is_err());
        assert_eq!(
            describe(&Mounts::default(), ""),
            "no cgroup file system mounted"
        );
    }

    #[test]
    fn a_missing_controller_is_a_note_saying_which_and_how_to_get_it() {
        let ok = judge(
            "v2",
            &[("memory", Ok("/a".into())), ("cpu", Ok("/a".into()))],
        );
        assert_eq!(ok.status, Status::Ok);
        let missing = judge(
            "v2",
            &[
                ("memory", Err("no memory controller is mounted".into())),
                ("cpu", Ok("/a".into())),
            ],
        );
        assert_eq!(missing.status, Status::Note);
        assert!(
            missing.found.contains("memory: no memory controller"),
            "{missing:?}"
        );
        assert!(missing.fix.unwrap().contains("Delegate=yes"));
    }

    #[test]
    fn trying_a_group_leaves_nothing_behind() {
        // A plain directory stands in for a v1 hierarchy.
        let dir = std::env::temp_dir().join(format!("rb-doctor-cg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(try_child(&dir, false, "memory"), Ok(()));
        let v2 = try_child(&dir, true, "memory");
        assert!(v2.unwrap_err().contains("does not pass memory"));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
        assert!(
            try_child(&dir, false, "cpu").is_err(),
            "no parent: an error"
        );
    }
}
