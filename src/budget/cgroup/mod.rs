//! The kernel side of a budget: which cgroup version this machine offers
//! with memory and CPU control ([`choose`], from `/proc/mounts`,
//! `/proc/self/cgroup` and v2's `cgroup.controllers`), and one trial's group
//! ([`Group`]): made under rackbench's own group in each hierarchy, limited,
//! joined by the server between fork and exec (through the files
//! [`Group::join_files`] names), read, and removed when dropped, after its
//! processes are gone (killed if any is left).
//!
//! v2 is used when rackbench's own group passes both the memory and the
//! cpu controller to a child; else v1 with both controllers mounted; else
//! an error naming what is missing and how to get it. Never writes to a
//! group it did not make, except to enable v2 controllers in its own
//! group's `cgroup.subtree_control`. `doctor` reads the machine with the
//! same parsing. A group's name carries its maker's PID
//! ([`group_name`], read back by [`group_owner`]) and [`group_parents`]
//! says where they are made, so `leftovers` can find the groups of a
//! rackbench process killed before its drop ran.
//!
//! This file chooses and names; the group itself is in group.rs beside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod group;

pub use group::{field, join_self, Group};

/// The controllers a budget needs.
pub const WANTED: &[&str] = &["memory", "cpu"];

/// The start of every trial group's name: `rackbench-PID-N`.
pub const GROUP_PREFIX: &str = "rackbench-";

/// A trial group's name: `rackbench-PID-N`, N counting the groups process
/// `pid` made.
pub fn group_name(pid: u32, n: u64) -> String {
    format!("{GROUP_PREFIX}{pid}-{n}")
}

/// The PID in a name [`group_name`] makes; None for any other name
/// (doctor's `rackbench-doctor-PID`, the tests' `rackbench-test-v1-PID`,
/// anything not made by rackbench).
pub fn group_owner(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix(GROUP_PREFIX)?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    n.parse::<u64>().ok()?;
    pid.parse().ok().filter(|&p| p > 0)
}

/// Every directory a trial group may be made in here, with its hierarchy
/// in words ("v2", "memory", "cpu"): this process's own v2 group when
/// cgroup2 is mounted, and its own group in each v1 hierarchy with the
/// memory or the cpu controller. [`choose`] picks one of them; a group
/// made by a process that chose otherwise is still found.
pub fn group_parents(
    mounts: &Mounts,
    own: &(Option<String>, BTreeMap<String, String>),
) -> Vec<(PathBuf, String)> {
    let mut found: Vec<(PathBuf, String)> = Vec::new();
    if let (Some(at), Some(rel)) = (&mounts.v2, &own.0) {
        found.push((join(at, rel), "v2".into()));
    }
    for c in WANTED {
        for (at, ctl) in &mounts.v1 {
            if ctl.iter().any(|x| x == c) {
                let dir = join(at, own.1.get(*c).map_or("/", String::as_str));
                if !found.iter().any(|(d, _)| *d == dir) {
                    found.push((dir, ctl.join(",")));
                }
            }
        }
    }
    found
}

/// [`group_parents`] of this machine, read from /proc.
pub fn group_parents_here() -> Vec<(PathBuf, String)> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    group_parents(
        &parse_mounts(&read("/proc/mounts")),
        &parse_own(&read("/proc/self/cgroup")),
    )
}

/// The processes in the group at `dir` (its `cgroup.procs`).
pub fn group_processes(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// cgroup v1 controllers, to tell them from mount options.
pub const V1_CONTROLLERS: &[&str] = &[
    "cpu",
    "cpuacct",
    "cpuset",
    "memory",
    "devices",
    "freezer",
    "net_cls",
    "net_prio",
    "blkio",
    "perf_event",
    "hugetlb",
    "pids",
    "rdma",
    "misc",
];

/// The cgroup file systems of `/proc/mounts`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Mounts {
    /// The cgroup2 mount point (the one at /sys/fs/cgroup if several).
    pub v2: Option<PathBuf>,
    /// Each v1 hierarchy: mount point and its controllers.
    pub v1: Vec<(PathBuf, Vec<String>)>,
}

