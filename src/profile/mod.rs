//! Where a server's CPU and time go (issue 40): every Ruby process of its
//! tree, the master and each worker (also those forked during the
//! window), sampled from outside by rbspy over a window, written as
//! collapsed stacks (merged and per pid) and speedscope JSON, and summed
//! into the record's `profile`: samples, rate, pids, GC share, the top
//! frames by self and total share.
//!
//! Two views of the tree, one rbspy each: **on-CPU** (`--on-cpu`: a
//! process is sampled only while one of its threads runs; where the CPU
//! goes, the record's `top`) and **wall clock** (every tick: where the
//! time goes, waits on IO, the GVL, a pool or a sleep included).
//!
//! Why rbspy: it reads a running MRI's stacks from another process
//! (process_vm_readv), so the app and the server stay as they are, and
//! `--subprocesses` follows a cluster's forks. stackprof and vernier run
//! inside the process: the app must load them and be changed to start
//! and dump them in each worker. perf sees the interpreter's C frames
//! (vm_exec_core), never a Ruby method. rbspy reads only MRI: JRuby is
//! refused, naming a JVM profiler.
//!
//! Rights: reading another process's memory needs what ptrace needs:
//! root or CAP_SYS_PTRACE, and kernel.yama.ptrace_scope at 0, or at 1 with
//! the capability (at 1 only a parent may trace without it; at 3 no one
//! may); a container needs CAP_SYS_PTRACE too.
//!
//! It never starts or stops a server, never drives load and never decides
//! the window: its caller starts a [`Recording`] when the counted window
//! opens and finishes it when it closes. It writes only into the
//! directory it is given.

pub mod error;
pub mod flame;
pub mod rbspy;
pub mod record;
pub mod stacks;

pub use error::ProfileError;
pub use record::{Overhead, Profile, ProfileFile, TopFrame, View, ViewFigures};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The rate rbspy samples at unless asked otherwise (rbspy's own default).
pub const DEFAULT_RATE_HZ: u32 = 100;

/// How many frames `top` lists.
pub const TOP_FRAMES: usize = 20;

/// What to profile and where its files go.
#[derive(Debug, Clone)]
pub struct ProfileSpec {
    /// The tops of the server's trees (one per copy of the server, and
    /// each helper it daemonized): each one's Ruby processes are profiled,
    /// a tree without Ruby passed over.
    pub roots: Vec<u32>,
    pub rate_hz: u32,
    /// The results directory `files` are named relative to.
    pub results_dir: PathBuf,
    /// Where the files go, inside `results_dir` ("profile", or one per
    /// trial).
    pub subdir: PathBuf,
    /// How long rbspy may take to finish its file once asked to stop.
    pub grace: Duration,
}

/// rbspy running on a tree, one process per view and Ruby root.
pub struct Recording {
    spec: ProfileSpec,
    profiler: String,
    recorders: Vec<rbspy::Recorder>,
    /// Each Ruby root's version, for the errors.
    rubies: BTreeMap<u32, String>,
    started: Instant,
}

impl Recording {
    /// Starts both views on every topmost Ruby process of the tree.
    pub fn start(spec: ProfileSpec) -> Result<Recording, ProfileError> {
        let bin = rbspy::find().ok_or(ProfileError::Missing)?;
        let profiler = rbspy::version(&bin).unwrap_or_else(|| "rbspy (version unknown)".into());
        // A tree without Ruby (a helper the server daemonized) is passed
        // over; none with Ruby at all is the error.
        let mut roots = BTreeMap::new();
        let mut no_ruby = None;
        for &root in &spec.roots {
            match ruby_roots(root) {
                Ok(r) => roots.extend(r),
                Err(e @ ProfileError::NoRuby { .. }) => no_ruby = no_ruby.or(Some(e)),
                Err(e) => return Err(e),
            }
        }
        if let (true, Some(e)) = (roots.is_empty(), no_ruby) {
            return Err(e);
        }
        let out = spec.results_dir.join(&spec.subdir);
        std::fs::create_dir_all(&out).map_err(|e| write_err(&out, e))?;
        let mut recorders = Vec::new();
        for &root in roots.keys() {
            for view in [View::OnCpu, View::WallClock] {
                let raw = out.join(format!("{}-{root}.rbspy.gz", view.slug()));
                let log = out.join(format!("{}-{root}.rbspy.log", view.slug()));
                recorders.push(rbspy::start(&bin, root, view, spec.rate_hz, raw, log)?);
            }
        }
        Ok(Recording {
            spec,
            profiler,
            recorders,
            rubies: roots,
            started: Instant::now(),
        })
    }

    /// Stops every rbspy, reads what it wrote, writes the collapsed and
    /// speedscope files and returns the figures. A view with no sample at
    /// all is an error naming why (never an empty flame graph).
    pub fn finish(self) -> Result<Profile, ProfileError> {
        let window_ms = self.started.elapsed().as_millis() as u64;
        let mut views: BTreeMap<&'static str, Vec<stacks::Sample>> = BTreeMap::new();
        let mut failures = Vec::new();
        // Read before they are asked to stop: what they used over the window.
        let profiler_cpu_s: f64 = self.recorders.iter().filter_map(|r| r.cpu_s()).sum();
        for rec in self.recorders {
            let (root, view, raw) = (rec.root, rec.view, rec.raw.clone());
            let stopped = rec.stop(self.spec.grace);
            let samples = if raw.exists() {
                stacks::read_raw(&raw)?
            } else {
                Vec::new()
            };
            if samples.is_empty() {
                if let Err(why) = stopped {
                    failures.push((root, why));
                }
            }
            views.entry(view.slug()).or_default().extend(samples);
        }
        let wall = views.remove(View::WallClock.slug()).unwrap_or_default();
        let on_cpu = views.remove(View::OnCpu.slug()).unwrap_or_default();
        if wall.is_empty() {
            let (pid, why) = failures.into_iter().next().unwrap_or((
                self.spec.roots.first().copied().unwrap_or(0),
                "rbspy recorded no sample".into(),
            ));
            let ruby = self.rubies.get(&pid).cloned().unwrap_or_default();
            return Err(rbspy::explain(pid, &ruby, &self.profiler, why));
        }
        let mut files = write_view(&self.spec, View::OnCpu, &on_cpu)?;
        files.extend(write_view(&self.spec, View::WallClock, &wall)?);
        let mut processes = stacks::pids(&on_cpu);
        processes.extend(stacks::pids(&wall));
        processes.sort_unstable();
        processes.dedup();
        let mut samples_by_pid = BTreeMap::new();
        for s in &on_cpu {
            *samples_by_pid.entry(s.pid).or_default() += 1;
        }
        Ok(Profile {
            samples: on_cpu.len() as u64,
            rate_hz: self.spec.rate_hz,
            processes,
            gc_share: stacks::gc_share(&on_cpu),
            top: stacks::top(&on_cpu, TOP_FRAMES),
            files,
            overhead: Some(Overhead {
                profiler_cpu_s,
                per_server_cpu: None,
                machine_share: profiler_cpu_s / (window_ms.max(1) as f64 / 1e3 * online_cpus()),
            }),
            wall_clock: ViewFigures {
                samples: wall.len() as u64,
                gc_share: stacks::gc_share(&wall),
                top: stacks::top(&wall, TOP_FRAMES),
            },
            samples_by_pid,
            window_ms,
            profiler: self.profiler,
        })
    }
}

/// The machine's online CPUs (at least 1).
fn online_cpus() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as f64
}

