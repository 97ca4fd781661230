use super::*;

fn golden() -> Report {
    serde_json::from_str(include_str!("../../../tests/golden/report.json")).unwrap()
}

/// Gives every measured run of `target` in `experiment` a throughput from `values` (in
/// turn), so the findings can be checked against numbers known in advance.
fn set_throughputs(report: &mut Report, experiment: &str, target: &str, values: &[f64]) {
    for p in report.points.iter_mut().filter(|p| p.experiment == experiment && p.target == target) {
        for (run, value) in p.runs.iter_mut().filter(|r| !r.warmup).zip(values.iter().cycle()) {
            run.seconds = 1.0;
            run.ok_ops = *value as u64;
        }
    }
}

fn finding<'a>(f: &'a Findings, experiment: &str) -> &'a ExperimentFinding {
    f.experiments.iter().find(|e| e.experiment == experiment).unwrap()
}

#[test]
fn every_experiment_but_the_echo_floor_is_ranked_without_the_client_ceiling() {
    let f = Findings::of(&golden());
    let names: Vec<&str> = f.experiments.iter().map(|e| e.experiment.as_str()).collect();
    assert_eq!(names, ["echo", "insert", "range-count"], "in the report's order");
    assert_eq!(f.targets, ["sqlite", "duckdb", "redb"]);
    for e in &f.experiments {
        assert!(e.standings.iter().all(|s| s.target != "nodb"), "{e:?}");
        let rates: Vec<f64> = e.standings.iter().filter_map(|s| s.ops_per_sec).collect();
        assert!(rates.windows(2).all(|w| w[0] >= w[1]), "fastest first: {rates:?}");
        assert_eq!(e.standings[0].behind_estimate, Some(1.0), "the leader is 1x itself");
        assert!(e.standings[0].behind.is_none());
    }
}

#[test]
fn the_headline_states_the_ratio_and_its_interval() {
    let mut r = golden();
    set_throughputs(&mut r, "echo", "sqlite", &[1000.0, 1010.0, 990.0]);
    set_throughputs(&mut r, "echo", "duckdb", &[100.0, 101.0, 99.0]);
    set_throughputs(&mut r, "echo", "redb", &[10.0, 10.1, 9.9]);
    let f = Findings::of(&r);
    let echo = finding(&f, "echo");
    let order: Vec<&str> = echo.standings.iter().map(|s| s.target.as_str()).collect();
    assert_eq!(order, ["sqlite", "duckdb", "redb"]);
    let duckdb = echo.standings[1].behind.unwrap();
    assert!((duckdb.estimate - 10.0).abs() < 0.01 && duckdb.low > 9.0 && duckdb.high < 11.0, "{duckdb:?}");
    let sentence = echo.sentence();
    assert!(sentence.starts_with("sqlite is 10.0x faster than duckdb (95 % interval 9."), "{sentence}");
    let redb = Findings::relative(echo, "redb").unwrap();
    assert!((redb - 100.0).abs() < 1.0, "redb's time is 100x sqlite's: {redb}");
}

#[test]
fn equal_targets_are_tied_and_void_ones_rank_last_unrated() {
    let mut r = golden();
    set_throughputs(&mut r, "echo", "sqlite", &[1000.0, 1001.0, 999.0]);
    set_throughputs(&mut r, "echo", "duckdb", &[1000.5, 999.5, 1000.0]);
    for p in r.points.iter_mut().filter(|p| p.experiment == "echo" && p.target == "redb") {
        p.flags.push(Flag::Errors { count: 3, failed_ops: 3 });
    }
    let f = Findings::of(&r);
    let echo = finding(&f, "echo");
    assert!(echo.sentence().starts_with("sqlite and duckdb are tied (1.00x apart, 95 % interval 0.9"), "{}", echo.sentence());
    assert_eq!(echo.standings[1].call, Some(Call::Tied));
    assert_eq!(echo.standings[1].value(), "1000/s (tied)");
    let last = echo.standings.last().unwrap();
    assert_eq!(last.target, "redb");
    assert_eq!((last.ops_per_sec, last.behind_estimate), (None, None));
    assert_eq!(last.caveats, ["VOID: 3 failed requests"]);
    assert_eq!(Findings::relative(echo, "redb"), None);
}

