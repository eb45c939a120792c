//! The names a plan gives its trials: a variant's name (the entry's
//! label, or the server with its workers, threads, instances and
//! settings, then its flavour: runtime, switches, budget, slow clients),
//! a combination's group (variant, app, front, load shape) and a trial's
//! id (group and repeat). A part is named only when the plan varies it or
//! asks something other than the default, so the ids of old plans, and
//! `--resume` over them, stay the same. It only names: it never decides
//! which combinations exist (expand.rs, flavour.rs, fronts.rs do).

use super::{ServerEntry, Shape};
use crate::lab::front::{self, HttpVersion};
use crate::runtime::{Allocator, Switches, SYSTEM};

/// A name made safe for a file or directory: every character other than
/// ASCII letters, digits, `.`, `-` and `_` becomes `-`.
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A combination's group: the variant, the app, the front (`direct`, or
/// `nginx` with its workers and, where they differ from the default, its
/// keep-alive and HTTP version) and the load shape, as one slug
/// ("puma-w2__hello__nginx1__c10"). `nginx` is (workers, keep-alive,
/// HTTP version), None for a direct trial.
pub(super) fn group_name(
    variant: &str,
    app: &str,
    nginx: Option<(u32, u32, HttpVersion)>,
    shape: &Shape,
) -> String {
    let topo = match nginx {
        Some((nw, ka, http)) => format!("nginx{nw}{}", front::slug(ka, http)),
        None => "direct".into(),
    };
    let load = match shape.rate {
        Some(r) => format!("r{r}"),
        None => format!("c{}", shape.connections),
    };
    slug(&format!("{variant}__{app}__{topo}__{load}"))
}

/// A trial's id: its group and its repeat ("puma__hello__direct__c10__rep1").
pub(super) fn trial_id(group: &str, repeat: u32) -> String {
    format!("{group}__rep{repeat}")
}

/// A budget's part of a variant's name: "+mem=512M+cpus=1.5", or "".
pub(super) fn budget_name(b: Option<&crate::budget::Budget>) -> String {
    let mut name = String::new();
    if let Some(m) = b.and_then(|b| b.memory_limit_bytes) {
        name.push_str(&format!("+mem={}", crate::budget::format_size(m)));
    }
    if let Some(c) = b.and_then(|b| b.cpus) {
        name.push_str(&format!("+cpus={c}"));
    }
    name
}

/// A flavour's part of a variant's name. The runtime is shown as
/// `@NAME` and each switch as `+VALUE` only when the plan varies it or
/// asks something other than the default: `@system` only beside another
/// runtime, `+no-yjit` and `+glibc` only beside `+yjit` and `+jemalloc`;
/// `+arenas=N` whenever set (unset is glibc's default). `varies` is
/// (runtime, yjit, allocator).
pub(super) fn flavour_name(runtime: Option<&str>, s: &Switches, varies: [bool; 3]) -> String {
    let [runtime_varies, yjit_varies, allocator_varies] = varies;
    let mut name = String::new();
    if let Some(r) = runtime.filter(|r| runtime_varies || *r != SYSTEM) {
        name.push_str(&format!("@{r}"));
    }
    match s.yjit {
        Some(true) => name.push_str("+yjit"),
        Some(false) if yjit_varies => name.push_str("+no-yjit"),
        _ => {}
    }
    match s.allocator {
        Some(Allocator::Jemalloc) => name.push_str("+jemalloc"),
        Some(Allocator::Glibc) if allocator_varies => name.push_str("+glibc"),
        _ => {}
    }
    if let Some(n) = s.malloc_arena_max {
        name.push_str(&format!("+arenas={n}"));
    }
    name
}

impl ServerEntry {
    /// The variant's name: the entry's label, or the server's name with
    /// its workers, threads, instances and settings.
    pub(super) fn variant(&self, w: Option<u32>, t: Option<u32>, n: Option<u32>) -> String {
        let mut variant = self.label.clone().unwrap_or_else(|| self.name.clone());
        if self.label.is_none() {
            if let Some(w) = w {
                variant.push_str(&format!("-w{w}"));
            }
            if let Some(t) = t {
                variant.push_str(&format!("-t{t}"));
            }
            if let Some(n) = n {
                variant.push_str(&format!("-x{n}"));
            }
            for (k, v) in &self.settings {
                variant.push_str(&format!("-{k}={v}"));
            }
        }
        variant
    }
}
