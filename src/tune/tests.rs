use super::*;
use crate::telemetry::{gc::HeapPool, GcDetail};
use std::collections::BTreeMap;

/// A control of 10,000 requests with `share` of the time in GC and these
/// triggers, on `ruby`.
fn control(ruby: &str, share: f64, triggers: &[(&str, u64)]) -> Telemetry {
    let gc = GcDetail {
        ruby_version: ruby.into(),
        ruby_engine: "ruby".into(),
        heap_live_slots: Some(60_000),
        heap_free_slots: Some(4_000),
        malloc_increase_bytes_limit: Some(16 * (1 << 20)),
        oldmalloc_increase_bytes_limit: Some(40 * (1 << 20)),
        old_objects: Some(30_000),
        old_objects_limit: Some(60_000),
        heaps: vec![
            HeapPool {
                slot_size: 40,
                eden_slots: 50_000,
                allocated_objects: 30_000_000,
            },
            HeapPool {
                slot_size: 80,
                eden_slots: 7_000,
                allocated_objects: 10_000,
            },
            HeapPool {
                slot_size: 160,
                eden_slots: 8_000,
                allocated_objects: 10_000_000,
            },
        ],
        triggers: triggers.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
        ..Default::default()
    };
    Telemetry {
        requests: 10_000,
        gc_runs: triggers.iter().map(|t| t.1).sum(),
        gc_time_share: Some(share),
        gc_runs_per_1k_requests: triggers.iter().map(|t| t.1).sum::<u64>() as f64 / 10.0,
        allocated_objects_per_request: 4_000.0,
        gc: Some(gc),
        ..Default::default()
    }
}

fn rules(a: &Advice) -> Vec<&str> {
    a.proposals.iter().map(|p| p.rule.as_str()).collect()
}

#[test]
fn a_tiny_gc_share_is_nothing_to_gain_whatever_the_triggers() {
    let a = advise(&control("3.3.8", 0.004, &[("minor_by_newobj", 5_000)])).unwrap();
    assert!(a.proposals.is_empty());
    assert_eq!(
        a.nothing_to_gain.as_deref(),
        Some("the GC took 0.4% of the time (under 2.0%)")
    );
}

#[test]
fn a_full_heap_on_3_1_warms_up_the_one_heap() {
    let a = advise(&control("3.1.2", 0.2, &[("minor_by_newobj", 4_000)])).unwrap();
    assert_eq!(rules(&a), ["heap_init_slots"]);
    let p = &a.proposals[0];
    // 60,000 live + 25 requests of 4,000 objects.
    assert_eq!(
        p.env,
        BTreeMap::from([("RUBY_GC_HEAP_INIT_SLOTS".into(), "160000".into())])
    );
    assert!(
        p.evidence.contains("400 minor GCs per 1,000 requests"),
        "{}",
        p.evidence
    );
    assert_eq!(p.rubies, "3.1 and earlier (from 2.1)");
}

#[test]
fn a_full_heap_on_3_3_warms_up_each_pool_that_allocates_by_its_share() {
    let a = advise(&control("3.3.8", 0.2, &[("minor_by_newobj", 4_000)])).unwrap();
    let p = &a.proposals[0];
    // 160,000 slots: 3/4 to pool 0, 1/4 to pool 2; pool 1 allocates
    // almost nothing and is left alone. No RUBY_GC_HEAP_INIT_SLOTS: 3.3
    // ignores it.
    assert_eq!(
        p.env,
        BTreeMap::from([
            ("RUBY_GC_HEAP_0_INIT_SLOTS".into(), "120000".into()),
            ("RUBY_GC_HEAP_2_INIT_SLOTS".into(), "40000".into()),
        ])
    );
    assert_eq!(p.rubies, "3.3 and later");
}

#[test]
fn on_3_2_the_heap_rule_fires_but_proposes_nothing() {
    let a = advise(&control("3.2.4", 0.2, &[("minor_by_newobj", 4_000)])).unwrap();
    assert!(a.proposals.is_empty());
    assert!(
        a.not_for_this_ruby[0].contains("Ruby 3.2"),
        "{:?}",
        a.not_for_this_ruby
    );
    assert!(a.nothing_to_gain.is_none());
}

#[test]
fn few_minors_by_new_objects_or_a_heap_already_big_leave_the_heap_alone() {
    let a = advise(&control(
        "3.3.8",
        0.2,
        &[("minor_by_newobj", 90), ("major_by_force", 1)],
    ))
    .unwrap();
    assert!(
        a.proposals.is_empty() && a.nothing_to_gain.is_some(),
        "{a:?}"
    );
    let mut t = control("3.1.2", 0.2, &[("minor_by_newobj", 4_000)]);
    t.gc.as_mut().unwrap().heap_free_slots = Some(100_000);
    assert!(advise(&t).unwrap().proposals.is_empty());
}