#[test]
fn spread_runs_are_too_few_to_rank_and_say_how_to_get_enough() {
    let mut r = golden();
    // Every point's runs ±10 % apart (a busy machine); sqlite and duckdb 1.05x apart: the
    // interval includes 1 and is wide.
    let pairs: Vec<(String, String)> = r.points.iter().map(|p| (p.experiment.clone(), p.target.clone())).collect();
    for (experiment, target) in &pairs {
        set_throughputs(&mut r, experiment, target, &[1000.0, 1100.0, 900.0]);
    }
    set_throughputs(&mut r, "echo", "sqlite", &[1000.0, 900.0, 1100.0]);
    set_throughputs(&mut r, "echo", "duckdb", &[1050.0, 950.0, 1000.0]);
    set_throughputs(&mut r, "echo", "redb", &[10.0, 10.1, 9.9]);
    let f = Findings::of(&r);
    let echo = finding(&f, "echo");
    let second = &echo.standings[1];
    assert_eq!(second.call, Some(Call::TooFewSamples), "{second:?}");
    let hint = second.too_few.as_deref().unwrap();
    assert_eq!(hint, "2 runs of 1 s each; use --runs 5 or --duration 10s");
    let sentence = echo.sentence();
    assert!(sentence.starts_with("duckdb and sqlite cannot be ranked: 1.05x apart, 95 % interval 0.8"), "{sentence}");
    assert!(sentence.ends_with("too few samples (2 runs of 1 s each; use --runs 5 or --duration 10s)"), "{sentence}");
    assert_eq!(second.value(), "950/s (1.05x slower?)");
    assert_eq!(second.caveats, ["too few samples to rank against duckdb"]);
    // Two clearly apart targets with the same spread are still ranked.
    set_throughputs(&mut r, "echo", "duckdb", &[105.0, 95.0, 100.0]);
    let f = Findings::of(&r);
    assert_eq!(finding(&f, "echo").standings[1].call, Some(Call::Different));
}

#[test]
fn a_single_run_is_not_tested_and_no_interval_is_ever_wider_than_100x() {
    let mut r = golden();
    for p in r.points.iter_mut() {
        let mut measured = 0;
        p.runs.retain(|run| {
            run.warmup || {
                measured += 1;
                measured == 1
            }
        });
    }
    let f = Findings::of(&r);
    for e in &f.experiments {
        assert!(e.standings.iter().all(|s| s.behind.is_none()), "{e:?}");
        let sentence = e.sentence();
        assert!(sentence.contains("not tested: 1 run"), "{sentence}");
    }
    // Two runs, one of them 1,000x off: the interval is too wide to print.
    let mut r = golden();
    set_throughputs(&mut r, "echo", "sqlite", &[1000.0, 1.0]);
    set_throughputs(&mut r, "echo", "duckdb", &[900.0, 850.0]);
    set_throughputs(&mut r, "echo", "redb", &[10.0, 10.1]);
    let f = Findings::of(&r);
    let sentence = finding(&f, "echo").sentence();
    assert!(!sentence.contains("interval"), "{sentence}");
    for o in &f.overall {
        let text = o.text();
        if let (Some(lo), Some(hi)) = (o.low, o.high) {
            assert!(hi / lo <= 100.0 || !text.contains('('), "{text}");
        }
    }
}

#[test]
fn the_overall_score_is_the_geometric_mean_of_relative_times() {
    let mut r = golden();
    for (experiment, slow) in [("insert", 10.0), ("echo", 1000.0), ("range-count", 100.0)] {
        set_throughputs(&mut r, experiment, "sqlite", &[1e5, 1.01e5, 0.99e5]);
        set_throughputs(&mut r, experiment, "duckdb", &[1e5 / slow, 1.01e5 / slow, 0.99e5 / slow]);
        set_throughputs(&mut r, experiment, "redb", &[1e5, 1.01e5, 0.99e5]);
    }
    let f = Findings::of(&r);
    let duckdb = f.overall.iter().find(|o| o.target == "duckdb").unwrap();
    assert!((duckdb.geometric_mean.unwrap() - 100.0).abs() < 0.5, "geometric mean of 10, 1000, 100: {duckdb:?}");
    assert!(duckdb.low.unwrap() < 100.0 && duckdb.high.unwrap() > 100.0, "{duckdb:?}");
    assert_eq!(duckdb.experiments_with_value, 3);
    let sqlite = f.overall.iter().find(|o| o.target == "sqlite").unwrap();
    assert!(sqlite.geometric_mean.unwrap() < 1.05, "{sqlite:?}");
}

