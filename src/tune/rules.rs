//! The rules, one function each, with their thresholds (docs/TUNING.md
//! says where each comes from). A rule returns None when its figure stays
//! under the threshold, Some(Err(why)) when it fired but this Ruby reads
//! none of the variables it would set, Some(Ok(proposal)) otherwise.

use super::proposal::{pct, Proposal};
use crate::telemetry::{GcDetail, Telemetry};
use std::collections::BTreeMap;

/// Under this GC time share there is nothing to gain.
pub const NOTHING_TO_GAIN_SHARE: f64 = 0.02;
/// Fewer requests than this in the control: too few to judge the GC.
pub const FEW_REQUESTS: u64 = 1_000;
/// Minors triggered by new objects (a full heap) per 1,000 requests from
/// which the heap is warmed up.
pub const NEWOBJ_RUNS_PER_1K: f64 = 10.0;
/// The warmed-up heap holds this many requests' allocations in free
/// slots: at most one minor GC per this many requests.
pub const HEAP_TARGET_REQUESTS: f64 = 25.0;
/// The most slots the heap rule proposes per process (about 80 MB of
/// 40-byte slots).
pub const MAX_HEAP_SLOTS: u64 = 2_000_000;
/// Malloc-triggered minors over all minors above which the malloc limit
/// is raised (autotuner's 10%).
pub const MALLOC_MINOR_SHARE: f64 = 0.10;
/// Classified GCs a share is judged on, at least.
const FEW_GCS: u64 = 10;
/// Major GCs of one reason per 1,000 requests from which that reason's
/// limit is raised.
const MAJORS_PER_1K: f64 = 1.0;

const MIB: u64 = 1 << 20;

type Fired = Option<Result<Proposal, String>>;

/// Every rule in docs/TUNING.md's order; those that fired.
pub(super) fn all(
    t: &Telemetry,
    gc: &GcDetail,
    version: (u32, u32),
) -> Vec<Result<Proposal, String>> {
    [
        heap_init_slots(t, gc, version),
        malloc_limit(gc),
        oldmalloc_limit(t, gc),
        oldobject_limit(t, gc),
        growth_factor(t, gc),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// "nothing to gain: ..." when the GC's share of the time is tiny.
pub(super) fn nothing_to_gain(t: &Telemetry) -> Option<String> {
    match t.gc_time_share {
        Some(s) if s < NOTHING_TO_GAIN_SHARE => Some(format!(
            "the GC took {} of the time (under {})",
            pct(s),
            pct(NOTHING_TO_GAIN_SHARE)
        )),
        Some(_) => None,
        // A Ruby without GC time: judge by runs alone.
        None if t.gc_runs_per_1k_requests < 1.0 => Some(format!(
            "the GC ran {:.1} times per 1,000 requests",
            t.gc_runs_per_1k_requests
        )),
        None => None,
    }
}

fn per_1k(n: u64, requests: u64) -> f64 {
    if requests == 0 {
        0.0
    } else {
        n as f64 * 1000.0 / requests as f64
    }
}

fn trigger(gc: &GcDetail, key: &str) -> u64 {
    gc.triggers.get(key).copied().unwrap_or(0)
}

/// Round up to a multiple of `step`.
fn round_up(v: u64, step: u64) -> u64 {
    v.div_ceil(step) * step
}

fn proposal(rule: &str, env: &[(String, u64)], evidence: String, rubies: &str) -> Proposal {
    Proposal {
        rule: rule.into(),
        env: env
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect(),
        evidence,
        rubies: rubies.into(),
    }
}

/// A heap too small for the requests' allocations fills between requests
/// and a minor GC empties it: start the heap (per size pool from 3.3)
/// with room for HEAP_TARGET_REQUESTS requests' objects besides the live
/// ones.
fn heap_init_slots(t: &Telemetry, gc: &GcDetail, version: (u32, u32)) -> Fired {
    let newobj = per_1k(trigger(gc, "minor_by_newobj"), t.requests);
    if newobj < NEWOBJ_RUNS_PER_1K {
        return None;
    }
    let live = gc.heap_live_slots?;
    let available = live + gc.heap_free_slots.unwrap_or(0);
    let want = live as f64 + t.allocated_objects_per_request * HEAP_TARGET_REQUESTS;
    let target = round_up((want as u64).min(MAX_HEAP_SLOTS), 10_000);
    if (target as f64) < available as f64 * 1.2 {
        return None;
    }
    let evidence = format!(
        "{newobj:.0} minor GCs per 1,000 requests triggered by a full heap (threshold {NEWOBJ_RUNS_PER_1K:.0}); \
         {live} live slots, {:.0} objects allocated per request: {target} slots hold {HEAP_TARGET_REQUESTS:.0} \
         requests' objects (at most {MAX_HEAP_SLOTS}), about {} MB more heap per process",
        t.allocated_objects_per_request,
        (target.saturating_sub(available) * 40) >> 20
    );
    if version < (3, 2) {
        let env = [("RUBY_GC_HEAP_INIT_SLOTS".to_string(), target)];
        return Some(Ok(proposal(
            "heap_init_slots",
            &env,
            evidence,
            "3.1 and earlier (from 2.1)",
        )));
    }
    if version < (3, 3) {
        return Some(Err(format!(
            "heap_init_slots: {newobj:.0} minor GCs per 1,000 requests by a full heap, but Ruby 3.2 has \
             size pools without a variable per pool (RUBY_GC_HEAP_%d_INIT_SLOTS came in 3.3)"
        )));
    }
    // Each pool its share of the target, by the objects allocated in it.
    let total: u64 = gc.heaps.iter().map(|p| p.allocated_objects).sum();
    let eden: u64 = gc.heaps.iter().map(|p| p.eden_slots).sum();
    let env: Vec<(String, u64)> = gc
        .heaps
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let share = if total > 0 {
                p.allocated_objects as f64 / total as f64
            } else {
                p.eden_slots as f64 / eden.max(1) as f64
            };
            let slots = round_up(((target as f64 * share) as u64).max(p.eden_slots), 1_000);
            (share >= 0.01).then(|| (format!("RUBY_GC_HEAP_{i}_INIT_SLOTS"), slots))
        })
        .collect();
    if env.is_empty() {
        return None;
    }
    Some(Ok(proposal(
        "heap_init_slots",
        &env,
        evidence,
        "3.3 and later",
    )))
}

