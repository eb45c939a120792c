//! A server run from another Debian release's root filesystem, with the
//! host's network, processes and files.
//!
//! The child, between fork and exec, enters a mount namespace of its own
//! and bind-mounts the root's `/usr` and `/etc` (and `/var/lib/gems` when
//! the root has it) over the host's, read-only. Everything else stays the
//! host's: `/tmp`, `/proc`, `/dev`, the results directory, the app, the
//! trial's sockets. So the server sees its release's Ruby, gems and
//! executables (Debian's `/bin`, `/lib` and `/sbin` are links into `/usr`)
//! and nothing else changes: it listens on the host's 127.0.0.1, nginx in
//! front reaches its unix socket, and the sampler reads its /proc.
//!
//! Why not bubblewrap or chroot: bwrap stays as the parent of the server,
//! so the server's tree gains a process, and a group SIGTERM kills bwrap
//! first; a chroot hides the trial's directory. Entering the namespace in
//! the child itself leaves the PID rackbench spawned the server's own.
//!
//! Needs CAP_SYS_ADMIN (root): a mount namespace cannot be made without
//! it, and the error says so. Never mounts anything in rackbench's own
//! namespace.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The mounts that put a root's userland in place, prepared before the
/// fork: the child only makes system calls.
#[derive(Debug, Clone)]
pub struct RootFs {
    pub root: PathBuf,
    /// (source inside the root, target on the host), as C strings.
    mounts: Vec<(CString, CString)>,
}

/// What a root must hold to be entered: its userland and its /etc.
const REQUIRED: &[&str] = &["usr", "etc"];
/// Bound when the root has them: gems installed with `gem install`.
const OPTIONAL: &[&str] = &["var/lib/gems"];

impl RootFs {
    /// The mounts for `root`, or why it cannot be entered.
    pub fn new(root: &Path) -> Result<RootFs, String> {
        let mut mounts = Vec::new();
        for dir in REQUIRED.iter().chain(OPTIONAL) {
            let src = root.join(dir);
            let dst = Path::new("/").join(dir);
            if !src.is_dir() {
                if REQUIRED.contains(dir) {
                    return Err(format!(
                        "{} has no /{dir}: it is not a root filesystem (rebuild it with `rackbench runtime add`)",
                        root.display()
                    ));
                }
                continue;
            }
            if !dst.is_dir() {
                continue;
            }
            mounts.push((c_path(&src)?, c_path(&dst)?));
        }
        Ok(RootFs {
            root: root.to_path_buf(),
            mounts,
        })
    }

    /// Enters a new mount namespace and mounts the root's directories over
    /// the host's. Runs in the child between fork and exec, so it makes
    /// system calls only (no allocation, no locks).
    ///
    /// # Safety
    /// Call only in a freshly forked child (`Command::pre_exec`): it
    /// changes the calling process's mount namespace.
    pub unsafe fn enter(&self) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return fail();
        }
        // Nothing mounted here may reach the host's namespace.
        let root = c"/";
        let flags = libc::MS_REC | libc::MS_PRIVATE;
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        ) != 0
        {
            return fail();
        }
        for (src, dst) in &self.mounts {
            let bind = libc::MS_BIND | libc::MS_REC;
            if libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                std::ptr::null(),
                bind,
                std::ptr::null(),
            ) != 0
            {
                return fail();
            }
            // Read-only, so a server cannot change the root it runs from;
            // best effort, the bind itself is what matters.
            let ro = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
            libc::mount(
                std::ptr::null(),
                dst.as_ptr(),
                std::ptr::null(),
                ro,
                std::ptr::null(),
            );
        }
        Ok(())
    }

    /// Makes `cmd` run inside this root when spawned.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let me = self.clone();
        // SAFETY: `enter` makes system calls only.
        unsafe {
            cmd.pre_exec(move || me.enter());
        }
    }

    /// The message for an `enter` that failed with `e`.
    pub fn explain(&self, e: &std::io::Error) -> String {
        let why = match e.raw_os_error() {
            Some(libc::EPERM) => {
                "making a mount namespace needs root (CAP_SYS_ADMIN): run rackbench as root to use a Debian release root"
                    .to_string()
            }
            _ => e.to_string(),
        };
        format!("cannot enter the root {}: {why}", self.root.display())
    }
}

fn c_path(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("{}: a path with a NUL byte", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_usr_is_refused_with_the_command_that_rebuilds_it() {
        let dir = std::env::temp_dir().join(format!("rb-rootfs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("etc")).unwrap();
        let e = RootFs::new(&dir).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.contains("has no /usr"), "{e}");
        assert!(e.contains("rackbench runtime add"), "{e}");
    }

    #[test]
    fn a_root_mounts_usr_and_etc_and_gems_only_when_it_has_them() {
        let dir = std::env::temp_dir().join(format!("rb-rootfs2-{}", std::process::id()));
        for d in ["usr", "etc"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let fs = RootFs::new(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let targets: Vec<_> = fs
            .mounts
            .iter()
            .map(|(_, d)| d.to_str().unwrap().to_string())
            .collect();
        assert_eq!(targets, ["/usr", "/etc"]);
    }
}
