//! Unit tests of `report::compare`.

use super::*;

#[test]
fn a_small_but_certain_change_is_below_the_minimum_effect() {
    let certain = |ratio: f64| RatioInterval { estimate: ratio, low: ratio * 0.99, high: ratio * 1.01 };
    assert_eq!(verdict(certain(1.02), 0.05), Verdict::NoDifference);
    assert_eq!(verdict(certain(1.02), 0.01), Verdict::Faster);
    assert_eq!(verdict(certain(0.5), 0.05), Verdict::Slower);
    assert_eq!(verdict(RatioInterval { estimate: 1.3, low: 0.5, high: 3.0 }, 0.05), Verdict::TooFewSamples);
    assert_eq!(verdict(RatioInterval { estimate: 1.01, low: 0.95, high: 1.07 }, 0.05), Verdict::NoDifference);
}

#[test]
fn plans_that_differ_only_in_seed_are_the_same_plan() {
    let a = serde_json::json!({"seed": 1, "ops": 10, "data": {"rows": 5}});
    assert!(plan_differences(&a, &serde_json::json!({"seed": 2, "ops": 10, "data": {"rows": 5}})).is_empty());
    assert_eq!(plan_differences(&a, &serde_json::json!({"seed": 1, "ops": 20, "data": {"rows": 6}})), vec!["data", "ops"]);
}

/// Normal deviates from a fixed-seed generator (splitmix64 + Box-Muller): the same
/// synthetic comparison on every test run.
struct Normals(u64);