/// Malloc'd bytes (strings' and arrays' buffers) reaching the malloc limit
/// trigger minors of their own: above MALLOC_MINOR_SHARE of the minors,
/// double the limit (32 MiB at least).
fn malloc_limit(gc: &GcDetail) -> Fired {
    let (minors, by_malloc) = gc.minors();
    if minors < FEW_GCS || (by_malloc as f64) <= MALLOC_MINOR_SHARE * minors as f64 {
        return None;
    }
    let limit = gc.malloc_increase_bytes_limit.unwrap_or(16 * MIB);
    let v = round_up((2 * limit).max(32 * MIB), MIB);
    let env = [
        ("RUBY_GC_MALLOC_LIMIT".to_string(), v),
        ("RUBY_GC_MALLOC_LIMIT_MAX".to_string(), 2 * v),
    ];
    let evidence = format!(
        "{by_malloc} of {minors} minor GCs triggered by the malloc limit ({}, threshold {}); the limit \
         reached {limit} bytes",
        pct(by_malloc as f64 / minors as f64),
        pct(MALLOC_MINOR_SHARE)
    );
    Some(Ok(proposal(
        "malloc_limit",
        &env,
        evidence,
        "2.1 and later",
    )))
}

/// Majors by reason per 1,000 requests, and all classified majors.
fn majors(t: &Telemetry, gc: &GcDetail, reason: &str) -> (u64, f64, u64) {
    let m = gc.majors();
    let n = m.get(reason).copied().unwrap_or(0);
    (n, per_1k(n, t.requests), m.values().sum())
}

/// Old objects' malloc'd bytes reaching the oldmalloc limit trigger
/// majors: from MAJORS_PER_1K of them, double the limit (128 MiB at least,
/// the default maximum).
fn oldmalloc_limit(t: &Telemetry, gc: &GcDetail) -> Fired {
    let (n, rate, all) = majors(t, gc, "oldmalloc");
    if n < 2 || rate < MAJORS_PER_1K {
        return None;
    }
    let limit = gc.oldmalloc_increase_bytes_limit.unwrap_or(16 * MIB);
    let v = round_up((2 * limit).max(128 * MIB), MIB);
    let env = [
        ("RUBY_GC_OLDMALLOC_LIMIT".to_string(), v),
        ("RUBY_GC_OLDMALLOC_LIMIT_MAX".to_string(), 2 * v),
    ];
    let evidence = format!(
        "{n} of {all} major GCs by the oldmalloc limit, {rate:.1} per 1,000 requests (threshold \
         {MAJORS_PER_1K:.0}); the limit reached {limit} bytes"
    );
    Some(Ok(proposal(
        "oldmalloc_limit",
        &env,
        evidence,
        "2.1 and later",
    )))
}

/// Old objects reaching their limit (twice the old objects after the last
/// major, by default) trigger majors: from MAJORS_PER_1K of them, a limit
/// of three times.
fn oldobject_limit(t: &Telemetry, gc: &GcDetail) -> Fired {
    let (n, rate, all) = majors(t, gc, "oldgen");
    if n < 2 || rate < MAJORS_PER_1K {
        return None;
    }
    let evidence = format!(
        "{n} of {all} major GCs by old objects reaching their limit, {rate:.1} per 1,000 requests \
         (threshold {MAJORS_PER_1K:.0}); {} old objects against a limit of {}",
        gc.old_objects.unwrap_or(0),
        gc.old_objects_limit.unwrap_or(0)
    );
    let mut p = proposal("oldobject_limit", &[], evidence, "2.1 and later");
    p.env = BTreeMap::from([(
        "RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR".to_string(),
        "3.0".to_string(),
    )]);
    Some(Ok(p))
}

/// A heap still growing in the window (majors because a GC left no free
/// slot): grow it in bigger steps, 2.5 times against the default 1.8.
fn growth_factor(t: &Telemetry, gc: &GcDetail) -> Fired {
    let (n, rate, all) = majors(t, gc, "nofree");
    if n < 2 || rate < MAJORS_PER_1K {
        return None;
    }
    let evidence = format!(
        "{n} of {all} major GCs because a GC left no free slot, {rate:.1} per 1,000 requests \
         (threshold {MAJORS_PER_1K:.0}): the heap was still growing"
    );
    let mut p = proposal("growth_factor", &[], evidence, "2.1 and later");
    p.env = BTreeMap::from([("RUBY_GC_HEAP_GROWTH_FACTOR".to_string(), "2.5".to_string())]);
    Some(Ok(p))
}