pub fn parse_mounts(text: &str) -> Mounts {
    let mut m = Mounts::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        let [_, at, kind, options, ..] = f[..] else {
            continue;
        };
        match kind {
            "cgroup2" if m.v2.is_none() || at == "/sys/fs/cgroup" => m.v2 = Some(at.into()),
            "cgroup" => {
                let ctl = options
                    .split(',')
                    .filter(|o| V1_CONTROLLERS.contains(o))
                    .map(str::to_string)
                    .collect();
                m.v1.push((at.into(), ctl));
            }
            _ => {}
        }
    }
    m
}

/// This process's groups from `/proc/self/cgroup`: the v2 path, and each
/// v1 controller's path.
pub fn parse_own(text: &str) -> (Option<String>, BTreeMap<String, String>) {
    let mut v2 = None;
    let mut v1 = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.splitn(3, ':');
        let (Some(_), Some(ctl), Some(path)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if ctl.is_empty() {
            v2 = Some(path.to_string());
        } else {
            for c in ctl.split(',') {
                v1.insert(c.to_string(), path.to_string());
            }
        }
    }
    (v2, v1)
}

/// Where a child group with `controller` would go, and whether the
/// hierarchy is v2; Err says why there is no such place.
pub fn place_for(
    controller: &str,
    mounts: &Mounts,
    v2_controllers: &str,
    own: &(Option<String>, BTreeMap<String, String>),
) -> Result<(PathBuf, bool), String> {
    let join = |at: &Path, rel: &str| match rel.trim_matches('/') {
        "" => at.to_path_buf(),
        rel => at.join(rel),
    };
    if let (Some(at), Some(rel)) = (&mounts.v2, &own.0) {
        if v2_controllers
            .split_ascii_whitespace()
            .any(|c| c == controller)
        {
            return Ok((join(at, rel), true));
        }
    }
    for (at, ctl) in &mounts.v1 {
        if ctl.iter().any(|c| c == controller) {
            let rel = own.1.get(controller).map_or("/", String::as_str);
            return Ok((join(at, rel), false));
        }
    }
    Err(format!("no {controller} controller is mounted"))
}

/// The version in words: "v2 at /sys/fs/cgroup (cpu memory io)".
pub fn describe(mounts: &Mounts, v2_controllers: &str) -> String {
    let v2 = mounts.v2.as_ref().map(|at| {
        let ctl = v2_controllers.trim();
        format!(
            "v2 at {} ({})",
            at.display(),
            if ctl.is_empty() {
                "no controllers"
            } else {
                ctl
            }
        )
    });
    let v1: Vec<String> = mounts
        .v1
        .iter()
        .filter(|(_, c)| !c.is_empty())
        .map(|(_, c)| c.join(","))
        .collect();
    match (v2, v1.is_empty()) {
        (None, true) => "no cgroup file system mounted".into(),
        (Some(v2), true) => v2,
        (None, false) => format!("v1 ({})", v1.join(" ")),
        (Some(v2), false) => format!("v1 ({}) beside {v2}", v1.join(" ")),
    }
}

/// How to get a group with memory and CPU control; the tail of every
/// "cannot make a group" message and of doctor's note.
pub const FIX: &str =
    "run rackbench as root, or in a delegated group: `systemd-run --user --scope -p \
     Delegate=yes rackbench ...`; on v2 the parent must list the controllers in \
     cgroup.subtree_control (`echo +memory +cpu > PARENT/cgroup.subtree_control`); a \
     container needs its cgroup mounted read-write";

/// The cgroup version a group is made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn name(self) -> &'static str {
        match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        }
    }
}

/// Where a trial's group goes: the parents to make it in, for memory and
/// for cpu (one directory on v2, or when v1 mounts both together).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub version: Version,
    pub memory_parent: PathBuf,
    pub cpu_parent: PathBuf,
}

