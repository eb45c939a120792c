//! A plan's checks: everything that can be refused before anything
//! starts, each mistake named with the plan's file, line and the fix. The
//! checks read the parsed plan and return the values they made sure of
//! (durations, the replay's schedule); they never build a trial
//! (plan::expand does).

use super::error::{at_line, PlanError};
use super::Plan;
use crate::lab::apps::AppSpec;
use std::sync::Arc;
use std::time::Duration;

/// What the checks made sure of, in the form the trials use.
pub(super) struct Knobs {
    pub duration: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    /// `[load] slack` (zero without it).
    pub slack: Duration,
    /// `[load] replay`, read and rendered once.
    pub replay: Option<Arc<crate::load::schedule::Schedule>>,
    /// `[load] mix`, read and checked once (each trial renders it for
    /// its front's host).
    pub mix: Option<Arc<crate::load::mix::Mix>>,
    /// `soak = "2h"`.
    pub soak: Option<Duration>,
}

/// A duration knob, or an error at its line naming the field.
fn duration_at(
    field: &str,
    v: &str,
    at: &impl Fn(&str, String) -> PlanError,
) -> Result<Duration, PlanError> {
    crate::units::duration(v).map_err(|e| at(&format!("{field} ="), format!("{field}: {e}")))
}

impl Plan {
    /// The checks that need only the parsed file: the plan's own servers
    /// say where they listen, the primary metric is a metric.
    pub(super) fn check_parsed(&mut self, text: &str, file: &str) -> Result<(), PlanError> {
        let at = at_line(text, file);
        for (name, spec) in self.server_defs.iter_mut() {
            spec.name = name.clone();
            spec.check_listens()
                .map_err(|m| at(&format!("server_defs.{name}"), m))?;
        }
        if let Some(m) = &self.primary_metric {
            crate::stats::compare::check_metric("primary_metric", m)
                .map_err(|message| at("primary_metric", message))?;
        }
        Ok(())
    }

