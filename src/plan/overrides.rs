//! The flags that stand in for a plan's keys, as one typed value parsed
//! once on the command line ([`Overrides`]: sizes in bytes, durations as
//! `Duration`, the database's kind, the runtime's switches), and the one
//! place they are put into a plan ([`Plan::apply`], for `run`, `sweep`
//! and `fit PLAN`). A flag's one value replaces the plan's list of that
//! key, its `[[server]]` entries' own lists included ([`replace_list`]).

use super::schema::Plan;
use crate::database::Kind;
use crate::load::slow::SlowMode;
use crate::runtime::Switches;
use std::path::PathBuf;
use std::time::Duration;

/// What the command line asks in place of the plan's keys; `None` (or
/// empty) leaves a key as the plan says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// The one app, in place of `apps`.
    pub app: Option<String>,
    /// Environment added to the plan's `env` (a name given wins).
    pub env: Vec<(String, String)>,
    /// Closed-loop connections, in place of `[load] connections`.
    pub connections: Option<usize>,
    pub duration: Option<Duration>,
    pub warmup: Option<Duration>,
    /// Where the servers run from, in place of `runtimes`.
    pub runtime: Option<String>,
    /// YJIT, the allocator, the arena count: each in place of its list.
    pub switches: Switches,
    /// The budget: memory in bytes and CPUs, each in place of its list.
    pub memory: Option<u64>,
    pub cpus: Option<f64>,
    pub database: Option<Kind>,
    pub slow: SlowOverride,
    /// A request mix in place of `[load] mix` (relative to the working
    /// directory, not to the plan file).
    pub mix: Option<PathBuf>,
    /// A restart: its kind and when, in place of `[restart]`.
    pub restart: Option<(String, Duration)>,
    pub soak: Option<Duration>,
    /// `--profile`: every trial profiled, as `profile = true` (false
    /// leaves the plan's key).
    pub profile: bool,
    /// `--rerun-disturbed N`, in place of `rerun_disturbed`.
    pub rerun_disturbed: Option<u32>,
}

/// `--slow-clients`, `--slow-mode`, `--slow-bytes`, `--slow-every`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SlowOverride {
    pub clients: Option<usize>,
    pub mode: Option<SlowMode>,
    pub bytes: Option<usize>,
    pub every: Option<Duration>,
}

