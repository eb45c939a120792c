//! What killed rackbench processes left on this machine (their control
//! groups, PostgreSQL data directories, run dirs): listed as the next
//! command that starts servers would remove them, with the commands that
//! remove them by hand. The finding is a pure function of the list;
//! `leftovers::find` reads the machine and removes nothing.

use super::Finding;
use crate::leftovers::Leftover;

/// The finding for `found`: ok when empty, else a note naming each one,
/// its maker and why that counts as gone, and whether it is in use.
pub(super) fn judge(found: &[Leftover]) -> Finding {
    if found.is_empty() {
        return Finding::ok("leftovers", "nothing left by a killed rackbench process");
    }
    let each: Vec<String> = found
        .iter()
        .map(|l| {
            let busy = l
                .busy
                .as_ref()
                .map(|b| format!("; in use: {b}"))
                .unwrap_or_default();
            format!(
                "{} (rackbench pid {}, {}{busy})",
                l.label(),
                l.pid,
                l.gone.words()
            )
        })
        .collect();
    let by_hand: Vec<String> = found.iter().map(Leftover::by_hand).collect();
    Finding::note(
        "leftovers",
        format!(
            "{} left by killed rackbench processes: {}",
            found.len(),
            each.join("; ")
        ),
        format!(
            "the next rackbench command that starts a server removes {} (what is in use once \
             it is not); or by hand: {}",
            if found.len() == 1 { "it" } else { "them" },
            by_hand.join("; ")
        ),
    )
}

pub(super) fn finding() -> Finding {
    judge(&crate::leftovers::find())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    #[test]
    fn leftovers_are_a_note_naming_each_with_its_maker_and_the_command_that_removes_it() {
        let none = judge(&[]);
        assert_eq!(none.status, Status::Ok);
        assert!(none.fix.is_none());
        let found = crate::leftovers::tests_support::samples();
        let f = judge(&found);
        assert_eq!(f.status, Status::Note);
        for part in [
            "2 left by killed rackbench processes",
            "control group rackbench-4242-0 (memory, cpu) (rackbench pid 4242, exited)",
            "PostgreSQL data /t/postgres-data (49.0 MiB) (rackbench pid 4243, its pid is now sleep's; in use: PostgreSQL pid 9 still runs on it)",
        ] {
            assert!(f.found.contains(part), "{part}\n{}", f.found);
        }
        let fix = f.fix.unwrap();
        for part in [
            "the next rackbench command that starts a server removes them",
            "rmdir /sys/fs/cgroup/memory/rackbench-4242-0 /sys/fs/cgroup/cpu/rackbench-4242-0",
            "rm -r /t/postgres-data",
        ] {
            assert!(fix.contains(part), "{part}\n{fix}");
        }
    }
}
