//! What a rackbench process killed before its drops ran (SIGKILL, the OOM
//! killer, a closed terminal's hard kill) leaves behind, found and
//! removed by the next one: its budget's control groups (`rackbench-PID-N`
//! in the memory and cpu hierarchies, v1 or v2), PostgreSQL's data
//! directory (named in a claim before it was made: `claims.rs`) and the
//! trial's short run dir (`$TMPDIR/rb-PID-N`, `lab::prepare`'s). A process
//! that ends any other way removes its own, by drop.
//!
//! [`find`] lists them and [`sweep`] removes them; the first trial a
//! command prepares sweeps once and says so in one line ([`sweep_once`]),
//! and `doctor` lists what that sweep would remove. Ownership is certain
//! before anything goes: a name rackbench makes, carrying its maker's PID
//! (in the name, or in the claim's), owned by this user, whose maker is
//! gone (`owner.rs`). What is still in use is left and said to be: a group
//! that holds processes, a data directory a postgres still runs on, a
//! path a living rackbench claims. It never kills a process and never
//! removes a name it does not make; without a readable /proc it finds
//! nothing.

pub mod claims;
pub mod owner;

pub use claims::Claim;
pub use owner::Gone;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What a leftover is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A budget's control group: one directory per hierarchy.
    ControlGroup,
    /// A claimed path: PostgreSQL's data directory.
    Claimed,
    /// A trial's short run dir for sockets.
    RunDir,
}

/// One thing a gone rackbench process left.
#[derive(Debug, Clone, PartialEq)]
pub struct Leftover {
    pub kind: Kind,
    /// In words: "control group rackbench-4242-0 (memory, cpu)",
    /// "PostgreSQL data /tmp/t/postgres-data", "run dir /tmp/rb-4242-0".
    pub what: String,
    /// Its directories: a group's one per hierarchy, else one.
    pub paths: Vec<PathBuf>,
    /// The process that made it, and why it counts as gone.
    pub pid: u32,
    pub gone: Gone,
    /// Its size on disk; None for a control group.
    pub bytes: Option<u64>,
    /// Why it cannot be removed now (it is in use); None when it can.
    pub busy: Option<String>,
    /// The claim that named it, removed with it.
    claim: Option<PathBuf>,
}

impl Leftover {
    /// "PostgreSQL data /x/postgres-data (48.9 MiB)": its words and size.
    pub fn label(&self) -> String {
        match self.bytes {
            Some(b) if self.kind == Kind::Claimed => {
                format!("{} ({})", self.what, crate::units::fmt_bytes(b))
            }
            _ => self.what.clone(),
        }
    }

    /// The shell command that removes it by hand.
    pub fn by_hand(&self) -> String {
        let verb = match self.kind {
            Kind::ControlGroup => "rmdir",
            Kind::Claimed | Kind::RunDir => "rm -r",
        };
        let paths: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        format!("{verb} {}", paths.join(" "))
    }
}

/// Everything gone rackbench processes left here, in the order a sweep
/// removes them (claimed paths before the run dirs that may hold them).
pub fn find() -> Vec<Leftover> {
    if !owner::proc_readable() {
        return Vec::new();
    }
    let mut found = groups(&crate::budget::cgroup::group_parents_here());
    found.extend(claimed(&claims::ledger()));
    found.extend(run_dirs(&std::env::temp_dir()));
    found
}