impl SlowOverride {
    /// The first pace flag given without a count.
    pub fn orphan(&self) -> Option<&'static str> {
        if self.clients.is_some() {
            return None;
        }
        [
            (self.mode.is_some(), "--slow-mode"),
            (self.bytes.is_some(), "--slow-bytes"),
            (self.every.is_some(), "--slow-every"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

/// A key that one flag value sets for the whole plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ListKey {
    Runtimes,
    Yjit,
    Allocator,
    MallocArenaMax,
}

/// The one way a flag's value replaces a plan's list: the plan's own
/// list of `key` and each `[[server]]` entry's are dropped; the caller
/// then sets the plan's to the one value.
pub fn replace_list(plan: &mut Plan, key: ListKey) {
    match key {
        ListKey::Runtimes => {
            plan.runtimes.clear();
            plan.server.iter_mut().for_each(|e| e.runtimes.clear());
        }
        ListKey::Yjit => {
            plan.yjit.clear();
            plan.server.iter_mut().for_each(|e| e.yjit.clear());
        }
        ListKey::Allocator => {
            plan.allocator.clear();
            plan.server.iter_mut().for_each(|e| e.allocator.clear());
        }
        ListKey::MallocArenaMax => {
            plan.malloc_arena_max.clear();
            plan.server
                .iter_mut()
                .for_each(|e| e.malloc_arena_max.clear());
        }
    }
}

/// `--mix FILE` checked, and made absolute, since the plan reads a
/// relative mix beside the plan file while the flag is relative to the
/// working directory; its mistakes at the mix file's own line.
pub fn mix_path(m: &std::path::Path) -> Result<String, String> {
    let m = std::path::absolute(m).map_err(|e| format!("--mix {}: {e}", m.display()))?;
    crate::load::mix::Mix::load(&m).map_err(|e| e.to_string())?;
    Ok(m.display().to_string())
}

impl Plan {
    /// Put each override in place of the plan's key (`file` names the
    /// plan in a refusal): a soak beside a `[breakpoint]`, a slow pace
    /// with no count here or in the plan, and a mix that does not read
    /// are refused, with the fix.
    pub fn apply(&mut self, o: &Overrides, file: &str) -> Result<(), String> {
        if let Some(app) = &o.app {
            self.apps = vec![app.clone()];
        }
        self.env.extend(o.env.iter().cloned());
        if let Some(c) = o.connections {
            self.load.connections = vec![c];
        }
        if let Some(d) = o.duration {
            self.load.duration = format!("{}ms", d.as_millis());
        }
        if let Some(w) = o.warmup {
            self.load.warmup = format!("{}ms", w.as_millis());
        }
        self.apply_runtime(o);
        if let Some(m) = o.memory {
            self.budget.memory = vec![m];
        }
        if let Some(c) = o.cpus {
            self.budget.cpus = vec![c];
        }
        if let Some(k) = o.database {
            self.database = Some(k.name().to_string());
        }
        self.apply_slow(&o.slow)?;
        if let Some(m) = &o.mix {
            self.load.mix = Some(mix_path(m)?);
        }
        if let Some((kind, at)) = &o.restart {
            self.restart.kind = vec![kind.clone()];
            self.restart.at = Some(format!("{}s", at.as_secs_f64()));
        }
        self.profile |= o.profile;
        if let Some(n) = o.rerun_disturbed {
            self.rerun_disturbed = n;
        }
        if let Some(d) = o.soak {
            if self.breakpoint.is_some() {
                return Err(format!(
                    "--soak runs every trial at one fixed rate, and {file} has a [breakpoint]: drop --soak, or use a plan without one"
                ));
            }
            if d.is_zero() {
                return Err("--soak must be longer than zero, e.g. --soak 2h".into());
            }
            self.soak = Some(format!("{}ms", d.as_millis()));
        }
        Ok(())
    }

    /// --runtime, --yjit, --allocator, --malloc-arena-max: each one value
    /// in place of the plan's list and its entries' lists.
    fn apply_runtime(&mut self, o: &Overrides) {
        if let Some(r) = &o.runtime {
            replace_list(self, ListKey::Runtimes);
            self.runtimes = vec![r.clone()];
        }
        let s = o.switches;
        if let Some(y) = s.yjit {
            replace_list(self, ListKey::Yjit);
            self.yjit = vec![y];
        }
        if let Some(a) = s.allocator {
            replace_list(self, ListKey::Allocator);
            self.allocator = vec![a];
        }
        if let Some(n) = s.malloc_arena_max {
            replace_list(self, ListKey::MallocArenaMax);
            self.malloc_arena_max = vec![n];
        }
    }

    /// The slow flags, each in place of its `[load]` key; a pace given
    /// where neither the flags nor the plan (nor its sweep) has a count
    /// is refused.
    fn apply_slow(&mut self, s: &SlowOverride) -> Result<(), String> {
        if let Some(n) = s.clients {
            self.load.slow_clients = vec![n];
        } else if self.load.slow_clients.iter().all(|&n| n == 0) {
            if let Some(flag) = s.orphan() {
                return Err(format!(
                    "{flag} needs --slow-clients N: add it (e.g. --slow-clients 4), or drop {flag}"
                ));
            }
        }
        if let Some(m) = s.mode {
            self.load.slow_mode = Some(m.name().into());
        }
        if let Some(b) = s.bytes {
            self.load.slow_bytes = Some(b);
        }
        if let Some(e) = s.every {
            self.load.slow_every = Some(format!("{}ms", e.as_millis()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Allocator;

    fn plan(extra: &str) -> Plan {
        let text = format!(
            "name = \"t\"\napps = [\"hello\", \"fib\"]\nyjit = [false, true]\n{extra}\n\
             [[server]]\nname = \"puma\"\nyjit = [true]\nallocator = [\"glibc\"]\n\
             [load]\nconnections = [10, 20]\n"
        );
        Plan::parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_flag_replaces_the_plans_list_and_its_entries_lists() {
        let mut p = plan("");
        let o = Overrides {
            switches: Switches {
                yjit: Some(false),
                allocator: Some(Allocator::Jemalloc),
                malloc_arena_max: None,
            },
            runtime: Some("debian-13".into()),
            app: Some("fib".into()),
            connections: Some(4),
            ..Default::default()
        };
        p.apply(&o, "t.toml").unwrap();
        assert_eq!(p.yjit, vec![false]);
        assert!(p.server[0].yjit.is_empty(), "{:?}", p.server[0].yjit);
        assert_eq!(p.allocator, vec![Allocator::Jemalloc]);
        assert!(p.server[0].allocator.is_empty());
        assert_eq!(p.runtimes, vec!["debian-13".to_string()]);
        assert_eq!(p.apps, vec!["fib".to_string()]);
        assert_eq!(p.load.connections, vec![4]);
        assert!(
            p.malloc_arena_max.is_empty(),
            "an absent flag leaves the key"
        );
    }

    #[test]
    fn sizes_and_durations_arrive_typed() {
        let mut p = plan("[budget]\nmemory = [\"256M\", \"1G\"]\n");
        assert_eq!(p.budget.memory, vec![256 << 20, 1 << 30]);
        let o = Overrides {
            memory: Some(512 << 20),
            cpus: Some(1.5),
            duration: Some(Duration::from_millis(2500)),
            warmup: Some(Duration::from_secs(1)),
            ..Default::default()
        };
        p.apply(&o, "t.toml").unwrap();
        assert_eq!(p.budget.memory, vec![512 << 20]);
        assert_eq!(p.budget.cpus, vec![1.5]);
        let b = p.budget.budgets()[0].unwrap();
        assert_eq!(b.memory_limit_bytes, Some(512 << 20));
        assert_eq!(p.load.duration, "2500ms");
        assert_eq!(p.load.warmup, "1000ms");
        // What apply wrote reads back as the plan's own keys do.
        let expanded = p
            .expand("", "t.toml", &super::super::tests::all_installed())
            .unwrap_or_else(|e| panic!("{e}"));
        let t = &expanded.trials[0];
        assert_eq!(t.budget.unwrap().memory_limit_bytes, Some(512 << 20));
        let mut q = plan("");
        let o = Overrides {
            soak: Some(Duration::from_secs(7200)),
            restart: Some(("phased".into(), Duration::from_millis(1500))),
            ..Default::default()
        };
        q.apply(&o, "t.toml").unwrap();
        assert_eq!(q.soak.as_deref(), Some("7200000ms"));
        assert_eq!(q.restart.kind, vec!["phased".to_string()]);
        assert_eq!(q.restart.at.as_deref(), Some("1.5s"));
    }

    #[test]
    fn rerun_disturbed_replaces_the_plans_key_and_its_absence_keeps_it() {
        let mut p = plan("rerun_disturbed = 1");
        p.apply(&Overrides::default(), "t.toml").unwrap();
        assert_eq!(p.rerun_disturbed, 1);
        let o = Overrides {
            rerun_disturbed: Some(3),
            ..Default::default()
        };
        p.apply(&o, "t.toml").unwrap();
        assert_eq!(p.rerun_disturbed, 3);
        let mut q = plan("rerun_disturbed = 2");
        q.apply(
            &Overrides {
                rerun_disturbed: Some(0),
                ..Default::default()
            },
            "t.toml",
        )
        .unwrap();
        assert_eq!(
            q.rerun_disturbed, 0,
            "--rerun-disturbed 0 turns the plan's reruns off"
        );
    }

    #[test]
    fn what_cannot_work_is_refused_with_the_fix() {
        let mut p = plan("[breakpoint]\nmode = \"connections\"\n");
        let soak = Overrides {
            soak: Some(Duration::from_secs(60)),
            ..Default::default()
        };
        let e = p.apply(&soak, "t.toml").unwrap_err();
        assert!(e.contains("t.toml has a [breakpoint]"), "{e}");
        let pace = Overrides {
            slow: SlowOverride {
                every: Some(Duration::from_millis(500)),
                ..Default::default()
            },
            ..Default::default()
        };
        let e = plan("").apply(&pace, "t.toml").unwrap_err();
        assert!(e.starts_with("--slow-every needs --slow-clients N"), "{e}");
        let mut counted = plan("");
        counted.load.slow_clients = vec![4];
        counted.apply(&pace, "t.toml").unwrap();
        assert_eq!(counted.load.slow_every.as_deref(), Some("500ms"));
    }
}