impl Normals {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn next(&mut self, sd: f64) -> f64 {
        let (u, v) = (self.uniform().max(1e-12), self.uniform());
        sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Two synthetic reports of `points` points with `runs` runs each. A point's runs
/// spread by a standard deviation between 3 % and 30 % (points differ, as short and
/// long runs do); each report puts every point in a time slot of its own that moves it
/// by a factor of sd 10 % (load, caches, CPU frequency: drift), and `changed(i)`
/// multiplies point i's true throughput in the second report. The intervals and
/// verdicts of the second against the first.
fn compared(points: usize, runs: usize, changed: impl Fn(usize) -> f64) -> Vec<(RatioInterval, Verdict)> {
    compared_with(points, runs, changed).0
}

/// `compared`, and the width of the interval an oracle that knew every variance would
/// give the median point.
fn compared_with(points: usize, runs: usize, changed: impl Fn(usize) -> f64) -> (Vec<(RatioInterval, Verdict)>, f64) {
    let spread = |i: usize| 0.03 * 10f64.powf((i % 5) as f64 / 4.0);
    let oracle = (2.0 * 0.10f64.powi(2) + 2.0 * spread(2).powi(2) / runs as f64).sqrt();
    let oracle_width = (2.0 * 2.576 * oracle).exp();
    let mut normal = Normals(7);
    let mut report = |factor: &dyn Fn(usize) -> f64| -> Vec<Vec<f64>> {
        (0..points)
            .map(|i| {
                let slot = normal.next(0.10);
                (0..runs).map(|_| 1000.0 * factor(i) * (slot + normal.next(spread(i))).exp()).collect()
            })
            .collect()
    };
    let (a, b) = (report(&|_| 1.0), report(&changed));
    let (model_a, model_b) = (Model::fit(a.iter().map(Vec::as_slice)), Model::fit(b.iter().map(Vec::as_slice)));
    let pairs: Vec<(LogEstimate, LogEstimate)> =
        a.iter().zip(&b).map(|(a, b)| (model_a.estimate(a, 0.0).unwrap(), model_b.estimate(b, 0.0).unwrap())).collect();
    let verdicts = intervals(&pairs, model_a.drift() + model_b.drift()).into_iter().map(|i| (i, verdict(i, 0.05))).collect();
    (verdicts, oracle_width)
}

fn called(v: &[(RatioInterval, Verdict)]) -> usize {
    v.iter().filter(|(_, v)| matches!(v, Verdict::Faster | Verdict::Slower)).count()
}

#[test]
fn drift_between_reports_is_not_a_difference_and_intervals_stay_narrow() {
    for runs in [2, 3] {
        let (aa, oracle_width) = compared_with(100, runs, |_| 1.0);
        assert!(called(&aa) <= 5, "{runs} runs: an A/A comparison calls at most 5 % of 100 points: {}", called(&aa));
        let widths: Vec<f64> = aa.iter().map(|(i, _)| i.width()).collect();
        let median_width = median(&widths).unwrap();
        // Within twice the oracle's interval on the log scale (the t at 3 degrees of
        // freedom that real A/A pairs need for their heavy tails costs that on normal
        // data); Welch's t on each point's own 2 runs would be about 25 times as wide.
        assert!(
            median_width.ln() <= 2.0 * oracle_width.ln(),
            "{runs} runs: median interval {median_width:.2}x wide, oracle {oracle_width:.2}x"
        );
    }
}

#[test]
fn real_changes_stay_visible_beside_the_drift() {
    // A tenth of the points 4x faster, one in twenty 4x slower: each is called, as it went.
    let changed = |i: usize| match i % 20 {
        0 | 10 => 4.0,
        5 => 0.25,
        _ => 1.0,
    };
    for runs in [2, 3] {
        let v = compared(100, runs, changed);
        let (mut right, mut wrong, mut missed) = (0, 0, Vec::new());
        for (i, (interval, verdict)) in v.iter().enumerate() {
            let expected = match changed(i) {
                r if r > 1.0 => Verdict::Faster,
                r if r < 1.0 => Verdict::Slower,
                _ => continue,
            };
            match verdict {
                v if *v == expected => right += 1,
                Verdict::Faster | Verdict::Slower => wrong += 1,
                _ => missed.push((i, *interval)),
            }
        }
        // Never the wrong way; with 3 runs every one, with 2 all but one (the t at 3
        // degrees of freedom that real A/A pairs need costs a point whose own runs happened
        // to spread wide).
        assert_eq!(wrong, 0, "{runs} runs");
        assert!(missed.len() <= 3 - runs, "{runs} runs: {right} called, missed {missed:?}");
        assert!(called(&v) <= 15 + 5, "{runs} runs: few unchanged points called: {}", called(&v));
    }
    // Every point 4x slower: the drift is the spread around the common change, not the
    // change itself, so the points stay slower (all but a few whose own runs spread wide:
    // those are too few samples, never faster).
    let all = compared(60, 3, |_| 0.25);
    let slower = all.iter().filter(|(_, v)| *v == Verdict::Slower).count();
    assert!(slower >= 55 && all.iter().all(|(_, v)| matches!(v, Verdict::Slower | Verdict::TooFewSamples)), "{all:?}");
}

#[test]
fn short_runs_are_allowed_to_drift_more_than_long_ones() {
    // Deviations 0.4 at 100 µs, 0.1 at 100 ms: a line in the log run length.
    let (mut differences, mut seconds) = (Vec::new(), Vec::new());
    for i in 0..40 {
        let (deviation, s) = if i % 2 == 0 { (0.4, 1e-4) } else { (0.1, 1e-1) };
        differences.push(if i % 4 < 2 { deviation } else { -deviation });
        seconds.push(Some(f64::ln(s)));
    }
    let drift = drift_trend(&differences, &seconds, 0.0);
    let sd = |s: f64| drift(Some(s.ln())).sqrt() / 1.4826;
    assert!((sd(1e-4) - 0.4).abs() < 1e-9 && (sd(1e-1) - 0.1).abs() < 1e-9, "{} {}", sd(1e-4), sd(1e-1));
    assert!(sd(1e-2) < sd(1e-3) && sd(1e-3) < sd(1e-4), "in between, in order");
    // Without run lengths: one deviation for all.
    let flat = drift_trend(&differences, &vec![None; 40], 0.0);
    assert_eq!(flat(None), flat(Some(0.0)));
}

#[test]
fn runs_of_about_one_length_make_no_slope() {
    // `--quick`: most runs last their 30 ms, a little longer or shorter. Here the 30 ms
    // points that ran a hair longer happen to have moved less, which read as a steep fall
    // of drift with run length: the line then gave the unchanged 150 ms points almost no
    // drift and called them different. Bins within a factor of two of each other make no
    // slope; these points all stay untested differences.
    let e = |mean: f64, seconds: f64| LogEstimate { mean, variance: 1e-6, degrees_of_freedom: 5.0, runs: 2, run_seconds: Some(seconds) };
    let sign = |i: usize| if i.is_multiple_of(2) { 1.0 } else { -1.0 };
    let mut pairs = Vec::new();
    for i in 0..72 {
        pairs.push((e(0.0, 0.03), e(sign(i) * (0.12 - 0.0012 * i as f64), 0.03 * (1.0 + 0.0003 * i as f64))));
    }
    for i in 0..8 {
        pairs.push((e(0.0, 0.15), e(sign(i) * 0.1, 0.15)));
    }
    for i in 0..4 {
        pairs.push((e(0.0, 1e-4), e(sign(i) * 0.3, 1e-4)));
    }
    let v = intervals(&pairs, 0.0);
    let called: Vec<usize> = (0..v.len()).filter(|&i| matches!(verdict(v[i], 0.05), Verdict::Faster | Verdict::Slower)).collect();
    assert!(called.is_empty(), "nothing changed, yet {called:?} were called: {:?}", called.iter().map(|&i| v[i]).collect::<Vec<_>>());
    // And a real 6x change among them is still called.
    pairs[72].1.mean = 6f64.ln();
    assert_eq!(verdict(intervals(&pairs, 0.0)[72], 0.05), Verdict::Faster);
}

#[test]
fn with_few_common_points_each_side_keeps_its_own_variance_and_one_run_of_drift() {
    let e = |mean: f64| LogEstimate { mean, variance: 0.001, degrees_of_freedom: 5.0, runs: 2, run_seconds: None };
    let few = intervals(&[(e(0.0), e(0.1)); 3], 0.02);
    let by_hand =
        RatioInterval::of(0.1, &[e(0.0).into(), e(0.1).into(), VariancePart { variance: 0.02, degrees_of_freedom: 1e6 }], CONFIDENCE);
    assert_eq!(few[0], by_hand);
}
