use super::*;

/// A run of one group: six repeats of throughput near `level`, a little
/// noise that differs by run.
fn run(i: usize, level: f64) -> Run {
    let mut g = GroupSamples {
        variant: "puma".into(),
        ..Default::default()
    };
    let xs: Vec<f64> = (0..6)
        .map(|r| level * (1.0 + (((i * 7 + r * 3) % 11) as f64 - 5.0) * 0.002))
        .collect();
    g.figures.insert("throughput", xs);
    let key = "hello direct connections=4".to_string();
    Run {
        dir: PathBuf::from(format!("runs/{i:02}")),
        started: format!("2026-11-{:02}T03:00:00Z", i + 1),
        commit: None,
        runtime: None,
        samples: SideSamples {
            groups: [(key.clone(), g)].into(),
            disturbed: [(key, DisturbedRuns::default())].into(),
            runtimes: Vec::new(),
        },
    }
}

#[test]
fn the_median_interval_holds_95_percent_or_is_the_range() {
    // n = 6: P(x₁ ≤ m ≤ x₆) = 1 − 2/64 = 96.9%; x₂..x₅ only 78%.
    let six = [6.0, 1.0, 5.0, 2.0, 4.0, 3.0];
    assert_eq!(median_interval(&six), (1.0, 6.0));
    // n = 5 is short of 95% even at the range: the range.
    assert_eq!(median_interval(&[3.0, 1.0, 2.0, 5.0, 4.0]), (1.0, 5.0));
    // n = 17: x₅..x₁₃ holds 95.1% (x₆..x₁₂ 85.7%).
    let xs: Vec<f64> = (1..=17).map(f64::from).collect();
    assert_eq!(median_interval(&xs), (5.0, 13.0));
}

#[test]
fn baselines_parse_and_refuse_a_bad_count() {
    assert_eq!(Baseline::parse("last"), Ok(Baseline::Last));
    assert_eq!(Baseline::parse("median-of-5"), Ok(Baseline::MedianOf(5)));
    assert_eq!(
        Baseline::parse("runs/01"),
        Ok(Baseline::Dir(PathBuf::from("runs/01")))
    );
    for bad in ["median-of-0", "median-of-x", "median-of-"] {
        assert!(Baseline::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_step_part_way_is_the_one_step_and_gates_the_newest_run() {
    // Throughput drops 20% from run 5 on.
    let runs: Vec<Run> = (0..10)
        .map(|i| run(i, if i < 5 { 1000.0 } else { 800.0 }))
        .collect();
    let (h, newest) = build(&runs, &Baseline::Last, None, 1, Some("throughput"));
    let s = &h.groups[0];
    assert_eq!(h.groups.len(), 1);
    assert_eq!(s.steps.len(), 1, "{:?}", s.steps);
    assert_eq!(
        (s.steps[0].from.as_str(), s.steps[0].to.as_str()),
        ("runs/04", "runs/05")
    );
    assert_eq!(s.steps[0].verdict, "slower");
    let words: Vec<Option<&str>> = s
        .points
        .iter()
        .map(|p| p.verdict_vs_baseline.as_deref())
        .collect();
    assert_eq!(words[0], None, "the first run makes the baseline");
    assert_eq!(words[5], Some("slower"));
    assert!(
        words[1..5]
            .iter()
            .chain(&words[6..])
            .all(|w| *w == Some("equivalent")),
        "{words:?}"
    );
    // Against the last run the newest is equivalent: no failure.
    let rule = FailIf::parse("throughput<-5%").unwrap();
    let rules = [rule];
    assert!(breaches(&newest.unwrap(), &rules).is_empty());
    // Against run 0, or the median of the 5 before a newest run just
    // past the step, it fails.
    let (_, newest) = build(
        &runs,
        &Baseline::Dir("runs/00".into()),
        Some(&runs[0]),
        1,
        Some("throughput"),
    );
    assert_eq!(breaches(&newest.unwrap(), &rules).len(), 1);
    let (h, newest) = build(
        &runs[..6],
        &Baseline::MedianOf(5),
        None,
        1,
        Some("throughput"),
    );
    assert_eq!(breaches(&newest.unwrap(), &rules).len(), 1);
    assert!(h.groups[0].points[..5]
        .iter()
        .all(|p| p.verdict_vs_baseline.is_none()));
}

#[test]
fn an_aa_series_has_no_step_and_passes() {
    let runs: Vec<Run> = (0..10).map(|i| run(i, 1000.0)).collect();
    for baseline in [Baseline::Last, Baseline::MedianOf(3)] {
        let (h, newest) = build(&runs, &baseline, None, 1, Some("throughput"));
        assert!(h.groups[0].steps.is_empty(), "{:?}", h.groups[0].steps);
        let rules = [FailIf::parse("throughput<-1%").unwrap()];
        assert!(breaches(&newest.unwrap(), &rules).is_empty());
    }
}