/// v2 when `own_v2_controllers` (rackbench's own v2 group's
/// `cgroup.controllers`) has memory and cpu; else v1 with both mounted;
/// else why neither, in one line that names the fix.
pub fn choose(
    mounts: &Mounts,
    own: &(Option<String>, BTreeMap<String, String>),
    own_v2_controllers: &str,
) -> Result<Place, String> {
    let has = |c: &str| own_v2_controllers.split_ascii_whitespace().any(|x| x == c);
    if let (Some(at), Some(rel)) = (&mounts.v2, &own.0) {
        if WANTED.iter().all(|c| has(c)) {
            let dir = join(at, rel);
            return Ok(Place {
                version: Version::V2,
                memory_parent: dir.clone(),
                cpu_parent: dir,
            });
        }
    }
    let v1_dir = |controller: &str| {
        mounts
            .v1
            .iter()
            .find(|(_, ctl)| ctl.iter().any(|c| c == controller))
            .map(|(at, _)| join(at, own.1.get(controller).map_or("/", String::as_str)))
    };
    match (v1_dir("memory"), v1_dir("cpu")) {
        (Some(memory_parent), Some(cpu_parent)) => Ok(Place {
            version: Version::V1,
            memory_parent,
            cpu_parent,
        }),
        (m, c) => {
            let missing: Vec<&str> = [("memory", m.is_none()), ("cpu", c.is_none())]
                .iter()
                .filter(|(_, gone)| *gone)
                .map(|(n, _)| *n)
                .collect();
            let v2 = match &mounts.v2 {
                Some(at) => format!(
                    "cgroup v2 at {} gives this process's group {}",
                    at.display(),
                    if own_v2_controllers.trim().is_empty() {
                        "no controllers".to_string()
                    } else {
                        format!("only '{}'", own_v2_controllers.trim())
                    }
                ),
                None => "no cgroup v2 is mounted".to_string(),
            };
            Err(format!(
                "no control group with memory and CPU limits here ({v2}, and cgroup v1 has no {} controller): {FIX}",
                missing.join(" or ")
            ))
        }
    }
}

fn join(at: &Path, rel: &str) -> PathBuf {
    match rel.trim_matches('/') {
        "" => at.to_path_buf(),
        rel => at.join(rel),
    }
}

