//! A server entry's flavours: the lists a plan multiplies each variant
//! by that are no server's own knob (runtimes, YJIT, allocators, arena
//! counts, `[budget]`, `[load] slow_clients`), each list the entry's own,
//! else the plan's, each flavour with its part of the variant's name. It
//! never decides whether a server can run a flavour (expand.rs skips what
//! the host lacks) and never names anything itself (naming.rs does).

use super::naming::{budget_name, flavour_name};
use super::{Plan, ServerEntry};
use crate::runtime::Switches;

/// One runtime and its switches, as a trial of the plan asks them.
pub(super) struct Flavour {
    pub runtime: Option<String>,
    pub switches: Switches,
    /// The plan's `[budget]` for this trial (None without one).
    pub budget: Option<crate::budget::Budget>,
    /// The plan's `[load] slow_clients` for this trial (None: none).
    pub slow_clients: Option<usize>,
    /// Its part of the variant's name: "@debian-13+yjit", or "".
    pub suffix: String,
}

impl Plan {
    /// Entry `e`'s runtimes × YJIT × allocators × arena counts (each list
    /// the entry's own, else the plan's), each with its part of the
    /// variant's name. A plan without them gets one flavour, unnamed: the
    /// host, nothing asked, so its trial ids stay as they were.
    pub(super) fn flavours(&self, e: &ServerEntry) -> Vec<Flavour> {
        fn pick<'a, T>(own: &'a [T], plan: &'a [T]) -> &'a [T] {
            if own.is_empty() {
                plan
            } else {
                own
            }
        }
        fn each<T: Clone>(v: &[T]) -> Vec<Option<T>> {
            if v.is_empty() {
                vec![None]
            } else {
                v.iter().cloned().map(Some).collect()
            }
        }
        let runtimes = pick(&e.runtimes, &self.runtimes);
        let yjits = pick(&e.yjit, &self.yjit);
        let allocators = pick(&e.allocator, &self.allocator);
        let arenas = pick(&e.malloc_arena_max, &self.malloc_arena_max);
        let budgets = self.budget.budgets();
        let slows: Vec<Option<usize>> = if self.load.slow_clients.is_empty() {
            vec![None]
        } else {
            self.load
                .slow_clients
                .iter()
                .map(|&n| (n > 0).then_some(n))
                .collect()
        };
        let mut out = Vec::new();
        for r in each(runtimes) {
            for y in each(yjits) {
                for a in each(allocators) {
                    for ((m, b), slow) in each(arenas)
                        .into_iter()
                        .flat_map(|m| budgets.iter().map(move |b| (m, *b)))
                        .flat_map(|mb| slows.iter().map(move |s| (mb, *s)))
                    {
                        let switches = Switches {
                            yjit: y,
                            allocator: a,
                            malloc_arena_max: m,
                        };
                        let suffix = flavour_name(
                            r.as_deref(),
                            &switches,
                            [runtimes.len(), yjits.len(), allocators.len()].map(|n| n > 1),
                        ) + &budget_name(b.as_ref())
                            + &slow.map_or(String::new(), |n| format!("+slow={n}"));
                        out.push(Flavour {
                            runtime: r.clone(),
                            switches,
                            budget: b,
                            slow_clients: slow,
                            suffix,
                        });
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all_installed, expand_hello as expand};
    use super::super::Plan;

    #[test]
    fn a_budget_section_multiplies_the_matrix_and_names_its_values() {
        let rows: &[(&str, &[&str])] = &[
            ("", &["puma"]),
            ("[budget]\nmemory = \"512M\"", &["puma+mem=512M"]),
            ("[budget]\ncpus = 1.5", &["puma+cpus=1.5"]),
            (
                "[budget]\nmemory = [\"512M\", \"1G\"]\ncpus = 1",
                &["puma+mem=512M+cpus=1", "puma+mem=1G+cpus=1"],
            ),
        ];
        for (extra, want) in rows {
            let e = expand("servers = [\"puma\"]", extra);
            let names: Vec<&str> = e.trials.iter().map(|t| t.variant.as_str()).collect();
            assert_eq!(names, *want, "{extra}");
        }
        let e = expand("servers = [\"puma\"]", "[budget]\nmemory = \"1G\"");
        assert_eq!(
            e.trials[0].budget.unwrap().memory_limit_bytes,
            Some(1 << 30)
        );
        assert!(
            e.trials[0].id.contains("puma-mem-1G__"),
            "{}",
            e.trials[0].id
        );
        let bad = Plan::parse(
            "name = \"b\"\nservers = [\"puma\"]\napps = [\"hello\"]\n[budget]\nmemory = \"12X\"\n",
            "t.toml",
        );
        assert!(bad.unwrap_err().to_string().contains("512M"));
    }

    /// Issue 29: `slow_clients = [0, 4]` is the same trial without and
    /// with slow clients, side by side; 0 adds nothing to an id, so the
    /// trial without them is named as it always was.
    #[test]
    fn slow_clients_multiply_the_matrix_and_zero_names_nothing() {
        let plan = |slow: &str| {
            format!(
                "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [10]\n{slow}"
            )
        };
        // (the [load] keys, each trial's variant and slow clients)
        type Row<'a> = (&'a str, &'a [(&'a str, Option<usize>)]);
        let rows: &[Row] = &[
            ("", &[("puma", None)]),
            ("slow_clients = 0\n", &[("puma", None)]),
            ("slow_clients = 4\n", &[("puma+slow=4", Some(4))]),
            (
                "slow_clients = [0, 4]\n",
                &[("puma", None), ("puma+slow=4", Some(4))],
            ),
            (
                "slow_clients = [0, 4, 16]\nslow_mode = \"read\"\n",
                &[
                    ("puma", None),
                    ("puma+slow=4", Some(4)),
                    ("puma+slow=16", Some(16)),
                ],
            ),
        ];
        for (slow, want) in rows {
            let text = plan(slow);
            let e = Plan::parse(&text, "t.toml")
                .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            let got: Vec<(&str, Option<usize>)> = e
                .trials
                .iter()
                .map(|t| (t.variant.as_str(), t.slow_clients))
                .collect();
            assert_eq!(got, *want, "{slow}");
        }
        let text = plan("slow_clients = [0, 4]\n");
        let e = Plan::parse(&text, "t.toml")
            .and_then(|p| p.expand(&text, "t.toml", &all_installed()))
            .unwrap();
        let ids: Vec<&str> = e.trials.iter().map(|t| t.id.as_str()).collect();
        assert!(
            ids.iter().any(|id| id.starts_with("puma__"))
                && ids.iter().any(|id| id.starts_with("puma-slow-4__")),
            "{ids:?}"
        );
        assert_eq!(
            ids.iter().filter(|id| id.contains("slow")).count(),
            ids.len() / 2,
            "{ids:?}"
        );
    }

    #[test]
    fn runtimes_and_switches_multiply_the_matrix_and_name_only_what_varies() {
        let puma = "servers = [\"puma\"]";
        // (plan's lists, servers, the variants in order)
        let rows: &[(&str, &str, &[&str])] = &[
            ("", puma, &["puma"]),
            ("runtimes = [\"system\"]", puma, &["puma"]),
            (
                "runtimes = [\"system\", \"debian-13\"]",
                puma,
                &["puma@system", "puma@debian-13"],
            ),
            ("yjit = [false, true]", puma, &["puma+no-yjit", "puma+yjit"]),
            ("yjit = [true]", puma, &["puma+yjit"]),
            (
                "allocator = [\"glibc\", \"jemalloc\"]",
                puma,
                &["puma+glibc", "puma+jemalloc"],
            ),
            ("malloc_arena_max = [2]", puma, &["puma+arenas=2"]),
            (
                "runtimes = [\"debian-13\"]\nallocator = [\"jemalloc\"]",
                puma,
                &["puma@debian-13+jemalloc"],
            ),
            (
                "runtimes = [\"system\", \"debian-13\"]\nyjit = [false, true]",
                puma,
                &[
                    "puma@system+no-yjit",
                    "puma@system+yjit",
                    "puma@debian-13+no-yjit",
                    "puma@debian-13+yjit",
                ],
            ),
            // An entry's own lists win over the plan's: YJIT off and on
            // where it exists, beside debian-13 without it.
            (
                "runtimes = [\"debian-13\"]",
                "[[server]]\nname = \"puma\"\nruntimes = [\"system\"]\nyjit = [false, true]\n[[server]]\nname = \"puma\"\nworkers = [2]",
                &["puma+no-yjit", "puma+yjit", "puma-w2@debian-13"],
            ),
            (
                "yjit = [true]",
                "[[server]]\nname = \"puma\"\nlabel = \"mine\"",
                &["mine+yjit"],
            ),
        ];
        for (head, servers, want) in rows {
            let e = expand(head, servers);
            let got: Vec<&str> = e.trials.iter().map(|t| t.variant.as_str()).collect();
            assert_eq!(got, *want, "{head} / {servers}");
            let groups: std::collections::BTreeSet<&str> =
                e.trials.iter().map(|t| t.group.as_str()).collect();
            assert_eq!(groups.len(), e.trials.len(), "{head}: group names differ");
        }
    }

    #[test]
    fn each_trial_carries_its_runtime_and_switches_and_defaults_name_nothing() {
        let e = expand(
            "runtimes = [\"debian-13\"]\nallocator = [\"jemalloc\"]\nmalloc_arena_max = [2]",
            "servers = [\"puma\"]",
        );
        let t = &e.trials[0];
        assert_eq!(t.runtime.as_deref(), Some("debian-13"));
        assert_eq!(
            t.switches.allocator,
            Some(crate::runtime::Allocator::Jemalloc)
        );
        assert_eq!(t.switches.malloc_arena_max, Some(2));
        assert_eq!(t.switches.yjit, None);
        assert_eq!(
            t.group,
            "puma-debian-13-jemalloc-arenas-2__hello__direct__c10"
        );
        // Without the keys: the ids, groups and record of before runtimes.
        let plain = expand("", "servers = [\"puma\"]");
        let t = &plain.trials[0];
        assert_eq!(t.id, "puma__hello__direct__c10__rep1");
        assert_eq!((t.runtime.as_deref(), t.switches.is_empty()), (None, true));
        let json = serde_json::to_value(t).unwrap();
        assert!(
            json.get("runtime").is_none() && json.get("switches").is_none(),
            "{json}"
        );
    }
}