#[test]
fn malloc_triggered_minors_above_a_tenth_raise_the_malloc_limit() {
    let at = |by_malloc| {
        let t = control(
            "3.3.8",
            0.1,
            &[
                ("minor_by_newobj", 90 - by_malloc),
                ("minor_by_malloc", by_malloc),
            ],
        );
        advise(&t).unwrap()
    };
    // 9 of 90 is 10%: not above.
    assert!(at(9).proposals.is_empty());
    let a = at(30);
    assert_eq!(rules(&a), ["malloc_limit"]);
    assert_eq!(
        a.proposals[0].env["RUBY_GC_MALLOC_LIMIT"],
        (32u64 << 20).to_string()
    );
    assert_eq!(
        a.proposals[0].env["RUBY_GC_MALLOC_LIMIT_MAX"],
        (64u64 << 20).to_string()
    );
    assert!(
        a.proposals[0].evidence.contains("30 of 90 minor GCs"),
        "{}",
        a.proposals[0].evidence
    );
}

#[test]
fn majors_by_reason_raise_that_reasons_limit() {
    let t = control(
        "3.1.2",
        0.1,
        &[
            ("major_by_oldmalloc", 20),
            ("major_by_oldgen", 15),
            ("major_by_nofree", 12),
            ("minor_by_newobj", 50),
        ],
    );
    let a = advise(&t).unwrap();
    assert_eq!(
        rules(&a),
        ["oldmalloc_limit", "oldobject_limit", "growth_factor"]
    );
    assert_eq!(
        a.proposals[0].env["RUBY_GC_OLDMALLOC_LIMIT"],
        (128u64 << 20).to_string()
    );
    assert_eq!(
        a.proposals[1].env["RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR"],
        "3.0"
    );
    assert_eq!(a.proposals[2].env["RUBY_GC_HEAP_GROWTH_FACTOR"], "2.5");
    // Under one per 1,000 requests: no.
    let t = control(
        "3.1.2",
        0.1,
        &[("major_by_oldgen", 9), ("minor_by_newobj", 50)],
    );
    assert!(advise(&t).unwrap().proposals.is_empty());
}

#[test]
fn jruby_no_detail_and_a_short_control_are_refused() {
    let mut t = control("3.1.4", 0.2, &[]);
    t.gc.as_mut().unwrap().ruby_engine = "jruby".into();
    assert_eq!(advise(&t).unwrap_err(), Unusable::NotCRuby("jruby".into()));
    let mut t = control("3.1.2", 0.2, &[]);
    t.requests = 300;
    assert!(advise(&t).unwrap_err().to_string().contains("300 requests"));
    t.gc = None;
    assert_eq!(advise(&t).unwrap_err(), Unusable::NoDetail);
    assert_eq!(ruby_minor("3.3.8"), Some((3, 3)));
    assert_eq!(ruby_minor("x"), None);
}

#[test]
fn the_line_to_paste_says_the_settings_the_gain_its_interval_and_the_gc_runs() {
    use super::document::{paste_line, Recommendation};
    let mut r = Recommendation {
        env: BTreeMap::from([
            ("RUBY_GC_HEAP_INIT_SLOTS".into(), "300000".into()),
            ("RUBY_GC_MALLOC_LIMIT".into(), "33554432".into()),
        ]),
        verdict: Some(crate::stats::sequential::Call::Faster),
        change_pct: Some(7.84),
        ci_low_pct: Some(5.1),
        ci_high_pct: Some(10.4),
        gc_runs_per_1k_before: Some(41.2),
        gc_runs_per_1k_after: Some(6.0),
        ab: None,
    };
    assert_eq!(
        paste_line(&r, "throughput", 0.05, None),
        "RUBY_GC_HEAP_INIT_SLOTS=300000 RUBY_GC_MALLOC_LIMIT=33554432: 7.8% more throughput \
         (95% CI +5.1% to +10.4%), GC runs per 1,000 requests 41 → 6"
    );
    assert!(paste_line(&r, "p99", 0.05, None).contains(": p99 +7.8% (95% CI"));
    r.env.clear();
    assert_eq!(
        paste_line(
            &r,
            "throughput",
            0.05,
            Some("the GC took 0.4% of the time (under 2.0%)")
        ),
        "nothing to gain: the GC took 0.4% of the time (under 2.0%)"
    );
}