/// This machine's place for a group, read from /proc.
pub fn place_here() -> Result<Place, String> {
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let mounts = parse_mounts(&read(Path::new("/proc/mounts")));
    let own = parse_own(&read(Path::new("/proc/self/cgroup")));
    let ctl = match (&mounts.v2, &own.0) {
        (Some(at), Some(rel)) => read(&join(at, rel).join("cgroup.controllers")),
        _ => String::new(),
    };
    choose(&mounts, &own, &ctl)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n\
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0\n\
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
    const SELF_HYBRID: &str = "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n";
    const V2: &str = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n";
    const SELF_V2: &str = "0::/user.slice/u.scope\n";
    const V1_COMOUNTED: &str = "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n\
cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n";

    #[test]
    fn v2_is_chosen_when_it_passes_memory_and_cpu_else_v1_else_an_error_with_the_fix() {
        // (mounts, /proc/self/cgroup, own v2 cgroup.controllers, want)
        /// (version, memory parent, cpu parent), or a part of the error.
        type Want = Result<(&'static str, &'static str, &'static str), &'static str>;
        let rows: &[(&str, &str, &str, Want)] = &[
            (
                HYBRID,
                SELF_HYBRID,
                "",
                Ok((
                    "v1",
                    "/sys/fs/cgroup/memory/process_api/abc",
                    "/sys/fs/cgroup/cpu",
                )),
            ),
            (
                HYBRID,
                SELF_HYBRID,
                "cpu memory",
                Ok(("v2", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified")),
            ),
            (
                V2,
                SELF_V2,
                "cpuset cpu io memory pids",
                Ok((
                    "v2",
                    "/sys/fs/cgroup/user.slice/u.scope",
                    "/sys/fs/cgroup/user.slice/u.scope",
                )),
            ),
            (V2, SELF_V2, "cpu io", Err("only 'cpu io'")),
            (V2, SELF_V2, "", Err("no controllers")),
            ("", "", "", Err("no cgroup v2 is mounted")),
            (
                V1_COMOUNTED,
                "2:cpu,cpuacct:/a\n1:memory:/b\n",
                "",
                Ok((
                    "v1",
                    "/sys/fs/cgroup/memory/b",
                    "/sys/fs/cgroup/cpu,cpuacct/a",
                )),
            ),
            (
                "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n",
                "1:cpu:/\n",
                "",
                Err("no memory controller"),
            ),
        ];
        for (mounts, own, ctl, want) in rows {
            let got = choose(&parse_mounts(mounts), &parse_own(own), ctl);
            match (want, got) {
                (Ok((v, m, c)), Ok(p)) => {
                    assert_eq!(p.version.name(), *v, "{mounts}");
                    assert_eq!(p.memory_parent, Path::new(m));
                    assert_eq!(p.cpu_parent, Path::new(c));
                }
                (Err(part), Err(e)) => {
                    assert!(e.contains(part), "{e}");
                    assert!(e.contains("Delegate=yes"), "{e}");
                }
                (want, got) => panic!("{mounts}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn only_names_rackbench_pid_n_carry_an_owner() {
        // (name, the PID it carries)
        let rows: &[(&str, Option<u32>)] = &[
            ("rackbench-4242-0", Some(4242)),
            ("rackbench-1-17", Some(1)),
            ("rackbench-doctor-4242", None),
            ("rackbench-test-v1-4242", None),
            ("rackbench-4242", None),
            ("rackbench-4242-", None),
            ("rackbench--0", None),
            ("rackbench-0-0", None),
            ("rackbench-+42-0", None),
            ("rackbench-42-0x", None),
            ("rackbench-42-0-1", None),
            ("rackbench-99999999999-0", None),
            ("rb-4242-0", None),
            ("xrackbench-4242-0", None),
        ];
        for (name, want) in rows {
            assert_eq!(group_owner(name), *want, "{name}");
        }
        assert_eq!(group_owner(&group_name(31337, 2)), Some(31337));
    }

    #[test]
    fn groups_are_looked_for_in_the_own_group_of_every_hierarchy_with_memory_or_cpu() {
        /// (mounts, /proc/self/cgroup, want: each (dir, hierarchy))
        type Row<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
        let rows: &[Row] = &[
            (
                HYBRID,
                SELF_HYBRID,
                &[
                    ("/sys/fs/cgroup/unified", "v2"),
                    ("/sys/fs/cgroup/memory/process_api/abc", "memory"),
                    ("/sys/fs/cgroup/cpu", "cpu"),
                ],
            ),
            (V2, SELF_V2, &[("/sys/fs/cgroup/user.slice/u.scope", "v2")]),
            (
                V1_COMOUNTED,
                "2:cpu,cpuacct:/a\n1:memory:/b\n",
                &[
                    ("/sys/fs/cgroup/memory/b", "memory"),
                    ("/sys/fs/cgroup/cpu,cpuacct/a", "cpu,cpuacct"),
                ],
            ),
            (
                "cgroup /sys/fs/cgroup/mc cgroup rw,memory,cpu 0 0\n",
                "1:memory,cpu:/x\n",
                &[("/sys/fs/cgroup/mc/x", "memory,cpu")],
            ),
            ("", "", &[]),
        ];
        for (mounts, own, want) in rows {
            let got = group_parents(&parse_mounts(mounts), &parse_own(own));
            let got: Vec<(String, &str)> = got
                .iter()
                .map(|(d, h)| (d.display().to_string(), h.as_str()))
                .collect();
            let want: Vec<(String, &str)> = want.iter().map(|(d, h)| (d.to_string(), *h)).collect();
            assert_eq!(got, want, "{mounts}");
        }
    }
}
