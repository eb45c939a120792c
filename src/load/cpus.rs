//! CPU pinning for the load threads and the servers: which CPUs this
//! process may use, a check of a user's list against them, and the pin.
//!
//! A pin that cannot be made is an error that names the CPUs to use, never
//! a run that goes on unpinned: on a two-core lab box an unpinned generator
//! competes with the server it measures, and the figures would say nothing
//! about it. This module never reads flags; callers pass the flag's name
//! for the message.

use std::io;

/// The CPUs the calling thread may run on (its affinity mask, which also
/// reflects a cgroup's cpuset), ascending; on any thread but a pinned load
/// thread, the process's. Empty if the kernel will not say.
pub fn allowed() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity(0) fills it for
    // this thread, and CPU_ISSET reads within its CPU_SETSIZE bits.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// A CPU list as a user writes it: "0-3", "0,2-3", "5".
pub fn format_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Checks `cpus` (given with `flag`) against `allowed`: every CPU must be
/// one of them. The error is one line naming the CPUs to use instead.
pub fn check_against(cpus: &[usize], allowed: &[usize], flag: &str) -> Result<(), String> {
    let missing: Vec<usize> = cpus
        .iter()
        .copied()
        .filter(|c| !allowed.contains(c))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let what = if missing.len() == 1 {
        format!("CPU {} does not exist here", missing[0])
    } else {
        format!("CPUs {} do not exist here", format_list(&missing))
    };
    let Some(&last) = allowed.last() else {
        return Err(format!(
            "{flag}: {what} (the kernel does not say which CPUs this process may use): leave {flag} out"
        ));
    };
    Err(format!(
        "{flag}: {what} (rackbench may use CPUs {}): use CPUs from that list, e.g. {flag} {last}",
        format_list(allowed)
    ))
}

/// [`check_against`] the CPUs this process may use.
pub fn check(cpus: &[usize], flag: &str) -> Result<(), String> {
    check_against(cpus, &allowed(), flag)
}

/// Pins the calling thread to `cpus` (all of them; none is a no-op).
/// Call [`check`] first: the error here is the kernel's alone.
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    if let Some(&c) = cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {c} is beyond what the kernel can pin to"),
        ));
    }
    // SAFETY: cpu_set_t is plain data, every CPU is below CPU_SETSIZE;
    // sched_setaffinity(0) is this thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_written_as_ranges() {
        let cases: &[(&[usize], &str)] = &[
            (&[], ""),
            (&[3], "3"),
            (&[0, 1], "0-1"),
            (&[0, 1, 2, 3], "0-3"),
            (&[5, 0, 2, 3], "0,2-3,5"),
            (&[1, 1, 2], "1-2"),
        ];
        for &(cpus, want) in cases {
            assert_eq!(format_list(cpus), want, "{cpus:?}");
        }
    }

    #[test]
    fn a_cpu_the_machine_lacks_is_an_error_naming_the_cpus_to_use() {
        let two = [0, 1];
        assert!(check_against(&[0], &two, "--load-cpus").is_ok());
        assert!(check_against(&[0, 1], &two, "--load-cpus").is_ok());
        assert!(check_against(&[], &two, "--load-cpus").is_ok());
        let e = check_against(&[7], &two, "--load-cpus").unwrap_err();
        assert_eq!(
            e,
            "--load-cpus: CPU 7 does not exist here (rackbench may use CPUs 0-1): \
             use CPUs from that list, e.g. --load-cpus 1"
        );
        let e = check_against(&[1, 2, 3], &two, "--server-cpus").unwrap_err();
        assert!(
            e.starts_with("--server-cpus: CPUs 2-3 do not exist here"),
            "{e}"
        );
        // A cpuset that leaves out CPU 0.
        let e = check_against(&[0], &[2, 3], "--load-cpus").unwrap_err();
        assert!(e.contains("CPUs 2-3") && e.contains("--load-cpus 3"), "{e}");
        let e = check_against(&[0], &[], "--load-cpus").unwrap_err();
        assert!(e.contains("leave --load-cpus out"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn this_process_may_use_some_cpu_and_can_pin_to_it() {
        let cpus = allowed();
        assert!(!cpus.is_empty());
        assert!(check(&cpus, "--load-cpus").is_ok());
        // On a thread of its own, so the test runner's threads keep theirs.
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(&[last]).unwrap();
            assert_eq!(allowed(), vec![last]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pinning_to_a_cpu_beyond_the_kernel_is_an_error_not_a_no_op() {
        std::thread::spawn(|| {
            assert!(pin_current_thread(&[libc::CPU_SETSIZE as usize]).is_err());
            // Within the set's size but not a CPU here: the kernel refuses
            // (no machine this runs on has 1023 CPUs).
            assert!(pin_current_thread(&[1023]).is_err());
        })
        .join()
        .unwrap();
    }
}