    /// The plan's knobs, in order: times, repeats, apps, load shape,
    /// slack, fronts, runtimes and switches, break point. Servers are checked as the matrix is
    /// expanded (they need the registry).
    pub(super) fn check_knobs(
        &self,
        file: &str,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<Knobs, PlanError> {
        let duration = duration_at("duration", &self.load.duration, at)?;
        let warmup = duration_at("warmup", &self.load.warmup, at)?;
        let timeout = duration_at("timeout", &self.load.timeout, at)?;
        if duration.is_zero() {
            return Err(at(
                "duration",
                "duration must be longer than zero, e.g. \"10s\"".into(),
            ));
        }
        if self.repeats == 0 {
            return Err(at("repeats", "repeats must be at least 1".into()));
        }
        self.check_apps(at)?;
        let replay = self.check_load(file, at)?;
        let mix = self.mix(file, at)?;
        let slack = self.slack(at)?;
        self.check_slow(at)?;
        self.check_fronts(at)?;
        self.check_switches(at)?;
        self.check_breakpoint(at)?;
        self.check_restart(duration, at)?;
        let soak = self.soak(at)?;
        self.check_database(at)?;
        Ok(Knobs {
            soak,
            duration,
            warmup,
            timeout,
            slack,
            replay,
            mix,
        })
    }

    /// Reads `[load] mix` (relative to the plan file); a mistake in it is
    /// an error at the plan's line carrying the mix file's own line.
    fn mix(
        &self,
        file: &str,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<Option<Arc<crate::load::mix::Mix>>, PlanError> {
        let Some(name) = &self.load.mix else {
            return Ok(None);
        };
        if self.load.replay.is_some() {
            return Err(at(
                "mix =",
                "mix and replay are two sources of requests: give one of them".into(),
            ));
        }
        let path = std::path::Path::new(file)
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(name);
        let mix = crate::load::mix::Mix::load(&path)
            .map_err(|e| at("mix =", format!("mix = \"{name}\": {e}")))?;
        Ok(Some(Arc::new(mix)))
    }

    /// `[load] slow_*`: counts within the bound, a pace only beside a
    /// count, each checked as the flags are.
    fn check_slow(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        let l = &self.load;
        if let Some(text) = &l.slow_every {
            duration_at("slow_every", text, at)?;
        }
        if let Some(mode) = &l.slow_mode {
            crate::load::slow::SlowMode::parse(mode).map_err(|m| at("slow_mode", m))?;
        }
        if l.slow_clients.iter().all(|&n| n == 0) {
            let orphan = [
                (l.slow_mode.is_some(), "slow_mode"),
                (l.slow_bytes.is_some(), "slow_bytes"),
                (l.slow_every.is_some(), "slow_every"),
            ]
            .into_iter()
            .find_map(|(given, key)| given.then_some(key));
            return match orphan {
                Some(key) => Err(at(
                    key,
                    format!("{key} needs slow_clients: add slow_clients = 4 (or [0, 4]) under [load], or drop {key}"),
                )),
                None => Ok(()),
            };
        }
        for &n in l.slow_clients.iter().filter(|&&n| n > 0) {
            l.slow_of(n).check().map_err(|m| {
                let key = if m.contains("--slow-bytes") {
                    "slow_bytes"
                } else if m.contains("--slow-every") {
                    "slow_every"
                } else {
                    "slow_clients"
                };
                at(
                    key,
                    m.replace("--slow-clients", "slow_clients")
                        .replace("--slow-bytes", "slow_bytes")
                        .replace("--slow-every", "slow_every"),
                )
            })?;
        }
        Ok(())
    }

    /// `[restart]`: a kind or more and a time inside the counted window,
    /// each at its line. Whether a server has the kind is the matrix's to
    /// say (a server without it skips it).
    fn check_restart(
        &self,
        duration: Duration,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<(), PlanError> {
        let r = &self.restart;
        if r.is_empty() {
            return Ok(());
        }
        if r.kind.is_empty() {
            return Err(at(
                "[restart]",
                "[restart] names no kind: add kind = \"phased\" (or a list)".into(),
            ));
        }
        let Some(text) = &r.at else {
            return Err(at(
                "[restart]",
                "[restart] says no time: add at = \"3s\" (from the counted window's start)".into(),
            ));
        };
        // The line as plans write it (`at =` alone would find `format =`).
        let line = format!("at = \"{text}\"");
        let when = crate::units::duration(text).map_err(|e| at(&line, format!("at: {e}")))?;
        if when >= duration {
            return Err(at(
                &line,
                format!(
                    "at = \"{text}\" is outside the counted window (0s to {duration:?}): give a time below [load] duration"
                ),
            ));
        }
        Ok(())
    }

    /// `database = "postgres"`: a database rackbench starts, for a plan
    /// with an app that has one.
    fn check_database(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        let Some(text) = &self.database else {
            return Ok(());
        };
        text.parse::<crate::database::Kind>()
            .map_err(|m| at("database", m))?;
        let any = self
            .apps
            .iter()
            .any(|a| crate::lab::apps::AppSpec::resolve(a).is_ok_and(|a| a.needs_database()));
        if !any {
            return Err(at(
                "database",
                "database is for an app that has one: add \"blog\" to apps, or drop database"
                    .into(),
            ));
        }
        Ok(())
    }

    /// `soak = "2h"`: a duration longer than zero, and no break-point
    /// search beside it (a soak is one fixed rate).
    fn soak(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<Option<Duration>, PlanError> {
        let Some(text) = &self.soak else {
            return Ok(None);
        };
        let soak = duration_at("soak", text, at)?;
        if soak.is_zero() {
            return Err(at(
                "soak",
                "soak must be longer than zero, e.g. \"2h\"".into(),
            ));
        }
        if self.breakpoint.is_some() {
            return Err(at(
                "soak",
                "a soak runs at one fixed rate: drop [breakpoint] or soak".into(),
            ));
        }
        Ok(Some(soak))
    }

    /// `[load] slack`: a duration, and only where some trial runs an open
    /// loop (a closed loop sends each request when the last is answered).
    fn slack(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<Duration, PlanError> {
        let Some(text) = &self.load.slack else {
            return Ok(Duration::ZERO);
        };
        let slack = duration_at("slack", text, at)?;
        let rate_search = self.breakpoint.as_ref().is_some_and(|b| b.mode == "rate");
        let open = !self.load.rates.is_empty() || self.load.replay.is_some() || rate_search;
        if !slack.is_zero() && !open {
            return Err(at(
                "slack",
                "slack applies to an open loop: add rates = [...] under [load], a replay, \
                 or [breakpoint] mode = \"rate\""
                    .into(),
            ));
        }
        Ok(slack)
    }

    /// Apps: at least one, each known, and `app_connections` only for
    /// apps of the plan, with counts of at least 1.
    fn check_apps(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        if self.apps.is_empty() {
            return Err(at(
                "apps",
                "apps is empty: name at least one, e.g. apps = [\"hello\"]".into(),
            ));
        }
        for app in &self.apps {
            AppSpec::resolve(app).map_err(|e| at(&format!("\"{app}\""), e.to_string()))?;
        }
        for (app, conns) in &self.load.app_connections {
            if !self.apps.contains(app) {
                return Err(at(
                    "app_connections",
                    format!("app_connections names \"{app}\", which is not in apps: add it to apps or drop it"),
                ));
            }
            if conns.is_empty() || conns.contains(&0) {
                return Err(at(
                    "app_connections",
                    format!(
                        "app_connections for \"{app}\": give one or more counts, each at least 1"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The load: some shape to run (connections, rates, a replay, a
    /// break-point search or every app's own connections), each count
    /// and rate positive. Returns the replay's schedule, if any.
    fn check_load(
        &self,
        file: &str,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<Option<std::sync::Arc<crate::load::schedule::Schedule>>, PlanError> {
        let every_app_has_its_own = self
            .apps
            .iter()
            .all(|a| self.load.app_connections.contains_key(a));
        let replay = self.replay_schedule(file, at)?;
        if self.load.connections.is_empty()
            && self.load.rates.is_empty()
            && replay.is_none()
            && self.breakpoint.is_none()
            && !every_app_has_its_own
        {
            return Err(at(
                "[load]",
                "no load shape: set connections = [10, 50] or rates = [500] under [load]".into(),
            ));
        }
        if let Some(c) = self.load.connections.iter().find(|&&c| c == 0) {
            return Err(at(
                "connections",
                format!("connections {c}: each must be at least 1"),
            ));
        }
        if let Some(r) = self
            .load
            .rates
            .iter()
            .find(|r| !(r.is_finite() && **r > 0.0))
        {
            return Err(at(
                "rates",
                format!("rate {r}: each must be a positive number of requests per second"),
            ));
        }
        Ok(replay)
    }

    /// Fronts: `behind` is "none" or "nginx", each nginx knob list has a
    /// value, and no server asks for zero instances.
    fn check_fronts(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        for b in &self.behind {
            if b != "none" && b != "nginx" {
                return Err(at(
                    &format!("\"{b}\""),
                    format!("behind = \"{b}\": use \"none\" (direct) or \"nginx\""),
                ));
            }
        }
        if self.nginx_keepalive.is_empty() || self.nginx_http.is_empty() {
            return Err(at(
                "nginx_",
                "nginx_keepalive and nginx_http need at least one value each, e.g. nginx_keepalive = [\"off\"] and nginx_http = [\"1.0\"]".into(),
            ));
        }
        if let Some(e) = self.server.iter().find(|e| e.instances.contains(&0)) {
            return Err(at(
                "instances",
                format!("server {}: instances 0: each must be at least 1", e.name),
            ));
        }
        Ok(())
    }

    /// Runtimes and switches, the plan's and each entry's: arena counts
    /// of at least 1, no value twice in one list (it would name two
    /// variants alike). Whether a runtime exists and can honour them is
    /// `plan::runtimes`' check, once they are resolved.
    fn check_switches(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        fn twice<T: PartialEq + std::fmt::Debug>(v: &[T]) -> Option<&T> {
            v.iter()
                .enumerate()
                .find(|(i, x)| v[..*i].contains(x))
                .map(|(_, x)| x)
        }
        let lists = std::iter::once((
            &self.runtimes,
            &self.yjit,
            &self.allocator,
            &self.malloc_arena_max,
        ))
        .chain(
            self.server
                .iter()
                .map(|e| (&e.runtimes, &e.yjit, &e.allocator, &e.malloc_arena_max)),
        );
        for (runtimes, yjit, allocator, arenas) in lists {
            if arenas.contains(&0) {
                return Err(at(
                    "malloc_arena_max",
                    "malloc_arena_max 0: each must be at least 1, e.g. malloc_arena_max = [2]"
                        .into(),
                ));
            }
            let dup = [
                ("runtimes", twice(runtimes).map(|x| format!("\"{x}\""))),
                ("yjit", twice(yjit).map(|x| x.to_string())),
                ("allocator", twice(allocator).map(|x| format!("\"{x}\""))),
                ("malloc_arena_max", twice(arenas).map(|x| x.to_string())),
            ];
            if let Some((key, Some(x))) = dup.into_iter().find(|(_, d)| d.is_some()) {
                return Err(at(
                    key,
                    format!("{key} names {x} twice: list each value once"),
                ));
            }
        }
        Ok(())
    }

    /// `[breakpoint]`, if any: a known mode, sane search knobs, valid
    /// step and probe durations and SLO.
    fn check_breakpoint(&self, at: &impl Fn(&str, String) -> PlanError) -> Result<(), PlanError> {
        let Some(bp) = &self.breakpoint else {
            return Ok(());
        };
        if bp.mode != "connections" && bp.mode != "rate" {
            return Err(at(
                "mode",
                format!(
                    "breakpoint mode \"{}\": use \"connections\" or \"rate\"",
                    bp.mode
                ),
            ));
        }
        if !crate::search::knobs_are_sane(bp.start, bp.max, bp.growth, bp.resolution) {
            return Err(at(
                "[breakpoint]",
                "breakpoint needs start > 0, max >= start, growth > 1 and resolution > 0".into(),
            ));
        }
        duration_at("step_duration", &bp.step_duration, at)?;
        duration_at("probe", &bp.probe, at)?;
        if let Some(slo) = &bp.slo {
            crate::search::parse_slo(slo).map_err(|e| at("slo", e))?;
        }
        Ok(())
    }

    /// Reads `[load] replay` (relative to the plan file) into a schedule;
    /// a missing file or a bad line is an error at the plan's line.
    fn replay_schedule(
        &self,
        file: &str,
        at: &impl Fn(&str, String) -> PlanError,
    ) -> Result<Option<std::sync::Arc<crate::load::schedule::Schedule>>, PlanError> {
        use crate::load::schedule::{read_record, Schedule};
        let Some(name) = &self.load.replay else {
            return Ok(None);
        };
        if !self.load.connections.is_empty() || !self.load.rates.is_empty() {
            return Err(at(
                "replay =",
                "replay is the load shape: drop connections and rates from [load] \
                 (rate_connections sets the replay's connections)"
                    .into(),
            ));
        }
        if self.load.rate_connections == 0 {
            return Err(at(
                "rate_connections",
                "rate_connections must be at least 1".into(),
            ));
        }
        if self.breakpoint.is_some() {
            return Err(at(
                "replay =",
                "replay and [breakpoint] do not mix (a search sets its own rates or \
                 connections): run them as two plans"
                    .into(),
            ));
        }
        let path = std::path::Path::new(file)
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(name);
        let f = std::fs::File::open(&path).map_err(|e| {
            at(
                "replay =",
                format!(
                    "replay = \"{name}\": cannot open {} ({e}): give a record file's path, \
                     relative to the plan",
                    path.display()
                ),
            )
        })?;
        let entries = read_record(
            std::io::BufReader::with_capacity(1 << 20, f),
            &path.display().to_string(),
        )
        .map_err(|e| at("replay =", format!("replay = \"{name}\": {e}")))?;
        let mut entries = entries;
        if let Some(gap) = &self.load.replay_max_gap {
            let max = crate::units::duration(gap)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    at(
                        "replay_max_gap",
                        format!("replay_max_gap \"{gap}\": give a duration longer than zero, e.g. replay_max_gap = \"10s\""),
                    )
                })?;
            crate::load::schedule::cap_gaps(&mut entries, max);
        }
        // The Host a lab server sees; the port is the trial's.
        let url = crate::load::Url::parse("http://localhost/").expect("static URL");
        let schedule = Schedule::build(
            entries,
            &url,
            self.load.replay_speed,
            self.load.replay_loop,
            self.load.keep_alive,
        )
        .map_err(|e| {
            let fix = match e {
                crate::load::schedule::ScheduleError::TooLong { .. } => {
                    ": set replay_speed, or cut its idle gaps with replay_max_gap = \"10s\""
                }
                _ => "",
            };
            at("replay =", format!("replay = \"{name}\": {e}{fix}"))
        })?;
        Ok(Some(std::sync::Arc::new(schedule)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all_installed, expand};
    use super::super::Plan;
    use std::time::Duration;

    #[test]
    fn mistakes_name_the_file_line_and_fix() {
        let cases: &[(&str, &str)] = &[
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"pumma\"]\n[load]\nconnections = [1]\n", "t.toml, line 3: unknown server 'pumma'"),
            ("name = \"t\"\napps = [\"helo\"]\nservers = [\"puma\"]\n[load]\nconnections = [1]\n", "t.toml, line 2"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconections = [1]\n", "[load] has no key `conections`: its keys are connections,"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\nprimary_metric = \"speed\"\n[load]\nconnections = [1]\n", "t.toml, line 4: primary_metric \"speed\" is not a metric: use one of throughput, p50"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [1]\nduration = \"5x\"\n", "line 6: duration"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n", "no load shape"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\nsoak = \"2x\"\n[load]\nrates = [50]\n", "t.toml, line 4: soak"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\nsoak = \"0s\"\n[load]\nrates = [50]\n", "line 4: soak must be longer than zero"),
            ("name = \"t\"\napps = [\"blog\"]\nservers = [\"puma\"]\ndatabase = \"mysql\"\n[load]\nconnections = [1]\n", "t.toml, line 4: unknown database 'mysql': give one of sqlite, postgres"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\ndatabase = \"postgres\"\n[load]\nconnections = [1]\n", "line 4: database is for an app that has one"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"mine\"]\n[load]\nconnections = [1]\n[server_defs.mine]\ncommand = \"mine {{app}}\"\n", "line 6: server 'mine': its command 'mine {{app}}' never says where to listen"),
            ("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\nbehind = [\"apache\"]\n[load]\nconnections = [1]\n", "use \"none\" (direct) or \"nginx\""),
        ];
        for (text, want) in cases {
            let err = expand(text).unwrap_err().to_string();
            assert!(err.contains(want), "want '{want}' in: {err}");
            assert!(err.starts_with("t.toml"), "{err}");
        }
    }

    /// Issue 29's plan keys: each mistake is refused at its line with
    /// the fix (a mode that is none, a pace without a count, a count over
    /// the bound, a step of no time).
    #[test]
    fn slow_client_mistakes_are_refused_at_their_line() {
        let base =
            "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [4]\n";
        let cases: &[(&str, &str)] = &[
            (
                "slow_clients = 4\nslow_mode = \"slowloris\"\n",
                "t.toml, line 7: slow mode 'slowloris': use headers, body or read",
            ),
            (
                "slow_mode = \"body\"\n",
                "t.toml, line 6: slow_mode needs slow_clients: add slow_clients = 4 (or [0, 4]) under [load], or drop slow_mode",
            ),
            (
                "slow_clients = [0, 10001]\n",
                "t.toml, line 6: slow_clients 10001 is over the bound of 10000: give fewer",
            ),
            (
                "slow_clients = 4\nslow_every = \"0s\"\n",
                "t.toml, line 7: slow_every must be at least 10ms",
            ),
        ];
        for (tail, want) in cases {
            let err = expand(&format!("{base}{tail}")).unwrap_err().to_string();
            assert!(err.contains(want), "want '{want}' in: {err}");
        }
        assert!(expand(&format!(
            "{base}slow_clients = [0, 4]\nslow_mode = \"read\"\n"
        ))
        .is_ok());
    }

    #[test]
    fn a_slack_needs_an_open_loop_and_reaches_only_its_trials() {
        let base =
            "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [4]\n";
        let err = expand(&format!("{base}slack = \"2ms\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.toml, line 6: slack applies to an open loop: add rates"),
            "{err}"
        );
        let err = expand(&format!("{base}rates = [100]\nslack = \"2 ms\"\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 7: slack"), "{err}");
        let e = expand(&format!("{base}rates = [100]\nslack = \"2ms\"\n")).unwrap();
        assert_eq!(e.slack, Duration::from_millis(2));
        let search = "name = \"b\"\nservers = [\"puma\"]\napps = [\"hello\"]\n[load]\nslack = \"1ms\"\n[breakpoint]\nmode = \"rate\"\n";
        assert_eq!(expand(search).unwrap().slack, Duration::from_millis(1));
        assert_eq!(expand(base).unwrap().slack, Duration::ZERO);
    }

    #[test]
    fn a_replay_is_the_only_load_shape_and_no_search() {
        let base = "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nreplay = \"day.jsonl\"\n";
        let err = expand(&format!("{base}rates = [5]\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.toml, line 5: replay is the load shape"),
            "{err}"
        );
        let err = expand(&format!("{base}[breakpoint]\nmode = \"rate\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.toml, line 5: replay and [breakpoint] do not mix"),
            "{err}"
        );
        let err = expand(base).unwrap_err().to_string();
        assert!(
            err.contains("line 5: replay = \"day.jsonl\": cannot open"),
            "{err}"
        );
    }

    #[test]
    fn issue_36_a_replay_longer_than_a_day_is_refused_unless_its_gaps_are_cut_or_it_is_faster() {
        let dir = std::env::temp_dir().join(format!("rackbench-plan-gap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |t: u64| {
            format!("{{\"t_us\":{t},\"method\":\"GET\",\"target\":\"/\",\"headers\":[]}}\n")
        };
        std::fs::write(
            dir.join("years.jsonl"),
            format!(
                "{{\"format\":\"rackbench/record-v1\"}}\n{}{}",
                line(1_000),
                line(1_000_000_000_000_000)
            ),
        )
        .unwrap();
        let plan_file = dir.join("p.toml").display().to_string();
        let expand_with = |extra: &str| {
            let t = format!("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nreplay = \"years.jsonl\"\n{extra}");
            Plan::parse(&t, &plan_file).and_then(|p| p.expand(&t, &plan_file, &all_installed()))
        };
        let err = expand_with("").unwrap_err().to_string();
        assert!(
            err.contains("line 5: replay = \"years.jsonl\": the schedule lasts 31.7 years")
                && err.contains("replay_max_gap = \"10s\""),
            "{err}"
        );
        let cut = expand_with("replay_max_gap = \"10ms\"\n").unwrap();
        let span = cut.replay.as_ref().map(|s| s.span());
        assert_eq!(span, Some(Duration::from_millis(10)));
        assert!(expand_with("replay_speed = 1e12\n").is_ok());
        let err = expand_with("replay_max_gap = \"0s\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 6: replay_max_gap \"0s\": give a duration longer than zero"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_mix_is_read_beside_the_plan_and_its_mistakes_carry_both_lines() {
        let dir = std::env::temp_dir().join(format!("rackbench-plan-mix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("good.toml"),
            "[[endpoint]]\nname = \"a\"\npath = \"/a\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("bad.toml"),
            "[[endpoint]]\nname = \"a\"\npath = \"a\"\n",
        )
        .unwrap();
        let plan_file = dir.join("p.toml").display().to_string();
        let text = |mix: &str| {
            format!("name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [1]\nmix = \"{mix}\"\n")
        };
        let expand_at = |t: &str| {
            Plan::parse(t, &plan_file).and_then(|p| p.expand(t, &plan_file, &all_installed()))
        };
        let e = expand_at(&text("good.toml")).unwrap();
        assert_eq!(e.mix.as_ref().map(|m| m.endpoints.len()), Some(1));
        let err = expand_at(&text("bad.toml")).unwrap_err().to_string();
        assert!(
            err.contains("p.toml, line 6: mix = \"bad.toml\": ")
                && err.contains("bad.toml, line 3: path \"a\" does not start with /"),
            "{err}"
        );
        let err = expand_at(&text("none.toml")).unwrap_err().to_string();
        assert!(
            err.contains("line 6: mix = \"none.toml\": cannot read mix file"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn nginx_knob_and_per_app_load_mistakes_name_the_line_and_fix() {
        let head = "name = \"t\"\napps = [\"hello\"]\nbehind = [\"nginx\"]\n";
        let cases: &[(&str, &str)] = &[
            ("nginx_keepalive = [\"on\"]\nservers = [\"thin\"]\n[load]\nconnections = [1]\n", "use off or a pool size"),
            ("nginx_http = [\"2\"]\nservers = [\"thin\"]\n[load]\nconnections = [1]\n", "use 1.0 or 1.1"),
            ("[[server]]\nname = \"thin\"\ninstances = [0]\n[load]\nconnections = [1]\n", "line 6: server thin: instances 0"),
            ("servers = [\"thin\"]\n[load]\nconnections = [1]\napp_connections = { sleep = [5] }\n", "line 7: app_connections names \"sleep\", which is not in apps"),
            ("servers = [\"thin\"]\n[load]\napp_connections = { hello = [] }\n", "give one or more counts"),
        ];
        for (tail, want) in cases {
            let text = format!("{head}{tail}");
            let err = Plan::parse(&text, "t.toml")
                .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "want '{want}' in: {err}");
            assert!(err.starts_with("t.toml"), "{err}");
        }
    }
}