/// The user's id, which owns whatever this process may judge.
fn uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// The gone processes' groups in `parents` (directory, hierarchy): one
/// leftover per name, with a directory per hierarchy.
fn groups(parents: &[(PathBuf, String)]) -> Vec<Leftover> {
    // name → (its leftover, the hierarchies it is in)
    let mut found: Vec<(String, Leftover, Vec<&str>)> = Vec::new();
    for (parent, hierarchy) in parents {
        for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = crate::budget::cgroup::group_owner(&name) else {
                continue;
            };
            let Some(gone) = judge_dir(&e.path(), pid) else {
                continue;
            };
            let procs = crate::budget::cgroup::group_processes(&e.path());
            let busy = (!procs.is_empty()).then(|| {
                let list: Vec<String> = procs.iter().map(i32::to_string).collect();
                format!("it still holds processes {}", list.join(", "))
            });
            let at = match found.iter().position(|(n, _, _)| *n == name) {
                Some(i) => i,
                None => {
                    let l = Leftover {
                        kind: Kind::ControlGroup,
                        what: String::new(),
                        paths: Vec::new(),
                        pid,
                        gone,
                        bytes: None,
                        busy: None,
                        claim: None,
                    };
                    found.push((name.clone(), l, Vec::new()));
                    found.len() - 1
                }
            };
            let (_, l, hierarchies) = &mut found[at];
            l.paths.push(e.path());
            l.busy = l.busy.take().or(busy);
            hierarchies.push(hierarchy);
        }
    }
    found
        .into_iter()
        .map(|(name, mut l, hierarchies)| {
            l.what = format!("control group {name} ({})", hierarchies.join(", "));
            l
        })
        .collect()
}

/// Whether the directory at `path`, named after process `pid`, is this
/// user's and its maker gone.
fn judge_dir(path: &Path, pid: u32) -> Option<Gone> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_dir() || meta.uid() != uid() {
        return None;
    }
    owner::gone(pid, meta.modified().ok()?)
}

/// The gone processes' claimed paths in the ledger `dir`; a claim whose
/// path is not there (killed before it was made, or removed since) names
/// nothing left ([`prune`] drops it).
fn claimed(dir: &Path) -> Vec<Leftover> {
    let all = claims::read(dir);
    let mut found = Vec::new();
    for c in &all {
        let Some(what) = c.what else { continue };
        let Some(gone) = owner::gone(c.pid, c.made) else {
            continue;
        };
        if !std::fs::symlink_metadata(&c.target).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let claimed_by_living = all
            .iter()
            .find(|o| o.target == c.target && owner::gone(o.pid, o.made).is_none());
        let busy = match claimed_by_living {
            Some(o) => Some(format!("rackbench pid {} uses it now", o.pid)),
            None => postgres_running_on(&c.target),
        };
        found.push(Leftover {
            kind: Kind::Claimed,
            what: format!("{what} {}", c.target.display()),
            paths: vec![c.target.clone()],
            pid: c.pid,
            gone,
            bytes: Some(disk_bytes(&c.target)),
            busy,
            claim: Some(c.link.clone()),
        });
    }
    found
}

/// Drops the claims in the ledger `dir` of gone processes whose paths
/// are not there: nothing is left of them but the claim.
fn prune(dir: &Path) {
    for c in claims::read(dir) {
        let there = std::fs::symlink_metadata(&c.target).is_ok();
        if !there && owner::gone(c.pid, c.made).is_some() {
            let _ = std::fs::remove_file(&c.link);
        }
    }
}

/// The gone processes' run dirs (`rb-PID-N`, this user's) in `tmp`.
fn run_dirs(tmp: &Path) -> Vec<Leftover> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = run_dir_owner(&name) else {
            continue;
        };
        let Some(gone) = judge_dir(&e.path(), pid) else {
            continue;
        };
        found.push(Leftover {
            kind: Kind::RunDir,
            what: format!("run dir {}", e.path().display()),
            busy: postgres_running_on(&e.path().join("postgres-data")),
            paths: vec![e.path()],
            pid,
            gone,
            bytes: Some(disk_bytes(&e.path())),
            claim: None,
        });
    }
    found
}

/// The PID in a run dir's name `rb-PID-N` (`lab::prepare`'s RunDir).
fn run_dir_owner(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix("rb-")?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(n)).then_some(())?;
    n.parse::<u64>().ok()?;
    pid.parse().ok().filter(|&p| p > 0)
}

/// Why PostgreSQL still runs on the data directory `data`: its
/// `postmaster.pid` names a live postgres. None when it does not.
fn postgres_running_on(data: &Path) -> Option<String> {
    let text = std::fs::read_to_string(data.join("postmaster.pid")).ok()?;
    let pid: u32 = text.lines().next()?.trim().parse().ok()?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let on_it = comm.trim() == "postgres"
        || String::from_utf8_lossy(&cmdline).contains(&*data.to_string_lossy());
    on_it.then(|| format!("PostgreSQL pid {pid} still runs on it"))
}