/// Profiles the trees of `spec.roots` for `window`, from now.
pub fn profile(spec: ProfileSpec, window: Duration) -> Result<Profile, ProfileError> {
    let recording = Recording::start(spec)?;
    std::thread::sleep(window);
    recording.finish()
}

fn write_err(path: &Path, source: std::io::Error) -> ProfileError {
    ProfileError::Write {
        path: path.display().to_string(),
        source,
    }
}

/// One view's files: collapsed stacks merged and per pid, and speedscope.
fn write_view(
    spec: &ProfileSpec,
    view: View,
    samples: &[stacks::Sample],
) -> Result<Vec<ProfileFile>, ProfileError> {
    let mut files = Vec::new();
    let mut write = |name: String, format: &str, pid: Option<u32>, text: String| {
        let rel = spec.subdir.join(&name);
        let path = spec.results_dir.join(&rel);
        std::fs::write(&path, text).map_err(|e| write_err(&path, e))?;
        files.push(ProfileFile {
            path: rel.to_string_lossy().into_owned(),
            format: format.into(),
            view,
            pid,
        });
        Ok::<(), ProfileError>(())
    };
    let slug = view.slug();
    write(
        format!("{slug}.collapsed"),
        "collapsed",
        None,
        stacks::collapsed(samples, None),
    )?;
    for pid in stacks::pids(samples) {
        write(
            format!("{slug}.{pid}.collapsed"),
            "collapsed",
            Some(pid),
            stacks::collapsed(samples, Some(pid)),
        )?;
    }
    let doc = stacks::speedscope(samples, slug, spec.rate_hz);
    write(
        format!("{slug}.speedscope.json"),
        "speedscope",
        None,
        serde_json::to_string(&doc).unwrap_or_default(),
    )?;
    Ok(files)
}

/// The topmost Ruby processes of `root`'s tree (each rbspy follows its
/// root's forks), with their Ruby's version; JRuby anywhere is refused.
fn ruby_roots(root: u32) -> Result<BTreeMap<u32, String>, ProfileError> {
    let tree = crate::sampler::tree_pids(root);
    let mut rubies = BTreeMap::new();
    let mut seen = Vec::new();
    for &pid in &tree {
        match rbspy::runs(pid) {
            Some(rbspy::Runs::Jruby) => {
                let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                return Err(ProfileError::Jruby { pid, exe });
            }
            Some(rbspy::Runs::Ruby(v)) => {
                rubies.insert(pid, v.unwrap_or_else(|| "version unknown".into()));
            }
            Some(rbspy::Runs::Other) => seen.push(comm(pid)),
            None => {}
        }
    }
    // A Ruby whose parent is a Ruby of the tree is followed by that
    // parent's rbspy (`--subprocesses`).
    let parent = |pid: u32| {
        std::fs::read(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(crate::sampler::parse_stat)
            .map(|s| s.ppid)
    };
    let topmost: BTreeMap<u32, String> = rubies
        .iter()
        .filter(|(pid, _)| !parent(**pid).is_some_and(|pp| rubies.contains_key(&pp)))
        .map(|(p, v)| (*p, v.clone()))
        .collect();
    if topmost.is_empty() {
        return Err(ProfileError::NoRuby {
            root,
            seen: if seen.is_empty() {
                "none left".into()
            } else {
                seen.join(", ")
            },
        });
    }
    Ok(topmost)
}

fn comm(pid: u32) -> String {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    format!("{pid} {}", name.trim())
}