#[test]
fn ratios_keep_three_significant_digits() {
    let cases = [(0.0004321, "0.000432x"), (0.25, "0.250x"), (1.0, "1.00x"), (3.456, "3.46x"), (10.0, "10.0x"), (20992.0, "20992x")];
    for (ratio, text) in cases {
        assert_eq!(times(ratio), text);
    }
}

#[test]
fn differing_durability_is_called_out_strongest_first() {
    let mut r = golden();
    let template = r.targets[0].clone();
    let settings = |level: &str| [("durability".to_string(), format!("{level}: words"))].into_iter().collect();
    r.targets = [("redis", "none"), ("sqlite", "commit"), ("pg", "periodic"), ("duckdb", "commit")]
        .into_iter()
        .map(|(name, level)| {
            let mut t = template.clone();
            (t.name, t.system, t.settings) = (name.into(), name.into(), settings(level));
            t
        })
        .collect();
    let note = Findings::of(&r).durability_note.expect("levels differ");
    assert!(note.starts_with("Durability differs: commit — sqlite, duckdb; periodic — pg; none — redis."), "{note}");
    r.targets.retain(|t| t.name == "sqlite" || t.name == "duckdb");
    assert_eq!(Findings::of(&r).durability_note, None, "all at commit");
}

/// At a fixed rate every target runs the same throughput: the findings rank by response
/// time p99 instead, lowest first, and the ratio is how many times the leader's p99 a
/// target's is.
#[test]
fn at_a_fixed_rate_targets_are_ranked_by_response_p99() {
    let latency = |p99_us: f64| crate::base::measurement::LatencySummary {
        count: 1000,
        mean_us: p99_us / 2.0,
        p50_us: p99_us / 2.0,
        p90_us: p99_us,
        p99_us,
        p999_us: p99_us,
        max_us: p99_us,
        histogram: String::new(),
    };
    let mut r = golden();
    for (target, p99s) in [("sqlite", [2000.0, 2100.0, 1900.0]), ("duckdb", [100.0, 105.0, 95.0]), ("redb", [1000.0, 1000.0, 1000.0])] {
        set_throughputs(&mut r, "echo", target, &[1000.0]);
        for p in r.points.iter_mut().filter(|p| p.experiment == "echo" && p.target == target) {
            p.point.rate = crate::workload::experiment::Rate::new(1000.0);
            let op = p.op;
            for (run, us) in p.runs.iter_mut().filter(|r| !r.warmup).zip(p99s.iter().cycle()) {
                run.response.insert(op, latency(*us));
            }
            p.summary.as_mut().unwrap().response_latency = Some(latency(p99s[0]));
        }
    }
    let f = Findings::of(&r);
    let echo = finding(&f, "echo");
    assert_eq!(echo.ranked_by, RankedBy::ResponseP99);
    let order: Vec<&str> = echo.standings.iter().map(|s| s.target.as_str()).collect();
    assert_eq!(order, ["duckdb", "redb", "sqlite"], "lowest response p99 first");
    let sqlite = &echo.standings[2];
    assert!((sqlite.behind_estimate.unwrap() - 20.0).abs() < 1e-9, "{sqlite:?}");
    let interval = sqlite.behind.unwrap();
    assert!(interval.low > 15.0 && interval.high < 25.0, "{interval:?}");
    assert_eq!(sqlite.value(), "response p99 2.00ms at 1.0k/s (20.0x slower)");
    let sentence = echo.sentence();
    assert!(sentence.starts_with("duckdb answers 10.0x sooner at p99 than redb (95 % interval"), "{sentence}");
    assert!((Findings::relative(echo, "sqlite").unwrap() - 20.0).abs() < 1e-9, "the relative table is in response time");
    // Closed-loop experiments of the same report still rank by throughput.
    assert_eq!(finding(&f, "insert").ranked_by, RankedBy::Throughput);
}