/// The bytes the files under `path` take on disk (links not followed).
fn disk_bytes(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    let own = meta.blocks() * 512;
    if !meta.is_dir() {
        return own;
    }
    own + std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| disk_bytes(&e.path()))
        .sum::<u64>()
}

/// What a sweep did.
#[derive(Debug, Default)]
pub struct Swept {
    pub removed: Vec<Leftover>,
    /// Those that could not be removed, with why: in use, or refused.
    pub kept: Vec<(Leftover, String)>,
}

impl Swept {
    /// The one line for the terminal: what was removed, and what could
    /// not be for another reason than being in use; None when neither.
    pub fn line(&self) -> Option<String> {
        let failed: Vec<String> = self
            .kept
            .iter()
            .filter(|(l, _)| l.busy.is_none())
            .map(|(l, why)| format!("{} ({why}; by hand: {})", l.what, l.by_hand()))
            .collect();
        if self.removed.is_empty() && failed.is_empty() {
            return None;
        }
        let mut line = String::from("note: ");
        if !self.removed.is_empty() {
            let mut pids: Vec<u32> = self.removed.iter().map(|l| l.pid).collect();
            pids.sort_unstable();
            pids.dedup();
            let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
            let labels: Vec<String> = self.removed.iter().map(Leftover::label).collect();
            line.push_str(&format!(
                "removed what killed rackbench {} {} left behind: {}",
                if pids.len() == 1 { "pid" } else { "pids" },
                pids.join(", "),
                labels.join(", ")
            ));
        }
        if !failed.is_empty() {
            if !self.removed.is_empty() {
                line.push_str("; ");
            }
            line.push_str(&format!(
                "could not remove what killed rackbench processes left: {}",
                failed.join(", ")
            ));
        }
        Some(line)
    }
}

/// Removes every leftover [`find`] finds that is not in use, and the
/// claims of gone processes that name nothing.
pub fn sweep() -> Swept {
    let mut swept = Swept::default();
    if owner::proc_readable() {
        prune(&claims::ledger());
    }
    for l in find() {
        if let Some(why) = &l.busy {
            let why = why.clone();
            swept.kept.push((l, why));
            continue;
        }
        match remove(&l) {
            Ok(()) => swept.removed.push(l),
            Err(why) => swept.kept.push((l, why)),
        }
    }
    swept
}

/// Removes one leftover: a group's directories (rmdir: the kernel refuses
/// a group with processes), a directory's tree, then its claim. A path
/// gone meanwhile (another sweep took it) is no error.
fn remove(l: &Leftover) -> Result<(), String> {
    for p in &l.paths {
        let done = match l.kind {
            Kind::ControlGroup => std::fs::remove_dir(p),
            Kind::Claimed | Kind::RunDir => std::fs::remove_dir_all(p),
        };
        match done {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    if let Some(c) = &l.claim {
        let _ = std::fs::remove_file(c);
    }
    Ok(())
}

/// The first call in a process sweeps and returns its line; later calls
/// do nothing. Called before a command starts its first server.
pub fn sweep_once() -> Option<String> {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    sweep().line()
}

/// Leftovers as other modules' tests need them.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A group of two hierarchies whose maker exited, and a data
    /// directory a postgres still runs on whose maker's PID was reused.
    pub(crate) fn samples() -> Vec<Leftover> {
        vec![
            Leftover {
                kind: Kind::ControlGroup,
                what: "control group rackbench-4242-0 (memory, cpu)".into(),
                paths: vec![
                    "/sys/fs/cgroup/memory/rackbench-4242-0".into(),
                    "/sys/fs/cgroup/cpu/rackbench-4242-0".into(),
                ],
                pid: 4242,
                gone: Gone::Exited,
                bytes: None,
                busy: None,
                claim: None,
            },
            Leftover {
                kind: Kind::Claimed,
                what: "PostgreSQL data /t/postgres-data".into(),
                paths: vec!["/t/postgres-data".into()],
                pid: 4243,
                gone: Gone::Reused { by: "sleep".into() },
                bytes: Some(49 << 20),
                busy: Some("PostgreSQL pid 9 still runs on it".into()),
                claim: None,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn only_run_dirs_named_rb_pid_n_carry_an_owner() {
        for (name, want) in [
            ("rb-4242-0", Some(4242)),
            ("rb-4242-12", Some(4242)),
            ("rb-0-1", None),
            ("rb-4242", None),
            ("rb-claims-test-1", None),
            ("rb-pg-reach-42", None),
            ("rb-42-1x", None),
            ("rackbench-42-1", None),
        ] {
            assert_eq!(run_dir_owner(name), want, "{name}");
        }
    }

    /// A PID no process has any more.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    /// Sets `path`'s modification time an hour back.
    fn an_hour_old(path: &Path) {
        let then = SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::open(path)
            .unwrap()
            .set_modified(then)
            .unwrap();
    }

    #[test]
    fn what_a_gone_process_made_is_found_and_removed_and_nothing_else_is() {
        let base = std::env::temp_dir().join(format!("lo-find-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (parent, tmp, ledger) = (base.join("cg"), base.join("tmp"), base.join("claims"));
        for d in [&parent, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        let (dead, me) = (dead_pid(), std::process::id());
        // A live process that started before its things were made (their
        // maker, kept) and one whose PID was taken after (reused).
        let data = base.join("t/postgres-data");
        std::fs::create_dir_all(&data).unwrap();
        // `sleep` under the name postgres, as a postmaster shows.
        let postgres = base.join("postgres");
        std::os::unix::fs::symlink("/bin/sleep", &postgres).unwrap();
        let mut live = std::process::Command::new(&postgres)
            .arg("30")
            .spawn()
            .unwrap();
        let pid = live.id();
        std::fs::write(
            data.join("postmaster.pid"),
            format!("{pid}\n{}\n", data.display()),
        )
        .unwrap();
        for name in [
            format!("rackbench-{dead}-0"),
            format!("rackbench-{me}-0"),
            format!("rackbench-{pid}-0"),
            format!("rackbench-{pid}-1"),
            format!("rackbench-doctor-{dead}"),
            "unrelated".into(),
        ] {
            std::fs::create_dir(parent.join(&name)).unwrap();
        }
        an_hour_old(&parent.join(format!("rackbench-{pid}-1")));
        for name in [
            format!("rb-{dead}-0"),
            format!("rb-{me}-3"),
            format!("rb-{dead}x-0"),
        ] {
            std::fs::create_dir(tmp.join(&name)).unwrap();
        }
        let gone_data = base.join("u/postgres-data");
        std::fs::create_dir_all(&gone_data).unwrap();
        std::fs::write(gone_data.join("PG_VERSION"), "15\n").unwrap();
        claims::write(&ledger, &data).unwrap();
        claims::write(&ledger, &base.join("never-made/postgres-data")).unwrap();
        for (n, target) in [(0, &data), (1, &gone_data)] {
            let link = ledger.join(format!("{dead}-{n}"));
            std::os::unix::fs::symlink(target, &link).unwrap();
        }
        std::os::unix::fs::symlink(base.join("t"), ledger.join(format!("{dead}-2"))).unwrap();
        let never = ledger.join(format!("{dead}-3"));
        std::os::unix::fs::symlink(base.join("gone/postgres-data"), &never).unwrap();

        let mut found = groups(&[(parent.clone(), "memory".into())]);
        found.extend(claimed(&ledger));
        found.extend(run_dirs(&tmp));
        let mut got: Vec<(String, Option<String>)> = found
            .iter()
            .map(|l| (l.what.clone(), l.busy.clone()))
            .collect();
        let mut want = vec![
            (format!("control group rackbench-{dead}-0 (memory)"), None),
            (format!("control group rackbench-{pid}-1 (memory)"), None),
            (
                format!("PostgreSQL data {}", data.display()),
                Some(format!("rackbench pid {me} uses it now")),
            ),
            (format!("PostgreSQL data {}", gone_data.display()), None),
            (
                format!("run dir {}", tmp.join(format!("rb-{dead}-0")).display()),
                None,
            ),
        ];
        got.sort();
        want.sort();
        assert_eq!(got, want);
        let reused = found.iter().find(|l| l.pid == pid).unwrap();
        assert!(matches!(reused.gone, Gone::Reused { .. }), "{reused:?}");
        assert!(never.symlink_metadata().is_ok(), "finding removes nothing");
        prune(&ledger);
        assert!(
            never.symlink_metadata().is_err(),
            "a claim of a path never made is dropped"
        );

        for l in found.iter().filter(|l| l.busy.is_none()) {
            remove(l).unwrap();
            assert!(l.paths.iter().all(|p| !p.exists()), "{l:?}");
        }
        assert!(data.exists() && parent.join(format!("rackbench-{me}-0")).exists());
        assert!(parent.join(format!("rackbench-{pid}-0")).exists());
        assert!(
            ledger.join(format!("{dead}-1")).symlink_metadata().is_err(),
            "its claim goes with it"
        );
        assert!(ledger.join(format!("{dead}-0")).symlink_metadata().is_ok());
        // With no living claim, a postgres on it still keeps it.
        for f in claims::read(&ledger) {
            if f.pid == me {
                std::fs::remove_file(&f.link).unwrap();
            }
        }
        let busy = claimed(&ledger);
        assert_eq!(busy.len(), 1, "{busy:?}");
        assert_eq!(
            busy[0].busy.as_deref(),
            Some(format!("PostgreSQL pid {pid} still runs on it").as_str())
        );
        live.kill().unwrap();
        live.wait().unwrap();
        std::fs::remove_dir_all(&base).unwrap();
    }

    fn leftover(kind: Kind, what: &str, pid: u32, busy: Option<&str>) -> Leftover {
        Leftover {
            kind,
            what: what.into(),
            paths: vec![PathBuf::from(format!("/x/{pid}"))],
            pid,
            gone: Gone::Exited,
            bytes: Some(49 << 20),
            busy: busy.map(str::to_string),
            claim: None,
        }
    }

    #[test]
    fn a_sweep_says_in_one_line_what_it_removed_and_what_it_could_not_and_nothing_of_what_is_in_use(
    ) {
        let group = leftover(
            Kind::ControlGroup,
            "control group rackbench-7-0 (memory, cpu)",
            7,
            None,
        );
        let data = leftover(Kind::Claimed, "PostgreSQL data /t/postgres-data", 7, None);
        let run = leftover(Kind::RunDir, "run dir /tmp/rb-9-0", 9, None);
        let busy = leftover(
            Kind::ControlGroup,
            "control group rackbench-8-0 (v2)",
            8,
            Some("it still holds processes 5"),
        );
        /// (removed, kept, the line's parts, or None for no line)
        type Row<'a> = (Vec<Leftover>, Vec<(Leftover, String)>, Option<Vec<&'a str>>);
        let rows: Vec<Row> = vec![
            (vec![], vec![], None),
            (vec![], vec![(busy.clone(), "it still holds processes 5".into())], None),
            (
                vec![group.clone(), data.clone()],
                vec![],
                Some(vec![
                    "note: removed what killed rackbench pid 7 left behind: control group rackbench-7-0 (memory, cpu), PostgreSQL data /t/postgres-data (49.0 MiB)",
                ]),
            ),
            (
                vec![group.clone(), run.clone()],
                vec![(busy.clone(), "in use".into())],
                Some(vec!["rackbench pids 7, 9 left behind", "run dir /tmp/rb-9-0"]),
            ),
            (
                vec![],
                vec![(group.clone(), "/x/7: Permission denied".into())],
                Some(vec![
                    "could not remove what killed rackbench processes left: control group rackbench-7-0 (memory, cpu) (/x/7: Permission denied; by hand: rmdir /x/7)",
                ]),
            ),
        ];
        for (removed, kept, want) in rows {
            let line = Swept { removed, kept }.line();
            match (want, line) {
                (None, None) => {}
                (Some(parts), Some(line)) => {
                    assert!(!line.contains('\n'), "{line}");
                    assert!(!line.contains("rackbench-8-0"), "in use: not said: {line}");
                    for p in parts {
                        assert!(line.contains(p), "{p}\n{line}");
                    }
                }
                (want, got) => panic!("want {want:?}, got {got:?}"),
            }
        }
    }
}
